"""CTA memoisation of kernels with ld.global (issue 15 item 5): the tile plan records each CTA's
ld.global lines (memo.capture_tiles), their L2 residency is decided at dispatch, and memo=True
gives exactly the cycles, bytes, counters, role statistics and busy fractions of memo=False (same
partitioned mode) on multi-wave grids: 1 and 8 CTAs per SM, plain and grid-stride, scalar and
float4, a partial last wave, lines that every CTA re-reads (L2 hits, shared fetches), and an L2
small enough to evict."""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.config import load_gpu
from hopsim.config.base import P
from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.timing.runner import simulate
from isa.ir.parser import parse
from kernels.membound import MemParams, build_membound

GPU = load_gpu("h100_sxm")


def _gpu(sms, l2):
    return GPU.model_copy(update={"spec": GPU.spec.with_values({
        "num_sms": P(sms, "SMs", "test", "assumed: test"), "l2_bytes": P(l2, "bytes", "test", "assumed: test")})})


def _launch(p: MemParams):
    kernel, grid, block = build_membound(p)
    gm = GlobalMemory()
    params = {name: gm.reserve(name, 4 * p.n) for name in p.buffers}
    params["n"] = p.n
    return kernel, Launch(grid=grid, block=block, params=params), gm


def _same(fast, full):
    assert fast.ctas_per_sm == full.ctas_per_sm
    assert fast.cycles == full.cycles
    for f in ("bytes_l2", "bytes_hbm", "bytes_stored"):
        assert getattr(fast, f) == getattr(full, f), f
    for k in ("gmem_requests", "gmem_sectors", "bytes_hbm_written", "writeback_tail_cycles", "l2_hits", "l2_misses"):
        assert fast.extra[k] == full.extra[k], k
    assert fast.roles == full.roles
    assert fast.busy == pytest.approx(full.busy, rel=1e-12)


CASES = [  # (family, vec, grid_stride, CTAs (plain) or n, regs per thread, L2 bytes)
    ("vecadd", 4, False, 37, 32, 50 << 20),      # 8 per SM on 4 SMs: 2 waves and a partial one
    ("copy", 1, False, 21, 32, 50 << 20),
    ("vecadd", 4, False, 9, 255, 50 << 20),      # 1 CTA per SM (the per-CTA memo), 3 waves
    ("copy", 4, True, 37, 32, 64 << 10),         # grid-stride, 3 trips, L2 evicting
    ("vecadd", 1, True, 5, 255, 50 << 20),
]


@pytest.mark.parametrize("family, vec, gs, ctas, regs, l2", CASES)
def test_memo_equals_detailed_for_ld_global_kernels(family, vec, gs, ctas, regs, l2):
    n = ctas * 256 * vec * (3 if gs else 1)  # grid-stride: 3 trips of every CTA
    p = MemParams(family=family, n=n, vec=vec, grid_stride=gs, ctas=ctas if gs else None)
    gpu = _gpu(4, l2)
    runs = []
    for memo in (True, False):
        k, lch, gm = _launch(p)
        runs.append(simulate(k, lch, gpu, values=False, gmem=gm, memory="partitioned", memo=memo,
                             regs_per_thread=regs))
    fast, full = runs
    assert fast.extra["memo_hits"] > 0, fast.extra
    _same(fast, full)


SHARED_READ = """
.kernel bcast
.param .u64 a, c
.reg .u32 %r<8>
.reg .u64 %rd<8>
.reg .f32 %f<4>
    mov.u32 %r0, %tid.x;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mad.lo.u32 %r3, %r1, %r2, %r0;
    mul.wide.u32 %rd0, %r0, 16;
    mul.wide.u32 %rd1, %r3, 16;
    ld.param.u64 %rd2, [a];
    ld.param.u64 %rd3, [c];
    add.u64 %rd4, %rd2, %rd0;
    add.u64 %rd5, %rd3, %rd1;
    ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%rd4];
    st.global.v4.f32 [%rd5], {%f0, %f1, %f2, %f3};
    exit;
"""


@pytest.mark.parametrize("per_sm_regs", [32, 255])
def test_memo_equals_detailed_when_ctas_share_lines(per_sm_regs):
    """Every CTA reads the same 4 KB (hits after the first wave's shared fetch)."""
    ctas = 41
    runs = []
    for memo in (True, False):
        gm = GlobalMemory()
        lch = Launch(grid=ctas, block=256, params={"a": gm.reserve("a", 4096), "c": gm.reserve("c", 4096 * ctas)})
        runs.append(simulate(parse(SHARED_READ), lch, _gpu(4, 50 << 20), values=False, gmem=gm,
                             memory="partitioned", memo=memo, regs_per_thread=per_sm_regs))
    fast, full = runs
    assert full.extra["l2_hits"] > 0 and fast.extra["memo_hits"] > 0
    _same(fast, full)


