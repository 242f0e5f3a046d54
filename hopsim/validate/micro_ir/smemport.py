"""Shared-memory port contention through simulate(): the IR twin of micro_smemport.cu
(kernels/micro/smemport.py), timed by its clock64 reads, vs microbench__smemport (one-SM rows):
each stream's bytes per cycle alone and beside the others (wgmma SS operand reads, TMA fills,
ld/st.shared.v4, stmatrix). The rates come from the kernel's (units, cycles) slots by the record's
own arithmetic (cta_rates in validation/micro_smemport.py). Timing-only runs (values=False).

The twin runs a shorter window than the hardware (WINDOW cycles, the record 200k): every stream is
in its steady state after a few of its units (the rates are units over cycles from one start)."""

from __future__ import annotations

import numpy as np

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.validate.compare import MicroRow
from hopsim.validate.micro_ir.run import gpu_at, run_kernel
from isa.tensormap import TensorMap
from kernels.micro.smemport import RING_OFF, smemport as smemport_kernel
from validation.micro_smemport import CONFIGS, SLOTS, THREADS, cta_rates, roles_of

WINDOW = 20_000
REGS = 156  # ptxas -v of validation/cuda/micro_smemport.cu (the IR declares more than it uses)
ROWS = 2048  # 16 boxes: L2-resident after the warm-up (the record: an 8 MB L2-resident tensor)


def simulate_config(config: str, gpu, window: int = WINDOW) -> dict:
    """The twin's rates for one configuration (keys as the record's by_config rows)."""
    gm = GlobalMemory()
    src = gm.alloc("src", np.random.default_rng(7).integers(0, 1 << 14, size=RING_OFF // 2).astype(np.uint16))
    a = gm.reserve("buf", ROWS * 128)
    h = gm.register_tensor_map("map", TensorMap(dtype="f16", global_dims=(64, ROWS), global_strides_bytes=(128,),
                                                box_dims=(64, 128), global_address=a, swizzle="128B"))
    o = gm.alloc("times", np.zeros(SLOTS, dtype=np.int64))
    run = run_kernel(smemport_kernel(roles_of(config), window, ROWS), Launch(grid=1, block=THREADS,
                     params={"src": src, "times": o, "map": h}), gm, gpu, values=False,
                     regs_per_thread=REGS)
    return cta_rates(list(run.out("times", np.int64)), config)


def smemport(rec: dict, configs=CONFIGS) -> list[MicroRow]:
    """One row per stream per configuration (one SM): measured vs simulated B/cycle. Calibration
    rows: those hopsim/validate/calibrate_smemport.py reads (see its table)."""
    gpu = gpu_at()
    by = rec["results"]["by_config"]
    rows = []
    for cfg in configs:
        meas = by.get(f"{cfg}|1sm")
        if meas is None:
            continue
        sim = simulate_config(cfg, gpu)
        for key, v in sim.items():
            if key.endswith("_bytes_per_cycle") and key in meas:
                rows.append(MicroRow(f"smemport {cfg}: {key}", "smem_port_*", float(meas[key]), float(v),
                                     unit="B/cycle"))
    return rows
