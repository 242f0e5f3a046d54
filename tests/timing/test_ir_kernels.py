"""Small IR kernels on the timed machine: data lands as the functional layer says, waits are events,
costs are config formulas, timing-only mode gives the same cycles, deadlocks are named."""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.config import load_gpu
from hopsim.functional.errors import Deadlock
from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.timing.runner import simulate
from isa.ir.parser import parse

GPU = load_gpu("h100_sxm")
T = {k: float(v) for k, v in GPU.timing.values().items()}

COPY = r"""
.kernel copy_smem
.param .u64 inp, out
.shared .align 16 .b8 buf[4096]
.reg .u32 %r<8>
.reg .u64 %rd<8>
.reg .f32 %f<2>
    mov.u32 %r0, %tid.x;
    ld.param.u64 %rd0, [inp];
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r0, 4;
    add.u64 %rd3, %rd0, %rd2;
    ld.global.f32 %f0, [%rd3];
    shl.b32 %r1, %r0, 2;
    st.shared.f32 [%r1], %f0;
    bar.sync 0;
    xor.b32 %r2, %r1, 4;
    ld.shared.f32 %f1, [%r2];
    add.u64 %rd4, %rd1, %rd2;
    st.global.f32 [%rd4], %f1;
    exit;
"""

# warp 0 writes shared memory and arrives on an mbarrier; warp 1 waits on phase 0 and reads
HANDOFF = r"""
.kernel handoff
.param .u64 out
.shared .align 16 .b8 smem[1024]
.reg .u32 %r<8>
.reg .u64 %rd<4>
.reg .pred %p<4>
    mov.u32 %r0, %tid.x;
    setp.eq.u32 %p0, %r0, 0;
@%p0 mbarrier.init.shared::cta.b64 [smem+0], 1;
    bar.sync 0;
    shr.u32 %r1, %r0, 5;
    and.b32 %r2, %r0, 31;
    shl.b32 %r3, %r2, 2;
    add.u32 %r3, %r3, 64;
    setp.eq.u32 %p1, %r1, 0;
@!%p1 bra CONSUMER;
    add.u32 %r4, %r2, 100;
    st.shared.u32 [%r3], %r4;
    setp.eq.u32 %p2, %r2, 0;
@%p2 mbarrier.arrive.shared::cta.b64 _, [smem+0];
    exit;
CONSUMER:
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [smem+0], 0;
@!%p3 bra WAIT;
    ld.shared.u32 %r5, [%r3];
    ld.param.u64 %rd0, [out];
    mul.wide.u32 %rd1, %r2, 4;
    add.u64 %rd2, %rd0, %rd1;
    st.global.u32 [%rd2], %r5;
    exit;
"""

# 128-bit loads, lane i at byte 128*i: every quarter-warp hits the same 4 banks 8 times
CONFLICT = r"""
.kernel conflict
.shared .align 16 .b8 smem[8192]
.reg .u32 %r<8>
.reg .b32 %v<4>
    mov.u32 %r0, %tid.x;
    and.b32 %r1, %r0, 31;
    shl.b32 %r2, %r1, STRIDE_SHIFT;
    ld.shared.v4.b32 {%v0, %v1, %v2, %v3}, [%r2];
    exit;
"""

DEADLOCK = r"""
.kernel stuck
.shared .align 16 .b8 smem[64]
.reg .pred %p<2>
.reg .u32 %r<2>
    mov.u32 %r0, %tid.x;
    setp.eq.u32 %p0, %r0, 0;
@%p0 mbarrier.init.shared::cta.b64 [smem+8], 2;
    bar.sync 0;
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [smem+8], 0;
@!%p1 bra WAIT;
    exit;
"""


def _copy(values=True, **kw):
    k = parse(COPY)
    gm = GlobalMemory()
    a = gm.alloc("inp", np.arange(128, dtype=np.float32))
    b = gm.alloc("out", 512)
    r = simulate(k, Launch(grid=1, block=128, params={"inp": a, "out": b}), GPU, gmem=gm, values=values, **kw)
    return r, gm


