"""Per-opcode latency and issue interval from microbench__ops (validation/micro_ops.py; issues 14/15).

    from hopsim.validate.calibrate_ops import op_table, derive_ops
    table = op_table(rec)                 # {op: OpFit(latency_cycles, issue_cycles, ...)}
    fields = derive_ops(records_dir)      # {"ops.<op>.<quantity>": (value, source)}; {} without the record

`derive_op_fields(records_dir)` turns the table into the timing classes' config fields
(hopsim/timing/opclass.py: op_<class>_latency_cycles / _pipe_cycles / _warp_cycles; alu, ex2 and
shfl keep the names alu_latency_cycles, mufu_latency_cycles, shfl_latency_cycles); `calibrate()`
(hopsim/validate/calibrate.py) writes them into h100_sxm_calibrated.json. Class `mov` is not fitted.

| quantity | rule (record microbench__ops: results) |
|---|---|
| latency_cycles | latency[op][reg or distinct].cycles_per_step.median (one warp, one dependent chain), minus the latency of the auxiliary instruction a step carries (AUX: rcp_ftz's add.ftz = fma_f32's latency, vote_ballot's setp = iadd_xor's) |
| latency_same_cycles | memory ops: latency[op][same] likewise (every lane on one word) |
| peak_warp_inst_per_cycle | max over W = 1..32 warps (one CTA per SM) of throughput[op][mode][W].warp_inst_per_cycle_per_sm.median |
| issue_cycles | 4 / peak: cycles one warp instruction of the op holds its sub-partition's pipe when every sub-partition is busy (the SM's 4 schedulers) |
| lane_results_per_cycle | 32 x peak: results per cycle per SM (the unit of the CUDA programming guide's throughput table) |
| warp_cycles | 1 / throughput[op][mode][1 warp] (one warp's gap per step, 8 independent chains, loop control included), minus the AUX op's for rcp_ftz / vote_ballot |
| op_<class>_warp_cycles | `warp_gaps`: the one-warp cycles per loop iteration less the 3 loop-control instructions (at iadd_xor's gap) and the AUX op's, per instruction |
| warps_at_peak | the fewest warps whose rate is within SATURATED of the peak |
| all_sms_warp_inst_per_cycle | global memory ops: the rate per SM with one 32-warp CTA on every SM |
| bar_sync_cycles[W] | barriers.bar_sync[W].median: cycles per bar.sync round of W warps |
| bar_handoff_cycles[g] | barriers.bar_pingpong[g].median / 2: bar.arrive of one group to the other group's bar.sync returning |

Only the microbenchmark record is read (never GEMM or held-out records).
"""

from __future__ import annotations

import json
import math
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
    warp_cycles: float | None = None


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
    warp = 1.0 / rates[1] if rates.get(1) else None
    if warp is not None and op in AUX:
        aux = _rates(res["throughput"].get(AUX[op], {}).get("reg", {})).get(1)
        warp = None if not aux else warp - 1.0 / aux
    return OpFit(op, mode, lat, peak, 4.0 / peak, 32.0 * peak, at, same,
                 None if all_sms is None else float(all_sms["warp_inst_per_cycle_per_sm"]["median"]), warp)


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


def _load_ops(records_dir: pathlib.Path) -> tuple[dict, str] | None:
    """The micro_ops record of `records_dir` and the source prefix naming it (device, date, commit);
    None without the record."""
    path = pathlib.Path(records_dir) / OPS_FILE
    if not path.exists():
        return None
    rec = json.loads(path.read_text())
    prov = rec.get("provenance", {})
    where = (f"measured: {OPS_FILE} ({prov.get('device_name', '?')}, {str(prov.get('date_utc', '?'))[:10]}, "
             f"commit {str(prov.get('git_commit', '?'))[:7]}): ")
    return rec, where


def derive_ops(records_dir: pathlib.Path) -> dict[str, tuple[float, str]]:
    """"ops.<op>.<quantity>" and "ops.<barrier quantity>" -> (value, source); {} without the record."""
    loaded = _load_ops(records_dir)
    if loaded is None:
        return {}
    rec, where = loaded
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


