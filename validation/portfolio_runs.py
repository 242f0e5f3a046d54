"""Record the memory-bound portfolio's CUDA twins on the H100 (held-out records, issue 15 item 5):

    python3 -m validation.portfolio_runs --family vecadd|copy|tmacopy|all --out DIR --budget-s 300
    python3 -m validation.portfolio_runs --family rowsum|softmax|rowwise --out DIR --budget-s 300
    python3 -m validation.portfolio_runs --family attention --out DIR --budget-s 120
    python3 -m validation.portfolio_runs --family attention --debug-dump DIR   # staged dump (attention_debug.py)
    python3 -m validation.portfolio_runs --family all --plan          # the points and planned time

Points: validation/portfolio.py (kernels/cuda/vecadd.cu, copy.cu; 256 threads per CTA) and
validation/portfolio_tmacopy.py (kernels/cuda/tmacopy.cu: TMA load + TMA store, one warp per CTA,
tensor maps by cuTensorMapEncodeTiled, checked bit for bit against the input); `all` is these
three. validation/rowwise.py (kernels/cuda/rowsum.cu, softmax.cu; `rowwise` = both): checked within
the f32 error bounds of kernels/rowwise/reference.py (ex2/rcp.approx), time estimates from the bytes
the kernel accesses (softmax reads x thrice). validation/portfolio_attention.py (kernels/cuda/attention.cu,
one attention tile per CTA): checked within the bound of kernels/attention/reference.py, time
estimates from the FLOPs. Per point:
fresh random inputs (standard normal float32, never zeros), the output poisoned with NaN bits
(0xFFFFFFFF), one launch, then the output must equal cupy's a + b (or a) bit for bit and no
element may keep the poison; then timing: CUDA-graph batches of launches timed with CUDA events
after a warm-up, median per launch, inputs rotated over enough sets (>= 200 MB in all) that L2
(50 MB) keeps nothing useful between launches; where one set fits in L2, also `timing_hot` (the
same buffers every launch). NVML sampled over the timed batches (power_samples_summary, SM clock
median). One JSONL (DIR/portfolio.jsonl) with provenance; each family runs in a child process
(validation/point_runner.py): a failing point is recorded and the run goes on. Nothing is
simulated here; clocks are never changed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import time

import numpy as np

from validation import point_runner as pr
from validation import run_args as ra
from validation import portfolio as pf
from validation import attention_debug as adbg
from validation import portfolio_attention as pat
from validation import portfolio_tmacopy as ptc
from validation import rowwise as rw
from validation.harness import encode_tensor_map
from validation.micro_runner import REPO, cupy, spread, sync
from validation.power.nvml_sampler import PowerSampler, power_limits
from validation.provenance import device_provenance

KIND = "portfolio"
NVCC = ["nvcc", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", "-O3"]
BUILD = pathlib.Path(os.environ.get("HOPSIM_PORTFOLIO_BUILD", REPO / "build" / "portfolio"))
ROTATE_BYTES = 200 << 20      # rotated sets hold at least this many bytes (4x the 50 MB L2)
EST_BPS = 2.0e12              # conservative bandwidth for the plan's time estimates
GEN_BPS = 30e9                # conservative random-fill + check rate for the estimates
TIMED_S = 0.1                 # GPU time per timing mode
COMPILE_S, CHILD_SETUP_S, POINT_OVERHEAD_S = 30.0, 5.0, 0.2
REQUIRED = ("kind", "group", "family", "name", "params", "error", "provenance")
RESULTS = ("ms_median", "bytes_per_s", "bytes_moved")
FAMILIES = (*pf.FAMILIES, ptc.FAMILY, *rw.FAMILIES, pat.FAMILY)
GROUPS = ("all", "rowwise", "vecadd_copy")
"""--family words that name several families: all = vecadd, copy, tmacopy; rowwise = rowsum, softmax;
vecadd_copy = vecadd, copy (a size set's own records, apart from tmacopy's)."""


# ---------------------------------------------------------------- plan (pure)
def n_sets(set_bytes: int) -> int:
    """Input sets to rotate over: enough that ROTATE_BYTES pass between two uses of a set."""
    return 1 if set_bytes >= ROTATE_BYTES else min(64, max(2, math.ceil(ROTATE_BYTES / set_bytes)))


def batching(est_launch_s: float, sets: int) -> tuple[int, int]:
    """(launches per CUDA-graph batch, batches): ~5 ms per batch, a multiple of the set count,
    ~TIMED_S in all, at least 5 batches."""
    per = max(1, min(100, int(0.005 / est_launch_s)))
    per = max(sets, per // sets * sets)
    batches = max(5, min(30, int(TIMED_S / (est_launch_s * per))))
    return per, batches


def family_points(family: str) -> list[dict]:
    """The points of `family` (one of FAMILIES) or of every family ('all')."""
    if family == "all":
        return pf.points() + ptc.points()
    if family == "vecadd_copy":
        return pf.points()
    if family in (*rw.FAMILIES, "rowwise"):
        return rw.points(family)
    if family == pat.FAMILY:
        return pat.points()
    return ptc.points() if family == ptc.FAMILY else pf.points(family)


def plan(family: str) -> list[dict]:
    """point_runner points (group = family) with time estimates."""
    out = []
    for p in family_points(family):
        sets = n_sets(p["bytes_moved"])
        est_launch = _est_launch_s(p)
        timed = 2 * (TIMED_S + est_launch * 5)
        setup = (sets * p["bytes_moved"] + 2 * p["bytes_moved"]) / GEN_BPS
        out.append({"group": p["family"], "family": p["family"], "name": p["name"], "params": p,
                    "est_s": timed + setup + POINT_OVERHEAD_S})
    return out


def _est_launch_s(p: dict) -> float:
    """Estimated seconds per launch: FLOPs for attention, bytes accessed for the others."""
    if p["family"] == pat.FAMILY:
        return pat.est_launch_s(p)
    return p.get("bytes_accessed", p["bytes_moved"]) / EST_BPS


def planned_seconds(points: list[dict]) -> float:
    return COMPILE_S + CHILD_SETUP_S * len({p["group"] for p in points}) + sum(p["est_s"] for p in points)


def check_record(rec) -> str | None:
    """None for a well-formed portfolio record, else one line naming the field."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    for k in REQUIRED:
        if k not in rec:
            return f"missing field {k!r}; a {KIND} record has {', '.join(REQUIRED)}"
    if rec["kind"] != KIND:
        return f"kind={rec['kind']!r}; valid: {KIND!r}"
    if rec["error"] is not None:
        return None
    for k in ("check", "timing", "results", "launch", "sm_clock", "power_samples_summary"):
        if k not in rec:
            return f"missing field {k!r} in a record without error"
    if rec["check"].get("passed") is not True:
        return "check.passed is not true in a record without error"
    for k in RESULTS:
        if k not in rec["results"]:
            return f"results lacks {k!r}"
    return None


