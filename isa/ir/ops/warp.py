"""Warp-level data exchange and reductions: shfl.sync, vote.sync, redux.sync (PTX ISA sm_70+/sm_80+).

All three are register-only warp collectives over the lanes of `membermask`: timing class
`Kind.ALU` (issued like a register op). Their per-opcode latency and throughput (the shuffle and
reduction units) come later from microbenchmarks, not from these declarations.

The membermask rule (PTX ISA: every executing lane must be in membermask, and every lane of
membermask must execute the same instruction) is checked statically where it can be (`lint`: an
unguarded instruction with an immediate mask runs on every lane of the warp) and at run time by
the semantics (hopsim/functional/ops_warp.py) otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from isa.ir.operands import Guard, Imm, Reg
from isa.ir.ops.base import REG, VAL, Instruction, Kind, Opnd, Slot, _fail, _is, _one_of
from isa.ir.syntax import Pair

SHFL_MODES = ("up", "down", "bfly", "idx")
VOTE_MODES = ("all", "any", "uni", "ballot")
REDUX_OPS = ("add", "min", "max", "and", "or", "xor")
_REDUX_TYPES = {"add": ("u32", "s32"), "min": ("u32", "s32"), "max": ("u32", "s32"),
                "and": ("b32",), "or": ("b32",), "xor": ("b32",)}
FULL_MASK = 0xFFFFFFFF


def mask_lint(instr: Instruction) -> list[tuple[str, str, str]]:
    """Static membermask diagnostics (rule, message, severity) of an unguarded warp collective with an
    immediate mask: every existing lane executes it and a warp's existing lanes are 0..n-1, so the
    mask must be 2**n - 1. A mask without lane 0 or with a hole is an error; a prefix mask shorter
    than 32 lanes is a warning (legal only in a last partial warp of n threads)."""
    m = instr.membermask
    if instr.guard is not None or not isinstance(m, Imm) or isinstance(m.value, float):
        return []
    v = int(m.value) & FULL_MASK
    if v == FULL_MASK:
        return []
    n = (v + 1).bit_length() - 1
    name = instr.mnemonic
    if v + 1 != 1 << n or v == 0:
        lane = next(i for i in range(32) if not v >> i & 1)
        return [("membermask", f"{name}: membermask 0x{v:08x} excludes lane {lane}, which executes this "
                               f"unguarded instruction (PTX ISA, {name}: every executing lane must be in "
                               f"membermask); allowed: 0xffffffff, or a guard so only member lanes execute it", "error")]
    return [("membermask", f"{name}: membermask 0x{v:08x} names lanes 0..{n - 1} only: correct only in a "
                           f"partial warp of {n} threads (an unguarded instruction runs on every lane)", "warning")]


@dataclass(frozen=True)
class ShflSync(Instruction):
    """`shfl.sync.mode.b32 d[|p], a, b, c, membermask;` mode up|down|bfly|idx (PTX ISA, shfl.sync).

    Each executing lane reads `a` of a source lane j computed from b (lane offset, xor mask or
    index) and c (bits 0..4: the clamp lane, bits 8..12: the segment mask); p is true when j is
    inside the clamp/segment, else the lane keeps its own `a` and p is false."""

    mnemonic: ClassVar[str] = "shfl.sync"
    timing_class: ClassVar[str] = Kind.SHFL
    rule: ClassVar[str] = "PTX ISA, shfl.sync: shfl.sync.{up,down,bfly,idx}.b32 d[|p], a, b, c, membermask"
    modifiers: ClassVar = (Slot("mode", SHFL_MODES, what="mode", checked=True),
                           Slot("type", ("b32",), what="type", checked=True))
    operand_spec: ClassVar = (Opnd("dst", REG, rt="b32"), Opnd("a", VAL, rt="b32"), Opnd("b", VAL, rt="u32"),
                              Opnd("c", VAL, rt="u32"), Opnd("membermask", VAL, rt="u32"))
    examples: ClassVar = ("shfl.sync.bfly.b32 %r0, %r1, 16, 31, 0xffffffff;",
                          "shfl.sync.idx.b32 %r0|%p0, %r1, %r2, 31, %r3;",
                          "shfl.sync.up.b32 %r0|%p1, %r1, 1, 0, 0xffffffff;",
                          "shfl.sync.down.b32 %r0, %r1, 2, 7967, 0xffffffff;")
    _writes_fields: ClassVar = ("dst", "pred")
    _coerce_fields: ClassVar = ("a", "b", "c", "membermask")
    mode: str
    type: str
    dst: Reg
    a: Reg | Imm
    b: Reg | Imm
    c: Reg | Imm
    membermask: Reg | Imm
    pred: Reg | None = None

    def _check(self) -> None:
        self._check_declared()
        if self.pred is not None:
            _is(self, "pred", self.pred, (Reg,))

    def lint(self) -> list[tuple[str, str, str]]:
        return mask_lint(self)

    def operands(self) -> tuple:
        return tuple(x for x in (self.dst, self.pred, self.a, self.b, self.c, self.membermask) if x is not None)

    def _operand_text(self, abbreviate: bool) -> str:
        d = self.dst.text() + (f"|{self.pred.text()}" if self.pred is not None else "")
        return ", ".join([d] + [x.text() for x in (self.a, self.b, self.c, self.membermask)])

    @classmethod
    def parse_syntax(cls, c) -> "ShflSync":
        """Irregular: the destination may be the pair `d|p`."""
        kw = cls.parse_modifiers(c)
        c.count(5)
        d = c.ops[0].v
        if isinstance(d, Reg):
            kw.update(dst=d, pred=None)
        else:
            pair = c.get(0, (Pair,), "a register or d|p")
            if pair.lane is None:
                raise c.err("shfl.sync: the destination d of d|p cannot be '_'", c.ops[0])
            kw.update(dst=pair.lane, pred=pair.pred)
        return cls(a=c.val(1), b=c.val(2), c=c.val(3), membermask=c.val(4), **kw)

    def typed_registers(self) -> list:
        out = super().typed_registers()
        return out + ([(self.pred, "pred")] if self.pred is not None else [])


@dataclass(frozen=True)
class VoteSync(Instruction):
    """`vote.sync.mode.pred d, {!}a, membermask;` mode all|any|uni, and
    `vote.sync.ballot.b32 d, {!}a, membermask;` (PTX ISA, vote.sync). `negate` is the `!` on a."""

    mnemonic: ClassVar[str] = "vote.sync"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar[str] = ("PTX ISA, vote.sync: vote.sync.{all,any,uni}.pred d, {!}a, membermask; "
                           "vote.sync.ballot.b32 d, {!}a, membermask")
    modifiers: ClassVar = (Slot("mode", VOTE_MODES, what="mode", checked=True),
                           Slot("type", ("pred", "b32"), what="type", checked=True))
    operand_spec: ClassVar = (Opnd("dst", REG), Opnd("a", REG, "a predicate register", rt="pred"),
                              Opnd("membermask", VAL, rt="u32"))
    examples: ClassVar = ("vote.sync.all.pred %p0, %p1, 0xffffffff;", "vote.sync.any.pred %p0, !%p1, %r0;",
                          "vote.sync.uni.pred %p2, %p1, 0xffffffff;", "vote.sync.ballot.b32 %r0, %p1, 0xffffffff;")
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("membermask",)
    mode: str
    type: str
    dst: Reg
    a: Reg
    membermask: Reg | Imm
    negate: bool = False

    def _check(self) -> None:
        self._check_declared()
        want = "b32" if self.mode == "ballot" else "pred"
        if self.type != want:
            _fail(self, f"vote.sync.{self.mode} takes .{want}, not .{self.type}", self.rule)

    def lint(self) -> list[tuple[str, str, str]]:
        return mask_lint(self)

    def _operand_text(self, abbreviate: bool) -> str:
        return f"{self.dst.text()}, {'!' if self.negate else ''}{self.a.text()}, {self.membermask.text()}"

    @classmethod
    def parse_syntax(cls, c) -> "VoteSync":
        """Irregular: the source predicate may be negated (`!%p`)."""
        kw = cls.parse_modifiers(c)
        c.count(3)
        src = c.ops[1].v
        if isinstance(src, Guard):  # `!%p` parses as a negated predicate
            kw.update(a=src.pred, negate=src.negate)
        else:
            kw.update(a=c.reg(1, "a predicate register or !%p"))
        return cls(dst=c.reg(0), membermask=c.val(2), **kw)

    def typed_registers(self) -> list:
        return [(self.dst, "pred" if self.type == "pred" else "b32"), (self.a, "pred"),
                (self.membermask, "u32")]


@dataclass(frozen=True)
class ReduxSync(Instruction):
    """`redux.sync.op.type d, a, membermask;` op add|min|max with .u32/.s32, and|or|xor with .b32
    (PTX ISA, redux.sync, sm_80): every executing lane gets the reduction of a over membermask
    (add wraps modulo 2**32)."""

    mnemonic: ClassVar[str] = "redux.sync"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar[str] = ("PTX ISA, redux.sync: .add/.min/.max take .u32/.s32, .and/.or/.xor take .b32")
    modifiers: ClassVar = (Slot("op", REDUX_OPS, what="operation", checked=True),
                           Slot("type", ("u32", "s32", "b32"), what="type", checked=True))
    operand_spec: ClassVar = (Opnd("dst", REG, rt="type"), Opnd("a", REG, rt="type"),
                              Opnd("membermask", VAL, rt="u32"))
    examples: ClassVar = ("redux.sync.add.u32 %r0, %r1, 0xffffffff;", "redux.sync.min.s32 %r0, %r1, %r2;",
                          "redux.sync.xor.b32 %r0, %r1, 0xffffffff;")
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("membermask",)
    op: str
    type: str
    dst: Reg
    a: Reg
    membermask: Reg | Imm

    def _check(self) -> None:
        self._check_declared()
        _one_of(self, f"type (for .{self.op})", self.type, _REDUX_TYPES[self.op], self.rule)

    def lint(self) -> list[tuple[str, str, str]]:
        return mask_lint(self)


@dataclass(frozen=True)
class BarWarpSync(Instruction):
    """`bar.warp.sync membermask;` (PTX ISA, bar.warp.sync, sm_70+): the executing lane waits until
    every non-exited lane of membermask has executed a bar.warp.sync with the same membermask
    value, on whichever path of a divergent branch (hopsim/functional/simt.py `rendezvous`);
    no data. Timing class `Kind.ALU` (issued like a register op). The membermask rule is the other
    warp collectives' (`mask_lint`, run time MemberMaskError)."""

    mnemonic: ClassVar[str] = "bar.warp.sync"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar[str] = "PTX ISA, bar.warp.sync: bar.warp.sync membermask"
    operand_spec: ClassVar = (Opnd("membermask", VAL, rt="u32"),)
    examples: ClassVar = ("bar.warp.sync 0xffffffff;", "bar.warp.sync %r0;")
    _coerce_fields: ClassVar = ("membermask",)
    membermask: Reg | Imm = Imm(FULL_MASK)

    def lint(self) -> list[tuple[str, str, str]]:
        return mask_lint(self)
