"""What the row-wise kernels must compute, and how far an f32 kernel may be from it: the float64
reference and a rigorous (first-order-free) error bound per element, for numpy or cupy arrays
(`xp`), so the simulator's tests and the H100 runner (validation/portfolio_runs.py) check the same
law.

Roundings (u = 2^-24, the f32 unit roundoff; gamma_k = k u / (1 - k u), Higham, "Accuracy and
Stability of Numerical Algorithms", 2nd ed., eq. 3.4 and Lemma 3.1):
- a sum whose every term passes through at most d f32 additions: |s^ - s| <= gamma_d sum |x_i|
  (Higham eq. 4.4 generalised to any summation tree of depth d);
- ex2.approx.f32: at most 2 ulp from 2^a, rcp.approx.f32: at most 1 ulp from 1/a (PTX ISA,
  "Floating Point Instructions: ex2 / rcp"; docs/ir.md: not modelled, so the simulator is exact
  there and the H100 uses its slack); one ulp of a normal f32 is at most 2^-23 = 2u of the value.
The float64 reference's own error (at most n 2^-53 relative for a sum of n terms, 2^-50 for exp)
is added, so the bound holds against the exact result too.

Depth of the kernels' sums (kernels/rowwise): per lane, 4 adds per trip; then 5 butterfly adds
(warp); the cta mapping adds 5 more (the combine over shared memory).
"""

from __future__ import annotations

import numpy as np

U = 2.0 ** -24
LOG2E = 1.4426950408889634


def gamma(k: int) -> float:
    return k * U / (1 - k * U)


def sum_depth(cols: int, mapping: str, warps: int) -> int:
    """Most f32 additions any element passes through in the kernels' row sums."""
    chunks = cols // 128
    trips = chunks if mapping == "warp" else -(-chunks // warps)
    return 4 * trips + 5 + (5 if mapping == "cta" else 0)


def reference(family: str, x, xp=np):
    """float64 rowsum (rows,) or softmax (rows, cols) of the f32 matrix x."""
    x64 = x.astype(xp.float64)
    if family == "rowsum":
        return x64.sum(axis=1)
    e = xp.exp(x64 - x64.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def bound(family: str, x, depth: int, xp=np):
    """Per output element, the most |y^ - y| an f32 kernel of sum depth `depth` may show."""
    x64 = x.astype(xp.float64)
    n = x.shape[1]
    if family == "rowsum":
        return (gamma(depth) + n * 2.0 ** -53) * xp.abs(x64).sum(axis=1)
    v = (x64 - x64.max(axis=1, keepdims=True)) * LOG2E              # the exponent, exactly
    rho = xp.exp2(xp.abs(v) * gamma(3)) * (1 + 4 * U) - 1          # ex2's input rounding + 2 ulp
    sigma = (1 + rho.max(axis=1, keepdims=True)) * (1 + gamma(depth)) - 1   # the row sum's
    rel = (1 + rho) * (1 + 2 * U) * (1 + U) / (1 - sigma) - 1 + 2.0 ** -50  # rcp 1 ulp, the multiply
    return rel * reference(family, x, xp)


def within_bounds(family: str, x, y, depth: int, xp=np) -> tuple[bool, float]:
    """(every element within its bound and finite, the worst |error| / bound)."""
    err = xp.abs(y.astype(xp.float64) - reference(family, x, xp))
    b = bound(family, x, depth, xp)
    ratio = float(xp.nan_to_num(err / b, nan=np.inf).max())
    return bool(xp.isfinite(y).all()) and ratio <= 1.0, ratio


__all__ = ["bound", "reference", "sum_depth", "within_bounds"]
