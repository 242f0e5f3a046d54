"""The warp-specialised TMA + WGMMA GEMM on the timed machine: the product is right (data lands
at completion), timing-only mode has the same cycles, the tensor pipe bounds the mainloop, jitter
does not change the data, and CTA memoisation equals the full simulation on a multi-wave grid."""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.config import load_gpu
from hopsim.config.base import P
from hopsim.functional.executor import Launch
from hopsim.timing.runner import simulate
from isa.ir.parser import parse
from tests.timing.ir_gemm import grid_result, grid_setup, grid_ws_gemm_text

GPU = load_gpu("h100_sxm")
S = {k: float(v) for k, v in GPU.spec.values().items()}
T = {k: float(v) for k, v in GPU.timing.values().items()}
KERNEL = parse(grid_ws_gemm_text(4))


def _run(m, n, k, gpu=GPU, values=True, **kw):
    g, params, a, b = grid_setup(m, n, k, values=values)
    r = simulate(KERNEL, Launch(grid=(n // 128, m // 128, 1), block=384, params=params), gpu, gmem=g,
                 values=values, flop_count=2 * m * n * k, **kw)
    return r, g, a, b


def test_gemm_product_and_roles():
    m = n = 128
    k = 512
    r, g, a, b = _run(m, n, k)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(grid_result(g, m, n), ref, rtol=1e-5, atol=1e-4 * np.sqrt(k))
    assert r.roles["producer"]["warps"] == 1 and r.roles["consumer"]["warps"] == 8
    assert r.extra["tma_boxes"] == 2 * k // 64
    assert r.ctas_per_sm == 1 and r.limiting in ("shared_memory", "registers")


def test_grid_gemm_product_with_l2_reuse():
    m, n, k = 256, 384, 256
    r, g, a, b = _run(m, n, k)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(grid_result(g, m, n), ref, rtol=1e-5, atol=1e-4 * np.sqrt(k))
    # every A and B tile crosses HBM once; the other CTAs of its row / column read it from L2
    assert r.bytes_hbm == (m + n) * k * 2
    assert r.bytes_l2 == (n // 128) * m * k * 2 + (m // 128) * n * k * 2 - r.bytes_hbm


def test_every_warp_cycle_is_issue_or_a_named_wait():
    r, *_ = _run(128, 128, 512, values=False)
    for role, st in r.roles.items():
        assert st["issue"] + sum(st["wait"].values()) == st["lifetime"], role
    assert any(k.startswith("mbarrier 0x") for k in r.roles["producer"]["wait"])  # waits on empty[s]
    assert "wgmma.wait_group" in r.roles["consumer"]["wait"]


def test_tensor_pipe_bounds_the_mainloop():
    k = 2048
    r, *_ = _run(128, 128, k, values=False)
    # 2 consumer warpgroups x 4 wgmma m64n128k16 per k-block, each 64*128*16/fma_rate cycles
    tensor_cycles = (k // 64) * 2 * 4 * 64 * 128 * 16 / S["tensor_fma_f16_per_cycle_per_sm"]
    assert r.cycles >= tensor_cycles + T["cta_launch_cycles"]
    # the tensor pipe is busy for the wgmmas plus the TMA-fill charge of the shared-memory port
    # (smem_port_fill_tensor_cycles_per_kib, microbench__wgmma_tma: 0, the chains are not slowed),
    # reported as contention_cycles: there is some iff the charge is on (no LSU traffic in the mainloop)
    held = tensor_cycles + r.smem_port["contention_cycles"]
    assert (r.smem_port["contention_cycles"] > 0) == (T["smem_port_fill_tensor_cycles_per_kib"] > 0)
    assert r.busy["tensor"] == pytest.approx(held / r.cycles)
    assert r.flops == r.extra["tensor_flops"] == 2 * 128 * 128 * k


def test_timing_only_mode_same_cycles():
    full, *_ = _run(128, 256, 256, values=True)
    fast, *_ = _run(128, 256, 256, values=False)
    assert fast.cycles == full.cycles and fast.roles == full.roles and fast.bytes_hbm == full.bytes_hbm


def test_jitter_changes_timing_not_data():
    m, n, k = 128, 128, 256
    r0, g0, a, b = _run(m, n, k)
    r1, g1, _, _ = _run(m, n, k, jitter_seed=5, jitter_cycles=300)
    assert r1.cycles != r0.cycles
    np.testing.assert_array_equal(grid_result(g1, m, n), grid_result(g0, m, n))


def test_memo_equals_full_simulation_on_a_multiwave_gemm():
    # 4 SMs, 1 MB L2: a 4x3 grid runs in 3 waves and re-fetches evicted tiles
    small = GPU.model_copy(update={"spec": GPU.spec.with_values({
        "num_sms": P(4, "SMs", "test", "assumed: test"), "l2_bytes": P(1 << 20, "bytes", "test", "assumed: test")})})
    full, *_ = _run(384, 512, 512, small, values=False, memory="partitioned", memo=False)
    fast, *_ = _run(384, 512, 512, small, values=False, memory="partitioned", memo=True)
    assert fast.extra["tile_plan"] and fast.extra["memo_hits"] > 0
    assert fast.waves == 3
    assert fast.cycles == full.cycles
    assert (fast.bytes_l2, fast.bytes_hbm, fast.flops) == (full.bytes_l2, full.bytes_hbm, full.flops)
    assert fast.roles == full.roles


def test_partitioned_mode_close_to_shared_on_one_wave():
    # the fast GPU mode's approximation, measured: one full wave of 4x4 CTAs on 16 SMs
    sixteen = GPU.model_copy(update={"spec": GPU.spec.with_values({"num_sms": P(16, "SMs", "test", "assumed: test")})})
    shared, *_ = _run(512, 512, 1024, sixteen, values=False)
    part, *_ = _run(512, 512, 1024, sixteen, values=False, memory="partitioned")
    assert part.bytes_hbm == shared.bytes_hbm  # each tile fetched once in both
    assert abs(part.cycles - shared.cycles) / shared.cycles < 0.10
