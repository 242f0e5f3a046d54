"""The fourth held-out GEMM set (issues 14-16): heldout14's design drawn again with a new seed.

Same design as validation/heldout14.py and validation/heldout15.py (validation/heldout_draw.py: 18
seeded one-dimensional sweeps of PLAN, coverage enumerated, + single points, sustained mode 2 s with
the last 1 s steady, no cuBLAS loops), drawn with SEED 1620261124 (2026-11-24, for the fourth freeze
of the day). Records carry `"heldout": "issue14-16"` and their sweep.

Exclusion rule: no point may have the tag of a configuration already recorded anywhere under
validation/records/h100/ when the set was drawn (any kind, any folder: every `"tag"` field of the
*.json / *.jsonl files, `heldout_draw.recorded_tags`; 493 tags on 2026-11-24 at 6a1f542: the 405
frozen for heldout15 and heldout15's own 88; the portfolio and attention records carry no tag),
frozen in EXCLUDED_FILE so that records committed later, this set's own included, never change the
draw: a candidate sweep or single point with such a tag is rejected like an invalid draw (none was
hit: the draw equals the one without exclusion). The drawn
set is pinned by its tags' digest, and its disjointness from every record committed since is checked
(tests/validation/test_heldout16_set.py). This seed drew no box-row sweep on a tile with a 256
extent, so its box-row sweeps reach 128 rows (heldout14's and heldout15's reached 256; 256-row
boxes are still timed in other points).

Drawn once; never change SEED or N_SINGLE, and never simulate these configurations before the
freeze (`gemm_runs --sweep heldout16 --list` prints them without simulating). Compared once by
`python3 -m hopsim.validate.heldout --set heldout16`. Pure Python: no GPU, no simulator.
"""

from __future__ import annotations

import functools
import pathlib

from kernels.params import GemmParams
from validation import heldout13, heldout_draw
from validation.heldout_draw import MAX_FLOPS, MIN_FLOPS, MIN_POINTS, Sweep  # noqa: F401

SEED = 1620261124  # drawn 2026-11-24 for the fourth freeze of the day; fixed forever
SWEEP_NAME = "heldout16"
HELDOUT_TAG = "issue14-16"
N_SINGLE = 14
EXCLUDED_FILE = pathlib.Path(__file__).resolve().parent / "heldout16_excluded_tags.txt"
"""The configuration tags recorded under validation/records/h100/ before the draw, one a line."""


@functools.lru_cache(maxsize=1)
def held_set() -> heldout_draw.HeldoutSet:
    """The set's drawing parameters, its exclusion the tags recorded before the draw."""
    excluded = frozenset(EXCLUDED_FILE.read_text().split())
    return heldout_draw.HeldoutSet(name=SWEEP_NAME, tag=HELDOUT_TAG, seed=SEED, n_single=N_SINGLE,
                                   exclude=excluded)


@functools.lru_cache(maxsize=1)
def sweeps() -> tuple[Sweep, ...]:
    """The 18 sweeps of PLAN, each from its own seeded stream (deterministic)."""
    return heldout_draw.draw_sweeps(held_set())


@functools.lru_cache(maxsize=1)
def singles() -> tuple[GemmParams, ...]:
    """The N_SINGLE single points: strata and K bins in turn (issue 13's strata)."""
    return heldout_draw.draw_singles(held_set())


def sweep() -> list[GemmParams]:
    """The set `gemm_runs --sweep heldout16` runs, in run order (heldout_draw.run_order)."""
    return heldout_draw.run_order(sweeps(), singles())


@functools.lru_cache(maxsize=1)
def membership() -> dict[str, dict]:
    """tag -> its sweep, knob and value label (heldout_draw.membership)."""
    return heldout_draw.membership(sweeps(), singles())


def record_fields(p: GemmParams) -> dict:
    """The fields a heldout16 record carries beyond the common ones."""
    return {"heldout": HELDOUT_TAG, **membership().get(p.tag, {})}


#: the recommended run (heldout14's): 2 s back to back per configuration, statistics over the last 1 s
SUSTAIN_S = 2.0
STEADY_S = 1.0


def plan_seconds(params: list[GemmParams], sustain_s: float = SUSTAIN_S) -> float:
    """Estimated wall seconds on the H100 machine (heldout13's plan; no cuBLAS loops)."""
    return heldout13.plan_seconds(params, sustain_s, 0)
