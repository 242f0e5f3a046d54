"""Shared-memory port contention fields from microbench__smemport (validation/micro_smemport.py,
record validation/records/h100/smemport/microbench__smemport.json); `calibrate.calibrate` adds
these rows when the record exists (else the port stays uncontended: smem_port_bytes_per_cycle 0).

Only the one-SM rows are read (on all SMs the TMA stream is L2-bound, not port-bound). A stream
is *slowed* in a configuration when its rate there is more than NOISE below its rate alone.

| field | rule (record: results/by_config, one SM) |
|---|---|
| smem_port_bytes_per_cycle | over the wgmma + LSU pairs (wgmma1/wgmma2 with ld, st, stmatrix) in which the LSU stream is slowed: the median of wgmma operand B/cycle + LSU B/cycle there (the LSU takes what the operand reads leave); 0 when no LSU stream is slowed |
| smem_port_rank_wgmma | 1 when wgmma is slowed in none of those pairs (the operand reads keep their rate), else 0 |
| smem_port_rank_lsu | 0 |
| smem_port_fill_tensor_cycles_per_kib | from the one-warpgroup wgmma chains beside a 16-KB-box TMA stream (CHAIN_FILES: wgmma_tma_sliced/'s rows, the k16 slices in turn as a GEMM k-tile; else microbench__wgmma_tma's): the median of (cycles per wgmma with the stream - alone) / (KiB filled per wgmma = stream B/cycle x cycles per wgmma with it / 1024); 0 when no chain is slowed by more than NOISE (the rule of `slowed`). Without those records: the same over this record's wgmma + TMA pairs (wgmma1/wgmma2 + tma) |
| smem_port_tma_weight | 0 when TMA and LSU slow neither stream of the tma + ld/st/stmatrix pairs AND wgmma + TMA + LSU together (the triple) move more than smem_port_bytes_per_cycle: fills are not on the port; else 1 |

The two sources disagree: the smemport pairs lose 1.8-2.0 cycles per KiB filled, the wgmma_tma chains
0.02-0.23 (slowed 0.1-0.9%, below NOISE: 0), and so do the same chains reading the k16 slices in turn
(wgmma_tma_sliced/, 2026-11-25: 0.06-0.29 per KiB, slowed 0.25-1.2%): reading the slices in turn is
not what slows the pairs. The chains are taken: the one-SM GEMM profiles (gemm_cycles__*, a development check, looked
at, never fitted) of mma-bound ws kernels (r128, 128B) run within 1% of the tensor pipe plus the
model's other costs with the chains' charge and 8-11% slow with the pairs' (32-48 KiB filled per
k-tile x 1.9 cycles).

smem_port_wgmma_weight stays at its default (1: every SS operand byte through the port) and
smem_port_rank_tma is not read while the TMA weight is 0. The record's wgmma + TMA pairs slow both
streams (wgmma ~7%, TMA ~30%): the wgmma side is the fill charge above; the TMA side is not modelled
(reported by the microbenchmark fit, hopsim/validate/micro_ir/smemport.py).

Not read: GEMM records (the held-out set).
"""

from __future__ import annotations

import json
import pathlib
import statistics

SMEMPORT_FILE = pathlib.Path("smemport") / "microbench__smemport.json"
CHAIN_FILES = (pathlib.Path("wgmma_tma_sliced") / "microbench__wgmma_tma_sliced.json",
               pathlib.Path("microbench__wgmma_tma.json"))
"""The one-warpgroup wgmma chains beside a TMA stream, the first present is read: the sliced run
(`python3 -m validation.micro_wgmma_tma --sliced`: the k16 slices in turn, a GEMM k-tile's and the
smemport pairs' operand pattern), else the same-slice chains."""
NOISE = 0.03
"""A paired rate more than 3% below the rate alone counts as slowed (launch-to-launch spread of the
one-SM rates is below 1%: the record's *_min_cta and median agree)."""


