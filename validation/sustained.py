"""Sustained timing: what a benchmark loop sees once the H100 sits at its power cap (issue 13).

The short batches of `harness.time_gemm` (a fraction of a second) end before the board's power
reading has caught up (it averages over ~0.5-1 s) and before the SM clock has settled (it falls
within ~0.5 s of a compute-bound load, docs/hopper-facts.md's table). Here the kernel runs as CUDA-graph
batches back to back for `seconds` of GPU time, with the NVML sampler over the whole window; each
batch is timed with events, and its end is placed on the host clock (time.perf_counter, the
sampler's clock) by anchoring the first event: host time = anchor + elapsed(first event, event).
The summary is taken over the last `steady_s` seconds (batches that lie wholly inside it, NVML
samples inside it): median and mean time per launch, time-weighted SM clock, power (the averaged
NVML reading, its average/instant fields, and the energy counter's derivative), energy per
launch, clock-event reasons; the whole trajectory is kept (per batch: end time, ms per launch).

`sustained_summary` and `plan_batch` are pure (no GPU) and tested on synthetic series; only
`sustain_loop` touches CUDA (cupy imported inside: the optional heavy dependency).
"""

from __future__ import annotations

import statistics
import time

from validation.power.stats import energy_from_counter, summarize, window

#: GPU time of one batch (a CUDA-graph replay) the planner aims at: long enough that the replay's
#: host cost (~10-20 us) is negligible, short enough that a 1.5 s steady window holds >= ~50 batches.
BATCH_TARGET_S = 0.02
#: batches kept in flight ahead of the host (the host waits on the event `DEPTH` batches back, so
#: the GPU never idles between batches).
DEPTH = 3


