"""`--set heldout16` of hopsim.validate.heldout on synthetic records (never by simulating the set):
heldout14_report takes the set module, so heldout16 gets the same metrics, fixed targets and
report as heldout14, with its own membership, title (issues 14-16) and seed (heldout15's title as
published); records of another set (heldout14's) are refused with one line and exit 2."""

from __future__ import annotations

import json

from hopsim.validate import heldout, heldout14_report
from validation import heldout14, heldout15, heldout16


def _row(tag: str, i: int, scale: float = 1.0) -> dict:
    hw = 0.2 + (i * 37 % 101) / 50.0   # deterministic, distinct within a sweep
    return {"tag": tag, "hw_time_ms": hw, "hw_clock_mhz_tw": 1500.0, "hw_power_w_nvml": 600.0,
            "pred_clock_mhz": 1500.0, "pred_power_w": 600.0, "pred_time_ms": hw * scale,
            "sim_time_ms_at_hw_clock": hw * scale, "err_clock": 0.0, "err_power_nvml": 0.0,
            "err_power_counter": 0.0, "err_time_pred_clock": scale - 1, "err_time_hw_clock": scale - 1}


def test_perfect_simulation_of_heldout16_meets_every_target():
    rows = [_row(p.tag, i) for i, p in enumerate(heldout16.sweep())]
    s = heldout14_report.summarise(rows, hset=heldout16)
    assert s["n_set"] == s["n_simulated"] == len(heldout16.sweep()) and not s["not_measured"]
    for basis in ("predicted_clock", "measured_clock"):
        a = s["sweeps"][basis]["all"]
        assert a["n"] == len(heldout16.sweeps()) == a["best_same"] == a["shape_ok"] == a["points_ok"]
    assert all(t["met"] for t in s["targets"])
    assert [t["limit"] for t in s["targets"]] == [t.limit for t in heldout14_report.TARGETS]


def test_heldout16_rows_measured_against_heldout14_membership_count_as_unmeasured():
    rows = [_row(p.tag, i) for i, p in enumerate(heldout16.sweep())]
    s = heldout14_report.summarise(rows)  # default set: heldout14
    assert len(s["not_measured"]) == len(heldout14.sweep())
    assert s["sweeps"]["predicted_clock"]["all"]["n"] == 0


def test_report_names_heldout16_its_seed_and_every_sweep():
    rows = [_row(p.tag, i, 1.1) for i, p in enumerate(heldout16.sweep())]
    s = heldout14_report.summarise(rows, hset=heldout16)
    md = heldout14_report.markdown(s, rows, "e" * 64, "Measured after the freeze.", hset=heldout16)
    title = md.splitlines()[0]
    assert "heldout16 (issues 14-16, seed 1620261124)" in title and str(heldout16.SEED) in title
    assert f"validation/heldout16.py (seed {heldout16.SEED})" in md and "**not met**" in md
    for sw in heldout16.sweeps():
        assert f"| {sw.name} |" in md
    old = heldout14_report.markdown(s, rows, "e" * 64, "")
    assert old.startswith("# Held-out comparison, issue 14:")  # heldout14's title unchanged
    h15 = heldout14_report.markdown(s, rows, "e" * 64, "", hset=heldout15)  # heldout15's as published
    assert h15.startswith("# Held-out comparison, heldout15 (issues 14 and 15, seed 1520261124):")


def test_cli_refuses_another_sets_records(tmp_path, capsys):
    rec = {"kind": "gemm_sustained", "status": "ok", "tag": heldout14.sweep()[0].tag, "params": {}}
    (tmp_path / "x.jsonl").write_text(json.dumps(rec) + "\n")
    assert heldout.main(["--set", "heldout16", "--records", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and heldout14.sweep()[0].tag in err[0] and "heldout16" in err[0]
    assert not (tmp_path / "r").exists()
    assert heldout.SETS["heldout16"]["files"] == ("compare.json", "report.md")
    assert heldout.SETS["heldout16"]["name"] == "heldout16"


def test_readme_lists_heldout16_only_once_its_report_exists(tmp_path, monkeypatch):
    from hopsim.validate import docs_numbers as dn
    monkeypatch.setattr(dn, "REPORT_DIR", tmp_path)
    assert dn.heldout() == "No held-out set has been compared yet.\n"  # no report: no line, no failure
    rows = [_row(p.tag, i, 1.05) for i, p in enumerate(heldout16.sweep())]
    s = heldout14_report.summarise(rows, hset=heldout16)
    (tmp_path / "heldout16").mkdir()
    (tmp_path / "heldout16" / "compare.json").write_text(json.dumps({"model_fingerprint": "a" * 64, "summary": s}))
    text = dn.heldout()
    assert text.count("\n") == 1 and "`validation/reports/h100/heldout16/`, model `aaaaaaaaaaaa`" in text
    assert f"{len(rows)} GEMM benchmark loops" in text and "time MAPE 5.0% at the predicted clock" in text
