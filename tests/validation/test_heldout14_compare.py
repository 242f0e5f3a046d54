"""Issue 14's comparison metrics (hopsim.validate.heldout_metrics, heldout14_report) on synthetic
records, never by simulating the held-out set. Laws: a perfect simulation gives 0% error, 100%
best-configuration agreement, every curve within 10% and Spearman 1; a uniform scale keeps the
best and the shape but not the points; a reversed curve loses the best unless the hardware's
spread is within 3%; simulated ties never earn credit; a sweep with a simulation error agrees on
nothing; unmeasured points are listed; the targets are the issues' fixed numbers, inclusive."""

from __future__ import annotations

import hashlib
import json

import pytest

from hopsim.validate import heldout, heldout14_report
from hopsim.validate.heldout_metrics import (BEST_WITHIN, CURVE_TOLERANCE, SweepFit, Target, judge,
                                             sweep_summary)
from validation import heldout14


def _fit(hw, sim, dim="stages"):
    return SweepFit("s", dim, tuple(str(i) for i in range(len(hw))), tuple(hw), tuple(sim))


# ----------------------------------------------------------------------------- one sweep
def test_perfect_simulation_agrees_everywhere():
    f = _fit([1.3, 1.0, 1.1, 2.0], [1.3, 1.0, 1.1, 2.0])
    r = f.row()
    assert r["best_same"] and r["best_agrees"] and r["shape_ok"] and r["points_ok"]
    assert r["hw_loss_pct"] == 0 and r["worst_shape_dev_pct"] == 0 and r["worst_point_err_pct"] == 0
    assert r["spearman"] == pytest.approx(1.0) and r["hw_best"] == r["sim_best"] == "1"


def test_uniform_scale_keeps_best_and_shape_not_points():
    hw = [1.3, 1.0, 1.1, 2.0]
    f = _fit(hw, [1.25 * x for x in hw])
    assert f.best_same and f.shape_ok and not f.points_ok and f.rho == pytest.approx(1.0)
    assert max(f.shape_dev, key=abs) == pytest.approx(0.0)
    assert all(e == pytest.approx(0.25) for e in f.point_err)


def test_reversed_curve_loses_the_best():
    hw = [1.0, 1.2, 1.5, 2.0]
    f = _fit(hw, list(reversed(hw)))
    assert f.sim_best == 3 and not f.best_agrees and f.hw_loss == pytest.approx(1.0)
    assert f.rho == pytest.approx(-1.0) and not f.shape_ok


def test_within_three_percent_on_hardware_counts_as_agreeing():
    near = _fit([1.0, 1.0 + BEST_WITHIN * 0.9, 1.5], [1.1, 1.0, 1.6])
    assert not near.best_same and near.best_agrees
    far = _fit([1.0, 1.0 + BEST_WITHIN * 1.1, 1.5], [1.1, 1.0, 1.6])
    assert not far.best_same and not far.best_agrees


def test_simulated_ties_take_the_hardware_slowest():
    f = _fit([1.0, 1.5, 1.2], [2.0, 2.0, 2.0])  # the simulator cannot tell them apart
    assert f.sim_best == 1 and not f.best_agrees and f.rho is None


def test_shape_tolerance_is_inclusive_and_relative_to_each_best():
    tol = CURVE_TOLERANCE
    ok = _fit([1.0, 2.0], [1.0, 2.0 * (1 + tol * 0.99)])
    bad = _fit([1.0, 2.0], [1.0, 2.0 * (1 + tol * 1.01)])
    assert ok.shape_ok and not bad.shape_ok


def test_sweep_summary_counts():
    rows = [_fit([1, 2, 3], [1, 2, 3]).row(), _fit([1, 2, 3], [3, 2, 1], dim="tile").row(),
            _fit([1, 2], [1.5, 3.0], dim="tile").row()]
    s = sweep_summary(rows)
    assert s["all"]["n"] == 3 and s["all"]["best_agrees"] == 2
    assert s["all"]["best_agrees_pct"] == pytest.approx(200 / 3)
    assert s["by_dim"]["tile"]["n"] == 2 and s["by_dim"]["stages"]["shape_ok"] == 1
    assert s["all"]["spearman_mean"] == pytest.approx(0.0) and s["all"]["spearman_n"] == 2  # >= 3 points


def test_targets_are_inclusive_and_none_is_not_met():
    t = Target(14, "x", "m", "<=", 6.0)
    assert t.met(6.0) and not t.met(6.01) and not t.met(None) and not t.met(float("nan"))
    g = Target(14, "y", "a", ">=", 90.0)
    assert g.met(90.0) and not g.met(89.9)
    assert [j["met"] for j in judge((t, g), {"m": 5.0})] == [True, False]


def test_targets_are_the_issues_numbers():
    lim = {t.metric: (t.op, t.limit) for t in heldout14_report.TARGETS}
    assert lim["time_mape_pct_measured_clock"] == ("<=", 6.0)
    assert lim["time_worst_abs_pct_measured_clock"] == ("<=", 15.0)
    assert lim["best_agrees_pct_predicted_clock"] == (">=", 90.0)
    assert lim["time_mape_pct_predicted_clock"] == ("<=", 8.0)
    assert lim["clock_within_5pct_share"] == (">=", 100.0)
    assert lim["power_within_10pct_share"] == (">=", 100.0)


# ----------------------------------------------------------------------------- the whole set
def _hw(tag: str) -> float:
    """A synthetic hardware time per configuration (deterministic, from the tag's hash)."""
    return 0.1 + int(hashlib.sha256(tag.encode()).hexdigest()[:8], 16) % 1000 / 500.0


