"""`hopsim simulate tmacopy`: the TMA copy front end (hopsim/cli/tmacopy_cmd.py).

Laws: --check finds the output equal to the input (exit 0, "equal"); --json carries the report's
fields, the bytes the kernel must move (2 x the tensor) and the HBM bytes read and written back
(a copy of a tensor L2 never saw before: reads and writes the tensor's bytes once each); bad
flags (TMA box rules, swizzle span, stages, sizes) are one line naming the field, exit 2."""

from __future__ import annotations

import json

import pytest

from hopsim.cli import main


def test_check_equals_input(capsys):
    assert main(["simulate", "tmacopy", "--rows", "64", "--cols", "128", "--box-rows", "16", "--box-cols", "32",
                 "--swizzle", "64B", "--stages", "2", "--ctas", "3", "--check", "--clock", "boost",
                 "--no-progress"]) == 0
    assert "check out == in: equal (64x128 f16)" in capsys.readouterr().out


def test_json_has_bytes_and_times(capsys):
    assert main(["simulate", "tmacopy", "--rows", "256", "--cols", "256", "--dtype", "f32", "--box-rows", "32",
                 "--box-cols", "32", "--swizzle", "128B", "--stages", "2", "--json", "--clock", "boost",
                 "--no-progress"]) == 0
    d = json.loads(capsys.readouterr().out)
    tensor = 256 * 256 * 4
    assert d["family"] == "tmacopy" and d["bytes_moved"] == 2 * tensor and d["grid"] == [8, 8, 1] and d["num_ctas"] == d["tiles"] == 64
    assert d["bytes_hbm"] == tensor and d["extra"]["bytes_hbm_written"] == tensor
    assert d["cycles"] > 0 and d["time_ms_boost"] > 0 and d["gb_per_s"] > 0 and d["check"] is None


@pytest.mark.parametrize("argv, word", [
    (["--box-rows", "300"], "box_rows=300"),
    (["--box-cols", "4"], "box_cols=4"),                                   # 8 B inner box
    (["--swizzle", "32B"], "box_cols=64"),                                 # 128 B > the 32B span
    (["--swizzle", "48B"], "swizzle='48B'"),
    (["--dtype", "f64"], "dtype='f64'"),
    (["--rows", "100"], "rows x cols"),
    (["--stages", "0"], "stages=0"),
    (["--box-rows", "256", "--stages", "8"], "stages=8"),
    (["--ctas", "0"], "ctas=0"),
    (["--check"], "--check"),
])
def test_bad_input_is_one_line_exit_2(argv, word, capsys):
    assert main(["simulate", "tmacopy", *argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0] and (word in err[0] or word.strip("-") in err[0]), err
