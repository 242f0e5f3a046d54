"""Builders of the synchronous memory instructions: ld/st.shared, ld/st.global, ldmatrix, stmatrix.

Shared addresses are byte offsets in the CTA's shared window (0 .. static + dynamic bytes). Data moves
at issue (these are synchronous for the issuing warp; the timing layer only delays the warp).

ldmatrix .m8n8.x{1,2,4}.b16: lanes 8j..8j+7 give the 16-byte row addresses of matrix j; thread t
receives in register j the b16 pair (row t/4, cols 2(t%4), 2(t%4)+1) of matrix j (.trans: of its
transpose). stmatrix is the inverse. (PTX ISA §9.7.9.26-27.)

        matrix j (8x8 b16)            thread t, register j
        row r: [c0 c1 | c2 c3 | ...]   = M[t/4][2(t%4)] | M[t/4][2(t%4)+1] << 16
                T4r   T4r+1 ...
"""

from __future__ import annotations

import numpy as np

from isa.ir import instructions as I

from hopsim.functional.checks import CHUNK
from hopsim.functional.effect import Effect, Kind
from hopsim.functional.errors import IllegalInstruction
from hopsim.functional.simt import whole_warp
from hopsim.functional.semantics import address_getter, semantics, reader, writer
from hopsim.functional.regs import TYPES

_U = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_ARANGE = {n: np.arange(n) for n in (1, 2, 4, 8, 16)}


def _lane_addrs(a, mask) -> np.ndarray:
    if type(a) is not np.ndarray:
        return np.full(int(np.count_nonzero(mask)), int(a), dtype=np.int64)
    if mask.shape[0] == 32 and mask is not None and a.shape[0] == 32 and _full(mask):
        return a
    return a[mask]


def _full(mask) -> bool:
    return mask.tobytes() == _ALL_TRUE


_ALL_TRUE = np.ones(32, dtype=bool).tobytes()


def _check_smem(ex, addrs: np.ndarray, size: int, what: str) -> None:
    if len(addrs) == 0:
        return
    lo, hi = int(addrs.min()), int(addrs.max())
    if lo < 0 or hi + size > ex.smem_size:
        raise IllegalInstruction(f"{what} at shared 0x{lo if lo < 0 else hi:x}+{size} is outside the CTA's "
                                 f"{ex.smem_size} shared bytes")
    if np.any(addrs & (size - 1)):
        bad = int(addrs[np.flatnonzero(addrs & (size - 1))[0]])
        raise IllegalInstruction(f"{what} at shared 0x{bad:x} is not {size}-byte aligned")


def _dst_rows(ins, ctx):
    regs = ins.dst.regs if hasattr(ins.dst, "regs") else (ins.dst,)
    return [ctx.row(r) for r in regs]


def _src_rows(ins, ctx):
    regs = ins.src.regs if hasattr(ins.src, "regs") else (ins.src,)
    return [ctx.row(r) for r in regs]


def _sign_extend(t: str):
    """Loads of s8/s16 sign-extend into the (>= 32-bit) register: return the value dtype to write."""
    return {"s8": "s32", "s16": "s32"}.get(t, {"u8": "u32", "b8": "u32"}.get(t, t))


