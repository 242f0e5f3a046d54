"""hopsim.validate.portfolio_compare on tmacopy records (validation/portfolio_tmacopy.py): every
held-out point, written as the runner writes its record, maps to a `simulate tmacopy` command
whose parameters are the point's (box, swizzle, stages, dtype, size, the record's persistent grid),
checked through the CLI's own parser and parameter checks without simulating (the points are held
out); the summary has a tmacopy row; the markdown names the families compared."""

from __future__ import annotations

from hopsim.cli import build_parser, tmacopy_cmd
from hopsim.validate import portfolio_compare as pc
from validation import portfolio_tmacopy as ptc


def _record(p: dict, sms: int = 132) -> dict:
    return {"kind": "portfolio", "params": p, "launch": {"grid": ptc.grid(p, sms)}, "error": None,
            "results": {"ms_median": 1.0, "bytes_per_s": 1.0}, "check": {"passed": True},
            "sm_clock": {"nvml_median_mhz": 1755.0}}


def test_every_tmacopy_point_maps_to_its_simulate_command():
    for p in ptc.points():
        rec = _record(p, sms=114)     # a grid that is not 132 x k: the record's grid is what is used
        argv = pc.cli_args(rec)
        assert argv[0] == "tmacopy"
        build_parser().parse_args(["simulate", *argv, "--json"])
        q = tmacopy_cmd._params(tmacopy_cmd.parser().parse_args(argv[1:]))
        assert (q.rows, q.cols, q.dtype, q.box_rows, q.box_cols, q.swizzle, q.stages) == (
            p["rows"], p["cols"], p["dtype"], p["box_rows"], p["box_cols"], p["swizzle"], p["stages"])
        assert q.num_ctas == rec["launch"]["grid"] and q.stage_bytes == p["stage_bytes"]
        assert (q.ctas is None) == (p["ctas_per_sm"] is None)


def test_summary_and_markdown_cover_tmacopy():
    rows = [{"name": "a", "family": "copy", "err_pred_clock": 0.1, "err_hw_clock": 0.05},
            {"name": "b", "family": "tmacopy", "err_pred_clock": -0.3, "err_hw_clock": -0.2}]
    s = pc.summarise(rows)
    assert s["tmacopy, at the predicted clock"]["n"] == 1
    assert s["tmacopy, at the predicted clock"]["worst_pct"] == -30.0
    assert "vecadd, at the predicted clock" not in s
    failed = [{**r, "grid": 1, "hw_ms": 1.0, "error": "x"} for r in rows]
    assert "(copy, tmacopy)" in pc.markdown(failed, s, "fp", "basis").splitlines()[0]
