"""Compare the portfolio (vecadd, copy, tmacopy, rowsum, softmax, attention) with its held-out H100
records, once.

    python3 -m hopsim.validate.portfolio_compare --records validation/records/h100/portfolio \
        --out validation/reports/h100/portfolio [--jobs 2] [--set heldout3]

`--set NAME` (validation/portfolio.py SETS: heldout1 .. heldout5) makes every record prove
it belongs to that held-out set (its params' `set`; records written before the field existed are
heldout1's): a record of another set stops the comparison with one line (a wrong --records folder)
and the report's title names the set. Without --set every record is compared, as before.

The records (`python3 -m validation.portfolio_runs`, kernels/cuda/vecadd.cu, copy.cu, tmacopy.cu,
rowsum.cu, softmax.cu, attention.cu) are measured after the model is frozen; the model's fingerprint is written
in the report. Each point is simulated through the CLI as a user would (`hopsim simulate
vecadd|copy|tmacopy`, `hopsim simulate rowsum|softmax --rows --cols --mapping`, `hopsim simulate
attention --seq --head-dim --kv-block --stages --q-tiles --timing-only`), at the predicted
clock (`--clock sustained`, the real prediction) and at the record's NVML median SM clock (a
diagnostic of the SM + memory model alone). Errors are simulated / measured - 1 of the kernel
time (the median per launch of CUDA-graph batches, inputs rotated so nothing stays in L2).
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

from hopsim.validate.heldout import _err, _pick_set, _stats, read_jsonl, run
from isa.errors import InputError
from validation import portfolio as pf

VEC = {"f32": 1, "f4": 4, "f32_gs": 1, "f4_gs": 4}
ROWWISE = ("rowsum", "softmax")


def load(records: pathlib.Path) -> list[dict]:
    """Every portfolio record with a time whose result check passed."""
    return read_jsonl(records, lambda r: bool(r.get("results", {}).get("ms_median"))
                      and r.get("check", {}).get("passed", True))


def only_set(recs: list[dict], name: str) -> list[dict]:
    """The records, all of which must be of held-out set `name` (params `set`, default heldout1);
    InputError names the first that is not."""
    for r in recs:
        got = r.get("params", {}).get("set", "heldout1")
        if got != name:
            raise InputError("record", r.get("params", {}).get("name", r.get("name")),
                             f"a point of set {name} (it is of {got}); is --records the {name} run?")
    return recs


def tmacopy_args(rec: dict) -> list[str]:
    """`simulate tmacopy` flags of a validation/portfolio_tmacopy.py record (persistent CTAs: the
    record's grid)."""
    p = rec["params"]
    args = ["tmacopy", "--rows", str(p["rows"]), "--cols", str(p["cols"]), "--dtype", p["dtype"],
            "--box-rows", str(p["box_rows"]), "--box-cols", str(p["box_cols"]), "--swizzle", p["swizzle"],
            "--stages", str(p["stages"])]
    return args + ([] if p.get("ctas_per_sm") is None else ["--ctas", str(rec["launch"]["grid"])])


def attention_args(rec: dict) -> list[str]:
    """`simulate attention` flags of a validation/portfolio_attention.py record (variant single, out
    f32, no overlap: the CUDA twin's; timing only: the check ran on the H100). The record's grid is
    its q_tiles."""
    p = rec["params"]
    args = ["attention", "--seq", str(p["seq"]), "--head-dim", str(p["head_dim"]), "--kv-block", str(p["kv_block"]),
            "--stages", str(p["stages"]), "--q-tiles", str(rec["launch"]["grid"]),
            "--variant", p.get("ir_variant", "single"), "--out", p.get("out", "f32")]
    return args + (["--overlap"] if p.get("overlap") else []) + ["--timing-only"]


def cli_args(rec: dict) -> list[str]:
    p = rec["params"]
    if p["family"] == "tmacopy":
        return tmacopy_args(rec)
    if p["family"] == "attention":
        return attention_args(rec)
    if p["family"] in ROWWISE:
        return [p["family"], "--rows", str(p["rows"]), "--cols", str(p["cols"]), "--mapping", p["mapping"],
                "--threads", str(p.get("threads_per_cta", 256))]
    args = [p["family"], "--n", str(p["n_floats"]), "--vec", str(VEC[p["variant"]]),
            "--threads", str(p.get("threads_per_cta", 256))]
    if p["variant"].endswith("_gs"):
        args += ["--grid-stride", "--ctas", str(rec["launch"]["grid"])]
    return args


def simulate(rec: dict, clock: str) -> dict:
    cmd = [sys.executable, "-m", "hopsim", "simulate", *cli_args(rec), "--clock", clock, "--json",
           "--no-progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit {proc.returncode}"}
    return json.loads(proc.stdout)


def compare_one(rec: dict) -> dict:
    p = rec["params"]
    hw_ms = rec["results"]["ms_median"]
    clk = rec.get("sm_clock", {}).get("nvml_median_mhz")
    row = {"name": p["name"], "family": p["family"], "variant": p["variant"], "n_floats": p.get("n_floats"),
           "grid": rec["launch"]["grid"], "hw_ms": hw_ms, "hw_bytes_per_s": rec["results"]["bytes_per_s"],
           "hw_clock_mhz": clk}
    pred = simulate(rec, "sustained")
    at_hw = simulate(rec, f"{clk:.1f}") if clk else {"error": "record has no SM clock"}
    if "error" in pred or "error" in at_hw:
        row["error"] = pred.get("error") or at_hw.get("error")
        return row
    row.update({"pred_ms": pred["time_ms"], "pred_clock_mhz": pred.get("clock_mhz"),
                "sim_ms_at_hw_clock": at_hw["time_ms"],
                "err_pred_clock": _err(pred["time_ms"], hw_ms),
                "err_hw_clock": _err(at_hw["time_ms"], hw_ms)})
    return row


def markdown(rows: list[dict], summary: dict, fp: str, basis: str, set_name: str | None = None) -> str:
    fams = ", ".join(dict.fromkeys(r["family"] for r in rows)) + (f"; set {set_name}" if set_name else "")
    lines = [f"# Held-out comparison: portfolio ({fams}) on the H100 vs the frozen model", "",
             f"Model fingerprint: `{fp}`. {basis}", "",
             "| set | n | MAPE | mean | worst | within 10% | within 20% |", "|---|---|---|---|---|---|---|"]
    for key, st in summary.items():
        if isinstance(st, dict) and st.get("n"):
            lines.append(f"| {key} | {st['n']} | {st['mape_pct']:.1f}% | {st['mean_pct']:+.1f}% | "
                         f"{st['worst_pct']:+.1f}% | {st['within_10pct']} | {st.get('within_20pct', '-')} |")
    lines += ["", "| point | grid | hw ms | hw MHz | pred ms (MHz) | err (pred clk) | sim ms at hw clk | err (hw clk) |",
              "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | {r['grid']} | {r['hw_ms']:.4g} | - | error: {r['error']} ||||")
            continue
        lines.append(f"| {r['name']} | {r['grid']} | {r['hw_ms']:.4g} | {r['hw_clock_mhz']:.0f} | "
                     f"{r['pred_ms']:.4g} ({r['pred_clock_mhz']:.0f}) | {100 * r['err_pred_clock']:+.1f}% | "
                     f"{r['sim_ms_at_hw_clock']:.4g} | {100 * r['err_hw_clock']:+.1f}% |")
    return "\n".join(lines) + "\n"


def _stats20(xs):
    st = _stats(xs)
    if st.get("n"):
        st["within_20pct"] = sum(abs(x) <= 0.20 for x in xs if x is not None)
    return st


def summarise(rows: list[dict]) -> dict:
    ok = [r for r in rows if "error" not in r]
    summary = {"all, at the predicted clock": _stats20([r["err_pred_clock"] for r in ok]),
               "all, at the measured clock (diagnostic)": _stats20([r["err_hw_clock"] for r in ok])}
    for fam in dict.fromkeys(r["family"] for r in ok):
        summary[f"{fam}, at the predicted clock"] = _stats20([r["err_pred_clock"] for r in ok if r["family"] == fam])
    return summary


def main(argv: list[str] | None = None) -> int:
    chosen, rest = _pick_set(list(sys.argv[1:] if argv is None else argv), default=None)
    if chosen is not None and chosen not in pf.SETS:
        print(f"hopsim: --set {chosen}: unknown held-out set; valid: {', '.join(pf.SETS)}", file=sys.stderr)
        return 2
    return run(rest, what="portfolio", name="portfolio", compare_one=compare_one, summarise=summarise,
               load=load if chosen is None else (lambda d: only_set(load(d), chosen)),
               markdown=lambda summary, rows, fp, basis: markdown(rows, summary, fp, basis, chosen),
               epilog="--set {" + ",".join(pf.SETS) + "}: every record must be of that held-out set",
               extra=lambda rows: {"n_records": len(rows),
                                   "n_simulated": sum("error" not in r for r in rows)})


if __name__ == "__main__":
    raise SystemExit(main())
