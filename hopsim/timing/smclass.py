"""SM-level memoisation for grids with several CTAs resident per SM (`memo=True`, ctas_per_sm > 1).

Why it is exact. In the partitioned memory mode (`memo.PartitionedLink`) SMs share nothing while
they run: each has its own units and its own L2/HBM links, and the L2 residency is touched only at
dispatch (`memo.DispatchResidency.classify`, called in linear CTA order whatever the timing, so
each CTA's hit vector is a function of its index alone). What couples SMs is the global CTA
queue: the next CTA goes to whichever slot frees first. An SM's whole timeline is therefore a
deterministic function of its *history*: the sequence of hit-vector classes of the CTAs it was
given, in the order it asked for them (the dispatch times follow from its own CTA exits:
exit + `cta_launch_cycles`; "no CTA left" is a history entry too). SMs with equal histories run
in lockstep, at the same absolute cycles.

So the SMs are grouped into *classes* of equal history; each class is ONE detailed simulation (its
own SimPy environment, one `SM`, the CTAs of one member, "the representative") and stands for all
its members. The coordinator below advances each class to its next CTA exit, hands out CTAs at the
earliest pending exit time (ties: k-th exit of each SM in SM order), and when the members of a class
get CTAs of different hit classes, the class splits: the subgroup holding the class's label SM
continues in the existing environment, every other subgroup gets a copy of the class's state at
the split (fork.py: environment, SM, CTAs in flight, processes) and goes on with its own inputs
from there; that copy is the state a deterministic re-run of the shared history from cycle 0 (the
same CTAs, the same inputs: the same trajectory) would reach, which is what a new class whose
SM is traced (its slices name its label SM) still does (`catch_up`); a class split off a traced
one is a copy without the trace. At the end every class has
simulated its members' complete history: counters, role statistics and busy cycles are the class's
times its member count. tests/timing/test_memo_multi.py checks cycles, bytes, roles and busy equal
to memo=False on multi-wave grids with 2 and 3 CTAs per SM.

Cost: one detailed simulation per distinct history (plus a copy of the state at each split), instead
of one per CTA. A row-raster GEMM has two hit classes (first wave: shared misses; afterwards A
misses shared by its row, B hits), so a handful of classes cover all SMs.

Conditions (checked): partitioned memory, a tile plan, no jitter, `cta_launch_cycles` > 0 (the
input of a freed slot is decided before the slot asks for it), and no ld.global whose L2 residency
would be looked up at request time (`NotMemoisable`; the runner then simulates every CTA).
"""

from __future__ import annotations

import gc
import heapq
import math
from heapq import heappop

import simpy

from hopsim.timing import fork
from isa.errors import HopsimError


FULL_GC_EVERY = 1000
"""Generation-1 collections between two full ones while a grid runs (Python's default: 10)."""


def step_failed(event) -> None:
    """simpy Environment.step on a failed event nobody defused: raise a copy of its exception."""
    exc = type(event._value)(*event._value.args)
    exc.__cause__ = event._value
    raise exc


class NotMemoisable(Exception):
    """A class simulation met something that couples SMs (an ld.global L2 look-up)."""


