"""`hopsim simulate vecadd|copy`: the memory-bound front end (hopsim/cli/membound_cmd.py).

Laws: --check computes what numpy computes (exit 0, "equal"); --json carries the report's fields,
the bytes the kernel must move and the HBM bytes read and written back (a copy beyond nothing of
L2: reads n x 4 B, writes n x 4 B); bad flags are one line, exit 2."""

from __future__ import annotations

import json

import pytest

from hopsim.cli import main


def test_check_equals_numpy(capsys):
    assert main(["simulate", "vecadd", "--n", "8192", "--vec", "4", "--check", "--clock", "boost", "--no-progress"]) == 0
    assert "check against numpy: equal (8192 elements)" in capsys.readouterr().out


def test_json_has_bytes_and_times(capsys):
    assert main(["simulate", "copy", "--n", "65536", "--vec", "1", "--grid-stride", "--ctas", "8", "--json",
                 "--clock", "boost", "--no-progress"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["family"] == "copy" and d["bytes_moved"] == 8 * 65536 and d["ctas"] == 8
    assert d["bytes_hbm"] == 4 * 65536 and d["extra"]["bytes_hbm_written"] == 4 * 65536
    assert d["cycles"] > 0 and d["time_ms_boost"] > 0 and d["gb_per_s"] > 0


@pytest.mark.parametrize("argv, word", [
    (["vecadd", "--vec", "3"], "vec=3"),
    (["copy", "--n", "100", "--grid-stride"], "n=100"),
    (["copy", "--n", str((1 << 30) + 4)], "n="),
    (["copy", "--threads", "48"], "threads=48"),
    (["vecadd", "--n", str(1 << 23), "--check"], "--check"),
])
def test_bad_input_is_one_line_exit_2(argv, word, capsys):
    assert main(["simulate", *argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0] and (word in err[0] or word.strip("-") in err[0]), err
