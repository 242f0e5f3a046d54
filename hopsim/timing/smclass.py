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
continues in the existing environment, every other subgroup gets a new environment that re-runs
the shared history deterministically from cycle 0 (the same CTAs, the same inputs: the same
trajectory) up to the split and goes on with its own inputs from there (replaying the parent's
record of each CTA's issue() results, replay.py, rather than executing them again). At the end every class has
simulated its members' complete history: counters, role statistics and busy cycles are the class's
times its member count. tests/timing/test_memo_multi.py checks cycles, bytes, roles and busy equal
to memo=False on multi-wave grids with 2 and 3 CTAs per SM.

Cost: one detailed simulation per distinct history (plus the re-run prefix of each split), instead
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

import simpy

from hopsim.timing import replay
from isa.errors import HopsimError


FULL_GC_EVERY = 1000
"""Generation-1 collections between two full ones while a grid runs (Python's default: 10)."""


class NotMemoisable(Exception):
    """A class simulation met something that couples SMs (an ld.global L2 look-up)."""


class _SmClass:
    """The SMs of one history: one environment, one SM, the representative's CTAs."""

    def __init__(self, co, label: int, members: list, inputs: list, first_slots: int, replay_until: float):
        self.co = co
        self.label = label
        self.members = members
        self.inputs = inputs  # per request, in request order: (cta, hit class id) or None
        self.requests = 0
        self.exits: list[float] = []  # exits not yet handed to the coordinator
        self.replay_until = replay_until  # exits at or before this cycle were already handed out
        self.env = simpy.Environment()
        self.sm = co.make_sm(label)
        self.runs: list = []  # (slot, warp stats, in-flight slices) of every CTA run here
        self.live: set = set()
        self.last_exit = 0.0
        self.first_slots = first_slots
        self.logged: dict = {}  # cta -> LoggedExecutor (co.make_executor given): what a split replays
        self.sources: dict = {}  # cta -> replay._Source: what the class this one split off from recorded
        for slot in range(first_slots):
            self.env.process(self._slot(slot))

    def _slot(self, slot: int):
        co, env = self.co, self.env
        ready = 0.0  # the first wave starts at 0, a freed slot after the relaunch gap (gpu.CtaScheduler)
        while True:
            if ready > env.now:
                yield env.timeout(ready - env.now)
            i = self.requests
            self.requests += 1
            inp = self.inputs[i]  # handed out at the exit, launch_cycles ago
            if inp is None:
                return
            cta, kid = inp
            run = co.make_run(env, self.sm, cta, kid, self._executor(cta))
            self.live.add(run)
            yield from run.run()
            self.live.discard(run)
            co.after_run(run, cta, replay=env.now <= self.replay_until)
            self.runs.append((slot, run.stats, run.inflight))
            self.last_exit = env.now
            if env.now > self.replay_until:
                self.exits.append(env.now)
            ready = env.now + co.launch_cycles

    def _executor(self, cta: int):
        """The executor of `cta` here: None (make_run's own) without a `make_executor`; else a
        recorded one, replaying the parent's record when this class split off after `cta` began."""
        make = self.co.make_executor
        if make is None:
            return None
        src = self.sources.pop(cta, None)
        if src is None:
            ex = make(cta)
            if not replay.recordable(ex):
                return ex
        rec = len(self.members) > 1  # a class of one SM never splits: nothing to record
        if src is None and not rec:  # nothing to replay either: the executor itself
            return ex
        lx = replay.LoggedExecutor(src.real if src is not None else ex, src, recording=rec)
        if rec:
            self.logged[cta] = lx
        return lx

    def stop_recording(self) -> None:
        for lx in self.logged.values():
            lx.stop_recording()
        self.logged = {}

    def catch_up(self, t: float) -> None:
        """Re-run the shared history up to cycle t (inclusive)."""
        env = self.env
        while env.peek() <= t:
            env.step()

    def advance(self) -> float | None:
        """Run to the next CTA exit(s); return their cycle, or None when the class is done."""
        env, limit = self.env, self.co.max_cycles
        while not self.exits:
            t = env.peek()
            if t == math.inf:
                if self.live:
                    run = min(self.live, key=lambda r: r.ex.cta_linear)
                    raise run.ex.deadlock_error()
                return None
            if limit is not None and t > limit:
                self.co.limit_hit(self.live)
            env.step()
        t = self.exits[0]
        while env.peek() == t:
            env.step()
        return t


class Coordinator:
    """Hands CTAs to SM classes in exit order and splits classes whose members diverge.

    make_sm(label) -> SM; make_run(env, sm, cta, kid) -> CtaRun; after_run(run, cta, replay);
    classify(cta) -> hit class id (called in linear CTA order)."""

    def __init__(self, *, num_sms: int, ctas_per_sm: int, num_ctas: int, launch_cycles: float,
                 make_sm, make_run, after_run, classify, max_cycles=None, limit_hit=None, make_executor=None):
        if not launch_cycles > 0:
            raise NotMemoisable("cta_launch_cycles must be > 0")
        self.num_sms, self.ctas_per_sm, self.num_ctas = num_sms, ctas_per_sm, num_ctas
        self.launch_cycles = float(launch_cycles)
        self.make_sm, self.make_run, self.after_run = make_sm, make_run, after_run
        self.classify = classify
        self.max_cycles = max_cycles
        self.limit_hit = limit_hit
        self.make_executor = make_executor
        self.classes: list[_SmClass] = []
        self.splits = 0

    def run(self) -> float:
        """Simulate the grid; return the cycle of the last CTA exit.

        The record of the classes that may still split (replay.py) is many long-lived objects;
        Python's full collections would traverse it again and again (each one costs more as it
        grows). While the grid runs they are made rarer (young objects are still collected as
        usual, so the memory peak does not move); the thresholds are restored after."""
        old = gc.get_threshold()
        gc.set_threshold(old[0], old[1], max(old[2], FULL_GC_EVERY))
        try:
            return self._run()
        finally:
            gc.set_threshold(*old)

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
                    child = _SmClass(self, sub[0][0], [m for m, _ in sub], history + list(sub[0][1]),
                                     cls.first_slots, t)
                    self.splits += 1
                    self.classes.append(child)
                    if self.make_executor is not None:
                        child.sources = {cta: lx.fork() for cta, lx in cls.logged.items()}
                    child.catch_up(t)
                    tc = child.advance()
                    if tc is not None:
                        heapq.heappush(heap, (tc, seq, child))
                        seq += 1
                if len(cls.members) == 1:
                    cls.stop_recording()
                tn = cls.advance()
                if tn is not None:
                    heapq.heappush(heap, (tn, seq, cls))
                    seq += 1
        if next_cta < num_ctas:
            raise HopsimError(f"SM classes finished with CTAs {next_cta}.. not dispatched (internal error)")
        return max(cls.last_exit for cls in self.classes)