def smemport_record(records_dir: pathlib.Path) -> dict | None:
    path = pathlib.Path(records_dir) / SMEMPORT_FILE
    return json.loads(path.read_text()) if path.exists() else None


def rate_key(stream: str) -> str:
    return "wgmma_bytes_per_cycle" if stream.startswith("wgmma") else f"{stream}_bytes_per_cycle"


def chain_fill_charge(records_dir: pathlib.Path, pairs: dict[str, float]) -> tuple[float, str] | None:
    """smem_port_fill_tensor_cycles_per_kib from the first CHAIN_FILES record present: median over
    its rows of (with - alone) / KiB filled per wgmma (0 when no row is slowed by more than NOISE);
    `pairs` (the smemport pairs' per-KiB losses) are quoted in the source. None without a record."""
    for rel in CHAIN_FILES:
        path = pathlib.Path(records_dir) / rel
        if not path.exists():
            continue
        rec = json.loads(path.read_text())
        by = rec["results"]["by_config"]
        per = {cfg: (r["with_tma"] - r["alone"]) / (r["tma_bytes_per_cycle"] * r["with_tma"] / 1024)
               for cfg, r in by.items()}
        if not per:
            continue
        prov = rec.get("provenance", {})
        any_slowed = any(slowed(r["alone"], r["with_tma"]) for r in by.values())  # cycles: alone/with = rate ratio
        src = (f"measured: {rel.as_posix()} ({prov.get('device_name', '?')}, {str(prov.get('date_utc', '?'))[:10]}, "
               f"commit {str(prov.get('git_commit', '?'))[:7]}): the one-warpgroup wgmma chains beside a 16-KB-box TMA "
               "stream, (cycles per wgmma with - alone) / KiB filled per wgmma (" +
               ", ".join(f"{c} {v:.3f}" for c, v in sorted(per.items())) + "): " +
               ("their median" if any_slowed else f"no chain slowed by more than {NOISE:.0%}: fills do not slow wgmma, 0") +
               "; smemport's wgmma + TMA pairs (" + ", ".join(f"{c} {v:.3f}" for c, v in sorted(pairs.items())) +
               ") not used: calibrate_smemport.py says why")
        return (statistics.median(per.values()) if any_slowed else 0.0), src
    return None


def slowed(rate: float, alone: float) -> bool:
    return rate < alone * (1 - NOISE)


def _pair_rows(by: dict, left: tuple, right: tuple) -> list[tuple[str, str, str, dict]]:
    """(config, left stream, right stream, row) for the one-SM pairs left x right measured with
    both streams alone too."""
    out = []
    for a in left:
        for b in right:
            cfg = f"{a}+{b}"
            if f"{cfg}|1sm" in by and f"{a}|1sm" in by and f"{b}|1sm" in by:
                out.append((cfg, a, b, by[f"{cfg}|1sm"]))
    return out


