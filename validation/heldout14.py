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

from validation import heldout_draw
from validation.heldout_draw import (DIM_VALUES, KBINS, MAX_FLOPS, MIN_FLOPS, MIN_POINTS, PLAN,  # noqa: F401
                                     STEADY_S, SUSTAIN_S, TILES, VARIANTS, Entry, Sweep, label,
                                     plan_seconds, with_value)

SEED = 1420261124  # issue 14, drawn 2026-11-24; fixed forever
SWEEP_NAME = "heldout14"
HELDOUT_TAG = "issue14"
N_SINGLE = 14
SET = heldout_draw.HeldoutSet(name=SWEEP_NAME, tag=HELDOUT_TAG, seed=SEED, n_single=N_SINGLE)

#: the set's draw (heldout_draw.set_functions): sweeps() the 18 sweeps of PLAN, singles() the
#: N_SINGLE single points, sweep() the run order, membership() tag -> sweep, record_fields(p)
sweeps, singles, sweep, membership, record_fields = heldout_draw.set_functions(lambda: SET)
