"""`hopsim sweep --family F` for the non-GEMM front ends (vecadd, copy, rowsum, softmax, tmacopy,
attention): the same surface as the GEMM sweep (--list, --y, --plot, --out, bad input = one line
and exit 2). Laws: the grid is the product of the swept knobs over the family's defaults, every
row carries every knob of its family; a sweep row is the number `hopsim simulate F --json` gives
for the same point (same cycles and time: one model, two front ends); a flag of another family,
a value outside a knob's domain, an invalid combination and an unknown --y are named errors."""

from __future__ import annotations

import json

import pytest

from hopsim import sweep
from hopsim.cli import main
from hopsim.sweep_knobs import FAMILIES

SMALL = {  # family -> (sweep flags, the same point's `simulate` flags for the first point)
    "vecadd": (["--n", "131072", "--vec", "1,4"], ["--n", "131072", "--vec", "1"]),
    "copy": (["--n", "65536", "--grid-stride", "false,true", "--ctas", "32"], ["--n", "65536", "--ctas", "32"]),
    "rowsum": (["--rows", "128", "--cols", "1024", "--mapping", "warp,cta"],
               ["--rows", "128", "--cols", "1024", "--mapping", "warp"]),
    "softmax": (["--rows", "64", "--cols", "1024,2048"], ["--rows", "64", "--cols", "1024"]),
    "tmacopy": (["--rows", "256", "--cols", "256", "--box-rows", "32,64"],
                ["--rows", "256", "--cols", "256", "--box-rows", "32"]),
    "attention": (["--seq", "128", "--variant", "single,ws"], ["--seq", "128", "--variant", "single", "--timing-only"]),
}


def _json_rows(text: str) -> list[dict]:
    return json.loads(text[text.index("["):text.rindex("]") + 1])


@pytest.mark.parametrize("fam", list(SMALL))
def test_list_is_the_product_over_the_family_defaults(fam, capsys):
    flags, _ = SMALL[fam]
    assert main(["sweep", "--family", fam, *flags, "--list"]) == 0
    pts = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert len(pts) == 2
    default = sweep.default_point(fam)
    for p in pts:
        assert set(p) == set(default) | {"clock"} and p["family"] == fam
    swept = [k for k in default if pts[0][k] != pts[1][k]]
    assert len(swept) == 1  # the one swept knob, the rest at the family's defaults or the flags


@pytest.mark.parametrize("fam", list(SMALL))
def test_sweep_row_equals_the_simulate_front_end(fam, tmp_path, capsys):
    flags, single = SMALL[fam]
    out, png = tmp_path / "r.csv", tmp_path / "p.png"
    y = FAMILIES[fam].columns[-1]  # gb_per_s, or tflops for attention
    rc = main(["sweep", "--family", fam, *flags, "--executor", "serial", "--no-progress", "--clock", "boost",
               "--y", y, "--out", str(out), "--plot", str(png)])
    text = capsys.readouterr().out
    assert rc == 0, text
    rows = sweep.read_rows(out)
    assert len(rows) == 2 and not any(r.get("error") for r in rows)
    assert text.splitlines()[0].split()[1] == y
    assert png.read_bytes()[:4] == b"\x89PNG"
    for r in rows:
        assert set(sweep.default_point(fam)) <= set(r) and r[y] > 0
    assert main(["simulate", fam, *single, "--clock", "boost", "--json", "--no-progress"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert (rows[0]["cycles"], rows[0]["time_ms"]) == (one["cycles"], pytest.approx(one["time_ms"], rel=1e-12))


@pytest.mark.parametrize("argv, says", [
    (["--family", "bogus"], "family='bogus' is invalid: one of gemm, vecadd"),
    (["--family", "vecadd", "--tile", "128x128x64"], "a knob of family vecadd"),
    (["--family", "softmax", "--mapping", "row"], "mapping='row' is invalid: one of warp, cta"),
    (["--family", "copy", "--grid-stride", "maybe"], "true or false"),
    (["--family", "vecadd", "--y", "tflops"], "y='tflops' is invalid: a result column"),
    (["--family", "tmacopy", "--compare-records"], "only with --family gemm"),
    (["--family", "vecadd", "--n", "1000", "--grid-stride", "true"], "n=1000 is invalid"),  # every point invalid
    (["--family", "attention", "--head-dim", "96"], "head-dim=96 is invalid: one of 64, 128"),
])
def test_bad_input_is_one_line_and_exit_2(argv, says, capsys):
    assert main(["sweep", *argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0]


def test_an_invalid_point_among_valid_ones_gets_an_error_column(capsys):
    """softmax cols 1000 is not a multiple of 128: that point is skipped with its error; exit 1."""
    rc = main(["sweep", "--family", "softmax", "--rows", "32", "--cols", "1000,1024", "--executor", "serial",
               "--no-progress", "--json"])
    rows = _json_rows(capsys.readouterr().out)
    assert rc == 1
    assert "cols=1000 is invalid" in rows[0]["error"] and rows[1].get("error") is None
