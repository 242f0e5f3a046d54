"""Functional semantics of the warp collectives shfl.sync, vote.sync, redux.sync and bar.warp.sync (PTX ISA).

Each builder returns fn(ex, ws, mask) -> None or a pc (ALU class: register-only). `mask` is the
executing lanes (active and guard true). The membermask rule is enforced, not assumed
(`sync_lanes`, shared by the three): an executing lane outside membermask, or a running lane of
membermask whose guard is false, raises `MemberMaskError` (PTX ISA: undefined behaviour / a hang on
the GPU). Members on other paths of a divergent branch are waited for (simt.rendezvous): they meet
at this instruction or any other of the same qualifiers and membermask (PTX ISA, sm_70+), each lane
giving its own instruction's operand; the warp reconverges at the branch's immediate
post-dominator, so a full-warp membermask after an if/else or a per-lane loop finds every lane at
once. Members that have exited are not waited for (PTX ISA: the instruction waits for the
non-exited threads of membermask), and lanes of membermask beyond the warp's last thread (a partial
last warp) are ignored. A shfl.sync that sources a lane which does not execute raises
`MemberMaskError` too (PTX ISA: the result is undefined).
"""

from __future__ import annotations

import numpy as np

from isa.ir import instructions as I

from hopsim.functional.errors import MemberMaskError
from hopsim.functional.semantics import reg_setter, semantics, uniform, value_getter
from hopsim.functional.simt import rendezvous, why_absent

LANE = np.arange(32, dtype=np.int64)
LANE_BIT = np.uint32(1) << np.arange(32, dtype=np.uint32)


def _lanes(m) -> str:
    idx = np.flatnonzero(m).tolist()
    return ", ".join(str(i) for i in idx[:8]) + (" ..." if len(idx) > 8 else "")


def sync_lanes(ex, ws, mask, gm, quals: tuple, vals):
    """The membermask rule and the rendezvous of a shfl/vote/redux.sync (`quals`: its mnemonic and
    qualifiers; `vals`: the executing lanes' input, bool/int[32]). Returns (inputs, members, write,
    jump): the inputs of every member lane that meets (each lane's from its own instruction), those
    lanes, the lanes whose results this call writes, and jump True when the warp has just converged
    here (the op returns the next pc); or None while this path waits for members on other paths
    (simt.rendezvous; the op stays at its pc). MemberMaskError when an executing lane is outside
    membermask, or a running member lane does not execute it (its guard is false)."""
    what = quals[0]
    m = uniform(gm(ex, ws), mask, f"{what} membermask") & 0xFFFFFFFF
    member = (np.uint32(m) & LANE_BIT) != 0
    outside = mask & ~member
    if outside.any():
        raise MemberMaskError(f"{what}: lanes {_lanes(outside)} execute it but are not in membermask "
                              f"0x{m:08x} (PTX ISA: every executing lane must be in membermask)")
    idle = member & ws.live & ~mask  # exited members are not waited for (PTX ISA: "non-exited threads")
    if not idle.any() and not (ws.met and ws.pc in ws.met):
        return vals, mask, mask, False
    if (idle & ws.active).any():
        raise MemberMaskError(f"{what}: lanes {_lanes(idle & ws.active)} of membermask 0x{m:08x} do not execute it "
                              f"({why_absent(ws, idle & ws.active)}): PTX ISA requires every member lane to execute "
                              f"{what} with the same membermask (on the GPU this hangs or is undefined)")
    got = rendezvous(ws, mask, (*quals, m), member, vals, MemberMaskError)
    if got is None:
        return None
    vals, union, jump = got
    return vals, union, (union if jump else mask), jump


def shfl_source(mode: str, b, c) -> tuple[np.ndarray, np.ndarray]:
    """(source lane j, p) per lane from the PTX ISA pseudocode of shfl.sync:
    cval = c[4:0], segmask = c[12:8], maxLane = (lane & segmask) | (cval & ~segmask),
    minLane = lane & segmask; up: j = lane - b, p = j >= maxLane; down: j = lane + b,
    p = j <= maxLane; bfly: j = lane ^ b, p = j <= maxLane; idx: j = minLane | (b & ~segmask),
    p = j <= maxLane; where p is false j = lane (the lane keeps its own value)."""
    b = np.broadcast_to(np.asarray(b, np.int64) & 31, (32,))
    c = np.broadcast_to(np.asarray(c, np.int64), (32,))
    cval, seg = c & 31, (c >> 8) & 31
    max_lane = (LANE & seg) | (cval & ~seg)
    min_lane = LANE & seg
    if mode == "up":
        j = LANE - b
        p = j >= max_lane
    elif mode == "down":
        j = LANE + b
        p = j <= max_lane
    elif mode == "bfly":
        j = LANE ^ b
        p = j <= max_lane
    else:
        j = min_lane | (b & ~seg)
        p = j <= max_lane
    return np.where(p, j, LANE), p


