"""The online softmax of one KV block in registers, and the final normalisation (FlashAttention-2/3).

Fragment of a thread (wgmma m64nN D layout, hopsim/functional/wgmma.py): value i = v0 + 2 v1 + 4 v2
is row 16 warp + lane/4 + 8 v1, column 8 v2 + 2 (lane % 4) + v0. So a thread holds two rows
(h = v1 = 0, 1), and the four lanes of a quad (lane / 4 equal) hold one row between them: a row
reduction is the thread's own values, then shfl.sync.bfly with lane masks 1 and 2.

Per KV block, per row half h (c = scale * log2(e), one f32 constant; m, l per row, m = -inf first):

    mx      = max_j S[j]  (thread), max over the quad (shfl.sync.bfly 1, 2)
    m_new   = max(m, mx);  nm = m_new * -c
    alpha   = ex2.approx(fma(m, c, nm))         = 2^((m - m_new) c): 0 on the first block (m = -inf)
    P[j]    = ex2.approx(fma(S[j], c, nm))      = exp((S[j] - m_new) scale), in place of S
    l       = fma(l, alpha, sum_j P[j])         the thread's part of the row sum (quad-reduced at the end)
    O[row h] *= alpha                           (rescale_and_pack: after the previous P V retired)

then P is packed for O += P V with A from registers: A fragment register r of k-step kk is
cvt.rn.f16x2.f32 of S values 8 kk + 2 r (low half) and 8 kk + 2 r + 1 (high half): ALayout_64x16 is
the accumulator layout of a 64x16 tile, so the S fragment of columns 16 kk .. 16 kk + 15 is already
the A fragment of that k-step (FlashAttention-3's register reuse). The row sum uses the f32 P (before
rounding), as FlashAttention does.

Final: l summed over the quad (bfly 1, 2), O *= rcp.approx(l).
"""

from __future__ import annotations

import math

import numpy as np

from isa.ir import Reg, RegVec

FULL = 0xFFFFFFFF
QUAD_CLAMP = 0x1F          # shfl c operand: clamp lane 31, no segment (the xor stays in the warp)
LOG2E = math.log2(math.e)


def f32(x: float) -> float:
    """x rounded to f32 (the immediate the kernel carries), as a Python float."""
    return float(np.float32(x))


def row_values(n_regs: int, h: int) -> list[int]:
    """Indices of the accumulator values of row half h (v1 = h): 4 v2 + 2 h + v0."""
    return [4 * v2 + 2 * h + v0 for v2 in range(n_regs // 4) for v0 in range(2)]


def quad_reduce(em, x: Reg, op: str) -> None:
    """x = op over the 4 lanes of x's quad (op 'max' or 'add', f32)."""
    b, t = em.b, em.value("f32", "shfl_t")
    for mask in (1, 2):
        b.shfl_sync("bfly", "b32", t, x, mask, QUAD_CLAMP, FULL)
        if op == "max":
            b.max("f32", x, x, t)
        else:
            b.add("f32", x, x, t)


def online_block(em, s_acc: RegVec, o_acc: RegVec, p_regs: RegVec, c: float) -> None:
    """One KV block: S (scores) -> P in place, m/l updated, O rescaled, P packed to f16x2."""
    exp_block(em, s_acc, c)
    rescale_and_pack(em, s_acc, o_acc, p_regs)


def exp_block(em, s_acc: RegVec, c: float) -> None:
    """The part that touches neither O nor the P fragments (with overlap it runs while the previous
    block's P V wgmma is in flight): row max, alpha_h, P = ex2(...) in place of S, l."""
    b = em.b
    for h in range(2):
        m, l = em.value("f32", f"m{h}"), em.value("f32", f"l{h}")
        al = em.value("f32", f"alpha{h}")
        mx, nm, rs = (em.value("f32", x) for x in ("mx", "nm", "rsum"))
        idx = row_values(len(s_acc), h)
        b.mov("f32", mx, s_acc[idx[0]])
        for i in idx[1:]:
            b.max("f32", mx, mx, s_acc[i])
        quad_reduce(em, mx, "max")
        b.max("f32", mx, m, mx)
        b.mul("f32", nm, mx, f32(-c))
        b.fma("rn", "f32", al, m, f32(c), nm)
        b.ex2("f32", al, al)
        b.mov("f32", m, mx)
        for n, i in enumerate(idx):
            b.fma("rn", "f32", s_acc[i], s_acc[i], f32(c), nm)
            b.ex2("f32", s_acc[i], s_acc[i])
            if n == 0:
                b.mov("f32", rs, s_acc[i])
            else:
                b.add("f32", rs, rs, s_acc[i])
        b.fma("rn", "f32", l, l, al, rs)


def rescale_and_pack(em, s_acc: RegVec, o_acc: RegVec, p_regs: RegVec) -> None:
    """O *= alpha_h per row half, then the P fragments (after the previous P V wgmma retired)."""
    for h in range(2):
        al = em.value("f32", f"alpha{h}")
        for i in row_values(len(o_acc), h):
            em.b.mul("f32", o_acc[i], o_acc[i], al)
    pack_p(em, s_acc, p_regs)


def pack_p(em, s_acc: RegVec, p_regs: RegVec) -> None:
    """A fragments of O += P V: p[4 kk + r] = f16x2(lo = S[8 kk + 2 r], hi = S[8 kk + 2 r + 1])."""
    for j, reg in enumerate(p_regs):
        kk, r = divmod(j, 4)
        lo, hi = s_acc[8 * kk + 2 * r], s_acc[8 * kk + 2 * r + 1]
        em.b.cvt("f16x2", "f32", reg, hi, rnd="rn", src2=lo)


def init_stats(em) -> None:
    """m = -inf, l = 0 for both row halves."""
    for h in range(2):
        em.b.mov("f32", em.value("f32", f"m{h}"), float("-inf"))
        em.b.mov("f32", em.value("f32", f"l{h}"), 0.0)


def normalise(em, o_acc: RegVec) -> None:
    """l summed over the quad; O *= 1 / l (rcp.approx)."""
    b = em.b
    for h in range(2):
        l, inv = em.value("f32", f"l{h}"), em.value("f32", "inv")
        quad_reduce(em, l, "add")
        b.rcp("f32", inv, l)
        for i in row_values(len(o_acc), h):
            b.mul("f32", o_acc[i], o_acc[i], inv)
