"""The validation report: markdown tables and PNG plots from `hopsim.validate.compare` results.

    write_report(compare_gemm(entries), out_dir, micro=compare_micro(...), bank=compare_bank(...))

writes `out_dir/report.md` with
  - the summary (MAPE, worst case, Spearman, mean signed error) over all configurations and per
    subset (calibration vs held-out), against the targets;
  - per knob, every sweep's shape check (time relative to the sweep's best, hw and sim);
  - the per-configuration table;
  - microbenchmarks simulated vs measured, and the bank-conflict exact-match count;
and the pictures `sim_vs_hw.png` (scatter with y = x) and `sweeps_<knob>.png` (one small panel
per sweep: hardware and simulator curves side by side on the same axes).
"""

from __future__ import annotations

import math
import os
import pathlib
from typing import Sequence

from hopsim.plots import plot_compare, pyplot  # matplotlib loads with the first picture
from hopsim.validate.compare import (
    CALIBRATION,
    MICRO_TOLERANCE,
    BankResult,
    GemmComparison,
    MicroRow,
    Summary,
    SweepShape,
)

TARGET_MAPE_PCT = 10.0
TARGET_SPEARMAN = 0.9
PANELS_PER_FIGURE = 24


def _f(x: float, fmt: str = "{:.1f}") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


def _table(header: Sequence[str], rows: Sequence[Sequence]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def _summary_row(name: str, s: Summary) -> list:
    mape_ok = "yes" if s.n and s.mape_pct < TARGET_MAPE_PCT else "no"
    rho_ok = "yes" if s.n and s.spearman >= TARGET_SPEARMAN else "no"
    return [name, s.n, _f(s.mape_pct) + f" ({mape_ok})", _f(s.worst_error_pct, "{:+.1f}"),
            f"`{s.worst_label}`" if s.worst_label else "-", _f(s.spearman, "{:.3f}") + f" ({rho_ok})",
            _f(s.mean_error_pct, "{:+.1f}")]


def gemm_section(gemm: GemmComparison, unit: str = "ms") -> list[str]:
    lines = ["## GEMM time: simulated vs measured", "",
             f"Targets: MAPE < {TARGET_MAPE_PCT:g}% and Spearman >= {TARGET_SPEARMAN} over all "
             "configurations; every sweep's shape within 10% (time relative to the sweep's best).",
             "Error = (simulated - measured) / measured; > 0 means the simulator is slower.", ""]
    rows = [_summary_row("all", gemm.overall)]
    rows += [_summary_row(k, v) for k, v in gemm.by_subset.items()]
    lines += _table(["subset", "n", "MAPE %", "worst %", "worst configuration", "Spearman",
                     "mean error %"], rows)
    cal = [e.label or "?" for e in gemm.entries if e.subset == CALIBRATION]
    lines += ["", f"Calibration subset ({len(cal)} configurations): "
              + (", ".join(f"`{c}`" for c in cal) if cal else "none; every configuration is "
                 "held out (timing calibrated on microbenchmarks only)."), ""]
    for knob, shapes in gemm.shapes.items():
        ok, n = gemm.shape_counts(knob)
        best = sum(s.best_agrees for s in shapes)
        lines += [f"### Sweeps along `{knob}`: {ok} of {n} within 10%; best {knob} agrees in "
                  f"{best} of {n}", ""]
        if not shapes:
            lines += ["(no group of configurations differs only in this knob)", ""]
            continue
        rows = []
        for s in shapes:
            rows.append([s.name, " / ".join(str(v) for v in s.values),
                         " / ".join(f"{x:.2f}" for x in s.rel_hw),
                         " / ".join(f"{x:.2f}" for x in s.rel_sim),
                         f"{100 * s.worst_deviation:.1f}", "yes" if s.ok else "**no**"])
        lines += _table(["sweep (fixed knobs)", knob, "hw / best", "sim / best", "worst dev %",
                         "shape ok"], rows) + [""]
    lines += ["### Per configuration", ""]
    fmt = "{:.4f}" if unit == "ms" else "{:.0f}"
    rows = [[f"`{e.label or '?'}`", e.subset, fmt.format(e.measured), fmt.format(e.simulated),
             f"{e.error_pct:+.1f}"] for e in sorted(gemm.entries, key=lambda e: -abs(e.error_pct))]
    lines += _table(["configuration", "subset", f"measured {unit}", f"simulated {unit}", "error %"], rows)
    return lines + [""]


def micro_section(micro: Sequence[MicroRow]) -> list[str]:
    ok = sum(r.ok for r in micro)
    lines = ["## Microbenchmarks: simulated vs measured", "",
             f"{ok} of {len(micro)} within {100 * MICRO_TOLERANCE:g}%.", ""]
    rows = [[r.name, f"`{r.field}`", f"{r.measured:g}", f"{r.simulated:g}", r.unit,
             f"{r.error_pct:+.1f}", "yes" if r.ok else "**no**"] for r in micro]
    return lines + _table(["benchmark", "config field", "measured", "simulated", "unit", "error %",
                           "within"], rows) + [""]


def bank_section(bank: BankResult) -> list[str]:
    lines = ["## Bank conflicts: simulated wavefronts vs ncu", "",
             f"{bank.exact} of {bank.total} patterns match exactly (target: all).", ""]
    if bank.mismatches:
        lines += _table(["pattern", "measured", "simulated"],
                        [[f"`{p}`", m, s] for p, m, s in bank.mismatches]) + [""]
    return lines


# --------------------------------------------------------------------------- pictures


def plot_sweep_panels(shapes: Sequence[SweepShape], path: str | os.PathLike, *,
                      unit: str = "ms") -> list[pathlib.Path]:
    """One small panel per sweep: measured (dashed, x) and simulated (solid, o) time against the
    knob, with the shape verdict in the panel title. More than PANELS_PER_FIGURE sweeps go to
    numbered files (`sweeps_stages.png`, `sweeps_stages_2.png`, ...)."""
    p = pathlib.Path(path)
    out = []
    for page, start in enumerate(range(0, max(1, len(shapes)), PANELS_PER_FIGURE)):
        chunk = list(shapes[start:start + PANELS_PER_FIGURE])
        n = max(1, len(chunk))
        ncols = min(4, n)
        nrows = math.ceil(n / ncols)
        plt = pyplot()
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 2.9 * nrows), squeeze=False)
        for ax in axes.flat[n:]:
            ax.axis("off")
        for ax, s in zip(axes.flat, chunk):
            numeric = all(isinstance(v, (int, float)) for v in s.values)
            xs = list(s.values) if numeric else list(range(len(s.values)))
            ax.plot(xs, s.measured, "--x", color="black", label="H100", markersize=7)
            ax.plot(xs, s.simulated, "-o", color="tab:blue", label="sim", markersize=4)
            if not numeric:
                ax.set_xticks(xs, [str(v) for v in s.values], fontsize=7)
            elif len(xs) <= 12:
                ax.set_xticks(xs)
            ax.set_ylim(bottom=0)
            ax.tick_params(labelsize=7)
            verdict = "ok" if s.ok else "OFF"
            ax.set_title(f"{_wrap(s.name)}\nshape {verdict} (worst {100 * s.worst_deviation:.0f}%)",
                         fontsize=7, color="black" if s.ok else "tab:red")
            ax.set_xlabel(s.knob, fontsize=7)
            ax.set_ylabel(unit, fontsize=7)
            ax.grid(alpha=0.3)
        if chunk:
            axes.flat[0].legend(fontsize=7)
            fig.suptitle(f"sweeps along {chunk[0].knob}: H100 (dashed) vs simulator (solid)",
                         fontsize=10)
        target = p if page == 0 else p.with_name(f"{p.stem}_{page + 1}{p.suffix}")
        target.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(target, dpi=110)
        plt.close(fig)
        out.append(target)
    return out


