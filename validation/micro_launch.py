"""Kernel-launch microbenchmark (record microbench__launch), kernels empty_kernel and stamp_kernel
in validation/cuda/micro_mem.cu; run by `python3 -m validation.microbench --only launch`: the time
of an empty kernel of 132 and 1056 CTAs launched back to back, and the spread of CTA start times.
"""

from __future__ import annotations

import json

from validation.micro_runner import cupy, med, module, sync


def bench_launch() -> list:
    """Empty-kernel time for 132 vs 1056 CTAs (back-to-back launches) and CTA start-time spread."""
    cp = cupy()
    mod = module("micro_mem")
    empty, stamp = mod.get_function("empty_kernel"), mod.get_function("stamp_kernel")
    nsm = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    res = {}
    for grid in (nsm, 8 * nsm):
        for _ in range(50):
            empty((grid,), (128,), ())
        sync("empty warm-up")
        per = []
        ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
        for b in range(9):
            ev0.record()
            for _ in range(500):
                empty((grid,), (128,), ())
            ev1.record()
            ev1.synchronize()
            per.append(cp.cuda.get_elapsed_time(ev0, ev1) * 1e3 / 500)
        sync("empty")
        spans = []
        for r in range(9):
            o = cp.zeros(2 * grid, dtype=cp.int64)
            stamp((grid,), (128,), (o,))
            sync("stamp")
            st = cp.asnumpy(o).reshape(grid, 2)[:, 0]
            spans.append(float(st.max() - st.min()))
        res[f"{grid}_ctas"] = {"us_per_launch_back_to_back": med(per), "cta_start_spread_ns": med(spans)}
    res["extra_us_per_additional_wave_of_ctas"] = ((res[f"{8 * nsm}_ctas"]["us_per_launch_back_to_back"]
                                                     - res[f"{nsm}_ctas"]["us_per_launch_back_to_back"]) / 7)
    print(f"    launch: {json.dumps(res)}", flush=True)
    return [("launch", {
        "measures": ["H100Timing.cta_launch_cycles", "launch.empty_kernel_us[132,1056]"],
        "results": res,
        "method": ("Empty kernel (128 threads/CTA) launched 500 times back to back between two CUDA events, 9 "
                   "batches, median per launch, for 132 and 1056 CTAs; start spread = max - min %globaltimer at "
                   "CTA start (thread 0) within one launch, median of 9."),
        "units": {"us_*": "microseconds", "*_ns": "ns (globaltimer, 32 ns steps)"},
    })]
