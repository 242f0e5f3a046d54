"""Builders of the asynchronous instructions: TMA loads/stores and wgmma.mma_async.

Their data moves in `Effect.complete()` (called by the timing layer at the modelled time, or by the
functional runner lazily), never at issue:

    cp.async.bulk.tensor (load)   issue: checks, smem range, tx bytes   complete: box -> smem, complete_tx
    cp.async.bulk.tensor (store)  issue: checks, bulk group             extra["read_complete"]: source read
                                                                        (smem snapshot, .read group done);
                                                                        complete: (read if not yet) ->
                                                                        global, group done
    wgmma.mma_async               issue: fence rule, operand chunks     complete: fetch A/B through the
                                  (collective, once per warpgroup)                descriptors, D = A.B + D

The box copy, the tensor-map geometry and the descriptor operand fetch come from the layouts modules
(`hopsim.functional.tma`, `hopsim.functional.layouts`) through `bridge.py`.
"""

from __future__ import annotations

import itertools

import numpy as np

from isa.ir import instructions as I
from isa.ir.operands import Imm, Sym

from hopsim.functional import bridge
from hopsim.functional import wgmma as W
from hopsim.functional.checks import CHUNK
from hopsim.functional.effect import Effect, Kind, WgmmaInfo
from hopsim.functional.errors import IllegalInstruction
from hopsim.functional.ops_sync import advance_bulk, advance_bulk_read, advance_groups, bulk_state, collective
from hopsim.functional.semantics import (address_getter, invalidating_with_values, semantics, uniform, uniform_address,
                                         uniform_operand, value_getter)

_IDS = itertools.count(1)


def _tmap_getter(tmap, ctx):
    if isinstance(tmap, Sym):
        name = tmap.name
        return lambda ex, ws, mask: int(ex.param(name))
    return uniform_operand(tmap, "u64", ctx, "tensor-map address")


def _coords_getter(coords, ctx):
    gs = [uniform_operand(c, "u32", ctx, f"TMA coordinate {i}") for i, c in enumerate(coords)]
    if len(gs) == 2:  # the common 2-D box, without a generator
        g0, g1 = gs

        def g2(ex, ws, mask):  # signed 32-bit element coordinates
            a = g0(ex, ws, mask)
            b = g1(ex, ws, mask)
            return (a - (1 << 32) if a >> 31 else a, b - (1 << 32) if b >> 31 else b)
        return g2

    def g(ex, ws, mask):  # signed 32-bit element coordinates
        return tuple(v - (1 << 32) if v >> 31 else v for v in (f(ex, ws, mask) for f in gs))
    return g


def tma_coords_getter(ins, ctx):
    """(ex, ws, mask) -> the element coordinates of a TMA instruction `ins`, as its op reads them
    (timing/tile_offsets.py replays them for every CTA)."""
    return _coords_getter(ins.coords, ctx)


