"""Run the CUDA GEMM family (kernels/cuda/gemm_sm90.cu) on an sm90 GPU: compile, launch, check, time.

Pieces (each usable alone):
  compile_gemm / compile_many  nvcc -cubin for sm_90a with the -D macros of a GemmParams; cached
                               by sha256(sources + flags) under build/gemm_cubins (override with
                               HOPSIM_CUBIN_CACHE), compiled in parallel processes; the ptxas
                               resource report (registers, spills, smem) is parsed and kept.
  encode_tensor_map            CUtensorMap through cuda.bindings.driver.cuTensorMapEncodeTiled
                               (ctypes on libcuda.so.1 as a fallback), 128 opaque bytes.
  GemmKernel                   loads the cubin with CuPy, raises the dynamic smem limit (> 48 KB),
                               launches with tensor maps passed by value (__grid_constant__).
  check_gemm                   fresh random inputs (never zeros), output poisoned with NaN, every
                               element must be written, rel err ||out-ref||/||ref|| vs cupy.matmul
                               on float32 copies of the inputs.
  time_gemm / time_cublas      CUDA events around batches of launches, warm-up first, median of
                               many batches, inputs rotated over enough sets that L2 (50 MB) holds
                               nothing useful from one launch to the next.
  time_gemm_sustained /        the same launches run back to back for seconds (validation/sustained.py):
  time_cublas_sustained        steady-state time per launch, clock and power at the power cap.
Only this package imports cupy, and lazily. No simpy/pydantic here (the GPU machine lacks them).
"""

from __future__ import annotations

import concurrent.futures as _cf
import ctypes
import hashlib
import os
import pathlib
import re
import statistics
import subprocess
import time
from dataclasses import dataclass, field

import numpy as np

from kernels.params import GemmParams
from validation.power.nvml_sampler import PowerSampler
from validation.provenance import nvidia_smi_clocks
from validation.sustained import sustain_loop, sustained_summary, trajectory

