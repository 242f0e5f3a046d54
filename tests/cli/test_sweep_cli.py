"""`hopsim sweep` end to end with a fake point function (simulate_point is written elsewhere)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hopsim import sweep
from hopsim.cli import main

FN = "test_sweep_cli:fake_point"  # this module is importable: pytest puts tests/cli on sys.path
CLOCK_MHZ = 1755.0


def fake_point(point: dict) -> dict:
    """A formula standing in for hopsim.gemm_sim.simulate_point (same output keys)."""
    cycles = 1_000_000 // point["stages"] + 40_000 // point["box_rows"]
    ms = cycles / (CLOCK_MHZ * 1e3)
    flops = 2 * point["m"] * point["n"] * point["k"]
    return {"cycles": cycles, "time_ms": ms, "tflops": flops / (ms * 1e-3) / 1e12,
            "ctas_per_sm": 1, "waves": 1.0}


def _cycles(p):
    return 1_000_000 // p["stages"] + 40_000 // p["box_rows"]


def test_sweep_flags_to_csv_json_and_plot(tmp_path, capsys):
    out = tmp_path / "r.csv"
    png = tmp_path / "s.png"
    rc = main(["sweep", "--m", "4096", "--n", "4096", "--k", "4096", "--stages", "1-6",
               "--tma-box-rows", "8,64,128", "--fn", FN, "--jobs", "2", "--out", str(out),
               "--plot", str(png), "--no-progress"])
    text = capsys.readouterr().out
    assert rc == 0
    rows = sweep.read_rows(out)
    assert len(rows) == 6 * 3
    assert [(r["stages"], r["box_rows"]) for r in rows] == [(s, b) for s in range(1, 7)
                                                           for b in (8, 64, 128)]
    for r in rows:
        assert r["cycles"] == _cycles(r)
        assert r["ctas_per_sm"] == "auto" and r["ctas_per_sm_result"] == 1
        assert set(sweep.default_point()) <= set(r)  # every parameter in every row
    # the table: speed-up against the first point = t_first / t
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["stages", "box_rows", "time_ms", "speedup"]
    last = lines[18].split()
    assert last[:2] == ["6", "128"]
    assert float(last[3]) == pytest.approx(_cycles(rows[0]) / _cycles(rows[-1]), rel=1e-3)
    assert png.read_bytes()[:4] == b"\x89PNG"
    main(["sweep", "--stages", "2,3", "--fn", FN, "--executor", "serial",
          "--out", str(tmp_path / "r.json"), "--no-progress"])
    assert [r["stages"] for r in json.loads((tmp_path / "r.json").read_text())] == [2, 3]


def test_sweep_grid_file_json_output(tmp_path, capsys):
    grid = tmp_path / "grid.yaml"
    grid.write_text("base: {m: 2048, n: 2048, k: 8192, variant: ws}\n"
                    "sweep: {stages: \"1-4\", ctas_per_sm: [auto, 1]}\n")
    rc = main(["sweep", "--grid", str(grid), "--fn", FN, "--executor", "serial", "--json",
               "--stages", "2,4"])
    rows = json.loads(capsys.readouterr().out)
    assert rc == 0 and len(rows) == 2 * 2
    assert {(r["stages"], r["ctas_per_sm"]) for r in rows} == {(2, "auto"), (2, 1), (4, "auto"),
                                                               (4, 1)}
    assert all(r["variant"] == "ws" and r["k"] == 8192 for r in rows)


def test_invalid_combinations_are_skipped_not_fatal(capsys):
    # 128x256x64 tiles: a stage is (128 + 256) * 64 * 2 B = 48 KB; 4 stages (192 KB + 3 KB) fit
    # the 227 KB a CTA may have, 5 (240 KB) do not
    rc = main(["sweep", "--tile", "128x256x64", "--stages", "3-5", "--variant", "ws",
               "--consumers", "2", "--fn", FN, "--executor", "serial", "--json"])
    cap = capsys.readouterr()
    rows = json.loads(cap.out)
    assert rc == 1
    assert [bool(r.get("error")) for r in rows] == [False, False, True]
    assert "stages=5" in rows[2]["error"] and "1 of 3 points are invalid" in cap.err


def test_compare_records_adds_hw_columns(tmp_path, capsys):
    from kernels.params import GemmParams

    recdir = tmp_path / "rec"
    recdir.mkdir()
    for s in (2, 3):
        p = GemmParams(stages=s)
        (recdir / f"gemm__{p.tag}.json").write_text(json.dumps(
            {"kind": "gemm", "name": p.tag, "tag": p.tag, "params": p.to_dict(), "status": "ok",
             "time_ms": 2.0 / s}))
    png = tmp_path / "c.png"
    rc = main(["sweep", "--stages", "1-3", "--fn", FN, "--executor", "serial", "--json",
               "--compare-records", str(recdir), "--plot", str(png)])
    cap = capsys.readouterr()
    rows = json.loads(cap.out)
    assert rc == 0 and "2 of 3 points have an H100 record" in cap.err
    assert "hw_time_ms" not in rows[0]
    for r in rows[1:]:
        assert r["hw_time_ms"] == pytest.approx(2.0 / r["stages"])
        assert r["hw_error_pct"] == pytest.approx(100 * (r["time_ms"] / r["hw_time_ms"] - 1))
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("argv, must_say", [
    (["--stages", "0"], "stages=0 is invalid: 1..8"),
    (["--stages", "1-9"], "stages=9 is invalid: 1..8"),
    (["--tma-box-rows", "12"], "tma-box-rows=12"),
    (["--tile", "128x128"], "BMxBNxBK"),
    (["--ctas-per-sm", "3"], "auto, 1"),
    (["--executor", "threads"], "process, serial or dask://HOST:PORT"),
    (["--jobs", "0"], "jobs=0"),
    (["--out", "r.txt"], ".csv or .json"),
    (["--plot", "p.pdf"], ".png"),
    (["--plot", "p.png"], "at least one knob"),
    (["--grid", "/nonexistent/grid.yaml"], "existing YAML file"),
    (["--fn", "nosuchmodule_xyz:f"], "nosuchmodule_xyz"),
    (["--tile", "256x256x64"], "tile='256x256x64'"),  # every point invalid: one line, exit 2
    (["--compare-records", "/nonexistent"], "directory of H100 records"),
])
def test_bad_input_is_one_line_exit_2(argv, must_say, capsys):
    base = ["sweep", "--fn", FN, "--executor", "serial", "--no-progress"]
    if "--fn" in argv:
        base = ["sweep", "--executor", "serial"]
    assert main(base + argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("hopsim: error:") and must_say in err, err


def test_unknown_flag_and_grid_knob(tmp_path, capsys):
    with pytest.raises(SystemExit) as ei:
        main(["sweep", "--stagez", "1-3"])
    assert ei.value.code == 2
    grid = tmp_path / "g.yaml"
    grid.write_text("sweep: {stagez: [1]}\n")
    assert main(["sweep", "--grid", str(grid), "--fn", FN]) == 2
    err = capsys.readouterr().err
    assert "knob='stagez'" in err and "tma-box-rows" in err


def test_dask_address_that_does_not_answer_cli(capsys):
    pytest.importorskip("distributed")
    rc = main(["sweep", "--stages", "1-2", "--fn", FN, "--executor", "dask://127.0.0.1:9",
               "--dask-timeout", "1"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "\n" not in err
    assert "no Dask scheduler answered at tcp://127.0.0.1:9" in err and "--executor process" in err


def test_dask_executor_cli_against_local_cluster(tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        hostport = cluster.scheduler_address[len("tcp://"):]
        rc = main(["sweep", "--stages", "1-4", "--fn", FN, "--executor", f"dask://{hostport}",
                   "--out", str(tmp_path / "d.csv"), "--no-progress"])
    assert rc == 0
    rows = sweep.read_rows(tmp_path / "d.csv")
    assert [r["cycles"] for r in rows] == [_cycles(r) for r in rows] and len(rows) == 4


def test_help_shows_an_example():
    r = subprocess.run([sys.executable, "-m", "hopsim", "sweep", "--help"], capture_output=True,
                       text=True)
    assert r.returncode == 0 and "hopsim sweep --grid grid.yaml" in r.stdout
    assert "--tma-box-rows" in r.stdout and "--compare-records" in r.stdout
