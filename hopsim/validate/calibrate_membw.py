"""Memory-bound mechanism fields from the H100 membw microbenchmarks (validation/micro_membw.py,
validation/records/h100/membw/membw.jsonl; plan: validation/membw_plan.py); `calibrate.calibrate`
adds these rows when the file exists (else the fields keep their defaults in h100_sxm.py).

| field | rule (records: results key) |
|---|---|
| gmem_line_issue_cycles | chain, lone warp (1 SM, 1 warp, warp layout, ld.global.cg): least-squares slope of the L2 re-read passes' cycles per trip (passes 1.., median over warps) over the 128-B lines one warp request touches (32 x vec / 128: 1, 2, 4 for 4/8/16-B vectors): the time each further line of one request adds |
| gld_bytes_per_cycle_per_sm | sms, L2: the plateau of one SM's read rate when few SMs read: median over the 1..4-SM points of the widest vector of bytes per launch / (median launch time - the event overhead) / SMs / the SM clock (beyond 4 SMs the chip's L2 shares it). Event overhead: median over the .cg chain points of (fastest launch - clock64 cycles of the slowest warp / clock): those points time one launch both ways |
| gmem_outstanding_sectors_per_sm | sms, one SM (Little's law where neither the chip's links nor other SMs' traffic limit): max over the 1-SM points of the work's bytes per cycle (as above) x the unloaded latency of the same level (gmem chase: calibrate_gmem.chase_latency_cycles) / 32 B, rounded up (replaces calibrate_gmem's all-SM rule: at 132 SMs the loaded latency exceeds the unloaded one, so that rule undercounts what one SM keeps in flight) |
| hbm_loaded_latency_fraction | copyu (grid-stride copies beyond L2, all SMs, 1-2 loads of 4-16 B in flight per thread): each point's loaded miss latency by Little's law L = x / (its read rate per SM per cycle), x = warps/SM x 32 x vec x unroll bytes in flight; k = median over the points below 0.95 x the fastest copy of (L - L0) / (x (1/R + 1/X)), L0 the unloaded HBM latency (gmem chase), R, X one SM's HBM read and write rates (hbm_bytes_per_s, hbm_write_bytes_per_s / SMs / SM clock); the saturated points only show the link's rate |
| l2_effective_capacity_fraction | reuse (read and copy): a footprint re-reads at L2 speed when its extra rounds ((t4 - t1) / 3 per round) move its bytes faster than 2 x the all-SM HBM read rate (sms, HBM, 132 SMs); capacity = the midpoint between the largest such footprint and the smallest larger one that does not (a copy's footprint: source + destination), / spec.l2_bytes |
| l2_reread_ramp_start_fraction, l2_reread_ramp_end_fraction | reuse, read: each footprint F's re-read hit share h(F) = (tau_miss - tau(F)) / (tau_miss - tau_hit), clipped to [0, 1], tau(F) the extra rounds' seconds per byte ((t4 - t1) / 3 / F; 0 when t4 <= t1), tau_miss = 1 / the all-SM HBM read rate (sms, HBM, 132 SMs), tau_hit = the fastest read footprint's tau; the ramp (1 up to start, 0 from end, linear between) with the least squared error over the read footprints, start and end on a 1-MiB grid (the first best in (start, end) order), / spec.l2_bytes. Check, not fitted: the copies' footprints (source + destination) hit where the ramp says (copy 32 MiB at L2 speed, 48 MiB not: stores count in the footprint) |

NOT_APPLIED: fitted here (tested, reported by `line_issue`) but not written to the calibrated
config: gmem_line_issue_cycles (8.26 cycles per further line from the lone-warp chains) moves the
fast (partitioned, memo) and exact (shared) memory modes of a 4-SM softmax with one CTA per row
1.3-2.7% apart (tests/timing/test_fast_equals_exact.py bounds them at 1%; 0.6% without it): the
partitioned approximation's error grows with it, to be understood before it is applied.

Only these microbenchmark records are read (never the portfolio kernels' records: they are the
held-out set). Latencies in SM cycles; bandwidths per second (memory clock domain).
"""

from __future__ import annotations

import json
import math
import pathlib
import statistics

from hopsim.validate.calibrate_gmem import chase_latency_cycles, gmem_records

MEMBW_FILE = pathlib.Path("membw") / "membw.jsonl"
SECTOR, LINE, MIB = 32, 128, 1 << 20
FEW_SMS = 4
"""sms points up to this many SMs form the one-SM plateau (the L2 rate per SM falls beyond it)."""

