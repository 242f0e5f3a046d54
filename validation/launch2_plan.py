"""The plan, time estimates and stamp analysis of the launch / wave-tail / L2-state
microbenchmarks (validation/micro_launch2.py runs them on the H100; kernels in
validation/cuda/micro_launch2.cu). Pure Python (numpy, no cupy): tests and hopsim read it anywhere.

Groups (one JSON record per benchmark, `kind` = "launch2"):
  empty   ml_empty over GRIDS x one block size per record: per-launch time back to back inside a
          CUDA graph, back to back on a stream, and as a single launch on an idle GPU.
  spin    ml_spin: every CTA spins `spin_cycles` (clock64), CTAs per SM bounded by dynamic shared
          memory; per grid: graph / single launch times and the per-CTA stamps (SM, clock64 and
          globaltimer at start and end) -> waves, relaunch gap on an SM, dispatch spread.
  stream  ml_store / ml_read / ml_copy over S bytes (1 MiB .. 256 MiB), grid-stride float4,
          256 threads, grid = min(vectors / 256, 8 CTAs x SMs), in five L2 states (MODES).
"""

from __future__ import annotations

import math

import numpy as np

KIND = "launch2"
MIB = 1 << 20

# ---------------------------------------------------------------- empty kernels
GRIDS = tuple(sorted({2 ** k for k in range(15)} | {132 * k for k in (1, 2, 4, 8, 16, 32, 64)}))
BLOCKS = (32, 64, 128, 256, 512, 1024)
GRAPH_LAUNCHES = 100      # empty kernels per CUDA graph
GRAPH_BATCHES = 5
STREAM_LAUNCHES = 100     # empty kernels between two events on a stream
SINGLE_REPS = 15          # single launches on an idle GPU (event, launch, event, synchronize)

# ---------------------------------------------------------------- spin (wave tail)
SPIN_CYCLES = (0, 2000, 20000)
#: (label, threads per CTA, dynamic smem bytes, resident CTAs per SM the smem/threads allow)
SPIN_OCC = (("occ1", 128, 120 * 1024, 1), ("occ2", 1024, 0, 2), ("occ16", 128, 0, 16),
            ("occ8", 256, 26 * 1024, 8))
"""occ8: the membound kernels' shape (256 threads, 8 CTAs per SM by shared memory: 8 x 27 KB fit
the 228 KB, 9 do not): the relaunch gap when 8 slots per SM free and refill (copy f32 one element
per thread: the H100 runs it as fast as its grid-stride form, the model's occ1 gap makes it slower)."""
SPIN_GRIDS = (1, 66, 132, 133, 198, 264, 265, 396, 660, 1056, 2112)
SPIN_GRAPH_LAUNCHES = 20
SPIN_BATCHES = 3
SPIN_SINGLE_REPS = 5

# ---------------------------------------------------------------- streams (L2 state)
SIZES = tuple(m * MIB for m in (1, 2, 4, 8, 16, 24, 32, 40, 48, 64, 128, 256))
KERNELS = ("store", "read", "copy")
#: L2 state before each timed launch:
#:   same_graph   back to back on the same buffers inside a CUDA graph (benchmark-loop steady state)
#:   rotate_graph back to back inside a CUDA graph over >= ROTATE_BYTES of buffers (cold inputs,
#:                earlier launches' outputs dirty in L2: the portfolio's timing method)
#:   same_event   idle-spin, one untimed launch on the same buffers, then the timed launch (events)
#:   clean_event  idle-spin, a read of FLUSH_BYTES of scratch (L2 clean, none of the buffers), timed
#:   dirty_event  idle-spin, a store of FLUSH_BYTES of scratch (L2 full of dirty lines), timed
MODES = ("same_graph", "rotate_graph", "same_event", "clean_event", "dirty_event")
ROTATE_BYTES = 256 * MIB
FLUSH_BYTES = 256 * MIB
STREAM_THREADS = 256
STREAM_CTAS_PER_SM = 8
GRAPH_TARGET_S = 0.002    # GPU time per graph batch
STREAM_BATCHES = 5
EVENT_REPS = 15
IDLE_SPIN_CYCLES = 200000  # one CTA spins ~0.1 ms before each event-timed pair so Python queues ahead
EST_BPS = 2.0e12          # conservative bandwidth for estimates
EST_LAUNCH_S = 6e-6       # conservative per-launch overhead for estimates
BUDGET_S = 120.0


