"""`hopsim validate calibrate`: H100 microbenchmark records -> the model's timing parameters.

    from hopsim.validate.calibrate import calibrate
    rows = calibrate()                    # [CalRow(field, value, unit, source, old_value, ...)]
    write_calibrated(rows, path)          # hopsim/config/h100_sxm_calibrated.json

Only `microbench__*` records are read; GEMM records are never used here (they are the held-out
validation set of `hopsim validate compare`). Each rule below names the record and the key it
reads, and the arithmetic, so every calibrated number has a one-line source.

| field | rule (record: key) |
|---|---|
| smem_latency_cycles | smem: k_way_conflict_cycles[1] (p = ld.shared [p] chase, one wavefront) |
| smem_cycles_per_wavefront | smem: cycles_per_extra_wavefront (slope of the k-way conflict chase) |
| gmem_l2_latency_cycles | global_latency: median of the ld.global.cg chases with footprint <= 16 MiB |
| hbm_extra_latency_ns | global_latency: median ns of the ld.global.cg chases with footprint >= 64 MiB - median ns of those <= 16 MiB (clock_domain: the L2 part is fixed in cycles, the rest in ns) |
| l2_bytes_per_s | tma_width: max over the all-SM L2 configurations of bytes/cycle/SM x SMs x clock |
| l2_delivery_bytes_per_s | tma_share: max over the all-SM L2 configurations (boxes shared by g SMs) of bytes/cycle/SM x SMs x clock |
| l2_delivery_requests_per_s | tma_share: the same, in box rows/cycle/SM |
| l2_share_bytes_merge | tma_gemm: 128-B rows (byte-bound), GEMM load pattern (each box read by r = gn or gm CTAs) vs distinct boxes: (1 - distinct / gemm rate) / (1 - mean 1/r), so that a read costing 1 - m (1 - 1/r) of a distinct one gives the measured rate |
| l2_share_requests_merge | tma_gemm: the same, median over the 32-B and 64-B rows (request-bound), in box rows |
| hbm_bytes_per_s | tma_stream: max over configurations of tb_per_s_events |
| tma_issue_cycles | tma_latency: slope of the issuing thread's cycles over k boxes (k = 1..16, L2 64x8) |
| tma_issue_elect_cycles | tma_issue: R8,warp_elect (copies guarded by elect.sync), (issue time of 32 boxes - of 1) / 31 |
| tma_issue_uniform_cycles | tma_issue: R8,thread_unpredicated (no predicate), (issue time of 32 boxes - of 1) / 31 - 6 cycles the model charges the twin's own instructions per box |
| tma_bytes_per_cycle | tma_width: max over the one-SM L2 configurations of bytes/cycle/SM |
| l2_requests_per_s | tma_width: max over the all-SM L2 configurations of box rows/cycle/SM x SMs x clock |
| tma_row_cycles | tma_width: one SM, 32-B wide box with the most rows: cycles per box / rows |
| tma_extra_latency_cycles | tma_latency: L2 64x8 k=1 round trip - TMA unit stage - L2 latency - fill - mbarrier wake-up |
| wgmma_fixed_latency_cycles | wgmma: median over N >= 64 (SS, f16, f32 acc, 1 wg) of latency - overhead - N/2 |
| mbarrier_arrive_cycles | mbarrier: single_thread.arrive.cycles_per_op_minus_loop |
| mbarrier_wakeup_cycles | mbarrier: pingpong one-way (median over warp pairs) - arrive |
| mbarrier_try_wait_cycles | mbarrier: single_thread.try_wait_completed_phase - 13 cycles the model charges the twin's own instructions |
| wgmma_sync_cycles | wgmma: median over configurations of the fence/commit/wait round with no wgmma - the 20.9 cycles the model charges that round's own instructions (the wait_group 0 release) |
| wgmma_rs_fixed_latency_cycles | wgmma: median over N >= 64 (RS, f16, f32 acc, 1 wg) of latency - overhead - N/2, at least 0 |
| wgmma_pipe_min_cycles | wgmma: median sm_cycles_per_wgmma of the RS C1 configurations with N <= 16 |
| wgmma_ss_operand_bytes_per_cycle | wgmma: median over the SS C1 configurations with N <= 32 of (2048 + 32 N) B / sm_cycles_per_wgmma |
| wgmma_issue_cycles | wgmma_queue: m64n128k16 on an empty pipe, slope of the issue time over L = 1..4 wgmmas |
| wgmma_queue_depth | wgmma_queue: 16 - (issue time of 16 wgmmas - of 8) / (N/2) on an empty pipe, median over N |
| cta_launch_cycles | launch: extra_us_per_additional_wave_of_ctas x the record's SM clock |

The global-memory fields (gmem_outstanding_sectors_per_sm, hbm_write_bytes_per_s) come from the
gmem microbenchmark records by the rules of hopsim/validate/calibrate_gmem.py; the SASS issue-class
costs (sass_*_cycles) and the GEMM twins' per-box copy holds (gemm_*_tma_issue_cycles) from the
committed SASS x microbench__tma_issue by the rules of hopsim/validate/calibrate_sass.py;
launch_overhead_ns, launch_per_sm_ns, cta_dispatch_cycles, l2_dirty_fraction and (replacing the rule
above, whose 1056-CTA grid of 128 threads is one wave, not eight) cta_launch_cycles from the
launch2 records by those of hopsim/validate/calibrate_launch.py; the shared-memory port fields
(smem_port_*) from smemport/microbench__smemport.json (the fill charge from microbench__wgmma_tma) by the
rules of hopsim/validate/calibrate_smemport.py;
the register-only timing classes (alu_latency_cycles, mufu_latency_cycles, shfl_latency_cycles,
op_<class>_latency/pipe/warp_cycles: hopsim/timing/opclass.py) from microbench__ops.json by the rules
of hopsim/validate/calibrate_ops.py (`derive_op_fields`), the atom/red classes' fields
(<atom|red>_<space>_<type>_*_cycles: hopsim/timing/atomics.py) by its `derive_atomic_fields`;
the memory-bound mechanism fields (gld_bytes_per_cycle_per_sm, l2_effective_capacity_fraction and,
replacing calibrate_gmem's all-SM rule, gmem_outstanding_sectors_per_sm) from membw/membw.jsonl by
those of hopsim/validate/calibrate_membw.py.

Not calibrated (no microbenchmark yet; they stay `assumed`/`spec` in h100_sxm.py): issue_cycles,
bar_sync_cycles, gst_bytes_per_cycle_per_sm, op_mov_*.
"""