@semantics(I.CpAsyncBulkTensorLoad)
def _tma_load(ins, ctx):
    gdst = uniform_address(ins.dst, ctx, "TMA destination")
    gmbar = uniform_address(ins.mbar, ctx, "TMA mbarrier")
    gtmap = _tmap_getter(ins.tmap, ctx)
    gcoords = _coords_getter(ins.coords, ctx)

    def fn(ex, ws, mask):
        n = 0 if mask is ws.none else int(np.count_nonzero(mask))
        if n == 0:
            return Effect(kind=Kind.TMA_LOAD, warp=ws.w, lanes=0)
        dst = gdst(ex, ws, mask)
        mbar = gmbar(ex, ws, mask)
        handle = gtmap(ex, ws, mask)
        coords = gcoords(ex, ws, mask)
        tmap = ex.gmem.tensor_map(handle)
        _t, nbytes, foot = bridge.geometry(tmap)
        if dst % 128 or dst < 0 or dst + foot > ex.smem_size:
            raise IllegalInstruction(f"TMA destination smem [0x{dst:x}, 0x{dst + foot:x}) must be 128-B aligned and "
                                     f"inside the CTA's {ex.smem_size} shared bytes")
        ex.mbarrier(mbar)  # must exist at issue
        op = ex.prog.ops[ws.pc]
        idents = [next(_IDS)] if n == 1 else [next(_IDS) for _ in range(n)]
        if ex.checker.active:
            for ident in idents:
                ex.checker.tma_issue(ident, dst, dst + foot, ws, op, mbar)
        values = ex.values
        ranges = bridge.global_ranges(ex.gmem, tmap, coords)

        def complete():
            fired = []
            for ident in idents:
                if values:
                    bridge.tma_load(ex.gmem, tmap, coords, ex.smem, dst)
                ex.checker.tma_land(ident)
                bar = ex.mbar.get(mbar)
                if bar is None:
                    raise IllegalInstruction(f"TMA load completes on shared 0x{mbar:x}, which holds no mbarrier anymore",
                                             index=op.index, text=op.text, warp=ws.w, cta=ex.cta_linear, barrier=mbar)
                before = bar.phase
                try:
                    if bar.complete_tx(nbytes):
                        fired.append(("mbar", mbar, before))
                except Exception as e:  # name where the TMA came from
                    if hasattr(e, "located"):
                        e.located(warp=ws.w, cta=ex.cta_linear, index=op.index, text=op.text)
                    raise
            return tuple(fired)

        return Effect(kind=Kind.TMA_LOAD, warp=ws.w, lanes=n, smem_range=(dst, dst + foot), smem_bytes=n * nbytes,
                      gmem_ranges=ranges, gmem_bytes=n * nbytes, tile_key=(handle, coords), mbarrier=mbar,
                      phase=ex.mbar[mbar].phase, tx_bytes=n * nbytes, complete=complete)
    return fn


