"""Behaviour fingerprint of `hopsim simulate gemm --json` over a fixed grid of GEMM points.

A refactor must not change what the simulator computes. This script simulates a fixed grid of
>= 50 GEMM configurations through the CLI (as a user would), keeps the fields that are the
simulation's behaviour (cycles, bytes, TMA boxes, L2 hits/misses, bank conflicts, the total of
every wait reason over all warps) and prints one SHA-256 over them. Compare two heads with

    python3 benchmarks/fingerprint.py --out /tmp/fp_new.json
    python3 benchmarks/fingerprint.py --diff benchmarks/data/fingerprint_b6c6b07.json /tmp/fp_new.json

Report-only fields (role labels, utilisation percentages, wall time) are left out on purpose:
they are presentation, and the presentation is allowed to be fixed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys

# Each group is one `simulate gemm` call; lists sweep (product of the lists).
GRID: list[list[str]] = [
    ["--m", "1024", "--n", "1024", "--k", "1024", "--variant", "single", "--stages", "1,2,3,4,6",
     "--tma-box-rows", "64,128"],
    ["--m", "1024", "--n", "1024", "--k", "1024", "--variant", "ws", "--consumers", "1,2",
     "--tile", "128x128x64", "--stages", "2,4"],
    ["--m", "1024", "--n", "1024", "--k", "1024", "--variant", "ws", "--consumers", "2",
     "--tile", "128x256x64", "--stages", "2,4"],
    ["--m", "512", "--n", "512", "--k", "1024", "--variant", "single,ws", "--swizzle", "32B,64B,128B",
     "--stages", "3"],
    ["--m", "512", "--n", "1024", "--k", "2048", "--variant", "single,ws", "--tma-box-rows", "8,32",
     "--tma-issuer", "lane,elect", "--stages", "2"],
    ["--m", "2048", "--n", "1024", "--k", "512", "--variant", "single", "--tile", "64x128x64,128x64x64,64x256x64",
     "--stages", "2,4"],
    ["--m", "1024", "--n", "2048", "--k", "1024", "--dtype", "f16", "--accum", "f32,f16",
     "--layout", "tn,nn", "--stages", "3"],
    ["--m", "1024", "--n", "2048", "--k", "1024", "--dtype", "bf16", "--layout", "tn,nn", "--stages", "3"],
    ["--m", "2048", "--n", "2048", "--k", "1024", "--epilogue", "direct,stmatrix", "--raster", "row,grouped",
     "--ctas-per-sm", "auto,1", "--stages", "2"],
    ["--m", "4096", "--n", "4096", "--k", "1024", "--variant", "ws", "--consumers", "2",
     "--tile", "128x256x64", "--stages", "4"],
]

KEEP = ("cycles", "ctas", "ctas_per_sm", "waves", "sms_used", "bytes_hbm", "bytes_stored",
        "bank_conflicts", "flops")
KEEP_EXTRA = ("tensor_flops", "l2_hits", "l2_misses", "tma_boxes", "memo_hits", "detailed_ctas")


def _point(res: dict) -> dict:
    out = {k: res.get(k) for k in KEEP}
    extra = res.get("extra", {})
    out.update({k: extra.get(k) for k in KEEP_EXTRA})
    waits: dict[str, int] = {}
    insts = 0
    for role in res.get("roles", {}).values():
        insts += role.get("instructions", 0)
        for reason, cyc in role.get("wait", {}).items():
            waits[reason] = waits.get(reason, 0) + cyc
    out["instructions"] = insts
    out["wait_total"] = dict(sorted(waits.items()))
    out["params"] = res.get("params")
    return out


def _clock_args() -> list[str]:
    """`--clock boost` where the head has the flag (the fingerprint is taken at 1980 MHz, the
    clock every head before the power model simulated at); nothing for an older head."""
    proc = subprocess.run([sys.executable, "-m", "hopsim", "simulate", "gemm", "--help"],
                          capture_output=True, text=True, check=False)
    return ["--clock", "boost"] if "--clock" in proc.stdout else []


def run_grid() -> list[dict]:
    points = []
    clock = _clock_args()
    for args in GRID:
        cmd = [sys.executable, "-m", "hopsim", "simulate", "gemm", *args, *clock, "--json",
               "--no-progress", "--jobs", "2"]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"fingerprint: {' '.join(args)} failed: {proc.stderr.strip()[-500:]}")
        res = json.loads(proc.stdout)
        for r in (res if isinstance(res, list) else [res]):
            points.append(_point(r))
    return points


def digest(points: list[dict]) -> str:
    return hashlib.sha256(json.dumps(points, sort_keys=True).encode()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the points and their digest to this JSON file")
    ap.add_argument("--diff", nargs=2, metavar=("OLD", "NEW"), help="compare two fingerprint files")
    a = ap.parse_args()
    if a.diff:
        old, new = (json.load(open(p)) for p in a.diff)
        bad = [i for i, (x, y) in enumerate(zip(old["points"], new["points"])) if x != y]
        print(f"old {old['sha256'][:16]} ({len(old['points'])} points)  new {new['sha256'][:16]} "
              f"({len(new['points'])} points)  differing points: {len(bad)}")
        for i in bad[:10]:
            for k in old["points"][i]:
                if old["points"][i][k] != new["points"][i].get(k):
                    print(f"  point {i} {k}: {old['points'][i][k]} -> {new['points'][i].get(k)}")
        raise SystemExit(0 if not bad and len(old["points"]) == len(new["points"]) else 1)
    points = run_grid()
    doc = {"sha256": digest(points), "n_points": len(points), "points": points}
    print(f"{len(points)} points sha256 {doc['sha256']}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
