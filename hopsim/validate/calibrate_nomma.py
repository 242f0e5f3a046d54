"""The GEMM twins' per-box TMA issue holds fitted through the simulator on the nomma microbenchmark
(issue 14: a microbenchmark through `simulate()`, and one cost per box, not two).

    python3 -m hopsim.validate.calibrate_nomma            # fit, print residuals, write FIT_PATH
    python3 -m hopsim.validate.calibrate_nomma --check    # residuals of the committed fit only

Data: validation/records/h100/nomma/gemm_cycles_nomma__*.json (PROVENANCE.md there): one CTA on one
SM, K = 4096, 4 stages, L2-warm, built with -DGEMM_NO_MMA=1: the load pipeline, mbarrier
handshakes and epilogue without wgmma.mma_async. With many boxes per k-tile the loop is bound by
the issuing warp's per-box cost. Model: the IR twin without wgmma.mma_async
(kernels/gemm build_gemm_nomma, `simulate_gemm(..., no_mma=True)`) at the record's SM clock with
`--loop same`; the record's `kernel_cycles` (one CTA's clock64 span) against the launch's last CTA
exit (`cta_cycles`: the period less the launch overhead, dispatch, store-ack and write-back tails).

| field | rule |
|---|---|
| gemm_{single,ws}_{lane,elect}_tma_issue_cycles | one hold per (variant, issuer): the whole number of cycles minimising the sum over that class's nomma records (ws: ws1 and ws2) of log(simulated / measured cycles)^2, golden-section search over 0..160 |

The hold is what the issuing warp is held per box ON TOP of the IR twin's own per-box instructions
(address arithmetic, the copy's issue slot, their latency), which the simulator times itself: the
fit runs through the simulator, so the per-box cost the records show is counted once (hold + the
IR's instructions), unlike the SASS-derived holds (hopsim/validate/calibrate_sass.py), which
priced ptxas' whole copy loop and were charged on top of the IR's own instructions.

`per_box_slopes` splits the measured cost of an extra box (the same bytes in 4x the boxes) into the
IR twin's own instructions (simulated with the hold 0) and the hold that counts it once.

The fit (some 250 one-SM simulations, about a minute) is committed as FIT_PATH: a CANDIDATE, not
applied to hopsim/config/h100_sxm_calibrated.json, because it failed the one-SM development check
(`onesm_check.py`; validation/records/h100/nomma/MODEL_FIT.md): with wgmma the H100 pays far more
per k-tile than max(issue, mma), a mechanism the model lacks and the SASS-derived holds absorb.
`derive_nomma` gives its rows in calibrate's (value, source) form for when that is fixed. The
records WITH wgmma (gemm_cycles__*.json in the same folder) are never read by the fit.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import statistics
import sys

from hopsim.config import load_gpu
from hopsim.gemm_sim import TWIN_TMA_ISSUE, simulate_gemm
from kernels.params import GemmParams

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOMMA_DIR = ROOT / "validation" / "records" / "h100" / "nomma"
FIT_PATH = pathlib.Path(__file__).resolve().parent / "nomma_fit.json"
HOLD_RANGE = (0, 160)
TAILS = ("launch_overhead_cycles", "dispatch_bound_cycles", "store_ack_cycles", "writeback_tail_cycles")


def load(kind: str = "gemm_cycles_nomma", folder: pathlib.Path = NOMMA_DIR) -> list[dict]:
    """The records of `kind` in `folder`, sorted by name."""
    recs = [json.loads(p.read_text()) for p in sorted(folder.glob(f"{kind}__*.json"))]
    return [r for r in recs if r.get("kind") == kind and r.get("status") == "ok"]


def field_of(params: GemmParams) -> str:
    """The hold field the twin's copies take (gemm_sim.TWIN_TMA_ISSUE)."""
    return TWIN_TMA_ISSUE[(params.variant, params.tma_issuer)][1]


def cta_cycles(res) -> int:
    """What one CTA's clock64 span sees: the launch period less its launch and memory tails."""
    return int(res.cycles) - sum(int(res.extra.get(k, 0)) for k in TAILS)