REPO = pathlib.Path(__file__).resolve().parents[1]
CUDA_DIR = REPO / "kernels" / "cuda"
GEMM_SRC = CUDA_DIR / "gemm_sm90.cu"
NVCC_FLAGS = ["-std=c++17", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas=-v"]
L2_BYTES = 50 * 1024 * 1024


class HarnessError(RuntimeError):
    """A CUDA call, a compile or a check failed (message says which and why)."""


# ----------------------------------------------------------------------------- compile
def cache_dir() -> pathlib.Path:
    d = pathlib.Path(os.environ.get("HOPSIM_CUBIN_CACHE", REPO / "build" / "gemm_cubins"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _sources_digest() -> str:
    h = hashlib.sha256()
    for p in [GEMM_SRC, *sorted(CUDA_DIR.glob("*.cuh"))]:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


@dataclass
class Compiled:
    """A compiled cubin and what ptxas said about it."""

    cubin: pathlib.Path
    key: str
    registers: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    stack_bytes: int | None = None
    static_smem: int | None = None
    warnings: list[str] = field(default_factory=list)
    cached: bool = False
    seconds: float = 0.0

    def resources(self) -> dict:
        return {"registers": self.registers, "spill_stores": self.spill_stores,
                "spill_loads": self.spill_loads, "stack_bytes": self.stack_bytes,
                "static_smem_bytes": self.static_smem, "ptxas_warnings": self.warnings}


def parse_ptxas(log: str) -> dict:
    """Registers, spills, stack and static smem from `ptxas -v` output."""
    out: dict = {"warnings": [ln.strip() for ln in log.splitlines() if "warning" in ln.lower()]}
    m = re.search(r"Used (\d+) registers", log)
    out["registers"] = int(m.group(1)) if m else None
    m = re.search(r"(\d+) bytes smem", log)
    out["static_smem"] = int(m.group(1)) if m else None
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
    if m:
        out["stack_bytes"], out["spill_stores"], out["spill_loads"] = map(int, m.groups())
    return out


def compile_gemm(p: GemmParams, digest: str | None = None, extra_flags: tuple = ()) -> Compiled:
    """nvcc the family for one configuration (cache hit if sources and flags are unchanged).
    `extra_flags`: more -D macros, e.g. ("-DGEMM_PROFILE=1",) for validation/cycle_profile.py."""
    digest = digest or _sources_digest()
    flags = NVCC_FLAGS + p.nvcc_flags() + list(extra_flags)
    key = hashlib.sha256((digest + " ".join(flags)).encode()).hexdigest()[:20]
    d = cache_dir()
    cubin, logf = d / f"gemm_{key}.cubin", d / f"gemm_{key}.log"
    t0 = time.time()
    cached = cubin.exists() and logf.exists()
    if not cached:
        # log, then cubin, each written under a private name and renamed: a process that finds the
        # cubin (parallel tests, compile_many) reads a whole log, even while another compiles it too
        tmp, tmp_log = d / f".tmp_{key}_{os.getpid()}.cubin", d / f".tmp_{key}_{os.getpid()}.log"
        r = subprocess.run(["nvcc", *flags, "-o", str(tmp), str(GEMM_SRC)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise HarnessError(f"nvcc failed for {p.tag}:\n{r.stderr[-4000:]}")
        tmp_log.write_text(r.stdout + r.stderr)
        tmp_log.replace(logf)
        tmp.replace(cubin)
    info = parse_ptxas(logf.read_text())
    return Compiled(cubin=cubin, key=key, registers=info.get("registers"),
                    spill_stores=info.get("spill_stores"), spill_loads=info.get("spill_loads"),
                    stack_bytes=info.get("stack_bytes"), static_smem=info.get("static_smem"),
                    warnings=info["warnings"], cached=cached, seconds=time.time() - t0)


def _compile_one(p: GemmParams, digest: str, extra_flags: tuple = ()):
    try:
        return compile_gemm(p, digest, extra_flags)
    except Exception as e:  # noqa: BLE001  (reported per configuration)
        return e


def compile_many(params: list[GemmParams], workers: int | None = None,
                 extra_flags: list[tuple] | None = None) -> list[Compiled | Exception]:
    """Compile every configuration in parallel processes (one nvcc each); errors are returned.
    `extra_flags`: per configuration, more nvcc flags (compile_gemm's; default none), so that
    plain and profile builds (validation/gemm_profile.py) share one pool."""
    digest = _sources_digest()
    workers = workers or os.cpu_count() or 4
    flags = extra_flags if extra_flags is not None else [()] * len(params)
    with _cf.ProcessPoolExecutor(max_workers=workers) as ex:
        return list(ex.map(_compile_one, params, [digest] * len(params), flags))


# ----------------------------------------------------------------------------- tensor maps
# CUtensorMap enums (cuda.h): data type FLOAT16 = 6, FLOAT32 = 7, BFLOAT16 = 9; swizzle NONE/32B/64B/128B
# = 0..3; interleave NONE = 0; L2 promotion 256B = 3; OOB fill NONE = 0.
_DTYPE_ENUM = {"f16": 6, "f32": 7, "bf16": 9}
_SWIZZLE_ENUM = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
_L2_PROMO_256B = 3


def _encode_bindings(dtype, ptr, dims, strides, box, swizzle) -> bytes:
    from cuda.bindings import driver  # noqa: PLC0415

    err, tmap = driver.cuTensorMapEncodeTiled(
        driver.CUtensorMapDataType(_DTYPE_ENUM[dtype]), len(dims), ptr,
        [driver.cuuint64_t(x) for x in dims], [driver.cuuint64_t(x) for x in strides],
        [driver.cuuint32_t(x) for x in box], [driver.cuuint32_t(1)] * len(dims),
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle(_SWIZZLE_ENUM[swizzle]),
        driver.CUtensorMapL2promotion(_L2_PROMO_256B),
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if int(err) != 0:
        raise HarnessError(f"cuTensorMapEncodeTiled failed: {err} (dims={dims} strides={strides} box={box})")
    return ctypes.string_at(tmap.getPtr(), 128)


def _encode_ctypes(dtype, ptr, dims, strides, box, swizzle) -> bytes:
    lib = ctypes.CDLL("libcuda.so.1")
    buf = (ctypes.c_uint64 * 16)()
    r = len(dims)
    rc = lib.cuTensorMapEncodeTiled(
        buf, ctypes.c_int(_DTYPE_ENUM[dtype]), ctypes.c_uint32(r), ctypes.c_void_p(ptr),
        (ctypes.c_uint64 * r)(*dims), (ctypes.c_uint64 * (r - 1))(*strides),
        (ctypes.c_uint32 * r)(*box), (ctypes.c_uint32 * r)(*([1] * r)),
        ctypes.c_int(0), ctypes.c_int(_SWIZZLE_ENUM[swizzle]), ctypes.c_int(_L2_PROMO_256B), ctypes.c_int(0))
    if rc != 0:
        raise HarnessError(f"cuTensorMapEncodeTiled (ctypes) failed: CUresult {rc}")
    return bytes(buf)


TMAP_BACKEND = {"used": None}


def encode_tensor_map(dtype: str, ptr: int, dims: list[int], strides: list[int], box: list[int],
                      swizzle: str) -> bytes:
    """128-byte tiled tensor map; dims/box innermost first, strides in bytes (rank-1)."""
    try:
        b = _encode_bindings(dtype, ptr, dims, strides, box, swizzle)
        TMAP_BACKEND["used"] = "cuda.bindings.driver"
        return b
    except ImportError:
        TMAP_BACKEND["used"] = "ctypes libcuda.so.1"
        return _encode_ctypes(dtype, ptr, dims, strides, box, swizzle)


def gemm_tensor_maps(p: GemmParams, a, b) -> tuple[bytes, bytes]:
    """A (MxK K-major) and B (tn: NxK K-major; nn: KxN N-major) maps with the params' boxes."""
    w = p.box_width
    ta = encode_tensor_map(p.dtype, a.data.ptr, [p.k, p.m], [p.k * 2], [w, p.box_rows_a], p.swizzle)
    if p.layout == "tn":
        tb = encode_tensor_map(p.dtype, b.data.ptr, [p.k, p.n], [p.k * 2], [w, p.box_rows_b], p.swizzle)
    else:
        tb = encode_tensor_map(p.dtype, b.data.ptr, [p.n, p.k], [p.n * 2], [w, p.box_rows_b], p.swizzle)
    return ta, tb


def _as_param(tmap: bytes):
    """A one-element structured array: CuPy passes it by value (128 B, 64-B aligned struct)."""
    arr = np.zeros(1, dtype=[("opaque", "<u8", (16,))])
    arr["opaque"][0] = np.frombuffer(tmap, dtype="<u8")
    return arr


# ----------------------------------------------------------------------------- launch
def _cupy():
    import cupy  # noqa: PLC0415

    return cupy


def cp_dtype(dtype: str):
    """Storage dtype: float16, or uint16 bit patterns for bf16 (no CuPy bfloat16 needed)."""
    cp = _cupy()
    return cp.float16 if dtype == "f16" else cp.uint16


def from_f32(x32, dtype: str):
    """float32 -> f16, or -> bf16 bits (round to nearest even)."""
    cp = _cupy()
    if dtype == "f16":
        return x32.astype(cp.float16)
    u = x32.view(cp.uint32)
    return ((u + cp.uint32(0x7FFF) + ((u >> 16) & cp.uint32(1))) >> 16).astype(cp.uint16)


def to_f32(x, dtype: str):
    cp = _cupy()
    if dtype == "f16":
        return x.astype(cp.float32)
    return (x.astype(cp.uint32) << 16).view(cp.float32)


def cublas_dtype(dtype: str):
    """dtype cupy.matmul runs on, or None when this CuPy has no bfloat16."""
    cp = _cupy()
    if dtype == "f16":
        return cp.float16
    try:
        return cp.dtype("bfloat16")
    except Exception:  # noqa: BLE001  (numpy/cupy without ml_dtypes)
        return None


def check_last_error(what: str) -> None:
    """cudaPeekAtLastError + synchronize: a failed launch or a fault raises here."""
    cp = _cupy()
    rt = cp.cuda.runtime
    err = rt.peekAtLastError() if hasattr(rt, "peekAtLastError") else 0
    if err != 0:
        raise HarnessError(f"{what}: CUDA error {err} ({rt.getErrorString(err)})")
    cp.cuda.Device().synchronize()  # raises CUDARuntimeError on an asynchronous fault


class GemmKernel:
    """One compiled configuration, loaded and ready to launch on given A, B, C buffers."""

    def __init__(self, p: GemmParams, compiled: Compiled):
        cp = _cupy()
        self.p = p
        self.compiled = compiled
        self.module = cp.RawModule(path=str(compiled.cubin))
        self.fn = self.module.get_function("gemm_sm90")
        self.fn.max_dynamic_shared_size_bytes = p.dynamic_smem_bytes
        self.smem = p.dynamic_smem_bytes

    def occupancy(self) -> int | None:
        """CTAs per SM the driver would run (cuOccupancyMaxActiveBlocksPerMultiprocessor)."""
        attempts = []
        try:
            from cupy.cuda import driver as cud  # noqa: PLC0415

            attempts.append(lambda: cud.occupancyMaxActiveBlocksPerMultiprocessor(
                self.fn.ptr, self.p.threads, self.smem))
        except Exception:  # noqa: BLE001
            pass
        try:
            from cuda.bindings import driver  # noqa: PLC0415

            def _cb():
                err, n = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                    driver.CUfunction(int(self.fn.ptr)), self.p.threads, self.smem)
                if int(err) != 0:
                    raise HarnessError(str(err))
                return n
            attempts.append(_cb)
        except Exception:  # noqa: BLE001
            pass
        for a in attempts:
            try:
                return int(a())
            except Exception:  # noqa: BLE001
                continue
        return None

    def maps(self, a, b):
        ta, tb = gemm_tensor_maps(self.p, a, b)
        return _as_param(ta), _as_param(tb)

    def launch(self, maps, c) -> None:
        self.fn((self.p.grid,), (self.p.threads,), (maps[0], maps[1], c), shared_mem=self.smem)


def make_inputs(p: GemmParams, seed: int):
    """Random A, B (normal, scaled so |C| ~ 1) in the layout of p, on the GPU."""
    cp = _cupy()
    rs = cp.random.RandomState(seed)
    scale = 1.0 / (p.k ** 0.25)
    a = from_f32(rs.standard_normal((p.m, p.k), dtype=cp.float32) * scale, p.dtype)
    bshape = (p.n, p.k) if p.layout == "tn" else (p.k, p.n)
    b = from_f32(rs.standard_normal(bshape, dtype=cp.float32) * scale, p.dtype)
    return a, b


def reference(p: GemmParams, a, b):
    """C in float32 by cuBLAS on float32 copies of the (rounded) inputs."""
    cp = _cupy()
    a32, b32 = to_f32(a, p.dtype), to_f32(b, p.dtype)
    return cp.matmul(a32, b32.T if p.layout == "tn" else b32)


def check_gemm(kern: GemmKernel, seed: int = 1) -> dict:
    """Correctness on fresh random data with a NaN-poisoned output."""
    cp = _cupy()
    p = kern.p
    a, b = make_inputs(p, seed)
    c = from_f32(cp.full((p.m, p.n), cp.nan, dtype=cp.float32), p.dtype)
    kern.launch(kern.maps(a, b), c)
    check_last_error(f"launch {p.tag}")
    out = to_f32(c, p.dtype)
    unwritten = int(cp.isnan(out).sum())
    ref = reference(p, a, b)
    diff = cp.where(cp.isnan(out), 0.0, out - ref)
    rel = float(cp.linalg.norm(diff) / cp.linalg.norm(ref))
    maxabs = float(cp.abs(diff).max())
    del a, b, c, out, ref, diff
    return {"rel_err": rel, "max_abs_err": maxabs, "unwritten": unwritten,
            "correct": unwritten == 0 and rel < tolerance(p)}


def tolerance(p: GemmParams) -> float:
    """Pass bound on rel err: rounding of C to f16 (~3e-4) / bf16 (~2e-3), f16 accumulation adds."""
    if p.accum == "f16":
        return 2e-2
    return 5e-3 if p.dtype == "f16" else 2e-2


def _n_sets(bytes_per_set: int) -> int:
    return max(2, min(32, -(-3 * L2_BYTES // bytes_per_set)))


def _bench(run_one, n_sets: int, warmup: int, batches: int, per_batch: int,
           power: PowerSampler | None = None) -> tuple[list[float], str]:
    """Per-launch times (ms) of `batches` batches of `per_batch` launches each.

    The batch is captured once as a CUDA graph (so Python launch overhead, 15-30 us a call,
    does not hide kernels shorter than that) and the graph is timed with events; if capture
    fails, the launches are issued one by one on the stream. `power`, when given, samples NVML
    over the timed batches only (not the warm-up). Returns (times, method)."""
    cp = _cupy()
    for i in range(warmup):
        run_one(i % n_sets)
    check_last_error("warm-up")
    stream = cp.cuda.Stream(non_blocking=True)
    graph, method = None, "stream"
    try:
        with stream:
            stream.begin_capture()
            try:
                for j in range(per_batch):
                    run_one(j % n_sets)
            finally:
                graph = stream.end_capture()
        graph.launch(stream)
        stream.synchronize()
        method = "cuda-graph"
    except Exception:  # noqa: BLE001  (capture unsupported here: fall back)
        graph = None
        cp.cuda.Device().synchronize()
    times = []
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    j = 0
    if power is not None:
        power.start()
    with stream:
        for _ in range(batches):
            ev0.record(stream)
            if graph is not None:
                graph.launch(stream)
            else:
                for _ in range(per_batch):
                    run_one(j % n_sets)
                    j += 1
            ev1.record(stream)
            ev1.synchronize()
            times.append(cp.cuda.get_elapsed_time(ev0, ev1) / per_batch)
    if power is not None:
        power.stop()
    check_last_error("timed launches")
    return times, method


def _plan(p: GemmParams, target_s: float = 0.25) -> tuple[int, int]:
    """Batches x launches per batch: about target_s of GPU time at 600 TFLOP/s, within bounds."""
    est = p.flops / 600e12
    per_batch = max(5, min(50, int(0.01 / est) if est else 50))
    batches = max(7, min(30, int(target_s / (est * per_batch))))
    return batches, per_batch


def _set_count(p: GemmParams) -> int:
    return _n_sets((p.m * p.k + p.k * p.n + p.m * p.n) * 2)


def _kernel_sets(kern: GemmKernel, seed: int) -> tuple[list, int]:
    """n input sets (tensor maps, C, A, B) of fresh random data for the kernel: (sets, n)."""
    cp = _cupy()
    p = kern.p
    n = _set_count(p)
    sets = []
    for i in range(n):
        a, b = make_inputs(p, seed + i)
        c = cp.empty((p.m, p.n), dtype=cp_dtype(p.dtype))
        sets.append((kern.maps(a, b), c, a, b))
    return sets, n


def _cublas_sets(p: GemmParams, dt, seed: int) -> tuple[list, int]:
    """n input sets (A, B or B^T view, C) in cuBLAS's dtype dt: (sets, n)."""
    cp = _cupy()
    n = _set_count(p)
    sets = []
    for i in range(n):
        a, b = make_inputs(p, seed + i)
        a, b = a.view(dt), b.view(dt)
        bb = b.T if p.layout == "tn" else b
        sets.append((a, bb, cp.empty((p.m, p.n), dtype=dt)))
    return sets, n


def time_gemm(kern: GemmKernel, warmup: int = 5, seed: int = 7) -> dict:
    """Median time of one launch (ms), with inputs rotated over n sets and SM clock around it."""
    p = kern.p
    sets, n = _kernel_sets(kern, seed)
    batches, per_batch = _plan(p)
    clk0 = nvidia_smi_clocks()
    ps = PowerSampler()
    times, method = _bench(lambda i: kern.launch(sets[i][0], sets[i][1]), n, warmup, batches, per_batch, ps)
    clk1 = nvidia_smi_clocks()
    del sets
    return {**_summary(times, p, n, per_batch, clk0, clk1), "timing_method": method,
            "power_samples_summary": ps.summary(launches=batches * per_batch)}


def time_cublas(p: GemmParams, warmup: int = 5, seed: int = 7) -> dict:
    """cupy.matmul (cuBLAS) on the same shapes, layout and dtype, timed the same way.

    cuBLAS computes f16 GEMMs with f32 accumulation (CUBLAS_COMPUTE_32F); None when the dtype
    is not available in this CuPy."""
    cp = _cupy()
    dt = cublas_dtype(p.dtype)
    if dt is None:
        return None
    sets, n = _cublas_sets(p, dt, seed)
    batches, per_batch = _plan(p)
    clk0 = nvidia_smi_clocks()
    ps = PowerSampler()
    times, method = _bench(lambda i: cp.matmul(sets[i][0], sets[i][1], out=sets[i][2]), n, warmup,
                           batches, per_batch, ps)
    clk1 = nvidia_smi_clocks()
    del sets
    return {**_summary(times, p, n, per_batch, clk0, clk1), "timing_method": method,
            "power_samples_summary": ps.summary(launches=batches * per_batch)}


def _summary(times, p, n_sets, per_batch, clk0, clk1) -> dict:
    med = statistics.median(times)
    return {"time_ms": med, "tflops": p.flops / (med * 1e-3) / 1e12,
            "time_ms_min": min(times), "time_ms_max": max(times), "batches": len(times),
            "launches_per_batch": per_batch, "input_sets": n_sets,
            "time_ms_spread_pct": 100.0 * (max(times) - min(times)) / med,
            "sm_clock_mhz_before": clk0.get("sm_clock_mhz"), "sm_clock_mhz_after": clk1.get("sm_clock_mhz"),
            "power_w_after": clk1.get("power_w")}


# ----------------------------------------------------------------------------- sustained
def _sustained(run_one, p: GemmParams, n_sets: int, seconds: float, steady_s: float,
               warmup: int) -> dict:
    """sustain_loop + sustained_summary with the NVML sampler over the whole window, nvidia-smi
    clocks read before and after; `samples` holds the raw sampler columns (the caller may move
    them to a side file)."""
    if not 0 < steady_s < seconds:
        raise HarnessError(f"sustained timing: steady_s {steady_s} must be > 0 and < seconds {seconds}")
    clk0 = nvidia_smi_clocks()
    ps = PowerSampler()
    loop = sustain_loop(run_one, n_sets, seconds, warmup, ps)
    clk1 = nvidia_smi_clocks()
    check_last_error("sustained launches")
    ends, ms, per_batch = loop["batch_end_s"], loop["batch_ms"], loop["per_batch"]
    out = sustained_summary(ends, ms, per_batch, steady_s, ps.samples, p.flops)
    out.update({"timing_mode": "sustained", "timing_method": loop["method"], "sustain_s": seconds,
                "input_sets": n_sets, "est_launch_ms_warmup": loop["est_launch_ms"],
                "sm_clock_mhz_before": clk0.get("sm_clock_mhz"),
                "sm_clock_mhz_after": clk1.get("sm_clock_mhz"), "power_w_after": clk1.get("power_w"),
                "power_samples_summary": ps.summary(launches=len(ms) * per_batch),
                "trajectory": {**trajectory(ends, ms, loop["t_start"]),
                               "origin": "NVML sampler start (the samples' t_s share it)"},
                "samples": ps.trajectory()})
    return out


def time_gemm_sustained(kern: GemmKernel, seconds: float = 3.0, steady_s: float = 1.5,
                        warmup: int = 5, seed: int = 7) -> dict:
    """The kernel in CUDA-graph batches back to back for `seconds` (inputs rotated as time_gemm
    does); statistics over the last `steady_s` (validation/sustained.py)."""
    sets, n = _kernel_sets(kern, seed)
    try:
        return _sustained(lambda j: kern.launch(sets[j % n][0], sets[j % n][1]), kern.p, n,
                          seconds, steady_s, warmup)
    finally:
        del sets


def time_cublas_sustained(p: GemmParams, seconds: float = 3.0, steady_s: float = 1.5,
                          warmup: int = 5, seed: int = 7) -> dict | None:
    """cupy.matmul (cuBLAS, f32 compute) on the same shape, layout and dtype, run like
    time_gemm_sustained; None when this CuPy has no such dtype."""
    cp = _cupy()
    dt = cublas_dtype(p.dtype)
    if dt is None:
        return None
    sets, n = _cublas_sets(p, dt, seed)
    try:
        return _sustained(lambda j: cp.matmul(sets[j % n][0], sets[j % n][1], out=sets[j % n][2]),
                          p, n, seconds, steady_s, warmup)
    finally:
        del sets
