"""Timing units on synthetic requests. Expected values are formulas of the config, never the
model's own output."""

from __future__ import annotations

import math

import pytest

from hopsim.config import load_gpu
from hopsim.timing.pipes import QUANTUM
from hopsim.timing.memory import L2Residency, MemorySystem
from hopsim.timing.pipes import Jitter, Pipe, ceil_cycles
from hopsim.timing.units import Schedulers, SmemPort, TensorCores, TmaUnit

GPU = load_gpu("h100_sxm")


def q(cycles):
    """A service time as the pipes round it: up to a multiple of 1/QUANTUM cycle (pipes.py)."""
    return math.ceil(cycles * QUANTUM) / QUANTUM


T = {k: float(v) for k, v in GPU.timing.values().items()}
S = {k: float(v) for k, v in GPU.spec.values().items()}


def test_pipe_is_fifo_and_counts_busy():
    p = Pipe("x")
    assert p.reserve(0, 5) == 5
    assert p.reserve(2, 5) == 10  # queued behind the first: starts at 5
    assert p.reserve(20, 1) == 21  # idle gap: starts on arrival
    assert p.busy == 5 + 5 + 1


def test_ceil_cycles():
    assert ceil_cycles(3.0) == 3 and ceil_cycles(3.2) == 4


def test_l2_lru_first_touch_and_eviction():
    l2 = L2Residency(capacity_bytes=3 * 100)
    assert not l2.access("a", 100)  # first touch misses
    assert l2.access("a", 100)  # re-read hits
    l2.access("b", 100), l2.access("c", 100)
    l2.access("a", 100)  # a becomes most recent
    l2.access("d", 100)  # evicts LRU = b
    assert "b" not in l2 and "a" in l2 and "d" in l2
    assert l2.used <= l2.capacity


def test_memory_miss_then_hit_latency():
    mem = MemorySystem(GPU)
    nbytes = 8192
    t_miss, hit = mem.read(0, ("A", 0, 0), nbytes)
    assert not hit
    # HBM link, then L2->SM link, then the HBM (miss) latency
    assert t_miss == pytest.approx(q(nbytes / GPU.hbm_bytes_per_cycle) + q(nbytes / GPU.l2_bytes_per_cycle)
                                   + GPU.hbm_latency_cycles)
    t0 = 10_000
    t_hit, hit = mem.read(t0, ("A", 0, 0), nbytes)
    assert hit
    assert t_hit == pytest.approx(t0 + q(nbytes / GPU.l2_bytes_per_cycle) + T["gmem_l2_latency_cycles"])
    assert mem.bytes_from_hbm == nbytes and mem.bytes_from_l2 == nbytes


def test_memory_bandwidth_shared_between_requests():
    mem = MemorySystem(GPU)
    n, nbytes = 100, 16384
    ends = [mem.read(0, ("B", i), nbytes)[0] for i in range(n)]
    # n misses arriving together: the HBM link serialises them; the last leaves it after
    # n * bytes / hbm_bw, then crosses the (faster) L2 link and waits the miss latency.
    expected_last = n * q(nbytes / GPU.hbm_bytes_per_cycle) + q(nbytes / GPU.l2_bytes_per_cycle) + GPU.hbm_latency_cycles
    assert max(ends) == pytest.approx(expected_last)


def test_tma_single_box_formula():
    mem = MemorySystem(GPU)
    tma = TmaUnit(GPU, mem)
    nbytes = 128 * 64 * 2  # a 128x64 bf16 box
    done = tma.load(0, ("A", 0, 0), nbytes)
    expected = (T["tma_unit_box_cycles"]  # issue stage
                + q(nbytes / GPU.hbm_bytes_per_cycle) + q(nbytes / GPU.l2_bytes_per_cycle) + GPU.hbm_latency_cycles  # miss
                + q(nbytes / T["tma_bytes_per_cycle"])  # smem fill
                + T["tma_extra_latency_cycles"])
    assert done == pytest.approx(expected)


def test_tma_rows_bound_narrow_boxes_and_bytes_wide_ones():
    """A box is request-bound when its rows are narrow, byte-bound when they are wide
    (microbench__tma_width.json: 32-B rows stream at one row per cycle on one SM)."""
    rows = 128
    narrow = TmaUnit(GPU, MemorySystem(GPU))
    wide = TmaUnit(GPU, MemorySystem(GPU))
    n_narrow, n_wide = 32 * rows, 128 * rows
    narrow.load(0, ("n", 0), n_narrow, hit=True, rows=rows)
    wide.load(0, ("w", 0), n_wide, hit=True, rows=rows)
    assert narrow.fill_pipe.busy == pytest.approx(q(max(n_narrow / T["tma_bytes_per_cycle"], rows * T["tma_row_cycles"])))
    assert wide.fill_pipe.busy == pytest.approx(q(max(n_wide / T["tma_bytes_per_cycle"], rows * T["tma_row_cycles"])))
    assert narrow.memory.l2_pipe.busy == pytest.approx(q(max(n_narrow / GPU.l2_bytes_per_cycle, rows / GPU.l2_requests_per_cycle)))


def test_memory_bandwidth_per_cycle_follows_the_sm_clock():
    """L2 and HBM keep their clocks: at a lower SM clock they move more bytes per SM cycle."""
    slow = GPU.at_clock(990)
    assert slow.l2_bytes_per_cycle == pytest.approx(2 * GPU.l2_bytes_per_cycle)
    assert slow.hbm_bytes_per_cycle == pytest.approx(2 * GPU.hbm_bytes_per_cycle)
    assert GPU.l2_bytes_per_cycle == pytest.approx(T["l2_bytes_per_s"] / (S["clock_mhz"] * 1e6))


