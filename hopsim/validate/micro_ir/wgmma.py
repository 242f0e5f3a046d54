"""wgmma through simulate(): the IR twin of micro_wgmma.cu (kernels/micro/wgmma.py), timed by its
clock64 reads, vs microbench__wgmma: cycles per round [fence; L x C wgmma; commit; wait_group 0]
of each warpgroup (median over warpgroups), at L = 0 (the fence/commit/wait overhead), L = 1
(C = 1: one wgmma's latency with the overhead) and L = 16 (the issue-bound chain). Timing-only
runs (values=False: no MMA math; the cycles do not depend on the data)."""

from __future__ import annotations

import numpy as np

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.validate.compare import MicroRow
from hopsim.validate.micro_ir.run import gpu_at, run_kernel
from isa.tensormap import TensorMap
from kernels.micro.wgmma import wgmma_bench, wgmma_sw, wgq, wgt

ITERS, WARM = 64, 4
TY = {("f16", "f32"): 0, ("bf16", "f32"): 1, ("f16", "f16"): 2}


def round_cycles(n: int, ty: int, rs: bool, c: int, nl: int, nwg: int, gpu) -> float:
    gm = GlobalMemory()
    src = gm.alloc("src", np.random.default_rng(n).integers(0, 1 << 14, size=(8192 + n * 128) // 2).astype(np.uint16))
    o = gm.alloc("times", np.zeros(4 * nwg, dtype=np.int64))
    run = run_kernel(wgmma_bench(n, ty, rs, c, nl, ITERS, WARM), Launch(grid=1, block=128 * nwg,
                     params={"src": src, "times": o}), gm, gpu, values=False)
    t = run.out("times", np.int64).reshape(nwg, 4)
    return float(np.median((t[:, 1] - t[:, 0]) / ITERS))


def wgmma(rec: dict, levels=(0, 1, 16)) -> list[MicroRow]:
    """Calibration rows: every L = 0 round (wgmma_sync_cycles is their median) and the L = 1
    rounds of SS f16/f32 C1 WG1 with N >= 64 (wgmma_fixed_latency_cycles)."""
    gpu = gpu_at()
    rows = []
    for cfg, v in rec["results"]["by_config"].items():
        shape, dt, acc, src, cpart, wg = cfg.split(",")
        n = int(shape.split("n")[1].split("k")[0])
        c, nwg = int(cpart[1:]), int(wg[2:])
        for nl in levels:
            if nl == 1 and c != 1:
                continue
            measured = v["round_cycles_by_L"].get(str(nl))
            if measured is None:
                continue
            sim = round_cycles(n, TY[(dt, acc)], src == "RS", c, nl, nwg, gpu)
            cal = nl == 0 or (nl == 1 and src == "SS" and dt == "f16" and acc == "f32" and nwg == 1 and n >= 64)
            rows.append(MicroRow(f"wgmma round {cfg} L={nl}", "wgmma_sync / fixed_latency / tensor rate",
                                 float(measured), sim, calibration=cal))
    return rows


def queue_cycles(n: int, nl: int, c: int, g: int, gpu, iters: int = ITERS) -> tuple[float, float]:
    """wgq: (mean issue cycles t1 - t0, mean round cycles t2 - t0) of one warpgroup."""
    gm = GlobalMemory()
    src = gm.alloc("src", np.random.default_rng(n).integers(0, 1 << 14, size=(8192 + n * 128) // 2).astype(np.uint16))
    o = gm.alloc("times", np.zeros(2, dtype=np.int64))
    run = run_kernel(wgq(n, nl, c, g, iters), Launch(grid=1, block=128, params={"src": src, "times": o}), gm, gpu,
                     values=False)
    t = run.out("times", np.int64)
    return float(t[0]) / iters, float(t[1]) / iters


def wgmma_queue(rec: dict) -> list[MicroRow]:
    """Issue time (t1 - t0) and round (t2 - t0) of L queued wgmmas per configuration. Calibration
    rows: wait0 N = 128 C1 issue at L = 1, 2, 4 (wgmma_issue_cycles: their slope) and wait0 C1
    issue at L = 8 and 16 of every N (wgmma_queue_depth). The TMA-after-wgmma rows (wgqt) are
    not run yet."""
    gpu = gpu_at()
    rows = []
    for cfg, v in rec["results"]["by_config"].items():
        shape, lpart, cpart, wpart = cfg.split(",")
        n, nl, c, g = int(shape.split("n")[1].split("k")[0]), int(lpart[1:]), int(cpart[1:]), int(wpart[-1])
        issue, rnd = queue_cycles(n, nl, c, g, gpu)
        cal = g == 0 and c == 1 and ((n == 128 and nl in (1, 2, 4)) or nl in (8, 16))
        rows.append(MicroRow(f"wgmma queue issue {cfg}", "wgmma_issue_cycles / wgmma_queue_depth",
                             float(v["issue_cycles"]), issue, calibration=cal))
        rows.append(MicroRow(f"wgmma queue round {cfg}", "wgmma_* (round)", float(v["round_cycles"]), rnd))
    return rows


def swizzle_cycles(n: int, sp: int, nn: bool, nwg: int, gpu, iters: int = 400, warm: int = 40) -> float:
    """wgmma_sw: cycles per k-tile, the slowest warpgroup (validation/micro_wgmma_swizzle.py)."""
    gm = GlobalMemory()
    o = gm.alloc("times", np.zeros(2 * nwg, dtype=np.int64))
    run = run_kernel(wgmma_sw(n, sp, nn, iters, warm), Launch(grid=1, block=128 * nwg, params={"times": o}), gm, gpu,
                     values=False)
    t = run.out("times", np.int64).reshape(nwg, 2)
    return float(max(t[:, 1] - t[:, 0])) / iters


def wgmma_swizzle(rec: dict) -> list[MicroRow]:
    """Cycles per GEMM-like k-tile (4 wgmmas, wait_group 1) per N, swizzle span, B layout and
    warpgroups. No calibrated number comes from this record."""
    gpu = gpu_at()
    rows = []
    for cfg, v in rec["results"].items():
        ns, sps, lay, wg = cfg.split("_")
        sim = swizzle_cycles(int(ns[1:]), int(sps[2:]), lay == "nn", int(wg[2:]), gpu)
        rows.append(MicroRow(f"wgmma k-tile {cfg}", "(tensor pipe, not calibrated here)", float(v), sim,
                             unit="cycles/k-tile"))
    return rows


WGT_ROWS, WGT_ITERS = 65536, 256  # validation/micro_wgmma_tma.py: an 8 MB L2-resident tensor, 256 rounds


def beside_tma(n: int, rs: bool, tma: bool, gpu) -> tuple[float, float]:
    """wgt: (cycles per wgmma of the warpgroup, the stream's bytes per cycle (0 without it))."""
    gm = GlobalMemory()
    src = gm.alloc("src", np.random.default_rng(n).integers(0, 1 << 14, size=(8192 + n * 128) // 2).astype(np.uint16))
    a = gm.reserve("buf", WGT_ROWS * 128)
    h = gm.register_tensor_map("map", TensorMap(dtype="f16", global_dims=(64, WGT_ROWS), global_strides_bytes=(128,),
                                                box_dims=(64, 128), global_address=a, swizzle="128B"))
    o = gm.alloc("times", np.zeros(4, dtype=np.int64))
    run = run_kernel(wgt(n, rs, tma, WGT_ROWS, WGT_ITERS), Launch(grid=1, block=160,
                     params={"src": src, "times": o, "map": h}), gm, gpu, values=False)
    t = run.out("times", np.int64)
    return float(t[0]) / (WGT_ITERS * 16), (float(t[1]) * 16384 / float(t[2])) if tma else 0.0


def wgmma_tma(rec: dict) -> list[MicroRow]:
    """A 16-deep wgmma chain alone and beside a TMA stream of 16 KB boxes on the same SM: cycles
    per wgmma, and the stream's bytes per cycle. No calibrated number comes from this record."""
    gpu = gpu_at()
    rows = []
    for cfg, v in rec["results"]["by_config"].items():
        shape, src = cfg.split(",")
        n = int(shape.split("n")[1].split("k")[0])
        alone, _ = beside_tma(n, src == "RS", False, gpu)
        with_tma, bw = beside_tma(n, src == "RS", True, gpu)
        rows.append(MicroRow(f"wgmma {cfg} chain alone", "(tensor pipe)", float(v["alone"]), alone, unit="cycles/wgmma"))
        rows.append(MicroRow(f"wgmma {cfg} chain beside a TMA stream", "(tensor pipe + TMA)", float(v["with_tma"]),
                             with_tma, unit="cycles/wgmma"))
        rows.append(MicroRow(f"TMA stream beside wgmma {cfg}", "(TMA L2 stream, one SM)", float(v["tma_bytes_per_cycle"]),
                             bw, unit="B/cycle"))
    return rows


CHIP_ITERS = 64
"""wgmma_chip: rounds per warpgroup in the simulation (the record runs ~4M cycles: up to 62500
rounds of 16 wgmmas; the per-wgmma rate of this chain is steady after a few rounds)."""


def chip_cycles(n: int, ty: int, rs: bool, nwg: int, gpu, sms: int = 132) -> float:
    """wgmma_bench (L = 16) on all SMs, one CTA each, in the GEMM's mode (partitioned, memo):
    clock64 span / (rounds x 16 x warpgroups), median over warpgroups."""
    gm = GlobalMemory()
    src = gm.alloc("src", np.random.default_rng(n).integers(0, 1 << 14, size=(8192 + n * 128) // 2).astype(np.uint16))
    o = gm.alloc("times", np.zeros(4 * nwg * sms, dtype=np.int64))
    run = run_kernel(wgmma_bench(n, ty, rs, 1, 16, CHIP_ITERS, 2), Launch(grid=sms, block=128 * nwg,
                     params={"src": src, "times": o}), gm, gpu, values=False, memory="partitioned", memo=True)
    t = run.out("times", np.int64).reshape(sms, nwg, 4)
    span = np.concatenate([t[c, :, 1] - t[c, :, 0] for c in sorted(run.timed_ctas)])  # CTAs simulated in detail
    return float(np.median(span)) / (CHIP_ITERS * 16 * nwg)


def wgmma_chip(rec: dict) -> list[MicroRow]:
    """Cycles per wgmma per SM with every SM busy, at each configuration's measured clock. No
    calibrated number comes from this record."""
    rows = []
    for cfg, v in rec["results"]["by_config"].items():
        shape, dt, acc, src, wg = cfg.split(",")
        n = int(shape.split("n")[1].split("k")[0])
        sim = chip_cycles(n, TY[(dt, acc)], src == "RS", int(wg[2:]), gpu_at(v.get("effective_sm_clock_mhz")),
                          int(rec["results"].get("num_sms", 132)))
        rows.append(MicroRow(f"wgmma all SMs {cfg} ({CHIP_ITERS} rounds)", "spec.tensor_fma_f16_per_cycle_per_sm",
                             float(v["sm_cycles_per_wgmma"]), sim, unit="cycles/wgmma/SM"))
    return rows
