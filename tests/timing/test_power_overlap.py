"""The fill/tensor overlap term of the power model (issue 13: the GEMM-like pipe microbenchmark,
validation/records/h100/power/light_pipe/): laws of the term, and that the light run's own pipe
points, never fitted, are reproduced within the issue's 10% power target."""

from __future__ import annotations

import json

import pytest

from hopsim.config.power import load_power
from hopsim.power.model import Events, PowerModel
from hopsim.validate import calibrate_power

PM = PowerModel.load()
V = PM.v


def _term(mhz, ev):
    return PM.breakdown_w(mhz, ev, 1.0)["fill_tensor_overlap"]


@pytest.mark.parametrize("mhz", [1980, 1500, 900])
def test_term_is_w_times_f_v2_times_per_sm_tensor_and_fill_duties(mhz):
    sms = V["chip_sms"]
    cyc = sms * mhz * 1e6
    ev = Events(tensor_flops=0.4 * cyc * V["tensor_flop_per_sm_cycle"], l2_bytes=0.25 * cyc * V["smem_port_bytes_per_sm_cycle"])
    want = V["fill_tensor_overlap_w"] * PM.voltage(mhz) ** 2 * mhz / PM.f_max * 0.4 * 0.25
    assert _term(mhz, ev) == pytest.approx(want, rel=1e-9)
    assert V["fill_tensor_overlap_w"] > 0


def test_term_is_bilinear_in_tensor_and_fill_rates():
    base = _term(1700, Events(tensor_flops=1e14, l2_bytes=2e12))
    assert _term(1700, Events(tensor_flops=2e14, l2_bytes=2e12)) == pytest.approx(2 * base, rel=1e-12)
    assert _term(1700, Events(tensor_flops=2e14, l2_bytes=4e12)) == pytest.approx(4 * base, rel=1e-12)


@pytest.mark.parametrize("ev", [Events(tensor_flops=1e14), Events(l2_bytes=5e12),
                                Events(tensor_flops=1e14, l2_bytes=1e12, hbm_write_bytes=1e12),
                                Events(tensor_flops=1e14, l2_bytes=1e12, sm_fraction=0.0)],
                         ids=["tensor only", "fill only", "stores only", "no SM"])
def test_no_overlap_without_both_tensor_work_and_fills(ev):
    assert _term(1980, ev) == 0.0


def test_half_the_sms_at_the_same_per_sm_duties_draw_half():
    full = _term(1980, Events(tensor_flops=2e14, l2_bytes=4e12))
    half = _term(1980, Events(tensor_flops=1e14, l2_bytes=2e12, sm_fraction=0.5))
    assert half == pytest.approx(full / 2, rel=1e-12)


def test_fitted_on_the_pipe_run_with_its_own_nuisance_columns():
    src = load_power().params()["fill_tensor_overlap_w"].source
    assert "light_pipe/" in src and src.startswith("measured:")
    data = json.loads(calibrate_power.POWER_FILES["h100_sxm"].read_text())
    fitted = {p["name"] for p in data["fit"]["points"]}
    assert {"light_pipe_req8192_s2", "light_pipe_req1024_s2", "light_pipe_req8192_s2_fixsrc"} <= fitted
    assert {"pipe_run_offset_w", "pipe_run_drift_w"} <= set(data["fit"]["light_run"])


@pytest.mark.parametrize("name", ["light_pipe_req8192_s2", "light_pipe_req1024_s2"])
def test_light_run_pipe_points_never_fitted_within_10_percent(name):
    """The light run (light/, an earlier session of the chip) measured the same pipe: 701 W capped
    at 1687 MHz and 321 W at 1980 MHz; those records are check points, not fit points."""
    data = json.loads(calibrate_power.POWER_FILES["h100_sxm"].read_text())
    chk = {c["name"]: c for c in data["fit"]["checks_never_fitted"]}[name]
    assert abs(chk["residual_w"]) <= 0.10 * chk["measured_w"]
