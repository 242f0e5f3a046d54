"""The eighth held-out GEMM set (issues 13-20): heldout14's design drawn again with a new seed, run
with heldout17's SM-clock probe.

Same design as validation/heldout14.py .. heldout19.py (validation/heldout_draw.py: 18 seeded
one-dimensional sweeps of PLAN, coverage enumerated, + single points, sustained mode 2 s with the
last 1 s steady, no cuBLAS loops), drawn with SEED 2020261125 (2026-11-25, for the eighth freeze,
at about 03:15 UTC). Records carry `"heldout": "issue14-20"` and their sweep. Like heldout17 (unlike the older sets), each
configuration's sustained timing (the record's time, unchanged) is followed by a short sustained
loop of its profile build (validation/gemm_profile.py: clock64/%globaltimer per SM), so the record
also has the clock the SMs ran at (gemm_runs.SWEEP_PROBE; `sm_clock_eff_mhz` ...).

Exclusion rule: no point may have the tag of a configuration already recorded anywhere under
validation/records/h100/ when the set was drawn (any kind, any folder: every `"tag"` field of the
*.json / *.jsonl files, `heldout_draw.recorded_tags`; 892 tags on 2026-11-25 at 84f6bb2: the 803
frozen for heldout19 and heldout19's own 89), frozen in EXCLUDED_FILE so that records committed
later, this set's own included, never change the draw: a candidate sweep or single point with such
a tag is rejected like an invalid draw. The drawn set is pinned by its tags' digest, and its
disjointness from every record committed since is checked (tests/validation/test_heldout20_set.py).

Drawn once; never change SEED or N_SINGLE, and never simulate these configurations before the
freeze (`gemm_runs --sweep heldout20 --list` prints them without simulating). Compared once by
`python3 -m hopsim.validate.heldout --set heldout20`. Pure Python: no GPU, no simulator.
"""

from __future__ import annotations

import pathlib

from validation import heldout13, heldout17, heldout_draw
from validation.heldout_draw import (MAX_FLOPS, MIN_FLOPS, MIN_POINTS, STEADY_S, SUSTAIN_S, Sweep)  # noqa: F401

SEED = 2020261125  # drawn 2026-11-25 for the eighth freeze (about 03:15 UTC); fixed forever
SWEEP_NAME = "heldout20"
HELDOUT_TAG = "issue14-20"
N_SINGLE = 14
EXCLUDED_FILE = pathlib.Path(__file__).resolve().parent / "heldout20_excluded_tags.txt"
"""The configuration tags recorded under validation/records/h100/ before the draw, one a line."""

#: the SM-clock probe (heldout17's: a sustained loop of the profile build after each timing)
PROBE_SUSTAIN_S = heldout17.PROBE_SUSTAIN_S
PROBE_STEADY_S = heldout17.PROBE_STEADY_S

#: the set's drawing parameters, its exclusion the tags in EXCLUDED_FILE (read once, at the first draw)
held_set = heldout_draw.excluded_set(SWEEP_NAME, HELDOUT_TAG, SEED, N_SINGLE, EXCLUDED_FILE)
#: the set's draw (heldout_draw.set_functions): sweeps() the 18 sweeps of PLAN, singles() the
#: N_SINGLE single points, sweep() the run order, membership() tag -> sweep, record_fields(p)
sweeps, singles, sweep, membership, record_fields = heldout_draw.set_functions(held_set)


#: estimated wall seconds on the 16-core H100 machine (heldout17's plan: the design's, the probe
#: builds' compiles and each configuration's probe loop)
plan_seconds = heldout17.plan_seconds
