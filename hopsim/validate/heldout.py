"""Compare the simulator with held-out sustained GEMM runs (kind `gemm_sustained`), once.

    python3 -m hopsim.validate.heldout --records validation/records/h100/heldout13 \
        --out validation/reports/h100/heldout13 [--jobs 2]
    python3 -m hopsim.validate.heldout --set heldout14 --records DIR --out DIR [--jobs 2]
    python3 -m hopsim.validate.heldout --set heldout15 --records DIR --out DIR [--jobs 2]
    python3 -m hopsim.validate.heldout --set heldout16 --records DIR --out DIR [--jobs 2]
    python3 -m hopsim.validate.heldout --set heldout17 --records DIR --out DIR [--jobs 2]
    python3 -m hopsim.validate.heldout --set heldout18 --records DIR --out DIR [--jobs 2]
    python3 -m hopsim.validate.heldout --set heldout19 --records DIR --out DIR [--jobs 2]
    python3 -m hopsim.validate.heldout --set heldout20 --records DIR --out DIR [--jobs 2]

`--set` picks the held-out set (default heldout13: heldout.json / heldout.md, issue 13's table;
heldout14 .. heldout20 (one design, seven seeds): compare.json / report.md with issue 14's sweep
metrics and targets, hopsim/validate/heldout14_report.py). Records of another set are refused with
heldout14 .. heldout20.

A held-out set is measured on the H100 after the model is frozen (its fingerprint is written in
the report) and compared once; the first comparison is published as it came out. Each record
is a benchmark loop (CUDA-graph batches back to back for 3 s, steady state = the last 1.5 s):
its median time per launch, the time-weighted SM clock and the board power over the steady window.

For each record the configuration is simulated through the CLI, as a user would run it:
  * at the predicted clock (`--clock sustained`, the default): the real prediction, giving the
    predicted sustained clock, power and time;
  * at the record's measured time-weighted clock (`--clock MHZ`): a diagnostic of the SM model
    alone (the clock taken from the hardware);
  * where the record has the SM-clock probe (`sm_clock_eff_mhz`, heldout17 .. heldout20: the clock64 /
    %globaltimer clock of the SMs, validation/gemm_profile.py), also at that clock of the SMs
    (sim_time_ms_at_sm_clock, err_time_sm_clock): the SM model with the clock the SMs counted.
Errors are (simulated / measured - 1). Power is compared with the NVML averaged reading (what the
governor holds to the limit) and, beside it, with the energy counter's slope.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import functools
import json
import os
import pathlib
import subprocess
import sys
import tempfile

from hopsim.fingerprint import model_fingerprint
from isa.errors import InputError
from hopsim.validate import heldout14_report
from hopsim.validate.heldout_metrics import err as _err
from hopsim.validate.heldout_metrics import stats as _stats
from validation import heldout14, heldout15, heldout16, heldout17, heldout18, heldout19, heldout20

KNOBS = ("m", "n", "k", "dtype", "accum", "layout", "stages", "box_rows", "swizzle", "variant",
         "consumers", "ctas_per_sm", "epilogue", "raster", "group_m", "tma_issuer")


def read_jsonl(records: pathlib.Path, keep) -> list[dict]:
    """The records of every *.jsonl in a directory, in file order, for which keep(record) holds;
    a line that is not JSON stops with one line naming the file and line."""
    out = []
    for path in sorted(records.glob("*.jsonl")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SystemExit(f"hopsim: {path}:{i}: not JSON ({exc.msg})") from None
            if keep(rec):
                out.append(rec)
    return out


def load(records: pathlib.Path) -> list[dict]:
    """Every successful `gemm_sustained` record in the JSONL files of a directory."""
    return read_jsonl(records, lambda r: r.get("kind") == "gemm_sustained" and r.get("status", "ok") == "ok")


def cli_args(p: dict) -> list[str]:
    """The `simulate gemm` knobs of a record's parameters."""
    flag = {"box_rows": "--tma-box-rows"}
    args = []
    for k in KNOBS:
        if k in p and p[k] is not None:
            args += [flag.get(k, f"--{k.replace('_', '-')}"), str(p[k])]
    args += ["--tile", f"{p['bm']}x{p['bn']}x{p['bk']}"]
    return args


