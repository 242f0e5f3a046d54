"""hopsim.sweep: knob syntax, grids, running (serial, process pool, Dask), CSV/JSON rows;
hopsim.progress: the bar's arithmetic."""

from __future__ import annotations

import concurrent.futures as cf
import io
import itertools
import json
import math
import os
import time

import pytest

from hopsim import sweep
from hopsim.progress import Activity, Progress
from isa.errors import InputError

# ----------------------------------------------------------------------------- fake point functions
# Top-level (picklable by reference) so that process pools and Dask workers can run them.


def fake_point(point: dict) -> dict:
    """A cost formula standing in for simulate_point: time falls with stages, rises with 1/rows."""
    cycles = 1000 * point["k"] // (64 * point["stages"]) + 5000 // point["box_rows"]
    return {"cycles": cycles, "time_ms": cycles / 1.755e6, "pid": os.getpid()}


def sometimes_fails(point: dict) -> dict:
    if point["stages"] == 3:
        raise RuntimeError("boom at stages 3")
    return {"time_ms": float(point["stages"])}


def collides(point: dict) -> dict:
    return {"ctas_per_sm": 2, "time_ms": 1.0}


# ----------------------------------------------------------------------------- knob values


@pytest.mark.parametrize("name, spec, expected", [
    ("stages", "1-6", [1, 2, 3, 4, 5, 6]),
    ("stages", "4", [4]),
    ("stages", 4, [4]),
    ("stages", "1-3,6", [1, 2, 3, 6]),
    ("tma-box-rows", "8,64,128", [8, 64, 128]),
    ("tma_box_rows", [8, "64", 128], [8, 64, 128]),
    ("box_rows", "8, 8, 64", [8, 64]),  # duplicates collapse
    ("ctas-per-sm", "auto,1", ["auto", 1]),
    ("ctas_per_sm", ["auto", 1], ["auto", 1]),
    ("tile", "128x128x64", [(128, 128, 64)]),
    ("tile", "128x256x64,64X64x64", [(128, 256, 64), (64, 64, 64)]),
    ("tile", [128, 256, 64], [(128, 256, 64)]),
    ("variant", "single,warp-specialized", ["single", "ws"]),
    ("swizzle", "128b", ["128B"]),
    ("m", "4096", [4096]),
])
def test_parse_values(name, spec, expected):
    assert sweep.parse_values(name, spec) == expected


@pytest.mark.parametrize("name, spec, must_say", [
    ("stages", "0", ["stages=0", "1..8"]),
    ("stages", "0-6", ["stages=0", "1..8"]),
    ("stages", "9", ["stages=9", "1..8"]),
    ("stages", "6-1", ["stages='6-1'", "rising"]),
    ("stages", "four", ["stages='four'", "1..8"]),
    ("tma-box-rows", "8,12", ["tma-box-rows=12", "8, 16, 32, 64, 128, 256"]),
    ("ctas-per-sm", "2", ["ctas-per-sm", "auto, 1"]),
    ("tile", "128x128x32", ["tile", "BK = 64"]),
    ("tile", "128x128", ["tile", "BMxBNxBK"]),
    ("swizzle", "16B", ["swizzle", "32B, 64B, 128B"]),
    ("m", "-5", ["m", "positive"]),
    ("stages", "", ["stages"]),
    ("frobs", "1", ["knob='frobs'", "stages", "tma-box-rows"]),
])
def test_bad_values_name_the_knob_and_the_domain(name, spec, must_say):
    with pytest.raises(InputError) as ei:
        sweep.parse_values(name, spec)
    msg = str(ei.value)
    assert "\n" not in msg
    for s in must_say:
        assert s in msg, (s, msg)


# ----------------------------------------------------------------------------- grids


def test_grid_is_the_cartesian_product_over_full_points():
    g = sweep.make_grid({"stages": "1-6", "tma-box-rows": "8,64,128", "ctas_per_sm": "auto,1"},
                        base={"m": 2048, "tile": "128x256x64"})
    pts = g.points()
    assert len(pts) == len(g) == 6 * 3 * 2
    assert g.swept == ["stages", "box_rows", "ctas_per_sm"]
    # every combination exactly once, last knob fastest
    combos = [(p["stages"], p["box_rows"], p["ctas_per_sm"]) for p in pts]
    assert combos == list(itertools.product(range(1, 7), (8, 64, 128), ("auto", 1)))
    default = sweep.default_point()
    for p in pts:
        assert set(p) == set(default)  # every parameter in every point
        assert (p["m"], p["bm"], p["bn"], p["bk"]) == (2048, 128, 256, 64)