from __future__ import annotations

import json
import pathlib
import statistics
from dataclasses import asdict, dataclass

from hopsim.config import load_gpu
from isa.errors import HopsimError
from hopsim.validate.calibrate_gmem import derive_gmem
from hopsim.validate.calibrate_sass import derive_sass
from hopsim.validate.calibrate_launch import derive_launch
from hopsim.validate.calibrate_membw import derive_membw
from hopsim.validate.calibrate_smemport import derive_smemport
from hopsim.validate.calibrate_ops import derive_atomic_fields, derive_op_fields
from hopsim.timing.atomics import FIELDS as ATOM_FIELDS
from hopsim.timing.opclass import FIELDS as OP_FIELDS
from validation.provenance import RECORDS_DIR, load_records

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "hopsim" / "config" / "h100_sxm_calibrated.json"


class CalibrationError(HopsimError):
    """A microbenchmark record the calibration needs is missing or lacks a key."""


@dataclass(frozen=True)
class CalRow:
    """One calibrated timing field."""

    field: str
    value: float
    unit: str
    meaning: str
    source: str
    old_value: float
    old_source: str


def _micro(records_dir: pathlib.Path) -> dict[str, dict]:
    recs = {r.get("name"): r for r in load_records("microbench", records_dir)}
    if not recs:
        raise CalibrationError(f"no microbench__*.json records under {records_dir}: run "
                               "`hopsim validate run --what micro` on an H100 first")
    return recs


def _get(recs: dict, name: str, *path):
    """recs[name]['results'][path...] or a CalibrationError naming what is missing."""
    if name not in recs:
        raise CalibrationError(f"calibration needs the microbenchmark record '{name}' "
                               f"(validation/records/h100/microbench__{name}.json); have {sorted(recs)}")
    cur = recs[name]["results"]
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            raise CalibrationError(f"record '{name}' lacks results/{'/'.join(map(str, path))}")
        cur = cur[p]
    return cur


def _src(recs: dict, name: str, what: str) -> str:
    prov = recs[name].get("provenance", {})
    commit = str(prov.get("git_commit", "?"))[:7]
    date = str(prov.get("date_utc", "?"))[:10]
    return f"measured: microbench__{name}.json ({prov.get('device_name', '?')}, {date}, commit {commit}): {what}"


