"""TMA issue cost of an unrolled box sequence, as a GEMM's producer issues a stage (record
microbench__tma_issue).

    python3 -m validation.micro_tma_issue --out DIR      # GPU machine

Why: `tma_issue_cycles` (the issuing thread's time per box) was calibrated from
microbench__tma_latency, whose issue loop is a run-time loop with address arithmetic per box. A
GEMM's `load_stage` issues a stage's boxes (2 with box rows 128, 32 with box rows 8) fully
unrolled with constant offsets, from one thread (`warp-specialized`) or from a whole warp with
the copy predicated on lane 0 (`single`).

Method (validation/cuda/micro_tma_issue.cu): one CTA; per round thread 0 reads clock64 (t0),
arrives with expect_tx for K boxes, issues K boxes {64 f16, R rows} (128B swizzle, 1 MiB
L2-resident tensor; rows j x R of a block that moves each round) unrolled at compile time,
reads clock64 (t1), waits on the mbarrier and reads clock64 (t2). Mode `t`: thread 0 alone;
`w`: the whole warp runs the sequence, the copies predicated on lane 0; `c`: thread 0 alone,
the copies unpredicated (a compile-time true predicate, as the warp-specialized producer); `e`:
the whole warp, the copies predicated on the lane elected by `elect.sync`. 64 timed rounds after 4
untimed, median of 3 launches: issue_cycles = mean(t1 - t0), round_cycles = mean(t2 - t0);
per_box_cycles = slope of issue_cycles over K.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys

import numpy as np

from validation.harness import _as_param, encode_tensor_map
from validation.micro_runner import NVCC_BARE, nvcc_cubin
from validation.provenance import device_provenance, write_record

HERE = pathlib.Path(__file__).resolve().parent
SRC = HERE / "cuda" / "micro_tma_issue.cu"
KS = (1, 2, 4, 8, 16, 32)


def run(out: pathlib.Path, iters: int = 64, reps: int = 3) -> pathlib.Path:
    import cupy as cp


    out.mkdir(parents=True, exist_ok=True)
    cubin = out / "micro_tma_issue.cubin"
    nvcc_cubin(SRC, cubin, NVCC_BARE)
    mod = cp.RawModule(path=str(cubin))
    rows = 8192
    buf = cp.random.randint(0, 2 ** 15, size=rows * 64, dtype=cp.int32).astype(cp.uint16)
    flag = cp.zeros(1, dtype=cp.int32)
    results: dict = {}
    for r in (8, 64, 128):
        tmap = _as_param(encode_tensor_map("f16", buf.data.ptr, [64, rows], [128], [64, r], "128B"))
        for mode in ("t", "w", "c", "e"):
            per_k = {}
            for k in KS:
                smem = 1024 + k * 128 * r
                if smem > 200 * 1024:
                    continue
                fn = mod.get_function(f"tma_issue_k{k}_{mode}")
                fn.max_dynamic_shared_size_bytes = smem
                iss, rnd = [], []
                for _ in range(reps):
                    times = cp.zeros(2, dtype=cp.int64)
                    fn((1,), (32,), (tmap, np.int32(rows - 1), np.int32(r), np.int32(iters), times, flag),
                       shared_mem=smem)
                    cp.cuda.Device().synchronize()
                    if int(flag.get()[0]):
                        raise RuntimeError(f"tma_issue timed out (R {r} K {k} {mode})")
                    t = cp.asnumpy(times)
                    iss.append(float(t[0]) / iters)
                    rnd.append(float(t[1]) / iters)
                per_k[k] = {"issue_cycles": statistics.median(iss), "round_cycles": statistics.median(rnd)}
                print(f"  R{r} {mode} K{k}: issue {per_k[k]['issue_cycles']:7.1f}  round {per_k[k]['round_cycles']:7.1f}",
                      flush=True)
            ks = sorted(per_k)
            slope = float(np.polyfit(ks, [per_k[k]["issue_cycles"] for k in ks], 1)[0])
            results[f"R{r},{ {'t': 'thread', 'w': 'warp_lane0', 'c': 'thread_unpredicated', 'e': 'warp_elect'}[mode] }"] = {"by_k": per_k, "per_box_cycles": slope}
            print(f"  R{r} {mode}: {slope:.1f} cycles per box", flush=True)
    payload = {
        "measures": ["H100Timing.tma_issue_cycles in an unrolled sequence (thread / whole warp, lane 0 predicated)"],
        "results": results,
        "method": __doc__.split("Method ", 1)[1].strip(),
        "units": {"issue_cycles": "SM cycles per round (t1 - t0)", "round_cycles": "SM cycles per round (t2 - t0)",
                  "per_box_cycles": "SM cycles per box (slope over K)"},
    }
    return write_record("microbench", "tma_issue", payload, device_provenance(), out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=pathlib.Path, required=True)
    print(run(ap.parse_args(argv).out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