def derive_smemport(records_dir: pathlib.Path) -> dict[str, tuple[float, str]]:
    """field -> (value, source) from microbench__smemport; {} when the record is absent."""
    rec = smemport_record(records_dir)
    if rec is None:
        return {}
    prov = rec.get("provenance", {})
    where = (f"measured: smemport/microbench__smemport.json ({prov.get('device_name', '?')}, "
             f"{str(prov.get('date_utc', '?'))[:10]}, commit {str(prov.get('git_commit', '?'))[:7]}): ")
    by = rec["results"]["by_config"]

    def alone(s):
        return by[f"{s}|1sm"][rate_key(s)]

    st = [alone(s) for s in ("st", "stmatrix") if f"{s}|1sm" in by]
    if st:
        out_st = (statistics.median(st), where + "median of the st.shared.v4 and stmatrix.x4 streams alone (" +
                  ", ".join(f"{v:.2f}" for v in st) + " B/cycle; ld.shared alone is latency-bound)")
    lsu = _pair_rows(by, ("wgmma1", "wgmma2"), ("ld", "st", "stmatrix"))
    hit = [(cfg, w, x, row) for cfg, w, x, row in lsu if slowed(row[rate_key(x)], alone(x))]
    out: dict[str, tuple[float, str]] = {}
    if st:
        out["smem_store_bytes_per_cycle"] = out_st
    if not hit:
        out["smem_port_bytes_per_cycle"] = (0.0, where + f"no LSU stream slowed by more than {NOISE:.0%} beside wgmma "
                                            f"({len(lsu)} pairs): no contention")
        return out
    sums = {cfg: row["wgmma_bytes_per_cycle"] + row[rate_key(x)] for cfg, _w, x, row in hit}
    cap = statistics.median(sums.values())
    out["smem_port_bytes_per_cycle"] = (cap, where + "median over the wgmma + LSU pairs with the LSU slowed of wgmma "
                                        "operand B/cycle + LSU B/cycle (" + ", ".join(
                                            f"{c} {v:.1f}" for c, v in sorted(sums.items())) + ")")
    wg_slow = {cfg: alone(w) / row["wgmma_bytes_per_cycle"] for cfg, w, _x, row in hit}
    never = all(not slowed(row["wgmma_bytes_per_cycle"], alone(w)) for _c, w, _x, row in hit)
    out["smem_port_rank_wgmma"] = (1.0 if never else 0.0, where + (
        "wgmma slowed in none of the pairs that slow the LSU (alone/paired " + ", ".join(
            f"{c} {v:.3f}" for c, v in sorted(wg_slow.items())) + "): the operand reads keep their rate, rank 1"
        if never else "wgmma slowed beside the LSU: equal ranks"))
    out["smem_port_rank_lsu"] = (0.0, where + "the LSU streams are the ones slowed beside wgmma: rank 0")
    tl = _pair_rows(by, ("tma",), ("ld", "st", "stmatrix"))
    tl_slow = max((alone(s) / row[rate_key(s)] for _c, _t, x, row in tl for s in ("tma", x)), default=1.0)
    tw = _pair_rows(by, ("wgmma1", "wgmma2"), ("tma",))
    per_kib = {}
    for cfg, w, _t, row in tw:
        alone_cyc, cyc = by[f"{w}|1sm"]["wgmma_cycles_per_op"], row["wgmma_cycles_per_op"]
        kib = row["tma_bytes_per_cycle"] * cyc / 1024
        per_kib[cfg] = (cyc - alone_cyc) / kib
    chain = chain_fill_charge(records_dir, per_kib)
    if chain:
        out["smem_port_fill_tensor_cycles_per_kib"] = chain
    elif per_kib:
        out["smem_port_fill_tensor_cycles_per_kib"] = (statistics.median(per_kib.values()), where + (
            "median over the wgmma + TMA pairs of (cycles per wgmma paired - alone) / KiB filled per wgmma (" +
            ", ".join(f"{c} {v:.3f}" for c, v in sorted(per_kib.items())) + ")"))
    triples = {k.split("|")[0]: sum(v[rate_key(x)] for x in k.split("|")[0].split("+"))
               for k, v in by.items() if k.endswith("|1sm") and k.count("+") == 2 and "tma" in k}
    off = bool(tl and triples and tl_slow <= 1 / (1 - NOISE) and all(v > cap for v in triples.values()))
    out["smem_port_tma_weight"] = (0.0 if off else 1.0, where + (
        f"tma + ld/st/stmatrix: no stream slowed (largest alone/paired {tl_slow:.3f}); wgmma + TMA + LSU together "
        "move more than the port (" + ", ".join(f"{c} {v:.1f}" for c, v in sorted(triples.items())) +
        f" > {cap:.1f} B/cycle): fills are not on the port, weight 0" if off else "TMA fills share the port (weight 1)"))
    return out
