"""Warp control, barriers and fences: elect.sync, bar.sync, bar.arrive, bra, exit, setmaxnreg, fence.proxy.async,
fence.mbarrier_init, fence{.sem}.scope, membar, fence.proxy.tensormap::generic."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from isa.ir.operands import Imm, Label, Mem, Reg, Sym
from isa.ir.ops.base import (
    INT_CONST, REG, VAL, Instruction, Kind, Opnd, Slot, _fail, _is, _one_of, int_field, is_int,
)
from isa.ir.syntax import Pair


@dataclass(frozen=True)
class ElectSync(Instruction):
    """`elect.sync lane|pred, membermask;` elects one leader lane of membermask (sm_90).
    `lane` None prints the sink `_`."""

    mnemonic: ClassVar[str] = "elect.sync"
    timing_class: ClassVar[str] = Kind.ALU
    operand_spec: ClassVar = (Opnd("pred", REG, rt="pred"), Opnd("membermask", VAL, rt="u32"),
                              Opnd("lane", REG, optional=True, rt="u32"))
    examples: ClassVar = ("elect.sync _|%p0, 0xffffffff;", "elect.sync %r0|%p1, %r1;")
    _writes_fields: ClassVar = ("lane", "pred")
    _coerce_fields: ClassVar = ("membermask",)
    pred: Reg
    membermask: Reg | Imm = Imm(0xFFFFFFFF)
    lane: Reg | None = None

    def operands(self) -> tuple:
        return tuple(x for x in (self.lane, self.pred, self.membermask) if x is not None)

    def _operand_text(self, abbreviate: bool) -> str:
        lane = self.lane.text() if self.lane is not None else "_"
        return f"{lane}|{self.pred.text()}, {self.membermask.text()}"

    @classmethod
    def parse_syntax(cls, c) -> "ElectSync":
        """Irregular: the first operand is the pair `lane|pred` (lane `_` for none)."""
        c.done()
        c.count(2)
        pair = c.get(0, (Pair,), "lane|pred (e.g. _|%p0)")
        return cls(pair.pred, c.val(1), pair.lane)

    def typed_registers(self) -> list:
        return [(x, rt) for x, rt in ((self.pred, "pred"), (self.membermask, "u32"), (self.lane, "u32"))
                if x is not None]


BAR_RULE = "PTX ISA, bar: barrier id 0..15, thread count a multiple of the warp size (32) in 32..1024"


def _check_bar(instr, count_required: bool) -> None:
    """Barrier id and thread count rules of bar.sync / bar.arrive (immediates checked here,
    register values at run time)."""
    _is(instr, "barrier", instr.barrier, VAL)
    if isinstance(instr.barrier, Imm) and instr.barrier.value not in range(16):
        _fail(instr, f"barrier {instr.barrier.value} out of 0..15", BAR_RULE)
    if instr.count is None:
        if count_required:
            _fail(instr, "the thread count b is required (bar.arrive a, b)", BAR_RULE)
        return
    _is(instr, "count", instr.count, VAL)
    if isinstance(instr.count, Imm):
        v = instr.count.value
        if not is_int(v) or v <= 0 or v % 32 or v > 1024:
            _fail(instr, f"count {v} is not a multiple of 32 in 32..1024", BAR_RULE)


@dataclass(frozen=True)
class BarSync(Instruction):
    """`bar.sync a{, b};` / `barrier.sync{.aligned} a{, b};` named barrier a (0..15): the warp
    arrives and waits until b threads (a multiple of 32; default: every thread of the CTA) have
    arrived at barrier a in this phase. Executed by all non-exited lanes of a warp or by none, not
    inside a divergent path (a named run-time error, never a hang)."""

    mnemonic: ClassVar[str] = "bar.sync"
    timing_class: ClassVar[str] = Kind.BAR_SYNC
    rule: ClassVar[str] = BAR_RULE
    aliases: ClassVar = ("barrier.sync",)
    ignored_modifiers: ClassVar = ("aligned",)
    operand_spec: ClassVar = (Opnd("barrier", VAL, rt="u32"), Opnd("count", VAL, optional=True, rt="u32"))
    examples: ClassVar = ("bar.sync 0;", "bar.sync 1, 256;")
    _coerce_fields: ClassVar = ("barrier", "count")
    barrier: Reg | Imm = Imm(0)
    count: Reg | Imm | None = None

    def _check(self) -> None:
        _check_bar(self, False)


@dataclass(frozen=True)
class BarArrive(Instruction):
    """`bar.arrive a, b;` / `barrier.arrive{.aligned} a, b;` the warp arrives at named barrier a
    (0..15) of b threads (required, a multiple of 32) and goes on without waiting (the producer
    side of FlashAttention-3's warpgroup ping-pong). Timing class BAR_ARRIVE: issue cost only;
    its per-opcode cost comes later from microbenchmarks."""

    mnemonic: ClassVar[str] = "bar.arrive"
    timing_class: ClassVar[str] = Kind.BAR_ARRIVE
    rule: ClassVar[str] = BAR_RULE + "; bar.arrive requires b"
    aliases: ClassVar = ("barrier.arrive",)
    ignored_modifiers: ClassVar = ("aligned",)
    operand_spec: ClassVar = (Opnd("barrier", VAL, rt="u32"), Opnd("count", VAL, rt="u32"))
    examples: ClassVar = ("bar.arrive 1, 256;", "bar.arrive %r0, 128;")
    _coerce_fields: ClassVar = ("barrier", "count")
    barrier: Reg | Imm
    count: Reg | Imm | None = None

    def _check(self) -> None:
        _check_bar(self, True)

    @classmethod
    def parse_syntax(cls, c) -> "BarArrive":
        """The count is required: one operand is a named error, not an operand-count one."""
        c.take(*cls.ignored_modifiers)
        c.done()
        if len(c.ops) == 1:
            raise c.err("bar.arrive: the thread count b is required (bar.arrive a, b; b a multiple of 32)")
        c.count(2)
        return cls(c.val(0), c.val(1))


@dataclass(frozen=True)
class Bra(Instruction):
    """`bra{.uni} target;` a guard that differs between a warp's lanes splits the warp, which
    reconverges at the branch's immediate post-dominator (hopsim/functional/simt.py); `.uni`
    asserts the branch is not divergent (PTX ISA)."""

    mnemonic: ClassVar[str] = "bra"
    timing_class: ClassVar[str] = Kind.ALU
    modifiers: ClassVar = (Slot("uni", ("uni",), flag=True),)
    operand_spec: ClassVar = (Opnd("target", (Label,), "a label"),)
    examples: ClassVar = ("bra LOOP;", "bra.uni DONE;")
    target: Label
    uni: bool = False

    def _check(self) -> None:
        if isinstance(self.target, str):
            object.__setattr__(self, "target", Label(self.target))
        _is(self, "target", self.target, (Label,))

    @classmethod
    def parse_syntax(cls, c) -> "Bra":
        """The target parses as a name (a symbol) and becomes a Label."""
        uni = c.take("uni") is not None
        c.done()
        c.count(1)
        return cls(Label(c.get(0, (Sym,), "a label").name), uni)


@dataclass(frozen=True)
class Exit(Instruction):
    """`exit;` the executing threads end (the warp goes on with its other lanes)."""

    mnemonic: ClassVar[str] = "exit"
    timing_class: ClassVar[str] = Kind.EXIT
    examples: ClassVar = ("exit;",)


@dataclass(frozen=True)
class Setmaxnreg(Instruction):
    """`setmaxnreg.{inc,dec}.sync.aligned.u32 N;` N in 24..256, a multiple of 8 (PTX ISA);
    warpgroup-collective."""

    mnemonic: ClassVar[str] = "setmaxnreg"
    timing_class: ClassVar[str] = Kind.SETMAXNREG
    rule: ClassVar[str] = "PTX ISA, setmaxnreg: imm-reg-count in 24..256, a multiple of 8"
    modifiers: ClassVar = (Slot("action", ("inc", "dec"), what="action"), Slot(None, ("sync",)),
                           Slot(None, ("aligned",)), Slot(None, ("u32",)))
    operand_spec: ClassVar = (Opnd("count", INT_CONST),)
    examples: ClassVar = ("setmaxnreg.inc.sync.aligned.u32 240;", "setmaxnreg.dec.sync.aligned.u32 40;")
    action: str
    count: int

    def _check(self) -> None:
        _one_of(self, "action", self.action, ("inc", "dec"), self.rule)
        v = int_field(self, "count")
        if not is_int(v) or not 24 <= v <= 256 or v % 8:
            _fail(self, f"count={v!r} is invalid", self.rule)


@dataclass(frozen=True)
class FenceProxyAsync(Instruction):
    """`fence.proxy.async{.space};` orders generic-proxy accesses with async-proxy ones (TMA, wgmma).
    space: "shared::cta" (default), "shared::cluster", "global", or None (all spaces).

    Timing class ALU: the fence is issued like a register op (no modelled drain)."""

    mnemonic: ClassVar[str] = "fence.proxy.async"
    timing_class: ClassVar[str] = Kind.ALU
    modifiers: ClassVar = (Slot("space", ("shared::cta", "shared::cluster", "global"), optional=True),)
    examples: ClassVar = ("fence.proxy.async.shared::cta;", "fence.proxy.async;", "fence.proxy.async.global;")
    space: str | None = "shared::cta"

    def _check(self) -> None:
        _one_of(self, "space", self.space, (None, "shared::cta", "shared::cluster", "global"),
                "PTX ISA, membar/fence: fence.proxy.async{.global,.shared::{cta,cluster}}")

    @classmethod
    def parse_syntax(cls, c) -> "FenceProxyAsync":
        """`.shared` alone means `.shared::cta`."""
        space = c.take("shared::cta", "shared::cluster", "global")
        if space is None and c.take("shared") is not None:
            space = "shared::cta"
        c.done()
        c.count(0)
        return cls(space)


@dataclass(frozen=True)
class FenceMbarrierInit(Instruction):
    """`fence.mbarrier_init.release.cluster;` makes mbarrier.init visible to the async proxy/cluster.
    Timing class ALU (as fence.proxy.async)."""

    mnemonic: ClassVar[str] = "fence.mbarrier_init"
    timing_class: ClassVar[str] = Kind.ALU
    modifiers: ClassVar = (Slot(None, ("release",)), Slot(None, ("cluster",)))
    examples: ClassVar = ("fence.mbarrier_init.release.cluster;",)


@dataclass(frozen=True)
class Fence(Instruction):
    """`fence{.sem}.scope;` sem .sc|.acq_rel (default .acq_rel), scope .cta|.cluster|.gpu|.sys, and
    the legacy `membar.{cta,gl,sys}` (class Membar): memory ordering of the generic proxy. The
    functional model is sequentially consistent, so it is a no-op there. Timing class ALU (issued
    like a register op, no modelled drain); its cost comes later from microbenchmarks."""

    mnemonic: ClassVar[str] = "fence"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar[str] = "PTX ISA, membar/fence: fence{.sc,.acq_rel}.{cta,cluster,gpu,sys}"
    modifiers: ClassVar = (Slot("sem", ("sc", "acq_rel"), optional=True),
                           Slot("scope", ("cta", "cluster", "gpu", "sys"), what="scope", checked=True))
    examples: ClassVar = ("fence.acq_rel.gpu;", "fence.sc.cta;", "fence.sys;")
    scope: str
    sem: str | None = None


@dataclass(frozen=True)
class Membar(Instruction):
    """`membar.{cta,gl,sys};` (= fence.sc.{cta,gpu,sys}); a no-op functionally, timing class ALU."""

    mnemonic: ClassVar[str] = "membar"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar[str] = "PTX ISA, membar: membar.{cta,gl,sys}"
    modifiers: ClassVar = (Slot("level", ("cta", "gl", "sys"), what="level", checked=True),)
    examples: ClassVar = ("membar.gl;", "membar.cta;")
    level: str


@dataclass(frozen=True)
class FenceProxyTensormap(Instruction):
    """`fence.proxy.tensormap::generic.release.scope;` and
    `fence.proxy.tensormap::generic.acquire.scope [a], 128;` order generic-proxy writes of a tensor
    map in global memory with its use by TMA (PTX ISA, sm_90). Tensor maps are host objects in
    hopsim, so it is a no-op functionally; timing class ALU (cost from microbenchmarks later)."""

    mnemonic: ClassVar[str] = "fence.proxy.tensormap::generic"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar[str] = ("PTX ISA, fence.proxy.tensormap::generic: .release.scope; or .acquire.scope [a], 128; "
                           "scope .cta|.cluster|.gpu|.sys")
    modifiers: ClassVar = (Slot("sem", ("release", "acquire"), what="semantics", checked=True),
                           Slot("scope", ("cta", "cluster", "gpu", "sys"), what="scope", checked=True))
    operand_spec: ClassVar = (Opnd("addr", (Mem,), "a memory operand [addr]", optional=True, rt="addr64"),
                              Opnd("size", INT_CONST, optional=True))
    examples: ClassVar = ("fence.proxy.tensormap::generic.release.gpu;",
                          "fence.proxy.tensormap::generic.acquire.gpu [%rd0], 128;")
    sem: str
    scope: str
    addr: Mem | None = None
    size: int | None = None

    def _check(self) -> None:
        self._check_declared()
        if self.sem == "acquire":
            if self.addr is None or int_field(self, "size") != 128:
                _fail(self, ".acquire takes the tensor map's address and size 128: [a], 128", self.rule)
        elif self.addr is not None or self.size is not None:
            _fail(self, ".release takes no operands", self.rule)

    def typed_registers(self) -> list:
        return [(self.addr.base, "addr64")] if self.addr is not None else []
