"""Power microbenchmarks on the H100 (issue 13 item 2): each point loads one unit at a controlled
rate for a few seconds while NVML is sampled, and records the achieved event rate, the power and
clock distribution over the whole window and over its steady tail, and the trajectory.

Kernels: validation/cuda/power_wgmma.cu (tensor-core burner) and power_units.cu (TMA bulk copy
from L2, HBM read/copy, shared-memory ld/st, FFMA); each kernel runs for `launch_s` of globaltimer
and counts its events, the host chains launches (event-timed, synchronised each) until the
point's duration has passed. Clocks and power limits are never touched. Random operands come
from numpy's default_rng with a fixed seed. cupy is imported lazily (GPU machine only).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import time

import numpy as np

from validation.power.nvml_sampler import PowerSampler
from validation.power.stats import derivative, step_response

REPO = pathlib.Path(__file__).resolve().parents[2]
CUDA_DIR = REPO / "validation" / "cuda"
SOURCES = {"power_wgmma": CUDA_DIR / "power_wgmma.cu", "power_units": CUDA_DIR / "power_units.cu",
           "power_light": CUDA_DIR / "power_light.cu",
           "micro_tma_width": CUDA_DIR / "micro_tma_width.cu"}   # its TMA stream (validation/power/tmaw.py)
NVCC = ["nvcc", "-std=c++17", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas=-w"]
WGMMA_FLOP = 2 * 64 * 256 * 16          # one m64n256k16
WGMMA_OPERAND_BYTES = 48 * 1024        # B 256x64 + 2 x A 64x64, 2-byte elements
STEADY_S = 1.5                         # tail of each point summarised as steady state
SEED = 20261124


# ----------------------------------------------------------------------------- compile / load
def cubin_dir() -> pathlib.Path:
    d = pathlib.Path(os.environ.get("HOPSIM_POWER_CUBINS", REPO / "build" / "power"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def start_compiles() -> dict:
    """Start nvcc for every source in parallel (a cubin newer than its source and the shared
    headers is reused, e.g. one carried to the GPU machine). Returns {stem: Popen or None}."""
    headers = [REPO / "kernels" / "cuda" / "sm90_ptx.cuh", REPO / "kernels" / "cuda" / "wgmma_ops.cuh"]
    procs = {}
    for stem, src in SOURCES.items():
        out = cubin_dir() / f"{stem}.cubin"
        newest = max(p.stat().st_mtime for p in [src, *headers])
        if out.exists() and out.stat().st_mtime > newest:
            procs[stem] = None
            continue
        procs[stem] = subprocess.Popen([*NVCC, "-o", str(out), str(src)],
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return procs


def finish_compiles(procs: dict) -> dict:
    """Wait for nvcc; {stem: error text or None}."""
    errs = {}
    for stem, p in procs.items():
        if p is None:
            errs[stem] = None
            continue
        out, _ = p.communicate()
        errs[stem] = None if p.returncode == 0 else f"nvcc failed ({p.returncode}): {out[-2000:]}"
    return errs


_MODULES: dict = {}


def kernel(stem: str, name: str, smem: int = 0):
    import cupy as cp  # noqa: PLC0415

    if stem not in _MODULES:
        _MODULES[stem] = cp.RawModule(path=str(cubin_dir() / f"{stem}.cubin"))
    fn = _MODULES[stem].get_function(name)
    if smem > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = smem
    return fn


def sm_count() -> int:
    import cupy as cp  # noqa: PLC0415

    return cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]


# ----------------------------------------------------------------------------- the timed loop
def chained(launch, counts, duration_s: float, launch_s: float, sampler: PowerSampler) -> dict:
    """Launch `launch()` (a kernel that runs launch_s and adds events into counts) until
    duration_s has passed; per launch: host end time (s from the sampler's start), GPU time,
    events. Returns the totals, the steady-tail rate and the per-launch series."""
    import cupy as cp  # noqa: PLC0415

    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    series = {"t_end_s": [], "gpu_s": [], "events": []}
    t_stop = time.perf_counter() + duration_s
    while time.perf_counter() < t_stop - launch_s / 2:
        counts.fill(0)
        ev0.record()
        launch()
        ev1.record()
        ev1.synchronize()
        series["gpu_s"].append(cp.cuda.get_elapsed_time(ev0, ev1) / 1e3)
        series["events"].append(int(counts.sum().get()))
        series["t_end_s"].append(round(time.perf_counter() - sampler.t_start, 5))
    return rates(series)


def rates(series: dict, steady_s: float = STEADY_S) -> dict:
    """Totals and rates (events/s) over all launches and over those ending in the last steady_s."""
    ev, gs, te = series["events"], series["gpu_s"], series["t_end_s"]
    out = {"launches": len(ev), "events": sum(ev), "gpu_s": sum(gs), "series": series}
    out["rate_per_s"] = sum(ev) / sum(gs) if gs and sum(gs) > 0 else None
    if te:
        tail = [i for i, t in enumerate(te) if t >= te[-1] - steady_s]
        g = sum(gs[i] for i in tail)
        out["steady_rate_per_s"] = sum(ev[i] for i in tail) / g if g > 0 else None
    return out


def measured(duration_s: float, body, period_s: float = 0.01, fields: str = "full") -> dict:
    """Run body(sampler) inside a sampler; adds the whole-window and steady-tail summaries and
    the trajectory to body's result."""
    with PowerSampler(period_s=period_s, fields=fields) as ps:
        res = body(ps) or {}
    res["power_samples_summary"] = ps.summary(launches=res.get("launches"))
    res["power_steady_summary"] = ps.summary(last_s=min(STEADY_S, duration_s / 2))
    res["trajectory"] = ps.trajectory()
    return res


# ----------------------------------------------------------------------------- operands
def operands(dtype: str, zero: bool):
    """48 KB of wgmma operands: seeded standard-normal f16 or bf16 bit patterns, or zeros."""
    import cupy as cp  # noqa: PLC0415

    n = WGMMA_OPERAND_BYTES // 2
    if zero:
        return cp.zeros(n, dtype=cp.uint16)
    x = np.random.default_rng(SEED).standard_normal(n).astype(np.float32)
    if dtype == "f16":
        bits = x.astype(np.float16).view(np.uint16)
    else:
        u = x.view(np.uint32)
        bits = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    return cp.asarray(bits)


# ----------------------------------------------------------------------------- the points
def wgmma_point(variant: str, duty: int, zero: bool, duration_s: float, launch_s: float = 0.2,
                groups: int = 16, sms: int | None = None) -> dict:
    """(a) the burner: variant f16f32 | bf16f32 | f16f16, duty %, zero or random operands; on
    every SM (one CTA each), or with `sms` CTAs: a partly occupied chip (one CTA per SM: 48 KB of
    shared memory and 256 threads, so the block scheduler spreads `sms` < SM-count CTAs over
    distinct SMs), which separates the per-active-SM power from the per-event energies."""
    import cupy as cp  # noqa: PLC0415

    n_sm = sm_count() if sms is None else int(sms)
    smem = WGMMA_OPERAND_BYTES + 1024
    fn = kernel("power_wgmma", f"wgburn_{variant}", smem)
    src = operands("bf16" if variant.startswith("bf16") else "f16", zero)
    counts = cp.zeros(n_sm, dtype=cp.uint64)
    sink = cp.zeros(256, dtype=cp.float32)
    args = (src, counts, sink, np.uint64(int(launch_s * 1e9)), np.int32(duty), np.int32(groups))

    def body(ps):
        return chained(lambda: fn((n_sm,), (256,), args, shared_mem=smem), counts, duration_s, launch_s, ps)

    res = measured(duration_s, body)
    for key in ("rate_per_s", "steady_rate_per_s"):
        if res.get(key):
            res[key.replace("rate_per_s", "tflops")] = res[key] * WGMMA_FLOP / 1e12
    res["event"] = "wgmma m64n256k16 (warpgroup instruction)"
    return res


def unit_point(unit: str, duration_s: float, duty: int = 100, launch_s: float = 0.2) -> dict:
    """(b)-(e): bulk_l2 (TMA from L2) | hbm_read | hbm_copy | smem_ld | smem_st | alu_fma."""
    import cupy as cp  # noqa: PLC0415

    n_sm = sm_count()
    dur = np.uint64(int(launch_s * 1e9))
    counts = cp.zeros(1, dtype=cp.uint64)
    sink = cp.zeros(1024, dtype=cp.uint32)
    keep = []
    if unit == "bulk_l2":
        buf = ((cp.arange(2 << 20, dtype=cp.uint32) * cp.uint32(2654435761))).view(cp.uint8)  # 8 MB: L2-resident
        keep.append(buf)
        fn, smem = kernel("power_units", "bulk_l2", 6 * 16384), 6 * 16384
        call = lambda: fn((n_sm,), (32,), (buf, np.uint64(buf.size // 16384), counts, dur, np.int32(duty)),  # noqa: E731
                          shared_mem=smem)
        event = "byte landed in shared memory by cp.async.bulk (L2-resident source, 8 MB)"
    elif unit in ("hbm_read", "hbm_copy"):
        n16 = (2 << 30) // 16 if unit == "hbm_read" else (1 << 30) // 16
        src = cp.arange(n16 * 4, dtype=cp.uint32) * cp.uint32(2654435761)  # toggling data, not zeros
        keep.append(src)
        fn = kernel("power_units", unit)
        if unit == "hbm_read":
            call = lambda: fn((n_sm * 8,), (256,), (src, np.uint64(n16), counts, sink, dur))  # noqa: E731
            event = "byte read from HBM (2 GiB buffer, 16-B streaming loads)"
        else:
            dst = cp.empty_like(src)
            keep.append(dst)
            call = lambda: fn((n_sm * 8,), (256,), (src, dst, np.uint64(n16), counts, dur))  # noqa: E731
            event = "byte read or written (1 GiB -> 1 GiB copy)"
    elif unit in ("smem_ld", "smem_st"):
        fn = kernel("power_units", unit)
        call = lambda: fn((n_sm * 4,), (256,), (counts, sink, dur))  # noqa: E731
        event = "warp-level shared-memory instruction = one wavefront (conflict-free 32-bit)"
    elif unit == "alu_fma":
        fn = kernel("power_units", "alu_fma")
        fsink = cp.zeros(1024, dtype=cp.float32)
        call = lambda: fn((n_sm * 4,), (256,), (counts, fsink, np.float32(0.999), np.float32(1e-3), dur))  # noqa: E731
        event = "thread-level FFMA (32 per warp instruction)"
    else:
        raise ValueError(f"unit: {unit!r}; valid: bulk_l2, hbm_read, hbm_copy, smem_ld, smem_st, alu_fma")

    res = measured(duration_s, lambda ps: chained(call, counts, duration_s, launch_s, ps))
    res["event"] = event
    del keep
    return res


def idle_point(duration_s: float) -> dict:
    """(f) nothing launched: the idle floor."""
    return measured(duration_s, lambda ps: time.sleep(duration_s) or {})


def burst_point(variant: str, duration_s: float, per_burst: int, gap_s: float, kernel_us: float = 100.0,
                groups: int = 2) -> dict:
    """(g) the benchmark-loop pattern: bursts of `per_burst` short 100% burner launches, a device
    sync after each burst, then `gap_s` of host time, for duration_s; trajectory shows the
    governor's response."""
    import cupy as cp  # noqa: PLC0415

    n_sm = sm_count()
    smem = WGMMA_OPERAND_BYTES + 1024
    fn = kernel("power_wgmma", f"wgburn_{variant}", smem)
    src = operands("f16", False)
    counts = cp.zeros(n_sm, dtype=cp.uint64)
    sink = cp.zeros(256, dtype=cp.float32)
    args = (src, counts, sink, np.uint64(int(kernel_us * 1e3)), np.int32(100), np.int32(groups))

    def body(ps):
        bursts, t_stop = [], time.perf_counter() + duration_s
        while time.perf_counter() < t_stop:
            t0 = time.perf_counter()
            for _ in range(per_burst):
                fn((n_sm,), (256,), args, shared_mem=smem)
            cp.cuda.Device().synchronize()
            bursts.append([round(t0 - ps.t_start, 5), round(time.perf_counter() - t0, 6)])
            if gap_s:
                time.sleep(gap_s)
        return {"launches": len(bursts) * per_burst, "events": int(counts.sum().get()),
                "bursts_start_s_and_wall_s": bursts}

    res = measured(duration_s, body)
    res["event"] = "wgmma m64n256k16 over all bursts"
    return res


def step_point(idle_before_s: float, on_s: float, idle_after_s: float, launch_s: float = 0.2) -> dict:
    """(h) step load at the fastest sampling: idle -> 100% f16 burner at t_on -> idle at t_off.
    Compares each power reading's lag with the energy counter's derivative."""
    import cupy as cp  # noqa: PLC0415

    n_sm = sm_count()
    smem = WGMMA_OPERAND_BYTES + 1024
    fn = kernel("power_wgmma", "wgburn_f16f32", smem)
    src = operands("f16", False)
    counts = cp.zeros(n_sm, dtype=cp.uint64)
    sink = cp.zeros(256, dtype=cp.float32)
    args = (src, counts, sink, np.uint64(int(launch_s * 1e9)), np.int32(100), np.int32(16))
    marks = {}

    def body(ps):
        time.sleep(idle_before_s)
        marks["t_on"] = time.perf_counter()
        out = chained(lambda: fn((n_sm,), (256,), args, shared_mem=smem), counts, on_s, launch_s, ps)
        marks["t_off"] = time.perf_counter()
        time.sleep(idle_after_s)
        return out

    with PowerSampler(period_s=0.0, fields="power") as ps:
        res = body(ps)
    res["power_samples_summary"] = ps.summary()
    res["trajectory"] = ps.trajectory()
    res["t_on_s"] = marks["t_on"] - ps.t_start
    res["t_off_s"] = marks["t_off"] - ps.t_start
    res["lag"] = step_lags(ps.samples, marks["t_on"], marks["t_off"])
    return res


def step_lags(samples: list[dict], t_on: float, t_off: float, deriv_dt: float = 0.02) -> dict:
    """Step response (10/50/90 % delays) of every power reading, of the energy counter's
    derivative (W) and of the SM clock, at the on step and at the off step."""
    out = {}
    series = {}
    for key in ("power_w", "power_instant_w", "power_average_w", "sm_mhz"):
        pts = [(s["t"], s[key]) for s in samples if s.get(key) is not None]
        if pts:
            series[key] = ([p[0] for p in pts], [float(p[1]) for p in pts])
    pts = [(s["t"], s["energy_mj"]) for s in samples if s.get("energy_mj") is not None]
    if len(pts) > 2:
        ts, ws = derivative([p[0] for p in pts], [p[1] / 1e3 for p in pts], deriv_dt)
        series["energy_derivative_w"] = (ts, ws)
    for key, (ts, vs) in series.items():
        on = [(t, v) for t, v in zip(ts, vs) if t < t_off]
        off = [(t, v) for t, v in zip(ts, vs) if t >= t_on + (t_off - t_on) / 2]
        out[key] = {
            "on": step_response([p[0] for p in on], [p[1] for p in on], t_on),
            "off": step_response([p[0] for p in off], [p[1] for p in off], t_off),
        }
    return out
