"""Global-memory microbenchmarks on the H100 (calibration data for hopsim's global-memory model):

    python3 -m validation.micro_gmem --out DIR --budget-s 300     # DIR/gmem.jsonl, DIR/summary.txt
    python3 -m validation.micro_gmem --plan                       # the plan and its planned time

Pointer-chase latency by footprint (L1, L2, HBM), streaming ld.global throughput vs occupancy,
vector width and loads in flight per thread, st.global and copy streams, and coalescing by lane
stride (the plan and schema: validation/gmem_plan.py; kernels: validation/cuda/micro_gmem.cu).
Each group runs in its own child process (validation/point_runner.py): a failing point is
recorded with its error and the run goes on. Every record: params, launch configuration,
achieved bytes/s and ns per access (or cycles/ns per dependent load), the SM clock (NVML median
over the point's window, and clock64/globaltimer inside the kernel), power_samples_summary,
provenance. Timing: one untimed launch, then 7 launches with CUDA events, median. Clocks are
never changed.
"""

from __future__ import annotations

import json
import pathlib
import time

import numpy as np

from validation import gmem_plan as gp
from validation import point_runner as pr
from validation import run_args as ra
from validation.micro_runner import compile_cached, cupy, module, sync
from validation.power.nvml_sampler import PowerSampler, power_limits
from validation.provenance import device_provenance

STEM = "micro_gmem"
_BUFS: dict = {}


def _nsm() -> int:
    return int(cupy().cuda.runtime.getDeviceProperties(0)["multiProcessorCount"])


def _fn(name: str):
    return module(STEM).get_function(name)


def _regs(fn) -> int | None:
    """Registers per thread of a loaded kernel (CU_FUNC_ATTRIBUTE_NUM_REGS = 4), None if unknown."""
    try:
        return int(cupy().cuda.driver.funcGetAttribute(4, fn.ptr))
    except Exception:  # noqa: BLE001  (older cupy: no driver binding; the record keeps None)
        return getattr(fn, "num_regs", None)


def _nvml_clock(summary: dict) -> float | None:
    return (summary.get("sm_mhz") or {}).get("median")


