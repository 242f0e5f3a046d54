"""`--set heldout17` of hopsim.validate.heldout on synthetic records (never by simulating the set):
heldout17 gets heldout14's metrics, fixed targets and report, with its own membership, title
(issues 14-17) and seed; records of another set are refused. Its records carry the SM-clock probe
(`sm_clock_eff_mhz`), so each is also simulated with the SMs at that clock (`simulate gemm
--sm-clock E`; the CLI's --clock is the clock NVML reports and a tensor kernel's SMs run at ratio x
it); the report adds a third basis, "SMs' measured clock
(clock64)", and keeps the other columns and the targets; sets without the probe are unchanged (the
published heldout14-16 reports regenerate byte for byte from their compare.json)."""

from __future__ import annotations

import concurrent.futures as cf
import json
import pathlib

import pytest

from hopsim.validate import heldout, heldout14_report
from tests.validation import heldout_checks as hc
from validation import heldout14, heldout15, heldout16, heldout17

REPORTS = hc.REPO / "validation" / "reports" / "h100"
#: a synthetic simulator: a launch takes CYCLES cycles at the clock its SMs run, RATIO x --clock
CYCLES, RATIO = 2_000_000, 0.934


def test_perfect_simulation_of_heldout17_meets_every_target():
    hc.check_perfect_simulation_meets_every_target(heldout17)


def test_heldout17_rows_measured_against_heldout14_membership_count_as_unmeasured():
    hc.check_rows_against_heldout14_count_as_unmeasured(heldout17)


def test_report_names_heldout17_its_seed_and_every_sweep():
    md, _, _ = hc.check_report(heldout17)
    assert "heldout17 (issues 14-17, seed 1720261124)" in md.splitlines()[0]
    assert "clock64" not in md  # rows without the probe: no third basis


def test_cli_refuses_another_sets_records(tmp_path, capsys):
    hc.check_cli_refuses_another_sets_records(heldout17, tmp_path, capsys)


def test_readme_lists_heldout17_only_once_its_report_exists(tmp_path, monkeypatch):
    hc.check_readme_lists_the_set_once_its_report_exists(heldout17, tmp_path, monkeypatch)


@pytest.mark.parametrize("hset", (heldout14, heldout15, heldout16), ids=lambda m: m.SWEEP_NAME)
def test_published_reports_of_unprobed_sets_are_unchanged(hset):
    c = json.loads((REPORTS / hset.SWEEP_NAME / "compare.json").read_text())
    assert heldout14_report.summarise(c["rows"], hset=hset) == c["summary"]
    md = heldout14_report.markdown(c["summary"], c["rows"], c["model_fingerprint"], c["basis"], hset=hset)
    assert md == (REPORTS / hset.SWEEP_NAME / "report.md").read_text()


# ----------------------------------------------------------------------------- the SMs' measured clock
def fake_simulate(calls: list, ratio: float | None):
    """heldout.simulate replaced: 'sustained' predicts 1700 MHz; time = CYCLES / the SMs' clock,
    the SMs at ratio x --clock, or at exactly --sm-clock (ratio None: a model whose JSON has no
    sm_clock_mhz, SMs at --clock)."""
    def simulate(p: dict, clock: str, sm_clock: bool = False) -> dict:
        calls.append(("sm " if sm_clock else "") + clock)
        mhz = 1700.0 if clock == "sustained" else float(clock)
        sm = mhz if sm_clock else mhz * (ratio or 1.0)
        out = {"clock_mhz": sm / (ratio or 1.0) if sm_clock else mhz, "time_ms": CYCLES / (sm * 1e3),
               "power_w": 650.0}
        return {**out, "sm_clock_mhz": sm} if ratio else out
    return simulate


