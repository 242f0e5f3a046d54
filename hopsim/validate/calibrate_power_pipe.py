"""TMA+wgmma pipe records -> the fed-L2 term `l2_fed_sq_w` (hopsim/power/model.py `fed_l2_w`).

    python3 -m hopsim.validate.calibrate_power_pipe      # the fit, residuals by group, form and exponent scans

Called by hopsim/validate/calibrate_power.py (`derive`) after the burner fit, with the model that
fit gives. Reads ONLY the pipe runs' records: validation/records/h100/power/light_pipe2/,
light_pipe2_ladder/ and light_pipe2hi/ (family light_pipe2, validation/power/pipe2.py; each
folder's units.jsonl holds that run's idle and idle_after). GEMM, held-out and portfolio records
are never read.

Each point's target is its steady power (time-weighted NVML averaged reading, last 1.5 s) minus
  - the burner-fitted model (without this term) at the point's own steady SM clock (tensor FLOPs = wgmma/s x
    2*64*256*16, L2 bytes = TMA bytes/s, sm_fraction = CTAs / 132: one CTA per SM), and
  - the run's idle drift, measured, not fitted: its idle power interpolated linearly in run order
    between `idle` and `idle_after`, minus the model's idle at 1980 MHz.
It is fitted by linear least squares to
    l2_fed_sq_w x (chip L2 -> SM TB/s)^2 x [tensor FLOPs > 0]  +  e_bar x mbarrier arrives/s  +  c0
(the model's variable is the L2's distinct byte rate, `Events.l2_distinct_bytes`; every pipe CTA
reads its own data, so here it equals the L2 -> SM byte rate)
over every pipe point (full, paced and unpaced, 33..132 SMs, 2 and 4 stages, reuse 1 and 2, and
the parts: notma, nowgmma, nobar, baronly, which load only the nuisance columns). e_bar (the
mbarrier handshakes the simulator does not count as power events) and c0 (a constant of these
runs) are nuisance columns, reported, not model fields.

The form was chosen among one-coefficient candidates by these residuals only (`FORMS`,
`form_scan`): the chip-wide L2 -> SM byte rate squared has the lowest rms; the per-SM tensor rate
squared (the first try, fitted on light_pipe2 + ladder only) misses the capped 132-SM points by
up to 77 W once the high-rate run (light_pipe2hi: 4.2 TFLOP/s per SM, 33 SMs draw no excess) is in.
`capped_clocks` solves each capped point's clock with the fitted model (rates scaled with the
clock, the unpaced pipe being SM-bound) against the measured steady clock.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

from hopsim.power.model import FED_L2_EXPONENT, Events, PowerModel
from isa.errors import HopsimError
from validation.power.records import POWER_RECORDS_DIR, load_all

WGMMA_FLOP = 2 * 64 * 256 * 16
CHIP_SMS = 132
PIPE_DIRS = ("light_pipe2", "light_pipe2_ladder", "light_pipe2hi")
#: the nuisance columns beside the term (fit summary only, never model fields)
NUISANCE = ("pipe_e_mbarrier_pj", "pipe_offset_w")
#: a point whose steady power is within this of the 700 W limit is at the cap (SW power cap)
CAPPED_W = 690.0
#: run folder -> group name of the residual report
GROUPS = {"light_pipe2": "first run", "light_pipe2_ladder": "ladder", "light_pipe2hi": "high-rate"}


class PipeFitError(HopsimError):
    """A pipe record lacks what the fit needs (message names the record and field)."""


def _steady(rec: dict, what: str) -> float:
    v = ((rec.get("power_steady_summary") or {}).get(what) or {}).get("tw_mean")
    if v is None:
        raise PipeFitError(f"{rec['name']}: power_steady_summary.{what}.tw_mean missing")
    return float(v)


def _rates(rec: dict) -> dict:
    rt = rec.get("steady_rates_per_s") or {}
    for k in ("wgmma", "bytes", "mbar_arrives"):
        if rt.get(k) is None:
            raise PipeFitError(f"{rec['name']}: steady_rates_per_s.{k} missing")
    if not rec.get("ctas"):
        raise PipeFitError(f"{rec['name']}: ctas missing (one CTA per SM: the SMs the pipe used)")
    return rt


def run_points(records: list[dict], model: PowerModel, run: str) -> list[dict]:
    """One run's pipe points: name, run, sms, tflops_per_sm, events (per s), mhz, mbar, target_w."""
    by = {r["name"]: r for r in records}
    if "idle" not in by or "idle_after" not in by:
        raise PipeFitError(f"{run}: idle and idle_after records needed (the run's drift)")
    ran = [by["idle"]] + [r for r in records if r["family"] == "light_pipe2" and not r.get("error")] + [by["idle_after"]]
    i0, i1 = _steady(by["idle"], "power_w"), _steady(by["idle_after"], "power_w")
    idle_model = model.power_w(model.f_max, Events(sm_fraction=0.0), 1.0)
    out = []
    for j, r in enumerate(ran[1:-1], 1):
        rt, n = _rates(r), int(r["ctas"])
        ev = Events(tensor_flops=float(rt["wgmma"]) * WGMMA_FLOP, l2_bytes=float(rt["bytes"]),
                    sm_fraction=min(1.0, n / CHIP_SMS))
        mhz = _steady(r, "sm_mhz")
        parts = model.power_w(mhz, ev, 1.0) - model.fed_l2_w(ev)    # the model without the term
        drift = i0 + (i1 - i0) * j / (len(ran) - 1) - idle_model
        out.append({"name": r["name"], "run": run, "sms": n, "events": ev, "mhz": mhz,
                    "tflops_per_sm": ev.tensor_flops / n / 1e12, "mbar": float(rt["mbar_arrives"]),
                    "measured_w": _steady(r, "power_w"), "drift_w": drift, "parts_w": parts,
                    "target_w": _steady(r, "power_w") - parts - drift})
    return out


