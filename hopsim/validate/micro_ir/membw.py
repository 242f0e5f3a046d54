"""The memory-bound mechanism microbenchmarks through simulate(): the IR twins of micro_membw.cu
(kernels/micro/membw.py) vs validation/records/h100/membw/membw.jsonl (validation/membw_plan.py),
in the memory mode of the portfolio's simulations (`hopsim simulate vecadd|copy|softmax`:
partitioned links, dispatch-time L2 residency), each point at its record's SM clock.

Rows:
  chain  lone-warp and loaded load-use chains, ld.global.cg only (the IR has no .ca and hopsim no
         L1): clock64 cycles per trip of each pass (median over warps), from the kernel's own
         clock reads. Points with more than CHAIN_MAX_WARPS warps in all are not run (one CTA per
         SM of up to 64 warps, 48 loads each: minutes without the memo, which clock reads bar).
  sms / copyu / reuse  bytes per second of the launch (read + written bytes / time), run with the
         CTA memo. The record's time is one CUDA-event-timed launch; the simulated one is the
         launch's cycles less the model's launch overhead (`launch_overhead_ns`: back-to-back
         launches in a CUDA graph) plus the event overhead the same records measure (the chain
         points' fastest launch less their clock64 time: calibrate_membw.event_overhead_s).
Calibration rows: those `hopsim/validate/calibrate_membw.py` reads a number from (its CAL_ROWS).
"""

from __future__ import annotations

import json
import pathlib
import statistics

import numpy as np

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.timing.runner import simulate
from hopsim.timing.launch import overhead_cycles
from hopsim.validate.calibrate_membw import CAL_ROWS, MEMBW_FILE, event_overhead_s
from hopsim.validate.compare import MicroRow
from hopsim.validate.micro_ir.run import gpu_at, run_kernel
from kernels.micro.membw import mb_chain, mb_copy, mb_stream

CHAIN_MAX_WARPS = 264
"""Chain points simulated: SMs x warps per SM at most this (33 SMs x 8 warps)."""
MODE = {"memory": "partitioned", "regs_per_thread": 32}
"""regs_per_thread: for occupancy (the IR declares more): the records' launch.regs_per_thread are
23..32 (launch bounds 1024 threads x 2 CTAs); the CTAs per SM are pinned by the dynamic shared
memory as on the H100."""


def membw_records(records_dir) -> list[dict]:
    """The membw records (none when the file is absent); failed points left out."""
    path = pathlib.Path(records_dir) / MEMBW_FILE
    if not path.exists():
        return []
    recs = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return [r for r in recs if not r.get("error")]


def _clock(rec: dict):
    return gpu_at((rec.get("sm_clock") or {}).get("nvml_median_mhz"))


def _launch(p: dict, params: dict) -> Launch:
    """The record's launch: one CTA per SM (two of 32 warps for 64 warps/SM), its dynamic shared
    memory pinning the CTAs per SM."""
    return Launch(grid=p["sms"] * p["ctas_per_sm"], block=p["threads_per_cta"], dynamic_smem=p["smem_bytes"],
                  params=params)


def chain_cycles(p: dict, gpu) -> list[float]:
    """Median over warps of cycles per trip, per pass, of one simulated chain launch."""
    grid = p["sms"] * p["ctas_per_sm"]
    warps = grid * p["threads_per_cta"] // 32
    gm = GlobalMemory()
    buf = gm.reserve("buf", p["footprint_bytes"])
    times = gm.alloc("times", np.zeros(warps * (p["passes"] + 1), dtype=np.int64))
    kern = mb_chain(p["vec_bytes"], p["layout"], p["trips"], p["passes"])
    run = run_kernel(kern, _launch(p, {"buf": buf, "times": times}), gm, gpu, values=False, **MODE)
    t = run.out("times", np.int64).reshape(warps, p["passes"] + 1)
    return [float(statistics.median(t[:, k])) / p["trips"] for k in range(p["passes"])]


def _cycles(p: dict, gpu, rounds: int) -> int:
    grid = p["sms"] * p["ctas_per_sm"]
    vec, fp = p["vec_bytes"], p["footprint_bytes"]
    gm = GlobalMemory()
    params = {"n": fp // vec, "rounds": rounds}
    if p["kernel"].startswith("mb_copy"):
        kern = mb_copy(vec, p["unroll"])
        params.update(src=gm.reserve("src", fp), dst=gm.reserve("dst", fp))
    else:
        kern = mb_stream(vec, p["unroll"])
        params.update(buf=gm.reserve("buf", fp))
    res = simulate(kern, _launch(p, params), gpu, values=False, gmem=gm, memo=True, **MODE)
    return res.cycles - overhead_cycles(gpu, min(int(gpu.spec.num_sms.value), grid))


def stream_seconds(p: dict, gpu, event_overhead: float = 0.0, warm: bool = False) -> float:
    """Simulated seconds of one sms/copyu/reuse launch (memo on: all CTAs alike): its cycles less
    the model's launch overhead, plus `event_overhead` seconds. `warm`: the footprint is in L2
    before the launch (the sms L2 points re-read the region their untimed launch read): the
    cycles of rounds + 1 less those of one round (a simulation starts with an empty L2)."""
    work = _cycles(p, gpu, p["rounds"])
    if warm:
        work = _cycles(p, gpu, p["rounds"] + 1) - _cycles(p, gpu, 1)
    return work / gpu.clock_hz + event_overhead


def moved_bytes(rec: dict) -> int:
    """Bytes a launch reads and writes (the record's bytes_per_s numerator)."""
    p = rec["params"]
    if rec["family"] == "chain":
        return p["footprint_bytes"] * p["passes"]
    return p["footprint_bytes"] * p["rounds"] * (2 if p["kernel"].startswith("mb_copy") else 1)


def chain_rows(rec: dict) -> list[MicroRow]:
    p = rec["params"]
    if p["cache_op"] != "cg" or p["sms"] * p["warps_per_sm"] > CHAIN_MAX_WARPS:
        return []
    sim = chain_cycles(p, _clock(rec))
    what = ("HBM first read", "L2 re-read", "L2 re-read")
    return [MicroRow(f"{rec['name']} pass {k} ({what[min(k, 2)]})", "gmem_line_issue_cycles / latency",
                     float(m["median_cycles_per_trip"]), sim[k], unit="cycles/trip",
                     calibration=f"{rec['name']}:{k}" in CAL_ROWS)
            for k, m in enumerate(rec["results"]["passes"])]


def stream_rows(rec: dict, event_overhead: float = 0.0) -> list[MicroRow]:
    warm = rec["family"] == "sms" and rec["params"]["where"] == "l2"
    sim = moved_bytes(rec) / stream_seconds(rec["params"], _clock(rec), event_overhead, warm)
    field = {"sms": "gld_bytes_per_cycle_per_sm", "copyu": "gmem_outstanding_sectors_per_sm",
             "reuse": "l2_effective_capacity_fraction"}[rec["family"]]
    return [MicroRow(rec["name"], field, float(rec["results"]["bytes_per_s"]) / 1e12, sim / 1e12, unit="TB/s",
                     calibration=rec["name"] in CAL_ROWS)]


def membw(rec: dict, only=None) -> list[MicroRow]:
    """Every point of the membw records (`rec["results"]["points"]`) the twins run; `only`: a
    predicate on the record (e.g. one family)."""
    over = event_overhead_s(rec["results"]["points"]) or 0.0
    rows = []
    for r in rec["results"]["points"]:
        if only is not None and not only(r):
            continue
        rows += chain_rows(r) if r["family"] == "chain" else stream_rows(r, over)
    return rows
