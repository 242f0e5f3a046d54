"""The sweep function of the non-GEMM families (`hopsim sweep --family vecadd|copy|rowsum|softmax|
tmacopy|attention`): simulate one point as `hopsim simulate <family>` does without data (timing
only, partitioned memory, CTA memo; the clock solved by the power model at the point's `clock`:
sustained, boost or MHz; the benchmark loop of the point's `loop`: rotated by default, or same) and return a flat row (hopsim/sweep_knobs.py FAMILY_COLUMNS, and
gb_per_s / bytes_moved or tflops, busy_<unit>, wait_<role>_<reason>)."""

from __future__ import annotations

import time
from types import SimpleNamespace

from hopsim.cli.attention_cmd import simulate_attention
from hopsim.cli.family_run import bandwidth_gbs, clocked_run
from hopsim.cli.membound_cmd import simulate_membound
from hopsim.cli.rowwise_cmd import simulate_rowwise
from hopsim.cli.tmacopy_cmd import simulate_tmacopy
from hopsim.config import load_gpu
from hopsim.sweep_knobs import family
from kernels.attention.params import AttnParams
from kernels.membound import MemParams
from kernels.membound.tmacopy import TmaCopyParams
from kernels.rowwise import RowParams

SIMULATE = {MemParams: simulate_membound, RowParams: simulate_rowwise, TmaCopyParams: simulate_tmacopy,
            AttnParams: simulate_attention}
"""Params class -> its family's simulate function (hopsim/cli/*_cmd.py)."""


def _runner(p, gpu, loop: str):
    sim = SIMULATE[type(p)]
    if isinstance(p, AttnParams):
        return lambda mhz, values=False, trace=False: sim(p, gpu, values=False, trace=trace, mhz=mhz, loop=loop)
    return lambda mhz, **kw: sim(p, gpu, mhz=mhz, loop=loop, **kw)


def simulate_point(point: dict) -> dict:
    """One point of a family sweep -> its row (the point's knobs are added by hopsim.sweep); the
    point's `loop` (rotated | same, default rotated) as `simulate <family> --loop`."""
    fam = family(point["family"])
    p = fam.check(point)
    gpu = load_gpu(point.get("gpu") or "h100_sxm")
    args = SimpleNamespace(clock=str(point.get("clock") or "sustained"), no_progress=True, trace=None, plot=None)
    t0 = time.perf_counter()
    run = clocked_run(args, fam.name, _runner(p, gpu, point.get("loop") or "rotated"), gpu, values=False, tensor_cores=isinstance(p, AttnParams))
    return row(run, p, time.perf_counter() - t0)


def row(run, p, wall_s: float) -> dict:
    """The flat row of a clocked run of params `p`."""
    r = run.res
    out = {"cycles": r.cycles, "time_ms": r.time_ms, "ctas_per_sm": r.ctas_per_sm, "waves": r.waves,
           "limiting": r.limiting, "bytes_hbm": r.bytes_hbm, "bytes_l2": r.bytes_l2,
           "bytes_stored": r.bytes_stored, "bytes_hbm_written": r.extra.get("bytes_hbm_written"),
           "sim_wall_s": round(wall_s, 3), **run.clock_fields()}
    if isinstance(p, AttnParams):
        out["tflops"] = p.flops / (r.time_ms * 1e-3) / 1e12 if r.time_ms > 0 else 0.0
    else:
        out.update(bytes_moved=p.bytes_moved, gb_per_s=bandwidth_gbs(p.bytes_moved, r))
    for unit, v in r.busy.items():
        out[f"busy_{unit}"] = round(float(v), 4)
    for role, d in r.roles.items():
        for what, cyc in d.get("wait", {}).items():
            out[f"wait_{role}_{what}"] = cyc
    return out
