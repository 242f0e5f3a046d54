"""Builders of the register-only (ALU-class) instructions: mov, add ... cvt, elect.sync, ld.param, bra.

Each builder (registered with `@semantics(Cls)`) returns fn(ex, ws, mask) -> None (fall through) or
a new pc; the timing class is the declaration's (`Kind.ALU` for all of these).
Values are numpy arrays over the 32 lanes of the warp; integer arithmetic wraps at the type width.
"""

from __future__ import annotations

import numpy as np

from isa.ir import instructions as I
from isa.ir.operands import Imm, Reg, RegVec

from hopsim.functional.errors import DivergentBranch, IllegalInstruction
from hopsim.functional.simt import diverge, lanes_text
from hopsim.functional.semantics import (
    semantics, imm_value, reader, reg_setter, scalar_getter, signed, sym_getter, uniform_bits, value_getter,
    with_scalar, writer,
)
from hopsim.functional import fround as FR
from hopsim.functional.ops_float import float_minmax
from hopsim.functional.regs import TYPES
from hopsim.functional.wgmma import bf16_bits_to_f32, f32_to_bf16_bits

_W = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _width(t: str) -> int:
    return TYPES[t][1]


def _packed_half(t: str) -> bool:
    return t in ("f16x2", "bf16x2", "bf16")


def _half_lanes(t: str, fn):
    """Apply a float op lane-wise to packed half types (f16x2 / bf16x2 / bf16 bits)."""
    def unpack(u):
        u = np.asarray(u).astype(np.uint32)
        if t == "bf16":
            return bf16_bits_to_f32(u.astype(np.uint16)), None
        lo, hi = (u & 0xFFFF).astype(np.uint16), (u >> 16).astype(np.uint16)
        if t == "f16x2":
            return lo.view(np.float16).astype(np.float32), hi.view(np.float16).astype(np.float32)
        return bf16_bits_to_f32(lo), bf16_bits_to_f32(hi)

    def pack(x):
        if t == "f16x2":
            return x.astype(np.float16).view(np.uint16).astype(np.uint32)
        return f32_to_bf16_bits(x).astype(np.uint32)

    def run(*args):
        parts = [unpack(a) for a in args]
        lo = fn(*[p[0] for p in parts])
        if t == "bf16":
            return f32_to_bf16_bits(lo)
        hi = fn(*[p[1] for p in parts])
        return pack(lo) | (pack(hi) << np.uint32(16))
    return run


_FLOATS = frozenset({"f32", "f64", "f16", "f16x2", "bf16", "bf16x2"})
_UNSIGNED = {"u32": np.uint32, "b32": np.uint32, "s32": np.uint32,
             "u64": np.uint64, "b64": np.uint64, "s64": np.uint64}
_SCALAR = {I.Add: lambda a, b: a + b, I.Sub: lambda a, b: a - b, I.And: lambda a, b: a & b,
           I.Or: lambda a, b: a | b, I.Xor: lambda a, b: a ^ b}
_SIGN_AGNOSTIC = {I.Add: np.add, I.Sub: np.subtract, I.And: np.bitwise_and, I.Or: np.bitwise_or,
                  I.Xor: np.bitwise_xor}


def _fast_binop(ins, ctx, uf):
    """Fused closure for sign-agnostic 32/64-bit integer ops on registers/immediates (the common
    address and loop arithmetic): computed in the unsigned type, written zero-extended."""
    u = _UNSIGNED[ins.type]
    rd = ctx.row(ins.dst)
    is64 = u is np.uint64

    def src(op):
        if isinstance(op, Reg):
            r = ctx.row(op)
            return r, None
        return None, imm_value(op.value, "u64" if is64 else "u32")
    ra, ca = src(ins.a)
    rb, cb = src(ins.b)

    def fn(ex, ws, mask):
        bits = ex.bits
        lanes = ws.lanes
        a = (bits[ra, lanes] if is64 else bits[ra, lanes].astype(u)) if ra is not None else ca
        b = (bits[rb, lanes] if is64 else bits[rb, lanes].astype(u)) if rb is not None else cb
        r = uf(a, b)
        if mask is ws.active and ws.full:
            bits[rd, lanes] = r
            ws.uni[rd] = uniform_bits(r)
        else:
            np.copyto(bits[rd, lanes], r, where=mask, casting="unsafe")
    t = ins.type
    sf = _SCALAR[type(ins)]
    return with_scalar(fn, [scalar_getter(ins.a, t, ctx), scalar_getter(ins.b, t, ctx)], rd, sf,
                       _width(t))


