"""Per-opcode timing classes of the register-only instructions (ALU, MUFU, SHFL; issues 14/15).

Every register-only instruction belongs to one class; a class has three costs (config fields, fitted
from microbench__ops by hopsim/validate/calibrate_ops.py):

    latency  cycles from the instruction's issue to its result being readable by a dependent
             instruction (the record's one-warp dependent chain, cycles per step)
    pipe     cycles one warp instruction holds its sub-partition's pipe of the class (4 / the
             record's peak warp instructions per SM cycle: the rate when every sub-partition is busy)
    warp     least cycles between this instruction and the next of the same warp (1 / the record's
             one-warp rate over 8 independent chains: one warp cannot issue every cycle)

An ALU run (hopsim/timing/sm.py `_alu`) is scheduled instruction by instruction: each issues no
earlier than the previous one's `warp` gap and than the results it reads (or overwrites, or is
guarded by) are ready; the class pipes of the warp's sub-partition are reserved for the sum of the
run's `pipe` cycles per class (FIFO); the warp goes on when the pipes have taken the run and its
last op's `warp` gap has passed. Results still in flight then are carried (per warp): the next
run's ops and any other instruction touching them wait for them (sm.py `_warp`). MUFU/SHFL ops keep their scoreboard (sm.py `_unit_op`) with their
class's costs. Register-to-register `mov` is the class `mov`, free (ptxas renames it away: the
record's cvt.rn.f16x2.f32 step is one F2FP, no move, in its SASS counts). `elected_predicates`:
the predicates holding an elect.sync result (a TMA copy guarded by one has its own issue cost).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from isa.ir import instructions as I
from isa.ir.instructions import And, ElectSync
from isa.ir.operands import Reg

from hopsim.functional.effect import Kind
from hopsim.timing.pipes import QUANTUM

CLASSES = ("alu", "mov", "fp32", "fminmax", "fp16x2", "cvt_pack", "cvt_f16", "cvt_bf16", "vote",
           "vote_ballot", "redux", "ex2", "ex2_full", "rcp", "rcp_full", "shfl", "shfl_idx")
"""The classes (config fields: `FIELDS[c]`)."""

FIELDS = {c: (f"op_{c}_latency_cycles", f"op_{c}_pipe_cycles", f"op_{c}_warp_cycles") for c in CLASSES}
FIELDS["alu"] = ("alu_latency_cycles", "op_alu_pipe_cycles", "op_alu_warp_cycles")
FIELDS["ex2"] = ("mufu_latency_cycles", "op_ex2_pipe_cycles", "op_ex2_warp_cycles")
FIELDS["shfl"] = ("shfl_latency_cycles", "op_shfl_pipe_cycles", "op_shfl_warp_cycles")
"""class -> (latency, pipe, warp) field names of H100Timing (alu/ex2/shfl keep the older latency names)."""

PIPE = {c: c for c in CLASSES}
PIPE.update({"ex2": "mufu", "ex2_full": "mufu", "rcp": "mufu", "rcp_full": "mufu", "shfl_idx": "shfl"})
"""class -> the sub-partition pipe it occupies (the MUFU classes share the special-function unit,
the shuffles the shuffle unit; each other class its own pipe)."""

HALF = frozenset({"f16", "bf16", "f16x2", "bf16x2"})


def classify(ins) -> str:
    """The timing class of one register-only instruction (ALU, MUFU or SHFL timing_class)."""
    if isinstance(ins, I.Mov):
        return "mov" if isinstance(getattr(ins, "src", None), Reg) else "alu"
    if isinstance(ins, (I.Fma, I.Add, I.Sub, I.Mul)):
        t = getattr(ins, "type", "")
        return "fp16x2" if t in HALF else "fp32" if t in ("f32", "f64") else "alu"
    if isinstance(ins, (I.Max, I.Min)):
        return "fminmax" if getattr(ins, "type", "") == "f32" else "alu"
    if isinstance(ins, I.Cvt):
        d, s = getattr(ins, "dtype", ""), getattr(ins, "stype", "")
        if d in ("f16x2", "bf16x2"):
            return "cvt_pack"
        if "bf16" in (d, s):
            return "cvt_bf16"
        return "cvt_f16" if "f16" in (d, s) else "alu"
    if isinstance(ins, I.VoteSync):
        return "vote_ballot" if getattr(ins, "mode", "") == "ballot" else "vote"
    if isinstance(ins, I.ReduxSync):
        return "redux"
    if isinstance(ins, I.Ex2):
        return "ex2" if getattr(ins, "ftz", False) else "ex2_full"
    if isinstance(ins, I.Rcp):
        return "rcp" if getattr(ins, "ftz", False) else "rcp_full"
    if isinstance(ins, I.ShflSync):
        return "shfl_idx" if getattr(ins, "mode", "") == "idx" and isinstance(getattr(ins, "b", None), Reg) else "shfl"
    return "alu"


def _q(x: float) -> float:
    """Rounded up to the pipes' quantum (times stay dyadic: memo.py compares them exactly)."""
    return math.ceil(float(x) * QUANTUM) / QUANTUM


