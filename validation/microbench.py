"""Microbenchmarks of one H100 SM: the numbers the timing model is calibrated from.

    python3 -m validation.microbench --out DIR [--only NAME ...]   # on the GPU machine
    python3 -m validation.microbench --list                        # anywhere: benchmark names
    python3 -m validation.microbench --compile-only                # anywhere with nvcc
    python3 -m validation.microbench --gen-wgmma                   # rewrite validation/cuda/micro_wgmma.cu
    python3 -m validation.microbench --split DIR/records.jsonl     # -> validation/records/h100/microbench__*.json

Every benchmark is a CUDA kernel in validation/cuda/micro_*.cu timed from inside the kernel with
`clock64` (SM cycles) and `%globaltimer` (ns); host events only where a kernel runs for >= 50 us.
Each benchmark runs in its own subprocess (a fault or hang in one cannot lose the others) and
appends one record `{"measures": [...], "results": {...}, "method": ..., "units": {...}}` with the
device provenance (clocks seen by nvidia-smi before and after) to DIR/records.jsonl as soon as it
is measured; `--split` turns that file into validation/records/h100/microbench__<name>.json.

This module is the command line and the orchestration; each benchmark lives in its own module
(validation/micro_wgmma.py, micro_tma.py, micro_mbarrier.py, micro_smem.py, micro_global.py,
micro_launch.py: a function returning [(record name, payload)]), the shared nvcc cache, launch
helpers and statistics in validation/micro_runner.py. The later, standalone microbenchmarks
(micro_clock, micro_tma_issue, micro_tma_width, micro_wgmma_queue, micro_wgmma_swizzle,
micro_wgmma_tma) have their own `python3 -m validation.<name>` entry points.

Names in "measures" are the H100Timing fields of hopsim/config/h100_sxm.py where one exists, and
otherwise a dotted name with the configuration in brackets, e.g.
"wgmma.latency_cycles[m64n128k16,f16,f32,SS]".

Runs on the GPU machine: numpy, cupy (inside functions), cuda-bindings, stdlib only.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import time
import traceback

from validation import micro_global, micro_launch, micro_mbarrier, micro_smem, micro_tma, micro_wgmma
from validation.micro_runner import CUDA_DIR, REPO, compile_all
from validation.power.nvml_sampler import PowerSampler
from validation.provenance import RECORDS_DIR, device_provenance, write_record


# name -> (function, timeout in s); the sum stays inside one 420-s device call.
BENCHES = {
    "wgmma": (micro_wgmma.bench_wgmma, 100),
    "wgmma_chip": (micro_wgmma.bench_wgmma_chip, 50),
    "tma_latency": (micro_tma.bench_tma, 60),
    "tma_stream": (micro_tma.bench_tma_stream, 40),
    "mbarrier": (micro_mbarrier.bench_mbarrier, 20),
    "smem": (micro_smem.bench_smem, 20),
    "global": (micro_global.bench_global, 60),
    "launch": (micro_launch.bench_launch, 20),
}


HOST_TIMED = {"launch"}  # families timed by Python launch loops: no NVML sampler thread beside them


def _run_child(name: str, out_dir: pathlib.Path) -> int:
    fn, _ = BENCHES[name]
    t0 = time.time()
    # NVML over the whole family (its windows are too short to resolve); not for host-timed
    # families (launch: Python launch loops), whose timing a sampler thread would perturb
    if name in HOST_TIMED:
        recs, power = fn(), {"skipped": "host-timed family: not sampled"}
    else:
        with PowerSampler() as ps:
            recs = fn()
        power = {**ps.summary(), "window": f"whole run of the {name} benchmark family"}
    prov = device_provenance()
    tmp = out_dir / "_records"
    for rname, payload in recs:
        payload = {**payload, "seconds": round(time.time() - t0, 1), "power_samples_summary": power}
        p = write_record("microbench", rname, payload, prov, out_dir=tmp)
        with open(out_dir / "records.jsonl", "a") as f:
            f.write(json.dumps(json.loads(p.read_text())) + "\n")
        p.unlink()
    return 0


def split(jsonl: pathlib.Path, dest: pathlib.Path | None = None) -> list[pathlib.Path]:
    """records.jsonl (from the GPU run) -> one microbench__<name>.json each under validation/records/h100."""
    dest = dest or RECORDS_DIR
    dest.mkdir(parents=True, exist_ok=True)
    paths = []
    for line in pathlib.Path(jsonl).read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        p = dest / f"microbench__{rec['name']}.json"
        p.write_text(json.dumps(rec, indent=1) + "\n")
        paths.append(p)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m validation.microbench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=pathlib.Path, help="directory for records.jsonl (GPU machine)")
    ap.add_argument("--only", nargs="*", choices=sorted(BENCHES), help="run only these benchmarks")
    ap.add_argument("--list", action="store_true", help="print the benchmark names")
    ap.add_argument("--compile-only", action="store_true", help="compile the micro_*.cu cubins and stop")
    ap.add_argument("--gen-wgmma", action="store_true", help="rewrite validation/cuda/micro_wgmma.cu")
    ap.add_argument("--split", type=pathlib.Path, help="records.jsonl -> validation/records/h100/microbench__*.json")
    ap.add_argument("--budget", type=float, default=390.0, help="seconds for the whole run (default 390)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.list:
        for k, (fn, tmo) in BENCHES.items():
            print(f"{k:12s} {tmo:4d}s  {fn.__doc__.strip().splitlines()[0]}")
        return 0
    if a.gen_wgmma:
        (CUDA_DIR / "micro_wgmma.cu").write_text(micro_wgmma.gen_source())
        return 0
    if a.split:
        for p in split(a.split):
            print(p)
        return 0
    if a.child:
        return _run_child(a.child, a.out)
    print("== compile", flush=True)
    compile_all()
    if a.compile_only:
        return 0
    if not a.out:
        ap.error("--out DIR is required to run benchmarks")
    a.out.mkdir(parents=True, exist_ok=True)
    status = {}
    t_start = time.time()
    for name in (a.only or list(BENCHES)):
        left = a.budget - (time.time() - t_start)
        if left < 10:
            status[name] = "skipped (budget)"
            continue
        tmo = min(BENCHES[name][1], left)
        print(f"== {name} (timeout {tmo}s)", flush=True)
        t0 = time.time()
        try:
            r = subprocess.run([sys.executable, "-m", "validation.microbench", "--out", str(a.out), "--child", name],
                               cwd=REPO, timeout=tmo)
            status[name] = "ok" if r.returncode == 0 else f"failed rc={r.returncode}"
        except subprocess.TimeoutExpired:
            status[name] = "timeout"
        except Exception:  # noqa: BLE001  (one benchmark must not lose the others)
            status[name] = "error: " + traceback.format_exc(limit=1)
        print(f"   {name}: {status[name]} ({time.time() - t0:.0f}s)", flush=True)
    print("== summary", json.dumps(status), flush=True)
    return 0 if all(v == "ok" for v in status.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