CLASS_FIT = {"alu": ("iadd_xor", 1), "fp32": ("fma_f32", 1), "fminmax": ("max_f32", 1),
             "fp16x2": ("fma_f16x2", 1), "cvt_pack": ("cvt_f16x2_f32", 1), "cvt_f16": ("cvt_f16_f32_pair", 2),
             "cvt_bf16": ("cvt_bf16_f32_pair", 2), "vote": ("vote_any", 1), "vote_ballot": ("vote_ballot", 1),
             "redux": ("redux_add", 1), "ex2": ("ex2_ftz", 1), "ex2_full": ("ex2", 1), "rcp": ("rcp_ftz", 1),
             "rcp_full": ("rcp", 1), "shfl": ("shfl_bfly", 1), "shfl_idx": ("shfl_idx", 1)}
"""timing class (hopsim/timing/opclass.py) -> (the record's op, IR instructions per step: the pair
cvts are two cvt instructions a step, each taken as half the step). rcp_ftz and vote_ballot carry
an auxiliary instruction per step (AUX): their latency and warp gap are the step's minus the AUX
op's; their pipe time is the whole step's (the step's rate is what the shared pipe sustains)."""


LOOP_SASS = 3
"""Loop-control SASS instructions per 32 steps of each thread (IADD, ISETP, BRA: the record's SASS
counts of every timed loop): integer-pipe instructions the one-warp rate includes."""
STEPS = 32
BLOCK_ALU = {"vote_any": 16, "vote_all": 16}
"""Integer instructions per loop iteration of thr_<op> beside the steps and the loop control: the
vote asm block's setp / selp per chain (the record's SASS counts: 8 ISETP.NE + 8 SEL per loop)."""


def warp_gaps(res: dict) -> dict[str, float]:
    """op -> one warp's gap per instruction of the op: the one-warp cycles per loop iteration
    (STEPS / throughput[op][reg][1]) less the loop control (LOOP_SASS at iadd_xor's gap, which is
    its cycles per iteration / (STEPS + LOOP_SASS)) and, for rcp_ftz / vote_ballot, the AUX op's
    gap per step; per instruction of the step (CLASS_FIT)."""
    r1 = {op: _rates(m["reg"]).get(1) for op, m in res["throughput"].items() if "reg" in m}
    alu = STEPS / r1["iadd_xor"] / (STEPS + LOOP_SASS)
    out = {}
    for cls, (op, per) in CLASS_FIT.items():
        if not r1.get(op):
            continue
        if op == "iadd_xor":
            out[op] = alu
            continue
        it = STEPS / r1[op] - (LOOP_SASS + BLOCK_ALU.get(op, 0)) * alu
        if op in AUX:
            it -= STEPS * out[AUX[op]]
        out[op] = it / (STEPS * per)
    return out


def derive_op_fields(records_dir: pathlib.Path, fields: dict[str, tuple[str, str, str]]) -> dict[str, tuple[float, str]]:
    """Config field -> (value, source) for every class of CLASS_FIT; `fields`: class -> (latency,
    pipe, warp) field names (opclass.FIELDS). {} without the record."""
    loaded = _load_ops(records_dir)
    if loaded is None:
        return {}
    rec, where = loaded
    res = rec["results"]
    gaps = warp_gaps(res) if "iadd_xor" in res.get("throughput", {}) else {}
    out: dict[str, tuple[float, str]] = {}
    for cls, (op, per) in CLASS_FIT.items():
        if op not in res.get("throughput", {}):
            continue
        f = fit_op(res, op, "reg")
        lat_f, pipe_f, warp_f = fields[cls]
        aux = f" - latency[{AUX[op]}] (the step's auxiliary instruction)" if op in AUX else ""
        half = f" / {per} (instructions per step)" if per > 1 else ""
        if f.latency_cycles is not None:
            out[lat_f] = (f.latency_cycles / per, where + f"latency[{op}][reg] median{aux}{half}")
        loop = STEPS / (STEPS + LOOP_SASS) if op == "iadd_xor" else 1.0  # the loop control is on its pipe too
        lsrc = f" x {STEPS} / {STEPS + LOOP_SASS} (the loop control on the same pipe)" if op == "iadd_xor" else ""
        out[pipe_f] = (f.issue_cycles * loop / per, where + f"4 / peak of throughput[{op}][reg] over 1..32 warps "
                       f"({f.peak_warp_inst_per_cycle:.3f} warp inst/cycle/SM){lsrc}{half}")
        if op in gaps:
            waux = f" - {AUX[op]}'s gap per step" if op in AUX else ""
            out[warp_f] = (gaps[op], where + f"({STEPS} / throughput[{op}][reg][1 warp] - {LOOP_SASS} loop-control "
                           f"instructions x iadd_xor's gap{waux}) / {STEPS}{half}")
    out.update(barrier_fields(res.get("barriers", {}), where))
    return out


