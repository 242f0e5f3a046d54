"""Global-memory microbenchmarks (records microbench__global_latency, microbench__global_bandwidth),
kernels gchase and gread in validation/cuda/micro_mem.cu; run by `python3 -m validation.microbench
--only global`: dependent-load latency by footprint (L1, L2, HBM) and read bandwidth from L2 and HBM.
"""

from __future__ import annotations

import numpy as np

from validation.micro_runner import cupy, med, module, rand_f16_bits, smi, sync


def bench_global() -> list:
    """Global-load latency by footprint (L1/L2/HBM) and read bandwidth from L2 and HBM."""
    cp = cupy()
    mod = module("micro_mem")
    chase, gread = mod.get_function("gchase"), mod.get_function("gread")
    nsm = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    lat = {}
    clk0 = smi()
    for fp, cg in ((64 << 10, 0), (64 << 10, 1), (1 << 20, 1), (4 << 20, 1), (16 << 20, 1), (24 << 20, 1),
                   (32 << 20, 1), (48 << 20, 1), (64 << 20, 1), (128 << 20, 1), (512 << 20, 1), (2 << 30, 1)):
        nlines = fp // 128
        buf = cp.zeros(fp // 8, dtype=cp.uint64)
        perm = cp.random.RandomState(fp % 1000 + 7).permutation(nlines).astype(cp.uint64)
        base = cp.uint64(buf.data.ptr)
        buf[(perm * 16).astype(cp.int64)] = base + cp.roll(perm, -1) * cp.uint64(128)
        first = cp.asarray([int(buf.data.ptr) + int(perm[0]) * 128], dtype=cp.uint64)
        del perm
        warm = nlines if fp <= (64 << 20) else 2000
        steps = 4096
        cyc, ns = [], []
        for r in range(3):
            o = cp.zeros(3, dtype=cp.int64)
            chase((1,), (32,), (first, np.int32(cg), np.int32(warm if r == 0 else 256), np.int32(steps), o))
            sync("gchase")
            oo = cp.asnumpy(o)
            cyc.append(oo[0] / steps)
            ns.append(oo[1] / steps)
            first = cp.asarray([int(oo[2])], dtype=cp.uint64)
        key = f"{fp >> 10}KiB,{'ld.global.cg' if cg else 'ld.global.ca'}"
        lat[key] = {"cycles": med(cyc), "ns": med(ns), "runs_cycles": cyc}
        print(f"    gchase {key}: {lat[key]['cycles']:.0f} cyc, {lat[key]['ns']:.0f} ns", flush=True)
        del buf
    cp.get_default_memory_pool().free_all_blocks()

    def read_bw(nbytes, rounds, blocks_per_sm):
        buf = rand_f16_bits(nbytes // 2, seed=nbytes % 97).view(cp.int32)
        n16 = nbytes // 16
        grid = nsm * blocks_per_sm
        sink = cp.zeros(grid * 512, dtype=cp.int32)
        times = cp.zeros((6, grid * 4), dtype=cp.int64)
        ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
        ms = []
        for r in range(6):
            ev0.record()
            gread((grid,), (512,), (buf, np.int64(n16), np.int32(rounds), sink, times[r]))
            ev1.record()
            ev1.synchronize()
            ms.append(cp.cuda.get_elapsed_time(ev0, ev1))
        sync("gread")
        t = cp.asnumpy(times[1:]).reshape(5, grid, 4)
        clk = med(((t[:, :, 1] - t[:, :, 0]) / np.maximum(t[:, :, 3] - t[:, :, 2], 1) * 1e3).ravel())
        total = nbytes * rounds
        bw = total / (med(ms[1:]) * 1e-3)
        del buf
        return {"bytes_read": total, "ms_events": med(ms[1:]), "tb_per_s": bw / 1e12, "effective_sm_clock_mhz": clk,
                "bytes_per_cycle_per_sm": bw / (clk * 1e6) / nsm, "bytes_per_cycle_chip": bw / (clk * 1e6),
                "blocks_per_sm": blocks_per_sm}

    bw = {}
    for bps in (2, 4, 8):
        bw[f"HBM,2GiB,{bps}x512thr/SM"] = read_bw(2 << 30, 1, bps)
        bw[f"L2,16MiB,x40,{bps}x512thr/SM"] = read_bw(16 << 20, 40, bps)
    # device-to-device copy (read + write) as the project's HBM reference
    a = rand_f16_bits(512 << 20, seed=3)
    b = cp.empty_like(a)
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    ms = []
    for r in range(6):
        ev0.record()
        cp.copyto(b, a)
        ev1.record()
        ev1.synchronize()
        ms.append(cp.cuda.get_elapsed_time(ev0, ev1))
    sync("d2d copy")
    bw["D2D_copy_1GiB_read+write"] = {"tb_per_s": 2 * a.nbytes / (med(ms[1:]) * 1e-3) / 1e12, "ms_events": med(ms[1:])}
    del a, b
    for k, v in bw.items():
        print(f"    bw {k}: {v['tb_per_s']:.2f} TB/s" + (f" ({v['bytes_per_cycle_per_sm']:.1f} B/cyc/SM)"
                                                      if "bytes_per_cycle_per_sm" in v else ""), flush=True)
    clk1 = smi()
    return [
        ("global_latency", {
            "measures": ["H100Timing.gmem_l2_latency_cycles", "H100Timing.hbm_extra_latency_ns"],
            "results": {"by_footprint": lat, "sm_clock_before": clk0},
            "method": ("One thread follows a random cyclic permutation of 128-B lines (p = ld.global.cg.u64 [p], "
                       "the address of the next line stored in each line; .ca for the L1 row), 4096 timed steps, "
                       "median of 3 launches; footprints <= 64 MiB first walk the whole cycle once (so L2 holds what "
                       "fits), larger ones walk 2000 untimed steps. Random lines over large footprints include TLB "
                       "misses. clock64 cycles and globaltimer ns per step."),
            "units": {"cycles": "SM cycles per dependent load", "ns": "ns per dependent load"},
        }),
        ("global_bandwidth", {
            "measures": ["H100Timing.l2_bytes_per_cycle", "H100Timing.hbm_bytes_per_cycle"],
            "results": {"by_config": bw, "sm_clock_before": clk0, "sm_clock_after": clk1, "num_sms": nsm},
            "method": ("Read kernel: grid of (2, 4, 8) x SMs CTAs of 512 threads, grid-stride int4 ld.global.cg "
                       "(4 loads in flight per thread), XOR-folded into one word per thread. HBM: 2 GiB read once; "
                       "L2: a 16 MiB buffer read 40 times in one launch (L2-resident after the first pass). 1 warm-up "
                       "+ 5 launches timed with CUDA events, median. bytes/cycle uses the clock64/globaltimer clock "
                       "seen in the run. D2D: cupy.copyto of 1 GiB, bytes read + written."),
            "units": {"tb_per_s": "1e12 B/s", "bytes_per_cycle_*": "B per SM cycle", "ms_events": "ms"},
        }),
    ]