# ---------------------------------------------------------------- build
def cubin(family: str, defines: tuple[str, ...] = ()) -> pathlib.Path:
    """nvcc kernels/cuda/<family>.cu (with -D`defines`) unless cached (by source and command hash)."""
    src = REPO / "kernels" / "cuda" / f"{family}.cu"
    text = src.read_bytes()
    headers = b"".join((src.parent / h.decode()).read_bytes() for h in re.findall(rb'#include "([\w.]+)"', text)
                       if (src.parent / h.decode()).exists())
    cmd = [*NVCC, *(f"-D{x}" for x in defines)]
    h = hashlib.sha256(text + headers + " ".join(cmd).encode()).hexdigest()[:12]
    out = BUILD / f"{family}_{h}.cubin"
    if not out.exists():
        BUILD.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".tmp{os.getpid()}")
        r = subprocess.run([*cmd, "-o", str(tmp), str(src)], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"nvcc failed for {src.name}:\n{r.stderr[-3000:]}")
        tmp.replace(out)
    return out


_MODS: dict = {}


def kernel(family: str, name: str):
    if family not in _MODS:
        _MODS[family] = cupy().RawModule(path=str(cubin(family)))
    return _MODS[family].get_function(name)


# ---------------------------------------------------------------- one point (GPU)
def _make_set(p: dict, rs):
    cp = cupy()
    n = p["n_floats"]
    ins = [rs.standard_normal(n, dtype=cp.float32) for _ in range(2 if p["family"] == "vecadd" else 1)]
    return ins, cp.empty(n, dtype=cp.float32)