def share_merge(recs: dict) -> dict:
    """l2_share_bytes_merge / l2_share_requests_merge from microbench__tma_gemm: the share m of
    the dispatch-time sharing (a read of a tile read by r CTAs costs 1 - m (1 - 1/r) of a distinct
    read) that reproduces the GEMM load pattern's rate over the distinct-box rate."""
    res = _get(recs, "tma_gemm")
    m = {}
    for key, v in res.items():
        if ",gemm,delay0," not in key:
            continue
        d = res.get(key.replace(",gemm,delay0,", ",distinct,delay0,"))
        if d is None:
            continue
        gm, gn = v["grid"]
        inv_r = (1.0 / gm + 1.0 / gn) / 2  # one A box (read by gn CTAs) and one B box (gm) per k step
        m[key.split(",")[1]] = (1.0 - d["rows_per_cycle_per_sm"] / v["rows_per_cycle_per_sm"]) / (1.0 - inv_r)
    if "w128B" not in m or not ({"w32B", "w64B"} & set(m)):
        raise CalibrationError("tma_gemm needs gemm and distinct rows (delay 0) for 128-B and 32-/64-B rows")
    clip = lambda x: min(1.0, max(0.0, x))  # noqa: E731
    req = [m[k] for k in ("w32B", "w64B") if k in m]
    return {
        "l2_share_bytes_merge": (clip(m["w128B"]), _src(
            recs, "tma_gemm", f"128-B rows (byte-bound): (1 - distinct/gemm rate) / (1 - mean 1/r) = {m['w128B']:.3f}")),
        "l2_share_requests_merge": (clip(statistics.median(req)), _src(
            recs, "tma_gemm", "median over the request-bound rows " + ", ".join(
                f"{k} {m[k]:.3f}" for k in ("w32B", "w64B") if k in m) + " of (1 - distinct/gemm rate) / (1 - mean 1/r)")),
    }


def _chip_max(recs: dict, name: str, results: dict, key: str, nsms: int, what: str) -> tuple[float, str]:
    """The largest all-SM L2 stream of a record, per second for the chip: `key` per SM per cycle x
    SMs x the SM clock of that stream (L2 runs on its own clock)."""
    chip = {k: v[key] * nsms * v["sm_clock_mhz"] * 1e6
            for k, v in results.items() if k.startswith("L2,") and k.endswith(f"sms{nsms}")}
    if not chip:
        raise CalibrationError(f"{name} has no all-SM (sms{nsms}) L2 configuration")
    best = max(chip, key=chip.get)
    return chip[best], _src(recs, name, f"max over all-SM L2 streams: {best} {results[best][key]:.3f} {what} "
                                        f"(median CTA) x {nsms} SMs x {results[best]['sm_clock_mhz']:.0f} MHz")


def wgmma_queue_depths(by_config: dict) -> dict[int, float]:
    """microbench__wgmma_queue: the tensor-pipe depth each N implies on an empty pipe: the 9th of 16
    issues waits for the 1st to complete, so 16 - (issue time of 16 - of 8) / (N/2)."""
    out = {}
    for n in (64, 128, 256):
        k16, k8 = by_config.get(f"m64n{n}k16,L16,C1,wait0"), by_config.get(f"m64n{n}k16,L8,C1,wait0")
        if k16 and k8:
            out[n] = 16 - (k16["issue_cycles"] - k8["issue_cycles"]) / (n / 2)
    return out


MBAR_TRYWAIT_TWIN_CYCLES = 13.0
"""Cycles per try_wait of the single-thread try_wait twin (mode 1: try_wait, selp, xor per op, the loop
per 4, at their opcode classes: hopsim/timing/opclass.py) in the model beyond mbarrier_try_wait_cycles."""

TMA_ISSUE_TWIN_BOX_CYCLES = 11.0
"""Cycles a box of microbench__tma_issue's IR twin (kernels/micro/tma.py tma_issue: coordinate add and
mask, the copy's issue slot) costs in the model besides the copy's hold (its simulated issue time
grows 11 cycles a box more than the hold: its integer instructions at their class gap and dependent
latency, hopsim/timing/opclass.py)."""


