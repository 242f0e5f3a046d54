"""smem and global_latency through simulate(): the IR twins of smem_chase and gchase
(kernels/micro/mem.py), timed by their own clock64 reads, vs microbench__smem / __global_latency."""

from __future__ import annotations

import numpy as np

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.validate.compare import MicroRow
from hopsim.validate.micro_ir.run import gpu_at, run_kernel
from kernels.micro.mem import gchase, smem_chase

SMEM_STEPS = 2048


def smem_chase_cycles(kernel, init_words, start_bytes, active: int, gpu) -> float:
    """Cycles per dependent load of smem_chase from `init` words and lane start bytes."""
    gm = GlobalMemory()
    params = {"init": gm.alloc("init", np.asarray(init_words, dtype=np.uint32)),
              "start": gm.alloc("start", np.asarray(start_bytes, dtype=np.uint32)),
              "out": gm.alloc("out", np.zeros(2, dtype=np.int64)), "active": active}
    run = run_kernel(kernel, Launch(grid=1, block=32, params=params), gm, gpu)
    return float(run.out("out", np.int64)[0]) / SMEM_STEPS


def smem_kway_cycles(n: int, gpu, kernel=None) -> float:
    """The n-way conflict chase: lane l starts at word (l / n) + 32 (l % n) of self-loop words."""
    words = [(lane // n) + (lane % n) * 32 for lane in range(32)]
    return smem_chase_cycles(kernel or smem_chase(SMEM_STEPS), np.arange(8192, dtype=np.uint32) * 4,
                             [w * 4 for w in words], 32, gpu)


def smem(rec: dict) -> list[MicroRow]:
    """The record's chases (validation/micro_smem.py: the same init words and start lanes)."""
    gpu, k = gpu_at(), smem_chase(SMEM_STEPS)
    res = rec["results"]
    selfloop = np.arange(8192, dtype=np.uint32) * 4
    perm = np.random.default_rng(3).permutation(8192)
    chain = np.empty(8192, dtype=np.uint32)
    chain[perm] = np.roll(perm, -1).astype(np.uint32) * 4
    field = "smem_latency_cycles / smem_cycles_per_wavefront"
    rows = [MicroRow("smem chase, random chain, 1 lane", field, float(res["random_chase_1_lane"]),
                     smem_chase_cycles(k, chain, [int(perm[0]) * 4] * 32, 1, gpu)),
            MicroRow("smem chase, self loop, 1 lane", field, float(res["self_loop_1_lane"]),
                     smem_chase_cycles(k, selfloop, [0] * 32, 1, gpu)),
            MicroRow("smem chase, 32 lanes on one word", field, float(res["broadcast_32_lanes_same_word"]),
                     smem_chase_cycles(k, selfloop, [0] * 32, 32, gpu))]
    for kk, measured in res["k_way_conflict_cycles"].items():
        rows.append(MicroRow(f"smem chase, {kk}-way conflict", field, float(measured),
                             smem_kway_cycles(int(kk), gpu, k),
                             calibration=kk in ("1", "2", "32")))  # latency at k=1, slope over k
    return rows


def gchase_cycles(footprint: int, gpu, steps: int = 4096) -> float:
    """validation/micro_global.py's chain (seeded permutation of 128-B lines); only the links the
    chase visits are written (the rest of the buffer is never read)."""
    nlines = footprint // 128
    warm = nlines if footprint <= (64 << 20) else 2000
    gm = GlobalMemory()
    base = gm.alloc("buf", int(footprint))
    perm = np.random.RandomState(footprint % 1000 + 7).permutation(nlines).astype(np.uint64)
    n = min(nlines, warm + steps + 2)
    nxt = np.roll(perm, -1)[:n] if n == nlines else perm[1:n + 1]
    gm.view("buf", np.uint64)[(perm[:n] * 16).astype(np.int64)] = np.uint64(base) + nxt * np.uint64(128)
    params = {"first": gm.alloc("first", np.array([base + int(perm[0]) * 128], dtype=np.uint64)),
              "out": gm.alloc("out", np.zeros(2, dtype=np.int64))}
    run = run_kernel(gchase(steps, warm), Launch(grid=1, block=32, params=params), gm, gpu)
    return float(run.out("out", np.int64)[0]) / steps


def global_latency(rec: dict, max_footprint: int | None = None) -> list[MicroRow]:
    """Every ld.global.cg chase (first launch of the record: the whole cycle walked untimed when
    the footprint is <= 64 MiB, else 2000 steps). The `.ca` row is not run: the IR's ld.global
    has no cache operator and hopsim no L1. Calibration rows: the footprints <= 16 MiB and
    >= 64 MiB (gmem_l2_latency_cycles and hbm_extra_latency_ns are their medians)."""
    gpu = gpu_at()
    rows = []
    for cfg, v in rec["results"]["by_footprint"].items():
        if not cfg.endswith(".cg"):
            continue
        kib = int(cfg.split("KiB")[0])
        if max_footprint is not None and kib * 1024 > max_footprint:
            continue
        rows.append(MicroRow(f"ld.global chase, {kib} KiB", "gmem_l2_latency_cycles / hbm_extra_latency_ns",
                             float(v["cycles"]), gchase_cycles(kib * 1024, gpu),
                             calibration=kib <= 16384 or kib >= 65536))
    return rows
