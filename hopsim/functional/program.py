"""Compile a Kernel once into per-instruction closures (`Op`s) that the executor calls.

    Kernel.body:  [LabelDef LOOP, mov, add, setp, @p bra LOOP, exit]
    Program.ops:  [Op(mov), Op(add), Op(setp), Op(bra -> pc 0), Op(exit)]     (labels removed,
                   pc = position in ops; Op.index = position in Kernel.body for messages)

Each `Op.fn(ex, ws, mask)` executes the instruction for warp `ws` of executor `ex`, for the lanes in
`mask` (active and guard true). ALU ops return None (fall through) or the new pc (branch); every
other op returns an `Effect`. Register names, symbol offsets, types and converters are resolved
here, so nothing is decoded at issue time. The semantics (op builders) live in `ops_*.py` modules,
registered per instruction class with `@semantics(Cls)` (semantics.py) and found through the
instruction's MRO; the op's timing class is the declaration's `timing_class`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from hopsim.functional import (  # noqa: F401  (register the semantics)
    ops_alu, ops_async, ops_atomic, ops_cpasync, ops_float, ops_mem, ops_sync, ops_warp,
)
from hopsim.functional.effect import Kind
from hopsim.functional.errors import IllegalInstruction
from hopsim.functional.ops_sync import exit_fn
from hopsim.functional.regs import RegLayout
from hopsim.functional.semantics import Ctx, invalidating, semantics_of
from isa.ir.cfg import pcs_and_labels, post_dominators, successors
from isa.ir.instructions import Exit


@dataclass(slots=True)
class Op:
    """One compiled instruction."""

    index: int
    instr: object
    kind: str
    fn: Callable
    next_pc: int
    guard_row: int | None
    guard_neg: bool
    rows: frozenset
    rows_written: frozenset
    collective: bool
    text: str
    check_regs: bool = True


@dataclass
class Program:
    """A compiled Kernel: ops, register layout, shared layout, the labels' pcs."""

    kernel: object
    ops: list
    layout: RegLayout
    shared: dict
    static_smem: int
    params: dict
    labels: dict
    wgmma_rows: frozenset = field(default_factory=frozenset)


def compile_kernel(kernel) -> Program:
    """Compile (cached on the kernel object's id while it lives)."""
    hit = _CACHE.get(id(kernel))
    if hit is not None and hit[0] is kernel:
        return hit[1]
    prog = _compile(kernel)
    _CACHE[id(kernel)] = (kernel, prog)
    return prog


_CACHE: dict[int, tuple] = {}


def _compile(kernel) -> Program:
    layout = RegLayout.from_decls(kernel.regs)
    shared = dict(kernel.shared_layout())
    static = int(kernel.static_smem_bytes)
    params = {p.name: p.type for p in kernel.params}
    body = list(kernel.body)
    pcs, label_pc = pcs_and_labels(body)  # dense pcs; a label at the end names the implicit exit
    end_pc = len(pcs)
    ctx = Ctx(kernel, layout, shared, params, label_pc)
    ctx.ipdom = post_dominators(successors([body[i] for i in pcs], label_pc))
    ops: list[Op] = []
    for pc, i in enumerate(pcs):
        ins = body[i]
        ctx.pc = pc
        ops.append(_compile_one(ins, i, pc, ctx))
    ops.append(_implicit_exit(len(body), end_pc))
    wrows = frozenset(ctx.wgmma_rows)
    for op in ops:  # only instructions touching wgmma registers need the register checks
        op.check_regs = bool(op.rows & wrows) or op.collective
    return Program(kernel=kernel, ops=ops, layout=layout, shared=shared, static_smem=static,
                   params=params, labels=label_pc, wgmma_rows=wrows)


def _text(ins) -> str:
    try:
        return ins.text()
    except Exception:  # pragma: no cover
        return type(ins).__name__


def _compile_one(ins, index: int, pc: int, ctx: Ctx) -> Op:
    b = semantics_of(type(ins))
    if b is None:
        raise IllegalInstruction(f"the functional machine does not implement {type(ins).__name__}",
                                 index=index, text=_text(ins))
    kind = type(ins).timing_class
    try:
        fn = b(ins, ctx)
    except IllegalInstruction as e:
        raise e.located(index=index, text=_text(ins))
    guard = getattr(ins, "guard", None)
    grow = ctx.row(guard.pred) if guard is not None else None
    try:
        reads = frozenset(ctx.row(r) for r in ins.reads())
        writes = frozenset(ctx.row(r) for r in ins.writes())
    except Exception:
        reads, writes = frozenset(), frozenset()
    if writes:
        fn = invalidating(fn, sorted(writes))  # no-op for scalar-aware ALU ops
    return Op(index=index, instr=ins, kind=kind, fn=fn, next_pc=pc + 1, guard_row=grow,
              guard_neg=bool(guard.negate) if guard is not None else False,
              rows=reads | writes, rows_written=writes, collective=kind in Kind.COLLECTIVE, text=_text(ins))


def _implicit_exit(index: int, pc: int) -> Op:
    return Op(index=index, instr=None, kind=Exit.timing_class, fn=exit_fn, next_pc=pc, guard_row=None, guard_neg=False,
              rows=frozenset(), rows_written=frozenset(), collective=False, text="exit (end of kernel)")
