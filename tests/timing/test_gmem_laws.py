"""Global memory laws (issue 15 item 2): register scoreboarding of ld.global, coalescing into
32-B sectors and 128-B lines, the bound on an SM's sectors in flight, and stores written back to
HBM. Each test states the law; the latencies come from the config, not from the model's output."""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.config import load_gpu
from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.timing.runner import simulate
from isa.ir.parser import parse

GPU = load_gpu("h100_sxm")
L = GPU.hbm_latency_cycles  # a first touch misses L2: the HBM load latency


def _kernel(body: str) -> str:
    return f"""
.kernel k
.param .u64 inp, out
.reg .u32 %r<8>
.reg .u64 %rd<16>
.reg .f32 %f<8>
    ld.param.u64 %rd0, [inp];
    ld.param.u64 %rd9, [out];
{body}
    exit;
"""


def _run(body: str, gpu=GPU, block=32, words=1 << 16, fill=None):
    gm = GlobalMemory()
    data = np.zeros(words, dtype=np.uint64) if fill is None else fill
    a = gm.alloc("inp", data)
    b = gm.alloc("out", np.zeros(1 << 16, dtype=np.uint64))
    return simulate(parse(_kernel(body)), Launch(grid=1, block=block, params={"inp": a, "out": b}), gpu, gmem=gm,
                    loop="single")


INDEPENDENT = """
    ld.global.f32 %f0, [%rd0];
    ld.global.f32 %f1, [%rd0+4096];
    add.f32 %f2, %f0, %f1;
    st.global.f32 [%rd9], %f2;
"""
DEPENDENT = """
    ld.global.u64 %rd1, [%rd0];
    ld.global.f32 %f1, [%rd1];
    st.global.f32 [%rd9], %f1;
"""


def test_independent_loads_overlap_dependent_ones_serialise():
    """Two independent loads of a thread take about one load latency, two dependent ones (the
    second's address is the first's value) about two: the warp waits at the first use only."""
    gm_fill = np.zeros(1 << 16, dtype=np.uint64)
    ind = _run(INDEPENDENT)
    # the chase: word 0 holds the address of word 1024 of the same buffer (another line)
    gm = GlobalMemory()
    base = gm.alloc("inp", gm_fill)
    fill = gm_fill.copy()
    fill[0] = base + 8192
    dep = _run(DEPENDENT, fill=fill)
    assert L <= ind.cycles < 1.2 * L, (ind.cycles, L)
    assert 2 * L <= dep.cycles < 2.2 * L, (dep.cycles, L)
    assert dep.cycles - ind.cycles == pytest.approx(L, rel=0.1)


def test_store_of_a_loaded_value_waits_for_it():
    """st.global of a loaded register issues only when the load's data is back: a load issued
    after that store starts one latency later (two latencies in all) than one issued before it."""
    store_first = _run("""
    ld.global.f32 %f0, [%rd0];
    st.global.f32 [%rd9], %f0;
    ld.global.f32 %f1, [%rd0+4096];
    st.global.f32 [%rd9+4], %f1;
""")
    load_first = _run("""
    ld.global.f32 %f0, [%rd0];
    ld.global.f32 %f1, [%rd0+4096];
    st.global.f32 [%rd9], %f0;
    st.global.f32 [%rd9+4], %f1;
""")
    assert load_first.cycles < 1.2 * L
    assert store_first.cycles - load_first.cycles == pytest.approx(L, rel=0.1)


def test_exit_waits_for_outstanding_loads():
    """A warp does not exit before its loads are back (its registers are still being written)."""
    r = _run("    ld.global.f32 %f0, [%rd0];")
    assert r.cycles >= L


@pytest.mark.parametrize("stride, lines, sectors", [
    (4, 1, 4),      # 32 consecutive f32: one 128-B line, 4 sectors
    (8, 2, 8),      # every other f32: 256 B span, 2 lines, 8 sectors
    (32, 8, 32),    # one f32 per sector: 8 lines, 32 sectors
    (128, 32, 32),  # one f32 per line: 32 requests of one sector
    (0, 1, 1),      # every lane the same word: one sector
])
def test_coalescing_counts_sectors_and_lines(stride, lines, sectors):
    """A warp's ld.global moves the 32-B sectors its lanes touch, one L2 request per 128-B line;
    the bytes L2/HBM serve are sectors x 32, not lanes x 4."""
    r = _run(f"""
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd1, %r0, {stride};
    add.u64 %rd2, %rd0, %rd1;
    ld.global.f32 %f0, [%rd2];
    st.global.f32 [%rd9], %f0;
""")
    # the store: 32 lanes to one address -> one sector, one line
    assert r.extra["gmem_requests"] == lines + 1
    assert r.extra["gmem_sectors"] == sectors + 1
    assert r.bytes_l2 + r.bytes_hbm == 32 * sectors
    assert r.bytes_stored == 32


def test_outstanding_sector_bound_serialises_beyond_it():
    """With room for 4 sectors in flight per SM, four independent one-line loads of 4 sectors go
    one at a time (about 4 latencies); with the default bound they overlap (about one)."""
    body = "\n".join(f"""
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd1, %r0, 4;
    add.u64 %rd2, %rd0, %rd1;
    ld.global.f32 %f{i}, [%rd2+{4096 * i}];""" for i in range(4))
    wide = _run(body)
    narrow = _run(body, gpu=GPU.with_timing(gmem_outstanding_sectors_per_sm=4))
    assert L <= wide.cycles < 1.2 * L
    assert 4 * L <= narrow.cycles < 4.3 * L


