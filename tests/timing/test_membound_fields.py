"""Laws of the memory-bound mechanisms' config fields (issue 15; values set from micro_membw):
`gmem_line_issue_cycles` (the lines of one warp request are back that many cycles apart),
`l2_effective_capacity_fraction` (the L2 residency holds that share of l2_bytes) and
`sm_link_max_bytes_per_s` (one SM's L2 -> SM port cap in the partitioned mode),
`gld_bytes_per_cycle_per_sm` (one SM's ld.global load path, FIFO). At their
defaults in h100_sxm.py (0, 1.0, 0) each is off and the model is the one before them; the laws
below run on that uncalibrated config with one field set at a time."""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.config import load_gpu
from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.timing.memory import L2Residency, MemorySystem, SmLink
from hopsim.timing.runner import simulate
from isa.ir.parser import parse

GPU = load_gpu("h100_sxm", calibrated=False)


def _load_store(gpu, stride: int, block: int, inp_words: int, vec4: bool = False) -> float:
    """Cycles of one CTA of `block` threads, each lane loading at lane stride `stride` bytes (one f32,
    or 16 B with `vec4`) from an input of `inp_words` u64 words and storing it."""
    regs, load, store = ((".reg .f32 %f<8>\n", "ld.global.f32 %f0, [%rd2];", "st.global.f32 [%rd9], %f0;")
                         if not vec4 else
                         ("", "ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd2];", "st.global.u32 [%rd9], %r1;"))
    src = f"""
.kernel k
.param .u64 inp, out
.reg .u32 %r<8>
.reg .u64 %rd<16>
{regs}    ld.param.u64 %rd0, [inp];
    ld.param.u64 %rd9, [out];
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd1, %r0, {stride};
    add.u64 %rd2, %rd0, %rd1;
    {load}
    {store}
    exit;
"""
    gm = GlobalMemory()
    a = gm.alloc("inp", np.zeros(inp_words, dtype=np.uint64))
    b = gm.alloc("out", np.zeros(1 << 4, dtype=np.uint64))
    return simulate(parse(src), Launch(grid=1, block=block, params={"inp": a, "out": b}), gpu, gmem=gm,
                    loop="single").cycles


def _strided_load(stride: int, gpu) -> float:
    """Cycles of one warp that loads one f32 per lane at lane stride `stride` bytes and stores it."""
    return _load_store(gpu, stride, 32, 1 << 12)


def test_defaults_are_off():
    t = GPU.timing
    assert float(t.gmem_line_issue_cycles.value) == 0
    assert float(t.l2_effective_capacity_fraction.value) == 1.0
    assert float(t.sm_link_max_bytes_per_s.value) == 0
    assert float(t.gld_bytes_per_cycle_per_sm.value) == 0
    assert GPU.l2_residency_bytes == int(GPU.spec.l2_bytes.value)


@pytest.mark.parametrize("stride, lines", [(4, 1), (8, 2), (128, 32)])
def test_line_issue_delays_the_last_line_by_the_further_lines_times_the_interval(stride, lines):
    """A warp access touching k lines: its j-th line is back j x c after its data, so the warp's
    load completes (k - 1) x c later than with c = 0 (a one-line request is not delayed)."""
    c = 10
    base = _strided_load(stride, GPU)
    slow = _strided_load(stride, GPU.with_timing(gmem_line_issue_cycles=c))
    assert slow - base == pytest.approx((lines - 1) * c, abs=1.0)


def _two_warps_one_line_each(gpu) -> float:
    """Cycles of two warps of one SM, each loading one line (f32 per lane, stride 4)."""
    return _load_store(gpu, 4, 64, 1 << 12)


def test_line_issue_does_not_hold_other_warps_requests():
    """Per request, not per SM: two warps' one-line loads are not delayed by the interval."""
    assert _two_warps_one_line_each(GPU.with_timing(gmem_line_issue_cycles=50)) == _two_warps_one_line_each(GPU)


def test_residency_capacity_is_the_fraction_of_l2():
    g = GPU.with_timing(l2_effective_capacity_fraction=0.5)
    assert g.l2_residency_bytes == int(GPU.spec.l2_bytes.value) // 2
    assert MemorySystem(g).residency.capacity == g.l2_residency_bytes


@pytest.mark.parametrize("fraction, hit", [(1.0, True), (0.5, False)])
def test_reread_hits_only_if_the_bytes_between_fit_the_effective_capacity(fraction, hit):
    """LRU: a line read again after 0.75 x l2_bytes of other distinct bytes hits when the
    residency holds the whole L2 and misses when it holds half of it."""
    g = GPU.with_timing(l2_effective_capacity_fraction=fraction)
    mem = MemorySystem(g)
    l2 = int(GPU.spec.l2_bytes.value)
    mem.read(0.0, ("line", 0), 128)
    for k in range(3):  # 3 tiles of l2/4: 0.75 x l2 in between
        mem.read(0.0, ("tile", k), l2 // 4)
    _, h = mem.read(0.0, ("line", 0), 128)
    assert h is hit


@pytest.mark.parametrize("sms", [1, 8, 132])
def test_sm_link_cap(sms):
    """An SM's partitioned link is the chip's bandwidth / SMs used, at most the per-SM cap."""
    cap = 100e9
    g = GPU.with_timing(sm_link_max_bytes_per_s=cap)
    res = L2Residency(g.l2_residency_bytes)
    link, free = SmLink(g, res, sms, 0), SmLink(GPU, res, sms, 0)
    per_cycle = cap / GPU.clock_hz
    assert link.l2_bw == pytest.approx(min(GPU.l2_bytes_per_cycle / sms, per_cycle))
    assert link.hbm_bw == pytest.approx(min(GPU.hbm_bytes_per_cycle / sms, per_cycle))
    assert free.l2_bw == pytest.approx(GPU.l2_bytes_per_cycle / sms)
    # a hit of N bytes holds the capped link N / min(share, cap) cycles (bytes-bound: big N)
    n = 1 << 20
    t, h = link.read(0.0, ("x", 0), n, hit=True)
    assert h and t - link.l2_latency == pytest.approx(n / min(link.l2_bw, link.l2_dlv), rel=1e-6)


def _warps_load_vec4(warps: int, gpu) -> float:
    """Cycles of one CTA of `warps` warps, each lane loading 16 B (512 B per warp, 4 lines)."""
    return _load_store(gpu, 16, 32 * warps, warps * 64, vec4=True)


def test_load_path_bounds_an_sms_read_rate():
    """32 warps x 512 B through a load path of 8 B/cycle take at least 16 KiB / 8 cycles; without
    the bound (0) far less."""
    slow = _warps_load_vec4(32, GPU.with_timing(gld_bytes_per_cycle_per_sm=8))
    assert slow >= 32 * 512 / 8
    assert _warps_load_vec4(32, GPU) < 32 * 512 / 8
