"""Launch overhead, CTA dispatch / wave tail and L2 state at kernel start on the H100:

    python3 -m validation.micro_launch2 --out DIR            # DIR/launch2__<name>.json + summary.txt
    python3 -m validation.micro_launch2 --plan               # the benchmarks and their planned time
    python3 -m validation.micro_launch2 --out DIR --only empty,spin

Plan, stamp analysis and record fields: validation/launch2_plan.py; kernels:
validation/cuda/micro_launch2.cu. Timing: CUDA events; "graph" = N launches captured once as a
CUDA graph and the graph timed (per launch = batch / N: back to back without Python in between),
"stream" = N stream launches between two events, "single" = event, launch, event, synchronize on
an idle GPU; "*_event" stream modes put a one-CTA idle spin, then the L2-state preparation, then
the event-timed launch in the stream so Python never starves the GPU. One JSON record per
benchmark with provenance (validation/provenance.py); a failing benchmark is recorded with its
error and the run goes on. Whole run <= 120 s on an H100 (--budget-s). Clocks are never changed.
"""

from __future__ import annotations

import pathlib
import time

import numpy as np

from validation import launch2_plan as lp
from validation import run_args as ra
from validation.micro_runner import compile_cached, cupy, module, spread, sync
from validation.provenance import device_provenance, nvidia_smi_clocks, write_record

STEM = "micro_launch2"
_BUF: dict = {}


def _fn(name: str):
    return module(STEM).get_function(name)


def _nsm() -> int:
    return int(cupy().cuda.runtime.getDeviceProperties(0)["multiProcessorCount"])


def _buf(key: str, nbytes: int, random: bool):
    """A cached device buffer of float32 (random normal when `random`, never read as zeros)."""
    cp = cupy()
    b = _BUF.get(key)
    if b is None or b.nbytes != nbytes:
        _BUF[key] = None
        cp.get_default_memory_pool().free_all_blocks()
        n = nbytes // 4
        _BUF[key] = (cp.random.RandomState(len(key) + nbytes % 997).standard_normal(n, dtype=cp.float32)
                     if random else cp.empty(n, dtype=cp.float32))
    return _BUF[key]


# ---------------------------------------------------------------- timing helpers
def time_graph(calls: list, batches: int) -> list[float]:
    """Per-call us of `calls` captured once as a CUDA graph, launched `batches` times (events)."""
    cp = cupy()
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            for c in calls:
                c()
        finally:
            graph = stream.end_capture()
        graph.launch(stream)            # warm-up
        stream.synchronize()
        evs = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(batches)]
        for e0, e1 in evs:
            e0.record(stream)
            graph.launch(stream)
            e1.record(stream)
        stream.synchronize()
    return [cp.cuda.get_elapsed_time(e0, e1) * 1e3 / len(calls) for e0, e1 in evs]


def time_stream(call, n: int, batches: int) -> list[float]:
    """Per-launch us of `n` stream launches between two events, `batches` times."""
    cp = cupy()
    out = []
    for _ in range(batches):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        for _ in range(n):
            call()
        e1.record()
        e1.synchronize()
        out.append(cp.cuda.get_elapsed_time(e0, e1) * 1e3 / n)
    return out


def time_single(call, reps: int) -> list[float]:
    """us of one launch on an idle GPU: event, launch, event, synchronize; `reps` times."""
    cp = cupy()
    out = []
    for _ in range(reps):
        cp.cuda.Device().synchronize()
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        call()
        e1.record()
        e1.synchronize()
        out.append(cp.cuda.get_elapsed_time(e0, e1) * 1e3)
    return out


def time_prepared(prep, call, reps: int) -> list[float]:
    """us of `call` right after `prep` in the stream (behind a one-CTA idle spin), `reps` times."""
    cp = cupy()
    spin, stamps = _fn("ml_spin"), _buf("stamps", 6 * 8 * 16384, random=False)
    evs = []
    for _ in range(reps):
        spin((1,), (32,), (np.int64(lp.IDLE_SPIN_CYCLES), stamps))
        prep()
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        call()
        e1.record()
        evs.append((e0, e1))
    sync("prepared launches")
    return [cp.cuda.get_elapsed_time(e0, e1) * 1e3 for e0, e1 in evs]


