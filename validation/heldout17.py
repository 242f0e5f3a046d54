"""The fifth held-out GEMM set (issues 14-17): heldout14's design drawn again with a new seed, run
with an SM-clock probe.

Same design as validation/heldout14.py .. heldout16.py (validation/heldout_draw.py: 18 seeded
one-dimensional sweeps of PLAN, coverage enumerated, + single points, sustained mode 2 s with the
last 1 s steady, no cuBLAS loops), drawn with SEED 1720261124 (2026-11-24, for the fifth freeze of
the day). Records carry `"heldout": "issue14-17"` and their sweep. Unlike the older sets, each
configuration's sustained timing (the record's time, unchanged) is followed by a short sustained
loop of its profile build (validation/gemm_profile.py: clock64/%globaltimer per SM), so the record
also has the clock the SMs ran at (gemm_runs.SWEEP_PROBE; `sm_clock_eff_mhz` ...).

Exclusion rule: no point may have the tag of a configuration already recorded anywhere under
validation/records/h100/ when the set was drawn (any kind, any folder: every `"tag"` field of the
*.json / *.jsonl files, `heldout_draw.recorded_tags`; 578 tags on 2026-11-24 at f93b8ef: the 493
frozen for heldout16 and heldout16's own 85), frozen in EXCLUDED_FILE so that records committed
later, this set's own included, never change the draw: a candidate sweep or single point with such
a tag is rejected like an invalid draw. The drawn set is pinned by its tags' digest, and its
disjointness from every record committed since is checked (tests/validation/test_heldout17_set.py).

Drawn once; never change SEED or N_SINGLE, and never simulate these configurations before the
freeze (`gemm_runs --sweep heldout17 --list` prints them without simulating). Compared once by
`python3 -m hopsim.validate.heldout --set heldout17`. Pure Python: no GPU, no simulator.
"""

from __future__ import annotations

import math
import pathlib

from validation import heldout13, heldout_draw
from validation.heldout_draw import (MAX_FLOPS, MIN_FLOPS, MIN_POINTS, STEADY_S, SUSTAIN_S, Sweep)  # noqa: F401

SEED = 1720261124  # drawn 2026-11-24 for the fifth freeze of the day; fixed forever
SWEEP_NAME = "heldout17"
HELDOUT_TAG = "issue14-17"
N_SINGLE = 14
EXCLUDED_FILE = pathlib.Path(__file__).resolve().parent / "heldout17_excluded_tags.txt"
"""The configuration tags recorded under validation/records/h100/ before the draw, one a line."""

#: the SM-clock probe after each configuration's timing: a sustained loop of its profile build of
#: PROBE_SUSTAIN_S seconds, statistics over the last PROBE_STEADY_S (validation/gemm_profile.py)
PROBE_SUSTAIN_S = 0.5
PROBE_STEADY_S = 0.25
#: estimated seconds a probe adds beyond its loop (input sets, nvidia-smi before and after)
PROBE_OVERHEAD_S = 0.5

#: the set's drawing parameters, its exclusion the tags in EXCLUDED_FILE (read once, at the first draw)
held_set = heldout_draw.excluded_set(SWEEP_NAME, HELDOUT_TAG, SEED, N_SINGLE, EXCLUDED_FILE)
#: the set's draw (heldout_draw.set_functions): sweeps() the 18 sweeps of PLAN, singles() the
#: N_SINGLE single points, sweep() the run order, membership() tag -> sweep, record_fields(p)
sweeps, singles, sweep, membership, record_fields = heldout_draw.set_functions(held_set)


def plan_seconds(params: list, sustain_s: float = SUSTAIN_S, cores: int = 16) -> float:
    """Estimated wall seconds on the 16-core H100 machine: the design's plan (heldout13's: startup,
    parallel compiles, overhead + sustained window per configuration) plus the profile builds'
    compiles (in the same pool: twice the nvcc jobs) and, per configuration, the probe loop with
    its overhead."""
    n = len(params)
    probe_compile_s = (math.ceil(2 * n / cores) - math.ceil(n / cores)) * heldout13.NVCC_S
    return (heldout_draw.plan_seconds(params, sustain_s) + probe_compile_s
            + n * (PROBE_SUSTAIN_S + PROBE_OVERHEAD_S))
