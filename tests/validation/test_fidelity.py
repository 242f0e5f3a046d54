"""CI fidelity guard: re-simulate the CI subset of the committed H100 GEMM records (no GPU) and
fail when the error exceeds the bound the committed report states
(validation/reports/h100/report.md, section "CI fidelity bound"; numbers in compare.json).

A model change that makes the simulator worse on hardware it was never fitted to cannot land
quietly. After an intended model change, re-run `hopsim validate compare --out
validation/reports/h100` and commit the report: the bound moves with the report, and the report's
headline says what the change did to every configuration.
"""

from __future__ import annotations

import json

import pytest

from hopsim.validate.compare import compare_gemm
from hopsim.validate.run_compare import (CI_EVERY, REPORT_DIR, ci_points, entries, hardware_points,
                                    simulate_points)

pytestmark = pytest.mark.slow


def test_ci_subset_within_the_reported_bound():
    committed = json.loads((REPORT_DIR / "compare.json").read_text())["ci"]
    assert committed["every"] == CI_EVERY
    points = ci_points(hardware_points())
    assert [p.label for p in points] == committed["labels"], \
        "the records changed: re-run `hopsim validate compare --out validation/reports/h100`"
    rows = simulate_points(points, jobs=2, progress=False, use_cache=False)
    failed = [(p.label, r["error"]) for p, r in zip(points, rows) if r.get("error")]
    assert not failed, failed
    g = compare_gemm(entries(points, rows), knobs=()).overall
    assert g.n == committed["n"]
    assert g.mape_pct <= committed["bound_mape_pct"], (g.mape_pct, committed)
    assert g.spearman >= committed["bound_spearman"], (g.spearman, committed)
