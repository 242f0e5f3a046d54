"""Functional semantics of fma (f32, f64, f16, f16x2, bf16, bf16x2) and of float min/max
(PTX ISA, fma / min / max), on the single-rounding helpers of fround.py.

Half types are read as raw bits (.b16 / .b32) and computed per 16-bit lane in float64 (exact for
every f16/bf16 value); packed x2 registers hold element 0 in bits 0..15. NaN results are the PTX
canonical NaN (f32 0x7fffffff, f16/bf16 0x7fff). Half-type operands must be registers (an
immediate raises IllegalInstruction when the kernel is compiled).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from isa.ir import instructions as I
from isa.ir.operands import Imm

from hopsim.functional import fround as FR
from hopsim.functional.errors import IllegalInstruction
from hopsim.functional.semantics import reg_setter, semantics, value_getter

_F64_MAX = float(np.finfo(np.float64).max)
_HALF_FMT = {"f16": FR.F16, "f16x2": FR.F16, "bf16": FR.BF16, "bf16x2": FR.BF16}


def _unpack16(bits, fmt) -> np.ndarray:
    u = np.asarray(bits).astype(np.uint16)
    if fmt is FR.F16:
        return u.view(np.float16).astype(np.float64)
    return (u.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)


def lanes_of(t: str):
    """(unpack: register bits -> list of float64 arrays per 16-bit half, pack: list -> bits) of a
    float type; f32/f64 are one 'half'."""
    if t == "f32":
        return (lambda b: [np.asarray(b, np.float32).astype(np.float64)],
                lambda xs: FR.to_bits(xs[0], FR.F32))
    if t == "f64":
        return (lambda b: [np.asarray(b, np.float64)], lambda xs: np.asarray(xs[0], np.float64))
    fmt = _HALF_FMT[t]
    if t in ("f16", "bf16"):
        return (lambda b: [_unpack16(b, fmt)], lambda xs: FR.to_bits(xs[0], fmt).astype(np.uint16))

    def unpack(b):
        u = np.asarray(b).astype(np.uint32)
        return [_unpack16(u & 0xFFFF, fmt), _unpack16(u >> 16, fmt)]

    def pack(xs):
        lo, hi = (FR.to_bits(x, fmt).astype(np.uint32) for x in xs)
        return lo | (hi << np.uint32(16))
    return unpack, pack


def _io(ins, ctx, names):
    """Getters of operands `names` and the destination setter, in the register view of ins.type."""
    t = ins.type
    view = {"f32": "f32", "f64": "f64", "f16": "b16", "bf16": "b16"}.get(t, "b32")
    for n in names:
        if t in _HALF_FMT and isinstance(getattr(ins, n), Imm):
            raise IllegalInstruction(f"{ins.text()}: .{t} operands must be registers (PTX ISA)")
    return [value_getter(getattr(ins, n), view, ctx) for n in names], reg_setter(ins.dst, "b32" if t == "f32" else view, ctx)


def _fmt(t: str):
    return FR.F32 if t == "f32" else _HALF_FMT.get(t)


# ------------------------------------------------------------------------------------ fma
def fma64(a, b, c, mode: str) -> np.ndarray:
    """fma.rnd.f64: exact a*b + c (Fractions) rounded once to float64, lane by lane."""
    out = []
    for x, y, z in zip(*np.broadcast_arrays(a, b, c)):
        x, y, z = float(x), float(y), float(z)
        if not all(math.isfinite(v) for v in (x, y, z)):
            out.append(x * y + z)
            continue
        v = Fraction(x) * Fraction(y) + Fraction(z)
        try:
            r = float(v)  # correctly rounded to nearest even
        except OverflowError:  # |v| rounds beyond the largest double
            inf = {"rn": True, "rz": False, "rm": v < 0, "rp": v > 0}[mode]
            out.append((math.inf if inf else _F64_MAX) * (-1.0 if v < 0 else 1.0))
            continue
        if mode == "rm" and Fraction(r) > v:
            r = math.nextafter(r, -math.inf)
        elif mode == "rz" and abs(Fraction(r)) > abs(v):
            r = math.nextafter(r, 0.0)
        elif mode == "rp" and Fraction(r) < v:
            r = math.nextafter(r, math.inf)
        if v == 0:
            r = x * y + z
        out.append(r)
    return np.array(out, np.float64)


def fma_lanes(t: str, a, b, c, rnd: str, ftz: bool, sat: bool, relu: bool):
    """d = round(a*b + c) per lane with the .ftz/.sat/.relu rules (float64 values in, out)."""
    if t == "f64":
        return fma64(a, b, c, rnd)
    fmt = _fmt(t)
    if ftz:
        a, b, c = (FR.flush(x, fmt) for x in (a, b, c))
    r = FR.fma(a, b, c, fmt, rnd)
    if ftz:
        r = FR.flush(r, fmt)
    if sat:
        r = np.where(np.isnan(r), 0.0, np.clip(r, 0.0, 1.0))
    if relu:
        r = np.where(r < 0, 0.0, r)
    return r


@semantics(I.Fma)
def _fma(ins, ctx):
    (ga, gb, gc), st = _io(ins, ctx, ("a", "b", "c"))
    unpack, pack = lanes_of(ins.type)
    t, rnd, ftz, sat, relu = ins.type, ins.rnd, ins.ftz, ins.sat, ins.relu

    def fn(ex, ws, mask):
        xs = zip(unpack(ga(ex, ws)), unpack(gb(ex, ws)), unpack(gc(ex, ws)))
        st(ex, ws, pack([fma_lanes(t, a, b, c, rnd, ftz, sat, relu) for a, b, c in xs]), mask)
    return fn


# ------------------------------------------------------------------------------------ min / max
def minmax(a, b, is_max: bool, nan: bool) -> np.ndarray:
    """PTX min/max of float64 values: a NaN operand yields the other (NaN only if both are);
    -0.0 < +0.0; with `nan` any NaN operand yields NaN."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    first = (a > b) if is_max else (a < b)
    tie = a == b
    pick_a_on_tie = ~np.signbit(a) if is_max else np.signbit(a)
    r = np.where(first | (tie & pick_a_on_tie), a, b)
    r = np.where(np.isnan(a), b, np.where(np.isnan(b), a, r))
    if nan:
        r = np.where(np.isnan(a) | np.isnan(b), np.nan, r)
    return r


def float_minmax(ins, ctx, is_max: bool):
    """The builder of min/max on f32/f64/f16/f16x2/bf16/bf16x2 (ops_alu's Min/Max call it)."""
    (ga, gb), st = _io(ins, ctx, ("a", "b"))
    unpack, pack = lanes_of(ins.type)
    fmt, ftz, nan = _fmt(ins.type), ins.ftz, ins.nan

    def fn(ex, ws, mask):
        out = []
        for a, b in zip(unpack(ga(ex, ws)), unpack(gb(ex, ws))):
            if ftz:
                a, b = FR.flush(a, fmt), FR.flush(b, fmt)
            out.append(minmax(a, b, is_max, nan))
        st(ex, ws, pack(out), mask)
    return fn
