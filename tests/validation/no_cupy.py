"""The GPU-side runners import without cupy (so their `--plan` / `--list` work on a machine
without a GPU): ONE fresh Python process imports validation.portfolio and validation.portfolio_runs
(which imports every portfolio family), checks that cupy was not imported, and prints what the
tests read of them. Several tests assert on its output; the process runs once per test process
(it was four processes for the same import, one per test file)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys

CODE = """import json, sys
import validation.portfolio, validation.portfolio_runs as r
assert 'cupy' not in sys.modules, 'cupy imported'
print(json.dumps({"portfolio_points": len(validation.portfolio.points()),
                  "rowwise_plan": len(r.plan('rowwise')),
                  "tmacopy_points": len(validation.portfolio_tmacopy.points()),
                  "attention_points": len(r.family_points('attention'))}))
"""


@functools.lru_cache(maxsize=1)
def counts() -> dict:
    """{what: count} printed by the cupy-free process (it fails the calling test if any import
    pulled cupy in or raised)."""
    r = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)
