"""Light-load power records -> the candidate power terms the burners could not separate.

    python3 -m hopsim.validate.calibrate_power_light                 # fit, print terms + residuals
    python3 -m hopsim.validate.calibrate_power_light --records DIR --json out.json

Reads ONLY the light run's records: the `light` subfolder of validation/records/h100/power/
(light.jsonl and that run's units.jsonl with idle/idle_after; a subfolder, so calibrate_power's
burner fit never sees it; family "light", validation/power/light.py). GEMM and held-out records
are never read.
Each point's steady power (time-weighted NVML averaged reading over the last 1.5 s) minus what
the CURRENT calibrated model (hopsim/power/model.py, hopsim/config/h100_sxm_power_calibrated.json)
already predicts from the point's events (tensor FLOPs by variant, L2 bytes, SM fraction) is the
residual these terms are fitted to by linear least squares. All points run at 1980 MHz (v(f) = 1),
so each term is its value at boost; in the model, static terms would scale by f v(f)^2 and
energies by v(f)^2 like the existing ones. Each term's column is non-zero only on the points made
to load it: the burners the model was calibrated on already hold their own static power (one
CTA per SM), so resident_* is what a resident but WAITING CTA adds beyond active_base_w.

| term | unit | column (fit points) |
|---|---|---|
| run_offset_w | W | 1 on every point (this run's idle drift vs the calibration run; not a model field) |
| resident_sm_w | W per SM | light_resident_*: SMs holding a resident, waiting CTA |
| resident_warp_w | W per warp | light_resident_*: resident warps (SMs x warps per CTA) |
| e_poll_pj | pJ | light_resident_poll_*: mbarrier.try_wait warp iterations per second |
| l2_active_w | W | light_tma_req*: 1 (a step when TMA/L2 traffic is on at all: the two calibration bulk_l2 |
|   |   | points extrapolate to 181 W at zero bytes vs 119 W idle, docs/guide/power-model.md) |
| e_l2_extra_pj_per_byte | pJ/B | light_tma_req*: bytes per second (correction to e_l2_pj_per_byte) |
| e_tma_request_pj | pJ | light_tma_req*: cp.async.bulk requests per second |
| e_cta_pj | pJ | light_churn_*: CTAs launched per second |
| e_launch_pj | pJ | light_churn_*: kernel launches per second |
| e_tensor_swz64_extra_pj_per_flop | pJ/FLOP | light_wgswz64_*: FLOPs/s with 64-B swizzle descriptors |
| e_tensor_swz32_extra_pj_per_flop | pJ/FLOP | light_wgswz32_*: FLOPs/s with 32-B swizzle descriptors |

Check points (never fitted, reported before/after): light_pipe_* (a GEMM-like TMA-fed CTA: its
residual after the fit, with the L2/request terms applied, says what the terms still miss) and
light_wgmma_*_duty10 (bf16 vs f16 at low duty against the burner calibration).
Nothing here changes a simulated number: phase 2 decides which terms enter the model.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

from hopsim.power.model import Events, PowerModel
from isa.errors import HopsimError
from validation.power.records import POWER_RECORDS_DIR, load_all

WGMMA_FLOP = 2 * 64 * 256 * 16
CHIP_SMS = 132
TERMS = ("run_offset_w", "resident_sm_w", "resident_warp_w", "e_poll_pj", "l2_active_w", "e_l2_extra_pj_per_byte",
         "e_tma_request_pj", "e_cta_pj", "e_launch_pj", "e_tensor_swz64_extra_pj_per_flop",
         "e_tensor_swz32_extra_pj_per_flop")
_PJ_TERMS = {"e_poll_pj", "e_l2_extra_pj_per_byte", "e_tma_request_pj", "e_cta_pj", "e_launch_pj",
             "e_tensor_swz64_extra_pj_per_flop", "e_tensor_swz32_extra_pj_per_flop"}
#: the light run (light.jsonl + its own units.jsonl idle points), kept apart from the burner run
LIGHT_RECORDS_DIR = POWER_RECORDS_DIR / "light"
PIPE_WARPS = 5          # pipe kernel: 160 threads
SWZ_WARPS = 8           # wgswz burner: 256 threads


class LightFitError(HopsimError):
    """A light record lacks what the fit needs (message names the record and field)."""


def _rate(rec: dict, key: str) -> float:
    v = (rec.get("steady_rates_per_s") or {}).get(key)
    if v is None:
        raise LightFitError(f"{rec['name']}: steady_rates_per_s.{key} missing; rerun validation.power.light")
    return float(v)


def point_events(rec: dict) -> tuple[Events, dict[str, float], str]:
    """(events the current model already prices, {term: column value}, 'fit' or 'check')."""
    n, p = rec["name"], rec["params"]
    col = dict.fromkeys(TERMS, 0.0)
    col["run_offset_w"] = 1.0
    if rec["family"] == "units" and n.startswith("idle"):
        return Events(sm_fraction=0.0), col, "fit"
    if n.startswith("light_resident_"):
        sms, warps = float(p["sms"]), float(p["warps"])
        col.update(resident_sm_w=sms, resident_warp_w=sms * warps)
        if p["mode"] == "poll":
            col["e_poll_pj"] = _rate(rec, "warp_iterations")
        return Events(sm_fraction=sms / CHIP_SMS), col, "fit"
    if n.startswith(("light_tma_req", "light_pipe_")):
        col.update(l2_active_w=1.0, e_l2_extra_pj_per_byte=_rate(rec, "bytes"), e_tma_request_pj=_rate(rec, "requests"))
    if n.startswith("light_tma_req"):
        return Events(l2_bytes=_rate(rec, "bytes")), col, "fit"
    if n.startswith("light_pipe_"):
        return Events(tensor_flops=_rate(rec, "wgmma") * WGMMA_FLOP, l2_bytes=_rate(rec, "bytes")), col, "check"
    if n.startswith("light_wgswz"):
        flops = _rate1(rec) * WGMMA_FLOP
        if int(p["swizzle"]) in (32, 64):
            col[f"e_tensor_swz{int(p['swizzle'])}_extra_pj_per_flop"] = flops
        return Events(tensor_flops=flops), col, "fit"
    if n.startswith("light_wgmma_"):
        return Events(tensor_flops=_rate1(rec) * WGMMA_FLOP, variant=p["variant"]), col, "check"
    if n.startswith("light_churn_"):
        col.update(e_cta_pj=_rate(rec, "ctas"), e_launch_pj=_rate(rec, "launches"))
        return Events(sm_fraction=0.0), col, "fit"
    raise LightFitError(f"{n}: not a light point (valid prefixes: light_resident_, light_tma_req, "
                        f"light_pipe_, light_wgswz, light_wgmma_, light_churn_, idle)")


def _rate1(rec: dict) -> float:
    if rec.get("steady_rate_per_s") is None:
        raise LightFitError(f"{rec['name']}: steady_rate_per_s missing")
    return float(rec["steady_rate_per_s"])


def _columns(records: list[dict], pm: PowerModel, mhz: float) -> list[dict]:
    """Per point that ran: name, role, column row (SI units), measured - current model (W)."""
    out = []
    for r in records:
        if r.get("error") or not (r["family"] == "light" or r["name"].startswith("idle")):
            continue
        st = (r.get("power_steady_summary") or {}).get("power_w") or {}
        if st.get("tw_mean") is None:
            raise LightFitError(f"{r['name']}: power_steady_summary.power_w.tw_mean missing")
        ev, col, role = point_events(r)
        # the current model at the point's own steady clock (the capped pipe ran at ~1690 MHz, not
        # at `mhz`); the residual terms' columns stay their values at boost
        f = float(((r.get("power_steady_summary") or {}).get("sm_mhz") or {}).get("tw_mean") or mhz)
        out.append({"name": r["name"], "role": role,
                    "row": [col[t] * (1e-12 if t in _PJ_TERMS else 1.0) for t in TERMS],
                    "excess_w": float(st["tw_mean"]) - pm.power_w(f, ev, 1.0)})
    return out


def fit_records(records: list[dict], model: PowerModel | None = None, mhz: float = 1980.0) -> dict:
    """Least squares of TERMS on (measured - current model) over the fit points that ran; check
    points get the fitted terms applied and are reported, never fitted."""
    pts = _columns(records, model or PowerModel.load(), mhz)
    fit = [q for q in pts if q["role"] == "fit"]
    if not fit:
        raise LightFitError("no light or idle record that ran")
    a, b = np.array([q["row"] for q in fit]), np.array([q["excess_w"] for q in fit])
    used = [j for j in range(len(TERMS)) if np.any(a[:, j] != 0.0)]
    x = np.zeros(len(TERMS))
    x[used] = np.linalg.lstsq(a[:, used], b, rcond=None)[0]
    res = a @ x - b
    return {"terms": {t: float(v) for t, v in zip(TERMS, x)},
            "identified": [TERMS[j] for j in used],
            "rank": int(np.linalg.matrix_rank(a[:, used])),
            "rms_w": float(np.sqrt(np.mean(res ** 2))),
            "points": [{"name": q["name"], "role": q["role"], "residual_before_w": -q["excess_w"],
                        "residual_after_w": float(np.dot(q["row"], x) - q["excess_w"])} for q in pts]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m hopsim.validate.calibrate_power_light")
    ap.add_argument("--records", type=pathlib.Path, default=LIGHT_RECORDS_DIR)
    ap.add_argument("--json", type=pathlib.Path, default=None, help="write the fit here")
    a = ap.parse_args(argv)
    if not a.records.is_dir():
        print(f"--records: {a.records} is not a folder; give the folder holding light.jsonl", file=sys.stderr)
        return 2
    try:
        fit = fit_records(load_all(a.records))
    except (HopsimError, ValueError) as exc:
        print(f"calibrate_power_light: {exc}", file=sys.stderr)
        return 2
    for t in TERMS:
        print(f"{t:36s} {fit['terms'][t]:>12.4g}{'' if t in fit['identified'] else '   (no point loads it)'}")
    print(f"rank {fit['rank']} of {len(fit['identified'])}; rms residual {fit['rms_w']:.1f} W")
    for p in fit["points"]:
        print(f"  {p['role']:<5} {p['name']:<34} current model {p['residual_before_w']:+7.1f} W -> "
              f"{p['residual_after_w']:+7.1f} W (model - measured)")
    if a.json:
        a.json.write_text(json.dumps(fit, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
