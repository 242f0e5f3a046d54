"""The committed H100 microbenchmark records: present, traceable, and physically consistent.

No GPU needed: these read validation/records/h100/microbench__*.json (written on the H100 by
`python3 -m validation.microbench`, split with `--split`). Each law below states the formula it checks.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest

from validation.provenance import load_records

EXPECTED = {"wgmma", "wgmma_chip", "tma_latency", "tma_stream", "mbarrier", "smem", "global_latency",
            "global_bandwidth", "launch"}
HBM_DATASHEET_TBPS = 3.35  # H100 SXM5 HBM3 datasheet bandwidth [LOCKWOOD]
FMA_PER_CLK_PER_SM = 2048  # dense f16/bf16 tensor rate, 4096 FLOP/clk/SM [FORUM-244727]
MAX_SM_CLOCK_HZ = 1.98e9
SMEM_BYTES_PER_CLK = 32 * 4  # 32 banks x 4 B per clock


@pytest.fixture(scope="module")
def recs() -> dict:
    return {r["name"]: r for r in load_records("microbench")}


def test_every_benchmark_has_a_record(recs):
    assert EXPECTED <= set(recs), f"missing: {sorted(EXPECTED - set(recs))}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_record_shape_and_provenance(recs, name):
    r = recs[name]
    assert r["kind"] == "microbench"
    assert r["measures"] and all(isinstance(m, str) and m for m in r["measures"])
    assert r["results"] and r["method"] and r["units"]
    p = r["provenance"]
    assert "H100" in p["device_name"] and p["compute_capability"] == "90"
    assert p["sm_count"] == 132
    assert p["driver_version"] > 0 and p["runtime_version"] > 0
    assert re.fullmatch(r"[0-9a-f]{40}", p["git_commit"])
    assert dt.datetime.fromisoformat(p["date_utc"]).year >= 2025
    assert float(p["nvidia_smi"]["sm_clock_mhz"]) > 0 and p["nvidia_smi"]["driver"]
    assert "never changed" in p["clock_control"]


def _n(cfg: str) -> int:
    return int(re.search(r"m64n(\d+)k16", cfg).group(1))


def test_wgmma_results_are_correct_products(recs):
    for cfg, c in recs["wgmma"]["results"]["correctness"].items():
        assert c["ok"], (cfg, c)


def test_wgmma_never_beats_the_tensor_peak(recs):
    # m64nNk16 = 64*N*16 FMA; at 2048 FMA/clk/SM one SM needs >= 64*N*16/2048 = N/2 cycles per wgmma.
    for cfg, v in recs["wgmma"]["results"]["by_config"].items():
        assert v["sm_cycles_per_wgmma"] >= 0.9 * _n(cfg) / 2, cfg
    for cfg, v in recs["wgmma_chip"]["results"]["by_config"].items():
        assert v["sm_cycles_per_wgmma"] >= 0.9 * _n(cfg) / 2, cfg


def test_wgmma_n256_issue_interval_is_the_tensor_time(recs):
    # N = 256: 64*256*16/2048 = 128 cycles per wgmma per SM at steady state.
    for cfg, v in recs["wgmma"]["results"]["by_config"].items():
        if _n(cfg) == 256:
            assert v["sm_cycles_per_wgmma"] >= 128 * 0.9, cfg


def test_wgmma_latency_covers_its_issue_interval_and_grows_with_n(recs):
    by = recs["wgmma"]["results"]["by_config"]
    for cfg, v in by.items():
        if v["latency_cycles"] is not None:
            # one wgmma round (fence, mma, commit, wait) cannot be shorter than the mma's pipe time
            assert v["latency_cycles"] >= v["issue_interval_cycles_per_wg"], cfg
    for src in ("SS", "RS"):
        lat = [by[f"m64n{n}k16,f16,f32,{src},C1,WG1"]["latency_cycles"] for n in (8, 16, 32, 64, 128, 256)]
        assert lat == sorted(lat), (src, lat)


def test_chip_tflops_below_peak_at_max_clock(recs):
    # peak = SMs * 4096 FLOP/clk * 1.98 GHz = 1070 TFLOP/s; the measured rate cannot exceed it.
    peak = 132 * 2 * FMA_PER_CLK_PER_SM * MAX_SM_CLOCK_HZ / 1e12
    for cfg, v in recs["wgmma_chip"]["results"]["by_config"].items():
        assert 0 < v["tflops_events"] <= peak, cfg
        assert 0 < v["effective_sm_clock_mhz"] <= 1980 * 1.01, cfg


def test_hbm_bandwidth_below_datasheet(recs):
    bw = recs["global_bandwidth"]["results"]["by_config"]
    hbm = [v["tb_per_s"] for k, v in bw.items() if k.startswith("HBM") or k.startswith("D2D")]
    assert hbm and all(0.5 < x < HBM_DATASHEET_TBPS for x in hbm)
    for v in recs["tma_stream"]["results"]["by_config"].values():
        assert 0 < v["tb_per_s_events"] < HBM_DATASHEET_TBPS
    # the L2 serves a re-read 16 MiB buffer faster than HBM serves a 2 GiB one
    l2 = [v["tb_per_s"] for k, v in bw.items() if k.startswith("L2")]
    assert min(l2) > max(hbm)


def test_latency_hierarchy(recs):
    lat = recs["global_latency"]["results"]["by_footprint"]
    l1 = lat["64KiB,ld.global.ca"]["cycles"]
    l2 = lat["1024KiB,ld.global.cg"]["cycles"]
    hbm = lat["2097152KiB,ld.global.cg"]["cycles"]
    smem = recs["smem"]["results"]["random_chase_1_lane"]
    assert 0 < smem < l1 < l2 < hbm
    for where in ("64x8", "64x64", "64x128", "64x256"):
        t = recs["tma_latency"]["results"]["tensor_2d"]
        assert t[f"L2,{where}"]["latency_cycles"] < t[f"HBM,{where}"]["latency_cycles"]


def test_tma_never_writes_smem_faster_than_its_banks(recs):
    # one SM's shared memory accepts at most 32 banks x 4 B = 128 B per clock
    for k, v in recs["tma_latency"]["results"]["tensor_2d"].items():
        assert 0 < v["bytes_per_cycle_at_kmax"] <= SMEM_BYTES_PER_CLK, k
        lat = [v["by_k"][str(kk)]["round_trip_cycles"]["median"] for kk in sorted(map(int, v["by_k"]))]
        assert lat == sorted(lat), k  # more boxes on one barrier never finish sooner


def test_smem_wavefronts_cost_at_least_one_cycle(recs):
    # k-way conflict = k wavefronts; each wavefront occupies the 128 B/clk data path >= 1 cycle
    c = {int(k): v for k, v in recs["smem"]["results"]["k_way_conflict_cycles"].items()}
    ks = sorted(c)
    assert [c[k] for k in ks] == sorted(c[k] for k in ks)
    assert recs["smem"]["results"]["cycles_per_extra_wavefront"] >= 1.0


def test_mbarrier_costs_are_positive_and_ordered(recs):
    r = recs["mbarrier"]["results"]
    s = r["single_thread"]
    assert s["arrive"]["cycles_per_op_minus_loop"] > 0
    assert s["arrive_then_wait_round_trip"]["cycles_per_op_minus_loop"] > s["arrive"]["cycles_per_op_minus_loop"]
    for v in r["pingpong"].values():
        # one way = arrive + the other warp's wake-up: longer than the arrive alone
        assert v["one_way_cycles"] > s["arrive"]["cycles_per_op_minus_loop"]


def test_launch_overhead_positive(recs):
    r = recs["launch"]["results"]
    assert 0 < r["132_ctas"]["us_per_launch_back_to_back"] < 100
    assert 0 < r["1056_ctas"]["us_per_launch_back_to_back"] < 100
