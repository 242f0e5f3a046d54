"""SASS of the CUDA twins as data (issue 14 item 2: "An IR instruction costs what ptxas makes of
it: commit the SASS of the CUDA twins (cuobjdump/nvdisasm) as data").

    python3 -m validation.sass_dump --out $OUT/sass        # on a machine with nvcc + cuobjdump

Compiles the GEMM twin (kernels/cuda/gemm_sm90.cu) for a fixed list of configurations that span
the knobs whose issue path differs (variant single/ws1/ws2, TMA issuer lane/elect, box rows 128/64/8,
epilogue direct/stmatrix, f16/bf16 inputs, f16/f32 accumulators, swizzles), plus the memory-bound
twins (kernels/cuda/vecadd.cu, copy.cu) and every other kernels/cuda/*.cu, with the project's nvcc
flags (validation/harness.py), and the microbenchmarks whose records time the issue paths
(`MICRO`: micro_tma_issue, micro_wgmma_queue, micro_mbarrier, each with the nvcc command its record
was measured with), then disassembles each cubin with `cuobjdump -sass` and writes one
tar.gz (sass.tar.gz: <tag>.sass per configuration, index.json with the defines, ptxas register/
spill facts and the tool versions). Pure standard library + nvcc/cuobjdump: no GPU needed, no
hopsim import (validation layer).
"""

from __future__ import annotations

import argparse
import io
import json
import pathlib
import subprocess
import sys
import tarfile
import time

from kernels.params import GemmParams
from validation.harness import NVCC_FLAGS, compile_gemm
from validation.micro_runner import NVCC, NVCC_BARE

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: (tag, GemmParams kwargs): each knob moved away from one base, one at a time
BASE = dict(m=4096, n=4096, k=4096)
CONFIGS = (
    ("single_s4", dict(variant="single", stages=4)),
    ("single_s4_elect", dict(variant="single", stages=4, tma_issuer="elect")),
    ("single_s4_box8", dict(variant="single", stages=4, box_rows=8)),
    ("single_s4_box8_elect", dict(variant="single", stages=4, box_rows=8, tma_issuer="elect")),
    ("ws1_s4", dict(variant="ws", consumers=1, stages=4)),
    ("ws1_s4_elect", dict(variant="ws", consumers=1, stages=4, tma_issuer="elect")),
    ("ws1_s4_box64", dict(variant="ws", consumers=1, stages=4, box_rows=64)),
    ("ws1_s4_box8", dict(variant="ws", consumers=1, stages=4, box_rows=8)),
    ("ws1_s4_box8_elect", dict(variant="ws", consumers=1, stages=4, box_rows=8, tma_issuer="elect")),
    ("ws2_s4_128x256_stmatrix", dict(variant="ws", consumers=2, stages=4, bn=256, epilogue="stmatrix")),
    ("ws2_s4_128x256_direct", dict(variant="ws", consumers=2, stages=4, bn=256, epilogue="direct")),
    ("ws1_s4_bf16", dict(variant="ws", consumers=1, stages=4, dtype="bf16")),
    ("ws1_s4_f16acc", dict(variant="ws", consumers=1, stages=4, accum="f16")),
    ("ws1_s4_sw64", dict(variant="ws", consumers=1, stages=4, swizzle="64B")),
    ("ws1_s4_sw32", dict(variant="ws", consumers=1, stages=4, swizzle="32B")),
    ("single_s2_64x128", dict(variant="single", stages=2, bm=64)),
)

#: (microbenchmark source under validation/cuda, the nvcc command its record was measured with):
#: the per-SASS-instruction issue costs are these records' cycles over these kernels' instructions
MICRO = (
    ("micro_tma_issue.cu", NVCC_BARE),      # microbench__tma_issue (validation/micro_tma_issue.py)
    ("micro_wgmma_queue.cu", NVCC),         # microbench__wgmma_queue (validation/micro_wgmma_queue.py)
    ("micro_mbarrier.cu", NVCC),            # microbench__mbarrier (validation/microbench.py)
    ("micro_tma.cu", NVCC),                 # microbench__tma_latency (validation/microbench.py)
)


def _run(cmd: list[str]) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:2])} failed: {r.stderr[-2000:]}")
    return r.stdout


def _add(tar: tarfile.TarFile, name: str, text: str) -> None:
    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size, info.mtime = len(data), int(time.time())
    tar.addfile(info, io.BytesIO(data))


def gemm_params(kw: dict) -> GemmParams:
    return GemmParams.from_dict({**BASE, **kw})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m validation.sass_dump", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=pathlib.Path, required=True, help="output folder (created)")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    index = {"tools": {"nvcc": _run(["nvcc", "--version"]).strip().splitlines()[-1],
                       "cuobjdump": _run(["cuobjdump", "--version"]).strip().splitlines()[-1]},
             "nvcc_flags": NVCC_FLAGS, "kernels": {}}
    with tarfile.open(a.out / "sass.tar.gz", "w:gz") as tar:
        for tag, kw in CONFIGS:
            try:
                p = gemm_params(kw)
                c = compile_gemm(p)
                sass = _run(["cuobjdump", "-sass", str(c.cubin)])
                _add(tar, f"gemm_{tag}.sass", sass)
                index["kernels"][f"gemm_{tag}"] = {"params": p.to_dict() if hasattr(p, "to_dict") else kw,
                                                   "defines": p.cuda_defines(), "registers": c.registers,
                                                   "spill_stores": c.spill_stores, "spill_loads": c.spill_loads}
                print(f"gemm_{tag}: {len(sass.splitlines())} lines, {c.registers} registers", flush=True)
            except Exception as exc:  # noqa: BLE001  (recorded per configuration)
                index["kernels"][f"gemm_{tag}"] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
                print(f"gemm_{tag}: ERROR {exc}"[:300], flush=True)
        for src in sorted((ROOT / "kernels" / "cuda").glob("*.cu")):
            if src.name == "gemm_sm90.cu":
                continue
            cubin = a.out / f"{src.stem}.cubin"
            try:
                _run(["nvcc", *NVCC_FLAGS, "-o", str(cubin), str(src)])
                sass = _run(["cuobjdump", "-sass", str(cubin)])
                _add(tar, f"{src.stem}.sass", sass)
                index["kernels"][src.stem] = {"source": src.relative_to(ROOT).as_posix()}
                print(f"{src.stem}: {len(sass.splitlines())} lines", flush=True)
            except Exception as exc:  # noqa: BLE001
                index["kernels"][src.stem] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
                print(f"{src.stem}: ERROR {exc}"[:300], flush=True)
            finally:
                cubin.unlink(missing_ok=True)
        for name, cmd in MICRO:
            src, stem = ROOT / "validation" / "cuda" / name, name.removesuffix(".cu")
            cubin = a.out / f"{stem}.cubin"
            try:
                _run([*cmd, "-o", str(cubin), str(src)])
                sass = _run(["cuobjdump", "-sass", str(cubin)])
                _add(tar, f"{stem}.sass", sass)
                index["kernels"][stem] = {"source": src.relative_to(ROOT).as_posix(), "nvcc": cmd[1:]}
                print(f"{stem}: {len(sass.splitlines())} lines", flush=True)
            except Exception as exc:  # noqa: BLE001
                index["kernels"][stem] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
                print(f"{stem}: ERROR {exc}"[:300], flush=True)
            finally:
                cubin.unlink(missing_ok=True)
        _add(tar, "index.json", json.dumps(index, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
