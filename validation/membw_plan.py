"""The plan, point-time estimates and record schema of the memory-bound mechanism microbenchmarks
(validation/micro_membw.py runs them on the H100; kernels in validation/cuda/micro_membw.cu).
Pure Python (no cupy): the tests and the hopsim side read plans and records anywhere.

Why (issue 15, the memory-bound portfolio): each family isolates one mechanism the global-memory model
needs, measured apart from the portfolio kernels (whose held-out records are test data):

  chain   load-use chain latency: ONE vector load per trip, used before the next (the row kernels'
          `#pragma unroll 1` loop), `passes` passes over the warp's (layout warp) or CTA's (layout cta)
          row: pass 0 from HBM (never read before), later passes re-read it (L2, or L1 with .ca).
          Swept over SMs used (1..132, one CTA per SM), warps per SM (1..64) and vector width
          (4/8/16 B): cycles per trip of a lone warp = the unloaded load-use latency of one warp
          request (1, 2 or 4 lines); many warps on many SMs = the loaded latency.
  sms     streaming read bandwidth with high memory-level parallelism (32 warps/SM, U loads in
          flight per thread) on 1..132 SMs (one CTA per SM): the most bytes/cycle ONE SM can pull
          from HBM and from L2 when the other SMs are idle (does an SM get more than 1/132 of the
          chip's bandwidth?).
  copyu   grid-stride copy with U = 1 or 2 loads in flight per thread (the scalar and float4 copy
          loops) at 16..64 warps/SM on all SMs, HBM: bytes in flight per SM x loaded latency with
          the stores' write-backs on the same HBM (Little's law with stores interleaved).
  reuse   re-read of a footprint F (8..96 MiB) by all SMs (32 warps/SM, float4 x 4 in flight),
          `rounds` 1 and 4 in one launch, read-only and as a copy (src re-read, dst re-written: the
          stores' share of L2): the effective L2 capacity for re-reads, (t4 - t1) / 3 per round
          against the HBM and L2 rates.

Every point runs one untimed launch, then LAUNCHES timed launches (CUDA events, median); the
chain family also records clock64 cycles per pass per warp. Records: one JSON line per point,
kind "microbench_membw"; params, launch (grid, block, SMs used, CTAs per SM), results, sm_clock
(NVML median and the kernel's clock64/globaltimer), power_samples_summary, provenance.
"""

from __future__ import annotations

from validation.gmem_plan import REQUIRED, check_fields, groups  # noqa: F401 (REQUIRED: part of this schema)

KIND = "microbench_membw"
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
NUM_SMS = 132
LAUNCHES = 5
SMEM_ONE_CTA = 120 * KIB   # dynamic smem that leaves room for one CTA per SM (228 KiB per SM)
SMEM_TWO_CTAS = 100 * KIB  # two CTAs per SM, not three

# ---------------------------------------------------------------- the sweep
#: chain: (SMs, warps per SM) at vector widths; trips per pass, passes, layouts
CHAIN_SHAPES = ((1, 1), (1, 8), (1, 32), (8, 8), (33, 8), (132, 1), (132, 8), (132, 32), (132, 64))
CHAIN_VEC = (4, 16)
CHAIN_TRIPS = 16
CHAIN_PASSES = 3
CHAIN_EXTRA = (  # (op, vec, layout, SMs, warps/SM)
    ("cg", 8, "warp", 1, 1), ("cg", 8, "warp", 132, 8),
    ("ca", 16, "warp", 1, 1), ("ca", 16, "warp", 1, 8), ("ca", 16, "warp", 132, 8), ("ca", 4, "warp", 132, 8),
    ("ca", 16, "cta", 1, 8), ("ca", 16, "cta", 8, 8), ("ca", 16, "cta", 66, 8), ("cg", 16, "cta", 8, 8),
)
#: sms: SMs used; (vec, U) of the read; where the data is
SMS = (1, 2, 4, 8, 16, 33, 66, 132)
SMS_READ = ((16, 4), (4, 8))
SMS_WARPS = 32
SMS_BYTES_PER_SM = {"hbm": 2 * MIB, "l2": 4 * MIB}   # bytes each SM reads per launch
SMS_L2_FOOTPRINT = 8 * MIB                            # the L2 case re-reads this many bytes
#: copyu: (vec, U) x warps per SM, HBM, per buffer
COPYU = ((4, 1), (8, 1), (16, 1), (4, 2), (16, 2))
COPYU_WARPS = (16, 32, 64)
COPYU_BYTES = 256 * MIB
#: reuse: footprints, rounds, read or copy
REUSE_FP = (8 * MIB, 16 * MIB, 24 * MIB, 32 * MIB, 40 * MIB, 48 * MIB, 64 * MIB, 96 * MIB)
REUSE_COPY_FP = (8 * MIB, 16 * MIB, 24 * MIB, 32 * MIB, 48 * MIB)
REUSE_ROUNDS = (1, 4)
REUSE_WARPS = 32
BUF_BYTES = GIB            # the chain's and sms' cold-region buffer (regions rotate through it)

