"""mbarrier through simulate(): the IR twins of mbar_self, mbar_pingpong and mbar_fanout
(kernels/micro/mbarrier.py) vs microbench__mbarrier.

The record's single-thread numbers are `cycles_per_op_minus_loop` = raw - the empty loop, but
nvcc removed the empty loop (0.0005 cycles per iteration): the hardware's loop overhead is inside
the raw numbers. The IR twin keeps its loop (counter, compare, branch), so the simulated raw
cycles per operation are compared with the measured raw ones; the empty loop itself has no row
(measured 0: no relative error)."""

from __future__ import annotations

import statistics

import numpy as np

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.validate.compare import MicroRow
from hopsim.validate.micro_ir.run import gpu_at, run_kernel
from kernels.micro.mbarrier import MODES, mbar_fanout, mbar_pingpong, mbar_self

ITERS, WARM = 4096, 256
CALIBRATED = {"arrive": "mbarrier_arrive_cycles", "try_wait_completed_phase": "mbarrier_try_wait_cycles"}


def _out(kernel, block: int, gpu, n: int) -> np.ndarray:
    gm = GlobalMemory()
    o = gm.alloc("out", np.zeros(8, dtype=np.int64))
    return run_kernel(kernel, Launch(grid=1, block=block, params={"out": o}), gm, gpu).out("out", np.int64)[:n]


def fanout_wakes(gpu, delay: int = 4000) -> list[float]:
    """mbar_fanout: clock64 of each waiting warp 1..4 when it saw the phase - clock64 before the arrive."""
    t = _out(mbar_fanout(delay), 160, gpu, 5)
    return [float(x - t[0]) for x in t[1:]]


def mbarrier(rec: dict) -> list[MicroRow]:
    gpu = gpu_at()
    r = rec["results"]
    rows = []
    for mode, name in enumerate(MODES[:4]):
        sim = float(_out(mbar_self(mode, ITERS, WARM), 32, gpu, 1)[0]) / ITERS
        rows.append(MicroRow(f"mbarrier single thread: {name} (raw, loop included)",
                             CALIBRATED.get(name, "mbarrier_* (composed)"),
                             float(r["single_thread"][name]["cycles_per_op_raw"]), sim,
                             calibration=name in CALIBRATED))
    for pair, v in r["pingpong"].items():
        partner = int(pair.rsplit("warp", 1)[1])
        rt = float(_out(mbar_pingpong(partner, 2000, 100), 32 * (partner + 1), gpu, 1)[0]) / 2000
        rows.append(MicroRow(f"mbarrier ping-pong one way, {pair}", "mbarrier_arrive_cycles + mbarrier_wakeup_cycles",
                             float(v["one_way_cycles"]), rt / 2, calibration=True))  # wake-up: their median
    rows.append(MicroRow("mbarrier fan-out: median wake of 4 waiting warps", "mbarrier_arrive_cycles + mbarrier_wakeup_cycles",
                         float(r["fanout_4_warps"]["wake_cycles_all"]["median"]), statistics.median(fanout_wakes(gpu))))
    return rows