def _row(tag: str, pred_scale: float = 1.0, meas_scale: float = 1.0, clock_err: float = 0.0,
         power_err: float = 0.0) -> dict:
    hw = _hw(tag)
    return {"tag": tag, "hw_time_ms": hw, "hw_clock_mhz_tw": 1500.0, "hw_power_w_nvml": 600.0,
            "pred_clock_mhz": 1500.0 * (1 + clock_err), "pred_power_w": 600.0 * (1 + power_err),
            "pred_time_ms": hw * pred_scale, "sim_time_ms_at_hw_clock": hw * meas_scale,
            "err_clock": clock_err, "err_power_nvml": power_err, "err_power_counter": power_err,
            "err_time_pred_clock": pred_scale - 1, "err_time_hw_clock": meas_scale - 1}


def _rows(**kw) -> list[dict]:
    return [_row(p.tag, **kw) for p in heldout14.sweep()]


def test_perfect_simulation_of_the_set_meets_every_target():
    s = heldout14_report.summarise(_rows())
    assert s["n_simulated"] == s["n_set"] == len(heldout14.sweep()) and not s["not_measured"]
    for basis in ("predicted_clock", "measured_clock"):
        a = s["sweeps"][basis]["all"]
        assert a["n"] == len(heldout14.sweeps()) == a["best_agrees"] == a["best_same"] == a["shape_ok"]
        assert a["best_agrees_pct"] == 100.0 and a["points_ok"] == a["n"]
    assert s["time_at_measured_clock"]["mape_pct"] == 0 and s["time_at_predicted_clock"]["worst_pct"] == 0
    assert all(t["met"] for t in s["targets"])


def test_uniform_error_fails_time_targets_but_keeps_every_best():
    s = heldout14_report.summarise(_rows(pred_scale=1.09, meas_scale=0.93, clock_err=0.06, power_err=-0.05))
    met = {t["metric"]: t["met"] for t in s["targets"]}
    assert s["metrics"]["time_mape_pct_measured_clock"] == pytest.approx(7.0)
    assert s["metrics"]["time_mape_pct_predicted_clock"] == pytest.approx(9.0)
    assert not met["time_mape_pct_measured_clock"] and met["time_worst_abs_pct_measured_clock"]
    assert not met["time_mape_pct_predicted_clock"]
    assert met["best_agrees_pct_predicted_clock"] and met["best_agrees_pct_measured_clock"]
    assert not met["clock_within_5pct_share"] and met["power_within_10pct_share"]
    assert s["sweeps"]["measured_clock"]["all"]["points_ok"] == s["sweeps"]["measured_clock"]["all"]["n"]


def test_missing_points_and_simulation_errors():
    sw = heldout14.sweeps()
    ctas = next(s for s in sw if s.dim == "ctas_per_sm")  # 2 points: one missing -> not evaluated
    stages = next(s for s in sw if s.dim == "stages")
    drop = {ctas.points[0].tag}
    rows = [r for r in _rows() if r["tag"] not in drop]
    broken = next(r for r in rows if r["tag"] == stages.points[1].tag)
    for k in ("pred_time_ms", "sim_time_ms_at_hw_clock", "err_time_pred_clock", "err_time_hw_clock"):
        broken.pop(k)
    broken["error"] = "simulate: boom"
    s = heldout14_report.summarise(rows)
    assert s["not_measured"] == sorted(drop) and s["simulation_errors"] == [broken["tag"]]
    assert s["sweeps_not_evaluated"] == [ctas.name]
    n = len(sw) - 1
    a = s["sweeps"]["predicted_clock"]["all"]
    assert a["n"] == n and a["best_agrees"] == n - 1  # the broken sweep agrees on nothing
    failed = next(r for r in s["sweep_rows"]["predicted_clock"] if r["name"] == stages.name)
    assert "boom" in failed["error"] and not failed["best_agrees"]


def test_report_names_the_fingerprint_targets_and_every_sweep():
    rows = _rows(meas_scale=1.2)
    s = heldout14_report.summarise(rows)
    md = heldout14_report.markdown(s, rows, "f" * 64, "Measured 2026-11-24.")
    assert "f" * 64 in md and "Measured 2026-11-24." in md and "**not met**" in md
    for sw in heldout14.sweeps():
        assert f"| {sw.name} |" in md
    assert md.count("\n| ") >= len(rows)
    json.dumps(s)  # the summary is JSON as written


# ----------------------------------------------------------------------------- command line
def test_cli_bad_set_and_foreign_records_are_one_line_exit_2(tmp_path, capsys):
    assert heldout.main(["--set", "heldout99", "--records", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    rec = {"kind": "gemm_sustained", "status": "ok", "tag": "not_a_heldout14_tag", "params": {}}
    (tmp_path / "x.jsonl").write_text(json.dumps(rec) + "\n")
    assert heldout.main(["--set", "heldout14", "--records", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not_a_heldout14_tag" in err[0] and not (tmp_path / "r").exists()


def test_set_choice_is_parsed_out():
    assert heldout._pick_set(["--set", "heldout14", "--records", "d"]) == ("heldout14", ["--records", "d"])
    assert heldout._pick_set(["--set=heldout14"]) == ("heldout14", [])
    assert heldout._pick_set(["--records", "d"]) == ("heldout13", ["--records", "d"])
    assert heldout.SETS["heldout14"]["files"] == ("compare.json", "report.md")
