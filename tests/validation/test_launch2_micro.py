"""The launch / wave-tail / L2-state microbenchmarks without a GPU (validation/launch2_plan.py,
micro_launch2.py): the plan fits the 120 s budget and covers the brief, the launch shapes follow
their definitions, the stamp analysis recovers a constructed schedule, bad command lines exit 2
with one line, the module imports without cupy, and the kernels compile for sm_90a where nvcc exists."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from validation import launch2_plan as lp
from validation import micro_launch2 as ml

CU = lp.__file__.replace("launch2_plan.py", "cuda/micro_launch2.cu")


def test_plan_fits_the_budget_with_margin():
    pts = lp.plan()
    assert lp.planned_seconds(pts) <= 0.5 * lp.BUDGET_S
    assert len({p["name"] for p in pts}) == len(pts)


def test_plan_covers_the_brief():
    pts = lp.plan()
    assert min(lp.GRIDS) == 1 and max(lp.GRIDS) == 16384 and {32, 1024} <= set(lp.BLOCKS)
    assert {p["params"]["block"] for p in pts if p["group"] == "empty"} == set(lp.BLOCKS)
    sizes = {p["params"]["bytes"] for p in pts if p["group"] == "stream"}
    assert min(sizes) == lp.MIB and max(sizes) == 256 * lp.MIB
    assert {p["params"]["kernel"] for p in pts if p["group"] == "stream"} == {"store", "read", "copy"}
    assert {"clean_event", "dirty_event", "same_graph", "rotate_graph"} <= set(lp.MODES)
    spins = {(p["params"]["spin_cycles"], p["params"]["ctas_per_sm_allowed"]) for p in pts if p["group"] == "spin"}
    assert {(2000, 1), (20000, 1), (2000, 2)} <= spins


def test_spin_occupancy_labels_follow_the_sm_limits():
    # 228 KB smem per SM with 1 KB reserved per CTA; 2048 threads per SM
    for _label, thr, smem, occ in lp.SPIN_OCC:
        by_smem = 233472 // (smem + 1024) if smem else 32
        assert min(by_smem, 2048 // thr, 32) == occ


def test_flush_and_rotation_exceed_the_l2():
    l2 = 52428800
    assert lp.FLUSH_BYTES >= 4 * l2
    for s in lp.SIZES:
        assert lp.rotate_slices(s) >= 2 and lp.rotate_slices(s) * s >= lp.ROTATE_BYTES >= 4 * l2


@pytest.mark.parametrize("nbytes,grid", [(lp.MIB, 256), (16 * lp.MIB, 1056), (16, 1), (4 * lp.MIB, 1024)])
def test_stream_grid(nbytes, grid):
    assert lp.stream_grid(nbytes, 132) == grid


def test_graph_launches_bounds_and_multiple():
    assert lp.graph_launches(1e-9) == 256 and lp.graph_launches(1.0) == 4
    assert lp.graph_launches(1e-5, multiple=3) % 3 == 0
    assert lp.graph_launches(1e-3, multiple=128) == 128


def _schedule(resident: int, gap: int, dur: int, nsm: int, ctas: int) -> np.ndarray:
    """Stamps of a constructed launch: `resident` slots per SM, each CTA `dur` cycles, a freed slot
    refilled `gap` cycles later; clock64 and globaltimer both at 1 GHz (1 cycle = 1 ns)."""
    rows, t_free = [], {(s, k): 0 for s in range(nsm) for k in range(resident)}
    for c in range(ctas):
        (s, k) = min(t_free, key=lambda sk: (t_free[sk], sk))
        start = t_free[(s, k)] + (gap if c >= nsm * resident else 0)
        rows.append([s, start, start + dur, start, start + dur, 0])
        t_free[(s, k)] = start + dur
    return np.asarray(rows, dtype=np.int64)


@pytest.mark.parametrize("resident", [1, 2])
def test_stamp_analysis_recovers_a_constructed_schedule(resident):
    st = _schedule(resident, gap=700, dur=5000, nsm=4, ctas=4 * resident * 3)
    a = lp.analyse_stamps(st, resident)
    assert a["relaunch_gap_cycles"]["median"] == 700 and a["relaunch_gap_cycles"]["n"] == 4 * resident * 2
    assert a["sms_used"] == 4 and a["ctas_per_sm_max"] == 3 * resident
    assert a["max_concurrent_ctas_per_sm"] == resident
    assert a["span_ns"] == 3 * 5000 + 2 * 700 and a["kernel_clock_mhz"] == 1000.0
    assert a["first_wave_spread_ns"] == 0


def test_stamp_analysis_of_one_wave_has_no_gap():
    a = lp.analyse_stamps(_schedule(1, 0, 100, 8, 8), 1)
    assert "relaunch_gap_cycles" not in a and a["ctas_per_sm_max"] == 1


def test_summary_names_each_record():
    recs = [{"group": "stream", "name": "read_1MiB", "error": None,
             "results": {m: {"us_median": 1.0} for m in lp.MODES}},
            {"group": "empty", "name": "empty_b32", "error": "RuntimeError: x"}]
    text = lp.summary(recs)
    assert "read_1MiB" in text and "ERROR" in text


@pytest.mark.parametrize("argv,msg", [([], "--out"), (["--only", "nope"], "--only"),
                                      (["--budget-s", "0", "--out", "x"], "--budget-s")])
def test_bad_command_lines_exit_2_with_one_line(argv, msg, capsys):
    assert ml.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(msg)


def test_plan_prints_and_runs_nothing(capsys):
    assert ml.main(["--plan", "--only", "spin"]) == 0
    out = capsys.readouterr().out
    assert "spin" in out and "stream" not in out


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_kernels_compile_for_sm90a(tmp_path):
    r = subprocess.run(["nvcc", "-std=c++17", "-cubin", "-gencode=arch=compute_90a,code=sm_90a",
                        "-o", str(tmp_path / "k.cubin"), CU], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