def simulate(p: dict, clock: str, sm_clock: bool = False) -> dict:
    """`simulate gemm --json` of a record's knobs at `clock` (the reported clock: sustained, boost or
    MHz), or with `sm_clock` the SMs at exactly `clock` MHz (--sm-clock)."""
    cmd = [sys.executable, "-m", "hopsim", "simulate", "gemm", *cli_args(p), "--sm-clock" if sm_clock else "--clock",
           clock, "--json", "--no-progress", "--jobs", "1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout)


def compare_one(rec: dict) -> dict:
    p = rec["params"]
    meas_mhz = rec["sm_clock_mhz_tw"]
    pred = simulate(p, "sustained")
    at_meas = simulate(p, f"{meas_mhz:.1f}")
    row = {
        "tag": rec["tag"], "params": p, "flops": rec.get("flops"),
        "hw_time_ms": rec["time_ms"], "hw_clock_mhz_tw": meas_mhz,
        "hw_clock_mhz_median": rec.get("sm_clock_mhz_median"),
        "hw_power_w_nvml": rec.get("power_w_nvml_tw"), "hw_power_w_counter": rec.get("power_w_counter"),
        "hw_reasons": rec.get("reasons"), "hw_drift_pct": rec.get("drift_pct"),
    }
    if "error" in pred or "error" in at_meas:
        row["error"] = pred.get("error") or at_meas.get("error")
        return row
    row.update({
        "pred_clock_mhz": pred["clock_mhz"], "pred_power_w": pred.get("power_w"),
        "pred_time_ms": pred["time_ms"], "pred_time_ms_boost": pred.get("time_ms_boost"),
        "sim_time_ms_at_hw_clock": at_meas["time_ms"],
        "err_clock": _err(pred["clock_mhz"], meas_mhz),
        "err_power_nvml": _err(pred.get("power_w"), rec.get("power_w_nvml_tw")),
        "err_power_counter": _err(pred.get("power_w"), rec.get("power_w_counter")),
        "err_time_pred_clock": _err(pred["time_ms"], rec["time_ms"]),
        "err_time_hw_clock": _err(at_meas["time_ms"], rec["time_ms"]),
    })
    if rec.get("sm_clock_eff_mhz"):
        row.update(at_sm_clock(p, rec, pred))
    return row


def at_sm_clock(p: dict, rec: dict, pred: dict) -> dict:
    """The simulated time with the SMs at the record's probed clock E (`sm_clock_eff_mhz`, clock64 /
    %globaltimer): `simulate gemm --sm-clock E` (the CLI's `--clock MHZ` is the clock NVML reports,
    whose SMs run at tensor_sm_clock_ratio x it, hopsim/config/power.py). A clock outside
    --sm-clock's range is that row's sm_clock_error."""
    eff = rec["sm_clock_eff_mhz"]
    out = {"hw_sm_clock_eff_mhz": eff, "sim_clock_arg_mhz_at_sm_clock": eff}
    at = simulate(p, f"{eff:.1f}", sm_clock=True)
    if "error" in at:
        return {**out, "sm_clock_error": at["error"]}
    return {**out, "sim_time_ms_at_sm_clock": at["time_ms"],
            "sim_sm_clock_mhz_at_sm_clock": at.get("sm_clock_mhz", at["clock_mhz"]),
            "err_time_sm_clock": _err(at["time_ms"], rec["time_ms"])}


def summarise(rows: list[dict]) -> dict:
    ok = [r for r in rows if "error" not in r]
    capped = [r for r in ok if r["hw_clock_mhz_tw"] < 1970]
    return {
        "n_records": len(rows), "n_simulated": len(ok),
        "clock": _stats([r["err_clock"] for r in ok]),
        "clock_where_hw_capped": _stats([r["err_clock"] for r in capped]),
        "power_nvml": _stats([r["err_power_nvml"] for r in ok]),
        "power_counter": _stats([r["err_power_counter"] for r in ok]),
        "time_at_predicted_clock": _stats([r["err_time_pred_clock"] for r in ok]),
        "time_at_measured_clock": _stats([r["err_time_hw_clock"] for r in ok]),
        "boost_vs_sustained_agree": sum((r["pred_clock_mhz"] >= 1970) == (r["hw_clock_mhz_tw"] >= 1970)
                                        for r in ok),
    }


def _pct(x):
    return "-" if x is None else f"{100 * x:+.1f}%"


def markdown(summary: dict, rows: list[dict], fingerprint: str, basis: str) -> str:
    s = summary
    lines = [
        "# Held-out comparison: sustained GEMM loops on the H100 vs the frozen model", "",
        f"Model fingerprint: `{fingerprint}`. {basis}", "",
        "Errors are simulated / measured - 1. 'Predicted clock' = the real prediction "
        "(`--clock sustained`); 'measured clock' = the SM model alone at the record's "
        "time-weighted clock (diagnostic).", "",
        "| quantity | n | MAPE | mean | worst | within 5% | within 10% |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, label in (("clock", "SM clock (predicted vs measured tw)"),
                       ("clock_where_hw_capped", "SM clock, records the H100 ran below 1970 MHz"),
                       ("power_nvml", "power vs NVML averaged reading"),
                       ("power_counter", "power vs energy-counter slope"),
                       ("time_at_predicted_clock", "time at the predicted clock"),
                       ("time_at_measured_clock", "time at the measured clock (SM model diagnostic)")):
        st = s[key]
        if st["n"]:
            lines.append(f"| {label} | {st['n']} | {st['mape_pct']:.1f}% | {st['mean_pct']:+.1f}% | "
                         f"{st['worst_pct']:+.1f}% | {st['within_5pct']} | {st['within_10pct']} |")
    lines += ["", f"Boost-vs-capped agreement (both at >= 1970 MHz or both below): "
              f"{s['boost_vs_sustained_agree']} of {s['n_simulated']}.", "",
              "| configuration | hw ms | hw MHz | hw W | pred MHz | pred W | pred ms | err clock | err power | err time (pred clk) | err time (hw clk) |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['tag']} | {r['hw_time_ms']:.4g} | {r['hw_clock_mhz_tw']:.0f} | - | error: {r['error']} |||||||")
            continue
        lines.append(
            f"| {r['tag']} | {r['hw_time_ms']:.4g} | {r['hw_clock_mhz_tw']:.0f} | {r['hw_power_w_nvml']:.0f} | "
            f"{r['pred_clock_mhz']:.0f} | {r['pred_power_w']:.0f} | {r['pred_time_ms']:.4g} | "
            f"{_pct(r['err_clock'])} | {_pct(r['err_power_nvml'])} | {_pct(r['err_time_pred_clock'])} | "
            f"{_pct(r['err_time_hw_clock'])} |")
    return "\n".join(lines) + "\n"


def _write_atomic(path: pathlib.Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def run(argv, *, what: str, name: str, load, compare_one, summarise, markdown, extra=lambda rows: {},
        files: tuple[str, str] | None = None, epilog: str | None = None) -> int:
    """The command line of a held-out comparison: load the records, compare each (a process pool),
    write <name>.json and <name>.md (or `files`: json, md) atomically with the model fingerprint,
    print the summary."""
    ap = argparse.ArgumentParser(description=sys.modules[compare_one.__module__].__doc__.splitlines()[0],
                                 epilog=epilog)
    ap.add_argument("--records", type=pathlib.Path, required=True, help=f"directory of {what} JSONL")
    ap.add_argument("--out", type=pathlib.Path, required=True, help="report directory")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--basis", default="", help="one sentence on when the set was measured")
    a = ap.parse_args(argv)
    try:
        recs = load(a.records)
    except InputError as exc:
        print(f"hopsim: {exc}", file=sys.stderr)
        return 2
    if not recs:
        print(f"hopsim: --records {a.records}: no {what} records", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    with cf.ProcessPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        rows = list(ex.map(compare_one, recs))
    fp = model_fingerprint()
    summary = summarise(rows)
    doc = {"model_fingerprint": fp, "basis": a.basis, "summary": summary, "rows": rows, **extra(rows)}
    json_name, md_name = files or (f"{name}.json", f"{name}.md")
    _write_atomic(a.out / json_name, json.dumps(doc, indent=1, sort_keys=True))
    _write_atomic(a.out / md_name, markdown(summary, rows, fp, a.basis))
    print(json.dumps(summary, indent=1))
    return 0


def _sweep_set(hset) -> dict:
    """How a set of issue 14's design (validation/heldout14.py .. heldout20.py) is loaded, summarised
    and written: only its members, heldout14_report's metrics and report."""
    return dict(name=hset.SWEEP_NAME, load=lambda d: heldout14_report.only_members(load(d), hset),
                summarise=functools.partial(heldout14_report.summarise, hset=hset),
                markdown=functools.partial(heldout14_report.markdown, hset=hset),
                files=("compare.json", "report.md"))


#: --set -> how that set is loaded, summarised and written (compare_one is the same for all)
SETS = {
    "heldout13": dict(name="heldout", load=load, summarise=summarise, markdown=markdown),
    "heldout14": _sweep_set(heldout14),
    "heldout15": _sweep_set(heldout15),
    "heldout16": _sweep_set(heldout16),
    "heldout17": _sweep_set(heldout17),
    "heldout18": _sweep_set(heldout18),
    "heldout19": _sweep_set(heldout19),
    "heldout20": _sweep_set(heldout20),
}


def _pick_set(argv: list[str], default: str | None = "heldout13") -> tuple[str | None, list[str]]:
    """(--set's value, the other arguments); `default` without --set."""
    rest, chosen, i = [], default, 0
    while i < len(argv):
        if argv[i] == "--set" and i + 1 < len(argv):
            chosen, i = argv[i + 1], i + 2
        elif argv[i].startswith("--set="):
            chosen, i = argv[i].split("=", 1)[1], i + 1
        else:
            rest, i = rest + [argv[i]], i + 1
    return chosen, rest


def main(argv: list[str] | None = None) -> int:
    chosen, rest = _pick_set(list(sys.argv[1:] if argv is None else argv))
    if chosen not in SETS:
        print(f"hopsim: --set {chosen}: unknown held-out set; valid: {', '.join(SETS)}", file=sys.stderr)
        return 2
    return run(rest, what="gemm_sustained", compare_one=compare_one, **SETS[chosen],
               epilog=f"--set {{{','.join(SETS)}}}: the held-out set (default heldout13)")


if __name__ == "__main__":
    raise SystemExit(main())