def _args(p: dict, s):
    ins, out = s
    return (*ins, out, np.int32(p["n_elements"]))


def _check(p: dict, fn, g: int, s) -> dict:
    """Poison, launch once, compare bit for bit with cupy's result; raises on a mismatch."""
    cp = cupy()
    ins, out = s
    out.view(cp.uint32).fill(0xFFFFFFFF)
    fn((g,), (pf.THREADS,), _args(p, s))
    sync(p["name"] + " check launch")
    ref = ins[0] + ins[1] if p["family"] == "vecadd" else ins[0]
    bad = int(cp.count_nonzero(out.view(cp.uint32) != ref.view(cp.uint32)))
    unwritten = int(cp.count_nonzero(out.view(cp.uint32) == 0xFFFFFFFF))
    del ref
    res = {"passed": bad == 0 and unwritten == 0, "elements": p["n_floats"], "mismatched": bad,
           "unwritten": unwritten, "reference": "cupy a + b (float32)" if p["family"] == "vecadd" else "a",
           "inputs": "standard normal float32, fresh per point", "poison": "0xFFFFFFFF (NaN)"}
    if not res["passed"]:
        raise RuntimeError(f"check failed: {bad} of {p['n_floats']} elements differ, {unwritten} unwritten")
    return res


def _bench(p: dict, fn, g: int, sets: list, per: int, batches: int, sampler=None) -> dict:
    """Per-launch times (ms) of CUDA-graph batches of `per` launches rotating over `sets`."""
    launches = [lambda a=_args(p, s): fn((g,), (pf.THREADS,), a) for s in sets]
    return bench_launches(p["name"], launches, per, batches, sampler)


def bench_launches(name: str, launches: list, per: int, batches: int, sampler=None) -> dict:
    """Per-launch times (ms) of CUDA-graph batches of `per` launches rotating over `launches`
    (no-argument callables, one per input set)."""
    cp = cupy()
    for j in range(max(2, len(launches))):      # warm-up: module, TLB, every set once
        launches[j % len(launches)]()
    sync(name + " warm-up")
    stream = cp.cuda.Stream(non_blocking=True)
    graph, method = None, "cuda-graph batches, CUDA events"
    try:
        with stream:
            stream.begin_capture()
            try:
                for j in range(per):
                    launches[j % len(launches)]()
            finally:
                graph = stream.end_capture()
        graph.launch(stream)
        stream.synchronize()
    except Exception:  # noqa: BLE001  (capture unsupported: launches one by one, as harness.py)
        graph, method = None, "stream launches, CUDA events"
        cp.cuda.Device().synchronize()

    def batch():
        if graph is not None:
            graph.launch(stream)
            return
        with stream:
            for j in range(per):
                launches[j % len(launches)]()

    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    times = []
    if sampler is not None:
        sampler.start()
    for _ in range(batches):
        ev0.record(stream)
        batch()
        ev1.record(stream)
        ev1.synchronize()
        times.append(cp.cuda.get_elapsed_time(ev0, ev1) / per)
    if sampler is not None:
        sampler.stop()
    sync(name + " timed")
    return {**{f"ms_{k}": v for k, v in spread(times).items() if k != "n"}, "batches": batches,
            "launches_per_batch": per, "input_sets": len(launches), "method": method,
            "ms_per_launch_all": times}


