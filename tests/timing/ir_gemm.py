"""A grid version of the functional helper's warp-specialised GEMM (tests/functional/_gemm_kernel.py),
for the timed tests and benchmarks until kernels/ ships the IR GEMM family."""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "functional"))

from _gemm_kernel import tensor_map, ws_gemm_text  # noqa: E402


def grid_ws_gemm_text(stages: int = 4) -> str:
    """The warp-specialised 128x128x64 GEMM of tests/functional/_gemm_kernel.py (producer warp,
    2 consumer warpgroups, 4 stages), patched for a grid: the A box row = 128 * %ctaid.y, the B box
    row = 128 * %ctaid.x, and each CTA writes its own 64 KB slab of D. (Until kernels/ ships the IR
    GEMM family.)"""
    from _gemm_kernel import ws_gemm_text
    t = ws_gemm_text(stages)
    patches = [
        ("    mov.u32 %r8, 0;\n", "    mov.u32 %r8, %ctaid.y;\n    shl.b32 %r8, %r8, 7;\n"
                                "    mov.u32 %r17, %ctaid.x;\n    shl.b32 %r17, %r17, 7;\n"),
        ("[tmB, {%r13, %r8}]", "[tmB, {%r13, %r17}]"),
        ("    ld.param.u64 %rd20, [D];\n", "    ld.param.u64 %rd20, [D];\n    mov.u32 %r26, %ctaid.y;\n"
                                          "    mov.u32 %r27, %nctaid.x;\n    mov.u32 %r28, %ctaid.x;\n"
                                          "    mad.lo.u32 %r26, %r26, %r27, %r28;\n"
                                          "    mul.wide.u32 %rd22, %r26, 65536;\n    add.u64 %rd20, %rd20, %rd22;\n"),
    ]
    for old, new in patches:
        assert t.count(old) == 1, old
        t = t.replace(old, new)
    return t


def grid_setup(m: int, n: int, k: int, seed: int = 0, values: bool = True):
    """(gmem, params, a, b) for grid_ws_gemm_text: A[m,k], B[n,k] f16; D = per-CTA 128x128 f32 slabs."""
    from hopsim.functional.gmem import GlobalMemory
    rng = np.random.default_rng(seed)
    if values:
        a = rng.standard_normal((m, k)).astype(np.float16)
        b = rng.standard_normal((n, k)).astype(np.float16)
    else:
        a, b = np.zeros((m, k), np.float16), np.zeros((n, k), np.float16)
    g = GlobalMemory()
    aa, ab = g.alloc("A", a), g.alloc("B", b)
    ad = g.alloc("D", m * n * 4)
    ha = g.register_tensor_map("tmA", tensor_map(aa, m, k, box_rows=128))
    hb = g.register_tensor_map("tmB", tensor_map(ab, n, k, box_rows=128))
    return g, {"tmA": ha, "tmB": hb, "D": ad, "KT": k // 64}, a, b


def grid_result(g, m: int, n: int) -> np.ndarray:
    """D as an m x n matrix from the per-CTA slabs (CTA (x, y) holds rows 128y.., cols 128x..)."""
    slabs = g.view("D", np.float32).reshape(m // 128, n // 128, 128, 128)
    return slabs.transpose(0, 2, 1, 3).reshape(m, n)
