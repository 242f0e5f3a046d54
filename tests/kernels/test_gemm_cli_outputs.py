"""`hopsim simulate gemm` output files: an output path that cannot be written is bad input, reported
in one line with exit status 2 before anything is simulated (not a traceback after the run)."""

from __future__ import annotations

import json

import pytest

from hopsim.cli import main


@pytest.mark.parametrize("flag,name", [("--trace", "t.json"), ("--plot", "t.png"), ("--sweep-plot", "s.png")])
def test_unwritable_output_is_one_line_exit_2(tmp_path, capsys, flag, name):
    missing = tmp_path / "no" / "such" / "dir" / name
    rc = main(["simulate", "gemm", "--m", "256", "--n", "256", "--k", "256", flag, str(missing)])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert flag.lstrip("-") in err and str(missing) in err


def test_trace_is_written_where_asked(tmp_path, capsys):
    out = tmp_path / "gemm.trace.json"
    assert main(["simulate", "gemm", "--m", "256", "--n", "256", "--k", "256", "--trace", str(out), "--json"]) == 0
    capsys.readouterr()
    doc = json.loads(out.read_text())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc  # Chrome trace-event JSON (Perfetto)
    assert events and all("ph" in e and "pid" in e for e in events)
    assert any(e["ph"] == "X" and e.get("dur", -1) >= 0 for e in events)  # complete events: unit activity
