"""Builders of synchronisation instructions: mbarrier.*, bar.sync, bar.arrive, exit, the warpgroup collectives
(wgmma.fence / commit_group / wait_group, setmaxnreg) and cp.async.bulk commit/wait groups.

Blocking follows EXECUTOR_API.md: a blocked warp gets `ws.block = (key, kind, advance, on_resume)`
and an Effect with `blocked_on=key`; it is re-issued after the event fires.

Warpgroup rendezvous (`collective`): the first three warps of a warpgroup to reach a collective
instruction block on ("rdv", wg, seq); the fourth runs the operation once for the warpgroup.
"""

from __future__ import annotations

import numpy as np

from isa.ir import instructions as I

from hopsim.functional.effect import Effect, Kind, rendezvous_effect
from hopsim.functional.errors import (
    ArrivalCountOutOfRange, BarrierCountMismatch, DivergentBarrier, IllegalInstruction,
)
from hopsim.functional.mbarrier import MbarrierState
from hopsim.functional.simt import exit_lanes, whole_warp, why_absent
from hopsim.functional.semantics import (
    address_getter, semantics, reg_setter, uniform, uniform_address, uniform_operand, value_getter,
)


# ------------------------------------------------------------------------------------ helpers
def _lane_list(a, mask) -> list[int]:
    """The address of each executing lane, in lane order."""
    n = int(np.count_nonzero(mask))
    if np.ndim(a) == 0:
        return [int(a)] * n
    return [int(x) for x in a[mask]]


def _mbar_lane_op(ins, ctx, kind, apply):
    """Per executing lane: apply(ex, bar, lane_index) -> completed?; fires ('mbar', addr, phase)."""
    ga = address_getter(ins.addr, ctx)
    gtx = value_getter(ins.tx_count, "u32", ctx) if hasattr(ins, "tx_count") else None
    gcnt = value_getter(ins.count, "u32", ctx) if getattr(ins, "count", None) is not None else None
    st = reg_setter(ins.state, "u64", ctx) if getattr(ins, "state", None) is not None else None

    sa = uniform_address(ins.addr, ctx, "mbarrier address")
    utx = uniform_operand(ins.tx_count, "u32", ctx, "tx-count") if gtx is not None else None
    ucnt = uniform_operand(ins.count, "u32", ctx, "arrival count") if gcnt is not None else None

    def fn(ex, ws, mask):
        if mask is ws.none:
            return Effect(kind=kind, warp=ws.w, lanes=0)
        n = int(np.count_nonzero(mask))
        if n == 0:
            return Effect(kind=kind, warp=ws.w, lanes=0)
        a = ga(ex, ws)
        if type(a) is np.ndarray and n > 1:
            addrs = _lane_list(a, mask)
        else:
            addrs = [sa(ex, ws, mask)] * n
        tx = utx(ex, ws, mask) if utx is not None else 0
        cnt = ucnt(ex, ws, mask) if ucnt is not None else 1
        fired = []
        phase = None
        for addr in addrs:
            bar = ex.mbarrier(addr)
            before = bar.phase
            if phase is None:
                phase = before
            if apply(bar, tx, cnt):
                fired.append(("mbar", addr, before))
        if st is not None and addrs:
            st(ex, ws, np.uint64(phase), mask)
        return Effect(kind=kind, warp=ws.w, lanes=len(addrs), mbarrier=addrs[0] if addrs else None,
                      phase=phase, tx_bytes=tx * len(addrs) if gtx is not None else 0, fired=tuple(fired))
    return fn


@semantics(I.MbarrierInit)
def _init(ins, ctx):
    ga = address_getter(ins.addr, ctx)
    gc = value_getter(ins.count, "u32", ctx)

    def fn(ex, ws, mask):
        if mask is ws.none:  # guarded off in every lane (e.g. the warps without thread 0)
            return Effect(kind=Kind.MBAR_INIT, warp=ws.w, lanes=0, mbarrier=None, phase=0, extra={"count": 0})
        addrs = _lane_list(ga(ex, ws), mask)
        count = uniform(gc(ex, ws), mask, "mbarrier.init count") if addrs else 0
        for addr in addrs:
            if addr % 8 or not 0 <= addr <= ex.smem_size - 8:
                raise IllegalInstruction(f"mbarrier.init at shared 0x{addr:x}: needs an 8-byte aligned object "
                                         f"inside the {ex.smem_size} shared bytes")
            ex.mbar[addr] = MbarrierState.init(count, addr)
            for w in ex.warps:
                w.last_phase.pop(addr, None)
        return Effect(kind=Kind.MBAR_INIT, warp=ws.w, lanes=len(addrs), mbarrier=addrs[0] if addrs else None,
                      phase=0, extra={"count": count})
    return fn


