"""Functional semantics of atom and red on global and shared memory (PTX ISA, atom / red).

Sequentially consistent in issue order: each executing lane's read-modify-write is applied in
turn, lanes in lane order (one legal serialisation of a warp's atomics), so lanes that hit the same
address see each other's results. atom writes each lane's old value to d. Integer operations wrap
at the type width; min/max of .s32/.s64 compare signed; inc: old >= b ? 0 : old + 1; dec:
old == 0 or old > b ? b : old - 1; cas: old == b ? c : old. atom/red.add.f32 rounds to nearest
even and flushes subnormal inputs and results to sign-preserving zero (PTX ISA, atom: ".add.f32
... flushes subnormal inputs and results"); .f64 does not flush. The effect's extra["atomic"] is
(timing class "<atom|red>_<space>_<f32|u32>", most lanes on one address) for hopsim/timing/atomics.py.
"""

from __future__ import annotations

import numpy as np

from isa.ir import instructions as I

from hopsim.functional.checks import CHUNK
from hopsim.functional.effect import Effect, Kind
from hopsim.functional.ops_mem import _check_smem, _lane_addrs, _sector_ranges
from hopsim.functional.regs import TYPES
from hopsim.functional.semantics import address_getter, reg_setter, semantics, signed, value_getter

_F32_TINY = float(np.finfo(np.float32).tiny)


def _ftz32(x: float) -> float:
    return float(np.copysign(np.float32(0), x)) if abs(x) < _F32_TINY else x


def rmw(op: str, t: str):
    """f(old, b, c) -> new for raw integer bits (ints) or float values, of type t."""
    w = TYPES[t][1]
    m = (1 << w) - 1
    if t == "f32":
        return {"add": lambda o, b, c: _ftz32(float(np.float32(_ftz32(o)) + np.float32(_ftz32(b))))}[op]
    if t == "f64":
        return {"add": lambda o, b, c: o + b}[op]
    sv = (lambda v: signed(v, w)) if t[0] == "s" else (lambda v: v)
    return {
        "add": lambda o, b, c: (o + b) & m,
        "min": lambda o, b, c: o if sv(o) <= sv(b) else b,
        "max": lambda o, b, c: o if sv(o) >= sv(b) else b,
        "inc": lambda o, b, c: 0 if o >= b else (o + 1) & m,
        "dec": lambda o, b, c: b if o == 0 or o > b else o - 1,
        "and": lambda o, b, c: o & b, "or": lambda o, b, c: o | b, "xor": lambda o, b, c: o ^ b,
        "exch": lambda o, b, c: b,
        "cas": lambda o, b, c: c if o == b else o,
    }[op]


def _operand(g, ex, ws, float_: bool, m: int):
    v = np.broadcast_to(np.asarray(g(ex, ws)), (32,))
    return [float(x) for x in v] if float_ else [int(x) & m for x in v]


def _build(ins, ctx, returns: bool):
    t, space = ins.type, ins.space
    w = TYPES[t][1]
    esize, m = w // 8, (1 << w) - 1
    float_ = t[0] == "f"
    vt = t if float_ else "u32" if w == 32 else "u64"     # operands read as raw unsigned bits
    ga = address_getter(ins.addr, ctx)
    gb = value_getter(ins.b, vt, ctx)
    gc = value_getter(ins.c, vt, ctx) if ins.c is not None else None
    st = reg_setter(ins.dst, vt, ctx) if returns else None
    f = rmw(ins.op, t)
    dt = np.dtype(np.float32 if t == "f32" else np.float64 if t == "f64" else np.uint32 if w == 32 else np.uint64)
    what = f"{ins.mnemonic.split('.')[0]}.{space}"
    cls = f"{'atom' if returns else 'red'}_{space}_{'f32' if float_ else 'u32'}"  # timing class (timing/atomics.py)

    def fn(ex, ws, mask):
        addrs = _lane_addrs(ga(ex, ws), mask)
        n = len(addrs)
        if space == "shared":
            _check_smem(ex, addrs, esize, what)
            chk = ex.checker
            if chk.active and chk.tma_inflight:
                chk.smem_read(addrs // CHUNK, what)
            if chk.active and chk.wgmma_inflight:
                chk.smem_write(addrs // CHUNK, what)
        if n:
            lanes = np.flatnonzero(mask)
            b = _operand(gb, ex, ws, float_, m)
            c = _operand(gc, ex, ws, float_, m) if gc is not None else [0] * 32
            old = np.zeros(32, dt)
            for lane, a in zip(lanes.tolist(), addrs.tolist()):
                cell = _cell(ex, space, a, dt)
                o = float(cell[0]) if float_ else int(cell[0])
                old[lane] = o
                cell[0] = f(o, b[lane], c[lane])
                if space == "global":
                    ex.gmem.store(np.array([a], np.int64), cell.reshape(1, 1), dt)
            if st is not None:
                st(ex, ws, old, mask)
        eff = _effect(ws, space, returns, addrs, esize)
        eff.extra["atomic"] = (cls, int(np.unique(addrs, return_counts=True)[1].max()) if n else 0)
        return eff
    return fn


def _cell(ex, space: str, addr: int, dt) -> np.ndarray:
    """A one-element array holding the value at addr: a view into shared memory, or a copy of the
    global value (written back by the caller)."""
    if space == "shared":
        return ex.smem[addr:addr + dt.itemsize].view(dt)
    return ex.gmem.load(np.array([addr], np.int64), dt, 1).reshape(1).copy()


def _effect(ws, space: str, returns: bool, addrs, esize: int) -> Effect:
    n = len(addrs)
    if space == "shared":
        return Effect(kind=Kind.LD_SHARED if returns else Kind.ST_SHARED, warp=ws.w, lanes=n, smem_addrs=addrs,
                      smem_access_bytes=esize, smem_bytes=n * esize, is_write=not returns)
    return Effect(kind=Kind.LD_GLOBAL if returns else Kind.ST_GLOBAL, warp=ws.w, lanes=n,
                  gmem_ranges=_sector_ranges(addrs, esize), gmem_bytes=n * esize, is_write=not returns,
                  smem_access_bytes=esize)


@semantics(I.AtomGlobal, I.AtomShared)
def _atom(ins, ctx):
    return _build(ins, ctx, True)


@semantics(I.RedGlobal, I.RedShared)
def _red(ins, ctx):
    return _build(ins, ctx, False)