def run_point(pt: dict) -> dict:
    if pt["params"]["family"] == ptc.FAMILY:
        return run_tmacopy_point(pt)
    if pt["params"]["family"] in rw.FAMILIES:
        return run_rowwise_point(pt)
    if pt["params"]["family"] == pat.FAMILY:
        return run_attention_point(pt)
    cp = cupy()
    p = pt["params"]
    props = cp.cuda.runtime.getDeviceProperties(0)
    nsm, l2 = int(props["multiProcessorCount"]), int(props["l2CacheSize"])
    fn = kernel(p["family"], p["kernel"])
    g = pf.grid(p["variant"], p["n_floats"], nsm)
    seed = 1000 + [x["name"] for x in pf.points()].index(p["name"])   # fresh, distinct per point
    rs = cp.random.RandomState(seed)
    k = n_sets(p["bytes_moved"])
    sets = [_make_set(p, rs) for _ in range(k)]
    check = _check(p, fn, g, sets[0])
    per, batches = batching(p["bytes_moved"] / EST_BPS, k)
    ps = PowerSampler(period_s=0.01)
    timing = _bench(p, fn, g, sets, per, batches, ps)
    summ = ps.summary(launches=per * batches)
    rec = {"check": check, "timing": timing, "seed": seed}
    if p["bytes_moved"] <= 0.8 * l2:
        hp, hb = batching(p["bytes_moved"] / EST_BPS / 4, 1)
        rec["timing_hot"] = _bench(p, fn, g, sets[:1], hp, hb)
    del sets
    cp.get_default_memory_pool().free_all_blocks()
    clk = (summ.get("sm_mhz") or {}).get("median")
    ms = timing["ms_median"]
    rec["results"] = {"ms_median": ms, "bytes_moved": p["bytes_moved"], "bytes_per_s": p["bytes_moved"] / (ms * 1e-3),
                      "ms_hot_median": rec.get("timing_hot", {}).get("ms_median")}
    try:
        regs = int(cp.cuda.driver.funcGetAttribute(4, fn.ptr))   # CU_FUNC_ATTRIBUTE_NUM_REGS
    except Exception:  # noqa: BLE001
        regs = None
    rec["launch"] = {"grid": g, "block": pf.THREADS, "sms": nsm, "l2_bytes": l2, "regs_per_thread": regs,
                     "n_arg": p["n_elements"]}
    rec["sm_clock"] = {"nvml_median_mhz": clk}
    rec["power_samples_summary"] = summ
    return rec


def run_tmacopy_point(pt: dict) -> dict:
    """One TMA copy point (validation/portfolio_tmacopy.py): check, then time as the others."""
    cp = cupy()
    p = pt["params"]
    props = cp.cuda.runtime.getDeviceProperties(0)
    nsm, l2 = int(props["multiProcessorCount"]), int(props["l2CacheSize"])
    fn = kernel(ptc.FAMILY, ptc.KERNEL)
    fn.max_dynamic_shared_size_bytes = p["dynamic_smem"]
    g = ptc.launch_grid(p, nsm)
    seed = 2000 + [x["name"] for x in ptc.points()].index(p["name"])
    rs = cp.random.RandomState(seed)
    k = n_sets(p["bytes_moved"])
    sets = [ptc.make_set(p, rs, cp) for _ in range(k)]
    launches = [ptc.launcher(fn, p, g, s, encode_tensor_map) for s in sets]
    check = ptc.check(p, launches[0], sets[0], cp, sync)
    per, batches = batching(p["bytes_moved"] / EST_BPS, k)
    ps = PowerSampler(period_s=0.01)
    timing = bench_launches(p["name"], launches, per, batches, ps)
    summ = ps.summary(launches=per * batches)
    rec = {"check": check, "timing": timing, "seed": seed}
    if p["bytes_moved"] <= 0.8 * l2:
        hp, hb = batching(p["bytes_moved"] / EST_BPS / 4, 1)
        rec["timing_hot"] = bench_launches(p["name"], launches[:1], hp, hb)
    del sets, launches
    cp.get_default_memory_pool().free_all_blocks()
    ms = timing["ms_median"]
    rec["results"] = {"ms_median": ms, "bytes_moved": p["bytes_moved"], "bytes_per_s": p["bytes_moved"] / (ms * 1e-3),
                      "ms_hot_median": rec.get("timing_hot", {}).get("ms_median")}
    rec["launch"] = {"grid": g[0] * g[1], "grid_xy": list(g), "block": ptc.THREADS, "sms": nsm, "l2_bytes": l2, "dynamic_smem": p["dynamic_smem"],
                     **_func_attributes(fn), "tiles": p["tiles"]}
    rec["sm_clock"] = {"nvml_median_mhz": (summ.get("sm_mhz") or {}).get("median")}
    rec["power_samples_summary"] = summ
    return rec


