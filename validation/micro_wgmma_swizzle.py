"""wgmma throughput against operand swizzle (validation/cuda/micro_wgmma_swizzle.cu) on the H100.

    python3 -m validation.micro_wgmma_swizzle --out DIR      # GPU machine: writes the record

Measures `H100Timing` wgmma operand-fetch cost per swizzle: cycles per GEMM-like k-tile (4 x
m64nNk16 with K advancing 32 B, wait_group 1 between k-tiles) for N in {64, 128, 256}, swizzle span
32/64/128 B, B K-major (tn) or MN-major (nn), with one warpgroup alone and two warpgroups sharing
the SM's tensor cores (as the 2-consumer GEMM does). One CTA on one SM; median over 5 launches.
Record: microbench__wgmma_swizzle.json, results[name] = cycles per k-tile per warpgroup, with
`ideal` = 2N (one warpgroup at 4096 FLOP/cycle) and 4N (two sharing it).
Runs on the GPU machine (numpy, cupy, stdlib only).
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys

from validation.micro_runner import NVCC_O3, nvcc_cubin
from validation.provenance import device_provenance, write_record

HERE = pathlib.Path(__file__).resolve().parent
SRC = HERE / "cuda" / "micro_wgmma_swizzle.cu"
KERNELS = [(n, sp, "tn") for n in (64, 128, 256) for sp in (32, 64, 128)] + \
          [(128, sp, "nn") for sp in (32, 64, 128)]


def run(out: pathlib.Path, iters: int = 400, warm: int = 40) -> pathlib.Path:
    import cupy as cp


    cubin = out / "micro_wgmma_swizzle.cubin"
    out.mkdir(parents=True, exist_ok=True)
    nvcc_cubin(SRC, cubin, NVCC_O3)
    mod = cp.RawModule(path=str(cubin))
    results, raw = {}, {}
    for n, sp, lay in KERNELS:
        fn = mod.get_function(f"wgmma_sw_n{n}_sp{sp}_{lay}")
        smem = n * 128 + 2 * 8192 + 1024
        fn.max_dynamic_shared_size_bytes = smem
        for wgs in (1, 2):
            per = []
            for _ in range(5):
                times = cp.zeros(2 * wgs, dtype=cp.uint64)
                sink = cp.zeros(256, dtype=cp.float32)
                fn((1,), (128 * wgs,), (times, sink, cp.int32(iters), cp.int32(warm)), shared_mem=smem)
                cp.cuda.Device().synchronize()
                t = cp.asnumpy(times).astype("int64").reshape(wgs, 2)
                per.append(float(max(t[:, 1] - t[:, 0])) / iters)
            name = f"n{n}_sp{sp}_{lay}_wg{wgs}"
            results[name] = statistics.median(per)
            raw[name] = per
            print(f"{name}: {results[name]:.1f} cycles/k-tile (ideal {2 * n * wgs})", flush=True)
    payload = {
        "measures": ["H100Timing.wgmma_swizzle_cycles (cycles per k-tile vs swizzle span)"],
        "results": results, "raw": raw,
        "ideal": {f"n{n}_sp{sp}_{lay}_wg{w}": 2 * n * w for n, sp, lay in KERNELS for w in (1, 2)},
        "method": f"1 CTA, {iters} timed k-tiles after {warm} warm-up, clock64 per warpgroup, "
                  "median of 5 launches; k-tile = fence, 4 x m64nNk16, commit, wait_group 1",
        "units": "cycles per k-tile per warpgroup",
    }
    return write_record("microbench", "wgmma_swizzle", payload, device_provenance(), out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=pathlib.Path, required=True)
    args = ap.parse_args(argv)
    print(run(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
