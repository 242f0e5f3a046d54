"""Speed of the memory-bound portfolio kernels (issue 15 item 4): CPU seconds and peak memory of
one simulation (`hopsim.cli.membound_cmd.simulate_membound`: timing-only, partitioned memory,
CTA memo), each in a fresh process on one core, against the issue's targets:

    vecadd float4, 8448 CTAs of 256 threads   <= 5 s
    vecadd float4, 67584 CTAs                 <= 20 s and < 1 GB
    tmacopy f16 8192 x 16384 (256 MiB), 64x64 boxes, 128B swizzle, 4 stages, one CTA per tile
                                              <= 5 s ("a few seconds", issue 15 item 3 brief)
    softmax, 8192 rows of 1024, one warp per row   <= 5 s (issue 15 item 4;
                                              `hopsim.cli.rowwise_cmd.simulate_rowwise`)

    python3 benchmarks/bench_membound.py [--json] [--all]

--all adds the copy twins, a 2^28-float vecadd, the persistent tmacopy (264 CTAs), the softmax's
cta mapping and the rowsum's two mappings (8192 x 1024). Not a test: prints one line per case with
PASS/FAIL against its target. The simulated kernel time is printed for information only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = [  # (family, elements, vec, CPU-s target, MB target)
    ("vecadd", 8448 * 256 * 4, 4, 5.0, None),
    ("vecadd", 67584 * 256 * 4, 4, 20.0, 1024),
]
MORE = [("copy", 8448 * 256 * 4, 4, 5.0, None), ("copy", 67584 * 256 * 4, 4, 20.0, 1024),
        ("vecadd", 1 << 28, 4, None, 1024)]

CHILD = """
import json, resource, sys, time
from kernels.membound import MemParams
from hopsim.cli.membound_cmd import simulate_membound
fam, n, vec = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
p = MemParams(family=fam, n=n, vec=vec)
t = time.process_time()
r, _, _ = simulate_membound(p, mhz=1755)
print(json.dumps({"family": fam, "n": n, "vec": vec, "ctas": p.grid, "cpu_s": time.process_time() - t,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "sim_us_at_1755": r.time_ms * 1e3, "memo": r.extra.get("sm_memo")}))
"""


TMA_CASES = [  # (rows, cols, dtype, box rows, box cols, swizzle, stages, persistent CTAs, CPU-s, MB)
    (8192, 16384, "f16", 64, 64, "128B", 4, None, 5.0, 1024),
]
TMA_MORE = [(8192, 16384, "f16", 64, 64, "128B", 4, 264, None, 1024)]

TMA_CHILD = """
import json, resource, sys, time
from kernels.membound.tmacopy import TmaCopyParams
from hopsim.cli.tmacopy_cmd import simulate_tmacopy
r, c, dt, br, bc, sw, st, ctas = sys.argv[1:]
p = TmaCopyParams(rows=int(r), cols=int(c), dtype=dt, box_rows=int(br), box_cols=int(bc), swizzle=sw,
                  stages=int(st), ctas=None if ctas == "None" else int(ctas))
t = time.process_time()
res, _, _ = simulate_tmacopy(p, mhz=1755)
print(json.dumps({"family": "tmacopy", "n": p.rows * p.cols, "name": p.name, "ctas": p.num_ctas,
                  "cpu_s": time.process_time() - t,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "sim_us_at_1755": res.time_ms * 1e3, "memo": res.extra.get("sm_memo")}))
"""

ROW_CASES = [("softmax", 8192, 1024, "warp", 5.0, None)]  # (family, rows, cols, mapping, CPU-s, MB)
ROW_MORE = [("softmax", 8192, 1024, "cta", 5.0, None), ("rowsum", 8192, 1024, "warp", 5.0, None),
            ("rowsum", 8192, 1024, "cta", 5.0, None)]

ROW_CHILD = """
import json, resource, sys, time
from kernels.rowwise import RowParams
from hopsim.cli.rowwise_cmd import simulate_rowwise
fam, rows, cols, mapping = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
p = RowParams(family=fam, rows=rows, cols=cols, mapping=mapping)
t = time.process_time()
res, _, _ = simulate_rowwise(p, mhz=1755)
print(json.dumps({"family": fam, "n": rows * cols, "name": f"{p.name} {rows} x {cols}", "ctas": p.grid,
                  "cpu_s": time.process_time() - t,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "sim_us_at_1755": res.time_ms * 1e3, "memo": res.extra.get("sm_memo")}))
"""


def _child(code: str, args: list) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", code, *map(str, args)],
                         capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_case(fam: str, n: int, vec: int) -> dict:
    return _child(CHILD, [fam, n, vec])


def run_tma_case(case: tuple) -> dict:
    """One tmacopy case (TMA_CASES row without its targets)."""
    return _child(TMA_CHILD, list(case))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="one JSON object per case")
    ap.add_argument("--all", action="store_true", help="also the copy twins, a 2^28-float vecadd, the persistent tmacopy "
                    "and the other row-wise cases")
    args = ap.parse_args()
    ok = True
    runs = [(lambda c=c: run_case(*c[:3]), c[3], c[4]) for c in CASES + (MORE if args.all else [])]
    runs += [(lambda c=c: run_tma_case(c[:8]), c[8], c[9]) for c in TMA_CASES + (TMA_MORE if args.all else [])]
    runs += [(lambda c=c: _child(ROW_CHILD, list(c[:4])), c[4], c[5]) for c in ROW_CASES + (ROW_MORE if args.all else [])]
    for run, cpu_target, mb_target in runs:
        r = run()
        good = (cpu_target is None or r["cpu_s"] <= cpu_target) and (mb_target is None or r["peak_mb"] < mb_target)
        ok &= good
        r.update(cpu_target_s=cpu_target, mb_target=mb_target, passed=good)
        if args.json:
            print(json.dumps(r))
        else:
            print(f"{'PASS' if good else 'FAIL'} {r.get('name', r['family'])} {r['ctas']} CTAs: {r['cpu_s']:.2f} s CPU "
                  f"(target {cpu_target}), peak {r['peak_mb']:.0f} MB (target {mb_target}); "
                  f"simulated {r['sim_us_at_1755']:.1f} us at 1755 MHz")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
