"""Copy an SM class's simulation in flight (smclass.py): a split class goes on from a copy of its
parent's state at the split instead of re-running the shared history.

Why it is exact. When an SM class splits at cycle t, the parent has processed every event up to
t and nothing after (smclass.Coordinator), and a new class re-running the same history in a
fresh environment would reach the same state at t (the re-run is deterministic: same CTAs, same
inputs, same event order). A copy of the parent's state at t is that state: the environment
(clock, event queue with its entry ids, the id counter), the SM's units and link, the CTAs in
flight (their executors, events, statistics) and the processes of the slots and warps. So the
child goes on from the copy exactly as it would have gone on from its re-run.

What is copied and how:
  - `copy.deepcopy` with one memo over everything, where what the classes share stays shared:
    the kernel, its compiled program, launch and global memory (replay._shared), the L2
    residency (touched at dispatch only), the CTAs' hit vectors, the timing constants, simpy's
    PENDING marker (events compare their value to it by identity);
  - Python generators cannot be copied, so each SimPy process gets a new generator that starts at
    the suspension point the old one is at (`CtaRun._warp(resume=...)`, `_SmClass._slot(resume=...)`),
    from the locals of the old generator's frame there, waiting on the copy of the same event;
  - closures are atomic to deepcopy: the ones in the copied state (a blocked warp's on_resume, an
    async op's `complete` in the event queue, a TMA store's read completion) are rebuilt on the
    copies (replay._rebind), as the split replay already did for the CTAs alive at the split.
tests/timing/test_fork.py checks copy == re-run field by field.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
import sys
import types

import simpy
from simpy.events import PENDING, Process

from hopsim.functional.effect import Effect
from hopsim.timing import sm as sm_mod
from hopsim.timing.pipes import Pipe

AT_WAIT, AT_RUN = 1, 2
"""Where a slot process (smclass._SmClass._slot) is suspended: the relaunch gap, a CTA's run."""

_WARP_CODE = sm_mod.CtaRun._warp.__code__
_WARP_POINTS = (sm_mod.AT_SCOREBOARD, sm_mod.AT_BLOCKED, sm_mod.AT_EXIT, sm_mod.AT_RESUME, sm_mod.AT_DRAIN,
                sm_mod.AT_CARRIED)


class NotCopyable(Exception):
    """The state holds something fork.py does not know how to copy (the caller re-runs instead)."""


def fork_class(parent, child, untrace: bool = False) -> None:
    """Give `child` (a new smclass._SmClass without environment) a copy of `parent`'s state.
    `untrace`: the parent records a trace and the child does not: the parent's slice lists (its
    units' pipes, its live CTAs' warp slices and async ops in flight) are copied as None, so the
    copy records nothing (`trace_lists`; the timing never reads them)."""
    old_env = parent.env
    env = simpy.Environment(initial_time=old_env.now)
    memo: dict = {id(old_env): env, id(PENDING): PENDING}
    if untrace:
        memo.update((id(lst), None) for lst in trace_lists(parent.sm, parent.live))
    for run in parent.live:
        if run.ex is not None:
            memo.update(_shared(run.ex))
        for obj in (run.c, run.hits, run.wavefronts, getattr(run, "gld_dst", None), getattr(run, "reg_dst", None)):
            if obj is not None:
                memo[id(obj)] = obj
    residency = getattr(parent.sm.memory, "residency", None)
    if residency is not None:
        memo[id(residency)] = residency
    procs = list(parent.procs) + [p for run in parent.live for p in run.procs]
    shells = {}
    for p in procs:
        shell = Process.__new__(Process)
        memo[id(p)] = shell
        shells[id(p)] = (p, shell)
    sm, live, queue = copy.deepcopy((parent.sm, parent.live, old_env._queue), memo)
    env._queue = queue
    env._eid = copy.copy(old_env._eid)  # the next entry id as in the parent (ties at one cycle)
    for p, shell in shells.values():
        state = {k: v for k, v in p.__dict__.items() if k != "_generator"}
        shell.__dict__.update(copy.deepcopy(state, memo))
        shell._generator = None
    seen: set = set()  # the Effects whose closures are rebuilt (once each)
    _fix_closures(memo, live, queue, seen)
    child.env, child.sm, child.live = env, sm, live
    child.procs = [memo[id(p)] for p in parent.procs]
    for p, shell in shells.values():
        gen = p._generator
        if gen is None or gen.gi_frame is None:  # ended: nothing to resume
            continue
        shell._generator = _resumed(gen, memo, child, parent, seen)
        first = shell._generator.send(None)
        if first is not shell._target:
            raise NotCopyable("a resumed process waits on another event than its copy (internal)")


def trace_lists(sm, live) -> list:
    """The trace's slice lists of an SM (every `Pipe` of it, its units and its L2/HBM link) and
    of its live CTAs (warp slices, async ops in flight)."""
    out = []
    for obj in (sm, sm.sched, sm.smem, sm.tensor, sm.tma, sm.memory):
        for v in vars(obj).values():
            for p in _pipes(v):
                if p.slices is not None:
                    out.append(p.slices)
    for run in live:
        out += [st.slices for st in run.stats if st.slices is not None]
        if run.inflight is not None:
            out.append(run.inflight)
    return out


