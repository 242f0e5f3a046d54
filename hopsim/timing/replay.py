"""Record a CTA's issue() stream and replay it, so a split SM class (smclass.py) does not execute
its shared history functionally a second time.

Why it is exact. When an SM class splits at cycle t, the new class re-runs the class's history
from cycle 0 to t with the same inputs in a fresh SimPy environment (smclass.py): a deterministic
re-run, so every warp makes the same `issue()` calls, in the same order, with the same results,
and every async op completes at the same cycle returning the same fired keys. Up to t the new
class therefore needs no functional executor: `LoggedExecutor` records, per warp, every Effect
the parent's executor returned and what each `complete()` returned; the new class replays them.
Its timing (SM units, pipes, memory links, waits) is still simulated, so its state at t is built
exactly as before; only the functional work (registers, addresses, synchronisation objects) is
taken from the record.

After t the new class's inputs differ, so its CTAs still alive at t go on with a deep copy of the
parent's executor taken at t (the parent has processed exactly the events up to t when it
splits), and an async op in flight at t completes on that copy: its `complete` closure is rebuilt
with its cells mapped through the same deep-copy memo (`_rebind`). CTAs that start after t get
fresh executors. The kernel, its compiled program, the launch and the global memory are shared,
not copied (they are shared between CTAs and classes as before).
"""

from __future__ import annotations

import copy
import types

from hopsim.functional.effect import Kind
from hopsim.timing.opclass import load_destinations, unit_destinations
from isa.errors import HopsimError


class _Recorder:
    """An async op's `complete`, recording what it returned (the fired keys) when it ran."""

    __slots__ = ("inner", "owner", "keys", "__weakref__")

    def __init__(self, inner, owner: "LoggedExecutor"):
        self.inner, self.owner, self.keys = inner, owner, None

    def __call__(self):
        keys = self.inner()
        self.keys = keys
        self.owner.outstanding.discard(self)
        return keys


class _Const:
    """A replayed completion: the fired keys the parent's completion returned."""

    __slots__ = ("keys",)

    def __init__(self, keys):
        self.keys = keys

    def __call__(self):
        return self.keys


class _Source:
    """What a split class replays of one CTA: the parent's per-warp logs up to the split (their
    lengths then), the completions in flight then, and the executor copy (None: the CTA had
    ended with nothing in flight)."""

    __slots__ = ("log", "lens", "inflight", "real", "memo", "cta_linear", "num_warps", "kernel", "prog")

    def __init__(self, lx: "LoggedExecutor"):
        self.log = lx.log
        self.lens = list(lx.pos)
        self.inflight = set(lx.outstanding)
        self.cta_linear, self.num_warps, self.kernel, self.prog = lx.cta_linear, lx.num_warps, lx.kernel, lx.prog
        self.real = self.memo = None
        if lx.real is not None and (self.inflight or not all(row and row[-1].kind == Kind.EXIT for row in lx.log)):
            self.memo = _shared(lx.real)
            self.real = _copy_executor(lx.real, self.memo)
        elif self.inflight:
            raise HopsimError(f"CTA {lx.cta_linear}: async ops in flight without an executor (replay.py, internal)")


