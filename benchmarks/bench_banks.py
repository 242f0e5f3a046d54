"""Throughput of the vectorised bank model (`wavefronts_batch`): warp accesses per second, per category.

    python benchmarks/bench_banks.py [--n 1000000] [--repeat 3] [--ops ld.shared.v4.b32 ...] [--json]

One category = one op x one address pattern (n warp accesses, aligned, inside 4 KB: many conflicts):

    random        every lane random
    pair-uniform  lane 2k+1 copies lane 2k (the LDS.64/LDS.128 group-merge path)
    xor2-uniform  lanes 4j+2, 4j+3 copy lanes 4j, 4j+1 (the other merge path)
    holes         random, a quarter of the lanes inactive (-1; ld/st only: ldmatrix lanes are all used)

Prints one line per category, then the slowest category and the total. Not a test (timings vary
with the machine); the issue's bar is >= 1 million warp accesses/s for every category on one core.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hopsim.functional.banks import OPS, wavefronts_batch  # noqa: E402

VARIANTS = ("random", "pair-uniform", "xor2-uniform", "holes")


def make(op: str, variant: str, n: int, rng: np.random.Generator) -> np.ndarray:
    w = OPS[op].width
    a = rng.integers(0, 4096 // w, (n, 32)) * w
    if variant == "pair-uniform":
        a[:, 1::2] = a[:, 0::2]
    elif variant == "xor2-uniform":
        q = a.reshape(n, 8, 4)
        q[:, :, 2:] = q[:, :, :2]
    elif variant == "holes":
        a[rng.random((n, 32)) < 0.25] = -1
    return a


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000, help="warp accesses per category")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    ap.add_argument("--ops", nargs="*", default=list(OPS), help="ops to time (default: all)")
    ap.add_argument("--json", action="store_true", help="one JSON object per category on stdout")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    total_n, total_t, rates = 0, 0.0, {}
    for op in args.ops:
        for variant in VARIANTS:
            if variant == "holes" and OPS[op].cls not in ("ld", "st"):
                continue
            a = make(op, variant, args.n, rng)
            best = min(_time(op, a) for _ in range(args.repeat))
            total_n += args.n
            total_t += best
            rates[(op, variant)] = args.n / best
            if args.json:
                print(json.dumps({"op": op, "variant": variant, "n": args.n, "accesses_per_s": round(args.n / best)}))
            else:
                print(f"{op:22s} {variant:13s} {args.n / best:12,.0f} accesses/s", flush=True)
    (op, variant), slow = min(rates.items(), key=lambda kv: kv[1])
    if not args.json:
        print(f"{'slowest: ' + op:22s} {variant:13s} {slow:12,.0f} accesses/s")
        print(f"{'all':22s} {'':13s} {total_n / total_t:12,.0f} accesses/s")
    return 0


def _time(op: str, a: np.ndarray) -> float:
    t = time.perf_counter()
    wavefronts_batch(op, a)
    return time.perf_counter() - t


if __name__ == "__main__":
    raise SystemExit(main())
