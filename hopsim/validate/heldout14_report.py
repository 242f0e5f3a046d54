"""Issue 14's held-out comparison: the summary, the fixed targets and report.md of `--set heldout14`
.. `--set heldout20`.

    python3 -m hopsim.validate.heldout --set heldout14|heldout15|...|heldout20 --records DIR --out DIR

A set (validation/heldout14.py .. heldout20.py: one design, validation/heldout_draw.py,
18 one-dimensional sweeps + single points, seven seeds) is passed as its module (`hset`: sweeps(),
membership(), SWEEP_NAME, SEED); every function defaults to heldout14. It is measured on
the H100 as benchmark loops after the model is frozen, and compared once; compare.json and
report.md keep the model fingerprint (`hopsim config show`'s). Each record is simulated twice by
`heldout.compare_one`: at the predicted clock (`--clock sustained`, the real prediction) and at
the record's measured time-weighted clock (the SM model alone). Both bases get every metric:
time MAPE / worst / within 10%; per sweep the best-configuration agreement, the curve's shape and
points within 10%, Spearman; plus the predicted clock and power against the measured ones.
Where records carry the SM-clock probe (heldout17 .. heldout20: `sm_clock_eff_mhz`, the SMs' clock64 /
%globaltimer clock), a third basis, the SMs' measured clock (clock64), gets the time and sweep
metrics too (SM_BASIS; no target reads it).
The targets are the issues' numbers, written here as constants (never derived from a report).
"""

from __future__ import annotations

from types import ModuleType
from typing import Sequence

from hopsim.validate.heldout_metrics import (SweepFit, Target, failed_row, judge, stats,
                                             sweep_summary)
from isa.errors import InputError
from validation import heldout14

#: (basis key, row field of the simulated time, words)
BASES = (("predicted_clock", "pred_time_ms", "at the predicted clock"),
         ("measured_clock", "sim_time_ms_at_hw_clock", "at the measured clock (SM model alone)"))
#: the third basis, present where rows have the SM-clock probe (heldout.at_sm_clock)
SM_BASIS = ("sm_clock", "sim_time_ms_at_sm_clock", "at the SMs' measured clock (clock64)")
#: the bases' keys in report order
BASIS_KEYS = ("predicted_clock", "measured_clock", "sm_clock")

#: Issue 14's and issue 13's targets on a fresh held-out set (fixed; see the issues' Targets).
TARGETS = (
    Target(14, "time MAPE at the measured clock", "time_mape_pct_measured_clock", "<=", 6.0),
    Target(14, "worst time error (magnitude) at the measured clock", "time_worst_abs_pct_measured_clock", "<=", 15.0),
    Target(14, "best-configuration agreement, sweeps at the predicted clock",
           "best_agrees_pct_predicted_clock", ">=", 90.0),
    Target(14, "best-configuration agreement, sweeps at the measured clock",
           "best_agrees_pct_measured_clock", ">=", 90.0),
    Target(14, "time MAPE at the predicted clock (also issue 13's)", "time_mape_pct_predicted_clock", "<=", 8.0),
    Target(13, "predicted SM clock within 5% of the measured time-weighted clock (share of records)",
           "clock_within_5pct_share", ">=", 100.0),
    Target(13, "predicted power within 10% of the NVML averaged reading (share of records)",
           "power_within_10pct_share", ">=", 100.0),
)


def only_members(recs: list[dict], hset: ModuleType = heldout14) -> list[dict]:
    """The records, all of which must belong to the set; InputError names the first that does
    not (a wrong --records directory, or a device that drew another set)."""
    members = hset.membership()
    name = hset.SWEEP_NAME
    for r in recs:
        if r.get("tag") not in members:
            raise InputError("record", r.get("tag"), f"a configuration of the {name} set "
                             f"(validation/{name}.py); is --records the {name} run?")
    return recs


def _sweep_rows(rows_by_tag: dict, sweeps: Sequence, field: str) -> tuple[list[dict], list[str]]:
    """Per sweep (with >= 2 measured points) its fit on the simulated-time `field`; and the
    names of the sweeps not evaluated (fewer than 2 points measured)."""
    out, skipped = [], []
    for s in sweeps:
        pts = [(lab, rows_by_tag[p.tag]) for p, lab in zip(s.points, s.labels) if p.tag in rows_by_tag]
        if len(pts) < 2:
            skipped.append(s.name)
            continue
        labels = tuple(lab for lab, _ in pts)
        bad = [r for _, r in pts if "error" in r or r.get(field) is None]
        if bad:
            why = bad[0].get("error") or bad[0].get("sm_clock_error") or "no time"
            out.append(failed_row(s.name, s.dim, labels, f"{bad[0]['tag']}: {why}"))
            continue
        out.append(SweepFit(s.name, s.dim, labels, tuple(r["hw_time_ms"] for _, r in pts),
                            tuple(r[field] for _, r in pts)).row())
    return out, skipped