@dataclass(frozen=True)
class ClassCost:
    """One class's costs in SM cycles (quantised), and its pipe's index in `PIPES`."""

    latency: float
    pipe: float
    warp: float
    pipe_id: int


PIPES = tuple(dict.fromkeys(PIPE[c] for c in CLASSES))
"""The distinct pipes per sub-partition, in a fixed order (SM.op_pipes[smsp][pipe_id])."""


def class_costs(timing) -> dict[str, ClassCost]:
    """class -> ClassCost from a config's timing group."""
    out = {}
    for c in CLASSES:
        lat, pipe, warp = (float(getattr(timing, f).value) for f in FIELDS[c])
        out[c] = ClassCost(_q(lat), _q(pipe), _q(warp), PIPES.index(PIPE[c]))
    return out


def op_costs(prog, costs: dict[str, ClassCost]) -> dict[int, ClassCost]:
    """Body index -> ClassCost of every register-only op of a compiled program (cached on the
    program per costs table)."""
    got = getattr(prog, "_op_costs", None)
    if got is not None and got[0] is costs:
        return got[1]
    table = CostTable((op.index, costs[classify(op.instr)]) for op in prog.ops if op.instr is not None)
    table.steps = {op.index: (op.rows, op.guard_row, table[op.index].latency, op.rows_written, table[op.index].pipe,
                              table[op.index].pipe_id, table[op.index].warp) for op in prog.ops if op.index in table}
    prog._op_costs = (costs, table)
    return table


class CostTable(dict):
    """Body index -> ClassCost; `steps`: body index -> (rows, guard row, latency, rows written, pipe,
    pipe_id, warp), the same costs with the op's rows, flat for `schedule_run`'s loop."""

    steps: dict = {}

    def __deepcopy__(self, memo):
        return self  # read-only, one per program and costs (fork.py's copies share it)


def schedule_run(run, table: dict[int, ClassCost], start: float, pipes: list, ready: dict) -> float:
    """Cost of one ALU run of a warp whose issue slots start at `start`: each op issues no earlier
    than the previous op's `warp` gap and than the results it touches (reads, overwrites or is
    guarded by) are ready (`ready`: row -> cycle, the warp's results in flight; updated with the
    run's); `pipes` (the warp's sub-partition's, by pipe_id) are reserved from `start` for the
    run's `pipe` cycles per class. Returns when the warp may issue again: its last op's gap
    passed, the pipes having taken the run."""
    steps = table.steps if isinstance(table, CostTable) else {
        i: (op.rows, op.guard_row, c.latency, op.rows_written, c.pipe, c.pipe_id, c.warp)
        for op in run for i, c in ((op.index, table[op.index]),)}
    get = ready.get
    if len(run) == 1:  # (the loop below for one op, without its bookkeeping: a third of the runs)
        rows, g, latency, written, pipe, pipe_id, warp = steps[run[0].index]
        need = start
        if ready:
            for r in rows:
                x = get(r)
                if x is not None and x > need:
                    need = x
            if g is not None:
                x = get(g)
                if x is not None and x > need:
                    need = x
        done = need + latency
        for r in written:
            ready[r] = done
        t = need + warp
        end = t if t > start else start
        if pipe:
            e = pipes[pipe_id].reserve(start, 0.0 + pipe, PIPES[pipe_id])
            if e > end:
                end = e
        return end
    t = start
    end = start
    occ: dict = {}
    for op in run:
        rows, g, latency, written, pipe, pipe_id, warp = steps[op.index]
        need = t
        if ready:
            for r in rows:
                x = get(r)
                if x is not None and x > need:
                    need = x
            if g is not None:
                x = get(g)
                if x is not None and x > need:
                    need = x
        done = need + latency
        for r in written:
            ready[r] = done
        if pipe:
            occ[pipe_id] = occ.get(pipe_id, 0.0) + pipe
        t = need + warp
    if t > end:
        end = t
    for pid, o in occ.items():
        e = pipes[pid].reserve(start, o, PIPES[pid])
        if e > end:
            end = e
    return end


