"""`--loop rotated|same` in sweeps (issue 14 item 3): `simulate gemm` knob lists, `hopsim sweep`
flags and grid.yaml's `loop` key, the family sweeps.

Laws: a sweep point with loop L has the numbers of the single `simulate gemm ... --loop L` run; a
sweep that asks for no loop runs rotated and its rows and table carry no loop (as before the
option); a bad loop value is one error line and exit status 2."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from hopsim import sweep
from hopsim.cli import main
from hopsim.cli.sweep_cmd import _at_record_clocks
from tests.cli.one_line import one_error_line

SMALL = ["--m", "256", "--n", "256", "--k", "512"]
SAME_KEYS = ("cycles", "time_ms", "clock_mhz", "sm_clock_mhz", "bytes_hbm", "bytes_l2", "power_w")


def _json(capsys, argv: list[str]):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _single(capsys, stages: int, loop: str) -> dict:
    return _json(capsys, ["simulate", "gemm", *SMALL, "--stages", str(stages), "--loop", loop, "--json"])


def _same_numbers(row: dict, single: dict) -> None:
    for k in SAME_KEYS:
        assert row[k] == single[k], k


def test_simulate_gemm_sweep_with_loop_same_is_the_single_runs(capsys):
    rows = _json(capsys, ["simulate", "gemm", *SMALL, "--stages", "1-2", "--loop", "same", "--json",
                          "--jobs", "1", "--no-progress"])
    assert [r["loop"] for r in rows] == ["same", "same"]
    for r in rows:
        _same_numbers(r, _single(capsys, r["stages"], "same"))
    # the table says the loop once, in a header line
    assert main(["simulate", "gemm", *SMALL, "--stages", "1-2", "--loop", "same", "--jobs", "1",
                 "--no-progress"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("loop: same (every point")


def test_loop_as_a_swept_knob_gives_both_per_point(capsys, tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text("base: {m: 256, n: 256, k: 512}\nsweep: {stages: [1, 2], loop: [rotated, same]}\n")
    rows = _json(capsys, ["sweep", "--grid", str(grid), "--executor", "serial", "--no-progress", "--json"])
    assert [(r["stages"], r["loop"]) for r in rows] == [(1, "rotated"), (1, "same"), (2, "rotated"), (2, "same")]
    for r in rows:
        _same_numbers(r, _single(capsys, r["stages"], r["loop"]))
    # simulate gemm takes the same list; the loop is then a table column, not a header line
    assert main(["simulate", "gemm", *SMALL, "--stages", "2", "--loop", "rotated,same", "--jobs", "1",
                 "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[0] == "loop" and [x.split()[0] for x in lines[1:]] == ["rotated", "same"]


def test_no_loop_sweep_runs_rotated_and_carries_no_loop(capsys):
    plain = _json(capsys, ["sweep", *SMALL, "--stages", "1,2", "--executor", "serial", "--no-progress", "--json"])
    rot = _json(capsys, ["sweep", *SMALL, "--stages", "1,2", "--loop", "rotated", "--executor", "serial",
                         "--no-progress", "--json"])
    assert all("loop" not in r for r in plain) and [r["loop"] for r in rot] == ["rotated", "rotated"]
    for a, b in zip(plain, rot):
        _same_numbers(a, b)
    assert main(["sweep", *SMALL, "--stages", "1,2", "--executor", "serial", "--no-progress"]) == 0
    assert "loop" not in capsys.readouterr().out


def test_family_sweep_honours_loop(capsys):
    rows = _json(capsys, ["sweep", "--family", "vecadd", "--n", "65536", "--loop", "rotated,same",
                          "--executor", "serial", "--no-progress", "--json"])
    for r in rows:
        single = _json(capsys, ["simulate", "vecadd", "--n", "65536", "--loop", r["loop"], "--json"])
        assert r["cycles"] == single["cycles"] and r["time_ms"] == single["time_ms"]
    # the inputs fit in the L2: the same loop reads no more from HBM than the rotated one, and is faster
    by = {r["loop"]: r for r in rows}
    assert by["same"]["bytes_hbm"] < by["rotated"]["bytes_hbm"] and by["same"]["cycles"] < by["rotated"]["cycles"]


@pytest.mark.parametrize("argv", [
    ["simulate", "gemm", "--loop", "bogus"],
    ["simulate", "gemm", "--stages", "1-2", "--loop", "same,cold"],
    ["simulate", "gemm", "--loop", ""],
    ["sweep", "--loop", "warm", "--list"],
    ["sweep", "--family", "softmax", "--loop", "1-2", "--list"],
])
def test_bad_loop_flag_is_one_line_exit_2(capsys, argv):
    assert main(argv) == 2
    line = one_error_line(capsys)
    assert "loop" in line and "rotated" in line and "same" in line


@pytest.mark.parametrize("text", ["base: {loop: warm}", "sweep: {loop: [same, 3]}", "sweep: {loop: {a: 1}}",
                                  "sweep: {loop: []}", "base: {loop: [rotated, same]}", "sweep: {loop: null}"])
def test_bad_loop_grid_key_is_one_line_exit_2(capsys, tmp_path, text):
    grid = tmp_path / "g.yaml"
    grid.write_text(text + "\n")
    assert main(["sweep", "--grid", str(grid), "--list"]) == 2
    assert "loop" in one_error_line(capsys)


def test_compare_records_matches_only_rotated_points():
    """The H100 records rotate their buffers: a loop=same point of the same configuration is not
    matched with them (nor simulated at their clock); a rotated one, with or without `loop`, is."""
    base = sweep.default_point()
    hp = SimpleNamespace(params={k: v for k, v in base.items() if k != "gpu"}, sim_clock_mhz=1755.0)
    points = [dict(base), {**base, "loop": "rotated"}, {**base, "loop": "same"}]
    assert sorted(_at_record_clocks(points, [hp])) == [0, 1]
    assert [p.get("sm_clock_mhz") for p in points] == [1755.0, 1755.0, None]