def _share(st: dict, key: str) -> float | None:
    return 100 * st[key] / st["n"] if st.get("n") else None


def _flat(summary: dict) -> dict:
    """The metrics the targets read."""
    tm, tp = summary["time_at_measured_clock"], summary["time_at_predicted_clock"]
    return {
        "time_mape_pct_measured_clock": tm.get("mape_pct"),
        "time_worst_abs_pct_measured_clock": abs(tm["worst_pct"]) if tm.get("n") else None,
        "time_mape_pct_predicted_clock": tp.get("mape_pct"),
        "best_agrees_pct_predicted_clock": summary["sweeps"]["predicted_clock"]["all"]["best_agrees_pct"],
        "best_agrees_pct_measured_clock": summary["sweeps"]["measured_clock"]["all"]["best_agrees_pct"],
        "clock_within_5pct_share": _share(summary["clock"], "within_5pct"),
        "power_within_10pct_share": _share(summary["power_nvml"], "within_10pct"),
    }


def probed(rows: list[dict]) -> bool:
    """Whether any row has the SM-clock probe (then the SMs' measured clock is a third basis)."""
    return any("hw_sm_clock_eff_mhz" in r for r in rows)


def summarise(rows: list[dict], sweeps: Sequence | None = None, members: dict | None = None,
              hset: ModuleType = heldout14) -> dict:
    """Every metric of the comparison, the sweep rows of both bases and the judged targets.
    `sweeps`/`members` default to the set's (`hset`, validation/heldout14.py unless given); tests
    pass their own."""
    sweeps = hset.sweeps() if sweeps is None else sweeps
    members = hset.membership() if members is None else members
    ok = [r for r in rows if "error" not in r]
    by_tag = {r["tag"]: r for r in rows}
    summary = {
        "n_set": len(members), "n_records": len(rows), "n_simulated": len(ok),
        "not_measured": sorted(t for t in members if t not in by_tag),
        "simulation_errors": sorted(r["tag"] for r in rows if "error" in r),
        "time_at_predicted_clock": stats([r["err_time_pred_clock"] for r in ok]),
        "time_at_measured_clock": stats([r["err_time_hw_clock"] for r in ok]),
        "clock": stats([r["err_clock"] for r in ok]),
        "power_nvml": stats([r["err_power_nvml"] for r in ok]),
        "power_counter": stats([r["err_power_counter"] for r in ok]),
        "sweeps": {}, "sweep_rows": {}, "sweeps_not_evaluated": [],
    }
    if probed(rows):
        summary["time_at_sm_clock"] = stats([r.get("err_time_sm_clock") for r in ok])
    for basis, field, _ in BASES + ((SM_BASIS,) if probed(rows) else ()):
        srows, skipped = _sweep_rows(by_tag, sweeps, field)
        summary["sweep_rows"][basis] = srows
        summary["sweeps"][basis] = sweep_summary(srows)
        summary["sweeps_not_evaluated"] = skipped
    summary["metrics"] = _flat(summary)
    summary["targets"] = judge(TARGETS, summary["metrics"])
    return summary


# ----------------------------------------------------------------------------- report.md
def _f(x, fmt: str = "{:.1f}") -> str:
    return "-" if x is None else fmt.format(x)


def _table(header: Sequence[str], rows: Sequence[Sequence]) -> list[str]:
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def _targets_section(summary: dict) -> list[str]:
    rows = [[t["what"], t["issue"], _f(t["value"]) + t["unit"] if t["value"] is not None else "-",
             f"{t['op']} {t['limit']:g}{t['unit']}", "met" if t["met"] else "**not met**"]
            for t in summary["targets"]]
    return ["## Targets (fixed, from the issues)", ""] + _table(
        ["target", "issue", "value", "limit", "met"], rows) + [""]