def elect_issue_slope(by_k: dict) -> float:
    """microbench__tma_issue: per-box issue time of elect.sync-guarded copies over K = 1..32."""
    return (by_k["32"]["issue_cycles"] - by_k["1"]["issue_cycles"]) / 31


def derive(records_dir: pathlib.Path | None = None) -> dict[str, tuple[float, str]]:
    """{timing field: (value, source)} from the microbenchmark records."""
    recs = _micro(pathlib.Path(records_dir or RECORDS_DIR))
    out: dict[str, tuple[float, str]] = {}

    # shared memory
    kway = _get(recs, "smem", "k_way_conflict_cycles")
    out["smem_latency_cycles"] = (float(kway["1"]), _src(recs, "smem", "k_way_conflict_cycles[1]"))
    out["smem_cycles_per_wavefront"] = (float(_get(recs, "smem", "cycles_per_extra_wavefront")),
                                        _src(recs, "smem", "cycles_per_extra_wavefront"))

    # global latency
    foot = _get(recs, "global_latency", "by_footprint")
    def kib(k: str) -> int:
        return int(k.split("KiB")[0])
    l2 = [v["cycles"] for k, v in foot.items() if k.endswith(".cg") and kib(k) <= 16384]
    hbm = [v["cycles"] for k, v in foot.items() if k.endswith(".cg") and kib(k) >= 65536]
    if not l2 or not hbm:
        raise CalibrationError("global_latency needs ld.global.cg footprints <= 16 MiB and >= 64 MiB")
    out["gmem_l2_latency_cycles"] = (statistics.median(l2), _src(
        recs, "global_latency", f"median of {len(l2)} ld.global.cg chases with footprint <= 16 MiB"))
    l2_ns = [v["ns"] for k, v in foot.items() if k.endswith(".cg") and kib(k) <= 16384]
    hbm_ns = [v["ns"] for k, v in foot.items() if k.endswith(".cg") and kib(k) >= 65536]
    out["hbm_extra_latency_ns"] = (statistics.median(hbm_ns) - statistics.median(l2_ns), _src(
        recs, "global_latency", f"median ns of {len(hbm_ns)} ld.global.cg chases >= 64 MiB "
        f"({statistics.median(hbm_ns):.1f}) - median ns of {len(l2_ns)} <= 16 MiB ({statistics.median(l2_ns):.1f}); "
        "memory clock domain per microbench__clock_domain"))

    # bandwidths (memory clock domain: per second)
    width = _get(recs, "tma_width")
    share = _get(recs, "tma_share")
    nsms = int(recs["tma_width"].get("provenance", {}).get("sm_count", 132))
    for field, name, res, key, what in (
            ("l2_bytes_per_s", "tma_width", width, "bytes_per_cycle_per_sm", "B/clk/SM"),
            ("l2_requests_per_s", "tma_width", width, "rows_per_cycle_per_sm", "box rows/clk/SM"),
            ("l2_delivery_bytes_per_s", "tma_share", share, "bytes_per_cycle_per_sm", "B/clk/SM, boxes shared by g SMs"),
            ("l2_delivery_requests_per_s", "tma_share", share, "rows_per_cycle_per_sm", "box rows/clk/SM, boxes shared by g SMs")):
        out[field] = _chip_max(recs, name, res, key, nsms, what)
    if "tma_gemm" in recs:
        out.update(share_merge(recs))
    one = {k: v["bytes_per_cycle_per_sm"] for k, v in width.items() if k.startswith("L2,") and k.endswith("sms1")}
    best1 = max(one, key=one.get)
    out["tma_bytes_per_cycle"] = (one[best1], _src(
        recs, "tma_width", f"max over one-SM L2 streams: {best1} bytes_per_cycle_per_sm"))
    narrow = {k: v for k, v in width.items() if k.startswith("L2,w32B,") and k.endswith("sms1")}
    deep = max(narrow, key=lambda k: int(k.split(",r")[1].split(",")[0]))
    nrows = int(deep.split(",r")[1].split(",")[0])
    out["tma_row_cycles"] = (narrow[deep]["cycles_per_box"] / nrows, _src(
        recs, "tma_width", f"one SM, narrowest and deepest box {deep}: cycles_per_box / {nrows} rows"))
    stream = _get(recs, "tma_stream", "by_config")
    bs = max(stream, key=lambda k: stream[k]["tb_per_s_events"])
    out["hbm_bytes_per_s"] = (stream[bs]["tb_per_s_events"] * 1e12, _src(
        recs, "tma_stream", f"max tb_per_s_events over {len(stream)} all-SM HBM streams ({bs})"))

    # TMA issue and latency
    t2 = _get(recs, "tma_latency", "tensor_2d", "L2,64x8")
    byk = {int(k): v for k, v in t2["by_k"].items()}
    ks = sorted(byk)
    if len(ks) < 2:
        raise CalibrationError("tma_latency L2,64x8 needs at least two box counts k")
    issue = (byk[ks[-1]]["issue_cycles"]["median"] - byk[ks[0]]["issue_cycles"]["median"]) / (ks[-1] - ks[0])
    out["tma_issue_cycles"] = (issue, _src(
        recs, "tma_latency", f"L2,64x8 issuing thread's cycles, slope over k = {ks[0]}..{ks[-1]} boxes"))
    if "tma_issue" in recs:
        e = _get(recs, "tma_issue", "R8,warp_elect", "by_k")
        out["tma_issue_elect_cycles"] = (elect_issue_slope(e), _src(
            recs, "tma_issue", f"R8,warp_elect: (issue time of 32 boxes {e['32']['issue_cycles']:.0f} - of 1 "
                               f"{e['1']['issue_cycles']:.0f}) / 31"))
        u = _get(recs, "tma_issue", "R8,thread_unpredicated", "by_k")
        out["tma_issue_uniform_cycles"] = (elect_issue_slope(u) - TMA_ISSUE_TWIN_BOX_CYCLES, _src(
            recs, "tma_issue", f"R8,thread_unpredicated (thread 0 alone, copies with no predicate): (issue time of 32 "
                               f"boxes {u['32']['issue_cycles']:.0f} - of 1 {u['1']['issue_cycles']:.0f}) / 31 - the "
                               f"{TMA_ISSUE_TWIN_BOX_CYCLES:.0f} cycles the model charges the twin's own instructions per box"))

    # mbarrier
    arrive = float(_get(recs, "mbarrier", "single_thread", "arrive", "cycles_per_op_minus_loop"))
    out["mbarrier_arrive_cycles"] = (arrive, _src(recs, "mbarrier", "single_thread.arrive.cycles_per_op_minus_loop"))
    tw = float(_get(recs, "mbarrier", "single_thread", "try_wait_completed_phase", "cycles_per_op_minus_loop"))
    out["mbarrier_try_wait_cycles"] = (tw - MBAR_TRYWAIT_TWIN_CYCLES, _src(
        recs, "mbarrier", f"single_thread.try_wait_completed_phase.cycles_per_op_minus_loop {tw:.2f} - the "
                          f"{MBAR_TRYWAIT_TWIN_CYCLES:.1f} cycles per try_wait the model charges the twin's own instructions"))
    pp = _get(recs, "mbarrier", "pingpong")
    one_way = statistics.median(v["one_way_cycles"] for v in pp.values())
    out["mbarrier_wakeup_cycles"] = (one_way - arrive, _src(
        recs, "mbarrier", f"pingpong one-way {one_way:.1f} (median of {len(pp)} warp pairs) - arrive {arrive:.1f}"))

    rt = float(byk[1]["round_trip_cycles"]["median"]) if 1 in byk else None
    if rt is None:
        raise CalibrationError("tma_latency L2,64x8 needs k = 1")
    box = float(t2["box_bytes"])

    unit = float(load_gpu(calibrated=False).timing.tma_unit_box_cycles.value)  # the model's path
    extra = (rt - unit - out["gmem_l2_latency_cycles"][0] - box / out["tma_bytes_per_cycle"][0]
             - out["mbarrier_wakeup_cycles"][0])
    out["tma_extra_latency_cycles"] = (max(0.0, extra), _src(
        recs, "tma_latency", f"L2,64x8 k=1 round trip {rt:.0f} - TMA unit {unit:.0f} (assumed) - L2 latency "
                             f"{out['gmem_l2_latency_cycles'][0]:.1f} - fill {box / out['tma_bytes_per_cycle'][0]:.1f}"
                             f" - mbarrier wake-up {out['mbarrier_wakeup_cycles'][0]:.1f}"))

    # wgmma
    cfgs = _get(recs, "wgmma", "by_config")
    fixed = []
    for k, v in cfgs.items():
        shape, dt, acc, src, c, wg = k.split(",")
        n = int(shape.split("n")[1].split("k")[0])
        if n >= 64 and dt == "f16" and acc == "f32" and src == "SS" and c == "C1" and wg == "WG1":
            fixed.append(v["latency_minus_overhead_cycles"] - v["ideal_tensor_cycles"])
    sync = [v["overhead_cycles_fence_commit_wait"] for v in cfgs.values() if "overhead_cycles_fence_commit_wait" in v]
    if sync:
        med = statistics.median(sync)
        out["wgmma_sync_cycles"] = (med - WGMMA_ROUND_OWN_CYCLES, _src(
            recs, "wgmma", f"median over {len(sync)} configurations of overhead_cycles_fence_commit_wait "
                           f"(a round of fence, commit, wait_group 0 with no wgmma) {med:.3f} - the "
                           f"{WGMMA_ROUND_OWN_CYCLES:.0f} cycles the model charges the round's own instructions"))
    out.update(_wgmma_small_n(recs, cfgs))
    if "wgmma_queue" in recs:
        q = _get(recs, "wgmma_queue", "by_config")
        iss = {l: q[f"m64n128k16,L{l},C1,wait0"]["issue_cycles"] for l in (1, 2, 4)}
        slope = (iss[4] - iss[1]) / 3
        out["wgmma_issue_cycles"] = (slope, _src(
            recs, "wgmma_queue", f"m64n128k16, empty pipe (wait0): slope of the issue time over L = 1..4 "
                                 f"({iss[1]:.0f}, {iss[2]:.0f}, {iss[4]:.0f} cycles)"))
        deep = list(wgmma_queue_depths(q).values())
        out["wgmma_queue_depth"] = (float(round(statistics.median(deep))), _src(
            recs, "wgmma_queue", "median over N = 64/128/256 of 16 - (issue time of 16 wgmmas - of 8) / (N/2) "
                                 f"on an empty pipe ({', '.join(f'{d:.2f}' for d in deep)}), rounded"))
    if not fixed:
        raise CalibrationError("wgmma needs m64nNk16 f16/f32 SS C1 WG1 configurations with N >= 64")
    rs = [v["latency_minus_overhead_cycles"] - v["ideal_tensor_cycles"] for k, v in cfgs.items()
          if _cfg_n(k) >= 64 and k.endswith(",f16,f32,RS,C1,WG1") and "latency_minus_overhead_cycles" in v]
    if rs:
        out["wgmma_rs_fixed_latency_cycles"] = (max(0.0, statistics.median(rs)), _src(
            recs, "wgmma", f"median over {len(rs)} shapes N >= 64 (RS, f16, f32 acc, 1 warpgroup) of latency - "
                           f"fence/commit/wait overhead - N/2 = {statistics.median(rs):.3f}, at least 0"))
    out["wgmma_fixed_latency_cycles"] = (statistics.median(fixed), _src(
        recs, "wgmma", f"median over {len(fixed)} shapes N >= 64 (SS, f16, f32 acc, 1 warpgroup) of "
                       "latency - fence/commit/wait overhead - N/2"))

    # CTA launch
    lrec = _get(recs, "launch")
    clock = float(recs["launch"].get("provenance", {}).get("clock_rate_khz_attr", 1980000)) / 1e3
    us = float(lrec["extra_us_per_additional_wave_of_ctas"])
    out["cta_launch_cycles"] = (max(1.0, us * clock), _src(
        recs, "launch", f"extra_us_per_additional_wave_of_ctas {us:.4f} us x {clock:.0f} MHz"))
    return out


