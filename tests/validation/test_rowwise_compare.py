"""hopsim.validate.portfolio_compare on row-wise records: every held-out point maps to a valid
`hopsim simulate rowsum|softmax` command carrying its rows, cols, mapping and threads (nothing of
the held-out set is simulated here), and a record of a development size (not held out) goes
through the whole comparison: the report has the family's line at the predicted clock and the
row's errors are simulated / measured - 1 at both clocks."""

from __future__ import annotations

import json

from hopsim.cli import build_parser
from hopsim.validate import portfolio_compare
from validation import rowwise as rw


def _record(p: dict, ms: float, mhz: float) -> dict:
    return {"kind": "portfolio", "family": p["family"], "name": p["name"], "params": p, "error": None,
            "check": {"passed": True}, "sm_clock": {"nvml_median_mhz": mhz},
            "launch": {"grid": p["grid_132sm"], "block": 256},
            "results": {"ms_median": ms, "bytes_per_s": p["bytes_moved"] / (ms * 1e-3), "bytes_moved": p["bytes_moved"]}}


def test_every_rowwise_point_maps_to_a_valid_simulate_command():
    for p in rw.points():
        argv = ["simulate", *portfolio_compare.cli_args(_record(p, 1.0, 1755.0)), "--clock", "1980", "--json"]
        build_parser().parse_args(argv)
        rest = argv[2:]
        assert argv[1] == p["family"] and rest[rest.index("--rows") + 1] == str(p["rows"])
        assert rest[rest.index("--cols") + 1] == str(p["cols"]) and rest[rest.index("--mapping") + 1] == p["mapping"]


def test_compare_runs_on_a_development_size(tmp_path):
    p = dict(rw.points("softmax")[0], rows=64, cols=256, n_floats=64 * 256, grid_132sm=8, name="softmax_warp_r64_c256",
             bytes_moved=8 * 64 * 256)
    assert (p["rows"], p["cols"]) not in {(q["rows"], q["cols"]) for q in rw.points()}
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "portfolio.jsonl").write_text(json.dumps(_record(p, 0.005, 1700.0)) + "\n")
    assert portfolio_compare.main(["--records", str(tmp_path / "rec"), "--out", str(tmp_path / "r"), "--jobs", "1"]) == 0
    doc = json.loads((tmp_path / "r" / "portfolio.json").read_text())
    row = doc["rows"][0]
    assert "error" not in row, row
    assert abs(row["err_pred_clock"] - (row["pred_ms"] / 0.005 - 1)) < 1e-12
    assert abs(row["err_hw_clock"] - (row["sim_ms_at_hw_clock"] / 0.005 - 1)) < 1e-12
    assert doc["summary"]["softmax, at the predicted clock"]["n"] == 1
    assert "softmax" in (tmp_path / "r" / "portfolio.md").read_text().splitlines()[0]