# ---------------------------------------------------------------- time estimates (conservative)
COMPILE_S = 20.0
CHILD_SETUP_S = 5.0
POINT_OVERHEAD_S = 0.08
EST_HBM_BPS, EST_L2_BPS = 2.0e12, 4.0e12
EST_TRIP_S = 1.2e-6        # one chain trip at the worst loaded latency


def ctas_per_sm(warps_per_sm: int) -> tuple[int, int]:
    """(threads per CTA, CTAs per SM): one CTA of all the warps up to 32, else two of 32 warps."""
    if warps_per_sm <= 32:
        return 32 * warps_per_sm, 1
    return 1024, warps_per_sm // 32


def smem_for(cps: int) -> int:
    """Dynamic shared memory per CTA that pins `cps` CTAs per SM (at most 2)."""
    return SMEM_ONE_CTA if cps == 1 else SMEM_TWO_CTAS


def _chain_point(op: str, vec: int, layout: str, sms: int, warps: int) -> dict:
    thr, cps = ctas_per_sm(warps)
    trips, passes = CHAIN_TRIPS, CHAIN_PASSES
    footprint = sms * warps * 32 * vec * trips
    est = (LAUNCHES + 1) * passes * trips * EST_TRIP_S + POINT_OVERHEAD_S
    return {"group": "chain", "family": "chain", "name": f"chain_{op}_v{vec}_{layout}_s{sms}_w{warps}",
            "params": {"cache_op": op, "vec_bytes": vec, "layout": layout, "sms": sms, "warps_per_sm": warps,
                       "threads_per_cta": thr, "ctas_per_sm": cps, "trips": trips, "passes": passes,
                       "footprint_bytes": footprint, "smem_bytes": smem_for(cps),
                       "kernel": f"mb_chain_{op}_v{vec}"}, "est_s": est}


