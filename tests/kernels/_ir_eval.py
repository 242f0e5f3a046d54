"""A tiny evaluator of straight-line IR integer code (for the GEMM generator's address laws).

`run(kernel, regs)` executes the kernel's instructions in order (labels skipped, no branches
taken: the fragments it is used on are straight-line) on one thread's registers: u32/b32 values
wrap at 2^32, u64 at 2^64. TMA loads and expect_tx arrivals are recorded, not executed. Only the
integer instructions the generator's address code uses are known; anything else is an error, so
that a fragment cannot silently skip work.
"""

from __future__ import annotations

from isa.ir import Imm, Mem, Reg, instructions as I
from isa.ir.program import LabelDef

BITS = {"u32": 32, "b32": 32, "s32": 32, "u64": 64, "b64": 64}


def _val(x, regs):
    if isinstance(x, Imm):
        return x.value
    if isinstance(x, Reg):
        return regs[x.name]
    raise AssertionError(f"operand {x!r} is not an integer register or immediate")


def _addr(m: Mem, regs) -> int:
    return _val(m.base, regs) + m.offset


def run(kernel, regs: dict[str, int]) -> tuple[dict[str, int], list]:
    """(registers after, [(kind, ...)] events): ("tma", tmap, dst, (c0, c1), mbar),
    ("expect_tx", mbar, bytes), ("wgmma", a_desc, b_desc, first accumulator)."""
    regs, events = dict(regs), []
    for ins in kernel.body:
        if isinstance(ins, LabelDef):
            continue
        if isinstance(ins, I.CpAsyncBulkTensorLoad):
            events.append(("tma", ins.tmap.name, _addr(ins.dst, regs),
                           tuple(_val(c, regs) for c in ins.coords), _addr(ins.mbar, regs)))
            continue
        if isinstance(ins, I.WgmmaMmaAsync):
            events.append(("wgmma", _val(ins.a, regs), _val(ins.b_desc, regs), ins.d.regs[0].name))
            continue
        if isinstance(ins, (I.WgmmaFence, I.WgmmaCommitGroup)):
            continue
        if isinstance(ins, I.MbarrierArriveExpectTx):
            events.append(("expect_tx", _addr(ins.addr, regs), _val(ins.tx_count, regs)))
            continue
        regs[ins.dst.name] = _alu(ins, regs)
    return regs, events


def _alu(ins, regs) -> int:
    a = _val(ins.a, regs) if hasattr(ins, "a") else _val(ins.src, regs)
    if isinstance(ins, (I.Mov, I.Cvt)):  # cvt.u64.u32: zero extension
        return a
    b = _val(ins.b, regs)
    bits = 64 if isinstance(ins, I.Mul) and ins.mode == "wide" else BITS[ins.type]
    mask = (1 << bits) - 1
    if isinstance(ins, I.Mul):
        prod = a * b
        return (prod >> 32) & mask if ins.mode == "hi" else prod & mask
    if isinstance(ins, I.Mad):
        return (a * b + _val(ins.c, regs)) & mask
    ops = {I.Add: lambda: a + b, I.Sub: lambda: a - b, I.And: lambda: a & b, I.Or: lambda: a | b,
           I.Xor: lambda: a ^ b, I.Shl: lambda: a << b, I.Shr: lambda: a >> b}
    for cls, f in ops.items():
        if isinstance(ins, cls):
            return f() & mask
    raise AssertionError(f"the evaluator does not know {type(ins).__name__}")
