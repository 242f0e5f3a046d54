"""The shared-memory port as a contended resource (hopsim/timing/units.py SmemPort.share and its
clients), on synthetic requests. Laws, with expected values written from the config's numbers:
no contention when the port is off or the demands fit; equal ranks split the port in proportion
to demand; a higher rank keeps its demand; each client is slowed only while another is active."""

from __future__ import annotations

import pytest

from hopsim.config import load_gpu
from hopsim.timing.memory import MemorySystem
from hopsim.timing.units import WAVEFRONT_BYTES, SmemPort, TensorCores, TmaUnit

BASE = load_gpu("h100_sxm")


NEUTRAL = {"smem_port_rank_wgmma": 0, "smem_port_rank_tma": 0, "smem_port_rank_lsu": 0, "smem_port_tma_weight": 1,
           "smem_port_wgmma_weight": 1}


def units(**timing):
    """The port and its clients with equal ranks and unit weights unless `timing` says otherwise."""
    gpu = BASE.with_timing(**{**NEUTRAL, **timing})
    port, tc = SmemPort(gpu), TensorCores(gpu)
    tma = TmaUnit(gpu, MemorySystem(gpu))
    port.link(tc, tma)
    return gpu, port, tc, tma


def test_port_off_links_nothing():
    gpu, port, tc, tma = units(smem_port_bytes_per_cycle=0)
    assert not port.contended and tc.port is None and tma.port is None
    tc.mma(0, 64, 256, 16, 10240)
    cpw = float(gpu.timing.smem_cycles_per_wavefront.value)
    assert port.access(0, 4) == 4 * cpw + float(gpu.timing.smem_latency_cycles.value) - cpw


def test_demands_that_fit_are_served_in_full():
    _gpu, port, _tc, _tma = units(smem_port_bytes_per_cycle=256)
    port.pipe.next_free = 100.0  # LSU active until 100
    assert port.share(0, 100.0, 50.0, lsu=True, tma=False, wgmma=False) == 100.0  # 64 + 100 <= 256 (cpw 2)


def test_equal_ranks_share_in_proportion_to_demand():
    _gpu, port, _tc, _tma = units(smem_port_bytes_per_cycle=128, smem_cycles_per_wavefront=1)
    port.pipe.next_free = 100.0  # LSU active, demand 128 B/cycle
    got = port.share(0, 128.0, 50.0, lsu=True, tma=False, wgmma=False)
    assert got == pytest.approx(64.0)  # 128 x 128 / (128 + 128)
    assert port.share(0, 128.0, 150.0, lsu=True, tma=False, wgmma=False) == 128.0  # LSU idle by then


def test_higher_rank_keeps_its_demand_lower_gets_the_rest():
    _gpu, port, tc, _tma = units(smem_port_bytes_per_cycle=128, smem_port_rank_wgmma=1, smem_cycles_per_wavefront=1)
    tc.mma(0, 64, 256, 16, 10240)  # 128 cycles, 80 B/cycle of operands
    assert tc.pipe.next_free == 128.0  # nothing else active: full rate
    # an LSU access while the wgmma runs: 128 - 80 = 48 B/cycle left for it
    lat = float(BASE.timing.smem_latency_cycles.value)
    done = port.access(10.0, 4)
    assert done == pytest.approx(10.0 + 4 * WAVEFRONT_BYTES / 48.0 + lat - 1.0, abs=1e-3)
    # the wgmma (higher rank) beside an active LSU: not slowed
    port.pipe.next_free = 1000.0
    tc.mma(200.0, 64, 256, 16, 10240)
    assert tc.pipe.next_free == 200.0 + 128.0


def test_floor_share():
    _gpu, port, tc, _tma = units(smem_port_bytes_per_cycle=64, smem_port_rank_wgmma=1)
    tc.mma(0, 64, 256, 16, 10240)  # 80 B/cycle > the whole port
    assert port.share(0, 64.0, 10.0, lsu=False) == pytest.approx(64 * SmemPort.MIN_SHARE)


def test_tma_fill_slowed_only_while_wgmma_runs():
    gpu, port, tc, tma = units(smem_port_bytes_per_cycle=128, smem_port_rank_wgmma=1)
    fill_bw = float(gpu.timing.tma_bytes_per_cycle.value)
    nbytes = 16384
    base = max(nbytes / fill_bw, 128 * float(gpu.timing.tma_row_cycles.value))
    assert tma._contended_fill(0.0, nbytes, base) == base  # tensor idle
    tc.mma(0.0, 64, 256, 16, 10240)
    tc.mma(0.0, 64, 256, 16, 10240)  # busy until 256, 80 B/cycle
    assert tma._contended_fill(10.0, nbytes, base) == pytest.approx(nbytes / 48.0)