CAL_ROWS = frozenset({
    *(f"chain_cg_v{v}_warp_s1_w1:{k}" for v in (4, 8, 16) for k in (1, 2)),
    *(f"sms_l2_v16_u4_s{s}" for s in (1, 2, 4)), "sms_hbm_v16_u4_s1", "sms_l2_v16_u4_s1",
    *(f"reuse_read_{f}MiB_r{r}" for f in (40, 48) for r in (1, 4)),
})
"""Points (chain: name:pass) a number is read from by the rules above (the simulate() rows of
hopsim/validate/micro_ir/membw.py mark them as calibration rows)."""


def membw_records(records_dir) -> list[dict]:
    """The membw records under `records_dir` (none when the file is absent); failed points left out."""
    path = pathlib.Path(records_dir) / MEMBW_FILE
    if not path.exists():
        return []
    recs = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return [r for r in recs if not r.get("error")]


def _src(recs: list[dict], what: str) -> str:
    prov = recs[0].get("provenance", {})
    return (f"measured: membw/membw.jsonl ({prov.get('device_name', '?')}, {str(prov.get('date_utc', '?'))[:10]}, "
            f"commit {str(prov.get('git_commit', '?'))[:7]}): {what}")


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def line_issue(recs: list[dict]) -> tuple[float, str] | None:
    """gmem_line_issue_cycles from the lone-warp chains (see the table)."""
    pts = [r for r in recs if r["family"] == "chain" and r["params"]["cache_op"] == "cg"
           and r["params"]["layout"] == "warp" and r["params"]["sms"] == 1 and r["params"]["warps_per_sm"] == 1]
    xs, ys, seen = [], [], []
    for r in sorted(pts, key=lambda r: r["params"]["vec_bytes"]):
        lines = 32 * r["params"]["vec_bytes"] / LINE
        for m in r["results"]["passes"][1:]:
            xs.append(lines)
            ys.append(float(m["median_cycles_per_trip"]))
        seen.append(f"{lines:.0f} line(s) {statistics.fmean(ys[-len(r['results']['passes'][1:]):]):.1f}")
    if len(set(xs)) < 2:
        return None
    s = slope(xs, ys)
    return s, _src(recs, f"lone-warp ld.global.cg chains, L2 re-read cycles per trip vs lines per warp request "
                         f"({', '.join(seen)}): least-squares slope {s:.2f} cycles per further line")


def event_overhead_s(recs: list[dict]) -> float | None:
    """Seconds a CUDA-event-timed launch of these kernels takes beyond its work: median over the
    ld.global.cg chain points of (fastest launch - the slowest warp's clock64 cycles of all passes
    / the SM clock). The chain points time the same launch both ways; the sms/copyu/reuse points
    have events only."""
    over = []
    for r in recs:
        if r["family"] != "chain" or r["params"].get("cache_op") != "cg":
            continue
        res = r["results"]
        mhz = (r.get("sm_clock") or {}).get("nvml_median_mhz")
        if not mhz or not res.get("ms_all"):
            continue
        cyc = sum(float(p["max_cycles_per_trip"]) * res["trips"] for p in res["passes"])
        over.append(min(res["ms_all"]) * 1e-3 - cyc / (float(mhz) * 1e6))
    return statistics.median(over) if over else None


def work_rate(rec: dict, overhead_s: float) -> float:
    """Bytes per second per SM of an sms point's work: its launch's bytes / (median launch time -
    the event overhead)."""
    res = rec["results"]
    return res["bytes_per_launch"] / (res["ms_median"] * 1e-3 - overhead_s) / rec["params"]["sms"]


def load_path(recs: list[dict]) -> tuple[float, str] | None:
    """gld_bytes_per_cycle_per_sm from the sms L2 plateau (see the table)."""
    over = event_overhead_s(recs)
    if over is None:
        return None
    by_vec: dict[int, list[float]] = {}
    for r in recs:
        p = r["params"]
        if r["family"] == "sms" and p["where"] == "l2" and p["sms"] <= FEW_SMS:
            by_vec.setdefault(p["vec_bytes"], []).append(
                work_rate(r, over) / (float(r["sm_clock"]["nvml_median_mhz"]) * 1e6))
    if not by_vec:
        return None
    vec = max(by_vec)
    v = statistics.median(by_vec[vec])
    return v, _src(recs, f"sms L2 reads, {vec}-B vectors, 1..{FEW_SMS} SMs: median per-SM rate of the work "
                         f"{v:.2f} B/cycle ({', '.join(f'{x:.2f}' for x in by_vec[vec])}): bytes / (median launch - "
                         f"{over * 1e6:.2f} us event overhead, chain points' fastest launch - clock64 time) / SM clock")


