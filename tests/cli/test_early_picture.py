"""The sweep picture's early work (hopsim/cli/simulate_cmd.py `_EarlyPicture`): matplotlib loads once
the workers run, the fastest row so far is re-simulated and drawn once no chunk is queued, and
the picture uses that run and drawing only when the finished sweep's fastest row is that same row."""

from __future__ import annotations

import argparse
import tempfile

from hopsim.cli import simulate_cmd


def _rows():
    return [{"stages": s, "time_ms": t} for s, t in ((1, 0.30), (2, 0.26), (3, 0.25))]


def test_loads_pyplot_first_then_simulates_and_draws_the_fastest_row_so_far_once_no_chunk_is_queued(monkeypatch):
    done = []
    monkeypatch.setattr(simulate_cmd, "pyplot", lambda: done.append("pyplot"))
    monkeypatch.setattr(simulate_cmd, "_traced_run", lambda row, keys: done.append(("run", row["stages"])) or row)
    monkeypatch.setattr(simulate_cmd, "_drawn", lambda run, window: done.append(("draw", run["stages"], window)) or b"png")
    workers = 3
    early = simulate_cmd._EarlyPicture(argparse.Namespace(plot="t.png", plot_cycles=None), ["stages"], workers=workers)
    rows = _rows()
    early([None, None, None], workers + 2)
    assert done == ["pyplot"]
    early([rows[0], None, None], workers + 1)  # more chunks pending than workers: one is queued
    assert done == ["pyplot"]
    early([rows[0], rows[1], None], workers)  # none queued: every pending chunk is running
    early([rows[0], rows[1], rows[2]], workers - 1)  # once only
    assert done == ["pyplot", ("run", 2), ("draw", 2, None)]
    assert early.run_of(rows[1]) is rows[1] and early.png_of(rows[1]) == b"png"
    assert early.run_of(rows[2]) is None and early.run_of(dict(rows[1])) is None
    assert early.png_of(rows[2]) is None and early.png_of(dict(rows[1])) is None


def test_no_early_run_without_plot(monkeypatch):
    monkeypatch.setattr(simulate_cmd, "pyplot", lambda: None)
    monkeypatch.setattr(simulate_cmd, "_traced_run", lambda row, keys: 1 / 0)
    early = simulate_cmd._EarlyPicture(argparse.Namespace(plot=None), ["stages"])
    early([None], 5)
    early(_rows(), 0)
    assert early.row is None and early.run is None and early.png is None


def test_the_picture_uses_the_early_run_only_for_the_sweeps_fastest_row(monkeypatch, tmp_path):
    made, drawn = [], []
    monkeypatch.setattr(simulate_cmd, "_traced_run", lambda row, keys: made.append(row["stages"]) or ("run", row["stages"]))
    monkeypatch.setattr(simulate_cmd, "_timeline", lambda run, path, window: drawn.append(run))
    args = argparse.Namespace(plot=str(tmp_path / "t.png"), sweep_plot=None, plot_cycles=None, no_progress=True)
    grid = argparse.Namespace(swept=["stages"])
    rows = _rows()
    points = [{"stages": r["stages"]} for r in rows]

    class Outs:
        def stage(self, path):
            return path

    early = simulate_cmd._EarlyPicture(args, ["stages"])
    early.row, early.run = rows[1], ("early", 2)  # the fastest so far was stage 2; stage 3 came in later
    simulate_cmd._sweep_outputs(args, rows, grid, points, Outs(), early)
    assert drawn == [("run", 3)] and made == [3]
    early.row, early.run = rows[2], ("early", 3)
    simulate_cmd._sweep_outputs(args, rows, grid, points, Outs(), early)
    assert drawn[-1] == ("early", 3) and made == [3]
    early.png = b"early picture"  # drawn early too: its bytes are the picture, nothing drawn again
    simulate_cmd._sweep_outputs(args, rows, grid, points, Outs(), early)
    assert (tmp_path / "t.png").read_bytes() == b"early picture" and len(drawn) == 2 and made == [3]
    early.row = rows[1]  # not the fastest row's: simulated and drawn anew
    simulate_cmd._sweep_outputs(args, rows, grid, points, Outs(), early)
    assert drawn[-1] == ("run", 3) and made == [3, 3]


def test_the_early_drawing_is_the_timeline_of_the_run_as_bytes(monkeypatch, tmp_path):
    def fake_timeline(run, path, window):
        assert str(path).endswith(".png")
        with open(path, "wb") as f:
            f.write(f"{run}:{window}".encode())

    monkeypatch.setattr(simulate_cmd, "_timeline", fake_timeline)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert simulate_cmd._drawn("r", 500) == b"r:500"
    assert list(tmp_path.iterdir()) == []  # the scratch file is gone
