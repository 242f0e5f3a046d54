"""One-SM cycle profiles against the model, `--loop same` at each record's SM clock (the method of
validation/records/h100/worst17/MODEL_LOOP_SAME.md): a development check, never a fit.

    python3 -m hopsim.validate.onesm_check [--sets nomma,worst17,top] [--json OUT]

Sets: `nomma` the WITH-wgmma records of validation/records/h100/nomma (gemm_cycles__*.json; the
fit of calibrate_nomma.py reads only the gemm_cycles_nomma ones); `worst17` every one-SM record of
worst17/ (M = BM, N = BN, K = 4096); `top` the top-level gemm_cycles__128x128x4096_* one-SM
records. Cycles per k-tile = CTA cycles / (K / BK). Hardware: `kernel_cycles` (one CTA's clock64
span); model: `calibrate_nomma.simulate_record` (the last CTA's exit: the period less the launch
and memory tails). Error = model / hardware - 1.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys

from hopsim.config import load_gpu
from hopsim.validate.calibrate_nomma import ROOT, load, simulate_record

H100 = ROOT / "validation" / "records" / "h100"


def _one_sm(rec: dict) -> bool:
    p = rec["params"]
    return p["m"] == p["bm"] and p["n"] == p["bn"] and p["k"] == 4096 and rec.get("status") == "ok"


def records(which: str) -> list[dict]:
    if which == "nomma":
        return load("gemm_cycles", H100 / "nomma")
    if which == "worst17":
        return [r for r in load("gemm_cycles", H100 / "worst17") if _one_sm(r)]
    if which == "top":
        return [r for r in load("gemm_cycles", H100) if _one_sm(r) and r["name"].startswith("128x128x4096_")]
    raise ValueError(which)


def rows(which: str, holds: dict | None = None) -> list[dict]:
    out = []
    for r in records(which):
        kt = r["params"]["k"] / r["params"]["bk"]
        hw, sim = r["kernel_cycles"] / kt, simulate_record(r, holds=holds) / kt
        out.append({"set": which, "record": r["name"], "sm_mhz": round(r["clock_mhz"]), "hw": round(hw, 1),
                    "model": round(sim, 1), "err": round(sim / hw - 1, 4)})
    return out


def summary(rs: list[dict]) -> str:
    e = [r["err"] for r in rs]
    a = [abs(x) for x in e]
    return (f"{len(rs)} records: median {statistics.median(e):+.1%}, |error| median {statistics.median(a):.1%}, "
            f"mean {statistics.mean(a):.1%}, max {max(a):.1%}")


def parse_holds(text: str) -> dict | None:
    """'a=1,b=2' -> {a: 1.0, b: 2.0}; None (after one line on stderr) for a bad item."""
    known = load_gpu().timing.params()
    out = {}
    for item in filter(None, text.split(",")):
        name, _, val = item.partition("=")
        try:
            v = float(val)
        except ValueError:
            v = -1.0
        if name not in known or v < 0:
            print(f"--holds: {item!r} is not FIELD=CYCLES with a timing field and a number >= 0", file=sys.stderr)
            return None
        out[name] = v
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m hopsim.validate.onesm_check", description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default="nomma,worst17,top")
    ap.add_argument("--json", help="write the rows as JSON")
    ap.add_argument("--holds", default="", metavar="FIELD=CYCLES,...",
                    help="timing fields to override (a candidate calibration, e.g. the nomma fit's holds)")
    args = ap.parse_args(argv)
    sets = args.sets.split(",")
    bad = [s for s in sets if s not in ("nomma", "worst17", "top")]
    if bad:
        print(f"--sets: {bad[0]!r} is not one of nomma, worst17, top", file=sys.stderr)
        return 2
    holds = parse_holds(args.holds)
    if holds is None:
        return 2
    everything = []
    for s in sets:
        rs = rows(s, holds)
        everything += rs
        for r in rs:
            print(f"{s:8} {r['sm_mhz']:5} {r['hw']:8.1f} {r['model']:8.1f} {r['err']:+7.1%}  {r['record']}")
        print(f"{s}: {summary(rs)}")
    print(f"all: {summary(everything)}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(everything, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