def test_functional_results_equal_numpy():
    """The IR twins compute what the CUDA kernels do (numpy), plain and grid-stride, scalar and
    float4, with data through the simulated global memory."""
    from hopsim.cli.membound_cmd import expected, simulate_membound
    for family in ("vecadd", "copy"):
        for vec in (1, 4):
            for gs in (False, True):
                p = MemParams(family=family, n=3 * 256 * vec * 2, vec=vec, grid_stride=gs, ctas=2 if gs else None)
                _res, gm, arrays = simulate_membound(p, values=True)
                np.testing.assert_array_equal(gm.view("c", np.float32), expected(p, arrays))


@pytest.mark.parametrize("family, vec, gs", [("vecadd", 4, False), ("copy", 1, False), ("vecadd", 4, True), ("copy", 1, True)])
def test_streaming_residency_decides_as_the_walk(family, vec, gs):
    """For a plan in which no two (CTA, position) share a line, the arrays-free
    StreamingResidency gives every CTA the vector the per-tile walk (DispatchResidency) gives:
    all misses, fetch share 1; the same tiles and the same L2 miss counts."""
    from hopsim.timing.memo import DispatchResidency, StreamingResidency, TilePlan
    from hopsim.timing.memory import L2Residency
    from hopsim.functional.executor import CTAExecutor
    ctas = 13
    p = MemParams(family=family, n=ctas * 256 * vec * (2 if gs else 1), vec=vec, grid_stride=gs,
                  ctas=ctas if gs else None)
    k, lch, gm = _launch(p)
    plan = TilePlan.build(lch, lambda c: CTAExecutor(k, lch, gm, c, values=False, checks=False))
    assert StreamingResidency.applies(plan, ctas)
    walk_l2, fast_l2 = L2Residency(64 << 10), L2Residency(64 << 10)
    walk, fast = DispatchResidency(plan, walk_l2, ctas, 8), StreamingResidency(plan, fast_l2, ctas, 8)
    for c in range(ctas):
        a, b = walk.classify(c), fast.classify(c)
        assert a.hit.tolist() == b.hit.tolist() and a.share.tolist() == b.share.tolist()
        assert walk.tiles(c) == fast.tiles(c)
    assert (walk_l2.hits, walk_l2.misses, walk_l2.miss_bytes) == (fast_l2.hits, fast_l2.misses, fast_l2.miss_bytes)


def test_streaming_residency_refuses_shared_lines():
    from hopsim.timing.memo import StreamingResidency, TilePlan
    from hopsim.functional.executor import CTAExecutor
    gm = GlobalMemory()
    lch = Launch(grid=5, block=256, params={"a": gm.reserve("a", 4096), "c": gm.reserve("c", 4096 * 5)})
    k = parse(SHARED_READ)
    plan = TilePlan.build(lch, lambda c: CTAExecutor(k, lch, gm, c, values=False, checks=False))
    assert plan is not None and not StreamingResidency.applies(plan, 5)


@pytest.mark.parametrize("family, vec, extra_ctas", [("copy", 4, 5), ("vecadd", 1, 3)])
def test_memo_equals_detailed_for_grid_stride_with_a_short_last_trip(family, vec, extra_ctas):
    """A grid-stride loop over n that is not a multiple of the grid: the first CTAs run one trip
    more than the others (the plan's rows truncated from a bisected CTA on, memo.TilePlan.cut);
    memo=True still equals memo=False, and the plan found the cut where the trips change."""
    ctas = 37
    p = MemParams(family=family, n=(2 * ctas + extra_ctas) * 256 * vec, vec=vec, grid_stride=True, ctas=ctas)
    runs = []
    for memo in (True, False):
        k, lch, gm = _launch(p)
        runs.append(simulate(k, lch, _gpu(4, 50 << 20), values=False, gmem=gm, memory="partitioned", memo=memo,
                             regs_per_thread=32))
    fast, full = runs
    assert fast.extra["memo_hits"] > 0 and fast.extra["tile_plan"], fast.extra
    _same(fast, full)
    from hopsim.timing.memo import TilePlan
    from hopsim.functional.executor import CTAExecutor
    k, lch, gm = _launch(p)
    plan = TilePlan.build(lch, lambda c: CTAExecutor(k, lch, gm, c, values=False, checks=False))
    assert plan.cut[0] == extra_ctas
