"""Entry point for the power microbenchmarks on the GPU machine (issue 13 item 2):

    python3 -m validation.power.run --out $OUT/power --budget-s 420
    python3 -m validation.power.run --plan --budget-s 420        # print the plan, run nothing
    python3 -m validation.power.run --out $OUT/power --only light_,idle_after --budget-s 150
                                     # only the light-load points (validation/power/light.py)
    python3 -m validation.power.run --out $OUT/power_pipe2 --only pipe2_,idle_after --budget-s 170
                                     # only the pipe taken apart (validation/power/pipe2.py)

Compiles every source in parallel (nvcc) while the idle point runs, then runs every point of
the plan in order, each in its own child process with a time limit (a failing, faulting or hung
point is recorded with its error and the run goes on: a CUDA fault poisons only its own context);
a point that no longer fits the budget is recorded as skipped. Writes one JSON line per
point to <out>/{wgmma,units,governor}.jsonl and a summary table to <out>/summary.txt and stdout.
Never changes clocks or power limits.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time
import traceback

from validation.power import benches, light, pipe2, tmaw
from validation.power.nvml_sampler import power_limits
from validation.provenance import device_provenance

COMPILE_S = 60.0       # allowance for nvcc (both sources in parallel; ~2 s seen on 2 CPU cores)
SETUP_S = 3.0          # per point: child process, CUDA context, module load, sampler start/stop
CHILD_GRACE_S = 90.0   # a child running this much longer than its point is killed
POINT_S = 3.0          # load per steady point: the clock settles within ~0.5 s (docs/hopper-facts.md)
WGMMA_VARIANTS = ("f16f32", "bf16f32", "f16f16")
DUTIES = (100, 75, 50, 25)
#: (CTAs = SMs used, duty %) of the partly occupied burners (issue 13: the static/active split)
PARTIAL = ((33, 100), (66, 100), (99, 100), (66, 50), (33, 50))
FILES = {"wgmma": "wgmma.jsonl", "units": "units.jsonl", "governor": "governor.jsonl", "light": "light.jsonl",
         "light_pipe2": "light_pipe2.jsonl", "light_tmaw": "light_tmaw.jsonl"}


def plan() -> list[dict]:
    """Every point: family (output file), name, planned seconds, the bench function and kwargs."""
    pts = [{"family": "units", "name": "idle", "seconds": POINT_S, "fn": benches.idle_point,
            "kw": {"duration_s": POINT_S}},
           {"family": "governor", "name": "step_f16f32", "seconds": 7.0, "fn": benches.step_point,
            "kw": {"idle_before_s": 1.5, "on_s": 3.0, "idle_after_s": 2.5}}]
    for v in WGMMA_VARIANTS:
        for zero in (False, True):
            for d in DUTIES:
                pts.append({"family": "wgmma", "name": f"wgmma_{v}_duty{d}_{'zero' if zero else 'random'}",
                            "seconds": POINT_S, "fn": benches.wgmma_point,
                            "kw": {"variant": v, "duty": d, "zero": zero, "duration_s": POINT_S}})
    for sms, duty in PARTIAL:
        pts.append({"family": "wgmma", "name": f"partial_wgmma_f16f32_duty{duty}_random_sm{sms}",
                    "seconds": POINT_S, "fn": benches.wgmma_point,
                    "kw": {"variant": "f16f32", "duty": duty, "zero": False, "duration_s": POINT_S,
                           "sms": sms}})
    for unit, duty in (("bulk_l2", 100), ("bulk_l2", 50), ("hbm_read", 100), ("hbm_copy", 100),
                       ("smem_ld", 100), ("smem_st", 100), ("alu_fma", 100)):
        pts.append({"family": "units", "name": f"{unit}_duty{duty}", "seconds": POINT_S,
                    "fn": benches.unit_point, "kw": {"unit": unit, "duty": duty, "duration_s": POINT_S}})
    for per_burst, gap in ((20, 0.0), (20, 0.02), (5, 0.05)):
        pts.append({"family": "governor", "name": f"burst_f16f32_n{per_burst}_gap{int(gap * 1e3)}ms",
                    "seconds": 4.0, "fn": benches.burst_point,
                    "kw": {"variant": "f16f32", "duration_s": 4.0, "per_burst": per_burst, "gap_s": gap}})
    pts.extend(light.plan())   # light SM load at boost (validation/power/light.py)
    pts.append({"family": "units", "name": "idle_after", "seconds": POINT_S, "fn": benches.idle_point,
                "kw": {"duration_s": POINT_S}})
    return pts


def selectable() -> list[dict]:
    """Every point --only may pick: the default plan plus the opt-in families (the pipe taken
    apart, validation/power/pipe2.py: run with --only pipe2_,idle_after), before idle_after."""
    pts = plan()
    return [*pts[:-1], *pipe2.plan(), *tmaw.plan(), pts[-1]]


def planned_seconds(points: list[dict]) -> float:
    """Planned wall time: compile allowance + every point's load + its setup."""
    return COMPILE_S + sum(p["seconds"] + SETUP_S for p in points)