@semantics(I.MbarrierArrive)
def _arrive(ins, ctx):
    return _mbar_lane_op(ins, ctx, Kind.MBAR_ARRIVE, lambda bar, tx, cnt: bar.arrive(cnt))


@semantics(I.MbarrierArriveExpectTx)
def _arrive_tx(ins, ctx):
    return _mbar_lane_op(ins, ctx, Kind.MBAR_ARRIVE, lambda bar, tx, cnt: bar.arrive_expect_tx(tx))


@semantics(I.MbarrierExpectTx)
def _expect_tx(ins, ctx):
    return _mbar_lane_op(ins, ctx, Kind.MBAR_EXPECT_TX, lambda bar, tx, cnt: bar.expect_tx(tx))


@semantics(I.MbarrierCompleteTx)
def _complete_tx(ins, ctx):
    return _mbar_lane_op(ins, ctx, Kind.MBAR_COMPLETE_TX, lambda bar, tx, cnt: bar.complete_tx(tx))


@semantics(I.MbarrierInval)
def _inval(ins, ctx):
    ga = address_getter(ins.addr, ctx)

    def fn(ex, ws, mask):
        addrs = _lane_list(ga(ex, ws), mask)
        for addr in addrs:
            ex.mbarrier(addr)
            del ex.mbar[addr]
        return Effect(kind=Kind.MBAR_INVAL, warp=ws.w, lanes=len(addrs), mbarrier=addrs[0] if addrs else None)
    return fn


def _wait_builder(ins, ctx, blocking: bool):
    ga = uniform_address(ins.addr, ctx, "mbarrier address")
    gp = uniform_operand(ins.parity, "u32", ctx, "phase parity")
    sp = reg_setter(ins.pred, "pred", ctx)
    prow = ctx.row(ins.pred)
    kind = Kind.MBAR_WAIT if blocking else Kind.MBAR_TEST

    def set_pred(ex, ws, mask, value: bool):
        if mask is ws.active and ws.full:
            ex.bits[prow, ws.lanes] = int(value)
            ws.uni[prow] = int(value)
        else:
            sp(ex, ws, value, mask)

    def fn(ex, ws, mask):
        if mask is ws.none or not np.count_nonzero(mask):
            return Effect(kind=kind, warp=ws.w, lanes=0)
        addr = ga(ex, ws, mask)
        parity = gp(ex, ws, mask)
        bar = ex.mbarrier(addr)
        if ex.checker.check_phases:
            ex.checker.wait_phase(ws, addr, parity, bar)
        ok = bar.test_wait_parity(parity)
        if ok:
            ws.last_phase[addr] = bar.phase - 1
            set_pred(ex, ws, mask, True)
            return Effect(kind=kind, warp=ws.w, lanes=ws.nactive, mbarrier=addr, phase=bar.phase - 1)
        if not blocking:
            set_pred(ex, ws, mask, False)
            return Effect(kind=kind, warp=ws.w, lanes=ws.nactive, mbarrier=addr, phase=bar.phase,
                          extra={"ready": False})
        key = ("mbar", addr, bar.phase)
        ws.block = (key, kind, False, None)
        return Effect(kind=kind, warp=ws.w, lanes=ws.nactive, mbarrier=addr, phase=bar.phase, blocked_on=key)
    fn.scalar_aware = True  # it maintains ws.uni of its predicate itself
    return fn


@semantics(I.MbarrierTryWaitParity)
def _try_wait(ins, ctx):
    return _wait_builder(ins, ctx, True)


@semantics(I.MbarrierTestWaitParity)
def _test_wait(ins, ctx):
    return _wait_builder(ins, ctx, False)


# ------------------------------------------------------------------------------------ bar.sync / bar.arrive / exit
def _bar_operands(ins, ctx):
    gb = value_getter(ins.barrier, "u32", ctx)
    gc = value_getter(ins.count, "u32", ctx) if ins.count is not None else None
    return gb, gc


