"""The numbers in README.md and docs/guide/*.md, generated from the records and the committed report.

Docs quote measured and compared numbers (H100 times, MAPE, pattern counts). Typed by hand they
drift from the records; here each quoted block is a function of

    validation/records/h100/*.json          the H100 measurements (gemm, bank_conflicts records)
    validation/reports/h100/compare.json    the committed comparison (per configuration: measured
                                            and simulated cycles)
    validation/reports/h100/report.md       the same report's microbenchmark and bank-conflict
                                            counts (lines "N of M within 10%", "N of M patterns")

and sits between marker comments in the Markdown:

    <!-- generated: NAME (python3 -m hopsim.validate.docs_numbers) -->
    ...
    <!-- end generated: NAME -->

Commands:

    python3 -m hopsim.validate.docs_numbers           rewrite every block in place
    python3 -m hopsim.validate.docs_numbers --check   exit 1 (naming the files) if a block differs

tests/validation/test_docs_numbers.py runs the check, so a new report or record that changes a
quoted number fails the tests until the docs are regenerated. The prose around a block is written
by hand and must not restate its numbers.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import statistics
import sys
from collections import defaultdict
from typing import Callable

from hopsim.validate.compare import Entry, summarize
from validation.provenance import RECORDS_DIR, load_records

ROOT = pathlib.Path(__file__).resolve().parents[2]
REPORT_DIR = ROOT / "validation" / "reports" / "h100"
REPORT_REL = "validation/reports/h100"  # as the README names it
DOCS = ("README.md", "docs/guide/pipeline-depth.md", "docs/guide/validating.md",
        "docs/guide/bank-conflicts.md", "docs/guide/power-model.md")
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) \(python3 -m hopsim\.validate\.docs_numbers\) -->\n)"
                   r"(?P<body>.*?)"
                   r"(<!-- end generated: (?P=name) -->)", re.S)


# ----------------------------------------------------------------------------- sources
def _compare() -> dict:
    return json.loads((REPORT_DIR / "compare.json").read_text())


def _report_count(pattern: str) -> tuple[int, int]:
    """(n, of) from the committed report.md line matching `pattern` (two integer groups)."""
    m = re.search(pattern, (REPORT_DIR / "report.md").read_text())
    if not m:
        raise SystemExit(f"docs_numbers: {REPORT_DIR / 'report.md'} has no line matching {pattern!r}")
    return int(m.group(1)), int(m.group(2))


def micro_counts() -> tuple[int, int]:
    return _report_count(r"## Microbenchmarks: simulated vs measured\s+(\d+) of (\d+) within 10%")


def bank_counts() -> tuple[int, int]:
    return _report_count(r"(\d+) of (\d+) patterns match exactly")


def bank_patterns() -> dict:
    """Patterns in the bank-conflict records: measured rows (one per pattern per ncu run), the
    distinct (op, addresses) among them, and the rows of each run."""
    runs, distinct = {}, set()
    for rec in load_records("bank_conflicts", RECORDS_DIR):
        runs[rec["name"]] = len(rec["patterns"])
        distinct.update((p["op"], tuple(p["addrs"])) for p in rec["patterns"])
    return {"rows": sum(runs.values()), "distinct": len(distinct), "runs": runs}


def cycle_entries() -> list[Entry]:
    """Per configuration of the committed report: H100 clock64 cycles vs simulated cycles."""
    out = []
    for p in _compare()["points"]:
        sim = p.get("sim") or {}
        if p.get("measured_cycles") and sim.get("cycles"):
            out.append(Entry(dict(p["params"]), float(p["measured_cycles"]), float(sim["cycles"]),
                             label=p["label"]))
    return out


# ----------------------------------------------------------------------------- blocks
def status() -> str:
    """README's Status paragraph: the headline numbers of the committed report."""
    s = summarize(cycle_entries())
    mi, mn = micro_counts()
    be, bn = bank_counts()
    bp = bank_patterns()
    runs = " and ".join(str(n) for n in bp["runs"].values())
    return (f"Against {s.n} recorded H100 GEMM configurations (development data: the timing config comes\n"
            f"from microbenchmarks only, but the model's structure was shaped after these records were seen;\n"
            f"report at model `{str(_compare().get('fingerprint', '?'))[:12]}`) the simulated cycles have a mean absolute error of "
            f"{s.mape_pct:.1f}% and a\nSpearman rank correlation of {s.spearman:.3f}; {mi} of {mn} "
            f"microbenchmark replays are within 10%; shared-memory\nbank conflicts match Nsight "
            f"Compute on {be} of {bn} recorded patterns ({bp['distinct']} distinct access patterns,\n"
            f"measured in {len(bp['runs'])} ncu runs of {runs}; `validation/reports/h100/`, "
            f"`docs/guide/validating.md`).\n")


