"""Power records -> the power model's parameters (hopsim/config/h100_sxm_power_calibrated.json).

    python3 -m hopsim.validate.calibrate_power            # writes the JSON, prints the fit
    python3 -m hopsim.validate.calibrate_power --check    # exit 1 if the committed JSON differs

Reads ONLY the power microbenchmarks (validation/records/h100/power/: wgmma.jsonl, units.jsonl,
governor.jsonl, nvidia_smi_q_power_clock.txt, nvidia_smi_supported_clocks.txt, and the light run
light/light.jsonl + light/units.jsonl); GEMM records are never read (they are the held-out set). Each point's steady state is its last 1.5 s
(`power_steady_summary`): power = time-weighted mean of the NVML averaged reading, clock = the
time-weighted mean SM clock, rate = `steady_rate_per_s` (events as the record's `event` names them).

| field | rule |
|---|---|
| power_limit_w | nvidia_smi_q: "Current Power Limit" |
| floor_w | nvidia_smi_q: "Average Power Draw" at rest (SM clock 345 MHz, before the run) |
| idle_clock_w | idle record's steady power (SM clock 1980 MHz right after a load) - floor_w |
| clock_min/max/step_mhz | supported graphics clocks at the highest memory clock |
| voltage_intercept | grid search (step 0.01, then 0.001 around the best) minimising the squared power residual of all points; |
| active_base_w, e_* | for each v0, linear least squares on the wgmma/unit points and the light |
|   | run's fit points (the model's own formula, hopsim/power/model.py, gives the design: one |
|   | column per field), jointly (the light TMA points move e_l2_pj_per_byte too) |
| l2_active_w | (linear field) the step while L2 -> SM traffic flows: the bulk_l2/hbm burners |
|   | and the light tma_req points (256 B .. 16 KB requests, 0.7 .. 11 TB/s) separate it from e_l2 |

The light run (validation/power/light.py) is a second session of the chip, warmer and drifting
(idle 124 W at its start, 131 W at its end, vs 119 W in the burner run): its points get two
nuisance columns that are not model fields, an offset and a drift linear in run order (0 at its
first idle, 1 at idle_after). Its fit points: idle, idle_after, the resident (sleeping/polling
CTAs) and churn (launch trains) points as idle (their measured cost beyond the run's drift is
within +-5 W: no resident-CTA, poll, CTA or launch energy enters the model), the tma_req points,
and the wgswz burners (f16 -> f32 random at 40% duty; the 128/64/32-B swizzle read 566-567 W: no
swizzle term). A per-request TMA energy was tried and dropped: with the step it fits 0.6 nJ per
request (rms unchanged, 8.6 W); without the step 5.9 nJ, rms 9.2 W and bulk_l2_duty50 at -31 W.
Check points, never fitted, reported with their residual at their own measured
clock: the GEMM-like light_pipe_* (TMA-fed wgmma) and the 10%-duty wgmma burners.
| tensor_cap_*_tflops | the 100%-duty zero-operand burner of that variant: steady rate x 2*64*256*16 |
| governor_reaction_s | step record: 10% point of the SM clock's fall after load on (lag.sm_mhz.on.t10_s) |
| power_reading_lag_s | step record: 50% point of the NVML averaged reading's rise (lag.power_w.on.t50_s) |
| l2_fed_sq_w | after the fit above, with its model: least squares on the TMA+wgmma pipe runs |
|   | (light_pipe2/, light_pipe2_ladder/, light_pipe2hi/) of power - model - measured idle drift, with two |
|   | nuisance columns (mbarrier arrives/s, a constant): hopsim/validate/calibrate_power_pipe.py |
| e_tma_request_pj, e_tma_byte_pj | after the burner fit, with its model: least squares on the TMA box-shape |
|   | run (light_tmaw/: tensor-map boxes of 32/64/128-B rows x 8/128 rows, no tensor work) of power - |
|   | model - measured idle drift on L2 requests/s and bytes/s, a run constant beside: |
|   | hopsim/validate/calibrate_power_tmaw.py |
| tensor_sm_clock_ratio | validation/records/h100/microbench__clock_truth.json (a clock microbenchmark beside the |
|   | power records): median over its development GEMM loops of the SMs' clock64/%globaltimer clock |
|   | (last launches at steady state) over NVML's time-weighted SM clock of the steady window |
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys

import numpy as np

from hopsim.config.base import Param
from hopsim.config.power import H100Power, POWER_FILES, TENSOR_VARIANTS
from hopsim.power.model import Events, PowerModel
from hopsim.validate import calibrate_power_pipe, calibrate_power_tmaw
from isa.errors import HopsimError
from validation.power.records import POWER_RECORDS_DIR, load_all

WGMMA_FLOP = 2 * 64 * 256 * 16
CHIP_SMS = 132  # H100 SXM5 SMs (the burners' full grid: one CTA per SM)
#: The energies fitted by least squares (the voltage intercept by grid search around them).
LINEAR_FIELDS = ("active_base_w",) + tuple(
    f"e_tensor_{v}{z}_pj_per_flop" for v in TENSOR_VARIANTS.values() for z in ("", "_zero")) + (
    "e_l2_pj_per_byte", "e_dram_read_pj_per_byte", "e_dram_write_pj_per_byte",
    "e_smem_ld_pj_per_wavefront", "e_smem_st_pj_per_wavefront", "e_instruction_pj")


LINEAR_FIELDS += ("l2_active_w",)
#: nuisance columns of the light run (fitted with the fields, written to the fit summary only)
RUN_COLUMNS = ("light_run_offset_w", "light_run_drift_w")
LIGHT_DIR = "light"
#: the clock-truth microbenchmark record, in the records folder beside power/
CLOCK_TRUTH = "microbench__clock_truth.json"


class PowerCalibrationError(HopsimError):
    """A power record the calibration needs is missing or lacks a field."""


def _need(cond, what: str) -> None:
    if not cond:
        raise PowerCalibrationError(f"power records ({POWER_RECORDS_DIR}): {what}")


def _events(rec: dict) -> Events:
    """Per-second event rates of one wgmma/unit record (what its `event` field counts)."""
    rate = float(rec["steady_rate_per_s"])
    p = rec["params"]
    if rec["family"] == "wgmma":
        _need("wgmma m64n256k16" in rec["event"], f"{rec['name']}: event {rec['event']!r}")
        # a partly occupied burner (params.sms CTAs, one per SM) keeps the other SMs idle
        frac = min(1.0, float(p["sms"]) / CHIP_SMS) if p.get("sms") else 1.0
        return Events(tensor_flops=rate * WGMMA_FLOP, variant=p["variant"], zero_data=bool(p["zero"]),
                      sm_fraction=frac)
    unit = p["unit"]
    by_unit = {
        "bulk_l2": Events(l2_bytes=rate),
        "hbm_read": Events(l2_bytes=rate, hbm_read_bytes=rate, instructions=rate / 512),
        "hbm_copy": Events(l2_bytes=rate, hbm_read_bytes=rate / 2, hbm_write_bytes=rate / 2,
                           instructions=rate / 512),
        "smem_ld": Events(smem_ld_wavefronts=rate, instructions=rate),
        "smem_st": Events(smem_st_wavefronts=rate, instructions=rate),
        "alu_fma": Events(instructions=rate / 32),
    }
    _need(unit in by_unit, f"{rec['name']}: unknown unit {unit!r}")
    return by_unit[unit]


def fit_points(records: list[dict]) -> list[dict]:
    """The steady points the fit uses: name, power_w, mhz, events (per second)."""
    pts = []
    for r in records:
        if r["family"] not in ("wgmma", "units") or r.get("error") or not r.get("steady_rate_per_s"):
            continue
        s = r["power_steady_summary"]
        pts.append({"name": r["name"], "power_w": float(s["power_w"]["tw_mean"]),
                    "mhz": float(s["sm_mhz"]["tw_mean"]), "events": _events(r),
                    "reasons": s.get("reasons", {})})
    return pts


def _light_events(rec: dict) -> tuple[Events, str] | None:
    """(per-second events, 'fit' or 'check') of one light-run record (module docstring)."""
    n, rates = rec["name"], rec.get("steady_rates_per_s") or {}

    def rate(key: str) -> float:
        _need(rates.get(key) is not None, f"light/{n}: steady_rates_per_s.{key} missing")
        return float(rates[key])

    if n.startswith(("idle", "light_resident_", "light_churn_")):
        return Events(sm_fraction=0.0), "fit"
    if n.startswith("light_tma_req"):
        return Events(l2_bytes=rate("bytes")), "fit"
    if n.startswith("light_pipe_"):
        return Events(tensor_flops=rate("wgmma") * WGMMA_FLOP, l2_bytes=rate("bytes")), "check"
    _need(rec.get("steady_rate_per_s"), f"light/{n}: steady_rate_per_s missing")
    flops = float(rec["steady_rate_per_s"]) * WGMMA_FLOP
    if n.startswith("light_wgswz"):
        return Events(tensor_flops=flops), "fit"
    if n.startswith("light_wgmma_"):
        return Events(tensor_flops=flops, variant=rec["params"]["variant"]), "check"
    return None


def light_points(records: list[dict]) -> list[dict]:
    """The light run's points in run order (idle, light.jsonl's order, idle_after): name,
    power_w, mhz, events, role ('fit'/'check'), run (its nuisance columns: 1, position 0..1)."""
    first = [r for r in records if r["name"] == "idle"]
    last = [r for r in records if r["name"] == "idle_after"]
    ran = [r for r in first + [r for r in records if r["family"] == "light"] + last if not r.get("error")]
    pts = []
    for i, r in enumerate(ran):
        got = _light_events(r)
        if got is None:
            continue
        s = r.get("power_steady_summary") or {}
        _need(s.get("power_w") and s.get("sm_mhz"), f"light/{r['name']}: power_steady_summary missing")
        pts.append({"name": r["name"], "power_w": float(s["power_w"]["tw_mean"]),
                    "mhz": float(s["sm_mhz"]["tw_mean"]), "events": got[0], "role": got[1],
                    "run": (1.0, i / max(1, len(ran) - 1))})
    return pts


def _smi(records_dir: pathlib.Path) -> dict[str, float]:
    q = (records_dir / "nvidia_smi_q_power_clock.txt").read_text()
    limit = re.search(r"Current Power Limit\s*:\s*([\d.]+) W", q)
    draw = re.search(r"GPU Power Readings\s*\n\s*Average Power Draw\s*:\s*([\d.]+) W", q)
    sm = re.search(r"\n    Clocks\n(?:.*\n)*?\s*SM\s*:\s*(\d+) MHz", q)
    _need(limit and draw and sm, "nvidia_smi_q_power_clock.txt lacks the power limit / power draw / SM clock")
    sup = (records_dir / "nvidia_smi_supported_clocks.txt").read_text()
    first = sup.split("Memory")[1]  # the graphics clocks listed under the highest memory clock
    clocks = sorted({int(m) for m in re.findall(r"Graphics\s*:\s*(\d+) MHz", first)})
    steps = {b - a for a, b in zip(clocks, clocks[1:])}
    _need(len(clocks) > 2 and len(steps) == 1, "supported graphics clocks are not evenly spaced")
    return {"limit": float(limit.group(1)), "floor": float(draw.group(1)), "floor_mhz": float(sm.group(1)),
            "min": float(clocks[0]), "max": float(clocks[-1]), "step": float(steps.pop())}


def _with(base: H100Power, values: dict[str, float]) -> PowerModel:
    return PowerModel(base.with_values({k: {**base.params()[k].model_dump(), "value": float(v)}
                                        for k, v in values.items()}))


def _lstsq(base: H100Power, pts: list[dict], v0: float, fixed: dict[str, float]):
    """Least squares of the linear fields (and the light run's nuisance columns, RUN_COLUMNS) at
    voltage intercept v0 -> (values, residuals W)."""
    zero = {k: 0.0 for k in LINEAR_FIELDS}
    m0 = _with(base, {**fixed, **zero, "voltage_intercept": v0})
    cols = [_with(base, {**fixed, **zero, "floor_w": 0.0, "idle_clock_w": 0.0, k: 1.0,
                         "voltage_intercept": v0}) for k in LINEAR_FIELDS]
    a = np.array([[m.power_w(p["mhz"], p["events"], 1.0) for m in cols] + list(p.get("run", (0.0, 0.0)))
                  for p in pts])
    b = np.array([p["power_w"] - m0.power_w(p["mhz"], p["events"], 1.0) for p in pts])
    used = [j for j in range(a.shape[1]) if np.any(a[:, j] != 0.0)]   # no light run: no run columns
    x = np.zeros(a.shape[1])
    x[used] = np.linalg.lstsq(a[:, used], b, rcond=None)[0]
    return dict(zip(LINEAR_FIELDS + RUN_COLUMNS, (float(v) for v in x))), a @ x - b


def _step(records: list[dict]) -> dict:
    step = [r for r in records if r["name"].startswith("step_")]
    _need(step and step[0].get("lag"), "no step_* record with `lag`")
    return step[0]


def derive(records_dir: pathlib.Path | None = None) -> tuple[dict[str, tuple[float, str]], dict]:
    """{field: (value, source)} and the fit summary (per-point residuals) from the records."""
    d = pathlib.Path(records_dir) if records_dir else POWER_RECORDS_DIR
    records = load_all(d)
    _need(records, f"no *.jsonl under {d}")
    byname = {r["name"]: r for r in records}
    prov = records[0].get("provenance", {})
    tag = f"{prov.get('device_name', 'H100')}, {str(prov.get('date_utc', ''))[:10]}, commit {prov.get('git_commit', '?')}"
    src = lambda what: f"measured: power/{what} ({tag})"  # noqa: E731
    smi = _smi(d)
    _need("idle" in byname, "no idle record")
    idle_w = float(byname["idle"]["power_steady_summary"]["power_w"]["tw_mean"])
    fixed = {"power_limit_w": smi["limit"], "floor_w": smi["floor"], "idle_clock_w": idle_w - smi["floor"],
             "clock_max_mhz": smi["max"], "clock_min_mhz": smi["min"], "clock_step_mhz": smi["step"]}
    out = {
        "power_limit_w": (smi["limit"], "measured: power/nvidia_smi_q_power_clock.txt Current Power Limit (read, never set)"),
        "floor_w": (smi["floor"], f"measured: power/nvidia_smi_q_power_clock.txt Average Power Draw at rest, SM clock {smi['floor_mhz']:.0f} MHz"),
        "idle_clock_w": (fixed["idle_clock_w"], src(f"units.jsonl idle: steady NVML power {idle_w:.1f} W at 1980 MHz - floor_w")),
        "clock_max_mhz": (smi["max"], "measured: power/nvidia_smi_supported_clocks.txt highest graphics clock"),
        "clock_min_mhz": (smi["min"], "measured: power/nvidia_smi_supported_clocks.txt lowest graphics clock"),
        "clock_step_mhz": (smi["step"], "measured: power/nvidia_smi_supported_clocks.txt spacing (uniform)"),
    }
    light_dir = d / LIGHT_DIR
    light = light_points(load_all(light_dir)) if light_dir.is_dir() else []
    pts = fit_points(records) + [p for p in light if p["role"] == "fit"]
    base = H100Power()
    best = None
    for grid in (np.arange(-0.5, 0.9, 0.01), None):  # coarse, then 0.001 around the coarse best
        if grid is None:
            grid = np.arange(best[1] - 0.01, best[1] + 0.0105, 0.001)
        for v0 in np.round(grid, 3):
            x, res = _lstsq(base, pts, float(v0), fixed)
            sse = float(res @ res)
            if best is None or sse < best[0]:
                best = (sse, float(v0), x, res)
    sse, v0, x, res = best
    rms = (sse / len(pts)) ** 0.5
    fit_src = src(f"wgmma.jsonl + units.jsonl + partial_wgmma.jsonl + light/: least squares over {len(pts)} "
                  f"steady points (rms residual {rms:.1f} W), see calibrate_power.py")
    out["voltage_intercept"] = (v0, fit_src.replace("least squares", "grid search + least squares"))
    loaded = {k for k in LINEAR_FIELDS if any(_loads(p["events"], k) for p in pts)}
    for k in LINEAR_FIELDS:
        if k in loaded:             # a field no point loads keeps its default (and its 'assumed' source)
            out[k] = (x[k], fit_src)
    for v in TENSOR_VARIANTS.values():
        name = f"wgmma_{v}_duty100_zero"
        _need(name in byname, f"no {name} record")
        r = byname[name]
        tf = float(r["steady_rate_per_s"]) * WGMMA_FLOP / 1e12
        mhz = r["power_steady_summary"]["sm_mhz"]["median"]
        out[f"tensor_cap_{v}_tflops"] = (tf, src(f"wgmma.jsonl {name}: steady rate x {WGMMA_FLOP} FLOP; "
                                                 f"held at {mhz:.0f} MHz, reason sw_power_cap, "
                                                 f"{r['power_steady_summary']['power_w']['tw_mean']:.0f} W (one point)"))
    st = _step(records)
    out["governor_reaction_s"] = (float(st["lag"]["sm_mhz"]["on"]["t10_s"]),
                                  src(f"governor.jsonl {st['name']}: lag.sm_mhz.on.t10_s"))
    out["power_reading_lag_s"] = (float(st["lag"]["power_w"]["on"]["t50_s"]),
                                  src(f"governor.jsonl {st['name']}: lag.power_w.on.t50_s"))
    out["tensor_sm_clock_ratio"] = clock_truth_ratio(POWER_RECORDS_DIR.parent / CLOCK_TRUTH)
    burner_fit = {**fixed, **{k: x[k] for k in loaded}, "voltage_intercept": v0}
    pipe = calibrate_power_pipe.fit(_with(base, burner_fit), d)
    out["l2_fed_sq_w"] = (pipe["l2_fed_sq_w"], (
        f"measured: power/light_pipe2/ + light_pipe2_ladder/ + light_pipe2hi/ (TMA+wgmma pipe, {len(pipe['points'])} "
        f"points, 33..132 SMs, up to 4.3 TFLOP/s per SM): least squares of power - burner-fitted model - measured "
        f"idle drift on (chip L2 -> SM TB/s)^2 for tensor launches, nuisance mbarrier energy + constant (rms "
        f"{pipe['rms_w']:.1f} W, max |res| {pipe['max_abs_w']:.1f} W), see calibrate_power_pipe.py "
        f"({calibrate_power_pipe.runs_tag(d)})"))
    tmaw = calibrate_power_tmaw.fit(_with(base, burner_fit), d)
    for k in calibrate_power_tmaw.FIELDS:
        out[k] = (tmaw[k], (
            f"measured: power/light_tmaw/ (TMA tensor-map boxes of 32/64/128-B x 8/128 rows from L2 on every SM, "
            f"{len(tmaw['points'])} points, 0.7-7.5 TB/s): least squares of power - burner-fitted model - measured idle "
            f"drift on L2 requests/s and bytes/s (x v(f)^2) + a run constant ({tmaw['offset_w']:+.1f} W; rms "
            f"{tmaw['rms_w']:.1f} W, max |res| {tmaw['max_abs_w']:.1f} W), see calibrate_power_tmaw.py "
            f"({calibrate_power_tmaw.run_tag(d)})"))
    fit = {"rms_w": rms, "points": [{"name": p["name"], "mhz": p["mhz"], "measured_w": p["power_w"],
                                     "residual_w": float(e)} for p, e in zip(pts, res)],
           "light_run": {k: x[k] for k in RUN_COLUMNS},
           "pipe": pipe, "tmaw": tmaw,
           "checks": _checks(_with(base, {**burner_fit, "l2_fed_sq_w": pipe["l2_fed_sq_w"]}),
                             [p for p in light if p["role"] == "check"], x)}
    return out, fit


def clock_truth_ratio(path: pathlib.Path) -> tuple[float, str]:
    """(median SM clock / NVML clock, source) over the clock-truth record's configurations."""
    _need(path.exists(), f"no {path.name} beside the power records (python3 -m validation.micro_clock_truth)")
    rec = json.loads(path.read_text())
    ratios = []
    for tag, r in sorted(rec["results"].items()):
        eff, nvml = r.get("eff_clock_mhz_median"), r.get("sm_clock_mhz_tw")
        _need(eff and nvml, f"{path.name} {tag}: eff_clock_mhz_median / sm_clock_mhz_tw missing")
        ratios.append(float(eff) / float(nvml))
    prov = rec.get("provenance", {})
    return float(np.median(ratios)), (
        f"measured: {path.name} ({prov.get('device_name', 'H100')}, {str(prov.get('date_utc', ''))[:10]}, commit "
        f"{str(prov.get('git_commit', '?'))[:7]}): median over {len(ratios)} sustained development GEMM loops of "
        f"clock64/%globaltimer clock / NVML time-weighted SM clock (range {min(ratios):.3f}-{max(ratios):.3f})")


#: the Events count each linear field multiplies (a field is fitted only where some point has it)
_LOADS = {"active_base_w": "sm_fraction", "e_l2_pj_per_byte": "l2_bytes", "l2_active_w": "l2_bytes",
          "e_dram_read_pj_per_byte": "hbm_read_bytes", "e_dram_write_pj_per_byte": "hbm_write_bytes",
          "e_smem_ld_pj_per_wavefront": "smem_ld_wavefronts", "e_smem_st_pj_per_wavefront": "smem_st_wavefronts",
          "e_instruction_pj": "instructions"}


def _loads(ev: Events, field: str) -> bool:
    if field.startswith("e_tensor_"):
        return ev.tensor_flops > 0 and field == f"e_tensor_{ev.variant}{'_zero' if ev.zero_data else ''}_pj_per_flop"
    return getattr(ev, _LOADS[field]) > 0


def _checks(model: PowerModel, checks: list[dict], x: dict[str, float]) -> list[dict]:
    """Each check point's predicted - measured power at its own measured clock (with the light run's
    offset and drift), and the clock the model predicts: the highest supported clock whose power,
    with every event rate scaled by clock / measured clock (SM-clock-bound work), is within the limit."""
    out = []
    for p in checks:
        run = x[RUN_COLUMNS[0]] * p["run"][0] + x[RUN_COLUMNS[1]] * p["run"][1]
        at = lambda f: model.power_w(f, p["events"].scaled(f / p["mhz"]), 1.0) + run  # noqa: E731
        pred = next((f for f in model.supported_clocks() if at(f) <= model.limit_w), model.supported_clocks()[-1])
        out.append({"name": p["name"], "mhz": p["mhz"], "measured_w": p["power_w"],
                    "residual_w": at(p["mhz"]) - p["power_w"], "predicted_mhz": pred, "predicted_w": at(pred)})
    return out


def calibrated_json(records_dir: pathlib.Path | None = None) -> dict:
    """The JSON `load_power` reads: every field with value, unit, meaning, source; plus the fit."""
    vals, fit = derive(records_dir)
    base = H100Power().params()
    power = {}
    for k, (v, source) in vals.items():
        p = Param(value=round(float(v), 6 if abs(v) < 10 else 3), unit=base[k].unit,
                  meaning=base[k].meaning, source=source)
        power[k] = p.model_dump()
    return {"about": "Written by `python3 -m hopsim.validate.calibrate_power` from "
                     "validation/records/h100/power/ and microbench__clock_truth.json only (never a GEMM timing record). Do not edit by hand.",
            "power": power,
            "fit": {"rms_w": round(fit["rms_w"], 3),
                    "points": [_rounded(p) for p in fit["points"]],
                    "light_run": _rounded(fit["light_run"]),
                    "l2_fed_sq": {"rms_w": round(fit["pipe"]["rms_w"], 2),
                                      "nuisance": _rounded(fit["pipe"]["nuisance"]),
                                      "points": [_rounded(p) for p in fit["pipe"]["points"]]},
                    "tma_tensor_load": {"rms_w": round(fit["tmaw"]["rms_w"], 2),
                                        "offset_w": round(fit["tmaw"]["offset_w"], 2),
                                        "points": [_rounded(p) for p in fit["tmaw"]["points"]]},
                    "checks_never_fitted": [_rounded(p) for p in fit["checks"]]}}


def _rounded(d: dict) -> dict:
    return {k: (round(v, 2) if isinstance(v, float) else v) for k, v in d.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m hopsim.validate.calibrate_power")
    ap.add_argument("--records", type=pathlib.Path, default=None)
    ap.add_argument("--out", type=pathlib.Path, default=POWER_FILES["h100_sxm"])
    ap.add_argument("--check", action="store_true", help="exit 1 if --out differs from the records' fit")
    a = ap.parse_args(argv)
    data = calibrated_json(a.records)
    text = json.dumps(data, indent=1) + "\n"
    if a.check:
        same = a.out.exists() and a.out.read_text() == text
        print(f"{a.out}: {'matches' if same else 'DIFFERS from'} the power records' calibration")
        return 0 if same else 1
    tmp = a.out.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(a.out)
    for k, p in data["power"].items():
        print(f"{k:36s} {p['value']:>14.6g} {p['unit']:20s} {p['source'][:90]}")
    print(f"fit: rms {data['fit']['rms_w']:.1f} W over {len(data['fit']['points'])} points; wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