def _binop(ins, ctx, f):
    t = ins.type
    uf = _SIGN_AGNOSTIC.get(type(ins))
    if uf is not None and t in _UNSIGNED:
        return _fast_binop(ins, ctx, uf)
    ga, gb = value_getter(ins.a, t, ctx), value_getter(ins.b, t, ctx)
    st = reg_setter(ins.dst, t, ctx)
    if _packed_half(t):
        f = _half_lanes(t, f)

    def fn(ex, ws, mask):
        st(ex, ws, f(ga(ex, ws), gb(ex, ws)), mask)
    return fn


def _arr(x):
    return np.asarray(x)


@semantics(I.Add)
def _add(ins, ctx):
    return _binop(ins, ctx, lambda a, b: _arr(a) + b)


@semantics(I.Sub)
def _sub(ins, ctx):
    return _binop(ins, ctx, lambda a, b: _arr(a) - b)


@semantics(I.Min)
def _min(ins, ctx):
    if ins.type in _FLOATS:
        return float_minmax(ins, ctx, False)
    return _binop(ins, ctx, np.minimum)


@semantics(I.Max)
def _max(ins, ctx):
    if ins.type in _FLOATS:
        return float_minmax(ins, ctx, True)
    return _binop(ins, ctx, np.maximum)


@semantics(I.And)
def _and(ins, ctx):
    return _binop(ins, ctx, lambda a, b: _arr(a) & b)


@semantics(I.Or)
def _or(ins, ctx):
    return _binop(ins, ctx, lambda a, b: _arr(a) | b)


@semantics(I.Xor)
def _xor(ins, ctx):
    return _binop(ins, ctx, lambda a, b: _arr(a) ^ b)


@semantics(I.Not)
def _not(ins, ctx):
    t = ins.type
    ga = value_getter(ins.a, t, ctx)
    st = reg_setter(ins.dst, t, ctx)

    def fn(ex, ws, mask):
        a = _arr(ga(ex, ws))
        st(ex, ws, ~a if a.dtype != bool else np.logical_not(a), mask)
    return fn


def _shift(ins, ctx, left: bool):
    t = ins.type
    w = _width(t)
    ga = value_getter(ins.a, t, ctx)
    gb = value_getter(ins.b, "u32", ctx)
    st = reg_setter(ins.dst, t, ctx)
    signed_ = TYPES[t][0].kind == "i"
    if isinstance(ins.b, Imm) and 0 <= int(ins.b.value) < w:
        k = TYPES[t][0].type(int(ins.b.value))
        if left:
            f = lambda a: a << k  # noqa: E731
        else:
            f = lambda a: a >> k  # noqa: E731

        def fn_imm(ex, ws, mask):
            st(ex, ws, f(ga(ex, ws)), mask)
        kk = int(ins.b.value)
        if left:
            sf = lambda a, b: a << kk  # noqa: E731
        elif signed_:
            sf = lambda a, b: signed(a, w) >> kk  # noqa: E731
        else:
            sf = lambda a, b: a >> kk  # noqa: E731
        return with_scalar(fn_imm, [scalar_getter(ins.a, t, ctx), scalar_getter(ins.b, "u32", ctx)],
                                     ctx.row(ins.dst), sf, w)

    def fn(ex, ws, mask):
        a = _arr(ga(ex, ws))
        b = np.minimum(_arr(gb(ex, ws)).astype(np.uint64), w).astype(a.dtype)
        big = b >= w
        bs = np.where(big, 0, b).astype(a.dtype)
        if left:
            r = np.where(big, 0, a << bs)
        else:
            r = a >> bs
            r = np.where(big, np.where(a < 0, -1, 0) if signed_ else 0, r)
        st(ex, ws, r.astype(a.dtype), mask)
    return fn