def test_grid_yaml_with_overrides(tmp_path):
    f = tmp_path / "grid.yaml"
    f.write_text("base: {m: 4096, n: 4096, k: 4096, variant: single}\n"
                 "sweep:\n  stages: \"1-4\"\n  tma_box_rows: [8, 64, 128]\n")
    g = sweep.load_grid(f)
    assert len(g) == 4 * 3 and g.base["variant"] == "single"
    g2 = sweep.load_grid(f, overrides={"stages": "2,3"})
    assert g2.knobs["stages"] == [2, 3] and len(g2) == 2 * 3
    assert g2.swept == ["stages", "box_rows"]  # an override keeps the file's order
    g3 = sweep.load_grid(f, overrides={"variant": "ws,single"})  # a base knob becomes swept
    assert g3.knobs["variant"] == ["ws", "single"] and len(g3) == 2 * 4 * 3


@pytest.mark.parametrize("text, must_say", [
    ("sweep: {stagez: [1, 2]}\n", ["knob='stagez'", "stages", "tma-box-rows"]),
    ("base: {stages: [1, 2]}\n", ["stages", "single value"]),
    ("sweep: {stages: \"0-3\"}\n", ["stages=0", "1..8"]),
    ("bass: {}\n", ["bass", "base", "sweep"]),
    ("sweep: [1, 2]\n", ["sweep", "mapping"]),
    ("sweep: {stages: [1, 2\n", ["YAML"]),
])
def test_bad_grid_files(tmp_path, text, must_say):
    f = tmp_path / "grid.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as ei:
        sweep.load_grid(f)
    for s in must_say:
        assert s in str(ei.value), (s, str(ei.value))


def test_missing_grid_file(tmp_path):
    with pytest.raises(InputError, match="existing YAML file"):
        sweep.load_grid(tmp_path / "nope.yaml")


# ----------------------------------------------------------------------------- running


def _points(n_stages=6):
    return sweep.make_grid({"stages": f"1-{n_stages}", "tma_box_rows": "8,64"}).points()


def _expected(p):
    return 1000 * p["k"] // (64 * p["stages"]) + 5000 // p["box_rows"]


@pytest.mark.parametrize("executor, jobs", [("serial", None), ("process", 2), ("process", None)])
def test_run_sweep_rows_keep_params_and_order(executor, jobs):
    pts = _points()
    rows = sweep.run_sweep(pts, fake_point, executor=executor, jobs=jobs, progress=False)
    assert len(rows) == len(pts)
    for p, r in zip(pts, rows):
        assert {k: r[k] for k in p} == p
        assert r["cycles"] == _expected(p)
        assert "error" not in r


def test_while_waiting_runs_here_while_the_pool_works_and_never_breaks_the_sweep():
    """run_sweep's `while_waiting(rows, pending)` (the CLI's picture work for --plot) runs here: once
    the workers have started (no row in, every chunk pending), then after each chunk that comes in
    while others are pending (those rows in, one chunk fewer pending); the rows are the same, and
    an exception in it is not the sweep's."""
    calls = []

    def wait_work(rows, pending):
        calls.append((os.getpid(), sum(r is not None for r in rows), pending))
        raise ImportError("no matplotlib")

    pts = _points()
    n = len(sweep._chunks(pts, sweep.chunk_size(len(pts), 2)))
    rows = sweep.run_sweep(pts, fake_point, executor="process", jobs=2, progress=False, while_waiting=wait_work)
    assert [c[0] for c in calls] == [os.getpid()] * n
    assert [c[2] for c in calls] == list(range(n, 0, -1))
    assert [c[1] for c in calls][0] == 0 and all(a < b for a, b in zip([c[1] for c in calls], [c[1] for c in calls][1:]))
    assert [r["cycles"] for r in rows] == [_expected(p) for p in pts] and not any("error" in r for r in rows)