WGMMA_ROUND_OWN_CYCLES = 20.9
"""Cycles the model charges the instructions of microbench__wgmma's empty round besides the wait's
release (the IR twin kernels/micro/wgmma.py: loop counter, compares, two branches, fence, commit,
wait: issue slots and opcode-class latencies, hopsim/timing/opclass.py, simulated with wgmma_sync_cycles = 0),
taken off the measured round
so the simulated empty round equals the measured one."""


def _cfg_n(key: str) -> int:
    """N of a microbench__wgmma configuration key 'm64nNk16,...'."""
    return int(key.split(",")[0].split("n")[1].split("k")[0])


def _wgmma_small_n(recs, cfgs) -> dict:
    """Small-N wgmma throughput (microbench__wgmma sm_cycles_per_wgmma: SM cycles per wgmma at L = 8..16):
    RS N <= 16 run at a floor above N/2 (wgmma_pipe_min_cycles); SS N <= 32 run at their A + B operand
    bytes over a fixed rate (wgmma_ss_operand_bytes_per_cycle), both in 1 and 2 warpgroups."""
    out = {}
    rs = [v["sm_cycles_per_wgmma"] for k, v in cfgs.items()
          if _cfg_n(k) <= 16 and ",RS," in k and ",C1," in k and "sm_cycles_per_wgmma" in v]
    if rs:
        out["wgmma_pipe_min_cycles"] = (statistics.median(rs), _src(
            recs, "wgmma", f"median over {len(rs)} RS configurations with N <= 16 (C1, 1-2 warpgroups, all types) "
                           "of sm_cycles_per_wgmma"))
    ss = [(64 * 16 * 2 + _cfg_n(k) * 16 * 2) / v["sm_cycles_per_wgmma"] for k, v in cfgs.items()
          if _cfg_n(k) <= 32 and ",SS," in k and ",C1," in k and "sm_cycles_per_wgmma" in v]
    if ss:
        out["wgmma_ss_operand_bytes_per_cycle"] = (statistics.median(ss), _src(
            recs, "wgmma", f"median over {len(ss)} SS configurations with N <= 32 (C1, 1-2 warpgroups, all types) "
                           "of (A 2048 B + B 32 N B) / sm_cycles_per_wgmma"))
    return out