def _subset_row(name: str, es: list[Entry], spearman: bool = False) -> str:
    s = summarize(es)
    rho = f" {s.spearman:.3f}" if spearman else ""
    return f"| {name} | {s.n} | {s.mape_pct:.1f}% | {s.mean_error_pct:+.1f}% |{rho} |"


def _multi_row(name: str, groups: list[list[Entry]]) -> str:
    ss = [summarize(g) for g in groups]
    return (f"| {name} | {' / '.join(str(s.n) for s in ss)} | "
            f"{' / '.join(f'{s.mape_pct:.1f}' for s in ss)}% | "
            f"{' / '.join(f'{s.mean_error_pct:+.1f}' for s in ss)}% | |")


def results_table() -> str:
    """validating.md: MAPE / mean signed error of the cycles by subset (committed report)."""
    es = cycle_entries()
    var = defaultdict(list)
    for e in es:
        c = e.config
        var["single" if c["variant"] == "single" else f"ws{c.get('consumers', 1)}"].append(e)
    by = lambda key, v: [e for e in es if e.config.get(key) == v]  # noqa: E731
    rows = ["| | configurations | MAPE | mean error | Spearman |", "|---|---|---|---|---|",
            _subset_row("all", es, spearman=True),
            _subset_row("`single`", var["single"]),
            _subset_row("`ws`, 1 consumer", var["ws1"]),
            _subset_row("`ws`, 2 consumers (the fastest kernels)", var["ws2"]),
            _multi_row("box rows 8 / 64 / 128", [by("box_rows", b) for b in (8, 64, 128)]),
            _multi_row("swizzle 32B / 64B", [by("swizzle", s) for s in ("32B", "64B")])]
    mi, mn = micro_counts()
    be, bn = bank_counts()
    s = summarize(es)
    shapes = ", ".join(f"{k.replace('_', ' ')} {n} of {m}" for k, n, m in sweep_shapes())
    return ("\n".join(rows) + "\n\n"
            f"Targets (issue 5): MAPE < 10% is {'met' if s.mape_pct < 10 else '**not met**'} "
            f"({s.mape_pct:.1f}%); Spearman >= 0.9 is {'met' if s.spearman >= 0.9 else '**not met**'} "
            f"({s.spearman:.3f});\nsweep shapes within 10%: {shapes}.\nMicrobenchmarks: {mi} of "
            f"{mn} replays within 10% (the rows that miss, and why, are listed in the report).\n"
            f"Bank conflicts: {be} of {bn} recorded patterns exact.\n")


def sweep_shapes() -> list[tuple[str, int, int]]:
    """(knob, sweeps within 10%, sweeps) from the committed report.md, in its order."""
    text = (REPORT_DIR / "report.md").read_text()
    return [(k, int(n), int(m)) for k, n, m in
            re.findall(r"### Sweeps along `(\w+)`: (\d+) of (\d+) within 10%", text)]


#: pipeline-depth.md section 4: (label, variant, consumers, box rows, CTAs per SM) per row.
DEPTH_ROWS = (("single, 128", "single", 1, 128, "auto"), ("single, 128", "single", 1, 128, 1),
              ("single, 8", "single", 1, 8, "auto"), ("single, 8", "single", 1, 8, 1),
              ("ws (1 consumer), 128", "ws", 1, 128, "auto"),
              ("ws (1 consumer), 8", "ws", 1, 8, "auto"))
DEPTHS = range(1, 7)