def run_rowwise_point(pt: dict) -> dict:
    """One row-wise point (validation/rowwise.py): check within the bounds, then time as the others."""
    cp = cupy()
    p = pt["params"]
    props = cp.cuda.runtime.getDeviceProperties(0)
    nsm, l2 = int(props["multiProcessorCount"]), int(props["l2CacheSize"])
    fn = kernel(p["family"], p["kernel"])
    g = rw.grid(p["mapping"], p["rows"])
    seed = 3000 + [x["name"] for x in rw.points()].index(p["name"])
    rs = cp.random.RandomState(seed)
    k = n_sets(p["bytes_moved"])
    sets = [rw.make_set(p, rs, cp) for _ in range(k)]
    launches = [rw.launcher(fn, p, g, s) for s in sets]
    check = rw.check(p, launches[0], sets[0], cp, sync)
    est = p["bytes_accessed"] / EST_BPS
    per, batches = batching(est, k)
    ps = PowerSampler(period_s=0.01)
    timing = bench_launches(p["name"], launches, per, batches, ps)
    summ = ps.summary(launches=per * batches)
    rec = {"check": check, "timing": timing, "seed": seed}
    if p["bytes_moved"] <= 0.8 * l2:
        hp, hb = batching(est / 4, 1)
        rec["timing_hot"] = bench_launches(p["name"], launches[:1], hp, hb)
    del sets, launches
    cp.get_default_memory_pool().free_all_blocks()
    ms = timing["ms_median"]
    rec["results"] = {"ms_median": ms, "bytes_moved": p["bytes_moved"], "bytes_per_s": p["bytes_moved"] / (ms * 1e-3),
                      "bytes_accessed": p["bytes_accessed"], "ms_hot_median": rec.get("timing_hot", {}).get("ms_median")}
    rec["launch"] = {"grid": g, "block": p["threads_per_cta"], "sms": nsm, "l2_bytes": l2, **_func_attributes(fn),
                     "rows_arg": p["rows"], "cols_arg": p["cols"]}
    rec["sm_clock"] = {"nvml_median_mhz": (summ.get("sm_mhz") or {}).get("median")}
    rec["power_samples_summary"] = summ
    if not check["passed"]:   # timed anyway; the error keeps it out of the comparison
        rec["error"] = (f"check failed: worst error / bound {check['worst_error_over_bound']:.3g}, "
                        f"{check['unwritten']} unwritten")
    return rec


