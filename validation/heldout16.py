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

import pathlib

from validation import heldout_draw
from validation.heldout_draw import (MAX_FLOPS, MIN_FLOPS, MIN_POINTS, STEADY_S, SUSTAIN_S, Sweep,  # noqa: F401
                                     plan_seconds)

SEED = 1620261124  # drawn 2026-11-24 for the fourth freeze of the day; fixed forever
SWEEP_NAME = "heldout16"
HELDOUT_TAG = "issue14-16"
N_SINGLE = 14
EXCLUDED_FILE = pathlib.Path(__file__).resolve().parent / "heldout16_excluded_tags.txt"
"""The configuration tags recorded under validation/records/h100/ before the draw, one a line."""

#: the set's drawing parameters, its exclusion the tags in EXCLUDED_FILE (read once, at the first draw)
held_set = heldout_draw.excluded_set(SWEEP_NAME, HELDOUT_TAG, SEED, N_SINGLE, EXCLUDED_FILE)
#: the set's draw (heldout_draw.set_functions): sweeps() the 18 sweeps of PLAN, singles() the
#: N_SINGLE single points, sweep() the run order, membership() tag -> sweep, record_fields(p)
sweeps, singles, sweep, membership, record_fields = heldout_draw.set_functions(held_set)