def _handoff(values=True, **kw):
    k = parse(HANDOFF)
    gm = GlobalMemory()
    b = gm.alloc("out", 128)
    r = simulate(k, Launch(grid=1, block=64, params={"out": b}), GPU, gmem=gm, values=values, **kw)
    return r, gm


def test_copy_kernel_result_and_waits():
    r, gm = _copy()
    x = np.arange(128, dtype=np.float32)
    assert np.array_equal(gm.view("out", np.float32)[:128], x[np.arange(128) ^ 1])  # neighbour swap via smem
    assert r.roles["other"]["warps"] == 4
    w = r.roles["other"]["wait"]
    assert w["gmem"] > 0 and w["bar.sync 0"] > 0 and w["smem"] > 0
    assert r.bytes_hbm == 128 * 4  # the input, first touch
    assert r.bank_conflicts == 0


def test_handoff_through_mbarrier_event():
    r, gm = _handoff()
    assert list(gm.view("out", np.uint32)[:32]) == [100 + i for i in range(32)]
    assert r.roles["other"]["wait"].get("mbarrier 0x0", 0) > 0  # the consumer warp waited on smem+0


@pytest.mark.parametrize("shift,expected_wf", [(4, 4), (7, 32)])
def test_bank_conflicts_cost_the_port(shift, expected_wf):
    # docs/hopper-facts.md §3.3: 128-bit stride 16 B -> 4 wavefronts; stride 128 B -> 8 lanes x 4 = 32
    k = parse(CONFLICT.replace("STRIDE_SHIFT", str(shift)))
    r = simulate(k, Launch(grid=1, block=32), GPU)
    assert r.smem_wavefronts == expected_wf
    assert r.bank_conflicts == expected_wf - 4  # ideal: 4 quarter-warps
    r4 = simulate(parse(CONFLICT.replace("STRIDE_SHIFT", "4")), Launch(grid=1, block=32), GPU)
    # the only difference is the port time of the extra wavefronts
    assert r.cycles - r4.cycles == (expected_wf - 4) * T["smem_cycles_per_wavefront"]


def test_deadlock_names_barrier_and_phase():
    k = parse(DEADLOCK)
    with pytest.raises(Deadlock) as e:
        simulate(k, Launch(grid=1, block=64), GPU)
    assert e.value.barrier == 8 and e.value.phase == 0
    assert "mbarrier" in str(e.value)


@pytest.mark.parametrize("make", [_copy, _handoff])
def test_timing_only_mode_has_same_cycles(make):
    full, _ = make(values=True)
    fast, _ = make(values=False)
    assert fast.cycles == full.cycles
    assert fast.roles == full.roles


def test_deterministic_and_jitter_seeded():
    a, _ = _copy()
    b, _ = _copy()
    assert a.cycles == b.cycles
    j1, _ = _copy(jitter_seed=1, jitter_cycles=40)
    j2, _ = _copy(jitter_seed=1, jitter_cycles=40)
    assert j1.cycles == j2.cycles


def test_trace_has_a_track_per_warp_and_unit():
    r, _ = _copy(trace=True)
    ev = r.trace.to_json()["traceEvents"]
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"CTA0.warp0 (other)", "CTA0.warp3 (other)", "SM0.smem"} <= names


SPIN = r"""
.kernel spin
.shared .align 16 .b8 smem[64]
.reg .pred %p<2>
.reg .u32 %r<2>
    mov.u32 %r0, %tid.x;
    setp.eq.u32 %p0, %r0, 0;
@%p0 mbarrier.init.shared::cta.b64 [smem+8], 2;
    bar.sync 0;
SPIN:
    mbarrier.test_wait.parity.shared::cta.b64 %p1, [smem+8], 0;
@!%p1 bra SPIN;
    exit;
"""


def test_livelock_stops_at_max_cycles_naming_the_warps():
    from hopsim.timing.runner import SimulationLimit
    with pytest.raises(SimulationLimit, match="CTA 0 warp 0"):
        simulate(parse(SPIN), Launch(grid=1, block=32), GPU, max_cycles=20_000)