def test_wgmma_slowed_by_an_equal_rank_fill():
    _gpu, port, tc, tma = units(smem_port_bytes_per_cycle=128)
    tma._fills.append((0.0, 1000.0, 100.0))  # a fill taking 100 B/cycle over 0..1000
    assert tma.demand_at(500.0) == 100.0 and tma.demand_at(1000.0) == 0.0
    tc.mma(0.0, 64, 256, 16, 10240)  # wants 80: gets 128 x 80 / 180
    end = tc.pipe.next_free
    assert end == pytest.approx(10240 / (128 * 80 / 180), abs=1e-3)
    assert port.slowed == pytest.approx(end - 128.0, abs=1e-3)
    tc.mma(5000.0, 64, 256, 16, 10240)  # after the fill: full rate
    assert tc.pipe.next_free == 5128.0


def test_fills_are_kept_for_earlier_queries_then_dropped():
    _gpu, _port, _tc, tma = units(smem_port_bytes_per_cycle=128)
    tma._fills.extend([(0.0, 100.0, 50.0), (200.0, 300.0, 60.0)])
    assert tma.demand_at(250.0) == 60.0
    assert tma.demand_at(50.0) == 50.0  # an earlier query still sees the first fill
    tma.demand_at(20000.0)
    assert len(tma._fills) == 0


def test_tma_weight_zero_takes_fills_off_the_port():
    _gpu, port, tc, tma = units(smem_port_bytes_per_cycle=128, smem_port_tma_weight=0)
    assert tc.port is port and tma.port is None
    tma._fills.append((0.0, 1000.0, 100.0))  # ignored: fills are not port clients
    tc.mma(0.0, 64, 256, 16, 10240)
    assert tc.pipe.next_free == 128.0


def _fill(tma, nbytes=16384):
    """A TMA box load at cycle 0 whose data is in L2 (the fill starts when the L2 read returns)."""
    return tma.load(0.0, ("box", 0), nbytes, hit=True, rows=128)


def test_fill_landing_while_the_tensor_pipe_works_is_charged_once_per_kib():
    _gpu, _port, tc, tma = units(smem_port_bytes_per_cycle=0, smem_port_fill_tensor_cycles_per_kib=2.0)
    assert tma.tensor is tc and tc.fill_charge == 2.0 / 1024
    for _ in range(64):  # 64 x 128 cycles of queued wgmmas: busy when the fill lands
        tc.mma(0.0, 64, 256, 16, 10240)
    _fill(tma)
    assert len(tc.landings) == 1
    before = tc.pipe.next_free
    tc.mma(0.0, 64, 256, 16, 10240)
    assert tc.pipe.next_free == pytest.approx(before + 128.0 + 16384 / 1024 * 2.0)  # +32 cycles
    tc.mma(0.0, 64, 256, 16, 10240)  # charged once
    assert tc.pipe.next_free == pytest.approx(before + 2 * 128.0 + 32.0)


def test_fill_landing_in_an_idle_gap_or_charge_off_costs_nothing():
    _gpu, _port, tc, tma = units(smem_port_bytes_per_cycle=0, smem_port_fill_tensor_cycles_per_kib=2.0)
    _fill(tma)  # lands while the pipe is idle
    landed = tc.landings[0][0]
    tc.mma(landed + 10000.0, 64, 256, 16, 10240)
    assert tc.pipe.next_free == landed + 10000.0 + 128.0 and not tc.landings
    _gpu, _port, tc, tma = units(smem_port_bytes_per_cycle=0, smem_port_fill_tensor_cycles_per_kib=0.0)
    assert tma.tensor is None
    tc.mma(0.0, 64, 256, 16, 10240)
    _fill(tma)
    tc.mma(0.0, 64, 256, 16, 10240)
    assert tc.pipe.next_free == 256.0


def test_fill_landing_during_a_later_wgmma_waits_for_it():
    _gpu, _port, tc, tma = units(smem_port_bytes_per_cycle=0, smem_port_fill_tensor_cycles_per_kib=2.0)
    _fill(tma)
    landed = tc.landings[0][0]
    tc.mma(0.0, 64, 256, 16, 10240)  # ends at 128, before the fill lands: not charged yet
    assert tc.pipe.next_free == 128.0 and len(tc.landings) == 1
    tc.mma(landed - 50.0, 64, 256, 16, 10240)  # runs over the landing: charged
    assert tc.pipe.next_free == pytest.approx(landed - 50.0 + 128.0 + 32.0)