def stream_grid(nbytes: int, nsm: int) -> int:
    """CTAs of a stream kernel over `nbytes`: one float4 per thread up to 8 CTAs per SM (grid-stride)."""
    n4 = nbytes // 16
    return max(1, min(math.ceil(n4 / STREAM_THREADS), STREAM_CTAS_PER_SM * nsm))


def rotate_slices(nbytes: int) -> int:
    """Buffer sets the rotate mode cycles over: >= ROTATE_BYTES in all, at least 2."""
    return max(2, math.ceil(ROTATE_BYTES / nbytes))


def graph_launches(est_s: float, multiple: int = 1) -> int:
    """Launches per graph batch: ~GRAPH_TARGET_S of GPU time, 4..256, a multiple of `multiple`."""
    n = max(4, min(256, int(GRAPH_TARGET_S / max(est_s, 1e-7))))
    return max(multiple, n // multiple * multiple)


def stream_bytes_moved(kernel: str, nbytes: int) -> int:
    return 2 * nbytes if kernel == "copy" else nbytes


def _est_stream(kernel: str, nbytes: int) -> float:
    launch = stream_bytes_moved(kernel, nbytes) / EST_BPS + EST_LAUNCH_S
    flush = FLUSH_BYTES / EST_BPS + IDLE_SPIN_CYCLES / 1.7e9
    graphs = 2 * STREAM_BATCHES * GRAPH_TARGET_S * 1.2 + 2 * launch * 256 / 50
    events = 3 * EVENT_REPS * (2 * launch + flush) + 3 * EVENT_REPS * 2e-4
    fill = 3 * ROTATE_BYTES / 50e9 if kernel != "store" else 0.0
    return graphs + events + fill + 0.15


def plan() -> list[dict]:
    """Every benchmark: {group, name, params, est_s}; names are the record names."""
    out = []
    for b in BLOCKS:
        est = len(GRIDS) * (GRAPH_BATCHES * 0.003 + 0.01 + SINGLE_REPS * 1e-4) + 0.05
        out.append({"group": "empty", "name": f"empty_b{b}", "params": {"block": b, "grids": list(GRIDS)},
                    "est_s": est})
    for label, thr, smem, occ in SPIN_OCC:
        for c in SPIN_CYCLES:
            t = sum(math.ceil(g / (132 * occ)) * (c / 1.7e9 + 2e-6) for g in SPIN_GRIDS)
            est = t * (SPIN_GRAPH_LAUNCHES * SPIN_BATCHES + SPIN_SINGLE_REPS + 1) + len(SPIN_GRIDS) * 0.02
            out.append({"group": "spin", "name": f"spin_c{c}_{label}",
                        "params": {"spin_cycles": c, "threads": thr, "dynamic_smem_bytes": smem,
                                   "ctas_per_sm_allowed": occ, "grids": list(SPIN_GRIDS)}, "est_s": est})
    for k in KERNELS:
        for s in SIZES:
            out.append({"group": "stream", "name": f"{k}_{s // MIB}MiB",
                        "params": {"kernel": k, "bytes": s, "bytes_moved": stream_bytes_moved(k, s),
                                   "modes": list(MODES), "rotate_sets": rotate_slices(s),
                                   "flush_bytes": FLUSH_BYTES, "threads": STREAM_THREADS},
                        "est_s": _est_stream(k, s)})
    return out


def groups(pts: list[dict]) -> list[str]:
    return list(dict.fromkeys(p["group"] for p in pts))


def planned_seconds(pts: list[dict]) -> float:
    return 15.0 + sum(p["est_s"] for p in pts)   # compile + context + allocation


# ---------------------------------------------------------------- stamps (pure)
def analyse_stamps(stamps, resident: int) -> dict:
    """Per-CTA stamps (rows [smid, clk0, clk1, gt0, gt1, _]) of one launch -> placement facts.

    relaunch_gap_cycles: on each SM, for every CTA after the first `resident` that started there,
    its clock64 start minus the latest clock64 end on that SM at or before it (the time a freed
    slot stays empty: CTA retire + dispatch of the next); negative values (a slot that was free
    before, e.g. partial residency) are dropped. first_wave_spread_ns: max - min globaltimer start
    over each SM's first CTA. span_ns: last end - first start. kernel_clock_mhz: median over CTAs
    of clock64 cycles / globaltimer ns (CTAs whose globaltimer advanced)."""
    st = np.asarray(stamps, dtype=np.int64).reshape(-1, 6)
    sm = st[:, 0]
    gaps, firsts, per_sm, conc = [], [], {}, 0
    for s in np.unique(sm):
        rows = st[sm == s]
        rows = rows[np.argsort(rows[:, 1], kind="stable")]
        per_sm[int(s)] = len(rows)
        firsts.append(int(rows[0, 3]))
        ends = rows[:, 2]
        for i in range(resident, len(rows)):
            prev = ends[:i][ends[:i] <= rows[i, 1]]
            if prev.size:
                gaps.append(int(rows[i, 1] - prev.max()))
        ev = sorted([(a, 1) for a in rows[:, 3]] + [(b, -1) for b in rows[:, 4]], key=lambda e: (e[0], e[1]))
        cur = 0
        for _, d in ev:
            cur += d
            conc = max(conc, cur)
    dt = st[:, 4] - st[:, 3]
    ok = dt > 0
    clk = float(np.median((st[ok, 2] - st[ok, 1]) / dt[ok] * 1e3)) if ok.any() else None
    out = {"ctas": int(len(st)), "sms_used": len(per_sm), "ctas_per_sm_max": max(per_sm.values()),
           "ctas_per_sm_min": min(per_sm.values()), "max_concurrent_ctas_per_sm": conc,
           "first_wave_spread_ns": float(max(firsts) - min(firsts)),
           "span_ns": float(st[:, 4].max() - st[:, 3].min()), "kernel_clock_mhz": clk,
           "cta_cycles_median": float(np.median(st[:, 2] - st[:, 1]))}
    if gaps:
        g = np.asarray(gaps, dtype=float)
        out["relaunch_gap_cycles"] = {"median": float(np.median(g)), "p10": float(np.percentile(g, 10)),
                                      "p90": float(np.percentile(g, 90)), "n": int(g.size)}
    return out


# ---------------------------------------------------------------- summary (pure)
def summary(records: list[dict]) -> str:
    """One table per group: empty (us per launch by grid, graph), spin (graph us, relaunch gap),
    stream (us per launch by mode)."""
    lines = []
    for r in records:
        if r.get("error"):
            lines.append(f"{r['name']}: ERROR {r['error']}")
            continue
        res = r.get("results", {})
        if r["group"] == "empty":
            row = " ".join(f"{g}:{v['graph_us']:.2f}" for g, v in res.items())
            lines.append(f"{r['name']:<22} graph us/launch by grid: {row}")
        elif r["group"] == "spin":
            row = " ".join(f"{g}:{v['graph_us']:.1f}/{v['stamps'].get('relaunch_gap_cycles', {}).get('median', float('nan')):.0f}"
                           for g, v in res.items())
            lines.append(f"{r['name']:<22} grid:graph us/relaunch gap cyc: {row}")
        else:
            row = " ".join(f"{m}:{res[m]['us_median']:.2f}" for m in MODES if m in res)
            lines.append(f"{r['name']:<22} us/launch: {row}")
    return "\n".join(lines)
