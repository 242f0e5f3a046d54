"""Global-memory fields from the H100 gmem microbenchmarks (validation/micro_gmem.py records,
validation/records/h100/gmem/gmem.jsonl); `calibrate.calibrate` adds these rows when the file
exists (else the fields keep their provisional defaults in h100_sxm.py).

| field | rule (records: results key) |
|---|---|
| gmem_outstanding_sectors_per_sm | Little's law: max over the all-SM ld.global streams (read_hbm, read_l2) of bytes_per_cycle_per_sm x the unloaded load latency in cycles of the same level (chase: median cycles_per_load of the ld.global.cg chases <= 16 MiB for L2, of the chases >= 64 MiB for HBM), / 32 B per sector, rounded up: the sectors an SM kept in flight |
| hbm_write_bytes_per_s | mixed traffic on the one HBM link: the copy streams beyond L2 (store_hbm, copy_*: read N + write N bytes) at C = max bytes_per_s (both directions counted) and the read streams at R = max read_hbm bytes_per_s give the write rate X with 2/C = 1/R + 1/X (the model's write-backs share the read link); pure write streams (write_*) run faster on the H100 (named in the source, not used: the kernels that matter mix both) |

Only these microbenchmark records are read (never the portfolio kernels' records: they are the
held-out set). Latencies are in SM cycles (SM clock domain per microbench__clock_domain), the
bandwidths per second (memory clock domain), as calibrate.py's other rules.
"""

from __future__ import annotations

import json
import math
import pathlib
import statistics

GMEM_FILE = pathlib.Path("gmem") / "gmem.jsonl"
SECTOR = 32


def gmem_records(records_dir: pathlib.Path) -> list[dict]:
    """The gmem microbenchmark records under `records_dir` (none when the file is absent);
    records with an error are left out."""
    path = pathlib.Path(records_dir) / GMEM_FILE
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            if not r.get("error"):
                out.append(r)
    return out


def _src(recs: list[dict], what: str) -> str:
    prov = recs[0].get("provenance", {})
    return (f"measured: gmem/gmem.jsonl ({prov.get('device_name', '?')}, {str(prov.get('date_utc', '?'))[:10]}, "
            f"commit {str(prov.get('git_commit', '?'))[:7]}): {what}")


def chase_latency_cycles(recs: list[dict]) -> dict[str, float]:
    """Unloaded ld.global latency in cycles: 'l2' = median over the .cg chases of footprint
    <= 16 MiB, 'hbm' = median over the chases of footprint >= 64 MiB."""
    chase = [r for r in recs if r.get("group") == "chase"]
    l2 = [r["results"]["cycles_per_load"] for r in chase
          if r["params"].get("cache_op") == "cg" and r["params"]["footprint_bytes"] <= 16 << 20]
    hbm = [r["results"]["cycles_per_load"] for r in chase if r["params"]["footprint_bytes"] >= 64 << 20]
    if not l2 or not hbm:
        return {}
    return {"l2": statistics.median(l2), "hbm": statistics.median(hbm)}


def derive_gmem(records_dir: pathlib.Path) -> dict[str, tuple[float, str]]:
    """field -> (value, source) from the gmem records; {} when there are none."""
    recs = gmem_records(records_dir)
    if not recs:
        return {}
    out: dict[str, tuple[float, str]] = {}
    lat = chase_latency_cycles(recs)
    streams = [r for r in recs if r.get("group") in ("read_hbm", "read_l2")]
    if lat and streams:
        def inflight(r):
            return r["results"]["bytes_per_cycle_per_sm"] * lat[r["params"]["where"]]
        best = max(streams, key=inflight)
        sectors = math.ceil(inflight(best) / SECTOR)
        out["gmem_outstanding_sectors_per_sm"] = (float(sectors), _src(
            recs, f"Little's law: max over {len(streams)} all-SM ld.global streams: {best['name']} "
                  f"{best['results']['bytes_per_cycle_per_sm']:.3f} B/cycle/SM x {lat[best['params']['where']]:.1f} "
                  f"cycles ({best['params']['where']} chase latency) = {inflight(best):.0f} B in flight / 32 B, "
                  "rounded up"))
    copies = [r for r in recs if r.get("group") == "store_hbm" and r["name"].startswith("copy_")]
    reads = [r for r in recs if r.get("group") == "read_hbm"]
    writes = [r for r in recs if r.get("group") == "store_hbm" and r["name"].startswith("write_")]
    if copies and reads:
        c = max(copies, key=lambda r: r["results"]["bytes_per_s"])
        rd = max(reads, key=lambda r: r["results"]["bytes_per_s"])
        cbs, rbs = c["results"]["bytes_per_s"], rd["results"]["bytes_per_s"]
        x = 1.0 / (2.0 / cbs - 1.0 / rbs)
        pure = max((r["results"]["bytes_per_s"] for r in writes), default=float("nan"))
        out["hbm_write_bytes_per_s"] = (x, _src(
            recs, f"2 / C = 1 / R + 1 / X with C = {cbs / 1e12:.3f} TB/s ({c['name']}, read + write bytes, "
                  f"max of {len(copies)} copy streams beyond L2), R = {rbs / 1e12:.3f} TB/s ({rd['name']}, max of "
                  f"{len(reads)} read streams); pure st.global streams reach {pure / 1e12:.3f} TB/s (not used)"))
    return out
