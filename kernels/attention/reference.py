"""The attention tile's numpy reference and its error bound (pure numpy, or cupy through `xp`):
shared by the simulator's check (hopsim/attention.py, `hopsim simulate attention`) and the H100
check of the CUDA twin (validation/portfolio_attention.py, kernels/cuda/attention.cu).

The reference is float64 softmax(Q K^T scale) V of the exact f16 inputs. The bound (per element,
a bound from the documented error of each step, not a fit; derivation in `error_bound`):

    |O - ref| <= tau * sum_j P_ij |V_jc| + 2^-25 * sum_j |V_jc|

    tau = 2^-11                                  P rounded to f16 for the P V wgmma (unit roundoff)
        + 2 (KT + 1) (e_ex2 + e_arg)              each weight carries one ex2 and <= KT rescales
                                                  (alpha), in the numerator and in the row sum
        + (N/16 + 2 KT + kvb/4 + 8) 2^-23         f32 roundings: the O accumulation (one per
                                                  k16 wgmma step), the O *= alpha, the row sum's
                                                  adds/fma chain, rcp.approx and the final multiply
    e_ex2 = 2^-22                                 ex2.approx.f32: max relative error 2 ulp (PTX ISA,
                                                  ex2); the model computes 2^x exactly rounded
    e_arg = ln 2 * (c dS + 2^-22 * 6 A)           the exponent's error: c = scale log2 e, dS the
                                                  f32 error of a score (d 2^-23 sum_i |q_i k_i|, as
                                                  the GEMM tests bound an f32 wgmma sum), A = max
                                                  |c S_j| of the row (the roundings of c, m c and
                                                  the fma, each <= 2^-24 relative, on |x| <= 2A)

The 2^-25 term: a P below 2^-14 (f16 subnormal) is rounded with absolute error <= 2^-25, and its
final weight is that over l >= 1 (the row's maximum contributes exactly 1 to l). With out="f16" the
f32 O is rounded once more: + 2^-11 (|ref| + the bound above) + 2^-25.
"""

from __future__ import annotations

import math

import numpy as np

from kernels.attention.params import AttnParams

U16 = 2.0 ** -11          # f16 unit roundoff (round to nearest)
E_EX2 = 2.0 ** -22        # ex2.approx.f32 max relative error, 2 ulp (PTX ISA, ex2)
U32 = 2.0 ** -23          # an f32 rounding, counted at twice the unit roundoff (truncating adders)


def _weights(q, k, p: AttnParams, xp=np) -> tuple[np.ndarray, np.ndarray]:
    """(P = softmax(Q K^T scale) in float64, S = Q K^T in float64)."""
    s = xp.asarray(q, xp.float64) @ xp.asarray(k, xp.float64).T
    x = s * p.softmax_scale
    e = xp.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True), s


def reference(q, k, v, p: AttnParams, xp=np) -> np.ndarray:
    """float64 softmax(Q K^T * scale) V of the f16 values (xp: numpy or cupy)."""
    w, _ = _weights(q, k, p, xp)
    return w @ xp.asarray(v, xp.float64)


def error_bound(q, k, v, p: AttnParams, xp=np) -> np.ndarray:
    """Per-element bound on |O_kernel - reference| (module docstring; xp: numpy or cupy)."""
    w, s = _weights(q, k, p, xp)
    c = p.softmax_scale * math.log2(math.e)
    ds = p.head_dim * U32 * (xp.abs(xp.asarray(q, xp.float64)) @ xp.abs(xp.asarray(k, xp.float64)).T)
    a = xp.abs(c * s).max(axis=1, keepdims=True)
    e_arg = math.log(2) * (c * ds.max(axis=1, keepdims=True) + 2.0 ** -22 * 6 * a)
    kt = p.n_blocks
    tau = U16 + 2 * (kt + 1) * (E_EX2 + e_arg) + (p.seq / 16 + 2 * kt + p.kv_block / 4 + 8) * U32
    av = xp.abs(xp.asarray(v, xp.float64))
    bound = tau * (w @ av) + 2.0 ** -25 * av.sum(axis=0, keepdims=True)
    if p.out == "f16":
        bound = bound + U16 * (xp.abs(w @ xp.asarray(v, xp.float64)) + bound) + 2.0 ** -25
    return bound
