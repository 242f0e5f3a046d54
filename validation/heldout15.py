"""The third held-out GEMM set (issues 14 and 15): heldout14's design drawn again with a new seed.

Same design as validation/heldout14.py (validation/heldout_draw.py: 18 seeded one-dimensional
sweeps of PLAN, coverage enumerated, + single points, sustained mode 2 s with the last 1 s steady,
no cuBLAS loops), drawn with SEED 1520261124 (2026-11-24, before the model freeze of the
session's third part). Records carry `"heldout": "issue14-15"` and their sweep.

Exclusion rule: no point may have the tag of a configuration already recorded anywhere under
validation/records/h100/ when the set was drawn (any kind, any folder: every `"tag"` field of the
*.json / *.jsonl files, `heldout_draw.recorded_tags`; 405 tags on 2026-11-24 at 455f888, frozen in
EXCLUDED_FILE so that records committed later, this set's own included, never change the draw): a
candidate sweep or single point with such a tag is rejected like an invalid draw (none was hit:
the draw equals the one without exclusion). The drawn set is pinned by its tags' digest, and its
disjointness from every record committed since is checked (tests/validation/test_heldout15_set.py).

Drawn once; never change SEED or N_SINGLE, and never simulate these configurations before the
freeze (`gemm_runs --sweep heldout15 --list` prints them without simulating). Compared once by
`python3 -m hopsim.validate.heldout --set heldout15`. Pure Python: no GPU, no simulator.
"""

from __future__ import annotations

import pathlib

from validation import heldout_draw
from validation.heldout_draw import (MAX_FLOPS, MIN_FLOPS, MIN_POINTS, STEADY_S, SUSTAIN_S, Sweep,  # noqa: F401
                                     plan_seconds)

SEED = 1520261124  # drawn 2026-11-24 for the third session's freeze; fixed forever
SWEEP_NAME = "heldout15"
HELDOUT_TAG = "issue14-15"
N_SINGLE = 14
EXCLUDED_FILE = pathlib.Path(__file__).resolve().parent / "heldout15_excluded_tags.txt"
"""The configuration tags recorded under validation/records/h100/ before the draw, one a line."""

#: the set's drawing parameters, its exclusion the tags in EXCLUDED_FILE (read once, at the first draw)
held_set = heldout_draw.excluded_set(SWEEP_NAME, HELDOUT_TAG, SEED, N_SINGLE, EXCLUDED_FILE)
#: the set's draw (heldout_draw.set_functions): sweeps() the 18 sweeps of PLAN, singles() the
#: N_SINGLE single points, sweep() the run order, membership() tag -> sweep, record_fields(p)
sweeps, singles, sweep, membership, record_fields = heldout_draw.set_functions(held_set)
