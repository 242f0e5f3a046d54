"""Shared-memory microbenchmark (record microbench__smem), kernel smem_chase in
validation/cuda/micro_mem.cu; run by `python3 -m validation.microbench --only smem`: ld.shared
load-to-use latency (pointer chase) and the cycles of each extra wavefront (k-way bank conflicts).
"""

from __future__ import annotations

import numpy as np

from validation.micro_runner import cupy, med, module, slope, sync


def bench_smem() -> list:
    """ld.shared load-to-use latency (pointer chase) and cycles per extra wavefront (k-way conflicts)."""
    cp = cupy()
    fn = module("micro_mem").get_function("smem_chase")
    steps = 2048
    sink = cp.zeros(32, dtype=cp.uint32)

    def run(init_words, start_bytes, active):
        init = cp.asarray(np.asarray(init_words, dtype=np.uint32))
        start = cp.asarray(np.asarray(start_bytes, dtype=np.uint32))
        vals = []
        for r in range(7):
            o = cp.zeros(2, dtype=cp.int64)
            fn((1,), (32,), (init, start, np.int32(active), np.int32(steps), o, sink))
            vals.append(o)
        sync("smem_chase")
        return med([float(cp.asnumpy(v)[0]) / steps for v in vals])

    selfloop = np.arange(8192, dtype=np.uint32) * 4
    rng = np.random.default_rng(3)
    perm = rng.permutation(8192)
    chain = np.empty(8192, dtype=np.uint32)
    chain[perm] = np.roll(perm, -1).astype(np.uint32) * 4
    res = {"random_chase_1_lane": run(chain, [int(perm[0]) * 4] * 32, 1),
           "self_loop_1_lane": run(selfloop, [0] * 32, 1),
           "broadcast_32_lanes_same_word": run(selfloop, [0] * 32, 32)}
    conflict = {}
    for k in (1, 2, 4, 8, 16, 32):
        words = [(lane // k) + (lane % k) * 32 for lane in range(32)]  # k lanes per bank, distinct words
        conflict[k] = run(selfloop, [w * 4 for w in words], 32)
    res["k_way_conflict_cycles"] = conflict
    res["cycles_per_extra_wavefront"] = slope(list(conflict), list(conflict.values()))
    res["cycles_per_extra_wavefront_k8_to_32"] = (conflict[32] - conflict[8]) / 24
    print(f"    smem: latency {res['random_chase_1_lane']:.1f} cyc; conflicts {conflict}; "
          f"+{res['cycles_per_extra_wavefront']:.2f} cyc/wavefront", flush=True)
    return [("smem", {
        "measures": ["H100Timing.smem_latency_cycles", "H100Timing.smem_cycles_per_wavefront"],
        "results": res,
        "method": ("One warp; 32 KiB of shared memory whose words hold absolute shared addresses; each active lane "
                   "runs p = ld.shared.u32 [p] 2048 times (after 32) with no other instruction between loads; "
                   "cycles/step = load-to-use latency; median of 7 launches. k-way conflict: lane l reads word "
                   "(l / k) + 32 (l % k) (a self loop), i.e. k distinct words in each of 32/k banks -> k wavefronts. "
                   "cycles per extra wavefront = slope of latency over k (k = 1..32)."),
        "units": {"*": "SM cycles (clock64) per dependent load"},
    })]
