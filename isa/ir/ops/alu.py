"""Integer/float ALU opcodes: mov, add, sub, mul, mad, min, max, shl, shr, and, or, xor, not.

All are timing class `Kind.ALU` (register-only work; per-opcode costs are the timing layer's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from isa.ir.operands import Imm, Reg, SReg, Sym
from isa.ir.ops.base import (
    BITS, FLOAT, FLOAT_RND, HALF, INT, REG, VAL, Instruction, Kind, Opnd, Slot, _fail, _is, _one_of,
)

MUL_MODES = ("lo", "hi", "wide")
_LOGIC = ("pred",) + BITS
_WIDE = {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}


@dataclass(frozen=True)
class Mov(Instruction):
    """`mov.type d, a;` a: register, immediate, special register, or a symbol (its address)."""

    mnemonic: ClassVar[str] = "mov"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar[str] = "PTX ISA, mov types"
    modifiers: ClassVar = (Slot("type", ("pred",) + BITS + INT + FLOAT, what="type", checked=True),)
    operand_spec: ClassVar = (Opnd("dst", REG, rt="type"),
                              Opnd("src", (Reg, Imm, SReg, Sym), "a register, immediate, special register or symbol",
                                   rt="type", space="any"))
    examples: ClassVar = ("mov.u32 %r0, %tid.x;", "mov.u64 %rd0, buf;", "mov.f32 %f0, 1.0;")
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("src",)
    type: str
    dst: Reg
    src: Reg | Imm | SReg | Sym

    def _check(self) -> None:
        self._check_declared()
        if isinstance(self.src, Sym) and self.type not in ("u32", "u64", "b32", "b64", "s32", "s64"):
            _fail(self, "the address of a symbol needs a 32/64-bit integer type", "PTX ISA, mov")


@dataclass(frozen=True)
class _Binary(Instruction):
    """Shared shape of `op.type d, a, b;` (the types are the declared `type` slot)."""

    operand_spec: ClassVar = (Opnd("dst", REG, rt="type"), Opnd("a", VAL, rt="type"), Opnd("b", VAL, rt="type"))
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("a", "b")
    type: str
    dst: Reg
    a: Reg | Imm
    b: Reg | Imm


def _type_slot(types) -> Slot:
    return Slot("type", types, what="type", checked=True)


@dataclass(frozen=True)
class _Arith(_Binary):
    """add/sub: integer or float; floats may carry a rounding modifier `rnd`."""

    modifiers: ClassVar = (Slot("rnd", FLOAT_RND, optional=True), _type_slot(INT + FLOAT + HALF))
    rnd: str | None = None

    def _check(self) -> None:
        self._check_declared()
        if self.rnd is not None:
            if self.type in INT:
                _fail(self, f"rounding .{self.rnd} is for float types only", self.rule)
            _one_of(self, "rnd", self.rnd, FLOAT_RND, self.rule)


@dataclass(frozen=True)
class Add(_Arith):
    """`add{.rnd}.type d, a, b;` types u16..s64, f32, f64, f16{x2}, bf16{x2} (no .bN: PTX ISA)."""

    mnemonic: ClassVar[str] = "add"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar = "PTX ISA, add / add (float)"
    examples: ClassVar = ("add.u32 %r0, %r1, 4;", "add.rn.f32 %f0, %f1, %f2;", "add.s64 %rd0, %rd1, -8;")


@dataclass(frozen=True)
class Sub(_Arith):
    """`sub{.rnd}.type d, a, b;` (types as add)."""

    mnemonic: ClassVar[str] = "sub"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar = "PTX ISA, sub / sub (float)"
    examples: ClassVar = ("sub.s32 %r0, %r1, %r2;", "sub.f32 %f0, %f1, %f2;")


def _check_mul_mode(instr, type_: str, mode, rnd, rule: str) -> None:
    if type_ in INT:
        if mode is None:
            _fail(instr, f"integer {instr.mnemonic} needs a mode .lo, .hi or .wide", rule)
        _one_of(instr, "mode", mode, MUL_MODES, rule)
        if mode == "wide" and type_ in ("u64", "s64"):
            _fail(instr, ".wide is defined for 16- and 32-bit types only (result is twice as wide)", rule)
        if rnd is not None:
            _fail(instr, f"rounding .{rnd} is for float types only", rule)
    else:
        if mode is not None:
            _fail(instr, f"mode .{mode} is for integer types only", rule)
        if rnd is not None:
            _one_of(instr, "rnd", rnd, FLOAT_RND, rule)


def _wide_types(x) -> list:
    """Register type rules of mul/mad: d (and mad's c) twice as wide under .wide."""
    dt = _WIDE[x.type] if x.mode == "wide" else x.type
    return [(getattr(x, o.name), ("of", dt if o.name in ("dst", "c") else x.type, False)) for o in x.operand_spec]


@dataclass(frozen=True)
class Mul(_Binary):
    """`mul.mode.type d, a, b;` mode lo|hi|wide for integers (wide: 16/32-bit only, d twice as wide);
    `mul{.rnd}.type` for floats."""

    mnemonic: ClassVar[str] = "mul"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar = "PTX ISA, mul / mul (float)"
    modifiers: ClassVar = (Slot("mode", MUL_MODES, optional=True), Slot("rnd", FLOAT_RND, optional=True),
                           _type_slot(INT + FLOAT + HALF))
    examples: ClassVar = ("mul.wide.u32 %rd0, %r0, 4;", "mul.lo.s32 %r0, %r1, %r2;", "mul.rn.f32 %f0, %f1, %f2;")
    mode: str | None = None
    rnd: str | None = None

    def _check(self) -> None:
        self._check_declared()
        _check_mul_mode(self, self.type, self.mode, self.rnd, self.rule)

    typed_registers = _wide_types


@dataclass(frozen=True)
class Mad(Instruction):
    """`mad.mode.type d, a, b, c;` (integers: lo|hi|wide) or `mad.rnd.f32/f64` (rounding required
    on sm_20+, PTX ISA)."""

    mnemonic: ClassVar[str] = "mad"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar = "PTX ISA, mad / mad (float)"
    modifiers: ClassVar = (Slot("mode", MUL_MODES, optional=True), Slot("rnd", FLOAT_RND, optional=True),
                           Slot("type", INT + FLOAT, what="type"))
    operand_spec: ClassVar = (Opnd("dst", REG), Opnd("a", VAL), Opnd("b", VAL), Opnd("c", VAL))
    examples: ClassVar = ("mad.lo.u32 %r0, %r1, 8, %r2;", "mad.wide.u32 %rd0, %r0, 4, %rd1;",
                          "mad.rn.f32 %f0, %f1, %f2, %f3;")
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("a", "b", "c")
    type: str
    dst: Reg
    a: Reg | Imm
    b: Reg | Imm
    c: Reg | Imm
    mode: str | None = None
    rnd: str | None = None

    def _check(self) -> None:
        _one_of(self, "type", self.type, INT + FLOAT, self.rule)
        for n in ("a", "b", "c"):
            self._kind(n)
        self._kind("dst")
        _check_mul_mode(self, self.type, self.mode, self.rnd, self.rule)
        if self.type in FLOAT and self.rnd is None:
            _fail(self, "mad.f32/f64 requires a rounding modifier .rn/.rz/.rm/.rp", self.rule)

    def _kind(self, name: str) -> None:
        _is(self, name, getattr(self, name), next(o.kinds for o in self.operand_spec if o.name == name))

    typed_registers = _wide_types


@dataclass(frozen=True)
class Min(_Binary):
    """`min.type d, a, b;`"""

    mnemonic: ClassVar[str] = "min"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar = "PTX ISA, min"
    modifiers: ClassVar = (_type_slot(INT + FLOAT + HALF),)
    examples: ClassVar = ("min.u32 %r0, %r1, %r2;", "min.f32 %f0, %f1, 1.5;")


@dataclass(frozen=True)
class Max(_Binary):
    """`max.type d, a, b;`"""

    mnemonic: ClassVar[str] = "max"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar = "PTX ISA, max"
    modifiers: ClassVar = (_type_slot(INT + FLOAT + HALF),)
    examples: ClassVar = ("max.s32 %r0, %r1, 0;",)


_SHIFT_SPEC = (Opnd("dst", REG, rt="type"), Opnd("a", VAL, rt="type"), Opnd("b", VAL, rt="u32"))


@dataclass(frozen=True)
class Shl(_Binary):
    """`shl.bN d, a, b;` b is a u32 shift amount (PTX ISA: types .b16 .b32 .b64)."""

    mnemonic: ClassVar[str] = "shl"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar = "PTX ISA, shl"
    modifiers: ClassVar = (_type_slot(BITS),)
    operand_spec: ClassVar = _SHIFT_SPEC
    examples: ClassVar = ("shl.b32 %r0, %r1, 3;",)


@dataclass(frozen=True)
class Shr(_Binary):
    """`shr.type d, a, b;` .sN is arithmetic, .uN/.bN logical (PTX ISA)."""

    mnemonic: ClassVar[str] = "shr"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar = "PTX ISA, shr"
    modifiers: ClassVar = (_type_slot(BITS + INT),)
    operand_spec: ClassVar = _SHIFT_SPEC
    examples: ClassVar = ("shr.u32 %r0, %r1, 5;", "shr.s32 %r0, %r1, %r2;")


@dataclass(frozen=True)
class And(_Binary):
    """`and.type d, a, b;` types .pred .b16 .b32 .b64."""

    mnemonic: ClassVar[str] = "and"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar = "PTX ISA, and"
    modifiers: ClassVar = (_type_slot(_LOGIC),)
    examples: ClassVar = ("and.b32 %r0, %r1, 255;", "and.pred %p0, %p1, %p0;")


@dataclass(frozen=True)
class Or(_Binary):
    """`or.type d, a, b;` types .pred .b16 .b32 .b64."""

    mnemonic: ClassVar[str] = "or"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar = "PTX ISA, or"
    modifiers: ClassVar = (_type_slot(_LOGIC),)
    examples: ClassVar = ("or.b32 %r0, %r1, %r2;",)


@dataclass(frozen=True)
class Xor(_Binary):
    """`xor.type d, a, b;` types .pred .b16 .b32 .b64."""

    mnemonic: ClassVar[str] = "xor"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar = "PTX ISA, xor"
    modifiers: ClassVar = (_type_slot(_LOGIC),)
    examples: ClassVar = ("xor.b32 %r0, %r1, 1;",)


@dataclass(frozen=True)
class Not(Instruction):
    """`not.type d, a;` types .pred .b16 .b32 .b64."""

    mnemonic: ClassVar[str] = "not"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar = "PTX ISA, not"
    modifiers: ClassVar = (_type_slot(_LOGIC),)
    operand_spec: ClassVar = (Opnd("dst", REG, rt="type"), Opnd("a", VAL, rt="type"))
    examples: ClassVar = ("not.pred %p0, %p1;", "not.b32 %r0, %r1;")
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("a",)
    type: str
    dst: Reg
    a: Reg | Imm


@dataclass(frozen=True)
class _ApproxF32(Instruction):
    """`op.approx{.ftz}.f32 d, a;` a fast approximate unary float op (PTX ISA: the .f32 form; the
    .f16/.bf16/.f64 forms are not modelled). `.ftz` flushes subnormal inputs and results to
    sign-preserving zero.

    Timing class ALU: issued like any register op; per-opcode latency/throughput (the MUFU pipe)
    come later from microbenchmarks, not from this declaration."""

    timing_class: ClassVar[str] = Kind.ALU
    modifiers: ClassVar = (Slot(None, ("approx",)), Slot("ftz", ("ftz",), flag=True),
                           Slot("type", ("f32",), what="type", checked=True))
    operand_spec: ClassVar = (Opnd("dst", REG, rt="type"), Opnd("a", VAL, rt="type"))
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("a",)
    type: str
    dst: Reg
    a: Reg | Imm
    ftz: bool = False


@dataclass(frozen=True)
class Ex2(_ApproxF32):
    """`ex2.approx{.ftz}.f32 d, a;` d = 2**a (PTX ISA, ex2)."""

    mnemonic: ClassVar[str] = "ex2"
    rule: ClassVar[str] = "PTX ISA, ex2: ex2.approx{.ftz}.f32"
    examples: ClassVar = ("ex2.approx.f32 %f0, %f1;", "ex2.approx.ftz.f32 %f0, 0.5;")


@dataclass(frozen=True)
class Rcp(_ApproxF32):
    """`rcp.approx{.ftz}.f32 d, a;` d = 1/a (PTX ISA, rcp; the IEEE-rounded .rn/.rz/.rm/.rp forms
    are not modelled)."""

    mnemonic: ClassVar[str] = "rcp"
    rule: ClassVar[str] = "PTX ISA, rcp: rcp.approx{.ftz}.f32"
    examples: ClassVar = ("rcp.approx.f32 %f0, %f1;", "rcp.approx.ftz.f32 %f2, %f2;")
