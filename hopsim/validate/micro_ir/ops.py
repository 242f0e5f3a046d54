"""Per-opcode latency and issue rate through simulate(): the IR twins of lat_<op> / thr_<op>
(kernels/micro/ops.py) vs microbench__ops (validation/micro_ops.py).

Rows per op and mode: the latency (clock64 cycles per dependent step of one warp) and the rate of
one CTA of W warps on one SM (warp instructions of the op per SM cycle) at every W the record has.
The twins run fewer loop iterations than the CUDA kernels (LAT_ITERS, THR_ITERS below: a steady
state is reached within them and the simulation stays short); the record's all-SM rows of the
global atomics are not run (132 CTAs; the per-SM rows are). No row is a calibration row until
the fitted fields exist (hopsim/validate/calibrate_ops.py)."""

from __future__ import annotations

import numpy as np

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.validate.compare import MicroRow
from hopsim.validate.micro_ir.run import gpu_at, run_kernel
from kernels.micro.ops import GLOBAL_WORDS, IR_BY_NAME, LAT_UNROLL, THR_CHAINS, THR_UNROLL, ops_kernel

LAT_ITERS = 8
THR_ITERS = 4
MODES = {"reg": 0, "distinct": 0, "same": 1}
REGS_PER_THREAD = 64
"""Registers per thread of the twins' launches: the CUDA kernels run 1024-thread CTAs, so ptxas gave
them at most 64 (65536 / 1024); the IR's declared register vectors count more than ptxas allocates."""


def _bits(rec: dict, op: str) -> tuple[int, int]:
    o = rec["results"].get("ops", {}).get(op, {})
    return int(o.get("c1_bits", 0)), int(o.get("c2_bits", 0))


def stamps(name: str, kind: str, warps: int, iters: int, c1: int, c2: int, mode: int, gpu) -> np.ndarray:
    """(warps, 2) clock64 before/after of each warp of one simulated launch (grid 1)."""
    gm = GlobalMemory()
    params = {"out": gm.alloc("out", np.zeros(128, dtype=np.int64)),
              "gbuf": gm.alloc("gbuf", np.zeros(GLOBAL_WORDS, dtype=np.uint32)), "c1": c1, "c2": c2, "mode": mode}
    run = run_kernel(ops_kernel(name, kind, iters), Launch(grid=1, block=32 * warps, params=params), gm, gpu, regs_per_thread=REGS_PER_THREAD)
    return run.out("out", np.int64)[:4 * warps].reshape(warps, 4)[:, :2]


def sim_latency(name: str, rec: dict, mode: str, gpu) -> float:
    c1, c2 = _bits(rec, name)
    s = stamps(name, "lat", 1, LAT_ITERS, c1, c2, MODES[mode], gpu)
    return float(s[0, 1] - s[0, 0]) / (LAT_ITERS * LAT_UNROLL)


def sim_rate(name: str, rec: dict, mode: str, warps: int, gpu) -> float:
    c1, c2 = _bits(rec, name)
    s = stamps(name, "thr", warps, THR_ITERS, c1, c2, MODES[mode], gpu)
    return warps * THR_ITERS * THR_CHAINS * THR_UNROLL / float(s[:, 1].max() - s[:, 0].min())


def ops(rec: dict) -> list[MicroRow]:
    """Every op of the record the IR has a twin of (all of them: kernels/micro/ops.py)."""
    gpu = gpu_at()
    res = rec["results"]
    rows = []
    for name, modes in res["throughput"].items():
        if name not in IR_BY_NAME:
            continue
        for mode, by_w in modes.items():
            lat = res["latency"].get(name, {}).get(mode)
            if lat is not None:
                rows.append(MicroRow(f"{name} [{mode}] latency (cycles per dependent step)", "ops (per-opcode latency)",
                                     float(lat["cycles_per_step"]["median"]), sim_latency(name, rec, mode, gpu)))
            for w, v in by_w.items():
                if not w.isdigit():
                    continue
                rows.append(MicroRow(f"{name} [{mode}] {w} warps: warp inst per SM cycle", "ops (per-opcode issue)",
                                     float(v["warp_inst_per_cycle_per_sm"]["median"]),
                                     sim_rate(name, rec, mode, int(w), gpu), unit="warp inst/cycle"))
    return rows