def plan_batch(est_launch_s: float, n_sets: int, target_s: float = BATCH_TARGET_S,
               max_launches: int = 512) -> int:
    """Launches per batch: about target_s of GPU time, a multiple of n_sets (so that every replay
    walks all input sets and no launch meets its predecessor's inputs in L2), at least n_sets."""
    n_sets = max(1, int(n_sets))
    reps = int(target_s / (est_launch_s * n_sets)) if est_launch_s > 0 else 1
    reps = max(1, min(reps, max(1, max_launches // n_sets)))
    return reps * n_sets


def _steady_batches(starts: list[float], ends: list[float], steady_s: float) -> list[int]:
    """Indices of the batches wholly inside the last steady_s seconds of the window."""
    t_end = ends[-1]
    # 1 ns of slack: host timestamps near 1e4 s (perf_counter) carry ~4e-12 s of float rounding,
    # so a batch starting exactly steady_s before the end must not fall out by an ulp
    return [i for i, s in enumerate(starts) if s >= t_end - steady_s - 1e-9]


def _rate_stats(idx: list[int], ms: list[float], per_batch: int) -> dict:
    """Median and mean (total time / launches) per-launch time over the batches `idx`."""
    vals = [ms[i] for i in idx]
    return {"time_ms": statistics.median(vals), "time_ms_mean": statistics.fmean(vals),
            "time_ms_min": min(vals), "time_ms_max": max(vals),
            "batches": len(vals), "launches": len(vals) * per_batch}


def sustained_summary(batch_end_s: list[float], batch_ms: list[float], per_batch: int,
                      steady_s: float, samples: list[dict] | None = None,
                      flops: int | None = None) -> dict:
    """Summary of one sustained window.

    batch_end_s: each batch's end on the host clock (s, the samples' clock); batch_ms: each
    batch's time per launch (ms); every batch holds per_batch launches, back to back, so a batch
    starts at its end minus per_batch x ms. The steady window is [end - steady_s, end] where end is
    the last batch's end; its rate statistics use the batches wholly inside, its NVML statistics
    the samples inside. drift_pct: the steady window's second half's mean time per launch over
    its first half's, minus 1 (near 0 when the window really is steady)."""
    if not batch_end_s or len(batch_end_s) != len(batch_ms):
        raise ValueError("sustained_summary: need one end time per batch time (got "
                         f"{len(batch_end_s)} and {len(batch_ms)})")
    starts = [e - m * per_batch / 1e3 for e, m in zip(batch_end_s, batch_ms)]
    t_end = batch_end_s[-1]
    idx = _steady_batches(starts, batch_end_s, steady_s) or [len(batch_ms) - 1]
    out = {"window_s": t_end - starts[0], "steady_s": steady_s,
           "steady_from_s": starts[idx[0]] - starts[0], "launches_per_batch": per_batch,
           "total_batches": len(batch_ms), "total_launches": len(batch_ms) * per_batch}
    out.update(_rate_stats(idx, batch_ms, per_batch))
    half = (starts[idx[0]] + t_end) / 2
    first = [i for i in idx if batch_end_s[i] <= half]
    second = [i for i in idx if starts[i] >= half]
    if first and second:
        m1 = statistics.fmean(batch_ms[i] for i in first)
        m2 = statistics.fmean(batch_ms[i] for i in second)
        out["drift_pct"] = 100.0 * (m2 / m1 - 1.0)
    out["first_batch_time_ms"] = batch_ms[0]
    if flops:
        out["tflops"] = flops / (out["time_ms"] * 1e-3) / 1e12
    if samples is not None:
        out.update(steady_power(samples, starts[idx[0]], t_end, out["time_ms_mean"]))
    return out


def steady_power(samples: list[dict], t0: float, t1: float, time_ms_mean: float) -> dict:
    """NVML statistics over [t0, t1]: the time-weighted SM clock, the three power readings, the
    energy counter's mean power (its derivative over the window), energy per launch = that power
    x the mean time per launch (W x ms = mJ), reasons; plus the full stats.summarize block.
    Readings hold until the next sample (zero-order hold), so the last sample before t0 is carried
    to t0; the energy counter uses only reads inside the window (its value at t0 is unknown)."""
    inside = window(samples, t0, t1)
    before = [s for s in samples if s["t"] < t0]
    held = ([{**before[-1], "t": t0}] if before else []) + inside
    summ = summarize(held, t_end=t1)
    energy = energy_from_counter(inside)
    summ.pop("energy", None)
    if energy is not None:
        summ["energy"] = energy
    get = lambda key, stat="tw_mean": (summ.get(key) or {}).get(stat)  # noqa: E731
    counter_w = None if energy is None else energy["mean_power_w"]
    return {
        "sm_clock_mhz_tw": get("sm_mhz"), "sm_clock_mhz_median": get("sm_mhz", "median"),
        "sm_clock_mhz_min": get("sm_mhz", "min"), "sm_clock_mhz_max": get("sm_mhz", "max"),
        "mem_clock_mhz_tw": get("mem_mhz"),
        "power_w_nvml_tw": get("power_w"), "power_w_average_field_tw": get("power_average_w"),
        "power_w_instant_tw": get("power_instant_w"), "power_w_counter": counter_w,
        "energy_per_launch_mj": None if counter_w is None else counter_w * time_ms_mean,
        "temp_c_tw": get("temp_c"), "reasons": summ.get("reasons", {}),
        "steady_power_samples_summary": summ,
    }


def trajectory(batch_end_s: list[float], batch_ms: list[float], t0: float) -> dict:
    """Compact per-batch series: end time relative to t0 (s, 0.1 ms resolution), ms per launch
    (5 significant digits)."""
    return {"t_end_s": [round(t - t0, 4) for t in batch_end_s],
            "ms_per_launch": [float(f"{m:.5g}") for m in batch_ms]}


def _capture(stream, run_one, per_batch: int):
    """A CUDA graph of per_batch launches (inputs j % n rotated by run_one), or None."""
    try:
        with stream:
            stream.begin_capture()
            try:
                for j in range(per_batch):
                    run_one(j)
            finally:
                graph = stream.end_capture()
        graph.launch(stream)
        stream.synchronize()
        return graph
    except Exception:  # noqa: BLE001  (capture unsupported here: the caller falls back)
        import cupy  # noqa: PLC0415

        cupy.cuda.Device().synchronize()
        return None


def _probe(run_one, n_sets: int, warmup: int) -> float:
    """Warm up (max(warmup, n_sets) launches), then time 2 x n_sets launches with events: the
    estimated seconds per launch the batch planner uses."""
    import cupy as cp  # noqa: PLC0415  (GPU only)

    for j in range(max(warmup, n_sets)):
        run_one(j)
    cp.cuda.Device().synchronize()
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record()
    for j in range(2 * n_sets):
        run_one(j)
    e1.record()
    e1.synchronize()
    return cp.cuda.get_elapsed_time(e0, e1) / 1e3 / (2 * n_sets)


def sustain_loop(run_one, n_sets: int, seconds: float, warmup: int = 5, sampler=None) -> dict:
    """Run batches back to back for >= `seconds` of GPU time (plus the DEPTH batches in flight).

    run_one(j) enqueues launch j on the current stream, on input set j % n_sets. The batch size
    comes from a timed warm-up (plan_batch). Returns {"batch_end_s", "batch_ms", "per_batch",
    "est_launch_ms", "method", "t_start"}: host-clock batch ends, ms per launch, launches per
    batch, the warm-up's estimate, graph or stream, and the sampler's start (else the anchor)."""
    import cupy as cp  # noqa: PLC0415  (GPU only)

    est = _probe(run_one, n_sets, warmup)
    per_batch = plan_batch(est, n_sets)
    stream = cp.cuda.Stream(non_blocking=True)
    graph = _capture(stream, run_one, per_batch)
    counter = [0]

    def batch():
        if graph is not None:
            graph.launch(stream)
            return
        with stream:
            for _ in range(per_batch):
                run_one(counter[0])
                counter[0] += 1

    if sampler is not None:
        sampler.start()
    first = cp.cuda.Event()
    first.record(stream)
    first.synchronize()
    anchor = time.perf_counter()
    events = [first]
    while True:
        batch()
        ev = cp.cuda.Event()
        ev.record(stream)
        events.append(ev)
        if len(events) > DEPTH + 1:
            done = events[-1 - DEPTH]
            done.synchronize()
            if cp.cuda.get_elapsed_time(first, done) >= seconds * 1e3:
                break
    events[-1].synchronize()
    if sampler is not None:
        sampler.stop()
    elapsed = [cp.cuda.get_elapsed_time(first, e) for e in events]  # ms since the anchor event
    ends = [anchor + ms / 1e3 for ms in elapsed[1:]]
    per_launch = [(b - a) / per_batch for a, b in zip(elapsed, elapsed[1:])]
    t_start = sampler.t_start if sampler is not None and sampler.t_start is not None else anchor
    return {"batch_end_s": ends, "batch_ms": per_launch, "t_start": t_start, "per_batch": per_batch,
            "est_launch_ms": est * 1e3, "method": "cuda-graph" if graph is not None else "stream"}