def _nice_of(pid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, pid)


def test_workers_yield_makes_the_pool_workers_nicer_inside_the_block_only():
    """The sweep's own process's critical work (the picture) gets a CPU of its own: its live
    workers run WORKER_NICE (>= 3: on 2 CPUs, two workers at that weight weigh no more than it)
    nicer inside the block, this process is untouched, and they are put back after it where the
    system lets a niceness be lowered (root here; else they stay nicer, never less nice)."""
    assert sweep.WORKER_NICE >= 3
    with cf.ProcessPoolExecutor(max_workers=2) as pool:
        pids = set(pool.map(_pid_after, [0.2, 0.2]))
        before = {p: _nice_of(p) for p in pids}
        mine = _nice_of(os.getpid())
        with sweep.workers_yield():
            assert {p: _nice_of(p) for p in pids} == {p: min(19, n + sweep.WORKER_NICE) for p, n in before.items()}
            assert _nice_of(os.getpid()) == mine
        after = {p: _nice_of(p) for p in pids}
    if os.geteuid() == 0:
        assert after == before
    else:
        assert all(after[p] >= before[p] for p in pids)


def _pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def test_process_pool_runs_in_other_processes():
    rows = sweep.run_sweep(_points(), fake_point, executor="process", jobs=2, progress=False)
    assert all(r["pid"] != os.getpid() for r in rows)


def test_thousands_of_points_need_no_change():
    pts = sweep.make_grid({"stages": "1-8", "tma_box_rows": "8,16,32,64,128,256",
                           "m": ",".join(str(128 * i) for i in range(1, 22)),
                           "ctas_per_sm": "auto,1"}).points()
    assert len(pts) == 8 * 6 * 21 * 2  # 2016 points
    rows = sweep.run_sweep(pts, fake_point, executor="process", jobs=4, progress=False)
    assert [r["cycles"] for r in rows] == [_expected(p) for p in pts]


@pytest.mark.parametrize("executor", ["serial", "process"])
def test_one_bad_point_does_not_stop_the_sweep(executor):
    pts = _points()
    rows = sweep.run_sweep(pts, sometimes_fails, executor=executor, jobs=2, progress=False)
    bad = [r for r in rows if "error" in r]
    assert len(bad) == 2  # stages 3 x two box_rows values
    assert all(r["stages"] == 3 and "boom at stages 3" in r["error"] for r in bad)
    assert all(r["time_ms"] == r["stages"] for r in rows if "error" not in r)


def test_unpicklable_function_marks_rows_not_raises():
    rows = sweep.run_sweep(_points(2), lambda p: {"x": 1}, executor="process", jobs=2, progress=False)
    assert len(rows) == 4 and all("error" in r for r in rows)


def test_result_key_equal_to_a_knob_is_kept_apart():
    rows = sweep.run_sweep(_points(1), collides, executor="serial", progress=False)
    assert rows[0]["ctas_per_sm"] == "auto" and rows[0]["ctas_per_sm_result"] == 2


def test_default_workers_one_more_than_the_cpus(monkeypatch):
    """Unequal points keep every CPU busy to the end: one worker more than the CPUs."""
    for cpus, want in ((1, 2), (2, 3), (16, 17), (None, 2)):
        monkeypatch.setattr(os, "cpu_count", lambda c=cpus: c)
        assert sweep.default_jobs() == want


def test_chunk_size_bounds():
    assert sweep.chunk_size(1, 16) == 1
    assert sweep.chunk_size(5000, 16) == math.ceil(5000 / 128)
    assert sweep.chunk_size(10**6, 16) == 64


@pytest.mark.parametrize("spec", ["threads", "dask://", "dask://host", "dask:/h:1", "tcp://h:1"])
def test_bad_executor(spec):
    with pytest.raises(InputError, match="dask://HOST:PORT"):
        sweep.parse_executor(spec)


def test_parse_executor():
    assert sweep.parse_executor(None) == ("process", None)
    assert sweep.parse_executor("serial") == ("serial", None)
    assert sweep.parse_executor("dask://10.0.0.5:8786") == ("dask", "tcp://10.0.0.5:8786")


# ----------------------------------------------------------------------------- Dask


