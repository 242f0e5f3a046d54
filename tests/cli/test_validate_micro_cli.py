"""`hopsim validate micro`: the fit per family, JSON rows, and bad input as one line, exit 2."""

from __future__ import annotations

import json

from hopsim.cli import main


def test_micro_smem_through_simulate_json(capsys):
    assert main(["validate", "micro", "--family", "smem", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    fam = out["families"]["smem"]
    assert out["through"] == "simulate" and out["tolerance"] == 0.1
    res = fam["results"]
    assert fam["rows"] == len(res) > 0 and fam["within"] == sum(r["ok"] for r in res)
    assert fam["checks"] == sum(not r["calibration"] for r in res)


def test_micro_units_summary(capsys):
    assert main(["validate", "micro", "--through", "units", "--family", "mbarrier"]) == 0
    out = capsys.readouterr().out
    assert "unit replays" in out and "mbarrier" in out


def test_micro_bad_family_is_one_line_exit_2(capsys):
    assert main(["validate", "micro", "--family", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "family" in err[0] and "nope" in err[0] and "smem" in err[0]


def test_micro_bad_records_dir(capsys, tmp_path):
    assert main(["validate", "micro", "--records", str(tmp_path / "missing")]) == 2
    assert "records" in capsys.readouterr().err