def _buffer(key: str, nbytes: int, seed: int):
    """A cached device buffer of random words (never zeros), uint32."""
    if _BUFS.get(key) is None or _BUFS[key].nbytes != nbytes:
        cp = cupy()
        _BUFS[key] = None
        cp.get_default_memory_pool().free_all_blocks()
        _BUFS[key] = cp.random.RandomState(seed).standard_normal(nbytes // 4, dtype=cp.float32).view(cp.uint32)
    return _BUFS[key]


# ---------------------------------------------------------------- chase
def _chain(fp: int, seed: int):
    """A buffer whose 128-B lines form one random cycle (each line's first word: the next line's
    address); returns (buffer, address of the first line)."""
    cp = cupy()
    nlines = fp // 128
    buf = cp.zeros(fp // 8, dtype=cp.uint64)
    perm = cp.random.RandomState(seed).permutation(nlines).astype(cp.uint64)
    base = cp.uint64(buf.data.ptr)
    buf[(perm * 16).astype(cp.int64)] = base + cp.roll(perm, -1) * cp.uint64(128)
    first = int(buf.data.ptr) + int(perm[0]) * 128
    del perm
    return buf, first


def chase_point(pt: dict) -> dict:
    """Dependent-load latency of one thread over a footprint (median of launches)."""
    cp = cupy()
    p = pt["params"]
    fp, steps = p["footprint_bytes"], p["steps"]
    fn = _fn(f"gm_chase_{p['cache_op']}")
    buf, first = _chain(fp, seed=fp % 1009 + 7)
    nlines = fp // 128
    warm0 = nlines if fp <= 64 * gp.MIB else 20000
    cyc, ns = [], []
    with PowerSampler(period_s=0.005) as ps:
        for r in range(p["launches"]):
            o = cp.zeros(3, dtype=cp.int64)
            fa = cp.asarray([first], dtype=cp.uint64)
            fn((1,), (32,), (fa, np.int32(warm0 if r == 0 else 256), np.int32(steps), o))
            sync(pt["name"])
            oo = cp.asnumpy(o)
            cyc.append(float(oo[0]) / steps)
            ns.append(float(oo[1]) / steps)
            first = int(oo[2])
    summ = ps.summary(launches=p["launches"])
    del buf
    c, n = float(np.median(cyc)), float(np.median(ns))
    return {"results": {"cycles_per_load": c, "ns_per_load": n, "runs_cycles": cyc, "runs_ns": ns,
                        "warm_steps_first_launch": warm0},
            "launch": {"grid": 1, "block": 32, "active_threads": 1, "regs_per_thread": _regs(fn)},
            "sm_clock": {"nvml_median_mhz": _nvml_clock(summ), "kernel_clock_mhz": c / n * 1e3 if n else None},
            "power_samples_summary": summ,
            "method": ("one thread, p = ld.global.<op>.u64 [p] over a random cyclic permutation of 128-B lines; "
                       "first launch walks the whole cycle untimed (footprints <= 64 MiB; 20000 steps above), later "
                       "launches 256 steps; random lines over large footprints include TLB misses")}


# ---------------------------------------------------------------- streams
def _overlap(stamps: np.ndarray) -> dict:
    """Per-SM residency from the CTA stamps (smid, clk0, clk1, gt0, gt1): CTAs per SM, the most
    CTAs of one SM running at once (globaltimer intervals), SMs used, kernel clock (MHz)."""
    sm = stamps[:, 0]
    per_sm, conc = {}, 0
    for s in np.unique(sm):
        iv = stamps[sm == s][:, 3:5]
        per_sm[int(s)] = len(iv)
        ev = sorted([(a, 1) for a in iv[:, 0]] + [(b, -1) for b in iv[:, 1]], key=lambda e: (e[0], e[1]))
        cur = 0
        for _, d in ev:
            cur += d
            conc = max(conc, cur)
    dt = np.maximum(stamps[:, 4] - stamps[:, 3], 1)
    clk = float(np.median((stamps[:, 2] - stamps[:, 1]) / dt * 1e3))
    return {"sms_used": len(per_sm), "ctas_per_sm_max": max(per_sm.values()), "ctas_per_sm_min": min(per_sm.values()),
            "max_concurrent_ctas_per_sm": conc, "kernel_clock_mhz": clk}


def _args(pt: dict, grid: int, thr: int):
    """(kernel args, bytes per launch, accesses per launch, extra result fields, check fn)."""
    cp = cupy()
    p, fam = pt["params"], pt["family"]
    fp, rounds = p["footprint_bytes"], p["rounds"]
    stamps = cp.zeros(grid * 6, dtype=cp.int64)
    if fam == "coalesce":
        lanes = fp // p["stride_bytes"]
        src = _buffer("src", fp, 1)
        sink = cp.zeros(grid * thr, dtype=cp.uint32)
        sector = lanes // 32 * p["sectors_per_request"] * 32 * rounds
        extra = {"useful_bytes_per_launch": lanes * 4 * rounds, "sector_bytes_per_launch": sector}
        return ((src, np.int64(lanes), np.int32(p["stride_bytes"] // 4), np.int32(rounds), sink, stamps),
                lanes * 4 * rounds, lanes * rounds, extra, stamps, None)
    n = fp // p["vec_bytes"]
    if fam == "read":
        src = _buffer("src", fp, 1)
        sink = cp.zeros(grid * thr, dtype=cp.uint32)
        return (src, np.int64(n), np.int32(rounds), sink, stamps), fp * rounds, n * rounds, {}, stamps, None
    if fam == "write":
        dst = _buffer("dst", fp, 2)
        return (dst, np.int64(n), np.int32(rounds), stamps), fp * rounds, n * rounds, {}, stamps, None
    src, dst = _buffer("src", fp, 1), _buffer("dst", fp, 2)
    return ((src, dst, np.int64(n), np.int32(rounds), stamps), 2 * fp * rounds, 2 * n * rounds, {}, stamps,
            lambda: bool(cp.array_equal(src, dst)))


def stream_point(pt: dict) -> dict:
    """Bandwidth of one streaming point: warm-up launch, LAUNCHES timed launches (CUDA events)."""
    cp = cupy()
    p = pt["params"]
    nsm = _nsm()
    thr, grid = p["threads_per_cta"], p["ctas_per_sm"] * nsm
    fn = _fn(p["kernel"])
    args, nbytes, acc, extra, stamps, check = _args(pt, grid, thr)
    fn((grid,), (thr,), args)
    sync(pt["name"] + " warm-up")
    evs = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(gp.LAUNCHES)]
    with PowerSampler(period_s=0.005) as ps:
        for e0, e1 in evs:
            e0.record()
            fn((grid,), (thr,), args)
            e1.record()
        sync(pt["name"])
    summ = ps.summary(launches=gp.LAUNCHES)
    ms = [cp.cuda.get_elapsed_time(e0, e1) for e0, e1 in evs]
    clk = _nvml_clock(summ)
    res = gp.stream_result(p, nbytes, ms, acc, nsm, clk)
    if pt["family"] == "coalesce":
        m = res["ms_median"] * 1e-3
        res.update(extra, useful_bytes_per_s=extra["useful_bytes_per_launch"] / m,
                   sector_bytes_per_s=extra["sector_bytes_per_launch"] / m)
    if check is not None:
        res["copy_equal_source"] = check()
        if not res["copy_equal_source"]:
            raise RuntimeError("copy: destination differs from source")
    st = cp.asnumpy(stamps).reshape(grid, 6)
    ov = _overlap(st)
    regs = _regs(fn)
    launch = {"grid": grid, "block": thr, "regs_per_thread": regs, "sms": nsm,
              "resident_ctas_per_sm_theoretical": gp.resident_ctas(thr, regs),
              **{k: v for k, v in ov.items() if k != "kernel_clock_mhz"}}
    return {"results": res, "launch": launch,
            "sm_clock": {"nvml_median_mhz": clk, "kernel_clock_mhz": ov["kernel_clock_mhz"]},
            "power_samples_summary": summ}


def run_point(pt: dict) -> dict:
    return chase_point(pt) if pt["family"] == "chase" else stream_point(pt)


def health() -> None:
    """Raise if the CUDA context is unusable (a fault poisons it)."""
    cp = cupy()
    x = cp.arange(4)
    sync("health")
    if int(x.sum()) != 6:
        raise RuntimeError("health check: wrong sum")


# ---------------------------------------------------------------- summary
def summary(jsonl: pathlib.Path) -> str:
    """Latencies, then the v16 read bandwidth (B/cycle/SM) and Little's-law bytes in flight per SM
    (at the chase latency of the same level) over warps/SM x U, then stores and coalescing."""
    recs = [json.loads(x) for x in jsonl.read_text().splitlines() if x.strip()]
    ok = [r for r in recs if not r.get("error")]
    lines = [f"{len(recs)} records, {len(recs) - len(ok)} with error/skipped"]
    lat = {}
    for r in ok:
        if r["family"] == "chase":
            res = r["results"]
            lines.append(f"{r['name']:<24} {res['cycles_per_load']:7.0f} cyc {res['ns_per_load']:7.0f} ns")
            lat[r["name"]] = res["ns_per_load"]
    lvl_lat = {"hbm": lat.get("chase_ca_1048576KiB"), "l2": lat.get("chase_cg_16384KiB")}
    for where in ("hbm", "l2"):
        lines.append(f"read {where}, vec 16 B: B/cyc/SM (inflight KiB/SM at {lvl_lat[where]} ns); rows warps/SM, cols U")
        for w in gp.WARPS_PER_SM:
            row = []
            for u in gp.READ_U:
                r = next((x for x in ok if x["name"] == f"read_{where}_w{w}_v16_u{u}"), None)
                if r is None:
                    row.append(f"{'-':>16}")
                    continue
                res = r["results"]
                inf = gp.inflight(res["bytes_per_s_per_sm"], lvl_lat[where]) / 1024 if lvl_lat[where] else float("nan")
                row.append(f"{res.get('bytes_per_cycle_per_sm', float('nan')):7.1f} ({inf:5.1f})")
            lines.append(f"  w{w:<3}" + " ".join(row))
    for r in ok:
        if r["family"] in ("write", "copy", "coalesce"):
            res = r["results"]
            lines.append(f"{r['name']:<24} {res['bytes_per_s'] / 1e12:6.3f} TB/s"
                         + (f" sectors {res['sector_bytes_per_s'] / 1e12:6.3f} TB/s" if "sector_bytes_per_s" in res else ""))
    return "\n".join(lines)


# ---------------------------------------------------------------- entry
def _provenance() -> dict:
    try:
        prov = device_provenance()
    except Exception as exc:  # noqa: BLE001
        prov = {"provenance_error": f"{type(exc).__name__}: {exc}"}
    prov["nvml"] = power_limits()
    return prov


def main(argv: list[str] | None = None) -> int:
    return runner_main(argv, STEM, __doc__, 300.0, gp, run_point, execute)


def execute(pts: list[dict], names: list[str], out: pathlib.Path, budget_s: float) -> int:
    return execute_points(STEM, gp.KIND, summary, pts, names, out, budget_s)


def runner_main(argv: list[str] | None, stem: str, doc: str, budget_s: float, plan_mod, run_point, execute) -> int:
    """The command line of the runner validation.<stem> (shared with micro_membw): a child runs its
    group's points; else --plan prints `plan_mod`'s plan, or `execute` runs it into --out."""
    a = ra.parser(stem, doc, budget_s, only="comma-separated groups (default: all)", children=True).parse_args(argv)
    pts = plan_mod.plan()
    if a.child:
        return ra.run_child(a, plan_mod.KIND, pts, run_point, health, pr)
    if ra.bad_budget(a):
        return 2
    pts, names, err = ra.select(pts, plan_mod.groups(pts), a.only)
    if err:
        return ra.fail(err)
    if a.plan:
        return ra.print_plan(pts, names, plan_mod.planned_seconds(pts), a.budget_s)
    if ra.missing_out(a, f"$OUT/{stem.removeprefix('micro_')}"):
        return 2
    return execute(pts, names, a.out, a.budget_s)


def execute_points(stem: str, kind: str, summarize, pts: list[dict], names: list[str], out: pathlib.Path,
                   budget_s: float) -> int:
    """Compile validation/cuda/<stem>.cu, run the points' groups in child processes into
    out/<stem without micro_>.jsonl, write provenance.json and the `summarize` table (summary.txt)."""
    t0 = time.time()
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / f"{stem.removeprefix('micro_')}.jsonl"
    if jsonl.exists():
        jsonl.unlink()
    stem_path, how = compile_cached(stem)
    print(f"compile {stem_path}: {how} ({time.time() - t0:.1f} s)", flush=True)
    prov = _provenance()
    prov_path = out / "provenance.json"
    prov_path.write_text(json.dumps(prov, default=str))
    pr.run_parent(f"validation.{stem}", kind, pts, names, jsonl, prov_path, prov, t0, budget_s)
    table = summarize(jsonl)
    (out / "summary.txt").write_text(table + "\n")
    print("\n" + table + f"\nwall {time.time() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