class _SmClass:
    """The SMs of one history: one environment, one SM, the representative's CTAs."""

    def __init__(self, co, label: int, members: list, inputs: list, first_slots: int, replay_until: float,
                 start: bool = True):
        self.co = co
        self.label = label
        self.members = members
        self.inputs = inputs  # per request, in request order: (cta, hit class id) or None
        self.requests = 0
        self.exits: list[float] = []  # exits not yet handed to the coordinator
        self.replay_until = replay_until  # exits at or before this cycle were already handed out
        self.runs: list = []  # (slot, warp stats, in-flight slices) of every CTA run here
        self.last_exit = 0.0
        self.first_slots = first_slots
        self.procs: list = []  # the slots' processes
        if not start:  # fork.fork_class gives it its environment, SM, CTAs and processes
            return
        self.env = simpy.Environment()
        self.sm = co.make_sm(label)
        self.live: set = set()
        self.procs = [self.env.process(self._slot(slot)) for slot in range(first_slots)]

    def _slot(self, slot: int, resume=None):
        """Slot `slot`: runs the class's CTAs one after the other. `resume` (fork.py): (suspension
        point, the event waited on there, that point's locals): go on from that wait."""
        co, env = self.co, self.env
        ready = 0.0  # the first wave starts at 0, a freed slot after the relaunch gap (gpu.CtaScheduler)
        at = 0  # the suspension point (fork.AT_*) of the current yield
        if resume is not None:
            at, evt, loc = resume
            run, cta = loc.get("run"), loc.get("cta")  # as locals: a copy of this copy reads them
            yield evt
            if at == fork.AT_RUN:
                self._ended(slot, run, cta)
                ready = env.now + co.launch_cycles
        while True:
            if ready > env.now:
                at = fork.AT_WAIT
                yield env.timeout(ready - env.now)
            i = self.requests
            self.requests += 1
            inp = self.inputs[i]  # handed out at the exit, launch_cycles ago
            if inp is None:
                return
            cta, kid = inp
            run = co.make_run(env, self.sm, cta, kid)
            self.live.add(run)
            at = fork.AT_RUN
            yield run.start()
            self._ended(slot, run, cta)
            ready = env.now + co.launch_cycles

    def _ended(self, slot: int, run, cta: int) -> None:
        """CTA `cta` has ended on slot `slot`."""
        env = self.env
        self.live.discard(run)
        self.co.after_run(run, cta, replay=env.now <= self.replay_until)
        self.runs.append((slot, run.stats, run.inflight))
        self.last_exit = env.now
        if env.now > self.replay_until:
            self.exits.append(env.now)

    def catch_up(self, t: float) -> None:
        """Re-run the shared history up to cycle t (inclusive)."""
        env = self.env
        while env.peek() <= t:
            env.step()

    def advance(self) -> float | None:
        """Run to the next CTA exit(s); return their cycle, or None when the class is done."""
        env, limit = self.env, self.co.max_cycles
        queue, step, exits = env._queue, env.step, self.exits  # (peek() and step() inlined: the hot loop)
        if limit is None:
            limit = math.inf
        bounded = limit != math.inf  # (no cap: the loop skips the per-event test)
        while not exits:
            if not queue:
                if self.live:
                    run = min(self.live, key=lambda r: r.ex.cta_linear)
                    raise run.ex.deadlock_error()
                return None
            if bounded and queue[0][0] > limit:
                self.co.limit_hit(self.live)
            env._now, _, _, event = heappop(queue)  # simpy Environment.step, without its
            callbacks, event.callbacks = event.callbacks, None  # StopSimulation case (env.run's only)
            for callback in callbacks:
                callback(event)
            if not event._ok and not hasattr(event, "_defused"):
                step_failed(event)
        t = exits[0]
        while queue and queue[0][0] == t:
            step()
        return t


