"""Throughput of the vectorised bank model: warp accesses per second per op.

    python benchmarks/bench_banks.py [--n 1000000]

Random aligned addresses inside 4 KB (many conflicts), and the same with thread-pair-uniform
lanes (the LDS.64/LDS.128 merge path). Not a test: prints one line per case.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hopsim.functional.banks import OPS, wavefronts_batch

CASES = ["ld.shared.b32", "st.shared.u8", "ld.shared.v2.b32", "ld.shared.v4.b32", "st.shared.v4.b32",
         "ldmatrix.x4", "stmatrix.x4.trans"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000, help="warp accesses per case")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    total_n, total_t = 0, 0.0
    for op in CASES:
        w = OPS[op].width if OPS[op].cls in ("ld", "st") else 16
        for variant in ("random", "pair-uniform"):
            a = rng.integers(0, 4096 // w, (args.n, 32)) * w
            if variant == "pair-uniform":
                a[:, 1::2] = a[:, 0::2]
            best = min(_time(op, a) for _ in range(args.repeat))
            total_n += args.n
            total_t += best
            print(f"{op:20s} {variant:13s} {args.n / best:12,.0f} accesses/s")
    print(f"{'all':20s} {'':13s} {total_n / total_t:12,.0f} accesses/s")
    return 0


def _time(op: str, a: np.ndarray) -> float:
    t = time.perf_counter()
    wavefronts_batch(op, a)
    return time.perf_counter() - t


if __name__ == "__main__":
    raise SystemExit(main())