def _quantities_section(summary: dict) -> list[str]:
    rows = []
    for key, label in (("time_at_predicted_clock", "time at the predicted clock"),
                       ("time_at_measured_clock", "time at the measured clock (SM model alone)"),
                       ("time_at_sm_clock", "time at the SMs' measured clock (clock64)"),
                       ("clock", "SM clock, predicted vs measured time-weighted"),
                       ("power_nvml", "power vs the NVML averaged reading"),
                       ("power_counter", "power vs the energy counter's slope")):
        st = summary.get(key) or {}
        if st.get("n"):
            rows.append([label, st["n"], f"{st['mape_pct']:.1f}%", f"{st['mean_pct']:+.1f}%",
                         f"{st['worst_pct']:+.1f}%", st["within_5pct"], st["within_10pct"]])
    return ["## Errors per configuration", ""] + _table(
        ["quantity", "n", "MAPE", "mean", "worst", "within 5%", "within 10%"], rows) + [""]


def _bases_of(summary: dict) -> list[str]:
    """The bases the summary has, in report order (the third only where rows had the probe)."""
    return [b for b in BASIS_KEYS if b in summary["sweeps"]]


def _dims_section(summary: dict) -> list[str]:
    bases = [summary["sweeps"][b] for b in _bases_of(summary)]
    rows = []
    for dim in ["all", *bases[0]["by_dim"]]:
        per = [x["all"] if dim == "all" else x["by_dim"][dim] for x in bases]
        rows.append([dim, per[0]["n"]] + [" / ".join(str(x[k]) for x in per)
                                          for k in ("best_agrees", "best_same", "shape_ok", "points_ok")]
                    + [" / ".join(_f(x["spearman_mean"], "{:.2f}") for x in per)])
    words = "predicted clock / measured clock" + (" / SMs' measured clock (clock64)" if len(bases) > 2 else "")
    out = [f"## One-dimensional sweeps ({words})", "",
           "Best agrees: the simulated best is the hardware's best or runs within 3% of it on the "
           "H100 (same: exactly the hardware's best). Shape: every point's time relative to its "
           "curve's best within 10%. Points: every point's own error within 10%. Spearman: mean "
           "over sweeps of >= 3 points.", ""]
    out += _table(["knob", "sweeps", "best agrees", "best same", "shape within 10%",
                   "points within 10%", "mean Spearman"], rows)
    if summary["sweeps_not_evaluated"]:
        out += ["", "Not evaluated (fewer than 2 points measured): "
                + ", ".join(summary["sweeps_not_evaluated"]) + "."]
    return out + [""]


