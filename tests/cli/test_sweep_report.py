"""`hopsim sweep` tables and record comparisons say what they compute (issue 11, items 5, 6, 8).

- --compare-records compares on `validate compare`'s basis (each point simulated at the SM clock
  its H100 run measured) and says so in the text header, in every JSON row and in the plot title.
- the speed-up column is a speed-up for times (first / value) and for rates (value / first); the
  --y column is printed once; an unknown --y is one line, exit 2, listing the valid columns.
- user-facing errors carry no internal module prefix (`sweep:`, `GemmParams:`); the accumulator
  limit names the --tile field.
"""

from __future__ import annotations

import json

import pytest
from PIL import Image

from hopsim.cli import main
from hopsim.gemm_sim import simulate_point
from hopsim.validate.run_compare import entries, hardware_points

# A configuration with an H100 record (validation/records/h100) that simulates in about a second.
RECORDED = {"m": 1024, "n": 1024, "k": 1024, "stages": 4}


def _record_point():
    for hp in hardware_points():
        p = hp.params
        if (p["m"], p["n"], p["k"], p["stages"], p["variant"], p["epilogue"], p["raster"],
                p["layout"], p["accum"], p["box_rows"], p["swizzle"], p["bn"]) == \
                (1024, 1024, 1024, 4, "single", "direct", "row", "tn", "f32", 128, "128B", 128):
            return hp
    pytest.skip("the 1024^3 single s4 record is not in validation/records/h100")


def test_compare_records_uses_validate_compares_basis(capsys, tmp_path):
    hp = _record_point()
    png = tmp_path / "s.png"
    argv = ["sweep", "--m", "1024", "--n", "1024", "--k", "1024", "--stages", "3,4",
            "--compare-records", "--no-progress", "--executor", "serial"]
    assert main(argv + ["--json", "--plot", str(png)]) == 0
    rows = json.loads(capsys.readouterr().out)
    row = next(r for r in rows if r["stages"] == 4)
    # validate compare's "observed" entry: the same point simulated at the record's clock
    sim = simulate_point({**hp.params, "gpu": "h100_sxm", "sm_clock_mhz": hp.sim_clock_mhz})
    want = entries([hp], [sim], basis="observed")[0].error_pct
    assert row["sm_clock_mhz"] == hp.sim_clock_mhz
    assert row["hw_error_pct"] == pytest.approx(want, rel=1e-9)
    assert row["hw_cycles_error_pct"] == pytest.approx(entries([hp], [sim])[0].error_pct, rel=1e-9)
    assert row["clock_basis"] == "record"
    assert next(r for r in rows if r["stages"] == 3)["clock_basis"] == "model"
    assert "measured SM clock" in Image.open(png).info["Title"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].startswith("clock basis:")


def test_tflops_speedup_is_value_over_first_and_printed_once(capsys):
    argv = ["sweep", "--m", "256", "--n", "256", "--k", "256", "--stages", "1,2", "--no-progress",
            "--executor", "serial"]
    assert main(argv + ["--y", "tflops", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert main(argv + ["--y", "tflops"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = lines[0].split()
    assert head.count("tflops") == 1
    sp = float(lines[2].split()[head.index("speedup")])
    assert sp == pytest.approx(rows[1]["tflops"] / rows[0]["tflops"], abs=1e-3)
    assert main(argv + ["--y", "time_ms"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = lines[0].split()
    sp_t = float(lines[2].split()[head.index("speedup")])
    assert sp_t == pytest.approx(rows[0]["time_ms"] / rows[1]["time_ms"], abs=1e-3)


@pytest.mark.parametrize("fn", [None, "hopsim.gemm_sim:simulate_point"])
def test_unknown_y_is_one_line_exit_2(capsys, fn):
    argv = ["sweep", "--m", "128", "--n", "128", "--k", "64", "--stages", "1,2", "--y", "nosuch",
            "--no-progress", "--executor", "serial"]
    assert main(argv + (["--fn", fn] if fn else [])) == 2
    io = capsys.readouterr()
    assert io.out == ""
    lines = io.err.strip().splitlines()
    assert len(lines) == 1 and "nosuch" in lines[0] and "time_ms" in lines[0] and "tflops" in lines[0]


@pytest.mark.parametrize("argv", [
    ["sweep", "--stages", "0", "--list"],
    ["sweep", "--tile", "256x256x64", "--no-progress"],
    ["simulate", "gemm", "--tile", "256x128x64", "--no-progress"],
    ["simulate", "gemm", "--m", "100", "--no-progress"],
    ["sweep", "--grid", "/nonexistent.yaml", "--no-progress"],
])
def test_errors_carry_no_internal_prefix(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for prefix in ("sweep: ", "GemmParams: ", "GemmParams."):
        assert prefix not in err, err


def test_accumulator_limit_names_the_tile_field(capsys):
    assert main(["simulate", "gemm", "--tile", "256x128x64", "--no-progress"]) == 2
    assert "tile='256x128x64'" in capsys.readouterr().err
