"""Speed of the functional executor (wall seconds on one core; not a test).

    python benchmarks/bench_functional.py [--k 4096] [--json]

Kernel: the warp-specialised 128x128x64-tile TMA + WGMMA GEMM of tests/functional/_gemm_kernel.py
(1 producer warp, 2 consumer warpgroups x 4 wgmma m64n128k16 per k-block, 4 stages), one CTA.
Reports instructions/s of the functional runner with data (values=True) and timing-only
(values=False), and, when the timing layer is importable, the timed simulation (values=False).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "functional"))

from _gemm_kernel import reference, ws_gemm_text, ws_setup  # noqa: E402
from hopsim.functional.executor import Launch  # noqa: E402
from hopsim.functional.runner import run_kernel  # noqa: E402
from isa.ir import parse  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    kern = parse(ws_gemm_text(4))
    out = {}
    for values in (True, False):
        g, params, a, b = ws_setup(args.k)
        launch = Launch(block=384, params=params)
        run_kernel(kern, launch, g, values=values)  # warm (compile)
        g, params, a, b = ws_setup(args.k)
        t0 = time.perf_counter()
        st = run_kernel(kern, Launch(block=384, params=params), g, values=values)
        dt = time.perf_counter() - t0
        out[f"functional_values_{values}"] = {"wall_s": round(dt, 4), "instructions": st.instructions,
                                              "instructions_per_s": round(st.instructions / dt)}
        if values:
            import numpy as np
            d = g.view("D", np.float32).reshape(128, 128)
            out["max_abs_err"] = float(abs(d - reference(a, b)).max())
    try:
        from hopsim.timing.runner import simulate
    except Exception:  # pragma: no cover
        simulate = None
    if simulate is not None:
        g, params, a, b = ws_setup(args.k)
        t0 = time.perf_counter()
        res = simulate(kern, Launch(block=384, params=params), gmem=g, values=False)
        dt = time.perf_counter() - t0
        out["timed_values_False"] = {"wall_s": round(dt, 4), "cycles": getattr(res, "cycles", None)}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for k, v in out.items():
            print(f"{k:28s} {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
