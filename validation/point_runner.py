"""Run a plan of GPU points in child processes, one per group, into one JSONL, within a budget.
Used by validation/micro_gmem.py and validation/portfolio_runs.py (GPU machine; stdlib only here).

The parent starts `python3 -m <module> --child GROUP --from K --deadline T --prov P --jsonl F`; the
child runs the group's points from index K, appending one record per point (flushed), and checks
the deadline before each point (a point past it is recorded as skipped). A point that raises is
recorded with its error and the child goes on; if the CUDA context is then unusable (a fault) the
child exits 3 and the parent restarts the group after that point. A child that dies or hangs is
killed at the deadline; the point it was on is recorded with the child's last output. So a run
always ends with exactly one record per planned point.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import time
import traceback

CONTEXT_LOST = 3      # child exit status: a point broke the CUDA context; restart after it


def _jsonable(x):
    return x.decode(errors="replace") if isinstance(x, bytes) else str(x)


def append(path: pathlib.Path, rec: dict) -> None:
    """Append one record as one JSON line, flushed."""
    with open(path, "a") as f:
        f.write(json.dumps(rec, default=_jsonable) + "\n")
        f.flush()


def names_done(path: pathlib.Path) -> set[str]:
    """Names of the points already recorded in `path`."""
    if not path.exists():
        return set()
    out = set()
    for line in path.read_text().splitlines():
        try:
            out.add(json.loads(line)["name"])
        except (ValueError, KeyError, TypeError):
            continue
    return out


def bare_record(kind: str, pt: dict, error: str, prov: dict) -> dict:
    """The record of a point that did not run (skipped, or its child died)."""
    return {"kind": kind, "group": pt["group"], "family": pt["family"], "name": pt["name"],
            "params": pt["params"], "error": error, "provenance": prov}


def run_child(kind: str, points: list[dict], run_point, health, start: int, deadline: float,
              prov: dict, jsonl: pathlib.Path) -> int:
    """Child mode: run `points[start:]` (one group) with run_point(pt) -> dict of fields; health()
    raises when the CUDA context is unusable. Returns the exit status."""
    for pt in points[start:]:
        t0 = time.time()
        if t0 + pt["est_s"] > deadline:
            append(jsonl, bare_record(kind, pt, f"skipped: {deadline - t0:.0f} s of budget left", prov))
            continue
        rec = bare_record(kind, pt, None, prov)
        try:
            rec.update(run_point(pt))
        except Exception as exc:  # noqa: BLE001  (recorded; the run goes on)
            rec["error"] = f"{type(exc).__name__}: {exc}"[:2000]
            rec["traceback"] = traceback.format_exc()[-2000:]
        rec["wall_s"] = round(time.time() - t0, 3)
        append(jsonl, rec)
        print(summary_line(rec), flush=True)
        if rec["error"]:
            try:
                health()
            except Exception as exc:  # noqa: BLE001
                print(f"context unusable after {pt['name']}: {exc}", flush=True)
                return CONTEXT_LOST
    return 0


def summary_line(rec: dict) -> str:
    """One line: name and the headline numbers (or the error)."""
    if rec.get("error"):
        return f"{rec['name']:<34} ERROR {' '.join(str(rec['error']).split())[:100]}"
    r = rec.get("results", {})
    parts = []
    for k, fmt in (("cycles_per_load", "{:.0f} cyc"), ("ns_per_load", "{:.0f} ns"), ("bytes_per_s", "{:.3e} B/s"),
                   ("bytes_per_cycle_per_sm", "{:.1f} B/cyc/SM"), ("ns_per_access", "{:.1f} ns/acc"),
                   ("ms_median", "{:.4f} ms")):
        if r.get(k) is not None:
            parts.append(fmt.format(r[k]))
    clk = (rec.get("sm_clock") or {}).get("nvml_median_mhz")
    if clk:
        parts.append(f"{clk:.0f} MHz")
    return f"{rec['name']:<34} " + "  ".join(parts)


def run_parent(module: str, kind: str, points: list[dict], group_names: list[str], jsonl: pathlib.Path,
               prov_path: pathlib.Path, prov: dict, t_begin: float, budget_s: float) -> None:
    """Run every group in child processes until each planned point has a record."""
    deadline = t_begin + budget_s
    for g in group_names:
        gpts = [p for p in points if p["group"] == g]
        start = 0
        while start < len(gpts):
            cmd = [sys.executable, "-m", module, "--child", g, "--from", str(start), "--deadline", f"{deadline:.3f}",
                   "--prov", str(prov_path), "--jsonl", str(jsonl)]
            left = deadline - time.time()
            tail = ""
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=max(left, 5.0))
                sys.stdout.write(r.stdout)
                tail = (r.stdout + r.stderr)[-1500:]
                status = r.returncode
            except subprocess.TimeoutExpired as exc:
                out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
                sys.stdout.write(out)
                tail, status = f"child killed at the deadline (hung?): {out[-1000:]}", -9
            sys.stdout.flush()
            done = names_done(jsonl)
            nxt = next((i for i, p in enumerate(gpts) if p["name"] not in done), len(gpts))
            if nxt >= len(gpts):
                break
            if status != CONTEXT_LOST:      # the child died on point nxt: record it and go on
                append(jsonl, bare_record(kind, gpts[nxt], f"child exited {status}: {tail}", prov))
                print(f"{gpts[nxt]['name']:<34} ERROR child exited {status}", flush=True)
                nxt += 1
            start = nxt
            if time.time() >= deadline:     # no child start for points that cannot run any more
                for p in gpts[start:]:
                    append(jsonl, bare_record(kind, p, "skipped: budget spent", prov))
                break