def depth_times() -> dict:
    """Median H100 time (ms) of the `validation` sweep at 4096^3 f16, tn, 128B, 128x128x64, by
    (variant, consumers, box rows, CTAs per SM, stages)."""
    times = defaultdict(list)
    for r in load_records("gemm", RECORDS_DIR):
        p = r["params"]
        if r.get("sweep") != "validation" or r.get("status", "ok") != "ok" or not r.get("time_ms"):
            continue
        if (p["m"], p["n"], p["k"], p["layout"], p["swizzle"], p["bn"]) != (4096, 4096, 4096, "tn", "128B", 128):
            continue
        key = (p["variant"], p.get("consumers", 1), p["box_rows"], p["ctas_per_sm"], p["stages"])
        times[key].append(float(r["time_ms"]))
    return {k: statistics.median(v) for k, v in times.items()}


def depth_table() -> str:
    t = depth_times()
    head = "| variant, box rows | CTAs/SM | " + " | ".join(str(s) for s in DEPTHS) + " stages |"
    rows = [head, "|---|---|" + "---|" * len(DEPTHS)]
    for label, variant, cons, box, ctas in DEPTH_ROWS:
        cells = [f"{t[(variant, cons, box, ctas, s)]:.3f}" if (variant, cons, box, ctas, s) in t else "-"
                 for s in DEPTHS]
        rows.append(f"| {label} | {ctas} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


#: validating.md: (label, variant, consumers, CTAs per SM, box rows) per row of the knob table.
KNOB_ROWS = tuple((f"{'single' if v == 'single' else 'ws1'}, {c}", v, 1, c, b)
                  for v, c, b in (("single", "auto", 8), ("single", "auto", 64), ("single", "auto", 128),
                                  ("single", 1, 8), ("single", 1, 64), ("single", 1, 128),
                                  ("ws", "auto", 8), ("ws", "auto", 64), ("ws", "auto", 128),
                                  ("ws", 1, 128)))


def knob_table() -> str:
    t = depth_times()
    rows = ["| variant, CTAs/SM | box rows | " + " | ".join(f"s{s}" for s in DEPTHS) + " |",
            "|---|---|" + "---|" * len(DEPTHS)]
    for label, variant, cons, ctas, box in KNOB_ROWS:
        cells = [f"{t[(variant, cons, box, ctas, s)]:.3f}" if (variant, cons, box, ctas, s) in t else "-"
                 for s in DEPTHS]
        rows.append(f"| {label} | {box} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def bank_count() -> str:
    """bank-conflicts.md: how many patterns the model matches."""
    be, bn = bank_counts()
    bp = bank_patterns()
    runs = " and ".join(str(n) for n in bp["runs"].values())
    return (f"The model matches {be} of the {bn} pattern measurements recorded ({bp['distinct']} "
            f"distinct access patterns, measured in {len(bp['runs'])} ncu runs of {runs}).\n")


def _pct(st: dict, key: str = "mape_pct") -> str:
    return f"{st[key]:.1f}%"


def heldout() -> str:
    """README: the first comparison of each held-out set, as it came out (frozen model's fingerprint)."""
    out = []
    h = REPORT_DIR / "heldout13" / "heldout.json"
    if h.exists():
        d = json.loads(h.read_text())
        s = d["summary"]
        out.append(
            f"Held out, issue 13 (`validation/reports/h100/heldout13/`, model `{d['model_fingerprint'][:12]}`): "
            f"{s['n_simulated']} GEMM benchmark loops never simulated before; predicted sustained SM clock MAPE "
            f"{_pct(s['clock'])} ({s['clock']['within_5pct']} of {s['clock']['n']} within 5%), power MAPE "
            f"{_pct(s['power_nvml'])} ({s['power_nvml']['within_10pct']} within 10%), time at the predicted "
            f"clock MAPE {_pct(s['time_at_predicted_clock'])} (worst {s['time_at_predicted_clock']['worst_pct']:+.0f}%), "
            f"at the measured clock {_pct(s['time_at_measured_clock'])}.\n")
    p = REPORT_DIR / "portfolio" / "portfolio.json"
    if p.exists():
        d = json.loads(p.read_text())
        st = d["summary"]["all, at the predicted clock"]
        out.append(
            f"Held out, issue 15 (`validation/reports/h100/portfolio/`, model `{d['model_fingerprint'][:12]}`): "
            f"{st['n']} memory-bound points (vecadd, copy; 1M..1G floats) time MAPE {_pct(st)}, worst "
            f"{st['worst_pct']:+.0f}%, {st['within_10pct']} within 10%.\n")
    for kind, name, words in LATER_SETS:
        line = (_sweep_set_line if kind == "sweeps" else _portfolio_line)(REPORT_DIR / name, words)
        if line:
            out.append(line)
    return "".join(out) or "No held-out set has been compared yet.\n"


#: The later held-out sets (kind, report folder, what it holds), in the order measured; a set
#: without a committed report (not compared yet) is left out. "sweeps": issue 14's design
#: (hopsim.validate.heldout --set heldout14 .. heldout20, compare.json); "portfolio": the memory-bound
#: families (hopsim.validate.portfolio_compare, portfolio.json).
LATER_SETS = (
    ("sweeps", "heldout14", "issue 14"),
    ("portfolio", "portfolio_heldout2", "vecadd/copy points at new sizes (1.5M..192M floats)"),
    ("portfolio", "portfolio_rowwise", "row reduction / row softmax points (one warp or one CTA per row)"),
    ("portfolio", "portfolio_tmacopy", "TMA copy points (boxes, swizzles, stages, persistent CTAs)"),
    ("sweeps", "heldout15", "issues 14-15 (third GEMM set, seed 1520261124)"),
    ("portfolio", "portfolio_heldout3", "vecadd/copy points at the third set's sizes (2.5M..960M floats)"),
    ("portfolio", "portfolio_rowwise_heldout3", "row reduction / row softmax points of the third set"),
    ("portfolio", "portfolio_tmacopy_heldout3", "TMA copy points of the third set"),
    ("portfolio", "portfolio_attention", "attention tile points (the first timings of its CUDA twin)"),
    ("sweeps", "heldout16", "issues 14-16 (fourth GEMM set, seed 1620261124)"),
    ("sweeps", "heldout17", "issues 14-17 (fifth GEMM set, seed 1720261124)"),
    ("sweeps", "heldout18", "issues 13-18 (sixth GEMM set, seed 1820261124)"),
    ("sweeps", "heldout19", "issues 13-19 (seventh GEMM set, seed 1920261124)"),
    ("portfolio", "portfolio_heldout4", "vecadd/copy points at the fourth set's sizes (2.1M..1013M floats)"),
    ("portfolio", "portfolio_rowwise_heldout4", "row reduction / row softmax points of the fourth set"),
    ("portfolio", "portfolio_tmacopy_heldout4", "TMA copy points of the fourth set"),
    ("portfolio", "portfolio_attention_heldout4", "attention tile points of the fourth set"),
    ("sweeps", "heldout20", "issues 13-20 (eighth GEMM set, seed 2020261125)"),
    ("portfolio", "portfolio_heldout5", "vecadd/copy points at the fifth set's sizes (2.0M..329M floats)"),
    ("portfolio", "portfolio_rowwise_heldout5", "row reduction / row softmax points of the fifth set"),
    ("portfolio", "portfolio_tmacopy_heldout5", "TMA copy points of the fifth set"),
    ("portfolio", "portfolio_attention_heldout5", "attention tile points of the fifth set"),
)


def _sweep_set_line(folder: pathlib.Path, words: str) -> str | None:
    """README's line for a compared set of issue 14's design (None: no committed report)."""
    h = folder / "compare.json"
    if not h.exists():
        return None
    d = json.loads(h.read_text())
    s, m = d["summary"], d["summary"]["metrics"]
    tp, tm = s["time_at_predicted_clock"], s["time_at_measured_clock"]
    return (
        f"Held out, {words} (`{REPORT_REL}/{folder.name}/`, model `{d['model_fingerprint'][:12]}`): "
        f"{s['n_simulated']} GEMM benchmark loops (18 one-knob sweeps + single points) never simulated "
        f"before; time MAPE {_pct(tp)} at the predicted clock (worst {tp['worst_pct']:+.0f}%, "
        f"{tp['within_10pct']} within 10%), {_pct(tm)} at the measured clock (worst {tm['worst_pct']:+.0f}%); "
        f"best configuration of a sweep agrees in {m['best_agrees_pct_predicted_clock']:.0f}% of sweeps at "
        f"the predicted clock, {m['best_agrees_pct_measured_clock']:.0f}% at the measured; SM clock MAPE "
        f"{_pct(s['clock'])} ({s['clock']['within_5pct']} within 5%), power MAPE {_pct(s['power_nvml'])} "
        f"({s['power_nvml']['within_10pct']} within 10%).\n")


def _portfolio_line(folder: pathlib.Path, words: str) -> str | None:
    """README's line for a compared memory-bound set (None: no committed report)."""
    p = folder / "portfolio.json"
    if not p.exists():
        return None
    d = json.loads(p.read_text())
    st = d["summary"]["all, at the predicted clock"]
    return (f"Held out, issue 15 (`{REPORT_REL}/{folder.name}/`, model `{d['model_fingerprint'][:12]}`): "
            f"{st['n']} {words}: time MAPE {_pct(st)}, worst {st['worst_pct']:+.0f}%, "
            f"{st['within_10pct']} within 10%.\n")


def heldout13_table() -> str:
    """power-model.md: the issue-13 held-out comparison's summary table, from its committed report."""
    d = json.loads((REPORT_DIR / "heldout13" / "heldout.json").read_text())
    s = d["summary"]
    rows = [("SM clock, predicted vs measured time-weighted", "clock", "within 5%"),
            ("SM clock, the records the H100 ran below 1970 MHz", "clock_where_hw_capped", ""),
            ("power vs the NVML averaged reading", "power_nvml", "within 10%"),
            ("time at the predicted clock", "time_at_predicted_clock", "MAPE <= 8%"),
            ("time at the measured clock (SM model alone, diagnostic)", "time_at_measured_clock", "")]
    out = ["| quantity | n | MAPE | mean | worst | within 5% | within 10% | target (issue 13) |",
           "|---|---|---|---|---|---|---|---|"]
    for label, key, target in rows:
        st = s[key]
        out.append(f"| {label} | {st['n']} | {st['mape_pct']:.1f}% | {st['mean_pct']:+.1f}% | "
                   f"{st['worst_pct']:+.1f}% | {st['within_5pct']} | {st['within_10pct']} | {target} |")
    out.append(f"\nBoost vs power-capped predicted right for {s['boost_vs_sustained_agree']} of {s['n_simulated']}.")
    return "\n".join(out) + "\n"


BLOCKS: dict[str, Callable[[], str]] = {
    "heldout": heldout, "heldout13-table": heldout13_table,
    "status": status, "results-table": results_table, "depth-table": depth_table,
    "bank-count": bank_count, "knob-table": knob_table,
}


# ----------------------------------------------------------------------------- rewriting
def render(text: str, blocks: dict[str, Callable[[], str]] | None = None) -> str:
    """`text` with every generated block's body replaced by its generator's output."""
    blocks = blocks or BLOCKS
    cache: dict[str, str] = {}

    def sub(m: re.Match) -> str:
        name = m.group("name")
        if name not in blocks:
            raise SystemExit(f"docs_numbers: unknown block {name!r}; known: {', '.join(blocks)}")
        if name not in cache:
            cache[name] = blocks[name]()
        return m.group(1) + cache[name] + m.group(4)

    return BLOCK.sub(sub, text)


def stale(root: pathlib.Path = ROOT) -> list[str]:
    """The docs whose generated blocks differ from the generators' output."""
    return [d for d in DOCS if render((root / d).read_text()) != (root / d).read_text()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m hopsim.validate.docs_numbers",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check; exit 1 if a doc is stale")
    args = ap.parse_args(argv)
    if args.check:
        bad = stale()
        if bad:
            print("docs_numbers: stale generated numbers in " + ", ".join(bad)
                  + " (run python3 -m hopsim.validate.docs_numbers)", file=sys.stderr)
            return 1
        return 0
    for d in DOCS:
        p = ROOT / d
        new = render(p.read_text())
        if new != p.read_text():
            p.write_text(new)
            print(f"rewrote {d}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
