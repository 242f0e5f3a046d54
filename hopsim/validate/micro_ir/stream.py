"""TMA streams through simulate(): the IR twins of tma_width_stream and tma_stream
(kernels/micro/tma.py) on one SM or on all 132, in the GEMM's memory mode (MODE), vs
microbench__tma_width and __tma_share (cycles per box: median over CTAs of the clock64 span /
boxes per CTA) and microbench__tma_stream (bytes per cycle per SM from the kernel time), each at
the SM clock its record run measured."""

from __future__ import annotations

import numpy as np

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.validate.compare import MicroRow
from hopsim.validate.micro_ir.run import gpu_at, run_kernel
from isa.errors import HopsimError
from isa.tensormap import TensorMap
from kernels.micro.tma import tma_stream, tma_width_stream

COLS = 4096  # validation/micro_tma_width.py: 8 KB row pitch
SWZ = {16: "32B", 32: "64B", 64: "128B"}  # swizzle = the box row width
ROWS = {"L2": 1024, "HBM": 131072}  # 8 MB and 1 GB tensors
MODE = {"memory": "partitioned"}
"""The memory mode of the GEMM simulations (hopsim/gemm_sim.py): each SM owns 1/num_sms of the L2
and HBM links and a CTA's TMA tiles get their L2 residency when it is dispatched (memory.SmLink,
memo.py). Also ~20x faster than the shared FIFO links on 132 SMs."""


def _run(kernel, launch, gm, gpu):
    """Timing-only run: one CTA in the shared mode (the partitioned mode's dispatch-time residency
    treats a one-CTA stream as streaming: its second pass misses L2, 225 vs 160 cycles per 16 KB
    box); several in MODE, or in the shared mode when the partitioned one refuses the kernel (its
    CTAs' boxes wrap around the tensor: not the affine tile plan partitioned mode needs)."""
    if launch.num_ctas == 1:
        return run_kernel(kernel, launch, gm, gpu, values=False)
    try:
        return run_kernel(kernel, launch, gm, gpu, values=False, **MODE)
    except HopsimError as e:
        if "tile plan" not in str(e):
            raise
        return run_kernel(kernel, launch, gm, gpu, values=False)