def _sweep_table(summary: dict) -> list[str]:
    """Per sweep: values, hw and sim (predicted clock) curves over their best, and per basis the
    simulated best, the hw loss, the worst shape deviation and Spearman (a third basis that
    failed on a sweep, e.g. a point without the probe, shows '-')."""
    by = [{r["name"]: r for r in summary["sweep_rows"][k]} for k in _bases_of(summary)]
    third = len(by) > 2
    rows = []
    for name, a in by[0].items():
        b = by[1][name]
        if "error" in a or "error" in b:
            rows.append([name, " / ".join(a["labels"]), "error: " + (a.get("error") or b.get("error")),
                         "", "", "", "", ""])
            continue
        per = [a, b] + ([by[2][name]] if third else [])
        ok = [x for x in per if "error" not in x]
        hmin = min(a["hw_ms"])
        rows.append([name, " / ".join(a["labels"]), " / ".join(f"{h / hmin:.2f}" for h in a["hw_ms"]),
                     " / ".join(f"{s / min(a['sim_ms']):.2f}" for s in a["sim_ms"]),
                     " / ".join([str(a["hw_best"])] + [str(x["sim_best"]) if x in ok else "-" for x in per]),
                     " / ".join(f"{x['hw_loss_pct']:.1f}%" if x in ok else "-" for x in per),
                     " / ".join(f"{x['worst_shape_dev_pct']:+.1f}%" if x in ok else "-" for x in per),
                     " / ".join(_f(x["spearman"], "{:.2f}") if x in ok else "-" for x in per)])
    bases, sm = ("pred / meas / SMs", " / sim SMs") if third else ("pred / meas", "")
    return ["### Per sweep", "", "hw / best and sim / best: each point's time over its curve's best "
            "(sim at the predicted clock). Best: hardware / simulated at the predicted / at the "
            "measured clock" + (" / at the SMs' measured clock (clock64)" if third else "")
            + f"; hw loss: the simulated best's extra time on the H100 ({bases}).", ""] + _table(
        ["sweep", "values", "hw / best", "sim / best (pred clk)", f"best hw / sim pred / sim meas{sm}",
         "hw loss", f"worst shape dev ({bases})", f"Spearman ({bases})"], rows) + [""]


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def _config_table(rows: list[dict], members: dict) -> list[str]:
    """One line per configuration; where rows have the probe, also the SMs' measured clock and
    the time error at it."""
    third = probed(rows)
    out = []
    for r in rows:
        where = members.get(r["tag"], {})
        sweep = f"{where.get('heldout_sweep', '?')} {where.get('sweep_value') or ''}".strip()
        if "error" in r:
            out.append([r["tag"], sweep, f"{r['hw_time_ms']:.4g}", f"{r['hw_clock_mhz_tw']:.0f}",
                        "-", f"error: {r['error']}", "", "", "", "", ""] + ([""] if third else []))
            continue
        errs = [_pct(r["err_time_pred_clock"]), _pct(r["err_time_hw_clock"])]
        if third:
            errs.append(_pct(r.get("err_time_sm_clock")))
        out.append([r["tag"], sweep, f"{r['hw_time_ms']:.4g}", f"{r['hw_clock_mhz_tw']:.0f}"]
                   + ([_f(r.get("hw_sm_clock_eff_mhz"), "{:.0f}")] if third else [])
                   + [_f(r.get("hw_power_w_nvml"), "{:.0f}"), f"{r['pred_clock_mhz']:.0f}",
                      _f(r.get("pred_power_w"), "{:.0f}"), f"{r['pred_time_ms']:.4g}", _pct(r["err_clock"]),
                      _pct(r["err_power_nvml"]), " / ".join(errs)])
    head = (["configuration", "sweep", "hw ms", "hw MHz"] + (["SMs' MHz (clock64)"] if third else [])
            + ["hw W", "pred MHz", "pred W", "pred ms", "err clock", "err power",
               "err time (pred / meas / SMs' clk)" if third else "err time (pred / meas clk)"])
    return ["## Per configuration", ""] + _table(head, out) + [""]


#: set name -> the words of report.md's title (heldout14's as first published; heldout16 and
#: heldout17 name their own issue tags, heldout15 the default)
TITLES = {"heldout14": "issue 14", "heldout16": "heldout16 (issues 14-16, seed 1620261124)",
          "heldout17": "heldout17 (issues 14-17, seed 1720261124)",
          "heldout18": "heldout18 (issues 13-18, seed 1820261124)",
          "heldout19": "heldout19 (issues 13-19, seed 1920261124)",
          "heldout20": "heldout20 (issues 13-20, seed 2020261125)"}


def markdown(summary: dict, rows: list[dict], fingerprint: str, basis: str,
             members: dict | None = None, hset: ModuleType = heldout14) -> str:
    members = hset.membership() if members is None else members
    s = summary
    name = hset.SWEEP_NAME
    title = TITLES.get(name, f"{name} (issues 14 and 15, seed {hset.SEED})")
    lines = [f"# Held-out comparison, {title}: sustained GEMM loops on the H100 vs the frozen model", "",
             f"Model fingerprint: `{fingerprint}`. {basis}".rstrip(), "",
             f"Set: validation/{name}.py (seed {hset.SEED}), {s['n_set']} configurations; "
             f"{s['n_records']} measured, {s['n_simulated']} simulated"
             + (f"; not measured: {len(s['not_measured'])}" if s["not_measured"] else "")
             + (f"; simulation errors: {len(s['simulation_errors'])}" if s["simulation_errors"] else "") + ".",
             "", "Errors are simulated / measured - 1 (> 0: the simulator is slower). 'Predicted clock': "
             "the real prediction (`--clock sustained`); 'measured clock': the SM model alone at the "
             "record's time-weighted clock (diagnostic)."
             + (" 'SMs' measured clock (clock64)': the SM model alone with its SMs at the clock they "
                "counted in the record's SM-clock probe (clock64 over %globaltimer; simulated with "
                "`simulate gemm --sm-clock` that clock, the CLI's `--clock` being NVML's); no "
                "target reads it." if "sm_clock" in s["sweeps"] else ""), ""]
    lines += _targets_section(s) + _quantities_section(s) + _dims_section(s) + _sweep_table(s)
    lines += _config_table(rows, members)
    return "\n".join(lines)
