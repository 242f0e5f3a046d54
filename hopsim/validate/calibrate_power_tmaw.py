"""TMA box-shape power records -> the TMA tensor-load energies `e_tma_request_pj`, `e_tma_byte_pj`
(hopsim/power/model.py breakdown "tma").

    python3 -m hopsim.validate.calibrate_power_tmaw      # the fit and its residuals

Called by hopsim/validate/calibrate_power.py (`derive`) after the burner fit, with the model that
fit gives. Reads ONLY validation/records/h100/power/light_tmaw/ (family light_tmaw,
validation/power/tmaw.py: every SM streams TMA tensor-map boxes of 32/64/128-B rows x 8/128 rows
from an L2-resident 8 MiB tensor, no tensor work; its units.jsonl holds the run's idle and
idle_after). GEMM, held-out and portfolio records are never read.

Each point's target is its steady power (time-weighted NVML averaged reading, last 1.5 s) minus
  - the burner-fitted model without these energies at the point's steady SM clock (L2 -> SM bytes
    = the point's TMA bytes/s, sm_fraction 1), and
  - the run's idle drift, measured, not fitted (its idle interpolated linearly in run order
    between `idle` and `idle_after`, minus the model's idle at 1980 MHz).
It is fitted by linear least squares to
    e_tma_request_pj x L2 requests/s x v(f)^2  +  e_tma_byte_pj x bytes/s x v(f)^2  +  c0
(requests: one per box row of up to 128 B, as the timing model counts them, `extra.tma_load_requests`;
c0 a constant of the run, reported, not a model field). The burner fit's L2 byte energy comes from
bulk copies (whole 128-B lines in 8 KB requests); the tensor path costs more per byte and per row.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

from hopsim.power.model import Events, PowerModel
from isa.errors import HopsimError
from validation.power.records import POWER_RECORDS_DIR, load_all

RUN_DIR = "light_tmaw"
FIELDS = ("e_tma_request_pj", "e_tma_byte_pj")


class TmawFitError(HopsimError):
    """A light_tmaw record lacks what the fit needs (message names the record and field)."""


def _steady(rec: dict, what: str) -> float:
    v = ((rec.get("power_steady_summary") or {}).get(what) or {}).get("tw_mean")
    if v is None:
        raise TmawFitError(f"{rec['name']}: power_steady_summary.{what}.tw_mean missing")
    return float(v)


def points(model: PowerModel, records_dir: pathlib.Path | None = None) -> list[dict]:
    """The run's points: name, mhz, bytes/s, requests/s, measured W, target W (see the docstring)."""
    d = (pathlib.Path(records_dir) if records_dir else POWER_RECORDS_DIR) / RUN_DIR
    if not d.is_dir():
        raise TmawFitError(f"no {RUN_DIR}/ under {d.parent} (the TMA box-shape power records)")
    recs = load_all(d)
    by = {r["name"]: r for r in recs}
    if "idle" not in by or "idle_after" not in by:
        raise TmawFitError(f"{RUN_DIR}: idle and idle_after records needed (the run's drift)")
    ran = [r for r in recs if r["family"] == "light_tmaw" and not r.get("error")]
    if not ran:
        raise TmawFitError(f"{RUN_DIR}: no light_tmaw point without an error")
    i0, i1 = _steady(by["idle"], "power_w"), _steady(by["idle_after"], "power_w")
    idle_model = model.power_w(model.f_max, Events(sm_fraction=0.0), 1.0)
    out = []
    for j, r in enumerate(ran, 1):
        rt = r.get("steady_rates_per_s") or {}
        if rt.get("bytes") is None or rt.get("rows") is None:
            raise TmawFitError(f"{r['name']}: steady_rates_per_s.bytes / .rows missing")
        mhz = _steady(r, "sm_mhz")
        parts = model.power_w(mhz, Events(l2_bytes=float(rt["bytes"]), sm_fraction=1.0), 1.0)
        drift = i0 + (i1 - i0) * j / (len(ran) + 1) - idle_model
        out.append({"name": r["name"], "mhz": mhz, "bytes": float(rt["bytes"]), "requests": float(rt["rows"]),
                    "v2": model.voltage(mhz) ** 2, "measured_w": _steady(r, "power_w"), "parts_w": parts,
                    "drift_w": drift, "target_w": _steady(r, "power_w") - parts - drift})
    return out


def fit(model: PowerModel, records_dir: pathlib.Path | None = None) -> dict:
    """Least squares of (per-request, per-byte, c0) on the targets -> the two energies (pJ),
    the constant, residuals (W)."""
    pts = points(model, records_dir)
    a = np.array([[p["requests"] * p["v2"] * 1e-12, p["bytes"] * p["v2"] * 1e-12, 1.0] for p in pts])
    b = np.array([p["target_w"] for p in pts])
    x = np.linalg.lstsq(a, b, rcond=None)[0]
    res = a @ x - b
    return {"e_tma_request_pj": float(x[0]), "e_tma_byte_pj": float(x[1]), "offset_w": float(x[2]),
            "rms_w": float(np.sqrt(np.mean(res ** 2))), "max_abs_w": float(np.max(np.abs(res))),
            "points": [{"name": p["name"], "mhz": p["mhz"], "l2_tbps": p["bytes"] / 1e12,
                        "requests_per_s": p["requests"], "measured_w": p["measured_w"],
                        "term_w": float(a[i, :2] @ x[:2]), "residual_w": float(e)}
                       for i, (p, e) in enumerate(zip(pts, res))]}


def run_tag(records_dir: pathlib.Path | None = None) -> str:
    """'light_tmaw 2026-11-24 commit ad9bdca': the run's provenance, for the fields' sources."""
    d = (pathlib.Path(records_dir) if records_dir else POWER_RECORDS_DIR) / RUN_DIR
    prov = next((r.get("provenance") or {} for r in load_all(d) if r["family"] == "light_tmaw"), {})
    return f"{RUN_DIR} {str(prov.get('date_utc', ''))[:10]} commit {str(prov.get('git_commit', '?'))[:7]}"


def report(f: dict) -> str:
    lines = [f"TMA tensor-load energies from {RUN_DIR}/ ({len(f['points'])} points):",
             f"  e_tma_request_pj {f['e_tma_request_pj']:.1f} pJ per L2 request, e_tma_byte_pj "
             f"{f['e_tma_byte_pj']:.2f} pJ/B beyond e_l2_pj_per_byte; run constant {f['offset_w']:+.1f} W; "
             f"rms {f['rms_w']:.1f} W, max |res| {f['max_abs_w']:.1f} W",
             f"  {'point':<18} {'MHz':>5} {'TB/s':>6} {'req/s':>9} {'measured W':>10} {'term W':>7} {'res W':>6}"]
    for p in f["points"]:
        lines.append(f"  {p['name']:<18} {p['mhz']:5.0f} {p['l2_tbps']:6.2f} {p['requests_per_s']:9.3g} "
                     f"{p['measured_w']:10.1f} {p['term_w']:7.1f} {p['residual_w']:+6.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m hopsim.validate.calibrate_power_tmaw", description=__doc__.split("\n")[0])
    ap.add_argument("--records", default=None, help="power records folder (default validation/records/h100/power)")
    a = ap.parse_args(argv)
    try:
        print(report(fit(PowerModel.load(), a.records)))
    except HopsimError as e:
        print(f"calibrate_power_tmaw: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