def pipe_points(model: PowerModel, records_dir: pathlib.Path | None = None) -> list[dict]:
    d = pathlib.Path(records_dir) if records_dir else POWER_RECORDS_DIR
    pts = []
    for sub in PIPE_DIRS:
        if not (d / sub).is_dir():
            raise PipeFitError(f"no {sub}/ under {d} (the TMA+wgmma pipe records)")
        pts += run_points(load_all(d / sub), model, sub)
    return pts


def runs_tag(records_dir: pathlib.Path | None = None) -> str:
    """'light_pipe2 2026-11-24 commit f93b8ef; ...': the pipe runs' provenance, for the field's source."""
    d = pathlib.Path(records_dir) if records_dir else POWER_RECORDS_DIR
    tags = []
    for sub in PIPE_DIRS:
        prov = next((r.get("provenance") or {} for r in load_all(d / sub) if r["family"] == "light_pipe2"), {})
        tags.append(f"{sub} {str(prov.get('date_utc', ''))[:10]} commit {str(prov.get('git_commit', '?'))[:7]}")
    return "; ".join(tags)


def _fed(ev: Events) -> bool:
    return ev.l2_bytes > 0 and ev.tensor_flops > 0


#: one-coefficient candidates (value per W of coefficient, of a point's event rates per second and
#: its SMs `n`): the model's form first; the others are reported by `form_scan` for the guide
FORMS = {
    "chip L2 TB/s ^2": lambda ev, n, e: (ev.l2_distinct_bytes / 1e12) ** e,
    "N x (L2 100 GB/s per SM)^2": lambda ev, n, e: n * (ev.l2_bytes / n / 1e11) ** e,
    "N x (TFLOP/s per SM)^2": lambda ev, n, e: n * (ev.tensor_flops / n / 1e12) ** e,
    "chip L2 TB/s x PFLOP/s": lambda ev, n, e: (ev.l2_bytes / 1e12) * (ev.tensor_flops / 1e15),
    "chip L2 TB/s ^2 x v(f)^2": None,            # needs the clock: `_column`
}
MODEL_FORM = "chip L2 TB/s ^2"


def _column(p: dict, form: str, exponent: float, model: PowerModel | None) -> float:
    ev = p["events"]
    if not _fed(ev):
        return 0.0
    if form == "chip L2 TB/s ^2 x v(f)^2":
        return (ev.l2_distinct_bytes / 1e12) ** exponent * model.voltage(p["mhz"]) ** 2
    return FORMS[form](ev, p["sms"], exponent)


def term_column(p: dict, exponent: float = FED_L2_EXPONENT) -> float:
    """The model's term per W of coefficient: (the L2's distinct TB/s)^exponent, 0 without tensor
    FLOPs (the pipe reads distinct data: its distinct bytes are its L2 -> SM bytes)."""
    return _column(p, MODEL_FORM, exponent, None)


def _group(p: dict) -> str:
    return GROUPS[p["run"]] + (" capped" if p["measured_w"] >= CAPPED_W else "")


def group_residuals(points: list[dict]) -> dict[str, dict]:
    """rms and max |residual| (W) per group: first run / ladder / high-rate, capped points apart."""
    by: dict[str, list[float]] = {}
    for p in points:
        by.setdefault(_group(p), []).append(p["residual_w"])
    return {g: {"n": len(v), "rms_w": float(np.sqrt(np.mean(np.square(v)))), "max_abs_w": float(np.max(np.abs(v)))}
            for g, v in by.items()}


