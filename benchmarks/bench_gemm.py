"""Speed of `simulate` on the IR GEMM family of kernels/gemm/ (wall seconds; not a test).

    python benchmarks/bench_gemm.py [--json] [--only 4096] [--config single|ws2]

Fast mode as `hopsim simulate gemm` uses it: timing only (values=False), memory="partitioned",
memo=True. Configurations:

  single   GemmParams() defaults: 128x128x64 tile, 4 stages, one warpgroup, direct epilogue
  ws2      the H100's best: ws, 2 consumer warpgroups, 128x256x64, 4 stages, stmatrix, grouped

Sizes 4096^3 (targets < 10 s) and 8192^3 (< 60 s), one core. Reports the simulated cycles and
TFLOP/s, the CTAs simulated in detail vs replayed from the memo, build/setup time and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from hopsim.config import load_gpu  # noqa: E402
from hopsim.timing.runner import simulate  # noqa: E402
from hopsim.gemm_setup import setup_gemm  # noqa: E402
from kernels.gemm import build_gemm  # noqa: E402
from kernels.params import GemmParams  # noqa: E402

CONFIGS = {
    "single": {},
    "ws2": dict(bm=128, bn=256, stages=4, variant="ws", consumers=2, epilogue="stmatrix",
                raster="grouped"),
}
SIZES = {4096: 10.0, 8192: 60.0}


def bench(size: int, config: str) -> dict:
    p = GemmParams(m=size, n=size, k=size, **CONFIGS[config])
    t0 = time.perf_counter()
    build_gemm.cache_clear()
    gk = build_gemm(p)
    gmem, launch, _, _ = setup_gemm(p, gk, values=False)
    t1 = time.perf_counter()
    res = simulate(gk.kernel, launch, load_gpu(), values=False, gmem=gmem, memory="partitioned",
                   memo=True, regs_per_thread=gk.regs_per_thread, flop_count=p.flops)
    t2 = time.perf_counter()
    extra = getattr(res, "extra", None) or {}
    return {"case": f"{config}_{size}", "wall_s": round(t2 - t0, 2), "build_s": round(t1 - t0, 3),
            "simulate_s": round(t2 - t1, 2), "target_s": SIZES[size], "ok": t2 - t0 < SIZES[size],
            "cycles": res.cycles, "tflops": round(res.tflops, 1), "ctas_per_sm": res.ctas_per_sm,
            "memo": {k: extra.get(k) for k in ("memo", "tile_plan", "detailed_ctas", "memo_hits")},
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", type=int, choices=sorted(SIZES))
    ap.add_argument("--config", choices=sorted(CONFIGS))
    a = ap.parse_args(argv)
    rows = []
    for size in SIZES:
        if a.only and size != a.only:
            continue
        for config in CONFIGS:
            if a.config and config != a.config:
                continue
            r = bench(size, config)
            rows.append(r)
            if not a.json:
                print(f"{r['case']:12s} {r['wall_s']:7.2f} s (target {r['target_s']:.0f} s, "
                      f"{'ok' if r['ok'] else 'SLOW'})  {r['cycles']:,} cycles  {r['tflops']} TFLOP/s  "
                      f"CTAs/SM {r['ctas_per_sm']}  {r['memo']}  RSS {r['peak_rss_mb']} MB", flush=True)
    if a.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
