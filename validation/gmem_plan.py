"""The plan, point-time estimates and record schema of the global-memory microbenchmarks
(validation/micro_gmem.py runs them on the H100; kernels in validation/cuda/micro_gmem.cu).
Pure Python (no cupy): the tests and the hopsim side read plans and records anywhere.

Families (one JSON line per point, `kind` = "microbench_gmem"):
  chase     dependent-load latency, one thread, random cyclic permutation of 128-B lines, footprints
            16 KiB (L1) .. 20 MiB (L2) .. 1 GiB (HBM); cycles (clock64) and ns (globaltimer).
  read      streaming ld.global.cg, persistent grid of `warps_per_sm` warps on every SM, vector width
            4/8/16 B, U = 1/2/4/8 independent loads per thread in flight; HBM (1 GiB read once) and
            L2-resident (16 MiB read `rounds` times in one launch).
  write     st.global stream (U = 4), 4/16 B, HBM and L2-resident.
  copy      ld.global.cg + st.global (U = 4), 4/16 B, HBM and L2-resident (bytes = read + written;
            footprint_bytes is per buffer: 1 GiB -> 1 GiB, and 8 MiB -> 8 MiB for L2).
  coalesce  4-B loads with a lane stride of 4..128 B (sectors per warp request = min(32, stride)).

Little's law (what the read family is for): bytes in flight per SM = bandwidth per SM x latency;
with the chase latency of the same footprint, `inflight_bytes_per_sm` of a read point is the
outstanding bytes the SM sustained; its plateau over occupancy and U bounds the outstanding requests.
"""

from __future__ import annotations

import math

KIND = "microbench_gmem"
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

# ---------------------------------------------------------------- the sweep
#: chase footprints (bytes, cache operator): L1 (<= ~200 KiB), L2 (<= ~50 MiB), HBM beyond.
CHASE = ([(f, "ca") for f in (16 * KIB, 32 * KIB, 64 * KIB, 128 * KIB, 192 * KIB, 256 * KIB, 512 * KIB, MIB,
                              4 * MIB, 16 * MIB, 20 * MIB, 32 * MIB, 48 * MIB, 64 * MIB, 256 * MIB, GIB)]
         + [(f, "cg") for f in (16 * KIB, MIB, 4 * MIB, 16 * MIB, 20 * MIB)])
CHASE_STEPS = 4096        # timed dependent loads per launch
CHASE_LAUNCHES = 3        # median over launches (each continues the chain)
WARPS_PER_SM = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64)
READ_VEC = (4, 8, 16)
READ_U = (1, 2, 4, 8)
STORE_VEC = (4, 16)
STORE_WARPS = (4, 8, 16, 32, 64)
STORE_U = 4
STRIDES = (4, 8, 16, 32, 64, 128)
COALESCE_WARPS = 32
COALESCE_U = 4
#: where the data lives: (footprint bytes, passes per launch)
WHERE = {"hbm": (GIB, 1), "l2": (16 * MIB, 32)}
LAUNCHES = 7              # timed launches per streaming point (after one untimed warm-up)

# ---------------------------------------------------------------- time estimates (conservative)
COMPILE_S = 20.0          # nvcc of micro_gmem.cu (~1 s seen on 2 CPU cores) plus slack
CHILD_SETUP_S = 4.0       # per child process: CUDA context, module load, buffers
POINT_OVERHEAD_S = 0.05   # per point: sampler thread, event syncs, record write
EST_LAT_S = {"hbm": 900e-9, "l2": 500e-9}   # loaded latency bound used only for the estimate
EST_PEAK_BPS = {"hbm": 2.5e12, "l2": 5e12}  # lower than measured peaks: estimates err long
EST_SMS = 132
CHASE_SETUP_S = {GIB: 2.0, 256 * MIB: 0.6}   # building the permutation and the chain


def launch_shape(warps_per_sm: int) -> tuple[int, int]:
    """(threads per CTA, CTAs per SM) of a persistent grid with `warps_per_sm` warps on each SM:
    one CTA of all the warps up to 8 warps, else CTAs of 8 warps (4 when 8 does not divide)."""
    if warps_per_sm <= 8:
        return 32 * warps_per_sm, 1
    cta = 8 if warps_per_sm % 8 == 0 else 4
    return 32 * cta, warps_per_sm // cta