@semantics(I.ShflSync)
def _shfl(ins, ctx):
    here = ctx.pc
    ga = value_getter(ins.a, "b32", ctx)
    gb, gc = value_getter(ins.b, "u32", ctx), value_getter(ins.c, "u32", ctx)
    gm = value_getter(ins.membermask, "u32", ctx)
    sd = reg_setter(ins.dst, "b32", ctx)
    sp = reg_setter(ins.pred, "pred", ctx) if ins.pred is not None else None
    mode = ins.mode

    quals = ("shfl.sync", mode)

    def fn(ex, ws, mask):
        if not mask.any():
            return None
        a = np.broadcast_to(np.asarray(ga(ex, ws), np.uint32), (32,))
        got = sync_lanes(ex, ws, mask, gm, quals, a)
        if got is None:
            return here
        a, union, mask, jump = got
        j, p = shfl_source(mode, gb(ex, ws), gc(ex, ws))
        bad = mask & ~union[j]
        if bad.any():
            raise MemberMaskError(f"shfl.sync: lanes {_lanes(bad)} read lanes {_lanes(np.isin(LANE, j[bad]))}, "
                                  f"which do not execute it (PTX ISA: sourcing an inactive lane is undefined)")
        sd(ex, ws, a[j], mask)
        if sp is not None:
            sp(ex, ws, p, mask)
        return here + 1 if jump else None
    return fn


@semantics(I.VoteSync)
def _vote(ins, ctx):
    here = ctx.pc
    ga = value_getter(ins.a, "pred", ctx)
    gm = value_getter(ins.membermask, "u32", ctx)
    ballot = ins.mode == "ballot"
    sd = reg_setter(ins.dst, "b32" if ballot else "pred", ctx)
    mode, neg = ins.mode, ins.negate

    quals = ("vote.sync", mode)

    def fn(ex, ws, mask):
        if not mask.any():
            return None
        got = sync_lanes(ex, ws, mask, gm, quals, np.broadcast_to(np.asarray(ga(ex, ws), bool), (32,)) ^ neg)
        if got is None:
            return here
        a, union, mask, jump = got
        on = a[union]
        if ballot:
            r = np.uint32(int(np.bitwise_or.reduce(np.where(union & a, LANE_BIT, np.uint32(0)))))
        elif mode == "all":
            r = bool(on.all())
        elif mode == "any":
            r = bool(on.any())
        else:
            r = bool(on.all() or not on.any())
        sd(ex, ws, np.full(32, r), mask)
        return here + 1 if jump else None
    return fn


_REDUCE = {"add": lambda v: int(v.astype(np.uint64).sum()) & 0xFFFFFFFF,
           "min": lambda v: int(v.min()), "max": lambda v: int(v.max()),
           "and": lambda v: int(np.bitwise_and.reduce(v)), "or": lambda v: int(np.bitwise_or.reduce(v)),
           "xor": lambda v: int(np.bitwise_xor.reduce(v))}


@semantics(I.ReduxSync)
def _redux(ins, ctx):
    here = ctx.pc
    t = "s32" if ins.type == "s32" else "u32"
    ga = value_getter(ins.a, t, ctx)
    gm = value_getter(ins.membermask, "u32", ctx)
    sd = reg_setter(ins.dst, "u32", ctx)
    red = _REDUCE[ins.op]

    quals = ("redux.sync", ins.op, ins.type)

    def fn(ex, ws, mask):
        if not mask.any():
            return None
        got = sync_lanes(ex, ws, mask, gm, quals, np.broadcast_to(np.asarray(ga(ex, ws)), (32,)))
        if got is None:
            return here
        v, union, mask, jump = got
        r = red(v[union]) & 0xFFFFFFFF
        sd(ex, ws, np.full(32, r, np.uint32), mask)
        return here + 1 if jump else None
    return fn


@semantics(I.BarWarpSync)
def _bar_warp(ins, ctx):
    """bar.warp.sync: the rendezvous of `sync_lanes` with no data (PTX ISA: the lanes of membermask
    meet at a bar.warp.sync of the same membermask, on any path)."""
    here = ctx.pc
    gm = value_getter(ins.membermask, "u32", ctx)
    quals = ("bar.warp.sync",)
    none = np.zeros(32, dtype=bool)

    def fn(ex, ws, mask):
        if not mask.any():
            return None
        got = sync_lanes(ex, ws, mask, gm, quals, none)
        if got is None:
            return here
        return here + 1 if got[3] else None
    return fn