def calibrate(records_dir: pathlib.Path | None = None) -> list[CalRow]:
    """The calibrated rows, against the defaults of hopsim/config/h100_sxm.py."""
    defaults = load_gpu(calibrated=False).timing.params()
    rows = []
    derived = derive(records_dir)
    derived.update(derive_gmem(records_dir or RECORDS_DIR))
    derived.update(derive_smemport(records_dir or RECORDS_DIR))
    derived.update(derive_op_fields(records_dir or RECORDS_DIR, OP_FIELDS))
    derived.update(derive_atomic_fields(records_dir or RECORDS_DIR, ATOM_FIELDS))
    derived.update(derive_sass(_micro(pathlib.Path(records_dir or RECORDS_DIR)), src=_src))
    gpu = load_gpu(calibrated=False)
    wr = derived.get("hbm_write_bytes_per_s", (float(gpu.timing.hbm_write_bytes_per_s.value),))[0]
    derived.update(derive_launch(records_dir or RECORDS_DIR, wr, float(gpu.spec.l2_bytes.value)))
    rd = derived.get("hbm_bytes_per_s", (float(gpu.timing.hbm_bytes_per_s.value),))[0]
    derived.update(derive_membw(records_dir or RECORDS_DIR, float(gpu.spec.l2_bytes.value), (rd, wr),
                                int(gpu.spec.num_sms.value)))  # after gmem: replaces its outstanding-sectors rule
    for field, (value, source) in derived.items():
        d = defaults[field]
        if d.unit == "cycles":  # events happen on whole cycles: latencies and costs are whole
            value, source = float(round(value)), f"{source} = {value:.3f}, rounded to whole cycles"
        rows.append(CalRow(field, round(float(value), 3), d.unit, d.meaning, source, d.value, d.source))
    return rows


def write_calibrated(rows: list[CalRow], path: pathlib.Path = DEFAULT_OUT) -> pathlib.Path:
    """Write the calibrated timing fields as `{"timing": {field: Param fields}}` (load_gpu reads it)."""
    data = {"about": "Written by `hopsim validate calibrate` from validation/records/h100/microbench__*.json "
                     "(hopsim/validate/calibrate.py). Do not edit by hand.",
            "timing": {r.field: {"value": r.value, "unit": r.unit, "meaning": r.meaning, "source": r.source}
                       for r in rows}}
    path = pathlib.Path(path)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def table(rows: list[CalRow]) -> str:
    w = max(len(r.field) for r in rows)
    lines = [f"{'field':<{w}}  {'default':>10}  {'calibrated':>12}  unit         source"]
    for r in rows:
        lines.append(f"{r.field:<{w}}  {r.old_value:>10.4g}  {r.value:>12.4g}  {r.unit:<11}  {r.source}")
    return "\n".join(lines)


def as_json(rows: list[CalRow]) -> list[dict]:
    return [asdict(r) for r in rows]