# ---------------------------------------------------------------- benchmarks
def bench_empty(pt: dict) -> dict:
    """ml_empty over every grid at one block size: graph, stream and single-launch us."""
    fn, b = _fn("ml_empty"), pt["params"]["block"]
    res = {}
    for g in pt["params"]["grids"]:
        def call(g=g):
            fn((g,), (b,), ())
        for _ in range(5):
            call()
        sync(f"empty {g}x{b}")
        gr = time_graph([call] * lp.GRAPH_LAUNCHES, lp.GRAPH_BATCHES)
        st = time_stream(call, lp.STREAM_LAUNCHES, 3)
        si = time_single(call, lp.SINGLE_REPS)
        res[str(g)] = {"graph_us": float(np.median(gr)), "stream_us": float(np.median(st)),
                       "single_us": float(np.median(si)), "graph_runs_us": gr, "single": spread(si)}
    return {"results": res,
            "method": (f"ml_empty, {b} threads/CTA; graph_us: {lp.GRAPH_LAUNCHES} launches captured as one CUDA "
                       f"graph, timed {lp.GRAPH_BATCHES} times with events, median per launch; stream_us: "
                       f"{lp.STREAM_LAUNCHES} stream launches between two events, median of 3; single_us: event, "
                       f"launch, event on an idle GPU, median of {lp.SINGLE_REPS}"),
            "units": {"*_us": "microseconds per launch"}}


def bench_spin(pt: dict) -> dict:
    """ml_spin (every CTA spins spin_cycles) over SPIN_GRIDS: graph / single us and CTA stamps."""
    p = pt["params"]
    fn, thr, smem, c = _fn("ml_spin"), p["threads"], p["dynamic_smem_bytes"], p["spin_cycles"]
    if smem:
        fn.max_dynamic_shared_size_bytes = smem
    stamps = _buf("stamps", 6 * 8 * 16384, random=False).view(cupy().int64)
    res = {}
    for g in p["grids"]:
        def call(g=g):
            fn((g,), (thr,), (np.int64(c), stamps), shared_mem=smem)
        call()
        sync(f"spin {g}")
        gr = time_graph([call] * lp.SPIN_GRAPH_LAUNCHES, lp.SPIN_BATCHES)
        si = time_single(call, lp.SPIN_SINGLE_REPS)
        st = cupy().asnumpy(stamps[: 6 * g]).reshape(g, 6)
        res[str(g)] = {"graph_us": float(np.median(gr)), "single_us": float(np.median(si)),
                       "graph_runs_us": gr, "single": spread(si),
                       "stamps": lp.analyse_stamps(st, p["ctas_per_sm_allowed"])}
    return {"results": res,
            "method": (f"ml_spin: {thr} threads/CTA, {smem} B dynamic smem (<= {p['ctas_per_sm_allowed']} CTAs/SM), "
                       f"each thread spins until clock64 - (thread 0's clock64 at CTA start) >= {c}; graph_us: "
                       f"{lp.SPIN_GRAPH_LAUNCHES} launches per CUDA graph x {lp.SPIN_BATCHES}, median per launch; "
                       f"single_us: idle GPU, median of {lp.SPIN_SINGLE_REPS}; stamps of the last single launch "
                       "(analyse_stamps in validation/launch2_plan.py)"),
            "units": {"*_us": "microseconds per launch", "*_ns": "ns (globaltimer)", "*_cycles": "SM cycles (clock64)"}}


def _stream_calls(p: dict, nsm: int):
    """(launch on buffer set j, sets, grid) for one stream benchmark."""
    k, s, sets = p["kernel"], p["bytes"], p["rotate_sets"]
    n4 = s // 16
    grid = lp.stream_grid(s, nsm)
    fn = _fn(f"ml_{k}")
    dst = _buf("dst", sets * s, random=False) if k != "read" else None
    src = _buf("src", sets * s, random=True) if k != "store" else None
    sink = _buf("sink", grid * lp.STREAM_THREADS * 4, random=False)
    words = s // 4

    def call(j: int):
        if k == "store":
            args = (dst[j * words:(j + 1) * words], np.int64(n4), np.float32(1.5))
        elif k == "read":
            args = (src[j * words:(j + 1) * words], np.int64(n4), sink)
        else:
            args = (src[j * words:(j + 1) * words], dst[j * words:(j + 1) * words], np.int64(n4))
        fn((grid,), (lp.STREAM_THREADS,), args)
    return call, sets, grid


def _flushers(nsm: int):
    """(read FLUSH_BYTES of scratch, store FLUSH_BYTES of scratch)."""
    scratch = _buf("scratch", lp.FLUSH_BYTES, random=True)
    sink = _buf("fsink", 8 * nsm * lp.STREAM_THREADS * 4, random=False)
    n4, grid = lp.FLUSH_BYTES // 16, lp.stream_grid(lp.FLUSH_BYTES, nsm)
    rd, st = _fn("ml_read"), _fn("ml_store")

    def flush_read():
        rd((grid,), (lp.STREAM_THREADS,), (scratch, np.int64(n4), sink))

    def flush_dirty():
        st((grid,), (lp.STREAM_THREADS,), (scratch, np.int64(n4), np.float32(2.5)))
    return flush_read, flush_dirty


