"""The timed runner of one SM: the warps of its resident CTAs as SimPy processes.

Each warp is ONE process that drives the functional executor (`CTAExecutor.issue`, see
docs/dev/EXECUTOR_API.md) and turns every returned `Effect` into exactly one SimPy wait:

    loop:
      eff = ex.issue(w, batch=ALU_BATCH)      # the functional layer does WHAT (at issue)
      blocked_on key?   -> yield event(key)    # mbarrier phase, bar.sync, rendezvous, wait_group
      ALU run of n      -> SMSP n*issue; each op by class (opclass.py: latency, warp gap, pipe)
      ld.shared/ldmatrix-> SMSP issue, smem port held wavefronts; yield until the data is back
      st.shared/stmatrix-> SMSP issue, smem port; yield until the port took the wavefronts
      ld.global         -> coalesced into 32-B sectors / 128-B lines (one L2 request per line),
                           at most `gmem_outstanding_sectors_per_sm` sectors in flight per SM
                           (GmemRequests), load path (FIFO), L2/HBM per line; the warp goes on after issue and its
                           destination registers are scoreboarded (below)
      st.global         -> the SM's store path (`gst_bytes_per_cycle_per_sm` of sectors, FIFO),
                           then L2 and a posted write-back to HBM; the warp goes on when its
                           sectors have left the SM
      TMA load/store    -> TmaUnit gives the completion time; eff.complete() runs THEN (data lands,
                           complete_tx fires the mbarrier phase); the warp goes on after issue
      cp.async          -> global read per 128-B line (as ld.global), then the smem port takes the
                           write's wavefronts when the data arrives; eff.complete() then; the warp
                           goes on after issue
      wgmma             -> TensorCores give the completion time; eff.complete() runs then
      ex2/rcp (MUFU),   -> the warp's sub-partition pipe of its class is held the class's pipe
      shfl.sync (SHFL)     cycles (FIFO; opclass.py, microbench__ops: ~8 MUFU, ~4 SHFL); the warp
                           goes on after the class's warp gap once the pipe has taken it, and its
                           destination registers are scoreboarded until start + the class latency
      fired keys        -> wake the waiters of those events (+ wake-up latency from the config)

Warp w of a CTA issues on sub-partition w % 4 (assumption: the mapping is undocumented,
[FORUM-311023]). Register scoreboard of ld.global: the load's destination rows are pending
until its data is back; the warp stalls (wait "gmem") only before the first instruction that
reads, writes or is guarded by a pending register, and before exit, bar.sync and fences, which
need the thread's loads performed (PTX memory consistency: a barrier orders them); independent
loads of a thread therefore overlap. The ALU batch of the executor ends before such a use
(`CTAExecutor.issue(stop=...)`). A warp still waits for the result of each ld.shared/ldmatrix
before its next instruction (no scoreboard there: conservative).
Nothing polls: a waiting warp sleeps on one `simpy.Event` per key; if the event queue runs dry
while warps wait, the runner raises the functional layer's named `Deadlock`.
"""

from __future__ import annotations

from functools import partial
from heapq import heappush

import simpy
from simpy.events import NORMAL, Event, Timeout

from hopsim.functional.effect import Kind
from hopsim.timing.memory import GLINE, LINE, SECTOR, coalesce
from hopsim.timing.atomics import atomic_op
from hopsim.timing.opclass import (carried_need, elect_guarded, elected_predicates, load_destinations, op_costs,
                                   schedule_run, touched_rows, unit_destinations)
from hopsim.timing.smem_cost import ideal_wavefronts
from hopsim.timing.pipes import QUANTUM, _ceil
from hopsim.timing.sm_units import SM, WarpStats, _Consts

ALU_BATCH = 64
"""Most consecutive ALU instructions executed (and costed) in one issue() call / one timeout."""

DRAIN = frozenset({Kind.EXIT, Kind.BAR_SYNC, Kind.FENCE})
"""Instructions before which a warp waits for all its scoreboarded loads."""

AT_SCOREBOARD, AT_BLOCKED, AT_EXIT, AT_RESUME, AT_DRAIN, AT_CARRIED = 1, 2, 3, 4, 5, 6
"""Where a warp process (`CtaRun._warp`) is suspended (fork.py resumes a copy there, from the
locals RESUME_LOCALS): a scoreboard wait, an event, the exit's issue slots, the wait after an
instruction, a wait_group 0's release after its event, a carried ALU result."""
RESUME_LOCALS = ("woken", "now", "key", "what", "issued", "need", "t0", "eff")