def _wrap(text: str, width: int = 48) -> str:
    if len(text) <= width:
        return text
    parts, line = [], ""
    for word in text.split(", "):
        if line and len(line) + len(word) + 2 > width:
            parts.append(line)
            line = word
        else:
            line = f"{line}, {word}" if line else word
    return "\n".join(parts + [line])


# --------------------------------------------------------------------------- the report


def write_report(gemm: GemmComparison | None, out_dir: str | os.PathLike, *,
                 micro: Sequence[MicroRow] = (), bank: BankResult | None = None,
                 title: str = "hopsim vs H100", preamble: str = "", unit: str = "ms") -> pathlib.Path:
    """Write `report.md` and its PNGs into `out_dir`; returns the markdown path."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", ""]
    if preamble:
        lines += [preamble, ""]
    if gemm is not None and gemm.entries:
        plot_compare([e.simulated for e in gemm.entries], [e.measured for e in gemm.entries],
                     out / "sim_vs_hw.png", labels=[e.label for e in gemm.entries],
                     groups=[e.subset for e in gemm.entries], unit=unit,
                     title=f"GEMM {'time' if unit == 'ms' else unit}: simulated vs H100",
                     basis="each point simulated at the SM clock its H100 run measured")
        lines += ["![simulated vs measured](sim_vs_hw.png)", ""]
        lines += gemm_section(gemm, unit)
        for knob, shapes in gemm.shapes.items():
            if shapes:
                for png in plot_sweep_panels(shapes, out / f"sweeps_{knob}.png", unit=unit):
                    lines += [f"![sweeps along {knob}]({png.name})", ""]
    if micro:
        lines += micro_section(micro)
    if bank is not None:
        lines += bank_section(bank)
    path = out / "report.md"
    path.write_text("\n".join(lines).rstrip() + "\n")
    return path