@semantics(I.CpAsyncBulkTensorStore)
def _tma_store(ins, ctx):
    gsrc = uniform_address(ins.src, ctx, "TMA source")
    gtmap = _tmap_getter(ins.tmap, ctx)
    gcoords = _coords_getter(ins.coords, ctx)

    def fn(ex, ws, mask):
        n = 0 if mask is ws.none else int(np.count_nonzero(mask))
        if n == 0:
            return Effect(kind=Kind.TMA_STORE, warp=ws.w, lanes=0)
        src = gsrc(ex, ws, mask)
        handle = gtmap(ex, ws, mask)
        coords = gcoords(ex, ws, mask)
        tmap = ex.gmem.tensor_map(handle)
        nbytes = bridge.box_bytes(tmap)
        foot = bridge.smem_footprint(tmap)
        if src % 128 or src < 0 or src + foot > ex.smem_size:
            raise IllegalInstruction(f"TMA source smem [0x{src:x}, 0x{src + foot:x}) must be 128-B aligned and "
                                     f"inside the CTA's {ex.smem_size} shared bytes")
        if ex.checker.active:
            ex.checker.smem_read((src // CHUNK, -(-(src + foot) // CHUNK)), "TMA store")
        st = bulk_state(ex, ws.w)
        rec = [next(_IDS), False, False]  # id, written, source read
        st["uncommitted"].append(rec)
        group = st["committed"]
        values = ex.values
        w = ws.w
        snap = []

        def read_complete():
            """The source has been read: its bytes are taken now (the smem may be reused after
            cp.async.bulk.wait_group.read), written to global memory at complete()."""
            if rec[2]:
                return ()
            if values:
                buf = np.zeros(src + foot, dtype=np.uint8)
                buf[src:] = ex.smem[src:src + foot]
                snap.append(buf)
            rec[2] = True
            return advance_bulk_read(ex, w)

        def complete():
            fired = read_complete()
            if values:
                for _ in range(n):
                    bridge.tma_store(ex.gmem, tmap, coords, snap[0], src)
            rec[1] = True
            return fired + advance_bulk(ex, w)

        return Effect(kind=Kind.TMA_STORE, warp=ws.w, lanes=n, smem_range=(src, src + foot), smem_bytes=n * nbytes,
                      gmem_ranges=bridge.global_ranges(ex.gmem, tmap, coords), gmem_bytes=n * nbytes, is_write=True,
                      tile_key=(handle, coords), group=group, complete=complete,
                      extra={"read_complete": read_complete})
    return fn


_CHUNKS: dict = {}


def _chunks(desc_a, desc_b, n, dtype_a, dtype_b, ta, tb) -> np.ndarray:
    """Sorted unique 16-B smem chunks read by one wgmma (A through desc_a unless None, and B)."""
    key = (desc_a, desc_b, n, dtype_a, ta, tb)
    c = _CHUNKS.get(key)
    if c is None:
        cb = bridge.operand_chunks(desc_b, "B", n, dtype_b, tb)
        c = cb if desc_a is None else np.union1d(bridge.operand_chunks(desc_a, "A", 64, dtype_a, ta), cb)
        if len(_CHUNKS) > 4096:
            _CHUNKS.clear()
        _CHUNKS[key] = c
    return c


@semantics(I.WgmmaMmaAsync)
def _wgmma(ins, ctx):
    n = ins.shape_n
    dtype_d, dtype_a, dtype_b = ins.dtype_d, ins.dtype_a, ins.dtype_b
    a_regs = ins.a_from_regs
    info = WgmmaInfo(n=n, dtype_a=dtype_a, dtype_b=dtype_b, dtype_d=dtype_d, a_from_regs=a_regs)
    d_rows = np.array([ctx.row(r) for r in ins.d.regs], dtype=np.intp)
    a_rows = np.array([ctx.row(r) for r in ins.a.regs], dtype=np.intp) if a_regs else None
    a_desc_row = None if a_regs else ctx.row(ins.a)
    b_desc_row = ctx.row(ins.b_desc)
    rows = frozenset(d_rows.tolist()) | (frozenset(a_rows.tolist()) if a_regs else frozenset())
    ctx.wgmma_rows |= rows
    scale_d = ins.scale_d
    sd_const = int(scale_d.value) if isinstance(scale_d, Imm) else None
    sd_row = None if sd_const is not None else ctx.row(scale_d)
    sa, sb = int(ins.imm_scale_a), int(ins.imm_scale_b)
    ta, tb = int(ins.imm_trans_a), int(ins.imm_trans_b)

    def body(ex, g, ws, mask):
        lanes = slice(128 * g.g, 128 * g.g + 128)
        desc_b = int(ex.bits[b_desc_row, lanes.start])
        desc_a = None if a_regs else int(ex.bits[a_desc_row, lanes.start])
        scale = sd_const if sd_const is not None else int(ex.bits[sd_row, lanes.start] != 0)
        chk = ex.checker
        if chk.active:
            chk.wgmma_fence_rule(g, rows, ex.prog.ops[ws.pc])
        chunks = _chunks(desc_a, desc_b, n, dtype_a, dtype_b, ta, tb)
        if len(chunks) and (chunks[0] < 0 or chunks[-1] * CHUNK + CHUNK > ex.smem_size):
            raise IllegalInstruction(f"wgmma operand through descriptor reads shared 0x{int(chunks[-1]) * CHUNK:x}, "
                                     f"outside the CTA's {ex.smem_size} shared bytes")
        ident = next(_IDS)
        group = g.committed
        if chk.active:
            chk.wgmma_issue(ident, chunks, g, group, ws, ex.prog.ops[ws.pc])
        rec = [ident, False, rows]
        g.uncommitted.append(rec)
        g.inflight_rows |= rows  # (a set of its own: retire_groups makes a new one)
        values = ex.values

        def complete():
            if values:
                b = W.to_f32(bridge.fetch_operand(ex.smem, desc_b, "B", n, dtype_b, tb), dtype_b)   # (N, 16)
                if a_regs:
                    a = W.unpack_a_registers(ex.bits[a_rows, lanes], dtype_a)
                else:
                    a = W.to_f32(bridge.fetch_operand(ex.smem, desc_a, "A", 64, dtype_a, ta), dtype_a)  # (64, 16)
                d = W.unpack_accumulator(ex.bits[d_rows, lanes], n, dtype_d) if scale else None
                out = W.mma(a, b.T, d, dtype_d=dtype_d, scale_d=bool(scale), scale_a=sa, scale_b=sb)
                ex.bits[d_rows, lanes] = W.pack_accumulator(out, dtype_d)
            rec[1] = True
            return advance_groups(ex, g)

        return Effect(kind=Kind.WGMMA, warp=ws.w, lanes=128, wgmma=info, group=group,
                      smem_bytes=info.operand_bytes, complete=complete, extra={"desc_a": desc_a, "desc_b": desc_b})
    return invalidating_with_values(collective(Kind.WGMMA, body), sorted({ctx.row(r) for r in ins.writes()}))