def _bar_arrival(ex, ws, mask, gb, gc, what: str):
    """Count the warp's arrival at its named barrier; returns (id, fired event keys, the phase
    key to wait on, threads arrived in the phase so far), or None when the running path of a diverged warp waits there for the warp's
    other lanes (simt.converge). All or none of the warp's non-exited lanes execute a barrier (PTX
    ISA, bar: .aligned); the thread count must agree with the other arrivals of the phase."""
    mask = whole_warp(ws, mask, what)
    if mask is None:
        return None
    bid = uniform(gb(ex, ws), mask, "barrier id")
    if not 0 <= bid <= 15:
        raise IllegalInstruction(f"{what}: barrier id {bid} out of 0..15 (PTX ISA, bar)")
    expected = uniform(gc(ex, ws), mask, "barrier count") if gc is not None else None
    if expected is not None and (expected <= 0 or expected % 32 or expected > 1024):
        raise IllegalInstruction(f"{what}: thread count {expected} is not a multiple of 32 in 32..1024 (PTX ISA, bar)")
    st = ex.bars.setdefault(bid, [0, 0, None])
    if st[0] and st[2] != expected:
        raise BarrierCountMismatch(
            f"{what}: barrier {bid} phase {st[1]} expects {_count_text(st[2])} but this warp gives "
            f"{_count_text(expected)} (PTX ISA, bar: every arrival of a phase gives the same count)")
    st[0] += 32
    st[2] = expected
    key = ("bar", bid, st[1])
    threads = st[0]
    return bid, _release_bar(ex, bid), key, threads


def _count_text(c) -> str:
    return "every thread of the CTA (no count)" if c is None else f"{c} threads"


@semantics(I.BarSync)
def _bar_sync(ins, ctx):
    gb, gc = _bar_operands(ins, ctx)

    def fn(ex, ws, mask):
        if mask is ws.none or not np.count_nonzero(mask):   # guard false on the whole warp: not executed
            return Effect(kind=Kind.BAR_SYNC, warp=ws.w, lanes=0)
        got = _bar_arrival(ex, ws, mask, gb, gc, "bar.sync")
        if got is None:
            return Effect(kind=Kind.ALU, warp=ws.w, lanes=0)
        bid, fired, key, threads = got
        if fired:
            return Effect(kind=Kind.BAR_SYNC, warp=ws.w, lanes=ws.nactive, fired=fired,
                          extra={"barrier": bid, "threads": threads})
        ws.block = (key, Kind.BAR_SYNC, True, None)
        return Effect(kind=Kind.BAR_SYNC, warp=ws.w, lanes=ws.nactive, blocked_on=key, extra={"barrier": bid})
    return fn


@semantics(I.BarArrive)
def _bar_arrive(ins, ctx):
    gb, gc = _bar_operands(ins, ctx)

    def fn(ex, ws, mask):
        if mask is ws.none or not np.count_nonzero(mask):
            return Effect(kind=Kind.BAR_ARRIVE, warp=ws.w, lanes=0)
        got = _bar_arrival(ex, ws, mask, gb, gc, "bar.arrive")
        if got is None:
            return Effect(kind=Kind.ALU, warp=ws.w, lanes=0)
        bid, fired, _key, threads = got
        return Effect(kind=Kind.BAR_ARRIVE, warp=ws.w, lanes=ws.nactive, fired=fired,
                      extra={"barrier": bid, "threads": threads})
    return fn


def _release_bar(ex, bid: int) -> tuple:
    st = ex.bars[bid]
    expected = st[2] if st[2] is not None else 32 * sum(1 for w in ex.warps if not w.done)
    if st[0] and st[0] >= expected:
        st[0] = 0
        st[1] += 1
        st[2] = None
        return (("bar", bid, st[1] - 1),)
    return ()


def exit_fn(ex, ws, mask):
    """`exit` (and the end of the kernel) for the lanes in `mask`: when they are all the warp's live
    lanes the warp ends (EXIT); otherwise those lanes end and the warp goes on with the others
    (simt.exit_lanes; an ALU-class effect): on the running path's remaining lanes, or, when the
    path has none left, on a suspended path (the executor resumes it)."""
    if mask is not ws.active or ws.nactive != ws.nlive:
        n = int(np.count_nonzero(mask))
        if n == 0:
            return Effect(kind=Kind.ALU, warp=ws.w, lanes=0)
        if n != ws.nlive:
            exit_lanes(ws, mask, n)
            return Effect(kind=Kind.ALU, warp=ws.w, lanes=n)
    ws.done = True
    ws.block = None
    fired = []
    for bid, st in ex.bars.items():
        if st[0] and st[2] is None:
            fired.extend(_release_bar(ex, bid))
    return Effect(kind=Kind.EXIT, warp=ws.w, lanes=ws.nactive, fired=tuple(fired))


