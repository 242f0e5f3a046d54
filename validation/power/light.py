"""Power microbenchmarks of light SM load at boost clock (issue 13 follow-up; kernels in
validation/cuda/power_light.cu, same sampler, runner and provenance as validation/power/benches.py).

Why: the held-out GEMM comparison (validation/reports/h100/heldout14/) read the predicted power
LOW on lightly loaded configurations running at 1980 MHz. The burners the model was calibrated on
do not separate what such a GEMM also spends: resident-but-waiting SMs and warps, mbarrier
polling, many small TMA requests (8-row boxes), the swizzle mode of the wgmma operand fetch, CTA
launch/teardown and the launch train of a benchmark loop. Each point loads ONE of these at
1980 MHz (light enough that the clock stays at boost) for a few seconds.

Families (record field `family` = "light"; `event` names counters[0]; `rates_per_s` has all):
  light_resident_{sleep,poll}_sm{N}_w{W}  N CTAs (one per SM: 120 KB of shared memory each) of W
        warps that only wait (nanosleep / mbarrier.try_wait poll). rates: warp_iterations.
  light_tma_req{B}[_gap{G}us]             132 CTAs, one thread, cp.async.bulk of B bytes each,
        96 KB in flight per CTA, L2-resident 8 MB source, G us of sleep between rounds (a low
        byte rate: is L2/TMA activity a step plus a slope?). rates: bytes, requests.
  light_pipe_req{B}_s{S}[_fixsrc]         GEMM-like producer/consumer CTA per SM (40 KB stages,
        B-byte requests, S stages; _fixsrc: every stage reloads the same 40 KB, constant wgmma
        operands with the same TMA traffic). rates: wgmma, bytes, requests.
  light_wgswz{SP}_duty{D}                 the f16->f32 burner at D % duty with SP-byte swizzle
        descriptors. rates: wgmma.
  light_wgmma_{f16f32,bf16f32}_duty10      the burner of benches.py at 10 % duty (bf16 vs f16 at low
        duty). rate: wgmma.
  light_churn_g{G}_sleep{U}us             back-to-back launches of G CTAs x 128 threads that
        sleep U us and exit. rates: ctas, launches.
cupy is imported lazily (GPU machine only).
"""

from __future__ import annotations

import time

import numpy as np

from validation.power import benches

STEM = "power_light"
L2_BUF_BYTES = 8 << 20          # L2-resident source (H100 L2: 50 MB)
RESIDENT_SMEM = 120 * 1024      # > half of the 228 KB per SM: at most one CTA per SM
TMA_INFLIGHT = 96 * 1024        # bytes in flight per CTA per round (tma_req)
PIPE_STAGE = 40960              # A 64x64 + B 256x64 f16 (pipe)