def bench_stream(pt: dict) -> dict:
    """One stream kernel over S bytes in the five L2 states of MODES (us per launch)."""
    p = pt["params"]
    nsm = _nsm()
    call, sets, grid = _stream_calls(p, nsm)
    flush_read, flush_dirty = _flushers(nsm)
    for j in range(min(sets, 4)):
        call(j)
    sync(pt["name"] + " warm-up")
    est = p["bytes_moved"] / lp.EST_BPS + lp.EST_LAUNCH_S
    n_same = lp.graph_launches(est)
    n_rot = lp.graph_launches(est, multiple=sets) if sets <= 256 else sets
    runs = {
        "same_graph": time_graph([lambda: call(0)] * n_same, lp.STREAM_BATCHES),
        "rotate_graph": time_graph([lambda j=j: call(j % sets) for j in range(n_rot)], lp.STREAM_BATCHES),
        "same_event": time_prepared(lambda: call(0), lambda: call(0), lp.EVENT_REPS),
        "clean_event": time_prepared(flush_read, lambda: call(0), lp.EVENT_REPS),
        "dirty_event": time_prepared(flush_dirty, lambda: call(0), lp.EVENT_REPS),
    }
    res = {m: {"us_median": float(np.median(v)), "runs_us": v,
               "bytes_per_s": p["bytes_moved"] / (float(np.median(v)) * 1e-6)} for m, v in runs.items()}
    res["graph_launches"] = {"same_graph": n_same, "rotate_graph": n_rot}
    return {"results": res, "launch": {"grid": grid, "block": lp.STREAM_THREADS, "sms": nsm},
            "method": (f"ml_{p['kernel']} over {p['bytes']} B (float4 grid-stride, {grid} CTAs x {lp.STREAM_THREADS}); "
                       "modes: see MODES in validation/launch2_plan.py; graph modes: median of "
                       f"{lp.STREAM_BATCHES} graph launches per launch; event modes: median of {lp.EVENT_REPS}"),
            "units": {"us_median": "microseconds per launch", "bytes_per_s": "bytes moved (read + written) / s"}}


BENCH = {"empty": bench_empty, "spin": bench_spin, "stream": bench_stream}


# ---------------------------------------------------------------- entry
def main(argv: list[str] | None = None) -> int:
    a = ra.parser("micro_launch2", __doc__, lp.BUDGET_S,
                  only="comma-separated groups: empty, spin, stream (default: all)").parse_args(argv)
    if ra.bad_budget(a):
        return 2
    pts, names, err = ra.select(lp.plan(), lp.groups(lp.plan()), a.only)
    if err:
        return ra.fail(err)
    if a.plan:
        return ra.print_plan(pts, names, lp.planned_seconds(pts), a.budget_s, noun="benchmarks", width=8)
    if ra.missing_out(a, "$OUT/launch2"):
        return 2
    return execute(pts, a.out, a.budget_s)


def execute(pts: list[dict], out: pathlib.Path, budget_s: float) -> int:
    t0 = time.time()
    out.mkdir(parents=True, exist_ok=True)
    stem, how = compile_cached(STEM)
    print(f"compile {stem}: {how} ({time.time() - t0:.1f} s)", flush=True)
    prov = device_provenance()
    recs = []
    for pt in pts:
        if time.time() - t0 > budget_s:
            print(f"{pt['name']}: skipped (budget {budget_s:.0f} s spent)", flush=True)
            continue
        t1 = time.time()
        rec = {"group": pt["group"], "name": pt["name"], "params": pt["params"], "error": None,
               "clocks_before": nvidia_smi_clocks()}
        try:
            rec.update(BENCH[pt["group"]](pt))
        except Exception as exc:  # noqa: BLE001  (recorded; the run goes on)
            rec["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        rec["seconds"] = round(time.time() - t1, 3)
        write_record(lp.KIND, pt["name"], rec, prov, out_dir=out)
        recs.append(rec)
        print(f"{pt['name']:<22} {rec['seconds']:6.2f} s" + (f"  ERROR {rec['error']}" if rec["error"] else ""),
              flush=True)
    table = lp.summary(recs)
    (out / "summary.txt").write_text(table + "\n")
    print("\n" + table + f"\nwall {time.time() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