def barrier_fields(bars: dict, where: str) -> dict[str, tuple[float, str]]:
    """bar_sync_cycles and bar_sync_per_warp_cycles: a least-squares line through barriers.bar_sync[W]
    (cycles per bar.sync round of W warps of one CTA) less ceil(W / 4) (the issue of the W
    arrivals, one per cycle on each of the 4 sub-partitions), against W - 1."""
    pts = [(int(w) - 1, float(v["median"]) - math.ceil(int(w) / 4)) for w, v in bars.get("bar_sync", {}).items()]
    if len(pts) < 2:
        return {}
    n = len(pts)
    mx, my = sum(x for x, _ in pts) / n, sum(y for _, y in pts) / n
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    src = where + f"barriers.bar_sync[{','.join(str(x + 1) for x, _ in pts)}] median - ceil(W / 4), line over W - 1"
    return {"bar_sync_cycles": (my - slope * mx, src + ": intercept"),
            "bar_sync_per_warp_cycles": (slope, src + ": slope")}


ATOMIC_FIT = {"atom_shared_u32": ("atom_shared_add_u32", "atom_shared_add_u32"),
              "red_shared_u32": ("red_shared_add_u32", "red_shared_add_u32"),
              "atom_shared_f32": ("atom_shared_add_f32", "atom_shared_add_f32"),
              "atom_global_u32": ("atom_global_add_u32", "red_global_add_u32"),
              "red_global_u32": ("red_global_add_u32", "red_global_add_u32"),
              "atom_global_f32": ("atom_global_add_f32", "red_global_add_f32"),
              "red_global_f32": ("red_global_add_f32", "red_global_add_f32")}
"""atomic class (hopsim/timing/atomics.py) -> (the record's op, the op whose one-warp rate gives the
warp gap: a global atom's one-warp rate is bound by its latency, so the red of its type gives it)."""


def derive_atomic_fields(records_dir: pathlib.Path, fields: dict) -> dict[str, tuple[float, str]]:
    """Field -> (value, source) of the atomic classes: pipe = 1 / the distinct-word peak (warp
    instructions per SM cycle, one unit per SM), lane = (1 / the same-word rate of 32 warps (every
    sub-partition contending) - pipe) / 31, warp gap as
    `warp_gaps` (one warp's cycles per 32 steps less the loop control, / 32), latency = the
    distinct-word chain, conflict latency = (same-word chain - distinct) / 31. {} without the record."""
    loaded = _load_ops(records_dir)
    if loaded is None:
        return {}
    rec, where = loaded
    res = rec["results"]
    thr = res.get("throughput", {})
    if "iadd_xor" not in thr:
        return {}
    alu = STEPS / _rates(thr["iadd_xor"]["reg"])[1] / (STEPS + LOOP_SASS)
    out: dict[str, tuple[float, str]] = {}
    for cls, (op, gap_op) in ATOMIC_FIT.items():
        if op not in thr or gap_op not in thr:
            continue
        f = fields[cls]
        d, s = _rates(thr[op]["distinct"]), _rates(thr[op]["same"])
        out[f["pipe"]] = (1.0 / max(d.values()), where + f"1 / peak of throughput[{op}][distinct] over 1..32 warps")
        out[f["lane"]] = ((1.0 / s[32] - 1.0 / max(d.values())) / 31,
                          where + f"(1 / throughput[{op}][same][32 warps] - pipe) / 31")
        r1 = _rates(thr[gap_op]["distinct"])[1]
        out[f["warp"]] = ((STEPS / r1 - LOOP_SASS * alu) / STEPS, where + f"({STEPS} / throughput[{gap_op}][distinct][1 warp] "
                          f"- {LOOP_SASS} loop-control instructions x iadd_xor's gap) / {STEPS}")
        if "latency" in f:
            ld, ls = _lat(res, op, "distinct"), _lat(res, op, "same")
            out[f["latency"]] = (ld, where + f"latency[{op}][distinct] median")
            out[f["conflict_latency"]] = ((ls - ld) / 31, where + f"(latency[{op}][same] - [distinct]) / 31")
    return out