@semantics(I.Exit)
def _exit(ins, ctx):
    return exit_fn


# ------------------------------------------------------------------------------------ warpgroup collectives
def collective(kind: str, body):
    """Wrap body(ex, g, ws, mask) -> Effect (run once per warpgroup) in the 4-warp rendezvous."""

    def fn(ex, ws, mask):
        g = ex.wgs[ws.wg]
        first = 4 * g.g
        if mask is not ws.active or ws.nactive != ws.nlive:  # (whole_warp's converged case inlined)
            mask = whole_warp(ws, mask, "warpgroup-collective instruction")
        if mask is None:
            return Effect(kind=Kind.ALU, warp=ws.w, lanes=0)
        if ws.nlive != ws.nexists:
            raise DivergentBarrier(f"warpgroup-collective instruction after {why_absent(ws, ws.exists & ~ws.live)}: "
                                   f"wgmma/setmaxnreg need every thread of the warpgroup (PTX ISA: .sync.aligned)")
        if first + 4 > ex.num_warps or ws.nactive != 32:
            raise IllegalInstruction(f"warpgroup-collective instruction in warpgroup {g.g}, which does not have "
                                     f"4 full warps (CTA has {ex.num_threads} threads)")
        if g.arrived and g.arrived_index != ws.pc:
            other = ex.prog.ops[g.arrived_index]
            raise IllegalInstruction(f"warps of warpgroup {g.g} reached different collective instructions "
                                     f"(#{ex.prog.ops[ws.pc].index} vs #{other.index} `{other.text}`)")
        g.arrived.add(ws.w)
        g.arrived_index = ws.pc
        if len(g.arrived) < 4:
            key = ("rdv", g.g, g.seq)
            ws.block = (key, kind, True, None)
            return rendezvous_effect(kind, ws.w, key, g.g)
        seq = g.seq
        g.seq += 1
        g.arrived = set()
        g.arrived_index = -1
        eff = body(ex, g, ws, mask)
        eff.fired = eff.fired + (("rdv", g.g, seq),)
        eff.warpgroup = g.g
        if eff.blocked_on is None:
            ws.pc = ex.prog.ops[ws.pc].next_pc
        return eff
    return fn


def _block_warpgroup(ex, g, key, kind, on_resume) -> None:
    for w in range(4 * g.g, 4 * g.g + 4):
        ex.warps[w].block = (key, kind, True, on_resume)


@semantics(I.WgmmaFence)
def _wgmma_fence(ins, ctx):
    def body(ex, g, ws, mask):
        g.fenced = True
        g.dirty.clear()
        return Effect(kind=Kind.WGMMA_FENCE, warp=ws.w, lanes=128)
    return collective(Kind.WGMMA_FENCE, body)


def advance_groups(ex, g) -> tuple:
    """Complete wgmma groups (in order) whose ops have all completed; return the fired keys."""
    fired = []
    while g.completed < g.committed and all(rec[1] for rec in g.groups[g.completed]):
        g.completed += 1
        fired.append(("wgmma", g.g, g.completed - 1))
    return tuple(fired)


def retire_groups(ex, g, upto: int) -> None:
    """Groups < upto are covered by a wait_group that returned: release their smem and registers."""
    if upto <= g.retired:
        return
    for gi in range(g.retired, upto):
        for rec in g.groups[gi]:
            ex.checker.wgmma_retire(rec[0])
    g.retired = upto
    rows: set[int] = set()
    for gi in range(g.retired, g.committed):
        for rec in g.groups[gi]:
            rows |= rec[2]
    for rec in g.uncommitted:
        rows |= rec[2]
    g.inflight_rows = rows


@semantics(I.WgmmaCommitGroup)
def _wgmma_commit(ins, ctx):
    def body(ex, g, ws, mask):
        group = g.committed
        g.groups.append(g.uncommitted)
        g.uncommitted = []
        g.committed += 1
        fired = advance_groups(ex, g)
        return Effect(kind=Kind.WGMMA_COMMIT, warp=ws.w, lanes=128, group=group, fired=fired)
    return collective(Kind.WGMMA_COMMIT, body)


