"""Functional semantics of the warp collectives shfl.sync, vote.sync and redux.sync (PTX ISA).

Each builder returns fn(ex, ws, mask) -> None (ALU class: register-only). `mask` is the executing
lanes (active and guard true). The membermask rule is enforced, not assumed: an executing lane
outside membermask, or an existing lane of membermask that does not execute (its guard is false),
raises `MemberMaskError` (PTX ISA: undefined behaviour / a hang on the GPU), whether it does not
execute because its guard is false or because it is on the other path of a divergent branch
(simt.py: the warp reconverges at the branch's immediate post-dominator, so a full-warp membermask
after an if/else or a per-lane loop finds every lane). Members that have exited are not waited for
(PTX ISA: the instruction waits for the non-exited threads of membermask), nor are lanes of membermask
beyond the warp's last thread (a partial last warp) are ignored. A shfl.sync that sources a lane
which does not execute raises `MemberMaskError` too (PTX ISA: the result is undefined).
"""

from __future__ import annotations

import numpy as np

from isa.ir import instructions as I

from hopsim.functional.errors import MemberMaskError
from hopsim.functional.semantics import reg_setter, semantics, uniform, value_getter
from hopsim.functional.simt import converge, why_absent

LANE = np.arange(32, dtype=np.int64)
LANE_BIT = np.uint32(1) << np.arange(32, dtype=np.uint32)


def _lanes(m) -> str:
    idx = np.flatnonzero(m).tolist()
    return ", ".join(str(i) for i in idx[:8]) + (" ..." if len(idx) > 8 else "")


def member_lanes(ex, ws, mask, gm, what: str):
    """The lanes that execute the instruction now: `mask`, or, when the running path of a diverged
    warp reaches a full-warp collective (its membermask holds every live lane) without the lanes on
    the other paths, every live lane once they have all arrived here (simt.converge; None while this
    path waits). MemberMaskError unless the executing lanes are exactly the member lanes that exist
    and have not exited."""
    m = uniform(gm(ex, ws), mask, f"{what} membermask") & 0xFFFFFFFF
    member = (np.uint32(m) & LANE_BIT) != 0
    outside = mask & ~member
    if outside.any():
        raise MemberMaskError(f"{what}: lanes {_lanes(outside)} execute it but are not in membermask "
                              f"0x{m:08x} (PTX ISA: every executing lane must be in membermask)")
    idle = member & ws.live & ~mask  # exited members are not waited for (PTX ISA: "non-exited threads")
    if idle.any():
        if not (idle & ws.active).any() and not (ws.live & ~member).any():
            return converge(ws, mask, MemberMaskError)
        raise MemberMaskError(f"{what}: lanes {_lanes(idle)} of membermask 0x{m:08x} do not execute it "
                              f"({why_absent(ws, idle)}): PTX ISA requires every member lane to execute the "
                              f"same {what} (on the GPU this hangs or is undefined)")
    return mask


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

    def fn(ex, ws, mask):
        if not mask.any():
            return None
        run = member_lanes(ex, ws, mask, gm, "shfl.sync")
        if run is not mask:  # parked (None: stay at this pc) or converged (the batch ends after it)
            if run is None:
                return here
            mask = run
            after = here + 1
        else:
            after = None
        j, p = shfl_source(mode, gb(ex, ws), gc(ex, ws))
        bad = mask & ~mask[j]
        if bad.any():
            raise MemberMaskError(f"shfl.sync: lanes {_lanes(bad)} read lanes {_lanes(np.isin(LANE, j[bad]))}, "
                                  f"which do not execute it (PTX ISA: sourcing an inactive lane is undefined)")
        a = np.broadcast_to(np.asarray(ga(ex, ws), np.uint32), (32,))
        sd(ex, ws, a[j], mask)
        if sp is not None:
            sp(ex, ws, p, mask)
        return after
    return fn


@semantics(I.VoteSync)
def _vote(ins, ctx):
    here = ctx.pc
    ga = value_getter(ins.a, "pred", ctx)
    gm = value_getter(ins.membermask, "u32", ctx)
    ballot = ins.mode == "ballot"
    sd = reg_setter(ins.dst, "b32" if ballot else "pred", ctx)
    mode, neg = ins.mode, ins.negate

    def fn(ex, ws, mask):
        if not mask.any():
            return None
        run = member_lanes(ex, ws, mask, gm, "vote.sync")
        if run is not mask:  # parked (None: stay at this pc) or converged (the batch ends after it)
            if run is None:
                return here
            mask = run
            after = here + 1
        else:
            after = None
        a = np.broadcast_to(np.asarray(ga(ex, ws), bool), (32,)) ^ neg
        on = a[mask]
        if ballot:
            r = np.uint32(int(np.bitwise_or.reduce(np.where(mask & a, LANE_BIT, np.uint32(0)))))
        elif mode == "all":
            r = bool(on.all())
        elif mode == "any":
            r = bool(on.any())
        else:
            r = bool(on.all() or not on.any())
        sd(ex, ws, np.full(32, r), mask)
        return after
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

    def fn(ex, ws, mask):
        if not mask.any():
            return None
        run = member_lanes(ex, ws, mask, gm, "redux.sync")
        if run is not mask:  # parked (None: stay at this pc) or converged (the batch ends after it)
            if run is None:
                return here
            mask = run
            after = here + 1
        else:
            after = None
        v = np.broadcast_to(np.asarray(ga(ex, ws)), (32,))[mask]
        r = red(v) & 0xFFFFFFFF
        sd(ex, ws, np.full(32, r, np.uint32), mask)
        return after
    return fn