def plan() -> list[dict]:
    """Every point in run order: group (one child process), family, name, params, est_s."""
    pts = []
    for sms, w in CHAIN_SHAPES:
        for vec in CHAIN_VEC:
            pts.append(_chain_point("cg", vec, "warp", sms, w))
    for op, vec, layout, sms, w in CHAIN_EXTRA:
        pts.append(_chain_point(op, vec, layout, sms, w))
    thr, cps = ctas_per_sm(SMS_WARPS)
    for where in ("hbm", "l2"):
        for vec, u in SMS_READ:
            for s in SMS:
                nbytes = SMS_BYTES_PER_SM[where] * s
                fp = nbytes if where == "hbm" else min(SMS_L2_FOOTPRINT, nbytes)
                rounds = 1 if where == "hbm" else max(1, nbytes // fp)
                bw = min(EST_HBM_BPS if where == "hbm" else EST_L2_BPS, s * 40e9)
                pts.append({"group": "sms", "family": "sms", "name": f"sms_{where}_v{vec}_u{u}_s{s}",
                            "params": {"where": where, "vec_bytes": vec, "unroll": u, "sms": s,
                                       "warps_per_sm": SMS_WARPS, "threads_per_cta": thr, "ctas_per_sm": cps,
                                       "footprint_bytes": fp, "rounds": rounds, "smem_bytes": smem_for(cps),
                                       "kernel": f"mb_stream_v{vec}_u{u}"},
                            "est_s": (LAUNCHES + 1) * fp * rounds / bw + POINT_OVERHEAD_S})
    for vec, u in COPYU:
        for w in COPYU_WARPS:
            thr, cps = ctas_per_sm(w)
            pts.append({"group": "copyu", "family": "copyu", "name": f"copyu_v{vec}_u{u}_w{w}",
                        "params": {"where": "hbm", "vec_bytes": vec, "unroll": u, "sms": NUM_SMS, "warps_per_sm": w,
                                   "threads_per_cta": thr, "ctas_per_sm": cps, "footprint_bytes": COPYU_BYTES,
                                   "rounds": 1, "smem_bytes": smem_for(cps), "kernel": f"mb_copy_v{vec}_u{u}"},
                        "est_s": (LAUNCHES + 1) * 2 * COPYU_BYTES / (0.6 * EST_HBM_BPS) + POINT_OVERHEAD_S})
    thr, cps = ctas_per_sm(REUSE_WARPS)
    for fam, fps in (("read", REUSE_FP), ("copy", REUSE_COPY_FP)):
        for fp in fps:
            for rounds in REUSE_ROUNDS:
                moved = fp * rounds * (2 if fam == "copy" else 1)
                pts.append({"group": "reuse", "family": "reuse", "name": f"reuse_{fam}_{fp // MIB}MiB_r{rounds}",
                            "params": {"op": fam, "vec_bytes": 16, "unroll": 4 if fam == "read" else 2,
                                       "sms": NUM_SMS, "warps_per_sm": REUSE_WARPS, "threads_per_cta": thr,
                                       "ctas_per_sm": cps, "footprint_bytes": fp, "rounds": rounds,
                                       "smem_bytes": smem_for(cps),
                                       "kernel": "mb_stream_v16_u4" if fam == "read" else "mb_copy_v16_u2"},
                            "est_s": (LAUNCHES + 1) * moved / EST_HBM_BPS + POINT_OVERHEAD_S})
    return pts


def planned_seconds(points: list[dict]) -> float:
    """Compile + one child setup per group + every point's estimate."""
    return COMPILE_S + CHILD_SETUP_S * len(groups(points)) + sum(p["est_s"] for p in points)


# ---------------------------------------------------------------- derived numbers (pure)
def chain_result(cycles: list[list[int]], trips: int, vec: int, ms: list[float], footprint: int) -> dict:
    """Per pass: median and max over warps of clock64 cycles per trip (cycles[w][p] = warp w's
    cycles in pass p, from the median launch), and the launch's time and bytes per second."""
    out = {"trips": trips, "vec_bytes": vec}
    n_pass = len(cycles[0]) if cycles else 0
    per_pass = []
    for p in range(n_pass):
        col = sorted(c[p] / trips for c in cycles)
        per_pass.append({"median_cycles_per_trip": col[len(col) // 2], "max_cycles_per_trip": col[-1],
                         "min_cycles_per_trip": col[0]})
    out["passes"] = per_pass
    m = sorted(ms)[len(ms) // 2] if ms else None
    out["ms_median"], out["ms_all"] = m, list(ms)
    if m:
        out["bytes_per_s"] = footprint * n_pass / (m * 1e-3)
    return out


def stream_result(bytes_per_launch: int, ms: list[float], sms: int, sm_clock_mhz: float | None) -> dict:
    """Bytes per second (read + written) of the median launch, per SM used and per SM cycle."""
    m = sorted(ms)[len(ms) // 2] if ms else None
    if not m:
        return {"bytes_per_launch": bytes_per_launch, "ms_median": None}
    bps = bytes_per_launch / (m * 1e-3)
    out = {"bytes_per_launch": bytes_per_launch, "ms_median": m, "ms_all": list(ms), "bytes_per_s": bps,
           "bytes_per_s_per_sm": bps / sms}
    if sm_clock_mhz:
        out["bytes_per_cycle_per_sm"] = bps / sms / (sm_clock_mhz * 1e6)
    return out


# ---------------------------------------------------------------- record schema
RESULT_FIELDS = {
    "chain": ("passes", "ms_median", "trips"),
    "sms": ("bytes_per_s", "bytes_per_s_per_sm", "ms_median"),
    "copyu": ("bytes_per_s", "bytes_per_s_per_sm", "ms_median"),
    "reuse": ("bytes_per_s", "ms_median"),
}


def check_record(rec) -> str | None:
    """None if `rec` is a well-formed record, else one line naming the missing/bad field. A point
    that failed or was skipped has `error` set and needs no results."""
    return check_fields(rec, KIND, RESULT_FIELDS)
