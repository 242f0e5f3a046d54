"""Throughput of TMA box copies (`hopsim.functional.tma`): boxes per second.

    python benchmarks/bench_tma.py [--boxes 2000]

The box is 64 x 128 f16 (inner 64 elements = 128 B) with the 128B swizzle, from a 1024 x 1024 f16
tensor: `box_transfer` (the element-level plan), `tma_load` / `tma_store` (bytes moved), each for
an in-bounds box and for a box hanging over the tensor's corner (OOB fill), and the plan built
from scratch (`_box_transfer_uncached`, the cost of every call before the plan was cached).
Not a test: prints one line per case.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hopsim.functional.smem import SharedMemory  # noqa: E402
from hopsim.functional.tma import _box_transfer_uncached, box_transfer, tma_load, tma_store  # noqa: E402
from isa.tensormap import TensorMap  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--boxes", type=int, default=2000, help="box copies per case")
    ap.add_argument("--json", action="store_true", help="one JSON object per case on stdout")
    args = ap.parse_args()
    rows = cols = 1024
    tmap = TensorMap("f16", (cols, rows), (cols * 2,), (64, 128), swizzle="128B")
    gmem = np.random.default_rng(0).integers(0, 256, rows * cols * 2, dtype=np.uint8)
    smem = SharedMemory()
    rng = np.random.default_rng(1)
    inside = [(int(x) * 64, int(y) * 128) for x, y in zip(rng.integers(0, cols // 64, args.boxes),
                                                          rng.integers(0, rows // 128, args.boxes))]
    corner = [(cols - 32, rows - 64)] * args.boxes
    cases = [
        ("box_transfer", "in-bounds", lambda c: box_transfer(tmap, c, 1024), inside),
        ("box_transfer", "oob", lambda c: box_transfer(tmap, c, 1024), corner),
        ("tma_load", "in-bounds", lambda c: tma_load(gmem, tmap, c, smem, 1024), inside),
        ("tma_load", "oob", lambda c: tma_load(gmem, tmap, c, smem, 1024), corner),
        ("tma_store", "in-bounds", lambda c: tma_store(gmem, tmap, c, smem, 1024), inside),
        ("tma_store", "oob", lambda c: tma_store(gmem, tmap, c, smem, 1024), corner),
        ("uncached plan", "in-bounds", lambda c: _box_transfer_uncached(tmap, c, 1024), inside[: max(args.boxes // 10, 1)]),
    ]
    for name, variant, fn, coords in cases:
        t = time.perf_counter()
        for c in coords:
            fn(c)
        rate = len(coords) / (time.perf_counter() - t)
        if args.json:
            print(json.dumps({"case": name, "variant": variant, "boxes_per_s": round(rate)}))
        else:
            print(f"{name:14s} {variant:10s} {rate:10,.0f} boxes/s  ({1e6 / rate:7.1f} us/box)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
