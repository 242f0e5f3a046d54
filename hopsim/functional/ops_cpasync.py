"""Semantics of cp.async (global -> shared, per thread), cp.async.commit_group, cp.async.wait_group
and cp.async.wait_all (declarations and PTX rules: isa/ir/ops/cpasync.py).

At issue each active lane's destination (shared, aligned to cp-size) and source (global, aligned to
cp-size) are checked and the copy joins the warp's open group; the data lands when the timing layer
(or the functional runner) calls the effect's `complete()`: the first src-size bytes come from global
memory, the rest of the cp-size bytes are zero (src-size 0: nothing is read). Groups are kept per
warp, as the bulk groups of TMA stores (PTX keeps them per thread; a warp whose lanes commit or wait
at different points is not modelled):

    ex.cpasync[w] = {"uncommitted": [rec...], "groups": [[rec...], ...], "committed": n, "completed": k}
    commit_group: groups += [uncommitted]; wait_group N: block on ("cpasync", w, committed - N - 1)
    a group completes when all its copies have landed and every older group has (in order).
"""

from __future__ import annotations

import itertools

import numpy as np

from isa.ir import instructions as I
from isa.ir.operands import Imm

from hopsim.functional.checks import CHUNK
from hopsim.functional.effect import Effect, Kind
from hopsim.functional.errors import IllegalInstruction
from hopsim.functional.ops_mem import _check_smem, _lane_addrs, _sector_ranges
from hopsim.functional.semantics import address_getter, semantics, value_getter

_IDS = itertools.count(1)


def cp_state(ex, w: int) -> dict:
    st = ex.cpasync.get(w)
    if st is None:
        st = ex.cpasync[w] = {"uncommitted": [], "groups": [], "committed": 0, "completed": 0}
    return st


def advance_cp(ex, w: int) -> tuple:
    """Complete the oldest committed groups whose copies have all landed; their event keys."""
    st = cp_state(ex, w)
    fired = []
    while st["completed"] < st["committed"] and all(rec[1] for rec in st["groups"][st["completed"]]):
        st["completed"] += 1
        fired.append(("cpasync", w, st["completed"] - 1))
    return tuple(fired)


def _src_size_getter(ins, ctx):
    size = int(ins.size)
    s = ins.src_size
    if s is None:
        return lambda ex, ws, mask, n: np.full(n, size, dtype=np.int64)
    if isinstance(s, Imm):
        v = int(s.value)
        return lambda ex, ws, mask, n: np.full(n, v, dtype=np.int64)
    g = value_getter(s, "u32", ctx)

    def get(ex, ws, mask, n):
        v = g(ex, ws)
        if np.ndim(v) == 0:
            return np.full(n, int(v), dtype=np.int64)
        return np.asarray(v, dtype=np.int64)[mask]
    return get


def _land(ex, dst: np.ndarray, src: np.ndarray, ssz: np.ndarray, size: int) -> None:
    """Write each lane's cp-size bytes: src-size bytes from global memory, then zeros."""
    data = np.zeros((len(dst), size), dtype=np.uint8)
    for s in np.unique(ssz):
        s = int(s)
        if s == 0:
            continue
        rows = np.flatnonzero(ssz == s)
        byte_addrs = (src[rows][:, None] + np.arange(s)).ravel().astype(np.uint64)  # any src-size: byte loads
        data[rows, :s] = ex.gmem.load(byte_addrs, np.uint8, 1).reshape(len(rows), s)
    ex.smem[dst[:, None] + np.arange(size)] = data


@semantics(I.CpAsync)
def _cp_async(ins, ctx):
    size = int(ins.size)
    gd = address_getter(ins.dst, ctx)
    gs = address_getter(ins.src, ctx)
    gss = _src_size_getter(ins, ctx)

    def fn(ex, ws, mask):
        dst = _lane_addrs(gd(ex, ws), mask)
        n = len(dst)
        if n == 0:
            return Effect(kind=Kind.CP_ASYNC, warp=ws.w, lanes=0)
        src = _lane_addrs(gs(ex, ws), mask)
        ssz = gss(ex, ws, mask, n)
        _check_smem(ex, dst, size, "cp.async destination")
        if np.any(src % size):
            bad = int(src[np.flatnonzero(src % size)[0]])
            raise IllegalInstruction(f"cp.async source at global 0x{bad:x} is not {size}-byte aligned")
        if np.any((ssz < 0) | (ssz > size)):
            bad = int(ssz[np.flatnonzero((ssz < 0) | (ssz > size))[0]])
            raise IllegalInstruction(f"cp.async src-size {bad} is outside 0..{size} (cp-size)")
        chk = ex.checker
        if chk.active and chk.wgmma_inflight:
            chk.smem_write(dst // CHUNK, "cp.async")
        st = cp_state(ex, ws.w)
        rec = [next(_IDS), False]
        st["uncommitted"].append(rec)
        group = st["committed"]
        values = ex.values
        w = ws.w
        read = ssz > 0

        def complete():
            if values:
                _land(ex, dst, src, ssz, size)
            rec[1] = True
            return advance_cp(ex, w)

        return Effect(kind=Kind.CP_ASYNC, warp=ws.w, lanes=n, smem_addrs=dst, smem_access_bytes=size,
                      smem_bytes=n * size, gmem_ranges=_sector_ranges(src[read], size),
                      gmem_bytes=int(ssz.sum()), group=group, complete=complete)
    return fn


def _commit(ex, ws) -> int:
    st = cp_state(ex, ws.w)
    group = st["committed"]
    st["groups"].append(st["uncommitted"])
    st["uncommitted"] = []
    st["committed"] += 1
    return group


def _wait(ex, ws, n: int, fired: tuple) -> Effect:
    st = cp_state(ex, ws.w)
    need = st["committed"] - n
    if need <= 0 or st["completed"] >= need:
        return Effect(kind=Kind.CP_ASYNC_WAIT, warp=ws.w, lanes=ws.nactive, fired=fired)
    key = ("cpasync", ws.w, need - 1)
    ws.block = (key, Kind.CP_ASYNC_WAIT, True, None)
    return Effect(kind=Kind.CP_ASYNC_WAIT, warp=ws.w, lanes=ws.nactive, group=need - 1, blocked_on=key,
                  fired=fired)


@semantics(I.CpAsyncCommitGroup)
def _cp_commit(ins, ctx):
    def fn(ex, ws, mask):
        group = _commit(ex, ws)
        return Effect(kind=Kind.CP_ASYNC_COMMIT, warp=ws.w, lanes=int(np.count_nonzero(mask)), group=group,
                      fired=advance_cp(ex, ws.w))
    return fn


@semantics(I.CpAsyncWaitGroup)
def _cp_wait_group(ins, ctx):
    n = int(ins.n)
    return lambda ex, ws, mask: _wait(ex, ws, n, ())


@semantics(I.CpAsyncWaitAll)
def _cp_wait_all(ins, ctx):
    def fn(ex, ws, mask):
        _commit(ex, ws)
        return _wait(ex, ws, 0, advance_cp(ex, ws.w))
    return fn