def touched_rows(prog) -> dict[int, frozenset]:
    """Body index -> the register rows an op reads, writes or is guarded by (cached on the program):
    what waits for a result in flight."""
    got = getattr(prog, "_touched", None)
    if got is None:
        got = {op.index: op.rows | ({op.guard_row} if op.guard_row is not None else frozenset()) for op in prog.ops}
        prog._touched = got
    return got


def carried_need(ready: dict, rows: frozenset, now: float) -> float:
    """When the results in flight that `rows` touch are ready (>= now); drops those ready by now.
    (One pass over the results in flight, usually fewer than the rows a wgmma touches.)"""
    need = now
    done = None
    for r, t in ready.items():
        if t <= now:
            if done is None:
                done = [r]
            else:
                done.append(r)
        elif t > need and r in rows:
            need = t
    if done is not None:
        for r in done:
            del ready[r]
    return need


def load_destinations(prog) -> dict:
    """Body index of each ld.global of a compiled program -> its destination register rows
    (cached on the program)."""
    got = getattr(prog, "_gld_dst", None)
    if got is None:
        got = {op.index: op.rows_written for op in prog.ops if op.kind == Kind.LD_GLOBAL and op.rows_written}
        prog._gld_dst = got
    return got


def unit_destinations(prog) -> dict:
    """Body index of each MUFU/SHFL op and atom.shared of a compiled program -> its destination
    register rows (scoreboarded until the op's latency has passed; cached on the program)."""
    got = getattr(prog, "_unit_dst", None)
    if got is None:
        got = {op.index: op.rows_written for op in prog.ops
               if (op.kind in (Kind.MUFU, Kind.SHFL) or isinstance(op.instr, I.AtomShared)) and op.rows_written}
        prog._unit_dst = got
    return got


def elected_predicates(kernel) -> frozenset:
    """Names of the predicate registers that hold an elect.sync result in `kernel` (cached on it):
    every write to them is an elect.sync, or an `and.pred` with an elected operand (elect one lane,
    then narrow it by a warp condition). A copy guarded by one is issued the way ptxas issues
    CUTLASS's elect_one_sync() copies (microbench__tma_issue)."""
    got = kernel.cache.get("elected_predicates")
    if got is None:
        writers: dict[str, list] = {}
        for ins in kernel.body:
            try:
                regs = ins.writes()
            except Exception:  # noqa: BLE001 - label definitions and the like write nothing
                continue
            for r in regs:
                writers.setdefault(getattr(r, "name", str(r)), []).append(ins)
        def is_elect(i) -> bool:
            return isinstance(i, ElectSync)

        def narrows(i, n: str, el: set) -> bool:  # and.pred n, x, y with x or y elected (or n itself)
            return (isinstance(i, And) and i.type == "pred"
                    and any(getattr(x, "name", None) in el | {n} for x in (i.a, i.b)))

        elected: set = set()
        changed = True
        while changed:
            changed = False
            for n, ws in writers.items():
                if n in elected:
                    continue
                seeded = any(is_elect(i) for i in ws) or any(
                    isinstance(i, And) and any(getattr(x, "name", None) in elected for x in (i.a, i.b))
                    for i in ws)
                if seeded and all(is_elect(i) or narrows(i, n, elected) for i in ws):
                    elected.add(n)
                    changed = True
        got = frozenset(elected)
        kernel.cache["elected_predicates"] = got
    return got


def elect_guarded(ins, elected: frozenset) -> bool:
    guard = getattr(ins, "guard", None)
    return guard is not None and not guard.negate and getattr(guard.pred, "name", None) in elected
