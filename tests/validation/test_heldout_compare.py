"""The held-out comparison tools (hopsim.validate.heldout, hopsim.validate.portfolio_compare):
each committed held-out record maps to a command line the CLI accepts, and the statistics are
the definitions (MAPE = mean |err|, worst = the error of largest magnitude, counts by |err|)."""

from __future__ import annotations

import json
import pathlib

import pytest

from hopsim.cli import build_parser
from hopsim.validate import heldout, portfolio_compare

REPO = pathlib.Path(__file__).resolve().parents[2]
HELDOUT13 = REPO / "validation/records/h100/heldout13"
PORTFOLIO = REPO / "validation/records/h100/portfolio"


def _parses(argv: list[str]) -> None:
    build_parser().parse_args(argv)  # argparse exits (SystemExit) on an unknown flag or bad choice


def test_every_heldout13_record_maps_to_a_valid_simulate_gemm_command():
    recs = heldout.load(HELDOUT13)
    assert len(recs) == 48
    for r in recs:
        argv = ["simulate", "gemm", *heldout.cli_args(r["params"]), "--clock", "sustained", "--json"]
        _parses(argv)
        # every knob of the record is on the command line, with its value
        p = r["params"]
        assert f"{p['bm']}x{p['bn']}x{p['bk']}" in argv and str(p["m"]) in argv and p["variant"] in argv


def test_every_portfolio_record_maps_to_a_valid_simulate_command():
    recs = portfolio_compare.load(PORTFOLIO)
    assert len(recs) == 56
    for r in recs:
        argv = ["simulate", *portfolio_compare.cli_args(r), "--clock", "1980", "--json"]
        _parses(argv)
        assert ("--grid-stride" in argv) == r["params"]["variant"].endswith("_gs")


def test_stats_are_the_definitions():
    xs = [0.10, -0.20, 0.05, None, 0.0]
    st = heldout._stats(xs)
    assert st["n"] == 4
    assert st["mape_pct"] == pytest.approx(100 * (0.10 + 0.20 + 0.05 + 0.0) / 4)
    assert st["mean_pct"] == pytest.approx(100 * (0.10 - 0.20 + 0.05) / 4)
    assert st["worst_pct"] == pytest.approx(-20.0)
    assert st["within_5pct"] == 2 and st["within_10pct"] == 3
    assert heldout._err(110.0, 100.0) == pytest.approx(0.10)
    assert heldout._err(1.0, 0.0) is None


def test_load_skips_failed_records_and_names_a_corrupt_line(tmp_path):
    good = {"kind": "gemm_sustained", "status": "ok", "params": {}}
    bad = {"kind": "gemm_sustained", "status": "failed", "params": {}}
    other = {"kind": "gemm", "params": {}}
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(x) for x in (good, bad, other)) + "\n")
    assert heldout.load(tmp_path) == [good]
    (tmp_path / "b.jsonl").write_text("{not json\n")
    with pytest.raises(SystemExit, match=r"b\.jsonl:1"):
        heldout.load(tmp_path)


def test_no_records_is_one_line_exit_2(tmp_path, capsys):
    assert heldout.main(["--records", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert portfolio_compare.main(["--records", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
