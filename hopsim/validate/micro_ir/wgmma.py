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
from kernels.micro.wgmma import wgmma_bench

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
