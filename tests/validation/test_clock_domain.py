"""The clock domains the model assumes, checked against the H100 record that measured them
(validation/records/h100/microbench__clock_domain.json, validation/micro_clock.py).

Hardware facts (the record): when the SM clock drops from ~1980 to ~1700 MHz,
- the all-SM TMA stream from L2 keeps its bytes per ns (L2 keeps its own clock);
- an L2-hit pointer chase keeps (mostly) its SM cycles;
- an HBM pointer chase keeps (mostly) its ns.
The model: L2/HBM bandwidths in bytes/s, the L2 hit latency in SM cycles, the DRAM part of a miss
in ns (`hbm_extra_latency_ns`).
"""

from __future__ import annotations

import json

import pytest

from hopsim.config import load_gpu
from validation.provenance import RECORDS_DIR

REC = RECORDS_DIR / "microbench__clock_domain.json"


@pytest.fixture(scope="module")
def fit():
    rec = json.loads(REC.read_text())
    assert rec["provenance"]["device_name"].startswith("NVIDIA H100")
    return rec["results"]["fit"]


def test_the_record_spans_a_lowered_sm_clock(fit):
    for key, f in fit.items():
        lo, hi = f["clock_range_mhz"]
        assert hi - lo >= 150, (key, lo, hi)  # at least ~8% of clock to tell the domains apart


def test_l2_bandwidth_keeps_its_own_clock(fit):
    # elasticity of bytes/ns on the SM clock: 0 = own clock, 1 = SM clock domain (measured -0.08)
    assert abs(fit["tma_stream,L2,w128B,r128,sms132"]["elasticity_bytes_per_ns_vs_clock"]) < 0.3


def test_l2_hit_latency_follows_the_sm_clock_and_hbm_latency_does_not(fit):
    # elasticity of ns per load on the SM clock: -1 = fixed SM cycles, 0 = fixed ns
    assert fit["chase,L2,16MiB"]["elasticity_ns_vs_clock"] < -0.6        # measured -0.96
    assert fit["chase,HBM,2048MiB"]["elasticity_ns_vs_clock"] > -0.4     # measured -0.21


def test_model_carries_the_domains():
    hi, lo = load_gpu().at_clock(1980), load_gpu().at_clock(1400)
    t = hi.timing
    # bandwidth: bytes per SM cycle grow as the SM clock drops
    assert lo.l2_bytes_per_cycle == pytest.approx(hi.l2_bytes_per_cycle * 1980 / 1400)
    assert lo.hbm_bytes_per_cycle == pytest.approx(hi.hbm_bytes_per_cycle * 1980 / 1400)
    # latency: L2 hit fixed in cycles; a miss adds a fixed time in ns
    l2 = float(t.gmem_l2_latency_cycles.value)
    ns = float(t.hbm_extra_latency_ns.value)
    assert hi.hbm_latency_cycles == pytest.approx(l2 + ns * 1.98)
    assert lo.hbm_latency_cycles == pytest.approx(l2 + ns * 1.40)
    assert lo.hbm_latency_cycles < hi.hbm_latency_cycles


def test_replay_of_the_hbm_chase_at_every_clock():
    """The HBM chase runs of the record (1755-1980 MHz), simulated at their clocks, within 5%.
    (These rows are checks: hbm_extra_latency_ns is calibrated from microbench__global_latency.)"""
    from hopsim.validate.micro_sim import _records, clock_domain

    rows = [r for r in clock_domain(_records()["clock_domain"]) if "chase HBM" in r.name]
    assert len(rows) >= 6
    for r in rows:
        assert abs(r.error_pct) < 5, (r.name, r.measured, r.simulated)