def outstanding(recs: list[dict], lat: dict) -> tuple[float, str] | None:
    """gmem_outstanding_sectors_per_sm: Little's law at one SM (see the table)."""
    over = event_overhead_s(recs)
    ones = [r for r in recs if r["family"] == "sms" and r["params"]["sms"] == 1 and r["results"].get("ms_median")]
    if not ones or not lat or over is None:
        return None
    def per_cycle(r):
        return work_rate(r, over) / (float(r["sm_clock"]["nvml_median_mhz"]) * 1e6)
    def inflight(r):
        return per_cycle(r) * lat[r["params"]["where"]]
    best = max(ones, key=inflight)
    sectors = math.ceil(inflight(best) / SECTOR - 1e-9)  # whole sectors (float noise not rounded up)
    return float(sectors), _src(recs, f"Little's law at one SM: max over {len(ones)} one-SM read streams: {best['name']} "
                                      f"{per_cycle(best):.2f} B/cycle (launch less the {over * 1e6:.2f} us event overhead) x "
                                      f"{lat[best['params']['where']]:.1f} cycles (gmem/ {best['params']['where']} chase "
                                      f"latency) = {inflight(best):.0f} B in flight / 32 B, rounded up")


def per_round_rates(recs: list[dict]) -> dict[tuple[str, int], float]:
    """(op, footprint bytes incl. a copy's destination) -> bytes per second of the extra rounds of
    the reuse points ((rounds 4 - rounds 1) / 3 per round; inf when t4 <= t1: within the noise)."""
    by = {(r["params"]["op"], r["params"]["footprint_bytes"], r["params"]["rounds"]): r
          for r in recs if r["family"] == "reuse"}
    out = {}
    for (op, fp, rounds), r in by.items():
        other = by.get((op, fp, 4))
        if rounds != 1 or other is None:
            continue
        d = (float(other["results"]["ms_median"]) - float(r["results"]["ms_median"])) / 3 * 1e-3
        moved = fp * (2 if op == "copy" else 1)
        out[(op, moved)] = moved / d if d > 0 else math.inf
    return out


def l2_capacity(recs: list[dict], l2_bytes: float) -> tuple[float, str] | None:
    """l2_effective_capacity_fraction from the reuse points (see the table)."""
    hbm = [float(r["results"]["bytes_per_s"]) for r in recs
           if r["family"] == "sms" and r["params"]["where"] == "hbm" and r["params"]["sms"] == max(
               x["params"]["sms"] for x in recs if x["family"] == "sms")]
    rates = per_round_rates(recs)
    if not hbm or not rates:
        return None
    bar = 2 * max(hbm)
    hits = [fp for (_op, fp), v in rates.items() if v > bar]
    misses = [fp for (_op, fp), v in rates.items() if v <= bar and (not hits or fp > max(hits))]
    if not hits or not misses:
        return None
    lo, hi = max(hits), min(misses)
    cap = (lo + hi) / 2
    return cap / l2_bytes, _src(recs, f"reuse re-read rounds faster than 2 x {max(hbm) / 1e12:.2f} TB/s (all-SM HBM "
                                      f"read) up to {lo / MIB:.0f} MiB, not at {hi / MIB:.0f} MiB: capacity "
                                      f"{cap / MIB:.0f} MiB (the midpoint) / {l2_bytes / MIB:.0f} MiB")


def reread_shares(recs: list[dict]) -> list[tuple[float, float]] | None:
    """(footprint bytes, re-read hit share) of each reuse read footprint (see the table)."""
    hbm = [float(r["results"]["bytes_per_s"]) for r in recs
           if r["family"] == "sms" and r["params"]["where"] == "hbm" and r["params"]["sms"] == max(
               x["params"]["sms"] for x in recs if x["family"] == "sms")]
    rates = {fp: v for (op, fp), v in per_round_rates(recs).items() if op == "read"}
    finite = [v for v in rates.values() if math.isfinite(v)]
    if not hbm or not finite:
        return None
    t_miss, t_hit = 1.0 / max(hbm), 1.0 / max(finite)
    if t_hit >= t_miss:
        return None
    return [(fp, min(1.0, max(0.0, (t_miss - 1.0 / v) / (t_miss - t_hit)))) for fp, v in sorted(rates.items())]


def ramp_share(fp: float, start: float, end: float) -> float:
    """The ramp's hit share at footprint fp (as dispatch_residency.reread_hit_fraction)."""
    return 1.0 if fp <= start else 0.0 if fp >= end else (end - fp) / (end - start)