def _random_f16_buffer(nbytes: int):
    """Seeded standard-normal f16 bit patterns (toggling operands, no NaN/Inf)."""
    import cupy as cp  # noqa: PLC0415

    x = np.random.default_rng(benches.SEED).standard_normal(nbytes // 2).astype(np.float16)
    return cp.asarray(x.view(np.uint8))


def _steady_rates(series: dict, names: tuple[str, ...], steady_s: float = benches.STEADY_S) -> dict:
    """Per-counter totals and rates (per GPU second) overall and over the steady tail."""
    te, gs, ev = series["t_end_s"], series["gpu_s"], series["events"]
    out = {"launches": len(te), "gpu_s": sum(gs), "series": series}
    tail = [i for i, t in enumerate(te) if te and t >= te[-1] - steady_s]
    g_all, g_tail = sum(gs), sum(gs[i] for i in tail)
    out["rates_per_s"] = {n: (sum(e[k] for e in ev) / g_all if g_all > 0 else None) for k, n in enumerate(names)}
    out["steady_rates_per_s"] = {n: (sum(ev[i][k] for i in tail) / g_tail if g_tail > 0 else None)
                                 for k, n in enumerate(names)}
    out["events"] = sum(e[0] for e in ev)
    out["rate_per_s"] = out["rates_per_s"][names[0]]
    out["steady_rate_per_s"] = out["steady_rates_per_s"][names[0]]
    return out


def _chained(launch, counts, names, duration_s: float, launch_s: float, ps) -> dict:
    """benches.chained with several counters: launch (one launch_s kernel) until duration_s."""
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
        series["events"].append([int(v) for v in counts.get()[: len(names)]])
        series["t_end_s"].append(round(time.perf_counter() - ps.t_start, 5))
    return _steady_rates(series, names)


def _smids(smids, n: int) -> dict:
    v = smids.get()[:n]
    return {"ctas": int(n), "distinct_sms": int(len(set(v.tolist())))}


def resident_point(mode: str, sms: int, warps: int, duration_s: float, sleep_ns: int = 2000,
                   launch_s: float = 0.2) -> dict:
    """`sms` CTAs of `warps` warps that only wait: mode 'sleep' (nanosleep) or 'poll' (try_wait)."""
    import cupy as cp  # noqa: PLC0415

    fn = benches.kernel(STEM, "resident", RESIDENT_SMEM)
    counts = cp.zeros(2, dtype=cp.uint64)
    smids = cp.zeros(max(sms, 1), dtype=cp.uint32)
    m = {"sleep": 0, "poll": 1}[mode]
    args = (counts, smids, np.uint64(int(launch_s * 1e9)), np.int32(m), np.uint32(sleep_ns))
    call = lambda: fn((sms,), (32 * warps,), args, shared_mem=RESIDENT_SMEM)  # noqa: E731
    res = benches.measured(duration_s, lambda ps: _chained(call, counts, ("warp_iterations",), duration_s, launch_s, ps))
    res.update(_smids(smids, sms), event=f"warp-level loop iteration ({'nanosleep' if m == 0 else 'mbarrier.try_wait'})")
    return res


def tma_req_point(req_bytes: int, duration_s: float, gap_us: float = 0.0, launch_s: float = 0.2) -> dict:
    """Every SM: one thread issuing cp.async.bulk of req_bytes from an L2-resident buffer, 96 KB
    per round, then gap_us of sleep (0: back to back)."""
    import cupy as cp  # noqa: PLC0415

    n_sm = benches.sm_count()
    buf = _random_f16_buffer(L2_BUF_BYTES)
    fn = benches.kernel(STEM, "tma_req", TMA_INFLIGHT + 1024)
    counts = cp.zeros(2, dtype=cp.uint64)
    smids = cp.zeros(n_sm, dtype=cp.uint32)
    args = (buf, np.uint64(buf.size), counts, smids, np.uint64(int(launch_s * 1e9)), np.uint32(req_bytes),
            np.uint32(TMA_INFLIGHT), np.uint32(int(gap_us * 1e3)))
    call = lambda: fn((n_sm,), (32,), args, shared_mem=TMA_INFLIGHT + 1024)  # noqa: E731
    res = benches.measured(duration_s, lambda ps: _chained(call, counts, ("bytes", "requests"), duration_s, launch_s, ps))
    res.update(_smids(smids, n_sm), event="byte landed in shared memory by cp.async.bulk (L2-resident 8 MB)")
    return res


def pipe_point(req_bytes: int, stages: int, duration_s: float, launch_s: float = 0.2,
               fixed_src: bool = False) -> dict:
    """Every SM: the GEMM-like producer/consumer CTA (TMA-fed wgmma, waits on mbarriers).
    fixed_src: every stage reloads the same 40 KB (the TMA traffic of the streaming pipe, the
    constant operands of a burner: separates data toggling from the TMA/tensor interaction)."""
    import cupy as cp  # noqa: PLC0415

    n_sm = benches.sm_count()
    buf = _random_f16_buffer(L2_BUF_BYTES)
    smem = stages * PIPE_STAGE + 1024
    fn = benches.kernel(STEM, "pipe", smem)
    counts = cp.zeros(3, dtype=cp.uint64)
    smids = cp.zeros(n_sm, dtype=cp.uint32)
    sink = cp.zeros(256, dtype=cp.float32)
    args = (buf, np.uint64(buf.size), counts, smids, sink, np.uint64(int(launch_s * 1e9)), np.uint32(req_bytes),
            np.int32(stages), np.int32(1 if fixed_src else 0))
    call = lambda: fn((n_sm,), (160,), args, shared_mem=smem)  # noqa: E731
    names = ("wgmma", "bytes", "requests")
    res = benches.measured(duration_s, lambda ps: _chained(call, counts, names, duration_s, launch_s, ps))
    res.update(_smids(smids, n_sm), event="wgmma m64n256k16 f16->f32 (TMA-fed, 40 KB per 4 wgmma"
               + (", the same 40 KB every stage)" if fixed_src else ")"))
    return res


def wgswz_point(swizzle: int, duty: int, duration_s: float, launch_s: float = 0.2, groups: int = 16) -> dict:
    """The f16->f32 burner (random operands) with swizzle-`swizzle` descriptors at `duty` %."""
    import cupy as cp  # noqa: PLC0415

    n_sm = benches.sm_count()
    smem = benches.WGMMA_OPERAND_BYTES + 1024
    fn = benches.kernel(STEM, f"wgswz{swizzle}", smem)
    src = benches.operands("f16", False)
    counts = cp.zeros(n_sm, dtype=cp.uint64)
    sink = cp.zeros(256, dtype=cp.float32)
    args = (src, counts, sink, np.uint64(int(launch_s * 1e9)), np.int32(duty), np.int32(groups))
    call = lambda: fn((n_sm,), (256,), args, shared_mem=smem)  # noqa: E731
    res = benches.measured(duration_s, lambda ps: benches.chained(call, counts, duration_s, launch_s, ps))
    res["event"] = f"wgmma m64n256k16 f16->f32, {swizzle}-B swizzle descriptors"
    return res


def churn_point(grid: int, sleep_us: float, duration_s: float, per_sync: int = 50) -> dict:
    """Back-to-back launches (per_sync per host sync) of `grid` CTAs x 128 threads that sleep."""
    import cupy as cp  # noqa: PLC0415

    fn = benches.kernel(STEM, "churn")
    args = (np.uint32(int(sleep_us * 1e3)),)
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()

    def body(ps):
        series = {"t_end_s": [], "gpu_s": [], "events": []}
        t_stop = time.perf_counter() + duration_s
        while time.perf_counter() < t_stop:
            ev0.record()
            for _ in range(per_sync):
                fn((grid,), (128,), args)
            ev1.record()
            ev1.synchronize()
            series["gpu_s"].append(cp.cuda.get_elapsed_time(ev0, ev1) / 1e3)
            series["events"].append([grid * per_sync, per_sync])
            series["t_end_s"].append(round(time.perf_counter() - ps.t_start, 5))
        return _steady_rates(series, ("ctas", "launches"))

    res = benches.measured(duration_s, body)
    res["event"] = f"CTA of 128 threads that sleeps {sleep_us} us (grid {grid})"
    return res


POINT_S = 2.5   # per point: the clock stays at boost; NVML's averaged reading lags ~0.5 s


def plan() -> list[dict]:
    """The light points (family 'light'), about 2.5 s of load each."""
    def pt(name, fn, **kw):
        return {"family": "light", "name": name, "seconds": POINT_S, "fn": fn,
                "kw": {**kw, "duration_s": POINT_S}}

    pts = []
    for mode, sms, warps in (("sleep", 132, 4), ("sleep", 66, 4), ("sleep", 132, 16), ("poll", 132, 4)):
        pts.append(pt(f"light_resident_{mode}_sm{sms}_w{warps}", resident_point, mode=mode, sms=sms, warps=warps))
    for b, gap in ((256, 0), (1024, 0), (16384, 0), (16384, 15)):
        pts.append(pt(f"light_tma_req{b}" + (f"_gap{gap}us" if gap else ""), tma_req_point, req_bytes=b, gap_us=gap))
    for b, s in ((8192, 2), (1024, 2)):
        pts.append(pt(f"light_pipe_req{b}_s{s}", pipe_point, req_bytes=b, stages=s))
    # the capped pipe with constant operands: does its ~130 W over the sum of its parts come from
    # the streamed data's toggling or from TMA fills beside tensor reads? (issue 13 phase 2)
    pts.append(pt("light_pipe_req8192_s2_fixsrc", pipe_point, req_bytes=8192, stages=2, fixed_src=True))
    for sp in (128, 64, 32):
        pts.append(pt(f"light_wgswz{sp}_duty40", wgswz_point, swizzle=sp, duty=40))
    for v in ("f16f32", "bf16f32"):   # bf16 vs f16 energy per FLOP at low duty (burner of benches.py)
        pts.append(pt(f"light_wgmma_{v}_duty10", benches.wgmma_point, variant=v, duty=10, zero=False))
    for grid, us in ((132 * 16, 2.0), (1, 0.0)):
        pts.append(pt(f"light_churn_g{grid}_sleep{us:g}us", churn_point, grid=grid, sleep_us=us))
    return pts
