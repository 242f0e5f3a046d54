"""The profile build of the GEMM family and what its per-CTA stamps say: shared by
validation/cycle_profile.py (cycles of one warm launch), validation/micro_clock_truth.py (NVML's
clock against the SMs' own) and the SM-clock probe of validation/gemm_runs.py (heldout17).

kernels/cuda/gemm_sm90.cu compiled with -DGEMM_PROFILE=1 (PROFILE_FLAGS) takes a 4th argument and
writes per CTA {%smid, clock64 at entry, clock64 after the CTA's last epilogue store (after a
__syncthreads), %globaltimer at both}: a (grid * 5,) uint64 array per launch.

    analyse            one launch's stamps: kernel cycles (max over SMs of the SM's busy span, in
                       its own clock64), per-SM clock (cycles / ns of the same span), CTA lifetimes,
                       the occupancy seen (validation/cycle_profile.py's docstring lists the fields)
    effective_clocks   per launch analyse's clock (median over SMs) and kernel cycles, then median /
                       min / max over the launches of a ring of profile slots
    ring_loop          a sustained benchmark loop (harness._sustained: CUDA-graph batches back to
                       back, NVML sampled every 10 ms) of the profile build whose launches write a
                       ring of profile slots, so after the loop they hold the last launches (when a
                       batch has fewer launches than the ring, the other slots keep launches of the
                       loop's warm-up: steady_slots drops them)
    steady_slots       the written slots whose launch started within the last window_s seconds of
                       the ring's latest end (%globaltimer)
    probe_fields       the record fields of the SM-clock probe from effective_clocks and the loop
Runs on the GPU machine (numpy, cupy inside functions, stdlib, kernels.params, validation.harness).
"""

from __future__ import annotations

import statistics

import numpy as np

from kernels.params import GemmParams
from validation import harness as H
from validation.harness import compile_gemm

PROFILE_FLAGS = ("-DGEMM_PROFILE=1",)
#: profile slots of a ring: the last RING launches of a sustained loop are kept
RING = 16


#: the diagnostic build without wgmma.mma_async (kernels/cuda/gemm_sm90.cu GEMM_NO_MMA)
NO_MMA_FLAGS = ("-DGEMM_NO_MMA=1",)


def compile_profile(p: GemmParams, digest: str | None = None, extra: tuple = ()):
    """The profile build of p (harness.compile_gemm with PROFILE_FLAGS and `extra`, cached), or the
    exception."""
    try:
        return compile_gemm(p, digest, extra_flags=PROFILE_FLAGS + tuple(extra))
    except Exception as e:  # noqa: BLE001  (reported per configuration)
        return e


def profile_launcher(p: GemmParams, compiled, seed: int = 7):
    """The profile build `compiled` of p loaded with one input set (harness.make_inputs(p, seed)):
    (launch, prof), where each launch() runs the kernel once and writes its per-CTA {smid, clock64
    at entry and end, %globaltimer at both} into the device array prof (grid x 5 uint64)."""
    import cupy as cp  # noqa: PLC0415  (GPU only)

    kern = H.GemmKernel(p, compiled)
    a, b = H.make_inputs(p, seed)
    c = cp.empty((p.m, p.n), dtype=H.cp_dtype(p.dtype))
    prof = cp.zeros(p.grid * 5, dtype=cp.uint64)
    maps = kern.maps(a, b)

    def launch(_inputs=(a, b)):  # the tensor maps hold A's and B's addresses: keep them alive
        kern.fn((p.grid,), (p.threads,), (maps[0], maps[1], c, prof), shared_mem=kern.smem)

    return launch, prof


def analyse(prof, ctas: int) -> dict:
    """Statistics of a (ctas, 5) uint64 array {smid, c0, c1, g0, g1} (see cycle_profile's docstring)."""
    a = np.asarray(prof, dtype=np.int64).reshape(ctas, 5)
    sm, c0, c1, g0, g1 = (a[:, i] for i in range(5))
    spans, clocks, per_sm, overlap = {}, [], [], 0
    for s in np.unique(sm):
        idx = np.nonzero(sm == s)[0]
        span = int(c1[idx].max() - c0[idx].min())
        ns = int(g1[idx].max() - g0[idx].min())
        spans[int(s)] = span
        if ns > 0:
            clocks.append(span / ns * 1e3)
        per_sm.append(len(idx))
        ev = sorted([(int(c0[i]), 1) for i in idx] + [(int(c1[i]), -1) for i in idx],
                    key=lambda t: (t[0], t[1]))
        cur = 0
        for _, d in ev:
            cur += d
            overlap = max(overlap, cur)
    life = (c1 - c0).astype(np.float64)
    busiest = max(spans, key=lambda s: (per_sm[list(spans).index(s)], spans[s]))
    idx = np.nonzero(sm == busiest)[0]
    t0 = int(c0[idx].min())
    sm0 = sorted((int(c0[i] - t0), int(c1[i] - t0)) for i in idx)
    return {
        "kernel_cycles": int(max(spans.values())),
        "kernel_cycles_median_sm": float(np.median(list(spans.values()))),
        "clock_mhz": float(np.median(clocks)) if clocks else None,
        "clock_mhz_min": float(np.min(clocks)) if clocks else None,
        "clock_mhz_max": float(np.max(clocks)) if clocks else None,
        "kernel_ns": int(g1.max() - g0.min()),
        "cta_cycles_median": float(np.median(life)), "cta_cycles_p10": float(np.percentile(life, 10)),
        "cta_cycles_p90": float(np.percentile(life, 90)), "cta_cycles_min": float(life.min()),
        "cta_cycles_max": float(life.max()),
        "ctas_per_sm_seen": int(overlap), "sms_used": len(spans),
        "ctas_per_sm_count": [int(min(per_sm)), int(max(per_sm))],
        "sm0_ctas": sm0,
    }


