"""The attention tile's arithmetic replayed in numpy, value for value: the expected bits of O.

The kernel (kernels/attention/kernel.py + softmax.py; the CUDA twin kernels/cuda/attention.cu) is
a fixed sequence of roundings. Replayed here on whole matrices (rows at once, not per thread) with
the semantics the PTX ISA states and the model's documented choices where the ISA leaves freedom:

  S = Q K^T       d/16 wgmma k-steps; each forms its 16-term dot product plus the accumulator in
                  float64 and rounds once to f32 (hopsim/functional/wgmma.py's stated model; the
                  hardware's adder order is undocumented); the first k-step has scale-d 0
  row max         exact (max does not round), over the thread's values, the quad, and m
  nm              f32(m_new * f32(-c));  alpha = ex2(fma(m, c, nm));  P = ex2(fma(S, c, nm))
  fma.rn.f32      one rounding of the exact a*b + c (PTX ISA, fma): round-to-odd in float64, then
                  to f32 (53 >= 24 + 2 bits: the double rounding is exact), written here independently
  ex2.approx.f32  numpy's float32 exp2 (the model's stated choice: the ISA allows 2 ulp)
  row sum         each quad lane q holds columns 8 v2 + 2 q + {0, 1}: it adds its P values in f32, in
                  column order, then l_q = fma(l_q, alpha, rs_q); at the end (l_0 + l_1) + (l_2 + l_3)
  O               O = f32(O * alpha); P rounded to f16 (cvt.rn.f16x2.f32); kvb/16 wgmma k-steps as
                  above (scale-d 1); finally O = f32(O * rcp(l)), rcp = f32(1 / l) (correctly rounded,
                  the model's stated choice: the ISA allows 1 ulp)
  out f16         O rounded to f16 (cvt.rn.f16x2.f32)

So the IR kernel's O through the simulated shared memory (TMA, swizzle, descriptors, fragment
layouts, shuffles, packing) must equal `emulate` bit for bit: any layout or ordering slip shows as
a difference, not as an error inside a bound. On the H100, ex2/rcp.approx and the tensor cores'
adders may differ from these choices (the bound of reference.py covers that).
"""

from __future__ import annotations

import math

import numpy as np

from kernels.attention.params import AttnParams

LOG2E = math.log2(math.e)
WGMMA_K = 16


def fma_f32(a, b, c) -> np.ndarray:
    """Correctly rounded f32 fma of f32 arrays: a*b is exact in float64; s = fl64(a*b + c) and its
    TwoSum error e; s is made round-to-odd (if inexact and its last bit is even, step one ulp
    toward e), then rounded to f32. Non-finite operands take the float64 result as is."""
    a, b, c = (np.asarray(x, np.float32).astype(np.float64) for x in (a, b, c))
    p = a * b
    with np.errstate(invalid="ignore", over="ignore"):
        s = p + c
        bb = s - p
        e = (p - (s - bb)) + (c - bb)
    bits = s.view(np.int64)
    fix = np.isfinite(s) & (e != 0) & ((bits & 1) == 0)
    s = np.where(fix, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
    return s.astype(np.float32)


def _mma_steps(a: np.ndarray, b: np.ndarray, acc: np.ndarray | None) -> np.ndarray:
    """k16 steps of acc += a @ b: each step's 16-term sum plus acc in float64, rounded once to f32
    (acc None: scale-d 0 on the first step)."""
    for kk in range(a.shape[1] // WGMMA_K):
        x = np.dot(a[:, WGMMA_K * kk:WGMMA_K * (kk + 1)].astype(np.float64),
                   b[WGMMA_K * kk:WGMMA_K * (kk + 1)].astype(np.float64))
        if acc is not None:
            x += acc
        acc = x.astype(np.float32)
    return acc


def _quad_columns(kvb: int) -> list[np.ndarray]:
    """Columns of a KV block held by quad lane q: 8 v2 + 2 q + v0, in the order the lane adds them."""
    return [np.array([8 * v2 + 2 * q + v0 for v2 in range(kvb // 8) for v0 in range(2)]) for q in range(4)]


def emulate(q, k, v, p: AttnParams) -> np.ndarray:
    """O of the kernel (float32; out f16: the f16 values as float32), from f16 Q, K, V; one 64-row
    Q tile at a time (a CTA: the wgmma's M)."""
    q, k, v = (np.asarray(x, np.float16).astype(np.float32) for x in (q, k, v))
    return np.concatenate([_tile(q[r:r + 64], k, v, p) for r in range(0, q.shape[0], 64)])


def _tile(q: np.ndarray, k: np.ndarray, v: np.ndarray, p: AttnParams) -> np.ndarray:
    c = np.float32(p.softmax_scale * LOG2E)
    rows, kvb = q.shape[0], p.kv_block
    cols = _quad_columns(kvb)
    o = np.zeros((rows, p.head_dim), np.float32)
    m = np.full((rows, 1), -np.inf, np.float32)
    lq = np.zeros((rows, 4), np.float32)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for j in range(p.n_blocks):
            kb, vb = k[kvb * j:kvb * (j + 1)], v[kvb * j:kvb * (j + 1)]
            s = _mma_steps(q, kb.T, None)
            mx = np.maximum(m, s.max(axis=1, keepdims=True))
            nm = (mx * np.float32(-c)).astype(np.float32)
            alpha = np.exp2(fma_f32(m, c, nm))
            m = mx
            pw = np.exp2(fma_f32(s, c, nm))
            for qi, cq in enumerate(cols):
                rs = pw[:, cq[0]].copy()
                for col in cq[1:]:
                    rs = (rs + pw[:, col]).astype(np.float32)
                lq[:, qi] = fma_f32(lq[:, qi], alpha[:, 0], rs)
            o = (o * alpha).astype(np.float32)
            o = _mma_steps(pw.astype(np.float16).astype(np.float32), vb, o)
        l = ((lq[:, 0] + lq[:, 1]).astype(np.float32) + (lq[:, 2] + lq[:, 3]).astype(np.float32)).astype(np.float32)
        inv = (np.float32(1) / l).astype(np.float32)
        o = (o * inv[:, None]).astype(np.float32)
    return o.astype(np.float16).astype(np.float32) if p.out == "f16" else o