def stream_cycles_per_box(where: str, w: int, r: int, k: int, per_cta: int, grid: int, gpu, share: int = 1) -> float:
    """Median over CTAs of (clock64 span / boxes per CTA); L2 runs stream twice, timing the second."""
    rows = ROWS[where]
    gm = GlobalMemory()
    a = gm.reserve("buf", rows * COLS * 2)
    h = gm.register_tensor_map("map", TensorMap(dtype="f16", global_dims=(COLS, rows), global_strides_bytes=(COLS * 2,),
                                                box_dims=(w, r), global_address=a, swizzle=SWZ[w]))
    o = gm.alloc("times", np.zeros(4 * grid, dtype=np.int64))
    kern = tma_width_stream(w, r, k, per_cta // k, COLS // w, rows // r, grid, share, 2 if where == "L2" else 1)
    t = _run(kern, Launch(grid=grid, block=32, params={"map": h, "times": o}), gm, gpu).out("times", np.int64)
    t = t.reshape(grid, 4)
    return float(np.median(t[:, 1] - t[:, 0])) / per_cta


def tma_width(rec: dict, max_sms: int | None = None) -> list[MicroRow]:
    """Calibration rows as micro_sim: L2 128-B and 32-B wide, 128 rows, on 1 and 132 SMs."""
    rows = []
    cal = ("L2,w128B,r128,sms132", "L2,w128B,r128,sms1", "L2,w32B,r128,sms132", "L2,w32B,r128,sms1")
    for cfg, v in rec["results"].items():
        where, wb, r, sms = cfg.split(",")
        grid = int(sms[3:])
        if max_sms is not None and grid > max_sms:
            continue
        sim = stream_cycles_per_box(where, int(wb[1:-1]) // 2, int(r[1:]), int(v["boxes_per_round"]),
                                    int(v["boxes_per_cta"]), grid, gpu_at(v.get("sm_clock_mhz")))
        rows.append(MicroRow(f"TMA stream {where} {wb} box rows {r[1:]}, {grid} SM(s)", "tma_* / l2_* / hbm_*",
                             float(v["cycles_per_box"]), sim, unit="cycles/box", calibration=cfg in cal))
    return rows


def tma_share(rec: dict, max_sms: int | None = None) -> list[MicroRow]:
    """The width stream with boxes shared by groups of g consecutive CTAs (one per SM). The
    calibration row (l2_delivery_bytes_per_s) is the 132-SM configuration with the highest rate."""
    res = rec["results"]
    best = max(res.items(), key=lambda kv: kv[1]["bytes_per_cycle_per_sm"] * kv[0].endswith("sms132"))[0]
    rows = []
    for cfg, v in res.items():
        _where, wb, r, g, sms = cfg.split(",")
        grid = int(sms[3:])
        if max_sms is not None and grid > max_sms:
            continue
        w, nrows = int(wb[1:-1]) // 2, int(r[1:])
        k = int(v["boxes_per_round"])
        sim = stream_cycles_per_box("L2", w, nrows, k, int(v["boxes_per_cta"]), grid, gpu_at(v.get("sm_clock_mhz")),
                                    share=int(g[1:]))
        rows.append(MicroRow(f"TMA stream L2 {wb} box rows {nrows} shared by {g[1:]}, {grid} SM(s)",
                             "l2_delivery_bytes_per_s / l2_bytes_per_s", float(v["cycles_per_box"]), sim,
                             unit="cycles/box", calibration=cfg == best))
    return rows


STREAM_BOXES_PER_CTA = 128
"""tma_stream: boxes each CTA streams in the simulation. The record streams a 2 GiB map (248 to
16384 boxes per CTA: 2M boxes of 1 KB for box 64x8); simulating that takes minutes per point, so
the map is cut to grid x 128 boxes (same per-CTA pattern and ring; the ramp and tail weigh more)."""


def stream_bytes_per_cycle(box_rows: int, stages: int, grid: int, gpu, num_sms: int = 132) -> float:
    """tma_stream of kernels/micro/tma.py from HBM: bytes / simulated kernel cycles / SMs."""
    nbox = grid * STREAM_BOXES_PER_CTA
    rows = nbox * box_rows
    gm = GlobalMemory()
    a = gm.reserve("buf", rows * 128)
    h = gm.register_tensor_map("map", TensorMap(dtype="f16", global_dims=(64, rows), global_strides_bytes=(128,),
                                                box_dims=(64, box_rows), global_address=a, swizzle="128B"))
    o = gm.alloc("times", np.zeros(4 * grid, dtype=np.int64))
    run = _run(tma_stream(box_rows, stages, nbox), Launch(grid=grid, block=32, params={"map": h, "times": o}), gm, gpu)
    return rows * 128 / float(run.result.cycles) / num_sms


def tma_stream_rows(rec: dict) -> list[MicroRow]:
    """All-SM HBM streams (1 or 2 CTAs per SM): bytes per cycle per SM from the simulated kernel
    time (the record: CUDA events over the kernel). Calibration: the fastest configuration
    (hbm_bytes_per_s)."""
    res = rec["results"]["by_config"]
    best = max(res.values(), key=lambda v: v["tb_per_s_events"])
    nsms = int(rec["results"].get("num_sms", 132))
    rows = []
    for cfg, v in res.items():
        box, stages, cps = cfg.split(",")
        r, st, per_sm = int(box.split("x")[-1]), int(stages[6:]), int(cps.split("sm")[-1])
        sim = stream_bytes_per_cycle(r, st, nsms * per_sm, gpu_at(v.get("effective_sm_clock_mhz")), nsms)
        rows.append(MicroRow(f"TMA HBM stream box 64x{r}, {st} stages, {per_sm} CTA/SM ({STREAM_BOXES_PER_CTA} boxes/CTA)",
                             "hbm_bytes_per_s", float(v["bytes_per_cycle_per_sm"]), sim, unit="B/cycle/SM",
                             calibration=v is best))
    return rows
