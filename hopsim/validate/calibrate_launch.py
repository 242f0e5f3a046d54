"""Launch fields from the H100 launch / wave-tail / L2-state microbenchmarks (validation/micro_launch2.py
records, validation/records/h100/launch2/launch2__*.json); `calibrate.calibrate` adds these rows
when the records exist (else the fields keep their defaults in h100_sxm.py and the older
microbench__launch rule).

| field | rule (record: results key) |
|---|---|
| launch_overhead_ns | empty_b32: graph_us of grid 1 (an empty one-CTA kernel back to back in a CUDA graph: the period is the launch alone) |
| launch_per_sm_ns | empty_b32..empty_b256: median over the four blocks of (graph_us of grid 132 - of grid 1) / (SMs - 1) |
| cta_dispatch_cycles | empty_b32..empty_b256: median over the four blocks of (graph_us of grid 16384 - of grid SMs) / (16384 / SMs - 1) CTAs per SM, x the record's SM clock (nvidia-smi, clocks_before): one SM's dispatch interval of short CTAs |
| cta_launch_cycles | spin_c2000_occ1 and spin_c20000_occ1 (one CTA per SM by shared memory): median over their grids of stamps.relaunch_gap_cycles.median (clock64 from a CTA's exit to the next CTA's start on the same SM) |
| l2_dirty_fraction | read_256MiB: (dirty_event - clean_event) us x hbm_write_bytes_per_s / l2_bytes: the dirty bytes a 256 MiB store leaves in L2, written back during the next launch's reads |

Only these microbenchmark records are read (never the portfolio or GEMM records: held out).
"""

from __future__ import annotations

import json
import pathlib
import statistics

LAUNCH2_DIR = pathlib.Path("launch2")


def launch2_records(records_dir: pathlib.Path) -> dict[str, dict]:
    """name -> record of the launch2 records under `records_dir` (none when absent); records with
    an error are left out."""
    d = pathlib.Path(records_dir) / LAUNCH2_DIR
    out = {}
    for p in sorted(d.glob("launch2__*.json")) if d.is_dir() else []:
        r = json.loads(p.read_text())
        if not r.get("error"):
            r["_path"] = f"launch2/{p.name}"
            out[r["name"]] = r
    return out


def _src(rec: dict, what: str) -> str:
    pv = rec.get("provenance", {})
    return (f"measured: {rec['_path']} ({pv.get('device_name', '?')}, {str(pv.get('date_utc', '?'))[:10]}, "
            f"commit {str(pv.get('git_commit', '?'))[:7]}): {what}")


def relaunch_gaps(rec: dict) -> list[float]:
    """The per-grid median relaunch gaps (cycles) of a spin record (grids with relaunches)."""
    return [float(v["stamps"]["relaunch_gap_cycles"]["median"]) for v in rec["results"].values()
            if "relaunch_gap_cycles" in v.get("stamps", {})]


def _empties(recs: dict, grids: set) -> list[dict]:
    return [recs[f"empty_b{b}"] for b in (32, 64, 128, 256)
            if f"empty_b{b}" in recs and grids <= set(recs[f"empty_b{b}"]["results"])]


def per_sm_ns(recs: dict) -> tuple[float, str] | None:
    """(ns, source) the launch overhead grows per SM reached, from the empty-kernel records, or None."""
    used = _empties(recs, {"1", "132"})
    per = []
    for r in used:
        nsm = int(r["provenance"].get("sm_count", 132))
        res = r["results"]
        per.append((float(res[str(nsm)]["graph_us"]) - float(res["1"]["graph_us"])) * 1e3 / (nsm - 1))
    if not per:
        return None
    return statistics.median(per), _src(
        used[0], f"median over empty_b32..b256 of (graph_us[SMs] - graph_us[1]) / (SMs - 1) "
                 f"({', '.join(f'{x:.3f}' for x in per)} ns)")


def dispatch_cycles(recs: dict) -> tuple[float, str] | None:
    """(cycles, source) of one SM's CTA dispatch interval from the empty-kernel records, or None:
    the grid of one CTA per SM to the largest grid adds (CTAs per SM - 1) intervals."""
    used = _empties(recs, {"132", "16384"})
    per = []
    for r in used:
        nsm = int(r["provenance"].get("sm_count", 132))
        mhz = float(r.get("clocks_before", {}).get("sm_clock_mhz") or r["provenance"]["clock_rate_khz_attr"] / 1e3)
        us = float(r["results"]["16384"]["graph_us"]) - float(r["results"][str(nsm)]["graph_us"])
        per.append(us / (16384 / nsm - 1) * mhz)
    if not per:
        return None
    return statistics.median(per), _src(
        used[0], f"median over empty_b32..b256 of (graph_us[16384] - graph_us[SMs]) / (16384 / SMs - 1) x SM MHz "
                 f"(nvidia-smi before the benchmark; {', '.join(f'{x:.1f}' for x in per)} cycles)")


def derive_launch(records_dir: pathlib.Path, hbm_write_bytes_per_s: float, l2_bytes: float) -> dict:
    """field -> (value, source) from the launch2 records; {} when there are none."""
    recs = launch2_records(records_dir)
    out: dict[str, tuple[float, str]] = {}
    empty = recs.get("empty_b32")
    if empty and "1" in empty["results"]:
        us = float(empty["results"]["1"]["graph_us"])
        out["launch_overhead_ns"] = (us * 1e3, _src(empty, f"graph_us of grid 1 = {us:.3f} us per launch "
                                                           "(empty one-CTA kernel back to back in a CUDA graph)"))
    per_sm = per_sm_ns(recs)
    if per_sm is not None:
        out["launch_per_sm_ns"] = per_sm
    disp = dispatch_cycles(recs)
    if disp is not None:
        out["cta_dispatch_cycles"] = disp
    spins = [recs[n] for n in ("spin_c2000_occ1", "spin_c20000_occ1") if n in recs]
    gaps = [g for r in spins for g in relaunch_gaps(r)]
    if gaps:
        out["cta_launch_cycles"] = (statistics.median(gaps), _src(
            spins[0], f"median over {len(gaps)} grids of spin_c2000_occ1 / spin_c20000_occ1 of the median "
                      f"clock64 gap from a CTA's exit to the next CTA's start on its SM ({min(gaps):.0f}.."
                      f"{max(gaps):.0f})"))
    rd = recs.get("read_256MiB")
    if rd:
        res = rd["results"]
        extra_us = float(res["dirty_event"]["us_median"]) - float(res["clean_event"]["us_median"])
        frac = max(0.0, extra_us * 1e-6 * hbm_write_bytes_per_s / l2_bytes)
        out["l2_dirty_fraction"] = (frac, _src(
            rd, f"(dirty_event {res['dirty_event']['us_median']:.2f} - clean_event "
                f"{res['clean_event']['us_median']:.2f}) us x {hbm_write_bytes_per_s / 1e12:.3f} TB/s / "
                f"{l2_bytes / 2**20:.0f} MiB"))
    return out