def run_attention_point(pt: dict) -> dict:
    """One attention point (validation/portfolio_attention.py): check within the bound, then time as
    the others (CUDA-graph batches, inputs rotated over enough sets; `timing_hot`: one set)."""
    cp = cupy()
    p = pt["params"]
    props = cp.cuda.runtime.getDeviceProperties(0)
    nsm, l2 = int(props["multiProcessorCount"]), int(props["l2CacheSize"])
    fn = kernel(pat.FAMILY, p["kernel"])
    fn.max_dynamic_shared_size_bytes = p["dynamic_smem"]
    seed = 4000 + [x["name"] for x in pat.points()].index(p["name"])
    rs = cp.random.RandomState(seed)
    k = n_sets(p["bytes_moved"])
    sets = [pat.make_set(p, rs, cp) for _ in range(k)]
    launches = [pat.launcher(fn, p, s, encode_tensor_map) for s in sets]
    check = pat.check(p, launches[0], sets[0], cp, sync)
    est = pat.est_launch_s(p)
    per, batches = batching(est, k)
    ps = PowerSampler(period_s=0.01)
    timing = bench_launches(p["name"], launches, per, batches, ps)
    summ = ps.summary(launches=per * batches)
    rec = {"check": check, "timing": timing, "seed": seed}
    if p["bytes_moved"] <= 0.8 * l2:
        hp, hb = batching(est, 1)
        rec["timing_hot"] = bench_launches(p["name"], launches[:1], hp, hb)
    del sets, launches
    cp.get_default_memory_pool().free_all_blocks()
    ms = timing["ms_median"]
    rec["results"] = {"ms_median": ms, "bytes_moved": p["bytes_moved"], "bytes_per_s": p["bytes_moved"] / (ms * 1e-3),
                      "flops": p["flops"], "tflops": p["flops"] / (ms * 1e-3) / 1e12,
                      "ms_hot_median": rec.get("timing_hot", {}).get("ms_median")}
    rec["launch"] = {"grid": p["q_tiles"], "block": pat.THREADS, "sms": nsm, "l2_bytes": l2,
                     "dynamic_smem": p["dynamic_smem"], **_func_attributes(fn), "seq_arg": p["seq"],
                     "stages_arg": p["stages"], "c_arg": p["c"]}
    rec["sm_clock"] = {"nvml_median_mhz": (summ.get("sm_mhz") or {}).get("median")}
    rec["power_samples_summary"] = summ
    if not check["passed"]:   # timed anyway; the error keeps it out of the comparison
        rec["error"] = (f"check failed: {check['outside_bound']} elements outside the bound (worst error / bound "
                        f"{check['worst_error_over_bound']:.3g}), {check['unwritten']} unwritten")
    return rec


def _func_attributes(fn) -> dict:
    """ptxas' registers per thread and static shared bytes of a loaded kernel (None if unknown)."""
    cp = cupy()
    out = {}
    for key, attr in (("regs_per_thread", 4), ("static_smem", 1)):   # CU_FUNC_ATTRIBUTE_NUM_REGS, SHARED_SIZE_BYTES
        try:
            out[key] = int(cp.cuda.driver.funcGetAttribute(attr, fn.ptr))
        except Exception:  # noqa: BLE001
            out[key] = None
    return out


def health() -> None:
    cp = cupy()
    x = cp.arange(4)
    sync("health")
    if int(x.sum()) != 6:
        raise RuntimeError("health check: wrong sum")


