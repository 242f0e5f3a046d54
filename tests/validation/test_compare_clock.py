"""validate compare at the predicted clock (issue 13 item 5): the headline basis and the per-record
clock/power rows, on synthetic points (no simulation)."""

from __future__ import annotations

import pytest

from hopsim.power.model import PowerModel

from hopsim.validate.run_compare import HwPoint, clock_rows, clock_section, clock_summary, entries

PARAMS = {"m": 256, "n": 256, "k": 256}


def _hw(**kw) -> HwPoint:
    base = dict(params=PARAMS, measured_ms=1.0, clock_mhz=1500.0, tags=("t",), sweeps=("s",), n_records=1)
    return HwPoint(**{**base, **kw})


ROW = {"cycles": 1_500_000, "time_ms_sustained": 1.1, "sustained_clock_mhz": 1350.0,
       "power_w_sustained": 690.0}


def test_predicted_basis_compares_the_time_at_the_predicted_clock():
    (e,) = entries([_hw()], [ROW], basis="predicted")
    assert (e.measured, e.simulated) == (1.0, 1.1)
    # the diagnostic basis uses the measured clock instead: the record's nvidia-smi 1500 MHz is a
    # reported clock, so its SMs ran at 1500 x tensor_sm_clock_ratio: 1.5e6 cycles at that clock
    (d,) = entries([_hw()], [ROW], basis="observed")
    sm = round(1500.0 * PowerModel.load().v["tensor_sm_clock_ratio"], 1)
    assert d.simulated == pytest.approx(1.5e6 / (sm * 1e3))


def test_old_records_use_the_nvidia_smi_clock_and_say_so():
    (c,) = clock_rows([_hw()], [ROW])
    assert c["measured_clock_mhz"] == 1500.0 and "nvidia-smi" in c["measured_clock_source"]
    assert c["clock_error_pct"] == pytest.approx(-10.0) and c["measured_power_w"] is None
    assert c["time_error_pct"] == pytest.approx(10.0)
    s = clock_summary([c])
    assert s["clock_n"] == 1 and s["power_n"] == 0 and s["power_mape_pct"] is None
    assert "nvidia-smi" in clock_section([c])


def test_records_with_nvml_power_give_clock_and_power_errors():
    hp = _hw(nvml_clock_mhz=1400.0, nvml_power_w=700.0, profile_clock_mhz=1420.0,
             nvml_clock_median_mhz=1365.0, nvml_window_s=0.31)
    (c,) = clock_rows([hp], [ROW])
    assert (c["measured_clock_median_mhz"], c["measured_window_s"]) == (1365.0, 0.31)
    assert "| 1365 | 0.31 |" in clock_section([c])
    assert c["measured_clock_mhz"] == 1400.0 and "NVML" in c["measured_clock_source"]
    assert c["power_error_pct"] == pytest.approx(100.0 * (690 - 700) / 700)
    assert hp.sim_clock_mhz == 1420.0   # the SM-model diagnostic keeps the clock64 clock