def provenance() -> dict:
    """device_provenance (validation/provenance.py) plus NVML's power limits and max clocks (read)."""
    try:
        prov = device_provenance()
    except Exception as exc:  # noqa: BLE001
        prov = {"provenance_error": f"{type(exc).__name__}: {exc}"}
    prov["nvml"] = power_limits()
    return prov


def run_point(pt: dict, prov: dict) -> dict:
    t0 = time.time()
    rec = {"kind": "power", "family": pt["family"], "name": pt["name"],
           "params": {k: v for k, v in pt["kw"].items()}, "error": None}
    try:
        rec.update(pt["fn"](**pt["kw"]))
    except Exception as exc:  # noqa: BLE001  (recorded; the run goes on)
        rec["error"] = f"{type(exc).__name__}: {exc}"
        rec["traceback"] = traceback.format_exc()[-3000:]
    rec["wall_s"] = round(time.time() - t0, 2)
    rec["provenance"] = prov
    return rec


def _f(x, fmt="{:.0f}"):
    return "-" if x is None else fmt.format(x)


def summary_line(rec: dict) -> str:
    """name | steady SM MHz | steady power W | energy-counter W | rate | reasons (or the error)."""
    if rec.get("error"):
        return f"{rec['name']:<34} ERROR {' '.join(rec['error'].split())[:90]}"
    st = rec.get("power_steady_summary") or rec.get("power_samples_summary") or {}
    sm = (st.get("sm_mhz") or {}).get("median")
    pw = (st.get("power_w") or {}).get("median")
    ew = (st.get("energy") or {}).get("mean_power_w")
    rate = rec.get("steady_rate_per_s") or rec.get("rate_per_s")
    reasons = ",".join(f"{k}:{v:.2f}" for k, v in (st.get("reasons") or {}).items())
    return (f"{rec['name']:<34} {_f(sm):>5} MHz {_f(pw):>4} W {_f(ew):>4} W(E) "
            f"{_f(rate, '{:.3e}'):>10}/s  {reasons}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m validation.power.run", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=pathlib.Path, help="output folder (created)")
    ap.add_argument("--budget-s", type=float, default=420.0, help="wall-time budget, seconds (> 0)")
    ap.add_argument("--only", default="", help="comma-separated name prefixes to run (default: all)")
    ap.add_argument("--plan", action="store_true", help="print the plan and its planned time; run nothing")
    ap.add_argument("--point", help=argparse.SUPPRESS)   # child mode: run one point
    ap.add_argument("--prov", type=pathlib.Path, help=argparse.SUPPRESS)
    ap.add_argument("--rec", type=pathlib.Path, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.point:
        return child(a.point, a.prov, a.rec)
    if a.budget_s <= 0:
        print(f"--budget-s: {a.budget_s} is not valid; give seconds > 0", file=sys.stderr)
        return 2
    pts = plan()
    if a.only:
        pts = [p for p in selectable() if p["name"] == "idle" or any(p["name"].startswith(x) for x in a.only.split(","))]
    if a.plan:
        for p in pts:
            print(f"{p['family']:<9} {p['name']:<34} {p['seconds']:.1f} s")
        print(f"planned {planned_seconds(pts):.0f} s of {a.budget_s:.0f} s budget ({len(pts)} points)")
        return 0
    if a.out is None:
        print("--out: missing; give the output folder (e.g. $OUT/power)", file=sys.stderr)
        return 2
    return execute(pts, a.out, a.budget_s)


def _jsonable(x):
    return x.decode(errors="replace") if isinstance(x, bytes) else str(x)


def child(name: str, prov_path: pathlib.Path, rec_path: pathlib.Path) -> int:
    """Run one point of the plan and write its record (JSON) to rec_path."""
    pt = next((p for p in selectable() if p["name"] == name), None)
    if pt is None:
        print(f"--point: unknown point {name!r}", file=sys.stderr)
        return 2
    rec = run_point(pt, json.loads(prov_path.read_text()))
    rec_path.write_text(json.dumps(rec, default=_jsonable))
    return 0


def _run_child(pt: dict, prov_path: pathlib.Path, tmp: pathlib.Path, timeout_s: float) -> dict:
    rec_path = tmp / f"{pt['name']}.json"
    cmd = [sys.executable, "-m", "validation.power.run", "--point", pt["name"], "--prov", str(prov_path),
           "--rec", str(rec_path)]
    err = None
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        if r.returncode != 0:
            err = f"child exited {r.returncode}: {(r.stdout + r.stderr)[-1500:]}"
    except subprocess.TimeoutExpired:
        err = f"child killed after {timeout_s:.0f} s (hung?)"
    if rec_path.exists():
        rec = json.loads(rec_path.read_text())
        if err and not rec.get("error"):
            rec["error"] = err
        return rec
    return {"kind": "power", "family": pt["family"], "name": pt["name"], "params": pt["kw"],
            "error": err or "child wrote no record"}


def execute(pts: list[dict], out: pathlib.Path, budget_s: float) -> int:
    t_begin = time.time()
    out.mkdir(parents=True, exist_ok=True)
    procs = benches.start_compiles()
    prov = provenance()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="hopsim_power_"))
    prov_path = tmp / "provenance.json"
    prov_path.write_text(json.dumps(prov, default=_jsonable))
    lines, compiled = [], False
    for pt in pts:
        if not compiled and pt["fn"] is not benches.idle_point:
            prov["power_compile"] = benches.finish_compiles(procs)
            prov_path.write_text(json.dumps(prov, default=_jsonable))
            compiled = True
            for stem, e in prov["power_compile"].items():
                if e:
                    print(f"compile {stem}: {e}", flush=True)
        left = budget_s - (time.time() - t_begin)
        if left < pt["seconds"] + SETUP_S:
            rec = {"kind": "power", "family": pt["family"], "name": pt["name"], "params": pt["kw"],
                   "error": f"skipped: {left:.0f} s of budget left"}
        else:
            rec = _run_child(pt, prov_path, tmp, min(left, pt["seconds"] + CHILD_GRACE_S))
        rec.setdefault("provenance", prov)
        with open(out / FILES[pt["family"]], "a") as f:
            f.write(json.dumps(rec, default=_jsonable) + "\n")
        line = summary_line(rec)
        lines.append(line)
        print(line, flush=True)
    if not compiled:
        benches.finish_compiles(procs)
    table = "\n".join([f"power microbenchmarks: {len(pts)} points, {time.time() - t_begin:.0f} s wall",
                       "name | steady SM clock | steady power (nvmlDeviceGetPowerUsage) | "
                       "steady power from energy counter | steady event rate | reasons", *lines])
    (out / "summary.txt").write_text(table + "\n")
    print("\n" + table, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