@semantics(I.Shl)
def _shl(ins, ctx):
    return _shift(ins, ctx, True)


@semantics(I.Shr)
def _shr(ins, ctx):
    return _shift(ins, ctx, False)


def _wide_type(t: str) -> str:
    return {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}[t]


def _mul_parts(t: str, mode):
    """f(a, b) -> product per PTX mode, and the destination type."""
    if t[0] in "fb" or mode is None:
        return (lambda a, b: _arr(a) * b), t
    w = _width(t)
    signed = t[0] == "s"
    if mode == "lo":
        return (lambda a, b: _arr(a) * b), t
    if mode == "wide":
        wt = _wide_type(t)
        dt = TYPES[wt][0]
        return (lambda a, b: _arr(a).astype(dt) * _arr(b).astype(dt)), wt
    # hi: upper half of the 2w-bit product
    if w <= 32:
        big = np.int64 if signed else np.uint64
        dt = TYPES[t][0]
        return (lambda a, b: ((_arr(a).astype(big) * _arr(b).astype(big)) >> w).astype(dt)), t

    def hi64(a, b):
        a, b = _arr(a), _arr(b)
        r = np.array([(int(x) * int(y)) >> 64 for x, y in zip(np.broadcast_to(a, np.broadcast(a, b).shape).ravel(),
                                                            np.broadcast_to(b, np.broadcast(a, b).shape).ravel())],
                     dtype=object)
        mask = (1 << 64) - 1
        return np.array([int(v) & mask for v in r], dtype=np.uint64).view(TYPES[t][0])
    return hi64, t


@semantics(I.Mul)
def _mul(ins, ctx):
    t = ins.type
    f, dt = _mul_parts(t, ins.mode)
    ga, gb = value_getter(ins.a, t, ctx), value_getter(ins.b, t, ctx)
    st = reg_setter(ins.dst, dt, ctx)
    if _packed_half(t):
        f = _half_lanes(t, lambda a, b: a * b)

    def fn(ex, ws, mask):
        st(ex, ws, f(ga(ex, ws), gb(ex, ws)), mask)
    sf = _scalar_mul(t, ins.mode)
    if sf is not None:
        return with_scalar(fn, [scalar_getter(ins.a, t, ctx), scalar_getter(ins.b, t, ctx)],
                                     ctx.row(ins.dst), sf, _width(dt))
    return fn


def _scalar_mul(t: str, mode):
    """Python-int product for integer mul/mad modes (None for floats)."""
    if t not in _UNSIGNED and t not in ("u16", "s16"):
        return None
    w = _width(t)
    sgn = t[0] == "s"
    if mode == "lo":
        return lambda a, b: a * b
    if mode == "wide":
        return (lambda a, b: signed(a, w) * signed(b, w)) if sgn else (lambda a, b: a * b)
    if mode == "hi":
        return (lambda a, b: (signed(a, w) * signed(b, w)) >> w) if sgn else (lambda a, b: (a * b) >> w)
    return None


