"""tma_latency and tma_issue through simulate(): the IR twins of the CUDA kernels
(kernels/micro/tma.py), timed by their clock64 reads, vs microbench__tma_latency / __tma_issue."""

from __future__ import annotations

import numpy as np

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.validate.compare import MicroRow
from hopsim.validate.micro_ir.run import gpu_at, run_kernel
from isa.tensormap import TensorMap
from kernels.micro.tma import tma_issue as tma_issue_kernel
from kernels.micro.tma import tma_latency as tma_latency_kernel

L2_ROWS, HBM_ROWS = 8192, 1 << 24  # the record's maps: 1 MiB and 2 GiB of 128-B rows


def _map(gm: GlobalMemory, rows: int, box_rows: int) -> int:
    """f16 {64, rows} (128-B rows), box {64, R}, 128B swizzle (validation/micro_tma.py _tmap);
    the buffer's bytes are not allocated (the boxes' values do not matter)."""
    a = gm.reserve("buf", rows * 128)
    return gm.register_tensor_map("map", TensorMap(dtype="f16", global_dims=(64, rows), global_strides_bytes=(128,),
                                                   box_dims=(64, box_rows), global_address=a, swizzle="128B"))


def latency_run(where: str, box_rows: int, k: int, gpu, iters: int | None = None) -> tuple[float, float]:
    """(median round trip, median issue cycles) of one launch (the record: 3 launches, seed 1000 r + k)."""
    rows = L2_ROWS if where == "L2" else HBM_ROWS
    iters = iters or (200 if where == "L2" else 100)
    gm = GlobalMemory()
    h = _map(gm, rows, box_rows)
    o = gm.alloc("cyc", np.zeros(2 * iters, dtype=np.int64))
    kern = tma_latency_kernel(k, box_rows, rows // box_rows, iters, 20 if where == "L2" else 2, k, where == "L2")
    c = run_kernel(kern, Launch(grid=1, block=32, params={"map": h, "cyc": o}), gm, gpu).out("cyc", np.int64)
    c = c.reshape(iters, 2)
    return float(np.median(c[:, 0])), float(np.median(c[:, 1]))


def tma_latency(rec: dict) -> list[MicroRow]:
    """Round trip and issuing-thread cycles of k boxes. Calibration: the L2 64x8 k = 1 round trip
    (tma_extra_latency_cycles) and the L2 64x8 issue cycles (tma_issue_cycles: their slope)."""
    gpu = gpu_at()
    rows = []
    for cfg, v in rec["results"]["tensor_2d"].items():
        where, shape = cfg.split(",")
        r = int(shape.split("x")[1])
        for k, kv in v["by_k"].items():
            rt, issue = latency_run(where, r, int(k), gpu)
            rows.append(MicroRow(f"TMA round trip {where} box {shape} x{k}", "tma_* / gmem_*_latency_cycles",
                                 float(kv["round_trip_cycles"]["median"]), rt,
                                 calibration=(cfg == "L2,64x8" and k == "1")))
            rows.append(MicroRow(f"TMA issuing thread {where} box {shape} x{k}", "tma_issue_cycles",
                                 float(kv["issue_cycles"]["median"]), issue, calibration=cfg == "L2,64x8"))
    return rows


def issue_run(box_rows: int, mode: str, k: int, gpu, iters: int = 64) -> tuple[float, float]:
    gm = GlobalMemory()
    h = _map(gm, L2_ROWS, box_rows)
    o = gm.alloc("times", np.zeros(2, dtype=np.int64))
    kern = tma_issue_kernel(k, box_rows, mode, L2_ROWS, iters)
    t = run_kernel(kern, Launch(grid=1, block=32, params={"map": h, "times": o}), gm, gpu).out("times", np.int64)
    return float(t[0]) / iters, float(t[1]) / iters


def tma_issue(rec: dict) -> list[MicroRow]:
    """Issue time (t1 - t0) and round (t2 - t0) of K unrolled copies per mode. Calibration: R8
    warp_elect and R8 thread_unpredicated K = 1 and 32 (tma_issue_elect_cycles, tma_issue_uniform_cycles:
    their slopes)."""
    gpu = gpu_at()
    rows = []
    for cfg, v in rec["results"].items():
        r, mode = cfg.split(",")
        for k, x in v["by_k"].items():
            issue, rnd = issue_run(int(r[1:]), mode, int(k), gpu)
            cal = cfg in ("R8,warp_elect", "R8,thread_unpredicated") and k in ("1", "32")
            rows.append(MicroRow(f"TMA issue {cfg} K={k}", "tma_issue_cycles / _elect / _uniform_cycles",
                                 float(x["issue_cycles"]), issue, calibration=cal))
            rows.append(MicroRow(f"TMA issue round {cfg} K={k}", "tma_* (round trip)",
                                 float(x["round_cycles"]), rnd))
    return rows