def resident_ctas(threads: int, regs_per_thread: int | None, smem_bytes: int = 0) -> int | None:
    """CTAs of `threads` that fit on one H100 SM (64 warps, 32 CTAs, 65536 registers allocated
    per warp in units of 256; CUDA occupancy calculator rules); None when regs are unknown."""
    if not regs_per_thread:
        return None
    warps = math.ceil(threads / 32)
    regs_warp = math.ceil(regs_per_thread * 32 / 256) * 256
    by_regs = (65536 // regs_warp) // warps
    return max(0, min(32, 64 // warps, by_regs))


def _stream_s(where: str, bytes_per_launch: float, warps: int, vec: int, u: int) -> float:
    inflight = EST_SMS * warps * 32 * vec * u
    bw = min(EST_PEAK_BPS[where], inflight / EST_LAT_S[where])
    return (LAUNCHES + 1) * bytes_per_launch / bw + POINT_OVERHEAD_S


def plan() -> list[dict]:
    """Every point in run order: group (one child process), family, name, params, est_s."""
    pts = []
    for fp, op in CHASE:
        est = CHASE_LAUNCHES * CHASE_STEPS * 1e-6 + CHASE_SETUP_S.get(fp, 0.2) + (fp // 128) * 700e-9 * (fp <= 64 * MIB)
        pts.append({"group": "chase", "family": "chase", "name": f"chase_{op}_{fp // KIB}KiB",
                    "params": {"footprint_bytes": fp, "cache_op": op, "steps": CHASE_STEPS,
                               "launches": CHASE_LAUNCHES}, "est_s": est})
    for where, (fp, rounds) in WHERE.items():
        for w in WARPS_PER_SM:
            thr, cps = launch_shape(w)
            for vec in READ_VEC:
                for u in READ_U:
                    pts.append({"group": f"read_{where}", "family": "read", "name": f"read_{where}_w{w}_v{vec}_u{u}",
                                "params": {"where": where, "footprint_bytes": fp, "rounds": rounds, "warps_per_sm": w,
                                           "vec_bytes": vec, "unroll": u, "threads_per_cta": thr, "ctas_per_sm": cps,
                                           "kernel": f"gm_read_v{vec}_u{u}"},
                                "est_s": _stream_s(where, fp * rounds, w, vec, u)})
    for where, (fp, rounds) in WHERE.items():
        for fam in ("write", "copy"):
            for w in STORE_WARPS:
                thr, cps = launch_shape(w)
                for vec in STORE_VEC:
                    fpb = fp // 2 if (fam == "copy" and where == "l2") else fp   # per buffer
                    moved = fpb * rounds * (2 if fam == "copy" else 1)
                    pts.append({"group": f"store_{where}", "family": fam, "name": f"{fam}_{where}_w{w}_v{vec}",
                                "params": {"where": where, "footprint_bytes": fpb, "rounds": rounds, "warps_per_sm": w,
                                           "vec_bytes": vec, "unroll": STORE_U, "threads_per_cta": thr,
                                           "ctas_per_sm": cps, "kernel": f"gm_{fam}_v{vec}_u{STORE_U}"},
                                "est_s": _stream_s(where, moved, w, vec, STORE_U)})
    thr, cps = launch_shape(COALESCE_WARPS)
    for where, (fp, rounds) in WHERE.items():
        for s in STRIDES:
            pts.append({"group": "coalesce", "family": "coalesce", "name": f"coalesce_{where}_s{s}",
                        "params": {"where": where, "footprint_bytes": fp, "rounds": rounds, "stride_bytes": s,
                                   "sectors_per_request": min(32, s), "warps_per_sm": COALESCE_WARPS,
                                   "unroll": COALESCE_U, "threads_per_cta": thr, "ctas_per_sm": cps,
                                   "kernel": "gm_strided_u4"},
                        "est_s": _stream_s(where, fp * rounds, COALESCE_WARPS, 4, COALESCE_U)})
    return pts


def groups(points: list[dict]) -> list[str]:
    """Group names in first-appearance order."""
    out = []
    for p in points:
        if p["group"] not in out:
            out.append(p["group"])
    return out


def planned_seconds(points: list[dict]) -> float:
    """Compile + one child setup per group + every point's estimate."""
    return COMPILE_S + CHILD_SETUP_S * len(groups(points)) + sum(p["est_s"] for p in points)


# ---------------------------------------------------------------- derived numbers (pure)
def stream_result(params: dict, bytes_per_launch: int, ms: list[float], accesses_per_launch: int,
                  nsm: int, sm_clock_mhz: float | None) -> dict:
    """Achieved bandwidth and per-access time of a streaming point from its launch times (ms).

    bytes_per_s: bytes moved (read + written) per second, median launch; ns_per_access: the median
    launch's time divided by the accesses each thread made (one access = one vector load or store
    of one thread), i.e. the mean time between a thread's accesses; bytes_per_cycle_per_sm at the
    given SM clock."""
    m = sorted(ms)[len(ms) // 2] if ms else None
    if not m:
        return {"bytes_per_launch": bytes_per_launch, "ms_median": None}
    bps = bytes_per_launch / (m * 1e-3)
    threads = params["threads_per_cta"] * params["ctas_per_sm"] * nsm
    out = {"bytes_per_launch": bytes_per_launch, "ms_median": m, "ms_all": list(ms), "bytes_per_s": bps,
           "bytes_per_s_per_sm": bps / nsm, "accesses_per_launch": accesses_per_launch,
           "ns_per_access": m * 1e6 / (accesses_per_launch / threads)}
    if sm_clock_mhz:
        out["bytes_per_cycle_per_sm"] = bps / nsm / (sm_clock_mhz * 1e6)
    return out


def inflight(bytes_per_s_per_sm: float, latency_ns: float) -> float:
    """Little's law: bytes in flight per SM = bandwidth per SM x latency."""
    return bytes_per_s_per_sm * latency_ns * 1e-9


# ---------------------------------------------------------------- record schema
REQUIRED = ("kind", "group", "family", "name", "params", "error", "provenance")
RESULT_FIELDS = {
    "chase": ("cycles_per_load", "ns_per_load", "runs_cycles", "runs_ns"),
    "read": ("bytes_per_s", "bytes_per_s_per_sm", "ns_per_access", "ms_median"),
    "write": ("bytes_per_s", "bytes_per_s_per_sm", "ns_per_access", "ms_median"),
    "copy": ("bytes_per_s", "bytes_per_s_per_sm", "ns_per_access", "ms_median"),
    "coalesce": ("bytes_per_s", "useful_bytes_per_s", "sector_bytes_per_s", "ms_median"),
}


def check_record(rec) -> str | None:
    """None if `rec` is a well-formed record, else one line naming the missing/bad field. A point
    that failed or was skipped has `error` set and needs no results."""
    return check_fields(rec, KIND, RESULT_FIELDS)


def check_fields(rec, kind: str, result_fields: dict[str, tuple[str, ...]]) -> str | None:
    """`check_record` of a microbenchmark whose records are `kind` and whose families' results
    have `result_fields` (family -> result keys); shared with membw_plan."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    for k in REQUIRED:
        if k not in rec:
            return f"missing field {k!r}; a {kind} record has {', '.join(REQUIRED)}"
    if rec["kind"] != kind:
        return f"kind={rec['kind']!r}; valid: {kind!r}"
    if rec["family"] not in result_fields:
        return f"family={rec['family']!r}; valid: {', '.join(result_fields)}"
    if rec["error"] is not None:
        return None
    res = rec.get("results")
    if not isinstance(res, dict):
        return "missing field 'results' (an object) in a record without error"
    for k in result_fields[rec["family"]]:
        if k not in res:
            return f"results lacks {k!r} (family {rec['family']})"
    for k in ("launch", "sm_clock", "power_samples_summary"):
        if k not in rec:
            return f"missing field {k!r} in a record without error"
    return None
