"""Compare, select and convert: setp, selp, cvt (timing class `Kind.ALU`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from isa.ir.operands import Imm, Reg
from isa.ir.ops.base import (
    BITS, CMP_BIT, CMP_FLOAT, CMP_SIGNED, CMP_UNSIGNED, CVT_TYPES, FLOAT, FLOAT_RND, INT, INT_RND, REG, SINT,
    TYPE_BITS, UINT, VAL, Instruction, Kind, Opnd, Slot, _fail, _is, _one_of,
)

SETP_TYPES = INT + BITS + FLOAT + ("f16", "bf16")


def setp_cmps(type_: str) -> tuple[str, ...]:
    """Comparison operators legal for `setp.<cmp>.<type_>` (PTX ISA, Table 'setp')."""
    if type_ in UINT:
        return CMP_UNSIGNED
    if type_ in SINT:
        return CMP_SIGNED
    if type_ in BITS:
        return CMP_BIT
    if type_ in FLOAT + ("f16", "bf16"):
        return CMP_FLOAT
    return ()


@dataclass(frozen=True)
class Setp(Instruction):
    """`setp.cmp.type p, a, b;` cmp legal for the type: eq ne lt le gt ge (signed), + lo ls hi hs
    (unsigned), eq ne only (.bN), + equ neu ltu leu gtu geu num nan (floats)."""

    mnemonic: ClassVar[str] = "setp"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar[str] = "PTX ISA, setp, comparison operators by type"
    modifiers: ClassVar = (Slot("cmp", CMP_FLOAT + ("lo", "ls", "hi", "hs"), what="comparison"),
                           Slot("type", SETP_TYPES, what="type", checked=True))
    operand_spec: ClassVar = (Opnd("dst", REG, "a predicate register", rt="pred"), Opnd("a", VAL, rt="type"),
                              Opnd("b", VAL, rt="type"))
    examples: ClassVar = ("setp.lt.u32 %p0, %r0, 16;", "setp.ne.b32 %p1, %r1, 0;", "setp.gtu.f32 %p0, %f0, %f1;")
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("a", "b")
    cmp: str
    type: str
    dst: Reg
    a: Reg | Imm
    b: Reg | Imm

    def _check(self) -> None:
        _one_of(self, "type", self.type, SETP_TYPES, self.rule)
        _one_of(self, f"cmp (for .{self.type})", self.cmp, setp_cmps(self.type), self.rule)
        self._check_declared()


@dataclass(frozen=True)
class Selp(Instruction):
    """`selp.type d, a, b, c;` d = c ? a : b (c a predicate)."""

    mnemonic: ClassVar[str] = "selp"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar[str] = "PTX ISA, selp"
    modifiers: ClassVar = (Slot("type", BITS + INT + FLOAT, what="type", checked=True),)
    operand_spec: ClassVar = (Opnd("dst", REG, rt="type"), Opnd("a", VAL, rt="type"), Opnd("b", VAL, rt="type"),
                              Opnd("c", REG, "a predicate register", rt="pred"))
    examples: ClassVar = ("selp.u32 %r0, %r1, 0, %p0;",)
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("a", "b")
    type: str
    dst: Reg
    a: Reg | Imm
    b: Reg | Imm
    c: Reg

    def _check(self) -> None:
        _one_of(self, "type", self.type, BITS + INT + FLOAT, self.rule)
        _is(self, "dst", self.dst, (Reg,))
        _is(self, "a", self.a, VAL)
        _is(self, "b", self.b, VAL)
        _is(self, "c", self.c, (Reg,), "PTX ISA, selp: c is a predicate register")


@dataclass(frozen=True)
class Cvt(Instruction):
    """`cvt{.rnd}{.sat}.dtype.stype d, a;` and `cvt.rnd.f16x2.f32 d, a, b;` (a -> upper half).

    Rounding (PTX ISA): float->int needs .rni/.rzi/.rmi/.rpi; int->float and narrowing
    float->float need .rn/.rz/.rm/.rp; widening float->float and int->int take none;
    f16x2/bf16x2 from a pair of f32 take .rn or .rz."""

    mnemonic: ClassVar[str] = "cvt"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar[str] = "PTX ISA, cvt"
    modifiers: ClassVar = (Slot("rnd", FLOAT_RND + INT_RND, optional=True), Slot("sat", ("sat",), flag=True))
    operand_spec: ClassVar = (Opnd("dst", REG), Opnd("src", REG), Opnd("src2", REG, optional=True))
    examples: ClassVar = ("cvt.rn.f32.u32 %f0, %r0;", "cvt.u64.u32 %rd0, %r0;", "cvt.rn.f16x2.f32 %r0, %f0, %f1;",
                          "cvt.rni.sat.s32.f32 %r0, %f0;")
    _writes_fields: ClassVar = ("dst",)
    dtype: str
    stype: str
    dst: Reg
    src: Reg
    rnd: str | None = None
    sat: bool = False
    src2: Reg | None = None

    def _check(self) -> None:
        rule = self.rule
        _is(self, "dst", self.dst, (Reg,))
        _is(self, "src", self.src, (Reg,))
        if self.dtype in ("f16x2", "bf16x2"):
            _one_of(self, "stype", self.stype, ("f32",), rule)
            _is(self, "src2", self.src2, (Reg,), rule + ": .f16x2/.bf16x2 take two f32 sources")
            _one_of(self, "rnd", self.rnd, ("rn", "rz"), rule)
            return
        if self.src2 is not None:
            _fail(self, "a second source is only for .f16x2/.bf16x2 destinations", rule)
        _one_of(self, "dtype", self.dtype, CVT_TYPES, rule)
        _one_of(self, "stype", self.stype, CVT_TYPES, rule)
        d_float, s_float = self.dtype[0] in "fb", self.stype[0] in "fb"
        if s_float and not d_float:
            _one_of(self, "rnd (float->int)", self.rnd, INT_RND, rule)
        elif d_float and not s_float:
            _one_of(self, "rnd (int->float)", self.rnd, FLOAT_RND, rule)
        elif d_float and s_float:
            if TYPE_BITS[self.dtype] < TYPE_BITS[self.stype] or {self.dtype, self.stype} == {"f16", "bf16"}:
                _one_of(self, "rnd (narrowing float)", self.rnd, FLOAT_RND, rule)
            elif self.dtype == self.stype:
                _one_of(self, "rnd (float->same float)", self.rnd, (None,) + INT_RND, rule)
            elif self.rnd is not None:
                _fail(self, "widening float conversion takes no rounding modifier", rule)
        elif self.rnd is not None:
            _fail(self, "int->int conversion takes no rounding modifier", rule)

    @classmethod
    def parse_syntax(cls, c) -> "Cvt":
        """Irregular: the two type modifiers are whatever remains after .rnd and .sat."""
        rnd = c.take(*(FLOAT_RND + INT_RND))
        sat = c.take("sat") is not None
        types = list(c.mods)
        if len(types) != 2:
            raise c.err(f"cvt: expected .dtype.stype, got {'.'.join(types) or 'nothing'}")
        c.mods = []
        c.count(2, 3)
        src2 = c.reg(2) if len(c.ops) == 3 else None
        return cls(types[0], types[1], c.reg(0), c.reg(1), rnd=rnd, sat=sat, src2=src2)

    def opcode(self) -> str:
        return super().opcode() + f".{self.dtype}.{self.stype}"

    def typed_registers(self) -> list:
        out = [(self.dst, ("of", self.dtype, True)), (self.src, ("of", self.stype, True))]
        return out + ([(self.src2, ("of", self.stype, False))] if self.src2 is not None else [])