def busy_sums(slot, grid: int) -> tuple[int, int]:
    """(cycles, ns) summed over SMs of each SM's busy span (first CTA start to last CTA end) in one
    launch's (grid*5,) profile slot; (0, 0) for a slot no launch wrote."""
    a = np.asarray(slot, dtype=np.int64).reshape(grid, 5)
    if not a[:, 1].any():
        return 0, 0
    sm, c0, c1, g0, g1 = (a[:, i] for i in range(5))
    tot_c = tot_n = 0
    for s in np.unique(sm):
        i = sm == s
        tot_c += int(c1[i].max() - c0[i].min())
        tot_n += int(g1[i].max() - g0[i].min())
    return tot_c, tot_n


def effective_clocks(prof: np.ndarray, grid: int) -> dict:
    """Per-launch clock statistics of RING profile slots, each a (grid*5,) uint64 array."""
    per, agg, cyc, ns = [], [], [], []
    for slot in prof:
        a = np.asarray(slot, dtype=np.int64).reshape(grid, 5)
        if not a[:, 1].any():
            continue
        st = analyse(slot, grid)
        per.append(st["clock_mhz"])
        cyc.append(st["kernel_cycles"])
        ns.append(st["kernel_ns"])
        tot_c, tot_n = busy_sums(slot, grid)
        agg.append(tot_c / tot_n * 1e3 if tot_n else None)
    good = [x for x in per if x]
    return {"launches_profiled": len(per),
            "eff_clock_mhz_median": statistics.median(good) if good else None,
            "eff_clock_mhz_min": min(good) if good else None,
            "eff_clock_mhz_max": max(good) if good else None,
            "eff_clock_mhz_agg": statistics.median([x for x in agg if x]) if any(agg) else None,
            "eff_clock_mhz_per_launch": good,
            "kernel_cycles_median": statistics.median(cyc) if cyc else None,
            "kernel_ns_median": statistics.median(ns) if ns else None}


def steady_slots(prof: np.ndarray, grid: int, window_s: float) -> np.ndarray:
    """The written profile slots (clock64 at entry set) whose launch started (first CTA's
    %globaltimer) no earlier than window_s before the latest CTA end of any written slot."""
    written = [np.asarray(slot) for slot in prof if np.asarray(slot, dtype=np.int64).reshape(grid, 5)[:, 1].any()]
    if not written:
        return np.zeros((0, grid * 5), dtype=np.uint64)
    stamps = [np.asarray(slot, dtype=np.int64).reshape(grid, 5) for slot in written]
    t_end = max(int(a[:, 4].max()) for a in stamps)
    keep = [slot for slot, a in zip(written, stamps) if int(a[:, 3].min()) >= t_end - window_s * 1e9]
    return np.stack(keep)


def ring_loop(kern, sets: list, n: int, sustain_s: float, steady_s: float,
              ring: int = RING) -> tuple[dict, np.ndarray]:
    """A sustained loop (harness._sustained, warmup 5) of the profile build `kern` on the input
    `sets` (harness._kernel_sets), launch j writing profile slot j % ring: (the loop's summary,
    the ring's slots on the host, (ring, grid * 5) uint64: its last launches)."""
    import cupy as cp  # noqa: PLC0415  (GPU only)

    p = kern.p
    prof = cp.zeros((ring, p.grid * 5), dtype=cp.uint64)

    def run_one(j):
        maps, c = sets[j % n][0], sets[j % n][1]
        kern.fn((p.grid,), (p.threads,), (maps[0], maps[1], c, prof[j % ring]), shared_mem=kern.smem)

    out = H._sustained(run_one, p, n, sustain_s, steady_s, 5)
    cp.cuda.Device().synchronize()
    return out, cp.asnumpy(prof)


def probe_fields(eff: dict, out: dict) -> dict:
    """The SM-clock probe's record fields: the clock64/%globaltimer clock of the SMs (per launch the
    median over SMs; median, min and max over the ring's launches), the median kernel cycles over
    them, and the short loop's NVML time-weighted SM clock and median time per launch."""
    return {"sm_clock_eff_mhz": eff.get("eff_clock_mhz_median"),
            "sm_clock_eff_min": eff.get("eff_clock_mhz_min"),
            "sm_clock_eff_max": eff.get("eff_clock_mhz_max"),
            "probe_kernel_cycles": eff.get("kernel_cycles_median"),
            "probe_launches_profiled": eff.get("launches_profiled"),
            "probe_nvml_clock_mhz_tw": out.get("sm_clock_mhz_tw"),
            "probe_time_ms": out.get("time_ms")}


def sm_clock_probe(p: GemmParams, comp, sustain_s: float, steady_s: float) -> dict:
    """The SM-clock probe of one configuration: its profile build `comp` (compile_profile) in a
    short sustained loop right after its timing (fresh input sets, seed 7 as harness's timing);
    probe_fields of its ring's launches inside the steady window. Raises on any failure (the
    caller records probe_error)."""
    if isinstance(comp, Exception):
        raise comp
    kern = H.GemmKernel(p, comp)
    sets, n = H._kernel_sets(kern, 7)
    try:
        out, prof = ring_loop(kern, sets, n, sustain_s, steady_s)
    finally:
        del sets
    return probe_fields(effective_clocks(steady_slots(prof, p.grid, steady_s), p.grid), out)