@semantics(I.Mad)
def _mad(ins, ctx):
    t = ins.type
    f, dt = _mul_parts(t, ins.mode)
    ga, gb = value_getter(ins.a, t, ctx), value_getter(ins.b, t, ctx)
    gc = value_getter(ins.c, dt, ctx)
    st = reg_setter(ins.dst, dt, ctx)
    if t[0] == "f" and not _packed_half(t):
        # mad.rn.f32 is fused (one rounding): form the product and sum in float64
        def fn(ex, ws, mask):
            r = _arr(ga(ex, ws)).astype(np.float64) * gb(ex, ws) + _arr(gc(ex, ws)).astype(np.float64)
            st(ex, ws, r.astype(TYPES[t][0]), mask)
        return fn
    if _packed_half(t):
        f3 = _half_lanes(t, lambda a, b, c: a * b + c)

        def fn(ex, ws, mask):
            st(ex, ws, f3(ga(ex, ws), gb(ex, ws), gc(ex, ws)), mask)
        return fn

    def fn(ex, ws, mask):
        st(ex, ws, f(ga(ex, ws), gb(ex, ws)) + gc(ex, ws), mask)
    sf = _scalar_mul(t, ins.mode)
    if sf is not None:
        return with_scalar(fn, [scalar_getter(ins.a, t, ctx), scalar_getter(ins.b, t, ctx),
                                          scalar_getter(ins.c, dt, ctx)],
                                     ctx.row(ins.dst), lambda a, b, c: sf(a, b) + c, _width(dt))
    return fn


import operator as _op  # noqa: E402

_PYCMP = {"eq": _op.eq, "ne": _op.ne, "lt": _op.lt, "le": _op.le, "gt": _op.gt, "ge": _op.ge,
          "lo": _op.lt, "ls": _op.le, "hi": _op.gt, "hs": _op.ge}
_CMP = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal,
}


@semantics(I.Setp)
def _setp(ins, ctx):
    t = ins.type
    if t == "bf16":
        ga0, gb0 = value_getter(ins.a, t, ctx), value_getter(ins.b, t, ctx)
        ga = lambda ex, ws: bf16_bits_to_f32(ga0(ex, ws))  # noqa: E731
        gb = lambda ex, ws: bf16_bits_to_f32(gb0(ex, ws))  # noqa: E731
    else:
        ga, gb = value_getter(ins.a, t, ctx), value_getter(ins.b, t, ctx)
    st = reg_setter(ins.dst, "pred", ctx)
    cmp = ins.cmp
    if cmp in _CMP:
        f = _CMP[cmp]
    elif cmp == "num":
        f = lambda a, b: ~(np.isnan(a) | np.isnan(b))  # noqa: E731
    elif cmp == "nan":
        f = lambda a, b: np.isnan(a) | np.isnan(b)  # noqa: E731
    else:  # unordered variants: true if either is NaN
        base = _CMP[cmp[:-1]]
        f = lambda a, b: base(a, b) | np.isnan(a) | np.isnan(b)  # noqa: E731

    def fn(ex, ws, mask):
        st(ex, ws, f(_arr(ga(ex, ws)), gb(ex, ws)), mask)
    if t in _UNSIGNED or t in ("u16", "s16", "b16") and cmp in _PYCMP:
        w = _width(t)
        pc = _PYCMP[cmp]
        if t[0] == "s" and cmp in ("lt", "le", "gt", "ge"):
            sf = lambda a, b: int(pc(signed(a, w), signed(b, w)))  # noqa: E731
        else:
            sf = lambda a, b: int(pc(a, b))  # noqa: E731
        return with_scalar(fn, [scalar_getter(ins.a, t, ctx), scalar_getter(ins.b, t, ctx)],
                                     ctx.row(ins.dst), sf, 1)
    return fn


@semantics(I.Selp)
def _selp(ins, ctx):
    t = ins.type
    ga, gb = value_getter(ins.a, t, ctx), value_getter(ins.b, t, ctx)
    gc = value_getter(ins.c, "pred", ctx)
    st = reg_setter(ins.dst, t, ctx)

    def fn(ex, ws, mask):
        st(ex, ws, np.where(gc(ex, ws), ga(ex, ws), gb(ex, ws)), mask)
    if t in _UNSIGNED:
        return with_scalar(fn, [scalar_getter(ins.a, t, ctx), scalar_getter(ins.b, t, ctx),
                                          scalar_getter(ins.c, "pred", ctx)],
                                     ctx.row(ins.dst), lambda a, b, c: a if c else b, _width(t))
    return fn