def record(i: int, eff: float | None) -> dict:
    """A synthetic heldout17 record: hardware time = CYCLES at 1750 MHz; NVML's clock 1850 MHz."""
    p = heldout17.sweep()[i]
    rec = {"kind": "gemm_sustained", "status": "ok", "tag": p.tag, "params": p.to_dict(), "flops": p.flops,
           "time_ms": CYCLES / 1750e3, "sm_clock_mhz_tw": 1850.0, "power_w_nvml_tw": 640.0,
           "power_w_counter": 645.0}
    return {**rec, "sm_clock_eff_mhz": eff} if eff else rec


@pytest.mark.parametrize("ratio", (RATIO, None), ids=("ratio", "no-ratio"))
def test_time_at_the_sms_measured_clock(ratio, monkeypatch):
    calls: list = []
    monkeypatch.setattr(heldout, "simulate", fake_simulate(calls, ratio))
    row = heldout.compare_one(record(0, 1750.0))
    assert calls == ["sustained", "1850.0", "sm 1750.0"]
    assert row["hw_sm_clock_eff_mhz"] == 1750.0 and row["sim_clock_arg_mhz_at_sm_clock"] == 1750.0
    # the SMs ran at E, so the cycle-exact synthetic model has no error
    assert row["sim_sm_clock_mhz_at_sm_clock"] == pytest.approx(1750.0)
    assert row["err_time_sm_clock"] == pytest.approx(0.0, abs=1e-12)
    assert row["err_time_hw_clock"] == pytest.approx(1750 / (1850 * (ratio or 1.0)) - 1)  # unchanged column


def test_no_probe_no_third_simulation(monkeypatch):
    calls: list = []
    monkeypatch.setattr(heldout, "simulate", fake_simulate(calls, RATIO))
    row = heldout.compare_one(record(0, None))
    assert calls == ["sustained", "1850.0"] and not any("sm_clock" in k for k in row)


def test_a_clock_outside_the_cli_range_is_that_rows_error(monkeypatch):
    def simulate(p, clock, sm_clock=False):
        if sm_clock:
            return {"error": f"hopsim: --sm-clock {clock}: not an SM clock in MHz from 100 to 1980"}
        return fake_simulate([], RATIO)(p, clock)
    monkeypatch.setattr(heldout, "simulate", simulate)
    row = heldout.compare_one(record(0, 1990.0))
    assert "error" not in row and "err_time_hw_clock" in row and "--sm-clock 1990.0" in row["sm_clock_error"]


def test_report_of_two_probed_records(tmp_path, monkeypatch):
    """The CLI on a records dir of two synthetic probed records: a third basis, targets unchanged."""
    monkeypatch.setattr(heldout, "simulate", fake_simulate([], RATIO))
    monkeypatch.setattr(heldout.cf, "ProcessPoolExecutor", cf.ThreadPoolExecutor)  # the fake is in-process
    (tmp_path / "recs").mkdir()
    (tmp_path / "recs" / "gemm_sustained_heldout17.jsonl").write_text(
        "".join(json.dumps(record(i, 1750.0 + 10 * i)) + "\n" for i in range(2)))
    out = tmp_path / "r"
    assert heldout.main(["--set", "heldout17", "--records", str(tmp_path / "recs"), "--out", str(out),
                         "--jobs", "1"]) == 0
    doc = json.loads((out / "compare.json").read_text())
    s = doc["summary"]
    assert s["time_at_sm_clock"]["n"] == 2 and s["time_at_measured_clock"]["n"] == 2
    assert set(s["sweeps"]) == {"predicted_clock", "measured_clock", "sm_clock"}
    assert s["sweeps"]["sm_clock"]["all"]["n"] == 1  # sweep 00 has 2 of its points measured
    assert [t["limit"] for t in s["targets"]] == [t.limit for t in heldout14_report.TARGETS]
    md = (out / "report.md").read_text()
    assert "predicted clock / measured clock / SMs' measured clock (clock64)" in md
    assert "| time at the SMs' measured clock (clock64) | 2 |" in md
    assert "SMs' MHz (clock64)" in md and "| 1750 |" in md and "| 1760 |" in md
    assert "err time (pred / meas / SMs' clk)" in md
