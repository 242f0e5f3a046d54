"""`hopsim validate micro`: the H100 microbenchmarks simulated vs measured, with the fit per family.

    --through simulate   (default) each microbenchmark's IR twin (kernels/micro/) run by simulate()
                         on the SM runner the GEMM uses, timed by its own clock64 reads
                         (hopsim/validate/micro_ir)
    --through units      the unit-level replays of hopsim/validate/micro_sim.py (the units' formulas)
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

from hopsim.validate.compare import MICRO_TOLERANCE
from hopsim.validate.micro_ir import FAMILIES, FAMILIES_NOT_RUN, fit, records, simulate_micro_ir, summary
from hopsim.validate.micro_sim import REPLAYS
from isa.errors import InputError

EXAMPLE = """examples:
  hopsim validate micro                                  # every family through simulate(), summary
  hopsim validate micro --family smem --family mbarrier --rows
  hopsim validate micro --through units --json"""


def register(vs: argparse._SubParsersAction) -> None:
    m = vs.add_parser("micro", help="microbenchmarks simulated vs measured, fit per family",
                      description=__doc__, epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    m.add_argument("--through", default="simulate", choices=("simulate", "units"),
                   help="simulate(): IR kernels on the SM runner (default); units: unit replays")
    m.add_argument("--family", action="append", metavar="NAME", help="only this family (repeatable)")
    m.add_argument("--records", metavar="DIR", help="records directory (default validation/records/h100)")
    m.add_argument("--rows", action="store_true", help="print every row, not only the summary")
    m.add_argument("--json", action="store_true", help="print rows and summary as JSON")
    m.set_defaults(func=run_micro)


def _families(args) -> list[str]:
    known = FAMILIES if args.through == "simulate" else REPLAYS
    for f in args.family or ():
        if f not in known:
            raise InputError("family", f, "one of " + ", ".join(known))
    return list(args.family or known)


def _run_units(fams: list[str], records_dir) -> dict:
    recs = records(records_dir)
    return {f: REPLAYS[f](recs[f]) for f in fams if f in recs}


def run_micro(args) -> int:
    records_dir = pathlib.Path(args.records) if args.records else None
    if records_dir is not None and not records_dir.is_dir():
        raise InputError("records", args.records, "an existing directory of records (*.json)")
    fams = _families(args)
    t0 = time.monotonic()
    rows = simulate_micro_ir(fams, records_dir) if args.through == "simulate" else _run_units(fams, records_dir)
    seconds = time.monotonic() - t0
    if args.json:
        print(json.dumps({"through": args.through, "tolerance": MICRO_TOLERANCE, "seconds": round(seconds, 1),
                          "families": {f: {**fit(r), "results": [
                              {"name": x.name, "field": x.field, "measured": x.measured, "simulated": x.simulated,
                               "unit": x.unit, "error_pct": x.error_pct, "ok": x.ok, "calibration": x.calibration}
                              for x in r]} for f, r in rows.items()}}))
        return 0
    if args.rows:
        for f, rs in rows.items():
            for r in rs:
                print(f"{f:15s} {r.name:62s} {r.measured:10.1f} {r.simulated:10.1f} {r.unit:10s} "
                      f"{r.error_pct:+7.1f}% {'ok  ' if r.ok else 'MISS'}{' cal' if r.calibration else ''}")
    print(f"microbenchmarks through {'simulate()' if args.through == 'simulate' else 'unit replays'}: "
          f"within {100 * MICRO_TOLERANCE:.0f}% ({seconds:.0f} s)")
    print(summary(rows))
    if args.through == "simulate" and not args.family:
        print("not run through simulate(): " + "; ".join(f"{k} ({v})" for k, v in FAMILIES_NOT_RUN.items()))
    return 0