def _mov_vector(ins, ctx):
    """mov.b32/.b64 pack `d, {e0, e1..}` and unpack `{e0, e1..}, a` (element 0 in the low bits)."""
    t, et = ins.type, ins.element_type()
    w = _width(et)
    u = np.uint64
    m = u((1 << w) - 1)
    if isinstance(ins.dst, RegVec):
        g = value_getter(ins.src, t, ctx)
        sts = [reg_setter(r, et, ctx) for r in ins.dst]

        def unpack(ex, ws, mask):
            b = np.asarray(g(ex, ws)).astype(u)
            for i, st in enumerate(sts):
                st(ex, ws, ((b >> u(w * i)) & m).astype(TYPES[et][0]), mask)
        return unpack
    gs = [value_getter(r, et, ctx) for r in ins.src]
    st = reg_setter(ins.dst, t, ctx)

    def pack(ex, ws, mask):
        b = u(0)
        for i, g in enumerate(gs):
            b = b | (np.asarray(g(ex, ws)).astype(u) << u(w * i))
        st(ex, ws, np.asarray(b).astype(TYPES[t][0]), mask)
    return pack


@semantics(I.Mov)
def _mov(ins, ctx):
    t = ins.type
    if ins.element_type() is not None:
        return _mov_vector(ins, ctx)
    g = value_getter(ins.src, t, ctx)
    st = reg_setter(ins.dst, t, ctx)

    def fn(ex, ws, mask):
        st(ex, ws, g(ex, ws), mask)
    sg = scalar_getter(ins.src, t, ctx)
    if sg is None:
        return fn
    return with_scalar(fn, [sg, lambda ex, ws: 0], ctx.row(ins.dst), lambda a, b: a, _width(t))


_INT_BITS = frozenset({"u16", "s16", "u32", "s32", "u64", "s64"})
_INT_RND = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil, None: np.trunc}


@semantics(I.Cvt)
def _cvt(ins, ctx):
    d, s = ins.dtype, ins.stype
    st = reg_setter(ins.dst, d if d != "bf16" else "b16", ctx)
    if d in ("f16x2", "bf16x2"):
        ga, gb = value_getter(ins.src, "f32", ctx), value_getter(ins.src2, "f32", ctx)
        fmt, rnd = FR.FORMATS[d[:-2]], ins.rnd

        def pack(x):  # one rounding (.rn or .rz) of the f32 value; NaN -> canonical 0x7fff
            return FR.to_bits(FR.narrow(_arr(x), fmt, rnd), fmt).astype(np.uint32)

        ra = ctx.row(ins.src) if isinstance(ins.src, Reg) else None
        rb = ctx.row(ins.src2) if isinstance(ins.src2, Reg) else None
        dst, wr, rd = ctx.row(ins.dst), writer(d), reader("f32")
        done: dict = {}  # (a bits, b bits) -> result bits: the same function of the sources

        def fn(ex, ws, mask):  # a -> upper half, b -> lower half (PTX cvt.f16x2.f32 d, a, b)
            if ra is not None and rb is not None and mask is ws.active and ws.full:
                ua, ub = ws.uni[ra], ws.uni[rb]
                if ua is not None and ub is not None:  # warp-uniform: one lane's result in every lane
                    v = done.get((ua, ub))
                    if v is None:
                        one = (pack(rd(np.array([ua], np.uint64))) << np.uint32(16)) | pack(rd(np.array([ub], np.uint64)))
                        if len(done) > 4096:
                            done.clear()
                        v = done[(ua, ub)] = int(wr(one)[0])
                    ws.uni[dst] = v
                    ex.bits[dst, ws.lanes] = v
                    return None
            vals = (pack(ga(ex, ws)) << np.uint32(16)) | pack(gb(ex, ws))
            ws.uni[dst] = None  # (as `invalidating`; set_ sets it again for a full mask)
            st(ex, ws, vals, mask)
        fn.scalar_aware = True  # it maintains ws.uni of its destination itself
        return fn
    gs = value_getter(ins.src, s if s != "bf16" else "b16", ctx)
    d_float, s_float = d[0] in "fb", s[0] in "fb"

    def src_val(ex, ws):
        v = _arr(gs(ex, ws))
        return bf16_bits_to_f32(v) if s == "bf16" else v

    if s_float and d_float and s != d and (d == "bf16" or _width(d) < _width(s) or s == "bf16"):
        return _cvt_narrow(ins, ctx, src_val)
    if s_float and s == d and ins.rnd in _INT_RND and ins.rnd is not None:
        return _cvt_round_int(ins, ctx, src_val)
    if d == "bf16":  # from an integer or from bf16 itself
        def fn(ex, ws, mask):
            st(ex, ws, f32_to_bf16_bits(src_val(ex, ws).astype(np.float32)), mask)
        return fn
    ddt = TYPES[d][0]
    if s_float and not d_float:
        rnd = _INT_RND[ins.rnd]
        info = np.iinfo(ddt)

        def fn(ex, ws, mask):
            v = rnd(src_val(ex, ws).astype(np.float64))
            v = np.nan_to_num(v, nan=0.0)
            st(ex, ws, np.clip(v, info.min, info.max).astype(ddt), mask)
        return fn
    if ins.sat and d_float:
        def fn(ex, ws, mask):
            v = src_val(ex, ws).astype(ddt)
            st(ex, ws, np.where(np.isnan(v), ddt.type(0), np.clip(v, 0, 1)).astype(ddt), mask)
        return fn

    def fn(ex, ws, mask):
        st(ex, ws, src_val(ex, ws).astype(ddt), mask)
    if not d_float and not s_float and s in _INT_BITS and d in _INT_BITS:
        sw = _width(s)
        ext = (lambda a, b: signed(a, sw)) if s[0] == "s" else (lambda a, b: a)
        return with_scalar(fn, [scalar_getter(ins.src, s, ctx), lambda ex, ws: 0],
                                     ctx.row(ins.dst), ext, _width(d))
    return fn