def test_copy_moves_twice_its_bytes_over_hbm():
    """A copy of N bytes that does not fit in L2 reads N bytes from HBM and writes N back: 2N
    bytes over the HBM link (L2 shrunk to 4 KB so that a small copy is 'beyond L2')."""
    small_l2 = GPU.model_copy(update={"spec": GPU.spec.with_values({"l2_bytes": GPU.spec.l2_bytes.model_copy(update={"value": 4096})})})
    n = 32 * 16 * 8  # 8 warps x float4 per lane
    body = """
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd1, %r0, 16;
    add.u64 %rd2, %rd0, %rd1;
    add.u64 %rd3, %rd9, %rd1;
    ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%rd2];
    st.global.v4.f32 [%rd3], {%f0, %f1, %f2, %f3};
"""
    r = _run(body, gpu=small_l2, block=256)
    assert r.bytes_hbm == n
    assert r.extra["bytes_hbm_written"] == n
    assert r.bytes_hbm + r.extra["bytes_hbm_written"] == 2 * n


def test_write_back_shares_the_hbm_link():
    """Beyond the L2's dirty room (here none: l2_dirty_fraction 0) a store's write-back takes
    bytes / hbm_write_bytes_per_cycle on the HBM link, the FIFO the reads use: a miss arriving
    after a 1 MB store waits for it."""
    from hopsim.timing.memory import MemorySystem
    gpu = GPU.with_timing(l2_dirty_fraction=0.0)
    n = 1 << 20
    t_lone, _ = MemorySystem(gpu).read(0.0, ("line", 0), 128)
    mem = MemorySystem(gpu)
    in_l2 = mem.write(0.0, ("st", 0), n)
    t, hit = mem.read(0.0, ("line", 0), 128)
    assert not hit and mem.bytes_to_hbm == n
    wb_start = in_l2 - gpu.timing.gmem_l2_latency_cycles.value  # the bytes are in L2
    assert t == pytest.approx(wb_start + n / gpu.hbm_write_bytes_per_cycle + t_lone, abs=1.0)


def test_dirty_bytes_drain_in_idle_link_time():
    """Within the dirty room a write-back waits for the link's idle time: a miss right after
    the store is not delayed by it; a miss arriving after an idle gap finds the dirty bytes
    written back in the gap (the link was busy writing, and is free at its arrival)."""
    from hopsim.timing.memory import MemorySystem
    n = 1 << 20
    t_lone, _ = MemorySystem(GPU).read(0.0, ("line", 0), 128)
    mem = MemorySystem(GPU)
    mem.write(0.0, ("st", 0), n)
    mem.read(0.0, ("line", 0), 128)
    assert mem.wb_debt == n and mem.hbm_pipe.busy == pytest.approx(128 / GPU.hbm_bytes_per_cycle, abs=0.01)
    later = 10 * n / GPU.hbm_write_bytes_per_cycle
    t2, _ = mem.read(later, ("line", 128), 128)
    assert mem.wb_debt == 0
    assert mem.hbm_pipe.busy == pytest.approx(2 * 128 / GPU.hbm_bytes_per_cycle + n / GPU.hbm_write_bytes_per_cycle, abs=0.01)
    assert t2 - later == pytest.approx(t_lone, abs=0.01)


COPY4 = """
    mov.u32 %r0, %tid.x;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mad.lo.u32 %r3, %r1, %r2, %r0;
    mul.wide.u32 %rd1, %r3, 16;
    add.u64 %rd2, %rd0, %rd1;
    add.u64 %rd3, %rd9, %rd1;
    ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%rd2];
    st.global.v4.f32 [%rd3], {%f0, %f1, %f2, %f3};
"""


@pytest.mark.parametrize("l2_bytes, loop, links_bytes", [(4096, "rotated", 2), (50 << 20, "rotated", 2),
                                                      (4096, "single", 1), (50 << 20, "single", 1)])
def test_streaming_copy_time_is_read_plus_write_bytes_over_the_link(l2_bytes, loop, links_bytes):
    """A bandwidth-bound copy of N bytes takes 2N / HBM bandwidth back to back over rotated
    buffers (the records' loop): its reads and the write-back of the previous launch's N dirty
    bytes (other lines each launch) share the link, whether or not N fits in L2 (launch.py). Alone
    (loop "single": the CTAs' cycles to the last exit, from a clean L2) it takes N / bandwidth:
    its stores leave the SMs into L2, the write-backs they force trail on the link after the
    last read (the writer never waits for them). HBM slowed to 3e10 B/s
    so that 64 CTAs are bandwidth-bound, not latency-bound; the launch overhead is left out."""
    gpu = GPU.with_timing(hbm_bytes_per_s=3e10, hbm_write_bytes_per_s=3e10)
    gpu = gpu.model_copy(update={"spec": gpu.spec.with_values(
        {"l2_bytes": gpu.spec.l2_bytes.model_copy(update={"value": l2_bytes})})})
    ctas, n = 64, 64 * 256 * 16
    gm = GlobalMemory()
    a = gm.alloc("inp", np.zeros(n // 8, dtype=np.uint64))
    b = gm.alloc("out", np.zeros(n // 8, dtype=np.uint64))
    r = simulate(parse(_kernel(COPY4)), Launch(grid=ctas, block=256, params={"inp": a, "out": b}), gpu, gmem=gm,
                 loop=loop)
    assert r.bytes_hbm == n and r.extra["bytes_hbm_written"] == n
    ideal = links_bytes * n / gpu.hbm_bytes_per_cycle
    cycles = r.cycles - r.extra["launch_overhead_cycles"]
    assert ideal <= cycles <= 1.1 * ideal, (cycles, ideal)
