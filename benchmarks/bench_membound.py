"""Speed of the memory-bound portfolio kernels (issue 15 item 4): CPU seconds and peak memory of
one simulation (`hopsim.cli.membound_cmd.simulate_membound`: timing-only, partitioned memory,
CTA memo), each in a fresh process on one core, against the issue's targets:

    vecadd float4, 8448 CTAs of 256 threads   <= 5 s
    vecadd float4, 67584 CTAs                 <= 20 s and < 1 GB

    python3 benchmarks/bench_membound.py [--json] [--all]

--all adds the copy twins and a 2^28-float vecadd. Not a test: prints one line per case with
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


def run_case(fam: str, n: int, vec: int) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", CHILD, fam, str(n), str(vec)],
                         capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="one JSON object per case")
    ap.add_argument("--all", action="store_true", help="also the copy twins and a 2^28-float vecadd")
    args = ap.parse_args()
    ok = True
    for fam, n, vec, cpu_target, mb_target in CASES + (MORE if args.all else []):
        r = run_case(fam, n, vec)
        good = (cpu_target is None or r["cpu_s"] <= cpu_target) and (mb_target is None or r["peak_mb"] < mb_target)
        ok &= good
        r.update(cpu_target_s=cpu_target, mb_target=mb_target, passed=good)
        if args.json:
            print(json.dumps(r))
        else:
            print(f"{'PASS' if good else 'FAIL'} {fam} {r['ctas']} CTAs: {r['cpu_s']:.2f} s CPU "
                  f"(target {cpu_target}), peak {r['peak_mb']:.0f} MB (target {mb_target}); "
                  f"simulated {r['sim_us_at_1755']:.1f} us at 1755 MHz")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