def simulate_record(rec: dict, gpu=None, holds: dict | None = None) -> int:
    """Simulated CTA cycles of `rec` (its params, SM clock, loop same; without wgmma.mma_async when
    the record is a nomma one), with the timing fields `holds` overridden."""
    p = GemmParams.from_dict(rec["params"])
    g = (gpu or load_gpu()).at_clock(float(rec["clock_mhz"]))
    if holds:
        g = g.with_timing(**holds)
    run = simulate_gemm(p, g, mode="fast", loop="same", no_mma=rec["kind"] == "gemm_cycles_nomma")
    return cta_cycles(run.result)


def _objective(recs: list[dict], field: str, gpu, cache: dict):
    def f(h: int) -> float:
        if h not in cache:
            cache[h] = [simulate_record(r, gpu, {field: float(h)}) for r in recs]
        return sum(math.log(s / r["kernel_cycles"]) ** 2 for s, r in zip(cache[h], recs))
    return f


def golden_int(f, lo: int, hi: int) -> int:
    """The integer in [lo, hi] minimising a unimodal f (golden section, then a scan of the last few)."""
    g = (math.sqrt(5) - 1) / 2
    while hi - lo > 4:
        a = int(round(hi - g * (hi - lo)))
        b = int(round(lo + g * (hi - lo)))
        if a == b:
            b = a + 1
        if f(a) <= f(b):
            hi = b
        else:
            lo = a
    return min(range(lo, hi + 1), key=f)