@pytest.mark.parametrize("processes", [False, True])
def test_dask_executor_against_a_local_cluster(processes):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=processes,
                                  protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        addr = cluster.scheduler_address  # tcp://127.0.0.1:PORT
        assert addr.startswith("tcp://")
        pts = _points()
        rows = sweep.run_sweep(pts, sometimes_fails if processes else fake_point,
                               executor="dask://" + addr[len("tcp://"):], progress=False)
    assert len(rows) == len(pts)
    for p, r in zip(pts, rows):
        assert {k: r[k] for k in p} == p
        if processes:
            assert ("error" in r) == (p["stages"] == 3)
        else:
            assert r["cycles"] == _expected(p)


def test_dask_address_that_does_not_answer():
    pytest.importorskip("distributed")
    import socket

    with socket.socket() as s:  # a free port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(InputError) as ei:
        sweep.run_sweep(_points(1), fake_point, executor=f"dask://127.0.0.1:{port}",
                        progress=False, dask_timeout_s=1.5)
    msg = str(ei.value)
    assert f"no Dask scheduler answered at tcp://127.0.0.1:{port}" in msg
    assert "dask scheduler" in msg and "--executor process" in msg and "\n" not in msg


# ----------------------------------------------------------------------------- output


def test_write_and_read_rows_csv_json(tmp_path):
    rows = sweep.run_sweep(_points(3), sometimes_fails, executor="serial", progress=False)
    for ext in ("csv", "json"):
        path = sweep.write_rows(rows, tmp_path / f"r.{ext}")
        back = sweep.read_rows(path)
        assert len(back) == len(rows)
        for a, b in zip(rows, back):
            for k, v in a.items():
                if k == "traceback":
                    continue
                assert b[k] == v, (ext, k)
    header = (tmp_path / "r.csv").read_text().splitlines()[0].split(",")
    assert set(sweep.default_point()) <= set(header) and "error" in header and "time_ms" in header


def test_write_rows_bad_extension(tmp_path):
    with pytest.raises(InputError, match=r"\.csv or \.json"):
        sweep.write_rows([{"a": 1}], tmp_path / "r.txt")


# ----------------------------------------------------------------------------- progress


def test_progress_counts_and_failures():
    buf = io.StringIO()
    bar = Progress(10, desc="sweep", stream=buf, enabled=True)
    for _ in range(4):
        bar.update()
    bar.update(6, errors=1)
    bar.close()
    out = buf.getvalue()
    assert bar.done == 10 and bar.errors == 1
    assert "sweep" in out and "10/10" in out and "100.0%" in out and "1 failed" in out


def test_progress_silent_when_not_a_tty(monkeypatch):
    monkeypatch.delenv("HOPSIM_PROGRESS", raising=False)
    buf = io.StringIO()  # isatty() is False
    with Progress(5, stream=buf) as bar:
        bar.update(5)
    assert buf.getvalue() == ""
    monkeypatch.setenv("HOPSIM_PROGRESS", "1")
    buf = io.StringIO()
    with Progress(5, stream=buf) as bar:
        bar.update(5)
    assert "5/5" in buf.getvalue()
    monkeypatch.setenv("HOPSIM_PROGRESS", "0")
    buf = io.StringIO()
    with Progress(5, stream=buf, enabled=None) as bar:
        bar.update(5)
    assert buf.getvalue() == ""


def test_activity_appears_only_after_its_delay_and_is_erased():
    import time

    buf = io.StringIO()
    with Activity("quick job", stream=buf, enabled=True, delay_s=5.0):
        pass
    assert buf.getvalue() == ""  # a job shorter than the delay draws nothing
    buf = io.StringIO()
    with Activity("slow job", stream=buf, enabled=True, delay_s=0.05):
        time.sleep(0.3)
    assert "slow job" in buf.getvalue()


def test_range_with_step_for_problem_sizes():
    from hopsim.sweep import parse_values
    from isa.errors import InputError

    assert parse_values("m", "1024-4096:1024") == [1024, 2048, 3072, 4096]
    assert parse_values("stages", "1-6:2") == [1, 3, 5]
    assert parse_values("stages", "2-4") == [2, 3, 4]
    with pytest.raises(InputError, match="positive step"):
        parse_values("m", "1024-4096:0")
