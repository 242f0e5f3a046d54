"""Per-opcode latency and issue interval from microbench__ops (validation/micro_ops.py; issues 14/15).

    from hopsim.validate.calibrate_ops import op_table, derive_ops
    table = op_table(rec)                 # {op: OpFit(latency_cycles, issue_cycles, ...)}
    fields = derive_ops(records_dir)      # {"ops.<op>.<quantity>": (value, source)}; {} without the record

Not wired into `calibrate()` yet: the config fields these numbers go into (with type, unit, meaning
and this source) are added when the record is committed (phase 2 of the per-opcode tables).

| quantity | rule (record microbench__ops: results) |
|---|---|
| latency_cycles | latency[op][reg or distinct].cycles_per_step.median (one warp, one dependent chain), minus the latency of the auxiliary instruction a step carries (AUX: rcp_ftz's add.ftz = fma_f32's latency, vote_ballot's setp = iadd_xor's) |
| latency_same_cycles | memory ops: latency[op][same] likewise (every lane on one word) |
| peak_warp_inst_per_cycle | max over W = 1..32 warps (one CTA per SM) of throughput[op][mode][W].warp_inst_per_cycle_per_sm.median |
| issue_cycles | 4 / peak: cycles one warp instruction of the op holds its sub-partition's pipe when every sub-partition is busy (the SM's 4 schedulers) |
| lane_results_per_cycle | 32 x peak: results per cycle per SM (the unit of the CUDA programming guide's throughput table) |
| warps_at_peak | the fewest warps whose rate is within SATURATED of the peak |
| all_sms_warp_inst_per_cycle | global memory ops: the rate per SM with one 32-warp CTA on every SM |
| bar_sync_cycles[W] | barriers.bar_sync[W].median: cycles per bar.sync round of W warps |
| bar_handoff_cycles[g] | barriers.bar_pingpong[g].median / 2: bar.arrive of one group to the other group's bar.sync returning |

Only the microbenchmark record is read (never GEMM or held-out records).
"""

from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass

OPS_FILE = "microbench__ops.json"
SATURATED = 0.97
AUX = {"rcp_ftz": "fma_f32", "vote_ballot": "iadd_xor"}
"""op -> the op whose latency equals that of the auxiliary instruction in its step (rcp_ftz: an
add.ftz.f32 on the FP32 pipe like fma; vote_ballot: an integer setp, on the integer ALU like add/xor)."""


@dataclass(frozen=True)
class OpFit:
    """One op's fitted numbers (SM cycles; rates per SM)."""

    op: str
    mode: str
    latency_cycles: float | None
    peak_warp_inst_per_cycle: float
    issue_cycles: float
    lane_results_per_cycle: float
    warps_at_peak: int
    latency_same_cycles: float | None = None
    all_sms_warp_inst_per_cycle: float | None = None


def _lat(res: dict, op: str, mode: str) -> float | None:
    row = res["latency"].get(op, {}).get(mode)
    return None if row is None else float(row["cycles_per_step"]["median"])


def _rates(row: dict) -> dict[int, float]:
    return {int(w): float(v["warp_inst_per_cycle_per_sm"]["median"]) for w, v in row.items() if w.isdigit()}


def fit_op(res: dict, op: str, mode: str) -> OpFit:
    """The fit of one op in one mode ("reg", "distinct" or "same")."""
    rates = _rates(res["throughput"][op][mode])
    peak = max(rates.values())
    at = min(w for w, r in rates.items() if r >= SATURATED * peak)
    lat = _lat(res, op, mode)
    if lat is not None and op in AUX:
        aux = _lat(res, AUX[op], "reg")
        lat = None if aux is None else lat - aux
    same = _lat(res, op, "same") if mode == "distinct" else None
    all_sms = res["throughput"][op][mode].get("all_sms_32_warps")
    return OpFit(op, mode, lat, peak, 4.0 / peak, 32.0 * peak, at, same,
                 None if all_sms is None else float(all_sms["warp_inst_per_cycle_per_sm"]["median"]))


def op_table(rec: dict) -> dict[str, OpFit]:
    """Every op of the record: memory ops in mode distinct (their same-word numbers beside, and in
    `<op>[same]`), register ops in mode reg."""
    res = rec["results"]
    out = {}
    for op, modes in res["throughput"].items():
        for mode in modes:
            key = op if mode in ("reg", "distinct") else f"{op}[{mode}]"
            out[key] = fit_op(res, op, mode)
    return out


def barrier_table(rec: dict) -> dict[str, float]:
    """bar_sync_cycles[W] and bar_handoff_cycles[g] (see the module table)."""
    bars = rec["results"].get("barriers", {})
    out = {f"bar_sync_cycles[{w}]": float(v["median"]) for w, v in bars.get("bar_sync", {}).items()}
    out.update({f"bar_handoff_cycles[{g}]": float(v["median"]) / 2 for g, v in bars.get("bar_pingpong", {}).items()})
    return out


def derive_ops(records_dir: pathlib.Path) -> dict[str, tuple[float, str]]:
    """"ops.<op>.<quantity>" and "ops.<barrier quantity>" -> (value, source); {} without the record."""
    path = pathlib.Path(records_dir) / OPS_FILE
    if not path.exists():
        return {}
    rec = json.loads(path.read_text())
    prov = rec.get("provenance", {})
    where = (f"measured: {OPS_FILE} ({prov.get('device_name', '?')}, {str(prov.get('date_utc', '?'))[:10]}, "
             f"commit {str(prov.get('git_commit', '?'))[:7]}): ")
    out: dict[str, tuple[float, str]] = {}
    for key, f in op_table(rec).items():
        if f.latency_cycles is not None:
            aux = f" - {AUX[f.op]} latency (the step's auxiliary instruction)" if f.op in AUX else ""
            out[f"ops.{key}.latency_cycles"] = (f.latency_cycles, where + f"latency[{f.op}][{f.mode}] median{aux}")
        if f.latency_same_cycles is not None:
            out[f"ops.{key}.latency_same_cycles"] = (f.latency_same_cycles, where + f"latency[{f.op}][same] median")
        src = where + f"throughput[{f.op}][{f.mode}]: peak over 1..32 warps {f.peak_warp_inst_per_cycle:.3f} warp inst/cycle/SM"
        out[f"ops.{key}.issue_cycles"] = (f.issue_cycles, src + " -> 4 / peak")
        out[f"ops.{key}.lane_results_per_cycle"] = (f.lane_results_per_cycle, src + " -> 32 x peak")
        if f.all_sms_warp_inst_per_cycle is not None:
            out[f"ops.{key}.all_sms_warp_inst_per_cycle"] = (
                f.all_sms_warp_inst_per_cycle, where + f"throughput[{f.op}][{f.mode}][all_sms_32_warps] median")
    for k, v in barrier_table(rec).items():
        out[f"ops.{k}"] = (v, where + "barriers: " + ("bar_sync median" if k.startswith("bar_sync") else
                                                     "bar_pingpong median / 2"))
    return out
