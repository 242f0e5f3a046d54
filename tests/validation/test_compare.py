"""hopsim.validate.compare and hopsim.validate.report on synthetic data whose answers are formulas."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hopsim.validate import compare as C
from hopsim.validate.report import write_report


def _grid():
    """stages 1..6 x box_rows {8, 64, 128} x variant {single, ws}: 36 configurations."""
    return [dict(variant=v, box_rows=r, stages=s)
            for v, r, s in itertools.product(("single", "ws"), (8, 64, 128), range(1, 7))]


def _hw(c):
    return 1.0 + 2.0 / c["stages"] + 8.0 / c["box_rows"] + (0.2 if c["variant"] == "ws" else 0.0)


# ----------------------------------------------------------------------------- error, MAPE


def test_mape_of_a_uniform_10_percent_overestimate_is_10():
    hw = [_hw(c) for c in _grid()]
    assert C.mape(hw, [1.1 * h for h in hw]) == pytest.approx(10.0)
    assert C.mape(hw, [0.9 * h for h in hw]) == pytest.approx(10.0)
    assert C.mape(hw, hw) == 0.0


def test_error_pct_sign_and_worst_case():
    assert C.error_pct(2.0, 2.5) == pytest.approx(25.0)   # simulator slower: positive
    assert C.error_pct(2.0, 1.5) == pytest.approx(-25.0)
    entries = [C.Entry(c, _hw(c), _hw(c) * (1.02 if i != 7 else 0.7), label=f"c{i}")
               for i, c in enumerate(_grid())]
    s = C.summarize(entries)
    assert s.worst_error_pct == pytest.approx(-30.0) and s.worst_label == "c7"
    assert s.mape_pct == pytest.approx((35 * 2.0 + 30.0) / 36)
    assert s.mean_error_pct == pytest.approx((35 * 2.0 - 30.0) / 36)


# ----------------------------------------------------------------------------- Spearman


@given(st.lists(st.integers(1, 100_000), min_size=3, max_size=40, unique=True))
@settings(max_examples=60, deadline=None)
def test_spearman_of_a_monotone_transform_is_one(xs):
    # distinct integers stay distinct under these strictly increasing maps (no rounding ties)
    assert C.spearman(xs, [math.sqrt(x) + math.log(x) for x in xs]) == pytest.approx(1.0)
    assert C.spearman(xs, [x ** 3 for x in xs]) == pytest.approx(1.0)
    assert C.spearman(xs, [-x for x in xs]) == pytest.approx(-1.0)


def test_spearman_formula_without_ties():
    # rho = 1 - 6 sum d^2 / (n (n^2 - 1)) when there are no ties
    rng = np.random.default_rng(3)
    x, y = rng.permutation(20).astype(float), rng.permutation(20).astype(float)
    d = C.rankdata(x) - C.rankdata(y)
    assert C.spearman(x, y) == pytest.approx(1 - 6 * np.sum(d * d) / (20 * (20 ** 2 - 1)))


def test_rankdata_averages_ties():
    assert list(C.rankdata([10, 20, 20, 30, 20])) == [1.0, 3.0, 3.0, 5.0, 3.0]
    assert math.isnan(C.spearman([1, 1, 1], [1, 2, 3]))


def test_spearman_matches_scipy_when_available():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(5)
    x = rng.integers(0, 8, 50).astype(float)  # many ties
    y = x + rng.normal(0, 2, 50)
    assert C.spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic)


# ----------------------------------------------------------------------------- sweep shapes


def test_sweep_shapes_group_by_everything_but_the_knob():
    entries = [C.Entry(c, _hw(c), 1.07 * _hw(c)) for c in _grid()]  # uniform scale: shape exact
    cmp = C.compare_gemm(entries, knobs=("stages", "box_rows"))
    assert cmp.shape_counts("stages") == (6, 6)      # 2 variants x 3 box_rows
    assert cmp.shape_counts("box_rows") == (12, 12)  # 2 variants x 6 stages
    s = cmp.shapes["stages"][0]
    assert s.values == (1, 2, 3, 4, 5, 6)
    assert s.rel_hw == pytest.approx(s.rel_sim)
    assert min(s.rel_hw) == 1.0 and s.best_agrees
    assert dict(s.fixed).keys() == {"variant", "box_rows"}
    assert cmp.overall.mape_pct == pytest.approx(7.0) and cmp.overall.spearman == pytest.approx(1)


def test_sweep_shape_fails_exactly_beyond_the_tolerance():
    base = [dict(stages=s) for s in (1, 2, 3)]
    hw = [3.0, 2.0, 1.0]  # relative to best: 3, 2, 1
    # sim relative: 3*1.09, 2, 1 -> 9% off: ok; 3*1.11 -> 11% off: not ok
    ok = C.sweep_shapes([C.Entry(c, h, s) for c, h, s in zip(base, hw, [3.27, 2.0, 1.0])], "stages")
    bad = C.sweep_shapes([C.Entry(c, h, s) for c, h, s in zip(base, hw, [3.33, 2.0, 1.0])], "stages")
    assert ok[0].ok and ok[0].worst_deviation == pytest.approx(0.09)
    assert not bad[0].ok and bad[0].worst_deviation == pytest.approx(0.11)
    # a nearly flat simulator against a falling hardware curve: same best, wrong shape
    flat = C.sweep_shapes([C.Entry(c, h, s) for c, h, s in zip(base, hw, [1.0, 1.0, 0.99])], "stages")
    assert flat[0].best_agrees and not flat[0].ok
    assert flat[0].worst_deviation == pytest.approx(1 - (1.0 / 0.99) / 3)
    # a simulator whose best is at stages 1 while the hardware's is at 3
    wrong = C.sweep_shapes([C.Entry(c, h, s) for c, h, s in zip(base, hw, [1.0, 1.5, 2.0])], "stages")
    assert not wrong[0].best_agrees and not wrong[0].ok


def test_subsets_are_summarized_apart():
    entries = [C.Entry(c, _hw(c), _hw(c) * (1.0 if c["variant"] == "single" else 1.2),
                       C.CALIBRATION if c["variant"] == "single" else C.HELD_OUT)
               for c in _grid()]
    cmp = C.compare_gemm(entries)
    assert cmp.by_subset[C.CALIBRATION].mape_pct == pytest.approx(0.0)
    assert cmp.by_subset[C.HELD_OUT].mape_pct == pytest.approx(20.0)
    assert cmp.overall.mape_pct == pytest.approx(10.0)


def test_bad_measurement_is_refused():
    with pytest.raises(ValueError):
        C.compare_gemm([({"stages": 1}, 0.0, 1.0)])


# ----------------------------------------------------------------------------- micro, bank


def test_micro_and_bank():
    micro = C.compare_micro([("wgmma m64n128k16 latency", "wgmma_latency_cycles", 100, 109),
                             ("tma 16KB from L2", "tma_l2_latency_cycles", 800, 700, "cycles")])
    assert [r.ok for r in micro] == [True, False]
    assert micro[1].error_pct == pytest.approx(-12.5)
    bank = C.compare_bank([("128B swizzle row", 1, 1), ("no swizzle col", 8, 8), ("x", 4, 2)])
    assert (bank.exact, bank.total) == (2, 3) and bank.mismatches == [("x", 4, 2)]


def test_entries_from_records_mark_calibration_and_skip_failures():
    recs = [{"tag": "a", "status": "ok", "time_ms": 2.0, "params": {"stages": 1}},
            {"tag": "b", "status": "ok", "time_ms": 1.0, "params": {"stages": 2}},
            {"tag": "c", "status": "WRONG", "time_ms": 1.0, "params": {"stages": 3}}]
    es = C.gemm_entries_from_records(recs, lambda p: 1.5 / p["stages"], calibration={"a"})
    assert [(e.label, e.subset, e.simulated) for e in es] == [
        ("a", C.CALIBRATION, 1.5), ("b", C.HELD_OUT, 0.75)]


# ----------------------------------------------------------------------------- report


def test_report_markdown_and_pictures(tmp_path):
    rng = np.random.default_rng(1)
    entries = [C.Entry(c, _hw(c), _hw(c) * rng.normal(1.03, 0.04),
                       C.CALIBRATION if i < 4 else C.HELD_OUT, label=f"cfg{i}")
               for i, c in enumerate(_grid())]
    cmp = C.compare_gemm(entries)
    md = write_report(cmp, tmp_path, micro=C.compare_micro([("m", "f", 10, 10.5)]),
                      bank=C.compare_bank([("p", 2, 2)]))
    text = md.read_text()
    assert f"{cmp.overall.mape_pct:.1f}" in text and f"{cmp.overall.spearman:.3f}" in text
    assert "Calibration subset (4 configurations)" in text and "`cfg0`" in text
    ok, n = cmp.shape_counts("stages")
    assert f"{ok} of {n} within 10%" in text
    assert "1 of 1 patterns match exactly" in text and "1 of 1 within 10%" in text
    for png in ("sim_vs_hw.png", "sweeps_stages.png", "sweeps_box_rows.png"):
        assert (tmp_path / png).read_bytes()[:4] == b"\x89PNG" and f"({png})" in text
