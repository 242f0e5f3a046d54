"""The shared runner of the H100 microbenchmarks (validation/micro_*.py): CUDA sources and the
nvcc cubin cache, CuPy launch helpers, statistics. Runs on the GPU machine (numpy, cupy inside
functions, stdlib); compiling needs only nvcc.

    cubin = compile_cached("micro_wgmma")            # build/micro/micro_wgmma_<hash>.cubin
    fn = module("micro_wgmma").get_function(name)     # cupy.RawModule, loaded once
    notes = nvcc_cubin(src, out / "x.cubin")         # a standalone source into a run's directory

A cubin is cached under the hash of its source, the local headers it includes (the shared PTX
wrappers of kernels/cuda/) and the nvcc command line.
"""

from __future__ import annotations

import concurrent.futures as _cf
import hashlib
import os
import pathlib
import re
import statistics
import subprocess

import numpy as np

from validation.provenance import nvidia_smi_clocks

REPO = pathlib.Path(__file__).resolve().parents[1]
CUDA_DIR = REPO / "validation" / "cuda"
BUILD = pathlib.Path(os.environ.get("HOPSIM_MICRO_BUILD", REPO / "build" / "micro"))
#: The suite's nvcc command (the first session's sources: micro_wgmma/tma/mbarrier/mem).
NVCC = ["nvcc", "-std=c++17", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas=-v", "-lineinfo"]
#: The commands the later standalone microbenchmarks were measured with (no -lineinfo):
#: micro_tma_width and micro_wgmma_swizzle, and micro_tma_issue.
NVCC_O3 = ["nvcc", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", "-O3"]
NVCC_BARE = ["nvcc", "-std=c++17", "-cubin", "-gencode=arch=compute_90a,code=sm_90a"]
#: Sources compiled by `compile_all` (the benchmarks of `python3 -m validation.microbench`).
SOURCES = ("micro_wgmma", "micro_tma", "micro_mbarrier", "micro_mem")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


# ============================================================================ build
def _local_headers(src: pathlib.Path, seen: set | None = None) -> list[pathlib.Path]:
    """The `#include "..."` headers of `src`, recursively (sorted, each once)."""
    seen = set() if seen is None else seen
    for name in _INCLUDE.findall(src.read_text()):
        h = (src.parent / name).resolve()
        if h.is_file() and h not in seen:
            seen.add(h)
            _local_headers(h, seen)
    return sorted(seen)


def cubin_path(stem: str) -> pathlib.Path:
    """The cache path of validation/cuda/<stem>.cu's cubin."""
    src = CUDA_DIR / f"{stem}.cu"
    h = hashlib.sha256(src.read_bytes())
    for hdr in _local_headers(src):
        h.update(hdr.read_bytes())
    h.update(" ".join(NVCC).encode())
    return BUILD / f"{stem}_{h.hexdigest()[:12]}.cubin"


def compile_cached(stem: str) -> tuple[str, str]:
    """nvcc validation/cuda/<stem>.cu unless its cubin is cached: (stem, "cached" | "compiled ...")."""
    out = cubin_path(stem)
    if out.exists():
        return stem, "cached"
    BUILD.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    r = subprocess.run([*NVCC, "-o", str(tmp), str(CUDA_DIR / f"{stem}.cu")], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"nvcc failed for {stem}:\n{r.stderr[-3000:]}")
    bad = [ln for ln in (r.stdout + r.stderr).splitlines() if "C7517" in ln or "C7519" in ln or "C7510" in ln]
    tmp.replace(out)
    return stem, "compiled" + (f" ({len(bad)} wgmma serialisation notes!)" if bad else "")


def nvcc_cubin(src: pathlib.Path, cubin: pathlib.Path, flags: list[str] = NVCC) -> list[str]:
    """nvcc one standalone microbenchmark source to an sm_90a cubin with `flags`; returns ptxas'
    wgmma serialisation notes (C751x), which a record keeps."""
    r = subprocess.run([*flags, "-o", str(cubin), str(src)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"nvcc failed for {src.name}:\n{r.stderr[-3000:]}")
    return [ln for ln in (r.stdout + r.stderr).splitlines() if "C751" in ln]


def compile_all() -> None:
    """nvcc every source of SOURCES to a cubin (parallel; cached by source hash under build/micro)."""
    with _cf.ThreadPoolExecutor(max_workers=len(SOURCES)) as ex:
        for stem, how in ex.map(compile_cached, SOURCES):
            print(f"  {stem}: {how}", flush=True)


# ============================================================================ GPU helpers
def cupy():
    """The cupy module (imported on first use: only the GPU machine has it)."""
    import cupy as _cupy  # noqa: PLC0415

    return _cupy


_MODULES: dict = {}


def module(stem: str):
    """The loaded cubin of validation/cuda/<stem>.cu (compile_cached first)."""
    if stem not in _MODULES:
        _MODULES[stem] = cupy().RawModule(path=str(cubin_path(stem)))
    return _MODULES[stem]


def sync(what: str) -> None:
    """Synchronize and surface any launch error or asynchronous fault."""
    cp = cupy()
    rt = cp.cuda.runtime
    err = rt.peekAtLastError() if hasattr(rt, "peekAtLastError") else 0
    if err != 0:
        raise RuntimeError(f"{what}: CUDA error {err} ({rt.getErrorString(err)})")
    cp.cuda.Device().synchronize()


def check_flag(flag, what: str) -> None:
    """Raise if a kernel's bounded wait expired (it sets flag[0])."""
    if int(flag.get()[0]) != 0:
        raise RuntimeError(f"{what}: a bounded wait expired in the kernel (flag set)")


def rand_f16_bits(n: int, dtype: str = "f16", seed: int = 0):
    """n random 16-bit values (normal, never zero-filled) as uint16 on the GPU."""
    cp = cupy()
    x = cp.random.RandomState(seed).standard_normal(n, dtype=cp.float32)
    if dtype == "f16":
        return x.astype(cp.float16).view(cp.uint16)
    u = x.view(cp.uint32)
    return ((u + cp.uint32(0x7FFF) + ((u >> 16) & cp.uint32(1))) >> 16).astype(cp.uint16)


def smi() -> dict:
    """The clocks nvidia-smi reports now (a record's before/after provenance)."""
    return nvidia_smi_clocks()


# ============================================================================ statistics
def med(xs) -> float:
    return float(statistics.median([float(x) for x in xs]))


def spread(xs) -> dict:
    """median, p10, p90, min, max and n of xs."""
    a = np.asarray(xs, dtype=float)
    return {"median": float(np.median(a)), "p10": float(np.percentile(a, 10)),
            "p90": float(np.percentile(a, 90)), "min": float(a.min()), "max": float(a.max()), "n": int(a.size)}


def slope(xs, ys) -> float:
    """Least-squares slope of ys over xs."""
    return float(np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)[0])
