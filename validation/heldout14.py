"""Issue 14's held-out GEMM set: 18 seeded one-dimensional sweeps + 14 single points, sustained mode.

The design (PLAN, coverage, sizes, the drawing) is validation/heldout_draw.py's; this module is
its draw with SEED 1420261124 (2026-11-24). Drawn once; never change SEED or N_SINGLE (that would
make a new set), and never simulate these configurations while the model is developed
(`gemm_runs --sweep heldout14 --list` prints them without simulating). The set was measured after
the freeze at 6172b92 (validation/records/h100/heldout14/) and compared once
(validation/reports/h100/heldout14/); a later model change is judged on a fresh set
(validation/heldout15.py). Pure Python: no GPU, no simulator.
"""

from __future__ import annotations

import functools

from kernels.params import GemmParams
from validation import heldout13, heldout_draw
from validation.heldout_draw import (DIM_VALUES, KBINS, MAX_FLOPS, MIN_FLOPS, MIN_POINTS, PLAN,  # noqa: F401
                                     TILES, VARIANTS, Entry, Sweep, label, with_value)

SEED = 1420261124  # issue 14, drawn 2026-11-24; fixed forever
SWEEP_NAME = "heldout14"
HELDOUT_TAG = "issue14"
N_SINGLE = 14
SET = heldout_draw.HeldoutSet(name=SWEEP_NAME, tag=HELDOUT_TAG, seed=SEED, n_single=N_SINGLE)


@functools.lru_cache(maxsize=1)
def sweeps() -> tuple[Sweep, ...]:
    """The 18 sweeps of PLAN, each from its own seeded stream (deterministic)."""
    return heldout_draw.draw_sweeps(SET)


@functools.lru_cache(maxsize=1)
def singles() -> tuple[GemmParams, ...]:
    """The N_SINGLE single points: strata and K bins in turn (issue 13's strata)."""
    return heldout_draw.draw_singles(SET)


def sweep() -> list[GemmParams]:
    """The set `gemm_runs --sweep heldout14` runs, in run order (heldout_draw.run_order)."""
    return heldout_draw.run_order(sweeps(), singles())


@functools.lru_cache(maxsize=1)
def membership() -> dict[str, dict]:
    """tag -> its sweep, knob and value label (heldout_draw.membership)."""
    return heldout_draw.membership(sweeps(), singles())


def record_fields(p: GemmParams) -> dict:
    """The fields a heldout14 record carries beyond the common ones."""
    return {"heldout": HELDOUT_TAG, **membership().get(p.tag, {})}


#: the recommended run: 2 s back to back per configuration, statistics over the last 1 s
SUSTAIN_S = 2.0
STEADY_S = 1.0


def plan_seconds(params: list[GemmParams], sustain_s: float = SUSTAIN_S) -> float:
    """Estimated wall seconds on the H100 machine (heldout13's plan; no cuBLAS loops)."""
    return heldout13.plan_seconds(params, sustain_s, 0)
