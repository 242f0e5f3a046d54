"""A launch inside a loop over the same buffers (`loop="same"`, hopsim/timing/launch.py item 5):
the tiles it reads are L2-resident at its start when its distinct read footprint fits in the L2
residency (spec.l2_bytes x timing.l2_effective_capacity_fraction), else it is timed as the
rotated loop (a cold L2). Laws, in both memory modes (shared; partitioned with dispatch-time
residency, the memo and the dispatch record):

- the default is the rotated loop and adds no field;
- `same` is never slower than `rotated` for the same launch (asserted on the launches below; the
  one-SM diagnostic, validation/records/h100/worst17/MODEL_LOOP_SAME.md, found one exception in
  47, a TMA-issue-bound 8-row-box ws1 kernel 0.38% slower, its cause not isolated);
- with a footprint that fits, no byte is read from HBM and the footprint is the inputs' bytes
  (A and B for a GEMM, a and b for vecadd);
- with a footprint beyond the capacity, `same` == `rotated` (every number), at the boundary too;
- a one-SM latency-bound GEMM (one stage: each k-tile waits for its own load) saves per k-tile
  the HBM extra latency (timing.hbm_extra_latency_ns at the run's clock) plus at most the HBM
  transfer time of the k-tile's bytes, which a miss pays and a hit does not.
"""

from __future__ import annotations

import json
import types

import numpy as np
import pytest

from hopsim.cli import main
from hopsim.cli.membound_cmd import simulate_membound
from hopsim.config import load_gpu
from hopsim.functional.gmem import GlobalMemory
from hopsim.gemm_sim import simulate_gemm
from kernels.membound import MemParams
from kernels.params import GemmParams

MHZ = 1755.0
SHARED = {"mode": "full"}          # values through the shared-mode L2 (one link for the chip)
FAST = {"mode": "fast"}            # timing only, partitioned links, dispatch-time residency, memo
MODES = {"shared": SHARED, "partitioned": FAST}

GEMMS = [dict(m=256, n=256, k=512),                                   # 4 CTAs, 1 per SM
         dict(m=128, n=128, k=1024, stages=1),                        # one SM, latency-bound
         dict(m=256, n=512, k=256, tile_m=64, tile_n=64, stages=2),   # several CTAs per SM (SM classes)
         dict(m=256, n=256, k=256, variant="ws", consumers=2, tile_m=128, tile_n=128)]
WARM_FIELDS = ("l2_warm", "l2_read_footprint_bytes", "l2_capacity_bytes")


def _gemm(kw: dict, loop: str, mode: dict, gpu=None, **more):
    p = GemmParams(**{("bm" if k == "tile_m" else "bn" if k == "tile_n" else k): v for k, v in kw.items()})
    return simulate_gemm(p, gpu or load_gpu().at_clock(MHZ), loop=loop, **mode, **more).result


def _numbers(r) -> dict:
    """Every simulated number of a result (not the loop's own fields)."""
    d = r.to_json()
    d["extra"] = {k: v for k, v in d.get("extra", {}).items() if k not in WARM_FIELDS + ("loop",)}
    return d


def _ids(kw):
    return "x".join(str(kw[a]) for a in "mnk") + "".join(f" {k}={v}" for k, v in kw.items() if k not in "mnk")


def test_the_default_is_the_rotated_loop_with_no_new_field():
    a = _gemm(GEMMS[0], "rotated", FAST)
    b = simulate_gemm(GemmParams(m=256, n=256, k=512), load_gpu().at_clock(MHZ), mode="fast").result
    assert a.to_json() == b.to_json()
    assert a.extra["loop"] == "rotated" and not set(WARM_FIELDS) & set(a.extra)


@pytest.mark.parametrize("mode", MODES, ids=str)
@pytest.mark.parametrize("kw", GEMMS, ids=_ids)
def test_same_fits_reads_nothing_from_hbm_and_is_never_slower(kw, mode):
    rot = _gemm(kw, "rotated", MODES[mode])
    same = _gemm(kw, "same", MODES[mode])
    assert same.cycles <= rot.cycles
    assert same.bytes_hbm == 0 and rot.bytes_hbm > 0
    assert same.extra["l2_misses"] == 0 and same.extra["l2_warm"] is True
    m, n, k = kw["m"], kw["n"], kw["k"]
    assert same.extra["l2_read_footprint_bytes"] == 2 * (m * k + k * n)  # A and B, f16
    assert same.extra["l2_capacity_bytes"] == load_gpu().l2_residency_bytes
    assert same.bytes_l2 == rot.bytes_l2 + rot.bytes_hbm  # every byte read now comes from L2