@semantics(I.WgmmaWaitGroup)
def _wgmma_wait(ins, ctx):
    n = int(ins.n)

    def body(ex, g, ws, mask):
        need = g.committed - n          # groups [0, need) must be complete
        if need <= 0 or g.completed >= need:
            retire_groups(ex, g, max(need, 0))
            return Effect(kind=Kind.WGMMA_WAIT, warp=ws.w, lanes=128, group=need - 1 if need > 0 else None)
        key = ("wgmma", g.g, need - 1)
        _block_warpgroup(ex, g, key, Kind.WGMMA_WAIT, lambda: retire_groups(ex, g, need))
        return Effect(kind=Kind.WGMMA_WAIT, warp=ws.w, lanes=128, group=need - 1, blocked_on=key)
    return collective(Kind.WGMMA_WAIT, body)


@semantics(I.Setmaxnreg)
def _setmaxnreg(ins, ctx):
    count, action = int(ins.count), ins.action

    def body(ex, g, ws, mask):
        pool = ex.regs
        fired: tuple = ()
        if pool is not None:
            cur = pool.per_wg[g.g]
            if (count < cur) if action == "inc" else (count > cur):
                raise IllegalInstruction(
                    f"setmaxnreg.{action} to {count} registers but warpgroup {g.g} holds {cur}: .inc must not lower "
                    f"and .dec must not raise the count (PTX ISA, setmaxnreg)")
            if action == "inc" and count - cur > pool.free:
                key = ("regs", pool.released, g.g)   # retried (re-executed) after the next .dec
                for w in range(4 * g.g, 4 * g.g + 4):
                    ex.warps[w].block = (key, Kind.SETMAXNREG, False, None)
                return Effect(kind=Kind.SETMAXNREG, warp=ws.w, lanes=128, blocked_on=key,
                              extra={"count": count, "action": action})
            pool.per_wg[g.g] = count
            if action == "dec":
                pool.released += 1
                fired = (("regs", pool.released - 1, wg) for wg in range(len(pool.per_wg)))
                fired = tuple(fired)
        return Effect(kind=Kind.SETMAXNREG, warp=ws.w, lanes=128, fired=fired,
                      extra={"count": count, "action": action})
    return collective(Kind.SETMAXNREG, body)


# ------------------------------------------------------------------------------------ bulk-async groups
def bulk_state(ex, w: int) -> dict:
    st = ex.bulk.get(w)
    if st is None:
        st = ex.bulk[w] = {"uncommitted": [], "groups": [], "committed": 0, "completed": 0, "read": 0}
    return st


def advance_bulk(ex, w: int) -> tuple:
    st = bulk_state(ex, w)
    fired = []
    while st["completed"] < st["committed"] and all(rec[1] for rec in st["groups"][st["completed"]]):
        st["completed"] += 1
        fired.append(("bulk", w, st["completed"] - 1))
    return tuple(fired)


def advance_bulk_read(ex, w: int) -> tuple:
    """Groups of warp w whose stores have all read their shared-memory source, in order: the
    events ("bulkr", w, group) that cp.async.bulk.wait_group.read waits on."""
    st = bulk_state(ex, w)
    fired = []
    while st["read"] < st["committed"] and all(rec[2] for rec in st["groups"][st["read"]]):
        st["read"] += 1
        fired.append(("bulkr", w, st["read"] - 1))
    return tuple(fired)


@semantics(I.CpAsyncBulkCommitGroup)
def _bulk_commit(ins, ctx):
    def fn(ex, ws, mask):
        st = bulk_state(ex, ws.w)
        group = st["committed"]
        st["groups"].append(st["uncommitted"])
        st["uncommitted"] = []
        st["committed"] += 1
        return Effect(kind=Kind.BULK_COMMIT, warp=ws.w, lanes=int(np.count_nonzero(mask)), group=group,
                      fired=advance_bulk_read(ex, ws.w) + advance_bulk(ex, ws.w))
    return fn


@semantics(I.CpAsyncBulkWaitGroup)
def _bulk_wait(ins, ctx):
    n = int(ins.n)
    read = bool(ins.read)

    def fn(ex, ws, mask):
        st = bulk_state(ex, ws.w)
        need = st["committed"] - n
        if need <= 0 or st["read" if read else "completed"] >= need:
            return Effect(kind=Kind.BULK_WAIT, warp=ws.w, lanes=ws.nactive, extra={"read": read})
        key = ("bulkr" if read else "bulk", ws.w, need - 1)
        ws.block = (key, Kind.BULK_WAIT, True, None)
        return Effect(kind=Kind.BULK_WAIT, warp=ws.w, lanes=ws.nactive, group=need - 1, blocked_on=key,
                      extra={"read": read})
    return fn


__all__ = ["exit_fn", "collective", "advance_groups", "retire_groups", "ArrivalCountOutOfRange"]
