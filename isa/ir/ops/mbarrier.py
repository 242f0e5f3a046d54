"""The mbarrier family on `.shared::cta` `.b64` objects: init, arrive, arrive.expect_tx, expect_tx,
complete_tx, try_wait.parity, test_wait.parity, inval (one timing class each, MBAR_*)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from isa.ir.operands import Imm, Mem, Reg
from isa.ir.ops.base import MEM, REG, VAL, Instruction, Kind, Opnd, _fail, _is

_MBAR_SPACE = ".shared::cta.b64"
MBAR_RULE = "PTX ISA, mbarrier: a .b64 object in .shared::cta"
_TX_RULE = "PTX ISA, tx-count: 0..2^20-1"
_ADDR = Opnd("addr", MEM, space="shared")
_STATE = Opnd("state", REG, sink=True)
_TX = Opnd("tx_count", VAL)


@dataclass(frozen=True)
class _Mbar(Instruction):
    """Shared syntax: `mbarrier.<op>{.sem}{.scope}.shared::cta.b64` (the text prints `_suffix`)."""

    _suffix: ClassVar[str] = _MBAR_SPACE

    def _check_addr(self) -> None:
        _is(self, "addr", self.addr, (Mem,), MBAR_RULE)
        if self.addr.offset % 8:
            _fail(self, f"address offset {self.addr.offset} is not 8-byte aligned", MBAR_RULE)

    @classmethod
    def parse_modifiers(cls, c) -> dict:
        """Semantics/scope modifiers are accepted; the object must be `.shared::cta` (or `.shared`) `.b64`."""
        c.take("release", "relaxed", "acquire")
        c.take("cta", "cluster")
        space = c.take("shared", "shared::cta", "shared::cluster")
        if space in (None, "shared::cluster"):
            raise c.err(f"{c.name}: hopsim models mbarrier objects in .shared::cta; write .shared::cta.b64 "
                        "(PTX ISA, mbarrier: a .b64 object in .shared::cta)")
        if c.take("b64") is None:
            raise c.err(f"{c.name}: the mbarrier object type must be .b64 (PTX ISA, mbarrier: .b64 only)")
        c.done()
        return {}

    def opcode(self) -> str:
        return self.mnemonic + self._suffix

    def typed_registers(self) -> list:
        out: list = [(self.addr.base, "addr")]
        for name, rt in (("state", "state64"), ("pred", "pred"), ("count", "u32"), ("tx_count", "u32"),
                         ("parity", "u32"), ("suspend_hint", "u32")):
            v = getattr(self, name, None)
            if v is not None:
                out.append((v, rt))
        return out


def _check_count(instr, count, name: str) -> None:
    _is(instr, "count", count, VAL)
    if isinstance(count, Imm) and not 1 <= count.value <= (1 << 20) - 1:
        _fail(instr, f"count {count.value} out of 1..2^20-1", f"PTX ISA, {name}")


@dataclass(frozen=True)
class MbarrierInit(_Mbar):
    """`mbarrier.init.shared::cta.b64 [a], count;` count of expected arrivals, 1..2^20-1."""

    mnemonic: ClassVar[str] = "mbarrier.init"
    timing_class: ClassVar[str] = Kind.MBAR_INIT
    operand_spec: ClassVar = (_ADDR, Opnd("count", VAL))
    examples: ClassVar = ("mbarrier.init.shared::cta.b64 [bars], 1;", "mbarrier.init.shared::cta.b64 [%r0+8], %r1;")
    _coerce_fields: ClassVar = ("count",)
    addr: Mem
    count: Reg | Imm

    def _check(self) -> None:
        self._check_addr()
        _check_count(self, self.count, "mbarrier.init")


@dataclass(frozen=True)
class MbarrierArrive(_Mbar):
    """`mbarrier.arrive.shared::cta.b64 state, [a]{, count};` state is a b64 register or `_`
    (None); count defaults to 1."""

    mnemonic: ClassVar[str] = "mbarrier.arrive"
    timing_class: ClassVar[str] = Kind.MBAR_ARRIVE
    operand_spec: ClassVar = (_STATE, _ADDR, Opnd("count", VAL, optional=True))
    examples: ClassVar = ("mbarrier.arrive.shared::cta.b64 _, [bars];", "mbarrier.arrive.shared::cta.b64 %rd0, [%r0], 2;")
    _writes_fields: ClassVar = ("state",)
    _coerce_fields: ClassVar = ("count",)
    addr: Mem
    state: Reg | None = None
    count: Reg | Imm | None = None

    def _check(self) -> None:
        self._check_addr()
        if self.state is not None:
            _is(self, "state", self.state, (Reg,))
        if self.count is not None:
            _check_count(self, self.count, "mbarrier.arrive")


def _check_tx(instr, tx) -> None:
    _is(instr, "tx_count", tx, VAL)
    if isinstance(tx, Imm) and not 0 <= tx.value <= (1 << 20) - 1:
        _fail(instr, f"tx_count {tx.value} out of range", _TX_RULE)


@dataclass(frozen=True)
class MbarrierArriveExpectTx(_Mbar):
    """`mbarrier.arrive.expect_tx.shared::cta.b64 state, [a], tx_count;` expect-tx then arrive."""

    mnemonic: ClassVar[str] = "mbarrier.arrive.expect_tx"
    timing_class: ClassVar[str] = Kind.MBAR_ARRIVE
    operand_spec: ClassVar = (_STATE, _ADDR, _TX)
    examples: ClassVar = ("mbarrier.arrive.expect_tx.shared::cta.b64 _, [bars], 16384;",)
    _writes_fields: ClassVar = ("state",)
    _coerce_fields: ClassVar = ("tx_count",)
    addr: Mem
    tx_count: Reg | Imm
    state: Reg | None = None

    def _check(self) -> None:
        self._check_addr()
        _check_tx(self, self.tx_count)
        if self.state is not None:
            _is(self, "state", self.state, (Reg,))


@dataclass(frozen=True)
class _MbarTx(_Mbar):
    """`mbarrier.{expect,complete}_tx.relaxed.cta.shared::cta.b64 [a], tx_count;`: the two tx-count
    updates share their syntax and checks; each subclass names its opcode and timing class."""

    operand_spec: ClassVar = (_ADDR, _TX)
    _suffix: ClassVar[str] = ".relaxed.cta" + _MBAR_SPACE
    _coerce_fields: ClassVar = ("tx_count",)
    addr: Mem
    tx_count: Reg | Imm

    def _check(self) -> None:
        self._check_addr()
        _check_tx(self, self.tx_count)


@dataclass(frozen=True)
class MbarrierExpectTx(_MbarTx):
    """`mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [a], tx_count;` raises the tx-count."""

    mnemonic: ClassVar[str] = "mbarrier.expect_tx"
    timing_class: ClassVar[str] = Kind.MBAR_EXPECT_TX
    examples: ClassVar = ("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bars], 4096;",)


@dataclass(frozen=True)
class MbarrierCompleteTx(_MbarTx):
    """`mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [a], tx_count;` lowers the tx-count."""

    mnemonic: ClassVar[str] = "mbarrier.complete_tx"
    timing_class: ClassVar[str] = Kind.MBAR_COMPLETE_TX
    examples: ClassVar = ("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [bars], %r0;",)


def _check_parity(instr, parity) -> None:
    _is(instr, "parity", parity, VAL)
    if isinstance(parity, Imm) and parity.value not in (0, 1):
        _fail(instr, f"phaseParity {parity.value} must be 0 or 1",
              "PTX ISA, mbarrier.test_wait/try_wait .parity")


_PRED = Opnd("pred", REG, "a predicate register")


@dataclass(frozen=True)
class MbarrierTryWaitParity(_Mbar):
    """`mbarrier.try_wait.parity.shared::cta.b64 p, [a], parity{, suspend_hint};` p = the phase
    with that parity completed (the thread may be suspended up to the hint meanwhile)."""

    mnemonic: ClassVar[str] = "mbarrier.try_wait.parity"
    timing_class: ClassVar[str] = Kind.MBAR_WAIT
    operand_spec: ClassVar = (_PRED, _ADDR, Opnd("parity", VAL), Opnd("suspend_hint", VAL, optional=True))
    examples: ClassVar = ("mbarrier.try_wait.parity.shared::cta.b64 %p0, [bars], %r0;",
                          "mbarrier.try_wait.parity.shared::cta.b64 %p0, [%r1+8], 1, 0x989680;")
    _writes_fields: ClassVar = ("pred",)
    _coerce_fields: ClassVar = ("parity", "suspend_hint")
    pred: Reg
    addr: Mem
    parity: Reg | Imm
    suspend_hint: Reg | Imm | None = None

    def _check(self) -> None:
        self._check_addr()
        _is(self, "pred", self.pred, (Reg,))
        _check_parity(self, self.parity)
        if self.suspend_hint is not None:
            _is(self, "suspend_hint", self.suspend_hint, VAL)


@dataclass(frozen=True)
class MbarrierTestWaitParity(_Mbar):
    """`mbarrier.test_wait.parity.shared::cta.b64 p, [a], parity;` non-blocking test."""

    mnemonic: ClassVar[str] = "mbarrier.test_wait.parity"
    timing_class: ClassVar[str] = Kind.MBAR_TEST
    operand_spec: ClassVar = (_PRED, _ADDR, Opnd("parity", VAL))
    examples: ClassVar = ("mbarrier.test_wait.parity.shared::cta.b64 %p1, [bars], 0;",)
    _writes_fields: ClassVar = ("pred",)
    _coerce_fields: ClassVar = ("parity",)
    pred: Reg
    addr: Mem
    parity: Reg | Imm

    def _check(self) -> None:
        self._check_addr()
        _is(self, "pred", self.pred, (Reg,))
        _check_parity(self, self.parity)


@dataclass(frozen=True)
class MbarrierInval(_Mbar):
    """`mbarrier.inval.shared::cta.b64 [a];` the object may be reused as plain memory afterwards."""

    mnemonic: ClassVar[str] = "mbarrier.inval"
    timing_class: ClassVar[str] = Kind.MBAR_INVAL
    operand_spec: ClassVar = (_ADDR,)
    examples: ClassVar = ("mbarrier.inval.shared::cta.b64 [bars];",)
    addr: Mem

    def _check(self) -> None:
        self._check_addr()