def _gpu_with_capacity(nbytes: int):
    """The H100 model at MHZ with an L2 residency of exactly `nbytes`."""
    g = load_gpu()
    frac = nbytes / float(g.spec.l2_bytes.value)
    for f in (frac, np.nextafter(frac, 1.0), np.nextafter(np.nextafter(frac, 1.0), 1.0)):
        gpu = g.with_timing(l2_effective_capacity_fraction=float(f)).at_clock(MHZ)
        if gpu.l2_residency_bytes == nbytes:
            return gpu
    raise AssertionError(f"no capacity fraction gives {nbytes} bytes")


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_a_footprint_beyond_the_l2_is_timed_as_rotated_and_the_boundary_fits(mode):
    kw = GEMMS[0]
    footprint = 2 * (kw["m"] * kw["k"] + kw["k"] * kw["n"])
    over = _gpu_with_capacity(footprint - 1)
    rot, same = _gemm(kw, "rotated", MODES[mode], over), _gemm(kw, "same", MODES[mode], over)
    assert _numbers(same) == _numbers(rot)
    assert same.extra["loop"] == "same" and same.extra["l2_warm"] is False
    assert same.extra["l2_read_footprint_bytes"] > same.extra["l2_capacity_bytes"] == footprint - 1
    exact = _gemm(kw, "same", MODES[mode], _gpu_with_capacity(footprint))
    assert exact.extra["l2_warm"] is True and exact.bytes_hbm == 0


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_one_sm_latency_bound_gemm_saves_the_hbm_extra_latency_per_k_tile(mode):
    kw = dict(m=64, n=64, k=2048, tile_m=64, tile_n=64, stages=1)
    gpu = load_gpu().at_clock(MHZ)
    rot, same = _gemm(kw, "rotated", MODES[mode], gpu), _gemm(kw, "same", MODES[mode], gpu)
    ktiles = kw["k"] // 64
    saved = (rot.cycles - same.cycles) / ktiles
    extra = float(gpu.timing.hbm_extra_latency_ns.value) * MHZ / 1e3
    transfer = 2 * 64 * 64 * 2 / gpu.hbm_bytes_per_cycle  # the k-tile's A and B boxes over the HBM link
    assert extra <= saved <= extra + transfer + 1, (saved, extra, transfer)


def test_the_dispatch_record_replays_a_same_loop_exactly():
    p, cache = GemmParams(m=2048, n=2048, k=256, stages=2), {}
    simulate_gemm(p, load_gpu(), plan_cache=cache, loop="same")                     # records (warm)
    cold = simulate_gemm(p, load_gpu().at_clock(MHZ), plan_cache=cache).result      # its own record
    again = simulate_gemm(p, load_gpu().at_clock(MHZ), plan_cache=cache, loop="same").result
    assert cache["record_warm"].complete and cache["record"].complete
    fresh = simulate_gemm(p, load_gpu().at_clock(MHZ), loop="same").result
    assert again.to_json() == fresh.to_json()
    assert cold.to_json() == simulate_gemm(p, load_gpu().at_clock(MHZ)).result.to_json()
    assert fresh.bytes_hbm == 0 < cold.bytes_hbm


@pytest.mark.parametrize("fast", [False, True], ids=["shared", "partitioned"])
def test_ld_global_stream_same_loop(fast):
    p = MemParams(family="vecadd", n=1 << 16, vec=4)
    gpu = load_gpu().at_clock(MHZ)
    rot = simulate_membound(p, gpu, fast=fast)[0]
    same = simulate_membound(p, gpu, fast=fast, loop="same")[0]
    assert same.bytes_hbm == 0 < rot.bytes_hbm and same.cycles <= rot.cycles
    assert same.extra["l2_read_footprint_bytes"] == 2 * 4 * p.n  # a and b


def test_gmem_snapshot_restores_the_bytes_in_place():
    gm = GlobalMemory()
    gm.alloc("x", np.arange(8, dtype=np.float32))
    gm.reserve("r", 64)
    snap = gm.snapshot()
    view = gm.view("x", np.float32)
    view[:] = -1
    gm.restore(snap)
    assert np.array_equal(gm.view("x", np.float32), np.arange(8, dtype=np.float32))


def test_a_values_run_beyond_the_l2_reruns_rotated_on_the_original_inputs():
    """The abandoned warm run's stores are undone before the rotated run (GlobalMemory.restore):
    the product is still right (check=True) and the numbers are the rotated run's."""
    kw = dict(m=128, n=128, k=256)
    over = _gpu_with_capacity(2 * (128 * 256 * 2) - 1)
    same = simulate_gemm(GemmParams(**kw), over, mode="full", check=True, loop="same")
    rot = simulate_gemm(GemmParams(**kw), over, mode="full", check=True)
    assert same.check["ok"] and same.check == rot.check
    assert same.result.extra["l2_warm"] is False and _numbers(same.result) == _numbers(rot.result)


def _cli(capsys, *args):
    """`hopsim simulate ARGS` in this process (the CLI's main; `python3 -m hopsim` as a process is
    tested in tests/cli/test_desc_cli.py): exit status, stdout, stderr."""
    try:
        code = main(["simulate", *args])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return types.SimpleNamespace(returncode=code, stdout=out, stderr=err)


def test_cli_loop_same_reports_the_mode_and_bad_values_exit_2(capsys):
    out = _cli(capsys, "gemm", "--m", "128", "--n", "128", "--k", "256", "--loop", "same", "--json", "--no-progress")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["extra"]["loop"] == "same" and d["extra"]["l2_warm"] is True and d["bytes_hbm"] == 0
    text = _cli(capsys, "gemm", "--m", "128", "--n", "128", "--k", "256", "--loop", "same", "--no-progress")
    assert "loop over the same buffers" in text.stdout
    bad = _cli(capsys, "gemm", "--loop", "warm")
    assert bad.returncode == 2 and bad.stdout == ""
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "loop" in lines[0] and "warm" in lines[0] and "rotated, same" in lines[0]
