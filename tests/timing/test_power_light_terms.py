"""The light-load terms of the power model (issue 13 phase 2): the L2-active step, and the joint
calibration with the light run (validation/records/h100/power/light/). Laws, and that the light
run's check points (GEMM-like pipe, 10%-duty burners) never move a fitted field."""

from __future__ import annotations

import json
import shutil

import pytest

from hopsim.config.power import load_power
from hopsim.power.model import Events, PowerModel
from hopsim.validate import calibrate_power
from validation.power.records import POWER_RECORDS_DIR

PM = PowerModel.load()


@pytest.mark.parametrize("mhz", [1980, 1500, 900])
def test_any_l2_traffic_turns_on_the_step_scaled_by_f_v_squared(mhz):
    step = PM.power_w(mhz, Events(l2_bytes=1.0), 1.0) - PM.power_w(mhz, Events(), 1.0)
    want = PM.voltage(mhz) ** 2 * mhz / PM.f_max * PM.v["l2_active_w"]
    assert step == pytest.approx(want, rel=1e-6, abs=1e-6)
    assert PM.v["l2_active_w"] > 0


def test_the_step_does_not_grow_with_the_byte_rate_beyond_the_per_byte_energy():
    lo, hi = Events(l2_bytes=1e9), Events(l2_bytes=2e9)
    slope = PM.power_w(1980, hi, 1.0) - PM.power_w(1980, lo, 1.0)
    assert slope == pytest.approx(1e9 * PM.v["e_l2_pj_per_byte"] * 1e-12, rel=1e-9)


def test_no_l2_traffic_no_step():
    ev = Events(tensor_flops=1e14, smem_ld_wavefronts=1e10, instructions=1e11)
    assert "l2_active" in PM.breakdown_w(1980, ev, 1.0)
    assert PM.breakdown_w(1980, ev, 1.0)["l2_active"] == 0.0


def test_light_run_nuisance_columns_are_not_model_fields():
    data = json.loads(calibrate_power.POWER_FILES["h100_sxm"].read_text())
    assert set(data["fit"]["light_run"]) == set(calibrate_power.RUN_COLUMNS)
    assert not set(calibrate_power.RUN_COLUMNS) & set(load_power().params())
    assert "light/" in load_power().params()["l2_active_w"].source


def test_check_points_never_move_a_fitted_field(tmp_path):
    """The light run's check records (pipe, wgmma duty10) read 300 W more: every field stays as it
    is, only their reported residuals move by 300 W (their order still sets the run's drift
    positions, which are the run's timeline, not a fit)."""
    d = tmp_path / "power"
    shutil.copytree(POWER_RECORDS_DIR, d)
    light = d / "light" / "light.jsonl"
    recs = [json.loads(ln) for ln in light.read_text().splitlines()]
    checks = [r for r in recs if r["name"].startswith(("light_pipe_", "light_wgmma_"))]
    assert len(checks) == 4
    for r in checks:
        r["power_steady_summary"]["power_w"]["tw_mean"] += 300.0
    light.write_text("".join(json.dumps(r) + "\n" for r in recs))
    full, fit = calibrate_power.derive(POWER_RECORDS_DIR)
    moved, fit2 = calibrate_power.derive(d)
    assert {k: v for k, (v, _) in moved.items()} == {k: v for k, (v, _) in full.items()}
    assert fit2["light_run"] == fit["light_run"]
    assert [c["name"] for c in fit["checks"]] == ["light_pipe_req8192_s2", "light_pipe_req1024_s2",
                                                  "light_wgmma_f16f32_duty10", "light_wgmma_bf16f32_duty10"]
    for a, b in zip(fit["checks"], fit2["checks"]):
        assert b["residual_w"] == pytest.approx(a["residual_w"] - 300.0)


def test_a_missing_light_rate_is_named(tmp_path):
    d = tmp_path / "power"
    shutil.copytree(POWER_RECORDS_DIR, d)
    light = d / "light" / "light.jsonl"
    recs = [json.loads(ln) for ln in light.read_text().splitlines()]
    for r in recs:
        if r["name"] == "light_tma_req256":
            del r["steady_rates_per_s"]["bytes"]
    light.write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.raises(calibrate_power.PowerCalibrationError, match="light_tma_req256: steady_rates_per_s.bytes"):
        calibrate_power.derive(d)
