"""Warp-cooperative 8x8 matrix loads/stores: ldmatrix, stmatrix (.m8n8 .b16; timing classes
LDMATRIX / STMATRIX)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from isa.ir.operands import Mem, Reg, RegVec
from isa.ir.ops.base import MEM, Instruction, Kind, Opnd, _fail, _is, _one_of

_REGS = (Reg, RegVec)


@dataclass(frozen=True)
class _Matrix(Instruction):
    _coerce_fields: ClassVar = ("regs",)
    num: int
    regs: RegVec
    addr: Mem
    trans: bool = False
    shape: str = "m8n8"
    type: str = "b16"

    def _check(self) -> None:
        _one_of(self, "shape", self.shape, ("m8n8",), self.rule + " (hopsim models .m8n8 .b16 only)")
        _one_of(self, "type", self.type, ("b16",), self.rule + " (.m8n8 takes .b16)")
        _one_of(self, "num", self.num, (1, 2, 4), self.rule)
        if isinstance(self.regs, Reg):
            object.__setattr__(self, "regs", RegVec((self.regs,)))
        _is(self, "regs", self.regs, (RegVec,))
        _is(self, "addr", self.addr, (Mem,))
        if len(self.regs) != self.num:
            _fail(self, f".x{self.num} needs {self.num} 32-bit registers (one per 8x8 matrix), got "
                        f"{len(self.regs)}", self.rule)

    def opcode(self) -> str:
        t = ".trans" if self.trans else ""
        return f"{self.mnemonic}.sync.aligned.{self.shape}.x{self.num}{t}.shared.{self.type}"

    @classmethod
    def parse_syntax(cls, c) -> "_Matrix":
        """Irregular: `.xN` carries the count; `.shared` may be omitted or written `.shared::cta`."""
        c.need(("sync",), ".sync")
        c.need(("aligned",), ".aligned")
        shape = c.need(("m8n8", "m16n16", "m8n16"), "shape")
        num = c.need(("x1", "x2", "x4"), "count .x1/.x2/.x4")
        trans = c.take("trans") is not None
        c.take("shared", "shared::cta")
        ty = c.need(("b16", "b8"), "type")
        c.done()
        c.count(2)
        names = [o.name for o in cls.operand_spec]
        regs = c.reg_or_vec(names.index("regs"))
        if isinstance(regs, Reg):
            regs = RegVec((regs,))
        return cls(int(num[1]), regs, c.mem(names.index("addr")), trans, shape, ty)

    def typed_registers(self) -> list:
        return [(r, "b32") for r in self.regs] + [(self.addr.base, "addr")]


@dataclass(frozen=True)
class Ldmatrix(_Matrix):
    """`ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16 {r..}, [a];` one b32 register per
    8x8 matrix (lanes 8j..8j+7 give the row addresses of matrix j)."""

    mnemonic: ClassVar[str] = "ldmatrix"
    timing_class: ClassVar[str] = Kind.LDMATRIX
    rule: ClassVar = "PTX ISA, ldmatrix"
    operand_spec: ClassVar = (Opnd("regs", _REGS), Opnd("addr", MEM, space="shared"))
    examples: ClassVar = ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r0, %r1, %r2, %r3}, [%r4];",
                          "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%r0}, [buf+16];")
    _writes_fields: ClassVar = ("regs",)


@dataclass(frozen=True)
class Stmatrix(_Matrix):
    """`stmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16 [a], {r..};` (sm_90)."""

    mnemonic: ClassVar[str] = "stmatrix"
    timing_class: ClassVar[str] = Kind.STMATRIX
    rule: ClassVar = "PTX ISA, stmatrix (sm_90)"
    operand_spec: ClassVar = (Opnd("addr", MEM, space="shared"), Opnd("regs", _REGS))
    examples: ClassVar = ("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%r4], {%r0, %r1};",)
