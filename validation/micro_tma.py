"""TMA microbenchmarks (records microbench__tma_latency, microbench__tma_stream), kernels in
validation/cuda/micro_tma.cu; run by `python3 -m validation.microbench --only tma_latency tma_stream`.

tma_latency: one thread, k boxes of {64, R} f16 (128B swizzle) in flight from L2 or HBM, and 1-D
bulk copies: round trip, issue cost per box, extra cycles per box in flight. tma_stream: every SM
streams a 2 GiB map through a ring of smem slots: aggregate bandwidth and bytes per SM cycle.
"""

from __future__ import annotations


import numpy as np

from validation.harness import _as_param, encode_tensor_map
from validation.micro_runner import check_flag, cupy, med, module, rand_f16_bits, slope, smi, spread, sync


def _tmap(buf, rows: int, box_rows: int):
    """2-D f16 map, dims {64, rows} (128-B rows), box {64, box_rows}, 128B swizzle, as a by-value param."""
    return _as_param(encode_tensor_map("f16", buf.data.ptr, [64, rows], [128], [64, box_rows], "128B"))


def _flush_l2(scratch) -> None:
    scratch += 1  # a 128 MB read-modify-write evicts the 50 MB L2


def bench_tma() -> list:
    """TMA round trip per box size from L2 and HBM, k boxes in flight, and 1-D bulk copies."""
    cp = cupy()
    mod = module("micro_tma")
    lat, bulk = mod.get_function("tma_latency"), mod.get_function("bulk_latency")
    max_smem = 200 * 1024 + 2048
    lat.max_dynamic_shared_size_bytes = max_smem
    bulk.max_dynamic_shared_size_bytes = 8192 + 256
    small_rows, big_rows = 8192, 1 << 24  # 1 MiB and 2 GiB of 128-B rows
    small = rand_f16_bits(small_rows * 64, seed=21)
    big = rand_f16_bits(big_rows * 64, seed=22)
    scratch = cp.zeros(32 * 1024 * 1024, dtype=cp.int32)
    flag = cp.zeros(1, dtype=cp.int32)
    res, measures = {}, []
    clk0 = smi()
    for where, buf, rows in (("L2", small, small_rows), ("HBM", big, big_rows)):
        for box in (8, 64, 128, 256):
            tmap = _tmap(buf, rows, box)
            nbox = rows // box
            kmax = min(16, (200 * 1024) // (128 * box))
            ks = [k for k in (1, 2, 4, 8, 16) if k <= kmax]
            per_k = {}
            for k in ks:
                iters = 200 if where == "L2" else 100
                cyc_all, iss_all, ns_all = [], [], []
                for r in range(3):
                    if where == "L2":
                        small.sum()  # make sure the 1 MiB lives in L2
                    else:
                        _flush_l2(scratch)
                    cyc = cp.zeros(2 * iters, dtype=cp.int64)
                    ns = cp.zeros(iters, dtype=cp.int64)
                    lat((1,), (32,), (tmap, np.uint32(nbox), np.int32(box), np.int32(k), np.int32(iters),
                                      np.int32(20 if where == "L2" else 2), np.uint32(1000 * r + k), cyc, ns, flag),
                        shared_mem=1024 + k * 128 * box)
                    sync(f"tma_latency {where} box{box} k{k}")
                    check_flag(flag, f"tma_latency {where} box{box} k{k}")
                    c = cp.asnumpy(cyc).reshape(iters, 2)
                    cyc_all += list(c[:, 0])
                    iss_all += list(c[:, 1])
                    ns_all += list(cp.asnumpy(ns))
                per_k[k] = {"round_trip_cycles": spread(cyc_all), "issue_cycles": spread(iss_all),
                            "round_trip_ns": spread(ns_all)}
            rt = {k: per_k[k]["round_trip_cycles"]["median"] for k in ks}
            kk = [k for k in ks if k >= 2] or ks
            extra = slope(kk, [rt[k] for k in kk]) if len(kk) >= 2 else None
            kbig = ks[-1]
            res[f"{where},64x{box}"] = {
                "box_bytes": 128 * box, "by_k": per_k,
                "latency_cycles": rt[1], "latency_ns": per_k[1]["round_trip_ns"]["median"],
                "extra_cycles_per_box_in_flight": extra,
                "issue_cycles_per_box": per_k[kbig]["issue_cycles"]["median"] / kbig,
                "bytes_per_cycle_at_kmax": kbig * 128 * box / rt[kbig], "kmax": kbig,
            }
            measures += [f"tma.latency_cycles[{where},box64x{box},f16,SW128]",
                         f"tma.extra_cycles_per_box[{where},box64x{box}]"]
            print(f"    tma {where} 64x{box}: latency {rt[1]:.0f} cyc, +{extra if extra is None else round(extra, 1)} "
                  f"cyc/box, issue {res[f'{where},64x{box}']['issue_cycles_per_box']:.1f} cyc/box, "
                  f"{res[f'{where},64x{box}']['bytes_per_cycle_at_kmax']:.1f} B/cyc at k={kbig}", flush=True)
    bres = {}
    for where, buf in (("L2", small), ("HBM", big)):
        for nbytes in (16, 1024, 8192):
            iters = 200 if where == "L2" else 100
            nchunk = buf.nbytes // nbytes
            cyc_all, ns_all = [], []
            for r in range(3):
                if where == "L2":
                    small.sum()
                else:
                    _flush_l2(scratch)
                cyc = cp.zeros(iters, dtype=cp.int64)
                ns = cp.zeros(iters, dtype=cp.int64)
                bulk((1,), (32,), (buf, np.int64(nchunk), np.int32(nbytes), np.int32(iters),
                                   np.int32(20 if where == "L2" else 2), np.uint32(77 + r), cyc, ns, flag),
                     shared_mem=nbytes + 256)
                sync(f"bulk_latency {where} {nbytes}")
                check_flag(flag, f"bulk_latency {where} {nbytes}")
                cyc_all += list(cp.asnumpy(cyc))
                ns_all += list(cp.asnumpy(ns))
            bres[f"{where},{nbytes}B"] = {"round_trip_cycles": spread(cyc_all), "round_trip_ns": spread(ns_all)}
            measures.append(f"tma.bulk1d_latency_cycles[{where},{nbytes}B]")
    clk1 = smi()
    return [("tma_latency", {
        "measures": ["H100Timing.tma_issue_cycles", "H100Timing.tma_extra_latency_cycles",
                     "H100Timing.tma_bytes_per_cycle", *measures],
        "results": {"tensor_2d": res, "bulk_1d": bres, "sm_clock_before": clk0, "sm_clock_after": clk1},
        "method": ("One thread of one CTA: per round clock64, mbarrier.arrive.expect_tx(k x box bytes), k x "
                   "cp.async.bulk.tensor.2d (f16 map {64, rows}, box {64, R}, SWIZZLE_128B, map passed as "
                   "__grid_constant__, prefetch.tensormap once), clock64 (issue cost), spin on try_wait.parity, "
                   "clock64. Box rows pseudo-random over the map. L2: 1 MiB map, read by a reduction just before "
                   "each launch, 20 untimed rounds; HBM: 2 GiB map, L2 flushed by a 128 MiB read-modify-write before "
                   "each launch, 2 untimed rounds. 3 launches x 200 (L2) / 100 (HBM) rounds, medians. extra cycles "
                   "per box = slope of the k-box round trip over k >= 2; bytes/cycle at kmax = k x box bytes / round "
                   "trip. bulk_1d: the same with cp.async.bulk (no tensor map) of 16 B/1 KiB/8 KiB."),
        "units": {"*cycles*": "SM cycles (clock64)", "*_ns": "ns (globaltimer, 32 ns steps)",
                  "bytes_per_cycle_at_kmax": "bytes per SM cycle, one SM"},
    })]


def bench_tma_stream() -> list:
    """Aggregate TMA streaming bandwidth from HBM with all SMs (1 and 2 CTAs per SM)."""
    cp = cupy()
    fn = module("micro_tma").get_function("tma_stream")
    fn.max_dynamic_shared_size_bytes = 200 * 1024 + 2048
    nsm = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    rows = 1 << 24  # 2 GiB
    buf = rand_f16_bits(rows * 64, seed=31)
    flag = cp.zeros(1, dtype=cp.int32)
    res, measures = {}, []
    clk0 = smi()
    for box, stages, per_sm in ((256, 4, 1), (256, 6, 1), (256, 3, 2), (128, 4, 1), (128, 8, 1), (128, 4, 2),
                                (64, 8, 1), (64, 16, 1), (64, 8, 2), (8, 16, 1), (8, 16, 2)):
        tmap = _tmap(buf, rows, box)
        nbox = rows // box
        grid = nsm * per_sm
        smem = 1024 + stages * 128 * box
        times = cp.zeros((6, grid * 4), dtype=cp.int64)
        ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
        ms = []
        for r in range(6):
            ev0.record()
            fn((grid,), (32,), (tmap, np.int32(nbox), np.int32(box), np.int32(stages), times[r], flag), shared_mem=smem)
            ev1.record()
            ev1.synchronize()
            ms.append(cp.cuda.get_elapsed_time(ev0, ev1))
        sync(f"tma_stream box{box}")
        check_flag(flag, f"tma_stream box{box}")
        t = cp.asnumpy(times[1:]).reshape(5, grid, 4)
        span = t[:, :, 3].max(axis=1) - t[:, :, 2].min(axis=1)
        clk = med(((t[:, :, 1] - t[:, :, 0]) / np.maximum(t[:, :, 3] - t[:, :, 2], 1) * 1e3).ravel())
        nbytes = rows * 128
        cfg = f"box64x{box},stages{stages},ctas_per_sm{per_sm}"
        bw = nbytes / (med(ms[1:]) * 1e-3)
        res[cfg] = {"bytes": nbytes, "ms_events": med(ms[1:]), "tb_per_s_events": bw / 1e12,
                    "tb_per_s_globaltimer": nbytes / med(span) / 1e3, "effective_sm_clock_mhz": clk,
                    "bytes_per_cycle_per_sm": bw / (clk * 1e6) / nsm, "in_flight_bytes_per_sm": per_sm * stages * 128 * box}
        measures.append(f"tma.stream_bytes_per_s[HBM,{cfg}]")
        print(f"    tma_stream {cfg}: {bw / 1e12:.2f} TB/s ({res[cfg]['bytes_per_cycle_per_sm']:.1f} B/cyc/SM)", flush=True)
    clk1 = smi()
    return [("tma_stream", {
        "measures": ["H100Timing.hbm_bytes_per_cycle", *measures],
        "results": {"by_config": res, "sm_clock_before": clk0, "sm_clock_after": clk1, "num_sms": nsm},
        "method": ("Grid of SMs x CTAs-per-SM CTAs of one thread; CTA b loads boxes b, b+grid, ... of a 2 GiB f16 map "
                   "(box {64, R}, SWIZZLE_128B) through a ring of `stages` smem slots with one mbarrier each (slot reuse "
                   "waits for its previous fill; nobody reads the data). 1 warm-up + 5 timed launches, CUDA events, "
                   "median; TB/s = 2 GiB / time; bytes/cycle/SM uses the clock64/globaltimer clock of the run."),
        "units": {"tb_per_s_*": "1e12 B/s", "bytes_per_cycle_per_sm": "B per SM cycle", "ms_events": "ms"},
    })]