def _cvt_narrow(ins, ctx, src_val):
    """Narrowing float conversions (f64 -> f32/f16/bf16, f32 -> f16/bf16, f16 <-> bf16): one rounding
    of the exact source value by .rn/.rz/.rm/.rp (fround.narrow; widening is exact); .sat clamps to
    [0, 1] with NaN -> +0; NaN results are the canonical NaN."""
    fmt, mode, sat = FR.FORMATS[ins.dtype], ins.rnd or "rn", ins.sat
    st = reg_setter(ins.dst, "b32" if ins.dtype == "f32" else "b16", ctx)

    def fn(ex, ws, mask):
        r = FR.narrow(np.asarray(src_val(ex, ws), np.float64), fmt, mode)
        if sat:
            r = np.where(np.isnan(r), 0.0, np.clip(r, 0.0, 1.0))
        st(ex, ws, FR.to_bits(r, fmt), mask)
    return fn


def _cvt_round_int(ins, ctx, src_val):
    """`cvt.rni/rzi/rmi/rpi.fN.fN`: round to an integral value in the same float type."""
    f = _INT_RND[ins.rnd]
    st = reg_setter(ins.dst, ins.dtype if ins.dtype != "bf16" else "b16", ctx)
    dt = TYPES[ins.dtype][0]

    def fn(ex, ws, mask):
        v = f(np.asarray(src_val(ex, ws), np.float64))
        st(ex, ws, f32_to_bf16_bits(v.astype(np.float32)) if ins.dtype == "bf16" else v.astype(dt), mask)
    return fn


@semantics(I.ElectSync)
def _elect(ins, ctx):
    gm = value_getter(ins.membermask, "u32", ctx)
    sp = reg_setter(ins.pred, "pred", ctx)
    sl = reg_setter(ins.lane, "u32", ctx) if ins.lane is not None else None
    lane_bits = (np.uint32(1) << np.arange(32, dtype=np.uint32))

    def fn(ex, ws, mask):
        members = ((np.asarray(gm(ex, ws), np.uint32) & lane_bits) != 0) & mask
        nz = np.flatnonzero(members)
        leader = int(nz[0]) if len(nz) else -1
        sp(ex, ws, np.arange(32) == leader, mask)
        if sl is not None:
            sl(ex, ws, np.full(32, max(leader, 0), np.uint32), mask)
    return fn