def reread_ramp(recs: list[dict], l2_bytes: float) -> tuple[tuple[float, str], tuple[float, str]] | None:
    """(l2_reread_ramp_start_fraction, l2_reread_ramp_end_fraction) from the reuse read points
    (see the table)."""
    pts = reread_shares(recs)
    if not pts or len(pts) < 3:
        return None
    top = int(max(fp for fp, _h in pts) // MIB)
    best = None
    for a in range(1, top + 1):
        for b in range(a + 1, 2 * top + 1):
            err = sum((ramp_share(fp, a * MIB, b * MIB) - h) ** 2 for fp, h in pts)
            if best is None or err < best[0] - 1e-12:
                best = (err, a, b)
    err, a, b = best
    res = ", ".join(f"{fp / MIB:.0f} MiB {h:.2f}/{ramp_share(fp, a * MIB, b * MIB):.2f}" for fp, h in pts)
    what = (f"reuse_read rounds' hit shares (measured/ramp: {res}); least squares {err:.3f}: ramp from {a} to {b} MiB "
            f"/ {l2_bytes / MIB:.0f} MiB")
    return (a * MIB / l2_bytes, _src(recs, what)), (b * MIB / l2_bytes, _src(recs, what))


UNSATURATED = 0.95
"""copyu points below this fraction of the fastest copy are latency-bound (the loaded-latency fit's)."""


def copy_inflight_bytes(p: dict) -> int:
    """Bytes of ld.global one SM has in flight in a copyu point: warps x 32 lanes x vec x unroll."""
    return p["warps_per_sm"] * 32 * p["vec_bytes"] * p["unroll"]


def loaded_latency(recs: list[dict], lat: dict, read_bps: float, write_bps: float,
                   num_sms: int) -> tuple[float, str] | None:
    """hbm_loaded_latency_fraction from the copyu points (see the table)."""
    pts = [r for r in recs if r["family"] == "copyu" and r["results"].get("bytes_per_s")]
    if not pts or "hbm" not in lat:
        return None
    fastest = max(float(r["results"]["bytes_per_s"]) for r in pts)
    ks, seen = [], []
    for r in sorted(pts, key=lambda r: r["name"]):
        b = float(r["results"]["bytes_per_s"])
        if b >= UNSATURATED * fastest:
            continue
        hz = float(r["sm_clock"]["nvml_median_mhz"]) * 1e6
        x = copy_inflight_bytes(r["params"])
        latency = x / (b / 2 / num_sms / hz)  # Little's law: the reads are half the copy's bytes
        link = x * num_sms * hz * (1.0 / read_bps + 1.0 / write_bps)
        ks.append((latency - lat["hbm"]) / link)
        seen.append(f"{r['name']} {ks[-1]:.3f}")
    if not ks:
        return None
    k = statistics.median(ks)
    return k, _src(recs, f"copyu below {UNSATURATED} x the fastest copy ({fastest / 1e12:.3f} TB/s): median of "
                         f"(Little's-law latency - {lat['hbm']:.1f} cycles gmem/ hbm chase) / link time of the bytes "
                         f"in flight at R {read_bps / 1e12:.3f}, X {write_bps / 1e12:.3f} TB/s over {num_sms} SMs "
                         f"({', '.join(seen)}) = {k:.3f}")


NOT_APPLIED = frozenset({"gmem_line_issue_cycles"})


def derive_membw(records_dir, l2_bytes: float, hbm_rates: tuple[float, float] | None = None,
                 num_sms: int = 132) -> dict[str, tuple[float, str]]:
    """field -> (value, source) from the membw records; {} when there are none. `hbm_rates`: the
    calibrated (hbm_bytes_per_s, hbm_write_bytes_per_s) the loaded-latency rule divides by (None:
    that rule not run)."""
    recs = membw_records(records_dir)
    if not recs:
        return {}
    lat = chase_latency_cycles(gmem_records(records_dir))
    ramp = reread_ramp(recs, l2_bytes)
    got = {"gld_bytes_per_cycle_per_sm": load_path(recs),
           "l2_reread_ramp_start_fraction": ramp[0] if ramp else None,
           "l2_reread_ramp_end_fraction": ramp[1] if ramp else None,
           "gmem_outstanding_sectors_per_sm": outstanding(recs, lat),
           "l2_effective_capacity_fraction": l2_capacity(recs, l2_bytes),
           "hbm_loaded_latency_fraction": loaded_latency(recs, lat, *hbm_rates, num_sms) if hbm_rates else None}
    return {k: v for k, v in got.items() if v is not None}
