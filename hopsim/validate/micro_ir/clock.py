"""clock_domain through simulate(): every run of microbench__clock_domain (SM clocks 1700-1990 MHz)
with the IR twins of gchase (kernels/micro/mem.py: cycles per load) and tma_width_stream
(kernels/micro/tma.py: 16 KB boxes on all SMs, B/cycle/SM) at the run's measured SM clock. No
calibrated number comes from this record."""

from __future__ import annotations

from hopsim.validate.compare import MicroRow
from hopsim.validate.micro_ir.mem import gchase_cycles
from hopsim.validate.micro_ir.run import gpu_at
from hopsim.validate.micro_ir.stream import stream_cycles_per_box
from validation.micro_clock import STREAM_BOX, STREAM_BOXES_PER_ROUND, record_runs, stream_boxes_per_cta

CHASE = {"L2": (16 << 20, 4096), "HBM": (2 << 30, 2048)}  # footprint, timed steps (validation/micro_clock.py)


def clock_domain(rec: dict) -> list[MicroRow]:
    rows = []
    w, r = STREAM_BOX
    box = 2 * w * r
    for kind, where, label, run in record_runs(rec):
        gpu = gpu_at(run["sm_clock_mhz"])
        if kind == "chase":
            fp, steps = CHASE[where]
            rows.append(MicroRow(f"clock domain: {label}", "gmem_l2_latency_cycles / hbm_extra_latency_ns",
                                 float(run["cycles"]), gchase_cycles(fp, gpu, steps)))
        else:
            per_cta = stream_boxes_per_cta(where)
            cyc = stream_cycles_per_box(where, w, r, STREAM_BOXES_PER_ROUND, per_cta, 132, gpu)
            rows.append(MicroRow(f"clock domain: TMA stream {label}", "l2_bytes_per_s / hbm_bytes_per_s",
                                 float(run["bytes_per_cycle_per_sm"]), box / cyc, unit="B/cycle/SM"))
    return rows