def by_class(recs: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in recs:
        out.setdefault(field_of(GemmParams.from_dict(r["params"])), []).append(r)
    return out


def fit(recs: list[dict] | None = None, gpu=None) -> dict:
    """{field: {"value", "records", "residuals": {name: error}}} fitted on the nomma records."""
    recs = recs if recs is not None else load()
    gpu = gpu or load_gpu()
    out = {}
    for field, rs in sorted(by_class(recs).items()):
        cache: dict = {}
        h = golden_int(_objective(rs, field, gpu, cache), *HOLD_RANGE)
        res = {r["name"]: round(s / r["kernel_cycles"] - 1, 4) for s, r in zip(cache[h], rs)}
        out[field] = {"value": float(h), "records": len(rs), "residuals": res}
    return out


#: (variant, issuer, consumers, BN): the tn records with 8-row boxes at 128B and at 32B swizzle: the
#: same bytes per k-tile in 4x as many boxes (single 32 -> 128, ws2 48 -> 192), so their cycle
#: difference per extra box is the per-box cost alone
SLOPE_PAIRS = {"gemm_single_elect_tma_issue_cycles": ("single", "elect", 1, 128),
               "gemm_single_lane_tma_issue_cycles": ("single", "lane", 1, 128),
               "gemm_ws_elect_tma_issue_cycles": ("ws", "elect", 2, 256),
               "gemm_ws_lane_tma_issue_cycles": ("ws", "lane", 2, 256)}


def slope_pair(recs: list[dict], field: str) -> tuple[dict, dict] | None:
    v, iss, nc, bn = SLOPE_PAIRS[field]
    found = {}
    for r in recs:
        p = GemmParams.from_dict(r["params"])
        if (p.variant, p.tma_issuer, p.bn, p.box_rows, p.layout) == (v, iss, bn, 8, "tn") and \
                (v != "ws" or p.num_consumer_warpgroups == nc):
            found[p.swizzle] = r
    return (found["128B"], found["32B"]) if {"128B", "32B"} <= set(found) else None


def per_box_slopes(recs: list[dict], gpu=None) -> dict:
    """{field: {"measured", "ir_own", "hold"}}: the measured cycles per extra box (SLOPE_PAIRS), the
    IR twin's own (the simulated slope with the hold 0: its address arithmetic, issue slots and
    their latency) and their difference, the hold that counts each box's cost once."""
    gpu = gpu or load_gpu()
    out = {}
    for field in SLOPE_PAIRS:
        pair = slope_pair(recs, field)
        if pair is None:
            continue
        few, many = pair
        kt = few["params"]["k"] / few["params"]["bk"]
        db = GemmParams.from_dict(many["params"]).boxes_per_stage - GemmParams.from_dict(few["params"]).boxes_per_stage
        hw = (many["kernel_cycles"] - few["kernel_cycles"]) / kt / db
        ir = (simulate_record(many, gpu, {field: 0.0}) - simulate_record(few, gpu, {field: 0.0})) / kt / db
        out[field] = {"measured": round(hw, 2), "ir_own": round(ir, 2), "hold": round(hw - ir, 2)}
    return out


def source_line(field: str, entry: dict) -> str:
    errs = [abs(e) for e in entry["residuals"].values()]
    return (f"measured: validation/records/h100/nomma gemm_cycles_nomma (NVIDIA H100 80GB HBM3, 2026-11-24, "
            f"commit 3189477; -DGEMM_NO_MMA=1 microbenchmark, one CTA, K=4096, 4 stages, L2-warm), fitted: the "
            f"whole-cycle hold minimising sum log(sim/measured)^2 over its {entry['records']} records, the "
            f"IR twin without wgmma.mma_async simulated at each record's SM clock, loop same, the twin's "
            f"own per-box instructions timed by the simulator (hopsim/validate/calibrate_nomma.py); "
            f"residual |error| median {statistics.median(errs):.1%}, max {max(errs):.1%}")


def derive_nomma(path: pathlib.Path = FIT_PATH) -> dict[str, tuple[float, str]]:
    """field -> (value, source) from the committed fit; {} without it."""
    if not pathlib.Path(path).is_file():
        return {}
    data = json.loads(pathlib.Path(path).read_text())
    return {f: (float(e["value"]), source_line(f, e)) for f, e in data["fields"].items()}


def report(fitted: dict) -> str:
    lines = []
    for field, e in fitted.items():
        lines.append(f"{field} = {e['value']:.0f} cycles ({e['records']} records)")
        for name, err in e["residuals"].items():
            lines.append(f"    {err:+7.1%}  {name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m hopsim.validate.calibrate_nomma",
                                 description="fit the GEMM twins' per-box TMA issue holds on the nomma records")
    ap.add_argument("--check", action="store_true", help="residuals at the committed fit only (no search)")
    ap.add_argument("--out", default=str(FIT_PATH), help=f"fit file (default {FIT_PATH.name})")
    args = ap.parse_args(argv)
    recs = load()
    if not recs:
        print(f"calibrate_nomma: no gemm_cycles_nomma records under {NOMMA_DIR}", file=sys.stderr)
        return 2
    if args.check:
        committed = derive_nomma(pathlib.Path(args.out))
        gpu = load_gpu()
        fitted = {}
        for field, rs in sorted(by_class(recs).items()):
            h = committed.get(field, (float(gpu.timing.params()[field].value),))[0]
            fitted[field] = {"value": h, "records": len(rs), "residuals": {
                r["name"]: round(simulate_record(r, gpu, {field: h}) / r["kernel_cycles"] - 1, 4) for r in rs}}
        print(report(fitted))
        return 0
    fitted = fit(recs)
    slopes = per_box_slopes(recs)
    print(report(fitted))
    for field, e in slopes.items():
        print(f"{field}: measured {e['measured']:.2f} cycles per extra box = IR twin's own {e['ir_own']:.2f} "
              f"+ hold {e['hold']:.2f}")
    pathlib.Path(args.out).write_text(json.dumps({
        "about": "Written by `python3 -m hopsim.validate.calibrate_nomma` (do not edit by hand): the GEMM "
                 "twins' per-box TMA issue holds fitted on validation/records/h100/nomma gemm_cycles_nomma. "
                 "A CANDIDATE, not applied to h100_sxm_calibrated.json: it failed the one-SM development "
                 "check (validation/records/h100/nomma/MODEL_FIT.md).",
        "fields": fitted, "per_box_slopes": slopes}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
