"""The functional semantics' registry and the helpers their builders use (ops_*.py).

A builder `f(ins, ctx) -> fn(ex, ws, mask)` is registered per instruction class with
`@semantics(Cls)` in `SEMANTICS` and found through the instruction's MRO (`semantics_of`). `Ctx`
is what a builder sees while a kernel is compiled (register rows, symbols, label pcs); the
converters and getters below resolve register names, symbol offsets, types and immediates at
compile time, so nothing is decoded at issue time. program.py compiles a Kernel with them.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from hopsim.functional.errors import IllegalInstruction
from hopsim.functional.regs import TYPES, RegLayout
from isa.ir.operands import Imm, Reg, SReg, Sym

CLOCKS = frozenset({"%clock", "%clock64", "%globaltimer"})
"""Special registers read through `CTAExecutor.clock_tick()` (a counter that advances on every read),
not from the per-warp constant table."""

SEMANTICS: dict[type, Callable] = {}
"""Instruction class -> builder(ins, ctx) -> fn(ex, ws, mask): the functional semantics."""


def semantics(*classes: type):
    """Register the decorated builder as the functional semantics of `classes` (and subclasses)."""
    def deco(f):
        for cls in classes:
            if cls in SEMANTICS:
                raise ValueError(f"{cls.__name__} already has functional semantics")
            SEMANTICS[cls] = f
        return f
    return deco


def semantics_of(cls: type) -> Callable | None:
    """The builder registered for `cls` or its nearest registered base class, or None."""
    for c in cls.__mro__:
        b = SEMANTICS.get(c)
        if b is not None:
            return b
    return None


class Ctx:
    """What builders need while compiling: register rows, symbols, label pcs."""

    def __init__(self, kernel, layout: RegLayout, shared: dict, params: dict, label_pc: dict):
        self.kernel = kernel
        self.layout = layout
        self.shared = shared
        self.params = params
        self.label_pc = label_pc
        self.wgmma_rows: set[int] = set()
        self.pc = 0                  # the pc of the instruction being compiled
        self.ipdom: list[int] = []   # immediate post-dominator of each pc (simt.py)

    def row(self, reg) -> int:
        try:
            return self.layout.row(reg.name)
        except KeyError:
            raise IllegalInstruction(f"register {reg.name} is not declared") from None

    def rows(self, regs) -> list[int]:
        return [self.row(r) for r in regs]


# ---------------------------------------------------------------------------------- converters
def reader(t: str):
    """bits(uint64 array) -> values of type t."""
    dt, w = TYPES[t]
    if w == 1:
        return lambda b: b != 0
    if w == 64:
        if dt == np.uint64:
            return lambda b: b
        return lambda b: b.view(dt)
    u = {8: np.uint8, 16: np.uint16, 32: np.uint32}[w]
    if dt == u:
        return lambda b: b.astype(u)
    return lambda b: b.astype(u).view(dt)


def writer(t: str):
    """values of type t -> uint64 bits."""
    dt, w = TYPES[t]
    if w == 1:
        return lambda v: (np.asarray(v) != 0).astype(np.uint64)
    u = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[w]

    same = dt == u

    def conv(v):
        # fast path: already the right dtype -> same-width unsigned view (setitem zero-extends)
        if type(v) is np.ndarray and v.dtype == dt:
            return v if same else v.view(u)
        v = np.asarray(v)
        if v.dtype != dt:
            if dt.kind in "ui" and v.dtype.kind in "ui":
                v = v.astype(u if dt.kind == "u" else dt)
            else:
                v = v.astype(dt)
        if v.ndim == 0:
            v = v.reshape(1)
        return v if v.dtype == u else v.view(u)
    return conv


def imm_value(value, t: str):
    """A Python immediate as a numpy scalar of type t (ints wrap to the width)."""
    dt, w = TYPES[t]
    if w == 1:
        return np.bool_(bool(value))
    if dt.kind == "f":
        return dt.type(value)
    if isinstance(value, float):
        value = int(value)
    mask = (1 << w) - 1
    u = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[w]
    return np.array(value & mask, dtype=u).view(dt)[()] if dt != u else u(value & mask)


# ---------------------------------------------------------------------------------- operand access
def value_getter(opnd, t: str, ctx: Ctx):
    """A function (ex, ws) -> values of type t (numpy array over the warp's lanes, or a scalar)."""
    if isinstance(opnd, Reg):
        row = ctx.row(opnd)
        rd = reader(t)
        return lambda ex, ws: rd(ex.bits[row, ws.lanes])
    if isinstance(opnd, Imm):
        v = imm_value(opnd.value, t)
        return lambda ex, ws: v
    if isinstance(opnd, SReg):
        name = opnd.name
        dt = TYPES[t][0]
        if name in CLOCKS:
            return lambda ex, ws: dt.type(ex.clock_tick() & ((1 << 8 * dt.itemsize) - 1))
        return lambda ex, ws: ws.sreg[name].astype(dt)
    if isinstance(opnd, Sym):
        return sym_getter(opnd.name, t, ctx)
    raise IllegalInstruction(f"operand {opnd} cannot be read as a {t} value")


def sym_getter(name: str, t: str, ctx: Ctx):
    dt = TYPES[t][0]
    if name in ctx.shared:
        v = dt.type(ctx.shared[name])
        return lambda ex, ws: v
    if name in ctx.params:
        return lambda ex, ws: dt.type(ex.param(name))
    raise IllegalInstruction(f"symbol {name} is neither a .shared buffer nor a .param")


def reg_setter(reg, t: str, ctx: Ctx):
    """A function (ex, ws, values, mask) writing register `reg` as type t where mask is true."""
    row = ctx.row(reg)
    wr = writer(t)

    def set_(ex, ws, vals, mask):
        b = wr(vals)
        if mask is ws.active and ws.full:
            ex.bits[row, ws.lanes] = b
            ws.uni[row] = uniform_bits(b)
        else:
            dst = ex.bits[row, ws.lanes]
            np.copyto(dst, np.broadcast_to(b, dst.shape), where=mask, casting="unsafe")
    return set_


def uniform_bits(b) -> int | None:
    """The common value of a written lane vector (as an int), or None if the lanes differ."""
    if type(b) is not np.ndarray or b.ndim == 0 or b.shape[0] == 1:
        v = np.asarray(b).reshape(-1)[0]
        return int(v)
    raw = b.tobytes()
    n = b.itemsize
    if raw == raw[:n] * (len(raw) // n):
        return int(b[0])
    return None


def address_getter(mem, ctx: Ctx):
    """(ex, ws) -> int64 byte addresses per lane (or a Python int when the base is a symbol)."""
    base, off = mem.base, int(mem.offset)
    if isinstance(base, Sym):
        name = base.name
        if name in ctx.shared:
            a = int(ctx.shared[name]) + off
            return lambda ex, ws: a
        if name in ctx.params:
            return lambda ex, ws: int(ex.param(name)) + off
        raise IllegalInstruction(f"symbol {name} is neither a .shared buffer nor a .param")
    row = ctx.row(base)
    if off:
        return lambda ex, ws: ex.bits[row, ws.lanes].astype(np.int64) + off
    return lambda ex, ws: ex.bits[row, ws.lanes].astype(np.int64)


def uniform(x, mask, what: str) -> int:
    """The single value x takes over the lanes in mask (scalars pass); IllegalInstruction if not."""
    if type(x) is not np.ndarray or x.ndim == 0:
        return int(x)
    if mask.shape[0] == x.shape[0] and mask.all():
        raw = x.tobytes()
        n = x.itemsize
        if raw == raw[:n] * x.shape[0]:
            return int(x[0])
        v = x
    else:
        v = x[mask]
        if len(v) == 0:
            return int(x[0])
        if np.any(v != v[0]):
            pass
        else:
            return int(v[0])
    raise IllegalInstruction(f"{what} differs between lanes ({sorted(set(v.tolist()))[:4]}...): must be warp-uniform")


# ---------------------------------------------------------------------------------- warp-uniform fast path
#
# Most loop and address arithmetic of a GEMM kernel is warp-uniform. Each warp keeps `ws.uni`, a list
# (one entry per register row) holding the register's raw bits as a Python int when all 32 lanes are
# known to hold that value, else None. Invariant: ws.uni[r] is not None  =>  bits[r, warp lanes] == it.
# Integer ALU ops whose inputs are all uniform (and whose guard is uniformly true) compute on Python
# ints and fill the numpy row; every other write path sets the entry to None (the executor clears the
# rows an instruction writes before running it; wgmma completion clears its accumulators).

INT_TYPES = frozenset({"u16", "s16", "b16", "u32", "s32", "b32", "u64", "s64", "b64", "pred"})


def scalar_getter(opnd, t: str, ctx: Ctx):
    """(ex, ws) -> raw bits (Python int, masked to the width of t) if warp-uniform, else None.
    Returns None (no getter) when the operand/type has no scalar form."""
    if t not in INT_TYPES:
        return None
    w = TYPES[t][1]
    m = (1 << w) - 1 if w > 1 else 1
    if isinstance(opnd, Reg):
        row = ctx.row(opnd)
        if w >= 64 or w == 1:
            return _tagged(lambda ex, ws: ws.uni[row], uni_row=(row, None))
        def g(ex, ws):
            v = ws.uni[row]
            return None if v is None else v & m
        return _tagged(g, uni_row=(row, m))
    if isinstance(opnd, Imm):
        v = opnd.value
        if isinstance(v, float):
            return None
        c = int(v) & m if w > 1 else int(v != 0)
        return _tagged(lambda ex, ws: c, const=c)
    if isinstance(opnd, SReg):
        name = opnd.name
        if name in CLOCKS:
            return lambda ex, ws: ex.clock_tick() & m

        def gs(ex, ws):
            v = ws.sreg_uni.get(name)
            return None if v is None else v & m
        return gs
    if isinstance(opnd, Sym):
        name = opnd.name
        if name in ctx.shared:
            c = int(ctx.shared[name]) & m
            return lambda ex, ws: c
        if name in ctx.params:
            return lambda ex, ws: int(ex.param(name)) & m
    return None


def scalar_address(mem, ctx: Ctx):
    """(ex, ws) -> the warp-uniform byte address of a Mem operand, or None if not uniform."""
    base, off = mem.base, int(mem.offset)
    if isinstance(base, Sym):
        name = base.name
        if name in ctx.shared:
            a = int(ctx.shared[name]) + off
            return lambda ex, ws: a
        return lambda ex, ws: int(ex.param(name)) + off
    row = ctx.row(base)

    def g(ex, ws):
        v = ws.uni[row]
        return None if v is None else v + off
    return g


def signed(v: int, w: int) -> int:
    return v - (1 << w) if v >> (w - 1) else v


def _tagged(g, **what):
    """A scalar getter with what it reads declared (`uni_row`: (row, mask or None: unmasked),
    `const`: its value), for `with_scalar`'s specialised two-operand forms."""
    for k, v in what.items():
        setattr(g, k, v)
    return g


def _two_operand(vec_fn, ga, gb, dst_row: int, sfn, m: int):
    """with_scalar's fast path for a register and an immediate or a register (the common ALU
    forms): the getters' reads inlined, the same values and fallbacks."""
    ra, ma = ga.uni_row
    if hasattr(gb, "const"):
        cb = gb.const

        def fn(ex, ws, mask):
            if mask is ws.active and ws.full:
                a = ws.uni[ra]
                if a is not None:
                    r = sfn(a if ma is None else a & ma, cb) & m
                    ws.uni[dst_row] = r
                    v = ws.rows[dst_row]
                    if v is None:
                        v = ws.rows[dst_row] = ex.bits[dst_row, ws.lanes]
                    v.fill(r)
                    return None
            ws.uni[dst_row] = None
            return vec_fn(ex, ws, mask)
    else:
        rb, mb = gb.uni_row

        def fn(ex, ws, mask):
            if mask is ws.active and ws.full:
                uni = ws.uni
                a, b = uni[ra], uni[rb]
                if a is not None and b is not None:
                    r = sfn(a if ma is None else a & ma, b if mb is None else b & mb) & m
                    uni[dst_row] = r
                    v = ws.rows[dst_row]
                    if v is None:
                        v = ws.rows[dst_row] = ex.bits[dst_row, ws.lanes]
                    v.fill(r)
                    return None
            ws.uni[dst_row] = None
            return vec_fn(ex, ws, mask)
    fn.scalar_aware = True
    return fn


def with_scalar(vec_fn, getters, dst_row: int, sfn, width: int):
    """ALU op with a warp-uniform fast path: sfn(*ints) -> int result bits (masked to width)."""
    m = (1 << width) - 1 if width > 1 else 1
    if any(g is None for g in getters):
        return invalidating(vec_fn, (dst_row,))
    n = len(getters)
    if n == 2 and hasattr(getters[0], "uni_row") and (hasattr(getters[1], "uni_row") or hasattr(getters[1], "const")):
        return _two_operand(vec_fn, getters[0], getters[1], dst_row, sfn, m)

    def fn(ex, ws, mask):
        if mask is ws.active and ws.full:
            if n == 2:
                a = getters[0](ex, ws)
                b = getters[1](ex, ws)
                if a is not None and b is not None:
                    r = sfn(a, b) & m
                    ws.uni[dst_row] = r
                    v = ws.rows[dst_row]
                    if v is None:
                        v = ws.rows[dst_row] = ex.bits[dst_row, ws.lanes]
                    v.fill(r)
                    return None
            else:
                vals = [g(ex, ws) for g in getters]
                if None not in vals:
                    r = sfn(*vals) & m
                    ws.uni[dst_row] = r
                    v = ws.rows[dst_row]
                    if v is None:
                        v = ws.rows[dst_row] = ex.bits[dst_row, ws.lanes]
                    v.fill(r)
                    return None
        ws.uni[dst_row] = None
        return vec_fn(ex, ws, mask)
    fn.scalar_aware = True
    return fn


def invalidating(fn, rows):
    """Wrap an op so the registers it writes lose their uniform value first."""
    rows = sorted(rows)
    if getattr(fn, "scalar_aware", False):
        return fn
    runs = []  # contiguous row runs (a register vector is one run): cleared by slice assignment
    for r in rows:
        if runs and runs[-1][1] == r:
            runs[-1][1] = r + 1
        else:
            runs.append([r, r + 1])
    runs = tuple((a, b, [None] * (b - a)) for a, b in runs)

    def wrapped(ex, ws, mask):
        uni = ws.uni
        for a, b, nones in runs:
            uni[a:b] = nones
        return fn(ex, ws, mask)
    wrapped.scalar_aware = True
    return wrapped


def invalidating_with_values(fn, rows):
    """`invalidating` for an op that writes its registers only when the executor computes values
    (wgmma's accumulators, at completion): in timing-only mode their bits do not change, so their
    uniform values stay true (a timing-only epilogue converts them on the fast path)."""
    inner = invalidating(fn, rows)

    def wrapped(ex, ws, mask):
        return inner(ex, ws, mask) if ex.values else fn(ex, ws, mask)
    wrapped.scalar_aware = True
    return wrapped


def uniform_operand(opnd, t: str, ctx: Ctx, what: str):
    """(ex, ws, mask) -> the warp-uniform int value of an operand (scalar fast path, else checked)."""
    sg = scalar_getter(opnd, t, ctx)
    vg = value_getter(opnd, t, ctx)

    def g(ex, ws, mask):
        if sg is not None:
            v = sg(ex, ws)
            if v is not None:
                return v
        return uniform(vg(ex, ws), mask, what)
    return g


def uniform_address(mem, ctx: Ctx, what: str):
    """(ex, ws, mask) -> the warp-uniform byte address of a Mem operand."""
    sa = scalar_address(mem, ctx)
    va = address_getter(mem, ctx)

    def g(ex, ws, mask):
        v = sa(ex, ws)
        if v is not None:
            return v
        return uniform(va(ex, ws), mask, what)
    return g
