"""A GEMM's operands in the simulator's global memory: random f16/bf16 A and B, C, the tensor maps
and the launch of a `kernels.gemm.GemmKernel`, and the result and its float64 reference.

    from kernels.params import GemmParams
    from kernels.gemm import build_gemm
    from hopsim.gemm_setup import setup_gemm, read_result, reference
    gk = build_gemm(p)
    gmem, launch, a, b = setup_gemm(p, gk, seed=0, values=True)
    # run gk.kernel with hopsim.functional.runner.run_kernel or hopsim.timing.runner.simulate
    c = read_result(gmem, p);  ref = reference(a, b, p)

numpy has no bf16: bf16 operands and results are float32 arrays holding exactly the bf16 values
(global memory holds the bf16 bit patterns). The tensor maps are kernels.gemm.tensor_maps, the
encoding validation/harness.py gives the .cu.
"""

from __future__ import annotations

import numpy as np

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from isa.dtypes import bf16_bits_to_f32, f32_to_bf16_bits
from kernels.gemm import GemmKernel, build_gemm, tensor_maps
from kernels.params import GemmParams


def _random(shape, dtype: str, rng) -> tuple[np.ndarray, np.ndarray]:
    """(stored array for global memory, its values as f16 / exact-f32 for bf16)."""
    x = rng.standard_normal(shape).astype(np.float32)
    if dtype == "f16":
        h = x.astype(np.float16)
        return h, h
    bits = f32_to_bf16_bits(x)
    return bits, bf16_bits_to_f32(bits)


def setup_gemm(params: GemmParams, gk: GemmKernel | None = None, seed: int = 0, values: bool = True):
    """(gmem, launch, a, b): a GlobalMemory with A (MxK), B (NxK for tn, KxN for nn) and C (MxN),
    random f16/bf16 values when `values` (zeros otherwise, allocated lazily), the tensor maps
    registered as the kernel's `tma_a`/`tma_b`; launch = the `Launch` of `gk`. a and b are the
    operand values (np.float16, or np.float32 holding the exact bf16 values)."""
    p = params
    gk = gk if gk is not None else build_gemm(p)
    bshape = (p.n, p.k) if p.layout == "tn" else (p.k, p.n)
    g = GlobalMemory()
    if values:
        rng = np.random.default_rng(seed)
        sa, a = _random((p.m, p.k), p.dtype, rng)
        sb, b = _random(bshape, p.dtype, rng)
        aa, ab = g.alloc("A", sa), g.alloc("B", sb)
    else:
        vt = np.float16 if p.dtype == "f16" else np.float32  # no data: zero-stride views
        a, b = np.broadcast_to(vt(0), (p.m, p.k)), np.broadcast_to(vt(0), bshape)
        aa, ab = g.reserve("A", p.m * p.k * 2), g.reserve("B", p.n * p.k * 2)
    ac = g.alloc("C", p.m * p.n * 2) if values else g.reserve("C", p.m * p.n * 2)
    ta, tb = tensor_maps(p, aa, ab)
    ha, hb = g.register_tensor_map("tma_a", ta), g.register_tensor_map("tma_b", tb)
    launch = Launch(grid=gk.grid, block=gk.block, dynamic_smem=gk.dynamic_smem,
                    params={"tma_a": ha, "tma_b": hb, "C": ac})
    return g, launch, a, b


def read_result(gmem, params: GemmParams) -> np.ndarray:
    """C (M x N, row-major) from global memory: np.float16, or np.float32 of the bf16 values."""
    p = params
    if p.dtype == "f16":
        return gmem.view("C", np.float16).reshape(p.m, p.n).copy()
    return bf16_bits_to_f32(gmem.view("C", np.uint16).reshape(p.m, p.n))


def reference(a, b, params: GemmParams) -> np.ndarray:
    """The float64 product with the params' layouts: tn C = A B^T (B is NxK), nn C = A B (KxN)."""
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a64 @ (b64.T if params.layout == "tn" else b64)