def fit_points(pts: list[dict], exponent: float = FED_L2_EXPONENT, form: str = MODEL_FORM,
               model: PowerModel | None = None) -> dict:
    """Least squares of (term, e_bar, c0) on the targets -> coefficient, nuisance, residuals."""
    cols = [_column(p, form, exponent, model) for p in pts]
    a = np.array([[c, p["mbar"] * 1e-12, 1.0] for c, p in zip(cols, pts)])
    b = np.array([p["target_w"] for p in pts])
    x = np.linalg.lstsq(a, b, rcond=None)[0]
    res = a @ x - b
    points = [{"name": p["name"], "run": p["run"], "sms": p["sms"], "mhz": p["mhz"],
               "tflops_per_sm": p["tflops_per_sm"], "l2_tbps": p["events"].l2_bytes / 1e12,
               "measured_w": p["measured_w"], "term_w": float(x[0] * c), "residual_w": float(e)}
              for p, c, e in zip(pts, cols, res)]
    return {"l2_fed_sq_w": float(x[0]), "nuisance": dict(zip(NUISANCE, (float(x[1]), float(x[2])))),
            "rms_w": float(np.sqrt(np.mean(res ** 2))), "max_abs_w": float(np.max(np.abs(res))),
            "groups": group_residuals(points), "points": points}


def exponent_scan(pts: list[dict], exponents=(1.0, 1.5, 2.0, 2.5, 3.0)) -> dict[float, float]:
    """rms residual (W) of the fit at each exponent (the coefficient refitted each time)."""
    return {e: fit_points(pts, e)["rms_w"] for e in exponents}


def form_scan(pts: list[dict], model: PowerModel) -> dict[str, tuple[float, float]]:
    """(rms, max |residual|) in W of each one-coefficient candidate form, exponent 2."""
    return {f: (r["rms_w"], r["max_abs_w"]) for f in FORMS
            for r in [fit_points(pts, FED_L2_EXPONENT, f, model)]}


def capped_clocks(pts: list[dict], model: PowerModel, coef: float) -> list[dict]:
    """Each capped point's clock solved with the model + term (+ the run's idle drift): the
    highest supported clock whose power stays within the limit, the pipe's rates scaled with the
    clock (unpaced: SM-bound) from the measured point; beside the measured steady clock."""
    out = []
    for p in pts:
        if p["measured_w"] < CAPPED_W:
            continue
        solved = model.v["clock_min_mhz"]
        for f in sorted(model.supported_clocks(), reverse=True):
            ev = p["events"].scaled(f / p["mhz"])
            pw = model.power_w(f, ev, 1.0) - model.fed_l2_w(ev) + coef * term_column({**p, "events": ev}) + p["drift_w"]
            if pw <= model.limit_w:
                solved = f
                break
        out.append({"name": p["name"], "sms": p["sms"], "measured_mhz": p["mhz"], "solved_mhz": float(solved)})
    return out


def fit(model: PowerModel, records_dir: pathlib.Path | None = None) -> dict:
    return fit_points(pipe_points(model, records_dir))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m hopsim.validate.calibrate_power_pipe")
    ap.add_argument("--records", type=pathlib.Path, default=None, help="the power records folder")
    a = ap.parse_args(argv)
    try:
        model = PowerModel.load()
        pts = pipe_points(model, a.records)
        f = fit_points(pts)
    except (HopsimError, ValueError, OSError) as exc:
        print(f"calibrate_power_pipe: {exc}", file=sys.stderr)
        return 2
    print(f"l2_fed_sq_w {f['l2_fed_sq_w']:.4g} W/(TB/s)^2; nuisance "
          + ", ".join(f"{k} {v:.4g}" for k, v in f["nuisance"].items())
          + f"; rms {f['rms_w']:.1f} W, max |res| {f['max_abs_w']:.1f} W over {len(pts)} points")
    for g, r in f["groups"].items():
        print(f"  {g:<18} {r['n']:>2} points  rms {r['rms_w']:5.1f} W  max |res| {r['max_abs_w']:5.1f} W")
    for p in f["points"]:
        print(f"  {p['name']:<40} {p['sms']:>3} SMs {p['mhz']:>5.0f} MHz {p['tflops_per_sm']:5.2f} TFLOP/s/SM "
              f"{p['l2_tbps']:5.2f} TB/s {p['measured_w']:6.1f} W  term {p['term_w']:6.1f} W  model - measured {p['residual_w']:+6.1f} W")
    for c in capped_clocks(pts, model, f["l2_fed_sq_w"]):
        print(f"  capped {c['name']:<40} measured {c['measured_mhz']:5.0f} MHz  solved {c['solved_mhz']:5.0f} MHz")
    print("form scan (rms / max W): " + "; ".join(f"{k}: {r:.1f} / {m:.1f}" for k, (r, m) in form_scan(pts, model).items()))
    print("exponent scan (rms W): " + ", ".join(f"{e:g}: {r:.1f}" for e, r in exponent_scan(pts).items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
