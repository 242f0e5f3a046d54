"""The loaded latency of ld.global misses under mixed read/write traffic
(`timing.hbm_loaded_latency_fraction`, memory.MemorySystem.loaded_extra): its laws, and the law
it exists for on the copy microbenchmark (membw copyu): a copy with 4 B in flight per thread is
never faster than a float4 copy of the same bytes, and neither beats the link."""

from __future__ import annotations

import json

import pytest

from hopsim.config import load_gpu
from hopsim.timing.memory import MemorySystem
from hopsim.validate.micro_ir.membw import stream_seconds
from validation.provenance import RECORDS_DIR

GPU = load_gpu("h100_sxm").at_clock(1980)
K = float(GPU.timing.hbm_loaded_latency_fraction.value)


def _mem(gpu=GPU):
    return MemorySystem(gpu)


def test_calibrated_and_in_range():
    assert 0.0 < K < 1.0  # a fraction of the in-flight link time


def test_no_extra_without_writes_or_bytes_in_flight_or_when_off():
    """A CTA that has stored nothing (w = 0), nothing in flight, or k = 0: the unloaded latency."""
    m = _mem()
    assert m.loaded_extra(8192, 0.0) == 0.0 and m.loaded_extra(0, 1.0) == 0.0
    assert _mem(GPU.with_timing(hbm_loaded_latency_fraction=0.0)).loaded_extra(8192, 1.0) == 0.0


def test_extra_grows_with_bytes_in_flight_and_write_share():
    """More bytes in flight, or more of them written, never shortens the wait; w is capped at 1."""
    m = _mem()
    by_x = [m.loaded_extra(x, 1.0) for x in (128, 2048, 8192, 32768)]
    by_w = [m.loaded_extra(8192, w) for w in (0.0, 0.25, 0.5, 1.0, 4.0)]
    assert by_x == sorted(by_x) and by_x[0] > 0.0
    assert by_w == sorted(by_w) and by_w[-2] == by_w[-1]


def test_extra_is_the_calibrated_law():
    """k w x (1/R + w/X) with R, X one SM's HBM read and write rates (the chip's / the SMs)."""
    m = _mem()
    sms = int(GPU.spec.num_sms.value)
    r, x = GPU.hbm_bytes_per_cycle / sms, GPU.hbm_write_bytes_per_cycle / sms
    assert m.loaded_extra(8192, 0.5) == pytest.approx(K * 0.5 * 8192 * (1 / r + 0.5 / x), rel=1e-12)


def test_tma_reads_keep_the_unloaded_latency():
    """Only ld.global misses with their CTA's write share wait: a TMA load's miss is unchanged."""
    a, b = _mem(), _mem()
    t_tma, _ = a.read(10000.0, ("t", 0), 128, hit=False)
    t_lsu, _ = b.read(10000.0, ("t", 0), 128, hit=False, inflight_bytes=8192, w=1.0)
    assert t_lsu - t_tma == pytest.approx(b.loaded_extra(8192, 1.0)) and t_lsu > t_tma


def _copyu(vec, warps):
    """A membw copyu point (validation/membw_plan.py shape) over 64 MiB per buffer."""
    thr = min(1024, warps * 32)
    return {"vec_bytes": vec, "unroll": 1, "sms": 132, "warps_per_sm": warps, "threads_per_cta": thr,
            "ctas_per_sm": warps * 32 // thr, "footprint_bytes": 64 << 20, "rounds": 1,
            "smem_bytes": 100 * 1024 if warps * 32 // thr == 2 else 200 * 1024, "kernel": f"mb_copy_v{vec}_u1"}


@pytest.mark.slow
def test_scalar_copy_never_faster_than_float4_copy():
    """At 64 warps per SM a 4-B copy has 8 KB in flight per SM, a 16-B one 32 KB: the scalar copy
    is latency-bound (membw copyu_v4_u1_w64 2.36 vs copyu_v16_u1_w64 2.76 TB/s on the H100), never
    faster than the float4 copy, and neither beats the link's copy rate (2 / (1/R + 1/X))."""
    v4, v16 = (stream_seconds(_copyu(v, 64), GPU) for v in (4, 16))
    moved = 2 * (64 << 20)
    link = 2 / (1 / float(GPU.timing.hbm_bytes_per_s.value) + 1 / float(GPU.timing.hbm_write_bytes_per_s.value))
    assert v4 >= v16 * 1.05
    assert moved / v16 <= link * 1.001


def test_the_records_show_the_law_the_field_is_fitted_to():
    """The H100 copyu records themselves: at equal bytes in flight per SM the rates agree across
    vector widths (v4 x 32 warps ~ v8 x 16 warps: 4 KB), and more bytes in flight never slow a copy
    below the latency-bound regime's rate (2 -> 4 -> 8 KB)."""
    path = RECORDS_DIR / "membw" / "membw.jsonl"
    recs = {r["name"]: r["results"]["bytes_per_s"] for r in map(json.loads, path.read_text().splitlines())
            if r["family"] == "copyu"}
    assert recs["copyu_v4_u1_w32"] == pytest.approx(recs["copyu_v8_u1_w16"], rel=0.02)
    assert recs["copyu_v4_u1_w16"] < recs["copyu_v4_u1_w32"] < recs["copyu_v4_u1_w64"]