class Coordinator:
    """Hands CTAs to SM classes in exit order and splits classes whose members diverge.

    make_sm(label) -> SM; make_run(env, sm, cta, kid) -> CtaRun; after_run(run, cta, replay);
    classify(cta) -> hit class id (called in linear CTA order)."""

    def __init__(self, *, num_sms: int, ctas_per_sm: int, num_ctas: int, launch_cycles: float,
                 make_sm, make_run, after_run, classify, max_cycles=None, limit_hit=None, fork=True,
                 inherited=None, traced=None):
        if not launch_cycles > 0:
            raise NotMemoisable("cta_launch_cycles must be > 0")
        self.num_sms, self.ctas_per_sm, self.num_ctas = num_sms, ctas_per_sm, num_ctas
        self.launch_cycles = float(launch_cycles)
        self.make_sm, self.make_run, self.after_run = make_sm, make_run, after_run
        self.classify = classify
        self.max_cycles = max_cycles
        self.limit_hit = limit_hit
        self.fork = fork  # a split copies its parent's state (fork.py); else it re-runs the history
        # traced(label): whether the class of that label SM records a trace (its slices name it: a
        # split off it gets a copy without the trace, a traced split re-runs its history)
        self.traced = traced or (lambda _label: False)
        self.inherited = inherited  # (n): a split class starts with n CTAs of its history run (fork.py)
        self.classes: list[_SmClass] = []
        self.splits = 0

    def run(self) -> float:
        """Simulate the grid; return the cycle of the last CTA exit.

        The classes' state is many long-lived objects; Python's full collections would traverse
        it again and again. While the grid runs they are made rarer (young objects are still
        collected as usual, so the memory peak does not move); the thresholds are restored after."""
        old = gc.get_threshold()
        gc.set_threshold(old[0], old[1], max(old[2], FULL_GC_EVERY))
        try:
            return self._run()
        finally:
            gc.set_threshold(*old)

    def _split(self, cls: _SmClass, sub: list, history: list, t: float) -> _SmClass:
        """A new class for the members `sub` of `cls`, whose history (inputs up to cycle t) is
        `history`, in the state `cls` has at t: a copy of it (fork.py; without the trace when `cls`
        records one), or (a traced new class, whose slices name its SM, or a state the copy does
        not know) a re-run of the history."""
        members, inputs = [m for m, _ in sub], history + list(sub[0][1])
        self.splits += 1
        if self.fork and not self.traced(sub[0][0]):
            child = _SmClass(self, sub[0][0], members, inputs, cls.first_slots, t, start=False)
            try:
                fork.fork_class(cls, child, untrace=self.traced(cls.label))
            except fork.NotCopyable:
                child = None
            if child is not None:
                child.sm.sm_id = child.label
                child.requests, child.last_exit, child.runs = cls.requests, cls.last_exit, list(cls.runs)
                if self.inherited is not None:
                    self.inherited(len(cls.runs))
                self.classes.append(child)
                return child
        child = _SmClass(self, sub[0][0], members, inputs, cls.first_slots, t)
        self.classes.append(child)
        child.catch_up(t)
        return child

    def _run(self) -> float:
        n_sms, num_ctas = self.num_sms, self.num_ctas
        first_wave = n_sms * self.ctas_per_sm
        kids = [self.classify(c) for c in range(min(first_wave, num_ctas))]  # linear order
        groups: dict = {}
        for m in range(min(n_sms, num_ctas)):
            ins = [(c, kids[c]) for c in range(m, min(first_wave, num_ctas), n_sms)]
            groups.setdefault(tuple(k for _, k in ins), []).append((m, ins))
        heap: list = []
        seq = 0
        for members in groups.values():
            cls = _SmClass(self, members[0][0], [m for m, _ in members], list(members[0][1]),
                           len(members[0][1]), -1.0)
            self.classes.append(cls)
            t = cls.advance()
            if t is not None:
                heapq.heappush(heap, (t, seq, cls))
                seq += 1
        next_cta = first_wave
        while heap:
            t = heap[0][0]
            group = []
            while heap and heap[0][0] == t:
                group.append(heapq.heappop(heap)[2])
            frees = sorted(((j, m, gi) for gi, cls in enumerate(group)
                            for j in range(len(cls.exits)) for m in cls.members))
            got: dict = {}
            for _j, m, gi in frees:
                if next_cta < num_ctas:
                    inp = (next_cta, self.classify(next_cta))
                    next_cta += 1
                else:
                    inp = None
                got.setdefault((gi, m), []).append(inp)
            for gi, cls in enumerate(group):
                cls.exits.clear()
                subs: dict = {}
                for m in cls.members:
                    ins = got[(gi, m)]
                    subs.setdefault(tuple(None if i is None else i[1] for i in ins), []).append((m, ins))
                history = list(cls.inputs)
                for sub in subs.values():
                    if any(m == cls.label for m, _ in sub):
                        cls.members = [m for m, _ in sub]
                        cls.inputs.extend(next(ins for m, ins in sub if m == cls.label))
                        continue
                    child = self._split(cls, sub, history, t)
                    tc = child.advance()
                    if tc is not None:
                        heapq.heappush(heap, (tc, seq, child))
                        seq += 1
                tn = cls.advance()
                if tn is not None:
                    heapq.heappush(heap, (tn, seq, cls))
                    seq += 1
        if next_cta < num_ctas:
            raise HopsimError(f"SM classes finished with CTAs {next_cta}.. not dispatched (internal error)")
        return max(cls.last_exit for cls in self.classes)