class LoggedExecutor:
    """An executor of one CTA (the functional one, or a replay of a parent's record followed by a
    copy of its executor) whose `issue()` results and completions are recorded (module docstring)."""

    def __init__(self, real=None, source: _Source | None = None, recording: bool = True):
        self.real, self.src = real, source
        base = source if source is not None else real
        self.cta_linear, self.num_warps = base.cta_linear, base.num_warps
        self.kernel = getattr(base, "kernel", None)
        self.prog = getattr(base, "prog", None)  # CtaRun reads it (the ld.global scoreboard's rows)
        self.pos = [0] * self.num_warps  # issue() calls made per warp
        self.log: list[list] | None = [[] for _ in range(self.num_warps)] if recording else None
        self.outstanding: set = set()

    def stop_recording(self) -> None:
        """No split will replay this CTA any more (its class has one member left): drop the record."""
        self.log = None
        self.outstanding = set()

    def fork(self) -> _Source:
        """What a class splitting off now replays of this CTA."""
        return _Source(self)

    def issue(self, w: int, batch: int = 1, stop=None):
        src = self.src
        i = self.pos[w]
        self.pos[w] = i + 1
        if src is not None and i < src.lens[w]:
            eff = src.log[w][i]
            rec = eff.complete
            if rec is not None:
                eff = copy.copy(eff)
                eff.complete = (_rebind(rec.inner, src.memo) if rec in src.inflight else _Const(rec.keys))
        elif self.real is None:
            raise HopsimError(f"CTA {self.cta_linear} warp {w}: the replay ran past its record (replay.py, internal)")
        else:
            eff = self.real.issue(w, batch) if stop is None else self.real.issue(w, batch, stop)
        log = self.log
        if log is not None:
            if eff.complete is not None:
                rec = _Recorder(eff.complete, self)
                eff.complete = rec
                self.outstanding.add(rec)
            log[w].append(eff)
        return eff

    def __getattr__(self, name):  # warp_done, pc, describe, deadlock_error, waiters of the executor
        real = self.__dict__.get("real")
        if real is None:
            raise AttributeError(name)
        return getattr(real, name)


def recordable(ex) -> bool:
    """Can a CTA of this executor be replayed? Not when its kernel has an ld.global into registers
    or a MUFU/SHFL op (ex2, rcp, shfl.sync: scoreboarded until their latency has passed): then the
    timing layer reads the executor's program counters between issues (CtaRun's scoreboard), which a
    replay does not keep; such classes re-execute their history on a split."""
    prog = getattr(ex, "prog", None)
    return prog is None or not (load_destinations(prog) or unit_destinations(prog))


def _shared(ex) -> dict:
    """A deep-copy memo that keeps what CTAs share (kernel, program, launch, global memory)."""
    memo: dict = {}
    for obj in (getattr(ex, "kernel", None), getattr(ex, "launch", None), getattr(ex, "gmem", None)):
        if obj is not None:
            memo[id(obj)] = obj
    prog = getattr(ex, "prog", None)
    if prog is not None:
        memo[id(prog)] = prog
        for op in getattr(prog, "ops", ()):
            memo[id(op)] = op
            ins = getattr(op, "instr", None)
            if ins is not None:
                memo[id(ins)] = ins
    return memo


def _copy_executor(ex, memo: dict):
    """A deep copy of executor `ex`. Functions are atomic to `copy.deepcopy`, so the closures the
    executor keeps in its state, a blocked warp's `on_resume` (`WarpState.block`, EXECUTOR_API.md:
    e.g. a wgmma.wait_group's group retirement), are rebuilt on the copy (`_rebind`)."""
    new = copy.deepcopy(ex, memo)
    for ws in getattr(new, "warps", ()):
        blk = getattr(ws, "block", None)
        if blk is not None and len(blk) == 4 and blk[3] is not None:
            ws.block = blk[:3] + (_rebind(blk[3], memo),)
    return new


def _rebind(fn, memo: dict):
    """`fn` (an async op's completion closure) acting on the copies in `memo`: its cells deep-copied
    through the memo of the executor's copy (the executor, its warps, warpgroups and barriers map
    to their copies; shared objects stay shared)."""
    if isinstance(fn, _Const):
        return fn
    if not isinstance(fn, types.FunctionType):
        return copy.deepcopy(fn, memo)  # a bound method or partial: deepcopy maps its target
    key = ("rebound", id(fn))
    if key in memo:  # one closure shared by several warps (a warpgroup's on_resume): one copy
        return memo[key]
    cells = []
    for c in fn.__closure__ or ():
        try:
            v = c.cell_contents
        except ValueError:
            cells.append(types.CellType())
            continue
        v = _rebind(v, memo) if isinstance(v, types.FunctionType) and v.__closure__ else copy.deepcopy(v, memo)
        cells.append(types.CellType(v))
    g = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, tuple(cells))
    g.__kwdefaults__ = fn.__kwdefaults__
    memo[key] = g
    memo.setdefault("keep", []).append(fn)  # the key's id stays this function's while the memo lives
    return g
