"""`hopsim validate run|calibrate|compare|micro`: the H100 validation suite.

    run        measure on this machine's sm90 GPU (GEMM sweeps, microbenchmarks, bank truth under
               ncu) and write records with provenance; without a GPU it says so and exits 0
    calibrate  microbenchmark records -> hopsim/config/h100_sxm_calibrated.json (each number with
               its source record)
    compare    simulate every recorded GEMM configuration; MAPE, worst case, Spearman, sweep
               shapes, microbenchmarks, bank conflicts -> a markdown report with PNG plots
    micro      the microbenchmarks simulated vs measured (IR kernels through simulate(), or the
               unit replays), within 10% per family (hopsim/cli/validate_micro.py)
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

from hopsim import inputs
from hopsim.cli import _Parser, missing_command
from hopsim.cli import validate_micro
from hopsim.validate.calibrate import DEFAULT_OUT, as_json, calibrate, table, write_calibrated
from hopsim.validate.run_compare import clock_summary, compare_records
from isa.errors import InputError
from validation.bank_truth import main as bank_main
from validation.gemm_runs import SWEEPS, main as gemm_main
from validation.gpu import gpu_available
from validation.microbench import main as micro_main

EXAMPLE = """examples:
  hopsim validate compare --out validation/reports/latest        # report.md + PNGs
  hopsim validate compare --only 10 --json                         # quick look, JSON summary
  hopsim validate calibrate --dry-run                              # show what would change
  hopsim validate run --what gemm --sweep validation --out recs/   # on an H100 machine"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="run on an H100, calibrate, compare with the simulator",
                       description=__doc__, epilog=EXAMPLE,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    vs = p.add_subparsers(dest="validate_cmd", metavar="run|calibrate|compare|micro", parser_class=_Parser)

    r = vs.add_parser("run", help="measure on this machine's GPU (skips without one)",
                      description="Run the validation workloads on an sm90 GPU through CuPy and "
                      "write one JSON record per run (provenance: device, clocks, driver, CUDA, git "
                      "commit, date).", epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("--what", default="gemm", choices=("gemm", "micro", "bank"),
                   help="GEMM sweeps (default), microbenchmarks, or the bank-conflict truth set")
    r.add_argument("--sweep", default="smoke", help="GEMM sweep name (smoke, best, validation)")
    r.add_argument("--out", metavar="DIR", help="record directory (default: a temporary one)")
    r.set_defaults(func=run_run)

    c = vs.add_parser("calibrate", help="microbenchmark records -> calibrated timing config",
                      description="Derive the H100 timing parameters from the microbenchmark "
                      "records (never from GEMM records) and write them with their sources.",
                      epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--records", metavar="DIR", help="records directory (default validation/records/h100)")
    c.add_argument("--out", metavar="FILE.json", help="output (default hopsim/config/h100_sxm_calibrated.json)")
    c.add_argument("--dry-run", action="store_true", help="print the table, write nothing")
    c.add_argument("--json", action="store_true", help="print the rows as JSON")
    c.set_defaults(func=run_calibrate)

    m = vs.add_parser("compare", help="simulate every recorded configuration; report",
                      description="Simulate every H100 GEMM record and compare: per-configuration "
                      "error, MAPE, worst case, Spearman, sweep shapes; microbenchmarks; bank "
                      "conflicts. Writes report.md, compare.json and PNG plots.",
                      epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    m.add_argument("--out", metavar="DIR", default="validation/reports/latest",
                   help="report directory (default validation/reports/latest)")
    m.add_argument("--records", metavar="DIR", help="records directory (default validation/records/h100)")
    m.add_argument("--only", type=int, metavar="N", help="only the first N configurations")
    m.add_argument("--jobs", type=int, help="worker processes (default: CPUs + 1)")
    m.add_argument("--no-cache", action="store_true", help="re-simulate even if cached")
    m.add_argument("--no-progress", action="store_true")
    m.add_argument("--json", action="store_true", help="print the summary as JSON")
    m.set_defaults(func=run_compare)
    validate_micro.register(vs)
    p.set_defaults(func=lambda a: missing_command(p))


def _dir(field: str, value: str | None) -> pathlib.Path | None:
    if value is None:
        return None
    d = pathlib.Path(value)
    if not d.is_dir():
        raise InputError(field, value, "an existing directory of records (*.json)")
    return d


def _report_dir(value: str) -> None:
    """The report directory: an existing directory, or a new one in an existing writable directory."""
    d = pathlib.Path(value)
    if not value or (d.exists() and not d.is_dir()):
        raise InputError("out", value, "a directory for the report (existing, or new in an existing one)")
    parent = d if d.is_dir() else d.absolute().parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise InputError("out", value, f"a directory in an existing, writable directory ({parent} is not)")


def run_run(args) -> int:
    ok, why = gpu_available()
    if not ok:
        print(f"hopsim validate run: skipped: {why}. The committed H100 records in "
              "validation/records/h100 are what `hopsim validate compare` reads.")
        return 0
    out = ["--out", args.out] if args.out else []
    if args.what == "gemm":
        if args.sweep not in SWEEPS:
            raise InputError("sweep", args.sweep, "one of " + ", ".join(sorted(SWEEPS)))
        return gemm_main(["--sweep", args.sweep] + out)
    if args.what == "micro":
        return micro_main(out)

    if not args.out:
        raise InputError("out", None, "a directory for the bank_conflicts record (--out DIR)")
    return bank_main(["run", "--out", args.out])


def run_calibrate(args) -> int:
    if args.out is not None:
        inputs.output_path("out", args.out, (".json",))
    rows = calibrate(_dir("records", args.records))
    if args.json:
        print(json.dumps(as_json(rows), indent=1))
    else:
        print(table(rows))
    if args.dry_run:
        print("(dry run: nothing written)", file=sys.stderr if args.json else sys.stdout)
        return 0
    with inputs.one_output(pathlib.Path(args.out) if args.out else DEFAULT_OUT) as tmp:
        write_calibrated(rows, pathlib.Path(tmp))
    path = pathlib.Path(args.out) if args.out else DEFAULT_OUT
    print(f"written: {path}", file=sys.stderr if args.json else sys.stdout)
    return 0


def _num(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


#: What `validate compare` compares, stated in its text and JSON headers (as `sweep --compare-records`).
VALIDATE_CLOCK_BASIS = ("each configuration is simulated at the SM clock its H100 run measured "
                        "(clock64 over %globaltimer, else nvidia-smi); cycles: H100 clock64 span "
                        "vs simulated cycles; time: CUDA-event ms vs simulated cycles at that clock")


def run_compare(args) -> int:
    if args.only is not None and args.only < 1:
        raise InputError("only", args.only, "a positive number of configurations")
    if args.jobs is not None and args.jobs < 1:
        raise InputError("jobs", args.jobs, "a positive number of worker processes")
    records = _dir("records", args.records)
    _report_dir(args.out)
    out = compare_records(args.out, records_dir=records, jobs=args.jobs,
                          progress=not args.no_progress, use_cache=not args.no_cache, only=args.only)
    g = out.gemm.overall
    gp = out.gemm_predicted.overall
    cs = clock_summary(out.clocks)
    summary = {"predicted_clock_time_mape_pct": gp.mape_pct, "predicted_clock_worst_error_pct": gp.worst_error_pct,
               "predicted_clock_spearman": gp.spearman, **cs, "model_fingerprint": out.fingerprint,
               "configurations": g.n, "mape_pct": g.mape_pct, "worst_error_pct": g.worst_error_pct,
               "worst": g.worst_label, "spearman": g.spearman, "mean_error_pct": g.mean_error_pct,
               "time_mape_pct": out.gemm_time.overall.mape_pct,
               "shapes": {k: out.gemm.shape_counts(k) for k in out.gemm.shapes},
               "micro_within": [sum(r.ok for r in out.micro), len(out.micro)],
               "bank_exact": [out.bank.exact, out.bank.total] if out.bank else None,
               "failed": len(out.failed), "report": str(out.report_path),
               "clock_basis": VALIDATE_CLOCK_BASIS}
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"model fingerprint: {out.fingerprint}")
    print(f"GEMM time at the PREDICTED clock (power model): {gp.n} configurations, MAPE {gp.mape_pct:.1f}%, "
          f"worst {gp.worst_error_pct:+.1f}% ({gp.worst_label}), Spearman {gp.spearman:.3f}")
    print(f"  predicted vs measured clock: MAPE {_num(cs['clock_mape_pct'])}% over {cs['clock_n']}; "
          f"power: MAPE {_num(cs['power_mape_pct'])}% over {cs['power_n']} (records with NVML power)")
    print(f"diagnostics of the SM model (clock basis: {VALIDATE_CLOCK_BASIS}):")
    print(f"GEMM cycles: {g.n} configurations, MAPE {g.mape_pct:.1f}%, worst {g.worst_error_pct:+.1f}% "
          f"({g.worst_label}), Spearman {g.spearman:.3f}")
    print(f"GEMM time (simulated cycles at each run's measured SM clock): "
          f"MAPE {out.gemm_time.overall.mape_pct:.1f}%")
    for k, (ok, n) in summary["shapes"].items():
        if n:
            print(f"  sweeps along {k}: {ok} of {n} within 10%")
    if out.micro:
        print(f"microbenchmarks: {summary['micro_within'][0]} of {len(out.micro)} within 10%")
    if out.bank:
        print(f"bank conflicts: {out.bank.exact} of {out.bank.total} patterns exact")
    if out.failed:
        print(f"{len(out.failed)} configurations failed to simulate (see the report)", file=sys.stderr)
    print(f"report: {out.report_path}")
    return 0