# ---------------------------------------------------------------- entry
def table(jsonl: pathlib.Path) -> str:
    """One line per point: name, grid, ms (rotated), TB/s, ms hot, SM MHz, or the error."""
    lines = ["name | grid | ms per launch (rotated inputs) | TB/s | ms (same buffers) | SM MHz (NVML median)"]
    for x in jsonl.read_text().splitlines():
        r = json.loads(x)
        if r.get("error"):
            lines.append(f"{r['name']:<26} ERROR {' '.join(str(r['error']).split())[:90]}")
            continue
        res = r["results"]
        hot = res.get("ms_hot_median")
        clk = r["sm_clock"].get("nvml_median_mhz")
        lines.append(f"{r['name']:<26} {r['launch']['grid']:>8} {res['ms_median']:9.4f} "
                     f"{res['bytes_per_s'] / 1e12:6.3f} {'-' if hot is None else f'{hot:9.4f}':>9} "
                     f"{'-' if clk is None else f'{clk:.0f}'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = ra.parser("portfolio_runs", __doc__, 300.0, children=True,
                   plan_help="print the points and planned time; run nothing")
    ap.add_argument("--family", default="all", help="vecadd, copy, tmacopy, rowsum, softmax, attention, all "
                    "(= vecadd + copy + tmacopy), vecadd_copy or rowwise (= rowsum + softmax)")
    ap.add_argument("--debug-dump", type=pathlib.Path, metavar="DIR", help="attention only: build with "
                    "-DATTN_DEBUG, run one small point per kernel, compare CTA 0's staged dump with numpy "
                    "(validation/attention_debug.py); nothing timed")
    ap.add_argument("--set", default=None, help="held-out set: heldout1 (default), heldout2 .. "
                    "heldout5 (validation/portfolio.py SETS: vecadd/copy sizes; rowwise.py, portfolio_tmacopy.py "
                    "and portfolio_attention.py PLANS: their plan of that name, else heldout1's; children inherit it through "
                    "$HOPSIM_PORTFOLIO_SET)")
    a = ap.parse_args(argv)
    if a.set is not None:
        if a.set not in pf.SETS:
            print(f"--set: {a.set!r} is not valid; give one of {', '.join(pf.SETS)}", file=sys.stderr)
            return 2
        os.environ[pf.SET_ENV] = a.set
    if a.family not in (*FAMILIES, *GROUPS):
        print(f"--family: {a.family!r} is not valid; give one of {', '.join((*FAMILIES, *GROUPS))}", file=sys.stderr)
        return 2
    if a.debug_dump is not None:
        if a.family != pat.FAMILY:
            print(f"--debug-dump: only with --family {pat.FAMILY} (got --family {a.family})", file=sys.stderr)
            return 2
        mod = cupy().RawModule(path=str(cubin(pat.FAMILY, ("ATTN_DEBUG",))))
        return adbg.run(a.debug_dump, mod.get_function, cupy(), encode_tensor_map, sync)
    if a.child:
        return ra.run_child(a, KIND, plan(a.child), run_point, health, pr)
    if ra.bad_budget(a):
        return 2
    pts = plan(a.family)
    if a.plan:
        for p in pts:
            q = p["params"]
            print(f"{p['name']:<26} grid {q['grid_132sm']:>8} x {q['threads_per_cta']}  {p['est_s']:5.2f} s")
        print(f"planned {planned_seconds(pts):.0f} s of {a.budget_s:.0f} s budget ({len(pts)} points)")
        return 0
    if ra.missing_out(a, "$OUT/portfolio"):
        return 2
    return execute(pts, a.out, a.budget_s)


def execute(pts: list[dict], out: pathlib.Path, budget_s: float) -> int:
    t0 = time.time()
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "portfolio.jsonl"
    if jsonl.exists():
        jsonl.unlink()
    fams = list(dict.fromkeys(p["group"] for p in pts))
    for f in fams:
        print(f"compile {cubin(f).name} ({time.time() - t0:.1f} s)", flush=True)
    try:
        prov = device_provenance()
    except Exception as exc:  # noqa: BLE001
        prov = {"provenance_error": f"{type(exc).__name__}: {exc}"}
    prov["nvml"] = power_limits()
    prov["nvcc_command"] = " ".join(NVCC)
    prov_path = out / "provenance.json"
    prov_path.write_text(json.dumps(prov, default=str))
    pr.run_parent("validation.portfolio_runs", KIND, pts, fams, jsonl, prov_path, prov, t0, budget_s)
    t = table(jsonl)
    (out / "summary.txt").write_text(t + "\n")
    print("\n" + t + f"\nwall {time.time() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