WAIT_NAME = {"mbar": "mbarrier", "bar": "bar.sync", "rdv": "warpgroup_rendezvous",
             "wgmma": "wgmma.wait_group", "bulk": "bulk.wait_group", "bulkr": "bulk.wait_group",
             "cpasync": "cp.async.wait_group"}


class CtaRun:
    """One CTA's timed execution on an `SM` (a generator `run()` for the CTA scheduler)."""

    def __init__(self, env: simpy.Environment, sm: SM, ex, consts: _Consts, *, trace: bool = False,
                 wavefronts=None, hits=None):
        self.env = env
        self.sm = sm
        self.ex = ex
        self.c = consts
        self.trace = trace
        self.events: dict[tuple, simpy.Event] = {}
        self.stats = [WarpStats(ex.cta_linear, w, trace) for w in range(ex.num_warps)]
        self.wavefronts = wavefronts or ideal_wavefronts
        self.last_async: dict[tuple, float] = {}  # FIFO completion per warpgroup / bulk warp
        self.pending_async = 0
        self.procs: list = []  # the warps' SimPy processes (start())
        self.write_end = 0.0  # cycle this CTA's last asynchronous global write (TMA store) lands
        self.gbytes = [0, 0]  # this CTA's ld.global, st.global bytes so far (memory.loaded_extra's w)
        self.tiles: list[list] = [[] for _ in range(ex.num_warps)]  # TMA-load tile keys per warp, in order
        self.inflight: list | None = [] if trace else None  # (start, end, name, track) of async ops
        self.hits = hits  # memo.CtaHits: .of(warp, i) -> (hit, hbm_share), L2 residency decided at dispatch (partitioned mode)
        kern = getattr(ex, "kernel", None)
        self.elected = elected_predicates(kern) if kern is not None else frozenset()
        prog = getattr(ex, "prog", None)  # scripted test executors have none: no scoreboard
        self.ops = prog.ops if prog is not None else None
        self.gld_dst = load_destinations(prog) if prog is not None else None
        self.reg_dst = unit_destinations(prog) if prog is not None else None
        self.op_costs = op_costs(prog, consts.costs) if prog is not None else None
        self.touched = touched_rows(prog) if prog is not None else None
        self.alu_ready: list[dict] = [{} for _ in range(ex.num_warps)]  # per warp: ALU result row -> cycle ready
        self.bar_delay = consts.bar_sync  # release cost of the named-barrier phase last completed
        self.credit = [0.0] * ex.num_warps  # per warp: cycles its last register-only op's resume was rounded up by
        self.pend: list[dict] = [{} for _ in range(ex.num_warps)]  # per warp: row -> cycle its load data is back
        self.pend_why: list[dict] = [{} for _ in range(ex.num_warps)]  # per warp: row -> "mufu"/"shfl" (else a load)
        bind = getattr(ex, "bind_clock", None)  # an executor that reads %clock64 as this SM's cycle
        if bind is not None:  # (hopsim/validate/micro_ir: microbenchmarks timed by their clock reads)
            bind(partial(getattr, env, "now"))  # (a partial: a copy of the run reads its own clock, fork.py)

    # ---------------------------------------------------------------- events
    def _event(self, key):
        evt = self.events.get(key)
        if evt is None:  # (env.event() without the bound-class call: a simpy Event, pending)
            evt = self.events[key] = _new(Event)
            evt.env, evt.callbacks = self.env, []  # (as Event.__init__: _value is the class's PENDING)
        return evt

    def _fire(self, keys, delay: float = 0.0) -> None:
        """Wake the waiters of `keys` after the key's wake-up latency (+ `delay`)."""
        for key in keys:
            evt = self.events.pop(key, None)
            if evt is None:
                continue
            k = key[0]
            d = delay + (self.c.wakeup if k == "mbar" else self.bar_delay if k == "bar" else 0.0)
            if d > 0:
                _timeout(self.env, d).callbacks.append(partial(_succeed, evt))
            else:
                evt.succeed()

    def _at(self, t: float, eff, fifo_key=None) -> float:
        """Run eff.complete() at cycle t (integer, and not before the previous op of its FIFO);
        return that cycle."""
        t = -(-t // 1)  # ceil to an integer cycle
        if fifo_key is not None:
            last = self.last_async.get(fifo_key, 0.0)
            if t < last:
                t = last
            self.last_async[fifo_key] = t
        self.pending_async += 1
        _timeout(self.env, t - self.env._now).callbacks.append(partial(self._complete, eff))
        return t

    def _complete(self, eff, _evt) -> None:
        self.pending_async -= 1
        self._fire(eff.complete())

    def _call_at(self, t: float, fn, fifo_key) -> None:
        """Run fn() (returning fired event keys) at cycle t, as _at: integer, FIFO per key. Not an
        async op of its own (its op's complete() is pending, and calls fn first if not yet)."""
        t = -(-t // 1)
        last = self.last_async.get(fifo_key, 0.0)
        if t < last:
            t = last
        self.last_async[fifo_key] = t
        _timeout(self.env, t - self.env._now).callbacks.append(partial(self._call_fire, fn))

    def _call_fire(self, fn, _evt) -> None:
        self._fire(fn())

    # ---------------------------------------------------------------- the CTA
    def start(self):
        """Start the CTA's warps (one process each); return the event of their end."""
        self.procs = [self.env.process(self._warp(w)) for w in range(self.ex.num_warps)]
        return self.env.all_of(self.procs)

    def run(self):
        yield self.start()

    def _warp(self, w: int, resume=None):
        """Warp w as one SimPy process: issue, cost the effect by its timing class (`_HANDLERS`),
        wait until the warp may issue again; until it exits.

        `resume` (fork.py): (suspension point, the event waited on there, RESUME_LOCALS): go on
        from that wait as the copied process would."""
        env, ex, c, alu_ready, touched = self.env, self.ex, self.c, self.alu_ready[w], self.touched
        st = self.stats[w]
        smsp = self.sm.sched.pipes[w % self.sm.sched.n]
        op_costs, op_pipes, credit = self.op_costs, self.sm.op_pipes[w % len(self.sm.op_pipes)], self.credit
        whole = (c.issue * QUANTUM).is_integer()  # issue slots need no quantising (Pipe.reserve's rounding is exact)
        slices = st.slices
        woken = False  # the last issue of this warp blocked and was woken (its wait is paid)
        pend = self.pend[w]
        at, sb_waited, carried = 0, False, False  # suspension point (AT_*: fork.py reads it); resumed
        # after a scoreboard wait (its statistics to add) / a carried ALU result (eff, kind, now set)
        if resume is None:
            st.start = env.now
        else:
            at, evt, loc = resume
            woken, now, key, what, issued, need, t0, eff = (loc[k] for k in RESUME_LOCALS)  # as locals (copies read them)
            yield evt
            if at == AT_EXIT:
                st.issue += env.now - now
                st.end = env.now
                return
            if at == AT_BLOCKED and key[0] == "wgmma" and _drains(eff) and c.wgmma_sync > 0:
                at = AT_DRAIN
                yield _timeout(env, c.wgmma_sync)
            if at == AT_BLOCKED or at == AT_DRAIN:
                st.add_wait(wait_name(key), env.now - now)
                woken = True
            elif at == AT_RESUME:
                if what is not None:
                    st.add_wait(what, env.now - issued)
            elif at == AT_CARRIED:
                st.add_wait("alu_latency", env.now - now)
                now = env.now
                kind = eff.kind
                carried = True
            else:  # AT_SCOREBOARD
                sb_waited = True
        while True:
            if carried:
                carried = False
            else:
                stop = None
                if pend:
                    if not sb_waited:
                        need = self._scoreboard(w, pend, env.now)
                        if need > env.now:
                            t0 = env.now
                            at = AT_SCOREBOARD
                            yield _timeout(env, -(-need // 1) - t0)
                            sb_waited = True
                    if sb_waited:
                        sb_waited = False
                        what = self._pending_reason(w, need)
                        st.add_wait(what, env.now - t0)
                        if slices is not None:
                            slices.append((t0, env.now, f"wait scoreboard ({'ld.global' if what == 'gmem' else what})"))
                        self._scoreboard(w, pend, env.now)
                    if pend:
                        stop = frozenset(pend)
                eff = ex.issue(w, ALU_BATCH, stop) if stop is not None else ex.issue(w, ALU_BATCH)
                now = env._now  # (env.now without the property call: the hot loop reads it twice per issue)
                key = eff.blocked_on
                if key is not None:  # the warp waits on an event (mbarrier phase, bar.sync, rendezvous, wait_group)
                    if eff.fired:  # e.g. the 4th warp of a collective wait_group: releases the others, then waits
                        self._fire(eff.fired)
                    if eff.kind == WGMMA:  # waits at the warpgroup rendezvous of a wgmma: takes part in it
                        st.wgmma = True
                    at = AT_BLOCKED
                    yield self._event(key)
                    if key[0] == "wgmma" and _drains(eff) and c.wgmma_sync > 0:
                        # wait_group 0: released wgmma_sync_cycles after its last group completes
                        # (microbench__wgmma: a round with L wgmmas = the empty round + their latency)
                        at = AT_DRAIN
                        yield _timeout(env, c.wgmma_sync)
                    if env._now > now:  # (st.add_wait inlined: the hot path)
                        wn = wait_name(key)
                        waits = st.wait
                        waits[wn] = waits.get(wn, 0.0) + (env._now - now)
                    if slices is not None:
                        slices.append((now, env.now, f"wait {ex.describe(key)}"))
                    woken = True
                    continue
                kind = eff.kind
                if alu_ready and kind != ALU and touched is not None:
                    need = carried_need(alu_ready, touched.get(eff.index, _NONE), now)
                    if need > now:  # an ALU result this instruction touches is still in flight
                        at = AT_CARRIED
                        yield _timeout(env, -(-need // 1) - now)
                        st.add_wait("alu_latency", env.now - now)
                        now = env.now
            st.instructions += eff.count
            svc = eff.count * c.issue  # smsp.reserve(now, count x issue), inlined
            if not whole:
                svc = _ceil(svc * QUANTUM) / QUANTUM
            s0 = now if now > smsp.next_free else smsp.next_free
            issued = s0 + svc
            if smsp.slices is not None and svc > 0:
                smsp.slices.append((s0, issued, ""))
            smsp.next_free = issued
            smsp.busy += svc
            smsp.uses += 1
            if kind == EXIT:
                if issued > now:
                    at = AT_EXIT
                    yield _timeout(env, -(-issued // 1) - now)
                st.issue += env.now - now
                break
            if kind == ALU and op_costs is not None and eff.run is not None and not eff.extra:
                fin = schedule_run(eff.run, op_costs, issued - eff.count * c.issue, op_pipes, alu_ready)
                fin -= credit[w]  # (_alu and its fractional resume, inlined: the most frequent class)
                if fin < issued:
                    fin = issued
                credit[w] = -(-fin // 1) - fin
                resume, what = fin, "alu_latency"
            elif eff.extra and "atomic" in eff.extra:
                resume, what = atomic_op(self, w, eff, issued)
            else:
                resume, what = _HANDLERS.get(kind, _other)(self, w, eff, issued, smsp, woken)
            woken = False
            if eff.fired:
                self._fire(eff.fired, c.arrive if kind == MBAR_ARRIVE else 0.0)
            st.issue += issued - now
            if resume > now:
                at = AT_RESUME
                yield _timeout(env, -(-resume // 1) - now)
                if what is not None and env._now > issued:  # (st.add_wait inlined: the hot path)
                    waits = st.wait
                    waits[what] = waits.get(what, 0.0) + (env._now - issued)
            if slices is not None:
                slices.append((now, env.now, eff.text if eff.count == 1 else f"{eff.count} ALU instructions"))
        st.end = env.now

    def _scoreboard(self, w: int, pend: dict, now: float) -> float:
        """Drop the loads of warp w whose data is back by `now`; return when the warp's next
        instruction may issue: the latest pending row it touches (all of them before a DRAIN)."""
        why = self.pend_why[w]
        for r in [r for r, t in pend.items() if t <= now]:
            del pend[r]
            if why:
                why.pop(r, None)
        if not pend:
            return now
        op = self.ops[self.ex.warps[w].pc]
        if op.kind in DRAIN:
            return max(pend.values())
        need = now
        for r in op.rows:
            t = pend.get(r)
            if t is not None and t > need:
                need = t
        g = op.guard_row
        if g is not None and pend.get(g, 0.0) > need:
            need = pend[g]
        return need

    def _pending_reason(self, w: int, need: float) -> str:
        """What a scoreboard wait until `need` waits for: "mufu"/"shfl" when a row of that class is
        pending until then, else "gmem" (a load)."""
        pend = self.pend[w]
        for r, what in self.pend_why[w].items():
            if pend.get(r) == need:
                return what
        return "gmem"

    # ---------------------------------------------------------------- handlers by timing class
    # Each: (w, effect, cycle the SMSP issued it, the SMSP pipe, was the warp just woken)
    #   -> (cycle the warp may issue again, wait reason of the time until then or None)
    def _alu(self, w, eff, issued, smsp, woken):
        """A run of register-only instructions, costed op by op by class (opclass.schedule_run:
        dependent-use latency, the warp's gap, the class pipes of its sub-partition); without a
        compiled program (scripted executors) the ALU latency after the issue slots. (The warp loop
        `_warp` costs the frequent case, a compiled run without extras, inline; this one the rest.)"""
        run = eff.run
        if run is None or self.op_costs is None:
            return issued + self.c.alu_tail, "alu_latency"
        end = schedule_run(run, self.op_costs, issued - eff.count * self.c.issue,
                           self.sm.op_pipes[w % len(self.sm.op_pipes)], self.alu_ready[w])
        return self._fractional(w, end, issued), "alu_latency"

    def _fractional(self, w: int, resume: float, floor: float) -> float:
        """`resume` less what the warp's previous register-only op overpaid by resuming on a whole
        cycle (at least `floor`): a warp's fractional gaps (opclass warp cycles) add up exactly."""
        r = max(resume - self.credit[w], floor)
        self.credit[w] = -(-r // 1) - r
        return r

    def _smem_load(self, w, eff, issued, smsp, woken):
        """ld.shared / ldmatrix: the smem port takes the wavefronts; the warp waits for the data."""
        wf, ideal = self.wavefronts(eff, self.c)
        return self.sm.smem.access(issued, wf, ideal, eff.kind), "smem"

    def _smem_store(self, w, eff, issued, smsp, woken):
        """st.shared / stmatrix: the warp goes on when the port has taken the wavefronts."""
        wf, ideal = self.wavefronts(eff, self.c)
        smem = self.sm.smem
        smem.access(issued, wf, ideal, eff.kind)
        return smem.pipe.next_free, "smem"

    def _tma_load(self, w, eff, issued, smsp, woken):
        """cp.async.bulk.tensor load: the TMA unit gives the landing time (complete() then); the
        issuing thread is held per box (microbench__tma_latency / tma_issue: its clock64 advances
        tma_issue_cycles per cp.async.bulk.tensor, tma_issue_elect_cycles when an elect.sync
        predicate guards it); the SM's unit queues boxes (units.py)."""
        if eff.complete is None:  # predicated off
            return issued, None
        self.stats[w].tma = True
        tl = self.tiles[w]
        hit, share = (None, 1.0) if self.hits is None else self.hits.of(w, len(tl))
        tl.append(eff.tile_key)
        done = self.sm.tma.load(issued, eff.tile_key, eff.gmem_bytes, "load", hit, share, _requests(eff))
        self._at(done, eff)
        if self.inflight is not None:
            self.inflight.append((issued, done, f"TMA load in flight {_coords(eff.tile_key)}", "TMA in flight"))
        c = self.c
        return issued + self._tma_hold(eff.instr), "tma_issue"

    def _tma_hold(self, ins) -> float:
        """Issuing-thread hold of one copy by its guard (microbench__tma_issue, docs/sass-issue-costs.md):
        elect.sync predicate, none (one lane on its own path: uniform operands), a lane predicate."""
        c = self.c
        if elect_guarded(ins, self.elected):
            return c.tma_issue_elect
        if getattr(ins, "guard", True) is None and c.tma_issue_uniform > 0:
            return c.tma_issue_uniform
        return c.tma_issue

    def _tma_store(self, w, eff, issued, smsp, woken):
        """cp.async.bulk.tensor store (an epilogue store: no role): its source is read when the TMA
        unit's fill pipe has taken it (cp.async.bulk.wait_group.read waits for that), it completes
        when written to L2 (wait_group without .read). A write still pending when the CTA's warps
        have exited lands all the same, and the kernel ends no earlier (`write_end`: a kernel's
        completion includes its memory writes being performed; runner.py)."""
        if eff.complete is not None:
            read_done, write_done = self.sm.tma.store(issued, eff.tile_key or ("st", eff.gmem_ranges[:1]),
                                                      eff.gmem_bytes, "store")
            read = eff.extra.get("read_complete")  # absent from scripted executors' effects
            if read is not None:
                self._call_at(read_done, read, ("bulkr", w))
            landed = self._at(write_done, eff, ("bulk", w))
            if landed > self.write_end:  # the kernel is complete when its writes are performed
                self.write_end = landed
                if landed > self.sm.write_end:
                    self.sm.write_end = landed
        return issued, None

    def _wgmma(self, w, eff, issued, smsp, woken):
        """wgmma.mma_async (once per warpgroup): the issue waits for room in the tensor pipe; the
        wgmma enters the pipe then and the warp is held its issue time (microbench__wgmma: a lone
        wgmma's latency beyond the round overhead is N/2 + fixed, with no issue time in it); the
        tensor cores give the completion (FIFO per warpgroup). A warp
        waiting for room does not hold its scheduler (the other warps of the SMSP issue meanwhile:
        microbench__smemport, TMA and LSU warps beside two warpgroups of wgmma)."""
        self.stats[w].wgmma = True
        if eff.complete is None:
            return issued, None
        info = eff.wgmma
        tensor = self.sm.tensor
        hold = max(1.0, self.c.wgmma_issue * info.n / 128)
        room = tensor.accept(issued)
        if room <= issued:
            start, resume = issued, smsp.reserve(issued, hold)
        else:
            start, resume = room, room + hold
        t = tensor.mma(start, info.m, info.n, info.k, info.operand_bytes, f"wgmma m64n{info.n}k16",
                       info.a_from_regs)
        self._at(t, eff, ("wg", eff.warpgroup))
        if self.inflight is not None:
            self.inflight.append((resume, t, f"wgmma group {eff.group} (warpgroup {eff.warpgroup})", "wgmma in flight"))
        return resume, "wgmma_issue"

    def _gmem(self, w, eff, issued, smsp, woken):
        """ld/st.global (`_global`). A load's destination rows are scoreboarded: the warp goes on
        after issue and waits at the first use (`_scoreboard`); a store's warp goes on when its
        sectors have left the SM."""
        done = self._global(eff, issued)
        rows = None if eff.is_write or self.gld_dst is None else self.gld_dst.get(eff.index)
        if rows is None:
            return done, "gmem"
        pend = self.pend[w]
        why = self.pend_why[w]
        for r in rows:
            if pend.get(r, 0.0) < done:
                pend[r] = done
                if why:
                    why.pop(r, None)
        return issued, None

    def _mufu(self, w, eff, issued, smsp, woken):
        """ex2/rcp.approx: the sub-partition's MUFU pipe (`_unit_op`)."""
        return self._unit_op(self.sm.mufu, "mufu", w, eff, issued)

    def _shfl(self, w, eff, issued, smsp, woken):
        """shfl.sync: the sub-partition's shuffle pipe (`_unit_op`)."""
        return self._unit_op(self.sm.shfl, "shfl", w, eff, issued)

    def _unit_op(self, pipes, what: str, w, eff, issued):
        """A register op on a per-sub-partition pipe, with its class's costs (opclass.py): it
        reaches the pipe of warp w's sub-partition when its issue slot starts and holds it the
        class's pipe cycles (FIFO: the pipe's throughput); the warp goes on once the pipe has taken
        it and the class's warp gap has passed, and its destination rows are scoreboarded until
        start + the class latency. Without a compiled program (scripted executors: the spec's
        class of the unit) the warp waits for the result instead."""
        cost = self.op_costs[eff.index] if self.op_costs is not None else self.c.costs["ex2" if what == "mufu" else "shfl"]
        end = pipes[w % len(pipes)].reserve(issued - self.c.issue, cost.pipe, what)
        start = end - cost.pipe
        ready = start + cost.latency
        rows = None if self.reg_dst is None else self.reg_dst.get(eff.index)
        if rows is None:
            return ready, what
        pend, why = self.pend[w], self.pend_why[w]
        for r in rows:
            if pend.get(r, 0.0) < ready:
                pend[r] = ready
                why[r] = what
        return self._fractional(w, start + (cost.warp if cost.warp > self.c.issue else self.c.issue), start + self.c.issue), what

    def _cp_async(self, w, eff, issued, smsp, woken):
        """cp.async: the global read as ld.global (`_global`: L2/HBM per 128-B line); when the data
        is back the shared-memory port takes the write's wavefronts (bank model of st.shared of
        cp-size bytes, [inferred]: not separately measured), then complete() lands the data and
        completes groups. The warp goes on after issue (the copy is asynchronous)."""
        if eff.complete is None:  # predicated off
            return issued, None
        arrived = self._global(eff, issued) if eff.gmem_ranges else issued
        self.pending_async += 1
        _timeout(self.env, -(-arrived // 1) - self.env._now).callbacks.append(partial(self._cp_async_land, eff))
        if self.inflight is not None:
            self.inflight.append((issued, arrived, f"cp.async group {eff.group} (warp {w})", "cp.async in flight"))
        return issued, None

    def _cp_async_land(self, eff, _evt) -> None:
        self.pending_async -= 1
        wf, ideal = self.wavefronts(eff, self.c)
        self._at(self.sm.smem.access(self.env.now, wf, ideal, eff.kind), eff)

    def _mbar_wait(self, w, eff, issued, smsp, woken):
        """try_wait that finds its phase complete still costs its round trip (not after a wake-up)."""
        if woken:
            return issued, None
        return issued + self.c.try_wait, "mbarrier_try_wait"

    def _wgmma_wait(self, w, eff, issued, smsp, woken):
        """A wait_group whose groups are complete: wait_group 0 is released `wgmma_sync_cycles`
        after its issue (microbench__wgmma: the round of fence, commit, wait with no wgmma); wait_group
        N > 0 costs its issue slot (microbench__wgmma_queue: wait_group 1 on complete groups)."""
        if _drains(eff):
            return issued + self.c.wgmma_sync, "wgmma_sync"
        return issued, None

    def _bar(self, w, eff, issued, smsp, woken):
        """bar.sync / bar.arrive: the arrival that completes a phase sets its release cost,
        bar_sync_cycles + bar_sync_per_warp_cycles x (warps of the phase - 1) (microbench__ops
        barriers); the waiters wake after it (`_fire`), and a bar.sync completing it returns then
        too (a bar.arrive goes on at issue)."""
        if not eff.fired:
            return issued, None
        c = self.c
        delay = c.bar_sync + c.bar_per_warp * (eff.extra.get("threads", 32) // 32 - 1)
        self.bar_delay = float(-(-delay // 1))  # events on whole cycles
        if eff.kind != Kind.BAR_SYNC:
            return issued, None
        return issued + self.bar_delay, wait_name(("bar", eff.extra.get("barrier", 0)))

    def _other(self, w, eff, issued, smsp, woken):
        """Every other timing class: issue slots only; an async one completes at issue."""
        if eff.complete is not None:
            self._at(issued, eff)
        return issued, None

    def _global(self, eff, issued: float) -> float:
        """A warp's global access, coalesced: `eff.gmem_ranges` are the runs of 32-B sectors its
        lanes touch (ops_mem.py); each 128-B line touched is one L2 request of its sectors' bytes.
        A store leaves through the SM's store path (FIFO, `gst_bytes_per_cycle_per_sm`) and is
        written to L2 (and back to HBM, memory.py): returns when its sectors have left. A load
        waits for room among the SM's outstanding sectors (`GmemRequests`) per line, goes through the
        SM's load path (FIFO, `gld_bytes_per_cycle_per_sm`), and its j-th line is back j x
        `gmem_line_issue_cycles` after its data (this warp's only): returns when the last is back."""
        sm = self.sm
        mem = sm.memory
        lines = coalesce(eff.gmem_ranges)
        sm.gmem_requests += len(lines)
        if eff.is_write:
            nb = sum(lines.values())
            sm.gmem_sectors += nb // SECTOR
            self.gbytes[1] += nb
            left = sm.gst.reserve(issued, nb / self.c.gst_bw, "st.global") if nb else issued
            mem.write_lines(left, lines)
            return left
        done = issued
        gld = sm.gld
        planned = self.hits is not None and eff.kind == Kind.LD_GLOBAL
        if planned:
            w = eff.warp
            tl = self.tiles[w]
        line_issue, gld_bw = self.c.line_issue, self.c.gld_bw
        g = self.gbytes
        wr = g[1] / g[0] if g[0] else 0.0  # the CTA's stored / loaded bytes before this load
        g[0] += sum(lines.values())
        for j, (a, b) in enumerate(lines.items()):
            n = b // SECTOR
            sm.gmem_sectors += n
            if gld_bw:  # the SM's load path: its sector bytes, FIFO per SM
                issued = sm.gld_port.reserve(issued, b / gld_bw, "ld.global")
            hit, share = None, 1.0  # (shared mode: looked up at the read)
            if planned:  # L2 residency decided at dispatch (partitioned mode, memo.py)
                hit, share = self.hits.of(w, len(tl))
                tl.append((GLINE, (a // LINE,)))
            t0 = gld.admit(issued, n)
            t, _ = mem.read(t0, ("line", a), b, hit, share, inflight_bytes=(gld.inflight + n) * SECTOR, w=wr)
            t += j * line_issue  # the request's lines are returned one after another
            gld.hold(t, n)
            if t > done:
                done = t
        return done


_HANDLERS = {
    Kind.ALU: CtaRun._alu,
    Kind.LD_SHARED: CtaRun._smem_load, Kind.LDMATRIX: CtaRun._smem_load,
    Kind.ST_SHARED: CtaRun._smem_store, Kind.STMATRIX: CtaRun._smem_store,
    Kind.TMA_LOAD: CtaRun._tma_load, Kind.TMA_STORE: CtaRun._tma_store,
    Kind.WGMMA: CtaRun._wgmma,
    Kind.LD_GLOBAL: CtaRun._gmem, Kind.ST_GLOBAL: CtaRun._gmem,
    Kind.CP_ASYNC: CtaRun._cp_async,
    Kind.MBAR_WAIT: CtaRun._mbar_wait,
    Kind.WGMMA_WAIT: CtaRun._wgmma_wait,
    Kind.MUFU: CtaRun._mufu, Kind.SHFL: CtaRun._shfl,
    Kind.BAR_SYNC: CtaRun._bar, Kind.BAR_ARRIVE: CtaRun._bar,
}
"""Timing class (Effect.kind) -> cost handler of `CtaRun`; any other class: `CtaRun._other`.
(EXIT ends the warp's loop in `_warp`.)"""
_other, ALU, EXIT, MBAR_ARRIVE, WGMMA, _NONE = CtaRun._other, Kind.ALU, Kind.EXIT, Kind.MBAR_ARRIVE, Kind.WGMMA, frozenset()


def _drains(eff) -> bool:
    """A wgmma.wait_group 0 (waits for every committed group); effects without an instruction
    (scripted executors) count as one."""
    n = getattr(eff.instr, "n", 0)
    return n is None or int(n) == 0


def _requests(eff) -> int:
    """L2 requests of a TMA box: one per 128-B piece of each contiguous global run (a box row).
    (The count of a runs tuple is kept while the tuple lives: bridge.global_ranges shares a box's.)"""
    runs = eff.gmem_ranges
    got = _REQUESTS.get(id(runs))
    if got is None or got[0] is not runs:
        n = 0
        for _addr, nbytes in runs:
            n += -(-nbytes // 128)
        if len(_REQUESTS) >= 4096:
            _REQUESTS.clear()
        got = _REQUESTS[id(runs)] = (runs, n)
    return got[1] * (eff.lanes or 1)


_REQUESTS: dict = {}  # id(runs) -> (runs, L2 requests of one box): the entry keeps the tuple alive


def wait_name(key) -> str:
    """Statistics name of a wait: per mbarrier (shared address) and per named barrier id."""
    k = key[0]
    if k == "mbar" or k == "bar":
        got = _WAIT_NAMES.get((k, key[1]))
        if got is None:
            got = _WAIT_NAMES[(k, key[1])] = f"mbarrier 0x{key[1]:x}" if k == "mbar" else f"bar.sync {key[1]}"
        return got
    return WAIT_NAME.get(k, str(k))


_WAIT_NAMES: dict = {}  # (kind, address or barrier id) -> wait_name


def _coords(tile_key):
    """Box coordinates of a TMA tile key (tensor-map handle, coords) for trace labels."""
    return tile_key[1] if isinstance(tile_key, tuple) and len(tile_key) == 2 else tile_key


def _timeout(env, delay) -> Timeout:
    """`env.timeout(delay)`: the same simpy Timeout, scheduled alike (time now + delay, NORMAL
    priority, the environment's next event id), without the bound-class, __init__ and schedule
    calls (the warp loop's hot path: one per issue)."""
    if delay < 0:
        raise ValueError(f"Negative delay {delay}")
    t = _new(Timeout)
    t.env, t.callbacks, t._value, t._delay, t._ok = env, [], None, delay, True
    heappush(env._queue, (env._now + delay, NORMAL, next(env._eid), t))
    return t


_new = object.__new__


def _succeed(evt, _timeout) -> None:
    if not evt.triggered:
        evt.succeed()
