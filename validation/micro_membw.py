"""Memory-bound mechanism microbenchmarks on the H100 (calibration data for hopsim's global-memory
model, issue 15):

    python3 -m validation.micro_membw --out DIR --budget-s 120    # DIR/membw.jsonl, DIR/summary.txt
    python3 -m validation.micro_membw --plan                      # the plan and its planned time

Load-use chain latency by SMs / warps / vector width / pass (HBM first read, L2 re-reads), the
per-SM bandwidth on 1..132 SMs, grid-stride copies with 1-2 loads in flight per thread, and the
effective L2 capacity for re-reads (plan, families and schema: validation/membw_plan.py; kernels:
validation/cuda/micro_membw.cu). Each group runs in its own child process (point_runner.py). Cold
data: every launch that must read HBM reads a region of a 1 GiB buffer that no launch read in the
last ~1 GiB of traffic (a rotating cursor), so nothing of it is in the 50 MiB L2. Timing: one
untimed launch, then LAUNCHES launches with CUDA events, median. Clocks are never changed.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from validation import membw_plan as mp
from validation import micro_gmem as mg
from validation.micro_gmem import _nvml_clock, _overlap, _regs
from validation.micro_runner import cupy, module, sync
from validation.power.nvml_sampler import PowerSampler

STEM = "micro_membw"
_STATE: dict = {"cursor": 0}


def _fn(name: str, smem: int):
    fn = module(STEM).get_function(name)
    fn.max_dynamic_shared_size_bytes = smem
    return fn


def _big():
    """The cold-region buffer (BUF_BYTES of random words, never zeros), allocated once per child."""
    if _STATE.get("big") is None:
        cp = cupy()
        _STATE["big"] = cp.random.RandomState(11).standard_normal(mp.BUF_BYTES // 4, dtype=cp.float32).view(cp.uint32)
    return _STATE["big"]


def _cold(nbytes: int):
    """A region of `nbytes` (multiple of 16) of the big buffer after the last one handed out
    (wrapping): cold in L2 when nbytes is well below BUF_BYTES."""
    if nbytes > mp.BUF_BYTES // 2:
        raise ValueError(f"region of {nbytes} bytes: at most {mp.BUF_BYTES // 2}")
    c = _STATE["cursor"]
    if c + nbytes > mp.BUF_BYTES:
        c = 0
    _STATE["cursor"] = c + nbytes + 4096
    return _big()[c // 4:(c + nbytes) // 4]


def _dst(nbytes: int):
    cp = cupy()
    d = _STATE.get("dst")
    if d is None or d.nbytes < nbytes:
        _STATE["dst"] = None
        d = _STATE["dst"] = cp.zeros(max(nbytes, mp.COPYU_BYTES) // 4, dtype=cp.uint32)
    return d[:nbytes // 4]


def _timed(pt: dict, launch) -> tuple[list[float], dict]:
    """One untimed launch(i=0), then LAUNCHES timed launch(i) (CUDA events); (ms list, NVML summary)."""
    cp = cupy()
    launch(0)
    sync(pt["name"] + " warm-up")
    evs = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(mp.LAUNCHES)]
    with PowerSampler(period_s=0.005) as ps:
        for i, (e0, e1) in enumerate(evs):
            e0.record()
            launch(i + 1)
            e1.record()
        sync(pt["name"])
    return [cp.cuda.get_elapsed_time(e0, e1) for e0, e1 in evs], ps.summary(launches=mp.LAUNCHES)


def chain_point(pt: dict) -> dict:
    """Load-use chain: cycles per trip per pass per warp (clock64), on a cold region each launch."""
    cp = cupy()
    p = pt["params"]
    thr, cps, sms = p["threads_per_cta"], p["ctas_per_sm"], p["sms"]
    grid = sms * cps
    warps = grid * thr // 32
    fn = _fn(p["kernel"], p["smem_bytes"])
    times = [cp.zeros(warps * (p["passes"] + 1), dtype=cp.int64) for _ in range(mp.LAUNCHES + 1)]
    sink = cp.zeros(warps * 32, dtype=cp.uint32)
    layout = 0 if p["layout"] == "warp" else 1
    regions = [_cold(p["footprint_bytes"]) for _ in range(mp.LAUNCHES + 1)]

    def launch(i):
        fn((grid,), (thr,), (regions[i], np.int32(p["trips"]), np.int32(p["passes"]), np.int32(layout),
                             times[i], sink), shared_mem=p["smem_bytes"])

    ms, summ = _timed(pt, launch)
    k = 1 + int(np.argsort(ms)[len(ms) // 2])  # the median launch's per-warp cycles
    t = cp.asnumpy(times[k]).reshape(warps, p["passes"] + 1)
    res = mp.chain_result(t[:, :-1].tolist(), p["trips"], p["vec_bytes"], ms, p["footprint_bytes"])
    smids = t[:, -1]
    per_sm = np.unique(smids, return_counts=True)[1]
    res["warps_per_sm_seen_max"] = int(per_sm.max()) if per_sm.size else 0
    clk = _nvml_clock(summ)
    return {"results": res,
            "launch": {"grid": grid, "block": thr, "sms_used": int(np.unique(smids).size),
                       "regs_per_thread": _regs(fn), "smem_bytes": p["smem_bytes"]},
            "sm_clock": {"nvml_median_mhz": clk, "kernel_clock_mhz": None},
            "power_samples_summary": summ}


def _stream_args(pt: dict, grid: int, thr: int, stamps):
    """(launch(i) args builder, bytes moved per launch) of an sms/copyu/reuse point."""
    p = pt["params"]
    vec, fp, rounds = p["vec_bytes"], p["footprint_bytes"], p["rounds"]
    n = fp // vec
    copy = pt["family"] == "copyu" or p.get("op") == "copy"
    warm_l2 = pt["family"] == "sms" and p["where"] == "l2"
    fixed = _cold(fp) if warm_l2 else None
    srcs = [fixed if warm_l2 else _cold(fp) for _ in range(mp.LAUNCHES + 1)]
    if copy:
        dst = _dst(fp)
        return (lambda i: (srcs[i], dst, np.int64(n), np.int32(rounds), stamps)), 2 * fp * rounds
    sink = cupy().zeros(grid * thr, dtype=cupy().uint32)
    return (lambda i: (srcs[i], np.int64(n), np.int32(rounds), sink, stamps)), fp * rounds


def stream_point(pt: dict) -> dict:
    """sms / copyu / reuse: bytes per second of the median launch, per SM used."""
    cp = cupy()
    p = pt["params"]
    thr, cps, sms = p["threads_per_cta"], p["ctas_per_sm"], p["sms"]
    grid = sms * cps
    fn = _fn(p["kernel"], p["smem_bytes"])
    stamps = cp.zeros(grid * 6, dtype=cp.int64)
    args, nbytes = _stream_args(pt, grid, thr, stamps)
    ms, summ = _timed(pt, lambda i: fn((grid,), (thr,), args(i), shared_mem=p["smem_bytes"]))
    clk = _nvml_clock(summ)
    res = mp.stream_result(nbytes, ms, sms, clk)
    ov = _overlap(cp.asnumpy(stamps).reshape(grid, 6))
    return {"results": res,
            "launch": {"grid": grid, "block": thr, "regs_per_thread": _regs(fn), "smem_bytes": p["smem_bytes"],
                       **{k: v for k, v in ov.items() if k != "kernel_clock_mhz"}},
            "sm_clock": {"nvml_median_mhz": clk, "kernel_clock_mhz": ov["kernel_clock_mhz"]},
            "power_samples_summary": summ}


def run_point(pt: dict) -> dict:
    return chain_point(pt) if pt["family"] == "chain" else stream_point(pt)


# ---------------------------------------------------------------- summary
def summary(jsonl: pathlib.Path) -> str:
    """One line per point: chain cycles/trip per pass (median over warps), else TB/s and B/cyc/SM."""
    recs = [json.loads(x) for x in jsonl.read_text().splitlines() if x.strip()]
    ok = [r for r in recs if not r.get("error")]
    lines = [f"{len(recs)} records, {len(recs) - len(ok)} with error/skipped"]
    for r in recs:
        if r.get("error"):
            lines.append(f"{r['name']:<32} ERROR {str(r['error'])[:80]}")
            continue
        res = r["results"]
        if r["family"] == "chain":
            cyc = " ".join(f"{q['median_cycles_per_trip']:7.0f}" for q in res["passes"])
            lines.append(f"{r['name']:<32} cyc/trip per pass {cyc}   ({r['launch']['sms_used']} SMs)")
        else:
            bpc = res.get("bytes_per_cycle_per_sm")
            lines.append(f"{r['name']:<32} {res['bytes_per_s'] / 1e12:6.3f} TB/s"
                         + (f" {bpc:6.1f} B/cyc/SM" if bpc else "")
                         + f"  ({r['launch'].get('sms_used')} SMs)")
    return "\n".join(lines)


# ---------------------------------------------------------------- entry
def main(argv: list[str] | None = None) -> int:
    return mg.runner_main(argv, STEM, __doc__, 120.0, mp, run_point, execute)


def execute(pts: list[dict], names: list[str], out: pathlib.Path, budget_s: float) -> int:
    return mg.execute_points(STEM, mp.KIND, summary, pts, names, out, budget_s)


if __name__ == "__main__":
    raise SystemExit(main())