def _pipes(v) -> list:
    """The `Pipe`s in an attribute value: a pipe, a list of pipes or a list of lists of them."""
    if isinstance(v, Pipe):
        return [v]
    if isinstance(v, list) and v and isinstance(v[0], (Pipe, list)):
        return [p for x in v for p in _pipes(x)]
    return []


def yield_points(fn, names) -> dict | None:
    """Source line of each `yield` of generator function `fn` -> the suspension point the code
    before it set (`at = AT_X`, looked up in `names`), None for a resumed process's first yield
    (any point); None when the source cannot be read. A yield whose line is not in the table, or
    whose `at` is not the one its line says (a yield added without its own point), is not
    copied (NotCopyable: the split re-runs the history)."""
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    table, at = {}, None
    for i, line in enumerate(lines):
        m = re.search(r"\bat = (?:fork\.)?(AT_\w+)", line)
        if m:
            at = getattr(names, m.group(1))
        if re.match(r"\s*yield\b", line):
            table[start + i] = at
    return table


_POINTS: dict = {}  # code object -> yield_points of its function


def _check_point(gen, fn, names, at) -> None:
    table = _POINTS.get(gen.gi_code)
    if table is None:
        table = _POINTS[gen.gi_code] = yield_points(fn, names) or {}
    line = gen.gi_frame.f_lineno
    if line not in table or (table[line] is not None and table[line] != at):
        raise NotCopyable(f"{gen.gi_code.co_name} suspended at line {line} with point {at!r}: not a known yield")


def _resumed(gen, memo: dict, child, parent, seen: set):
    """A generator that goes on from where `gen` is suspended, on the copies in `memo`."""
    loc = gen.gi_frame.f_locals
    target = memo[id(loc["self"])] if loc["self"] is not parent else child
    if gen.gi_code is _WARP_CODE:
        at = loc["at"]
        if at not in _WARP_POINTS:
            raise NotCopyable(f"a warp process suspended at an unknown point {at!r}")
        _check_point(gen, sm_mod.CtaRun._warp, sm_mod, at)
        proc = memo[id(_process_of(gen, parent))]
        state = {k: copy.deepcopy(loc.get(k), memo) for k in sm_mod.RESUME_LOCALS}
        if isinstance(state["eff"], Effect):  # its completion acts on the copied executor
            _fixed(state["eff"], memo, seen)
        return target._warp(loc["w"], resume=(at, proc._target, state))
    if gen.gi_code is type(parent)._slot.__code__:
        proc = memo[id(_process_of(gen, parent))]
        at = loc["at"]
        _check_point(gen, type(parent)._slot, sys.modules[__name__], at)
        state = {k: copy.deepcopy(loc[k], memo) for k in ("run", "cta")} if at == AT_RUN else {}
        return target._slot(loc["slot"], resume=(at, proc._target, state))
    raise NotCopyable(f"a process of an unknown generator {gen.gi_code.co_name}")


def _process_of(gen, parent):
    for p in parent.procs:
        if p._generator is gen:
            return p
    for run in parent.live:
        for p in run.procs:
            if p._generator is gen:
                return p
    raise NotCopyable("a generator without its process (internal)")


def _fix_closures(memo: dict, live, queue, seen: set) -> None:
    """Rebuild the closures of the copied state on the copies (module docstring)."""
    for run in live:
        ex = run.ex
        for ws in getattr(ex, "warps", ()):
            blk = getattr(ws, "block", None)
            if blk is not None and len(blk) == 4 and blk[3] is not None:
                ws.block = blk[:3] + (_rebind(blk[3], memo),)
    for entry in queue:
        cbs = entry[3].callbacks
        if not cbs:
            continue
        for i, cb in enumerate(cbs):
            if isinstance(cb, functools.partial):
                cbs[i] = functools.partial(cb.func, *(_fixed(a, memo, seen) for a in cb.args), **cb.keywords)
            elif not isinstance(cb, types.MethodType):
                raise NotCopyable(f"an event callback fork.py does not know: {cb!r}")


def _fixed(arg, memo: dict, seen: set):
    if isinstance(arg, Effect):
        if id(arg) not in seen:
            seen.add(id(arg))
            if arg.complete is not None:
                arg.complete = _rebind(arg.complete, memo)
            for k, v in list(arg.extra.items()):
                if isinstance(v, types.FunctionType) and v.__closure__:
                    arg.extra[k] = _rebind(v, memo)
        return arg
    if isinstance(arg, types.FunctionType) and arg.__closure__:
        return _rebind(arg, memo)
    return arg


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


def _rebind(fn, memo: dict):
    """`fn` (an async op's completion closure) acting on the copies in `memo`: its cells deep-copied
    through the memo of the executor's copy (the executor, its warps, warpgroups and barriers map
    to their copies; shared objects stay shared)."""
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


__all__ = ["NotCopyable", "fork_class"]