def test_tma_issue_stage_serialises_boxes():
    mem = MemorySystem(GPU)
    tma = TmaUnit(GPU, mem)
    n_boxes, nbytes = 4, 16
    for i in range(n_boxes):
        mem.residency.write(("T", i), nbytes)  # make them L2 hits
    ends = [tma.load(0, ("T", i), nbytes) for i in range(n_boxes)]
    # tiny boxes: the issue stage dominates; box i leaves it at (i+1)*issue
    # one row (one L2 request) per box: the L2 link and the fill take the slower of bytes and rows
    l2 = max(nbytes / GPU.l2_bytes_per_cycle, 1 / GPU.l2_requests_per_cycle)
    fill = max(nbytes / T["tma_bytes_per_cycle"], 1 * T["tma_row_cycles"])
    expected_last = (n_boxes * T["tma_unit_box_cycles"] + q(l2)
                     + T["gmem_l2_latency_cycles"] + q(fill) + T["tma_extra_latency_cycles"])
    assert ends[-1] == pytest.approx(expected_last)
    assert tma.issue_pipe.busy == n_boxes * T["tma_unit_box_cycles"]


def test_tma_fill_bandwidth_bound_for_large_boxes():
    mem = MemorySystem(GPU)
    tma = TmaUnit(GPU, mem)
    n_boxes, nbytes = 8, 32768
    for i in range(n_boxes):
        mem.residency.write(("T", i), nbytes)
    ends = [tma.load(0, ("T", i), nbytes) for i in range(n_boxes)]
    # fill at tma_bytes_per_cycle is the slowest stage: the boxes stream through it back to back
    gap = ends[-1] - ends[-2]
    assert gap == pytest.approx(q(nbytes / T["tma_bytes_per_cycle"]))


def test_tensor_pipe_time_is_n_over_2_for_f16():
    tc = TensorCores(GPU)
    for n in (8, 64, 128, 256):
        assert tc.pipe_cycles(64, n, 16) == pytest.approx(64 * n * 16 / S["tensor_fma_f16_per_cycle_per_sm"])
        assert tc.pipe_cycles(64, n, 16) == n / 2  # docs/hopper-facts.md §7.5
    tc = TensorCores(GPU)
    k_steps, n = 4, 128
    ends = [tc.mma(0, 64, n, 16) for _ in range(k_steps)]
    assert ends[-1] == pytest.approx(k_steps * n / 2 + T["wgmma_fixed_latency_cycles"])
    assert tc.flops == k_steps * 2 * 64 * n * 16


def test_tensor_pipe_holds_queue_depth_wgmmas():
    """microbench__wgmma_queue: on an empty pipe 8 wgmmas are accepted at once; the 9th waits
    until the oldest completes (issue of 16 m64n128k16 ~ 615 cycles, of 8 ~ 103)."""
    tc = TensorCores(GPU)
    depth = int(T["wgmma_queue_depth"])
    assert depth == 8
    ends = []
    for _ in range(depth):
        assert tc.accept(0.0) == 0.0
        ends.append(tc.mma(0.0, 64, 128, 16) - T["wgmma_fixed_latency_cycles"])
    assert tc.accept(0.0) == pytest.approx(ends[0])         # full: wait for the oldest
    assert tc.accept(ends[0]) == pytest.approx(ends[0])
    assert tc.accept(ends[2] + 1) == pytest.approx(ends[2] + 1)  # room again


def test_smem_port_wavefronts():
    sp = SmemPort(GPU)
    # 4-wavefront access (LDS.128 conflict-free) on an idle port
    assert sp.access(0, 4, ideal=4) == pytest.approx(4 * T["smem_cycles_per_wavefront"] + T["smem_latency_cycles"] - T["smem_cycles_per_wavefront"])
    # a 32-way conflict behind it: the port is held 32 more cycles
    end = sp.access(0, 32, ideal=4)
    assert end == pytest.approx((4 + 32) * T["smem_cycles_per_wavefront"] + T["smem_latency_cycles"] - T["smem_cycles_per_wavefront"])
    assert sp.bank_conflicts == 32 - 4


def test_schedulers_map_warp_to_smsp_mod_4():
    sch = Schedulers(GPU)
    assert sch.issue(0, warp=0, count=3) == 3 * T["issue_cycles"]
    assert sch.issue(0, warp=4, count=1) == 4 * T["issue_cycles"]  # same SMSP as warp 0
    assert sch.issue(0, warp=1, count=1) == 1 * T["issue_cycles"]  # own SMSP


def test_jitter_seeded_and_off_by_default():
    off = Jitter()
    assert off(100) == 100
    a = [Jitter(7, 16)(100) for _ in range(1)]
    j1, j2 = Jitter(7, 16), Jitter(7, 16)
    s1 = [j1(100) for _ in range(20)]
    s2 = [j2(100) for _ in range(20)]
    assert s1 == s2 and all(100 <= x <= 116 for x in s1) and len(set(s1)) > 1 and a


def test_hit_on_a_tile_in_flight_waits_for_the_fetch():
    mem = MemorySystem(GPU)
    nbytes = 16384
    t_miss, _ = mem.read(0, ("A", 1), nbytes)
    hbm_end = q(nbytes / GPU.hbm_bytes_per_cycle)
    ready = hbm_end + GPU.hbm_latency_cycles - T["gmem_l2_latency_cycles"]  # bytes are in L2
    t_hit, hit = mem.read(1, ("A", 1), nbytes)  # requested right after the miss: merged (MSHR)
    assert hit
    # its L2 transfer starts when the bytes are in L2 (the link is free again by then)
    assert t_hit == pytest.approx(ready + q(nbytes / GPU.l2_bytes_per_cycle) + T["gmem_l2_latency_cycles"])
    assert mem.bytes_from_hbm == nbytes  # fetched once