@semantics(I.LdShared)
def _ld_shared(ins, ctx):
    t = ins.type
    vec = ins.vec
    esize = TYPES[t][1] // 8
    size = esize * vec
    dt = TYPES[t][0]
    rows = _dst_rows(ins, ctx)
    wr = writer(_sign_extend(t))
    ga = address_getter(ins.addr, ctx)
    span = _ARANGE[size]

    def fn(ex, ws, mask):
        addrs = _lane_addrs(ga(ex, ws), mask)
        n = len(addrs)
        _check_smem(ex, addrs, size, "ld.shared")
        chk = ex.checker
        if chk.active and chk.tma_inflight:
            chk.smem_read(addrs // CHUNK, "ld.shared")
        if n:
            vals = ex.smem[addrs[:, None] + span].view(dt).reshape(n, vec)
            lanes = ws.lanes
            for i, r in enumerate(rows):
                dst = ex.bits[r, lanes]
                dst[mask] = wr(vals[:, i])
        return Effect(kind=Kind.LD_SHARED, warp=ws.w, lanes=n, smem_addrs=addrs, smem_access_bytes=size,
                      smem_bytes=n * size)
    return fn


@semantics(I.StShared)
def _st_shared(ins, ctx):
    t = ins.type
    vec = ins.vec
    esize = TYPES[t][1] // 8
    size = esize * vec
    rows = _src_rows(ins, ctx)
    rd = reader({1: "b8", 2: "b16", 4: "b32", 8: "b64"}[esize] if t not in ("u8", "s8", "b8") else "b16")
    udt = _U[esize]
    ga = address_getter(ins.addr, ctx)
    span = _ARANGE[size]

    def fn(ex, ws, mask):
        addrs = _lane_addrs(ga(ex, ws), mask)
        n = len(addrs)
        _check_smem(ex, addrs, size, "st.shared")
        chk = ex.checker
        if chk.active and chk.wgmma_inflight:
            chk.smem_write(addrs // CHUNK, "st.shared")
        if n:
            lanes = ws.lanes
            vals = np.empty((n, vec), dtype=udt)
            for i, r in enumerate(rows):
                vals[:, i] = rd(ex.bits[r, lanes][mask]).astype(udt)
            ex.smem[addrs[:, None] + span] = vals.view(np.uint8).reshape(n, size)
        return Effect(kind=Kind.ST_SHARED, warp=ws.w, lanes=n, smem_addrs=addrs, smem_access_bytes=size,
                      smem_bytes=n * size, is_write=True)
    return fn


def _sector_ranges(addrs: np.ndarray, size: int, aligned: bool = False) -> tuple:
    """Global (address, nbytes) runs of the 32-B sectors a warp access touches. `aligned`: every
    address is a multiple of `size` (GlobalMemory.load/store raise otherwise), so an access of a
    size dividing 32 lies in one sector."""
    if len(addrs) == 0:
        return ()
    al = addrs.tolist()
    if aligned and 32 % size == 0:
        secs = sorted({x >> 5 for x in al})
    else:
        secs = sorted({x >> 5 for x in al} | {(x + size - 1) >> 5 for x in al})
    out = []
    start = prev = secs[0]
    for s in secs[1:]:
        if s != prev + 1:
            out.append((start * 32, (prev - start + 1) * 32))
            start = s
        prev = s
    out.append((start * 32, (prev - start + 1) * 32))
    return tuple(out)


@semantics(I.LdGlobal)
def _ld_global(ins, ctx):
    t = ins.type
    vec = ins.vec
    esize = TYPES[t][1] // 8
    dt = TYPES[t][0]
    rows = _dst_rows(ins, ctx)
    wr = writer(_sign_extend(t))
    ga = address_getter(ins.addr, ctx)

    def fn(ex, ws, mask):
        addrs = _lane_addrs(ga(ex, ws), mask)
        n = len(addrs)
        if n:
            vals = ex.gmem.load(addrs.astype(np.uint64), dt, vec)
            lanes = ws.lanes
            for i, r in enumerate(rows):
                dst = ex.bits[r, lanes]
                dst[mask] = wr(vals[:, i])
        return Effect(kind=Kind.LD_GLOBAL, warp=ws.w, lanes=n, gmem_ranges=_sector_ranges(addrs, esize * vec, True),
                      gmem_bytes=n * esize * vec, smem_access_bytes=esize * vec)
    return fn


@semantics(I.StGlobal)
def _st_global(ins, ctx):
    t = ins.type
    vec = ins.vec
    esize = TYPES[t][1] // 8
    dt = TYPES[t][0]
    rows = _src_rows(ins, ctx)
    rd = reader(t if TYPES[t][1] >= 16 else "b16")
    ga = address_getter(ins.addr, ctx)

    def fn(ex, ws, mask):
        addrs = _lane_addrs(ga(ex, ws), mask)
        n = len(addrs)
        if n:
            def values():  # read only when the buffer keeps data (GlobalMemory.store)
                lanes = ws.lanes
                full = mask is ws.active and ws.full
                vals = np.empty((n, vec), dtype=dt)
                for i, r in enumerate(rows):
                    vals[:, i] = rd(ex.bits[r, lanes] if full else ex.bits[r, lanes][mask])
                return vals
            ex.gmem.store(addrs, values, dt, vec)
        return Effect(kind=Kind.ST_GLOBAL, warp=ws.w, lanes=n, gmem_ranges=_sector_ranges(addrs, esize * vec, True),
                      gmem_bytes=n * esize * vec, is_write=True, smem_access_bytes=esize * vec)
    return fn


def _matrix_addrs(ex, ws, ga, num: int, what: str) -> np.ndarray:
    a = ga(ex, ws)
    if np.ndim(a) == 0:
        addrs = np.full(8 * num, int(a), dtype=np.int64)
    else:
        addrs = np.asarray(a[:8 * num], dtype=np.int64)
    _check_smem(ex, addrs, 16, what)
    return addrs


_SPAN16 = np.arange(16)


@semantics(I.Ldmatrix)
def _ldmatrix(ins, ctx):
    num, trans = ins.num, bool(ins.trans)
    rows = [ctx.row(r) for r in ins.regs.regs]
    ga = address_getter(ins.addr, ctx)

    def fn(ex, ws, mask):
        mask = whole_warp(ws, mask, "ldmatrix")
        if mask is None:
            return Effect(kind=Kind.ALU, warp=ws.w, lanes=0)
        addrs = _matrix_addrs(ex, ws, ga, num, "ldmatrix")
        chk = ex.checker
        if chk.active and chk.tma_inflight:
            chk.smem_read(addrs // CHUNK, "ldmatrix")
        m = ex.smem[addrs[:, None] + _SPAN16].view(np.uint16).reshape(num, 8, 8)
        if trans:
            m = m.transpose(0, 2, 1)
        pairs = np.ascontiguousarray(m).reshape(num, 32, 2).astype(np.uint64)
        packed = pairs[:, :, 0] | (pairs[:, :, 1] << np.uint64(16))
        lanes = ws.lanes
        for j, r in enumerate(rows):
            dst = ex.bits[r, lanes]
            dst[mask] = packed[j][mask]
        return Effect(kind=Kind.LDMATRIX, warp=ws.w, lanes=int(np.count_nonzero(mask)), smem_addrs=addrs,
                      smem_access_bytes=16, smem_bytes=num * 128)
    return fn


@semantics(I.Stmatrix)
def _stmatrix(ins, ctx):
    num, trans = ins.num, bool(ins.trans)
    rows = [ctx.row(r) for r in ins.regs.regs]
    ga = address_getter(ins.addr, ctx)

    def fn(ex, ws, mask):
        mask = whole_warp(ws, mask, "stmatrix")
        if mask is None:
            return Effect(kind=Kind.ALU, warp=ws.w, lanes=0)
        addrs = _matrix_addrs(ex, ws, ga, num, "stmatrix")
        chk = ex.checker
        if chk.active and chk.wgmma_inflight:
            chk.smem_write(addrs // CHUNK, "stmatrix")
        u = ex.bits[rows, ws.lanes].astype(np.uint32)           # [num, 32]
        pairs = np.stack([(u & 0xFFFF), (u >> 16)], axis=-1).astype(np.uint16)  # [num, 32, 2]
        m = pairs.reshape(num, 8, 8)
        if trans:
            m = m.transpose(0, 2, 1)
        ex.smem[addrs[:, None] + _SPAN16] = np.ascontiguousarray(m).view(np.uint8).reshape(8 * num, 16)
        return Effect(kind=Kind.STMATRIX, warp=ws.w, lanes=int(np.count_nonzero(mask)), smem_addrs=addrs,
                      smem_access_bytes=16, smem_bytes=num * 128, is_write=True)
    return fn