@semantics(I.LdParam)
def _ldparam(ins, ctx):
    t = ins.type
    base = ins.addr.base.name
    if ins.vec != 1 or ins.addr.offset:
        raise IllegalInstruction("ld.param of a vector or at an offset is not modelled")
    g = sym_getter(base, t, ctx)
    st = reg_setter(ins.dst, t, ctx)

    def fn(ex, ws, mask):
        st(ex, ws, g(ex, ws), mask)
    sg = scalar_getter(ins.addr.base, t, ctx)
    if sg is None:
        return fn
    return with_scalar(fn, [sg, lambda ex, ws: 0], ctx.row(ins.dst), lambda a, b: a, _width(t))


@semantics(I.Bra)
def _bra(ins, ctx):
    """`@%p bra L`: taken by all running lanes, by none, or divergent: the warp splits and
    reconverges at the branch's immediate post-dominator (simt.py). `bra.uni` asserts the branch
    is not divergent (PTX ISA): a divergent one is a DivergentBranch."""
    name = ins.target.name
    if name not in ctx.label_pc:
        raise IllegalInstruction(f"branch to undefined label {name}")
    target = ctx.label_pc[name]
    guard = ins.guard
    if guard is None:
        return lambda ex, ws, mask: target
    fall, ipdom, uni = ctx.pc + 1, ctx.ipdom[ctx.pc], ins.uni
    if target == fall:  # a branch to the next instruction: every lane goes on there
        return lambda ex, ws, mask: None

    def fn(ex, ws, mask):
        # mask = active & guard
        if mask is ws.active:
            return target
        if mask is ws.none:
            return None
        n = int(np.count_nonzero(mask))
        if n == 0:
            return None
        if n == ws.nactive:
            return target
        if uni:
            raise DivergentBranch(f"bra.uni: the guard is true on {n} of the {ws.nactive} running lanes "
                                  f"(lanes {lanes_text(mask)}): .uni asserts a non-divergent branch (PTX ISA, bra)")
        return diverge(ex, ws, mask, target, fall, ipdom)
    return fn


_F32_TINY = np.finfo(np.float32).tiny


def _flush(x):
    """.ftz: subnormal f32 values become zero of the same sign."""
    return np.where(np.abs(x) < _F32_TINY, np.copysign(np.float32(0), x), x).astype(np.float32)


def _approx_f32(ins, ctx, f):
    """`op.approx{.ftz}.f32 d, a`: d = f(a) computed in float32 by numpy (correctly rounded where
    numpy is; the hardware's approximation error, ex2 <= 2 ulp and rcp <= 1 ulp per the PTX ISA,
    is not modelled). Overflow and division by zero give inf as on the GPU, without warnings."""
    ga = value_getter(ins.a, "f32", ctx)
    st = reg_setter(ins.dst, "f32", ctx)
    ftz = ins.ftz

    def fn(ex, ws, mask):
        a = np.asarray(ga(ex, ws), dtype=np.float32)
        if ftz:
            a = _flush(a)
        with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
            r = np.asarray(f(a), dtype=np.float32)
        st(ex, ws, _flush(r) if ftz else r, mask)
    return fn


@semantics(I.Ex2)
def _ex2(ins, ctx):
    return _approx_f32(ins, ctx, np.exp2)


@semantics(I.Rcp)
def _rcp(ins, ctx):
    return _approx_f32(ins, ctx, lambda a: np.float32(1) / a)


@semantics(I.FenceProxyAsync, I.FenceMbarrierInit, I.Fence, I.Membar, I.FenceProxyTensormap)
def _fence(ins, ctx):
    return lambda ex, ws, mask: None


__all__ = ["imm_value", "reader"]
