"""Integer/float ALU opcodes: mov, add, sub, mul, mad, fma, min, max, shl, shr, and, or, xor, not.

All are timing class `Kind.ALU` (register-only work; per-opcode costs are the timing layer's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from isa.ir.operands import Imm, Reg, RegVec, SReg, Sym
from isa.ir.ops.base import (
    BITS, FLOAT, FLOAT_RND, HALF, INT, REG, TYPE_BITS, VAL, Instruction, Kind, Opnd, Slot, _fail, _is, _one_of,
)

MUL_MODES = ("lo", "hi", "wide")
_LOGIC = ("pred",) + BITS
_WIDE = {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}


@dataclass(frozen=True)
class Mov(Instruction):
    """`mov.type d, a;` a: register, immediate, special register, or a symbol (its address).
    Packing and unpacking (PTX ISA, mov: vector forms of .b32/.b64): `mov.b32 d, {lo, hi};`
    `mov.b32 {lo, hi}, a;` (two 16-bit halves, element 0 in bits 0..15), `mov.b64` with two 32-bit
    or four 16-bit elements (how f16x2/bf16x2 values are split into .f16/.bf16 registers)."""

    mnemonic: ClassVar[str] = "mov"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar[str] = "PTX ISA, mov types"
    modifiers: ClassVar = (Slot("type", ("pred",) + BITS + INT + FLOAT, what="type", checked=True),)
    operand_spec: ClassVar = (Opnd("dst", (Reg, RegVec), "a register or a register vector {..}", rt="type"),
                              Opnd("src", (Reg, Imm, SReg, Sym, RegVec),
                                   "a register, immediate, special register, symbol or register vector {..}",
                                   rt="type", space="any"))
    examples: ClassVar = ("mov.u32 %r0, %tid.x;", "mov.u64 %rd0, buf;", "mov.f32 %f0, 1.0;",
                          "mov.b32 %r0, {%h0, %h1};", "mov.b32 {%h0, %h1}, %r0;")
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("src",)
    type: str
    dst: Reg | RegVec
    src: Reg | Imm | SReg | Sym | RegVec

    def _check(self) -> None:
        self._check_declared()
        if isinstance(self.src, Sym) and self.type not in ("u32", "u64", "b32", "b64", "s32", "s64"):
            _fail(self, "the address of a symbol needs a 32/64-bit integer type", "PTX ISA, mov")
        vecs = [x for x in (self.dst, self.src) if isinstance(x, RegVec)]
        if len(vecs) == 2:
            _fail(self, "only one of d and a may be a vector {..}", "PTX ISA, mov (pack/unpack)")
        if vecs:
            allowed = {"b32": (2,), "b64": (2, 4)}.get(self.type, ())
            if len(vecs[0]) not in allowed:
                _fail(self, f"a vector of {len(vecs[0])} with .{self.type}; allowed: .b32 with 2 elements, "
                            ".b64 with 2 or 4", "PTX ISA, mov (pack/unpack)")

    def element_type(self) -> str | None:
        """The bit type of one vector element (pack/unpack forms), else None."""
        v = self.dst if isinstance(self.dst, RegVec) else self.src if isinstance(self.src, RegVec) else None
        return None if v is None else f"b{TYPE_BITS[self.type] // len(v)}"

    def typed_registers(self) -> list:
        et = self.element_type()
        out = []
        for x in (self.dst, self.src):
            if isinstance(x, RegVec):
                out.extend((r, ("of", et, False)) for r in x)
            else:
                out.append((x, ("of", self.type, False)))
        return out


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
class _MinMax(_Binary):
    """`op{.ftz}{.NaN}.type d, a, b;` integers, f32/f64 and f16/f16x2/bf16/bf16x2 (PTX ISA, min/max).

    Floats: a NaN operand is ignored (the other one is the result; NaN only if both are), -0.0
    orders below +0.0 [inferred: IEEE 754-2019 minimumNumber/maximumNumber]; `.NaN` makes any NaN
    operand give the canonical NaN; `.ftz` (f32, f16, f16x2) flushes subnormal inputs and result.
    Timing class ALU; per-opcode costs come later from microbenchmarks."""

    modifiers: ClassVar = (Slot("ftz", ("ftz",), flag=True), Slot("nan", ("NaN",), flag=True),
                           _type_slot(INT + FLOAT + HALF))
    ftz: bool = False
    nan: bool = False

    def _check(self) -> None:
        self._check_declared()
        if (self.ftz or self.nan) and self.type in INT:
            _fail(self, ".ftz and .NaN are for float types only", self.rule)
        if self.ftz and self.type not in ("f32", "f16", "f16x2"):
            _fail(self, f".ftz is for .f32/.f16/.f16x2, not .{self.type}", self.rule)
        if self.nan and self.type == "f64":
            _fail(self, ".NaN is for .f32/.f16/.f16x2/.bf16/.bf16x2, not .f64", self.rule)


@dataclass(frozen=True)
class Min(_MinMax):
    """`min{.ftz}{.NaN}.type d, a, b;` (see `_MinMax`)."""

    mnemonic: ClassVar[str] = "min"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar = "PTX ISA, min"
    examples: ClassVar = ("min.u32 %r0, %r1, %r2;", "min.f32 %f0, %f1, 1.5;", "min.ftz.NaN.f32 %f0, %f1, %f2;")


@dataclass(frozen=True)
class Max(_MinMax):
    """`max{.ftz}{.NaN}.type d, a, b;` (see `_MinMax`)."""

    mnemonic: ClassVar[str] = "max"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar = "PTX ISA, max"
    examples: ClassVar = ("max.s32 %r0, %r1, 0;", "max.f32 %f0, %f1, %f2;", "max.NaN.bf16x2 %r0, %r1, %r2;")


@dataclass(frozen=True)
class Fma(Instruction):
    """`fma.rnd{.ftz}{.sat}.f32 d, a, b, c;` rnd rn|rz|rm|rp; `fma.rnd.f64`; `fma.rn{.ftz}{.sat}.f16`,
    `.f16x2`; `fma.rn{.relu}.bf16`, `.bf16x2`; `fma.rn{.ftz}.relu.f16{x2}` (PTX ISA, fma).

    d = a*b + c computed in infinite precision and rounded once (hopsim/functional/fround.py);
    packed x2 types compute each 16-bit half independently. `.sat` clamps to [0, 1] (NaN -> +0),
    `.relu` clamps negatives to +0 (NaN -> canonical NaN). Timing class ALU (the FMA pipe);
    per-opcode costs come later from microbenchmarks."""

    mnemonic: ClassVar[str] = "fma"
    timing_class: ClassVar[str] = Kind.ALU
    rule: ClassVar = ("PTX ISA, fma: .f32 rn|rz|rm|rp {.ftz}{.sat}; .f64 rn|rz|rm|rp; .f16/.f16x2 rn "
                      "{.ftz}{.sat|.relu}; .bf16/.bf16x2 rn {.relu}")
    modifiers: ClassVar = (Slot("rnd", FLOAT_RND, what="rounding"), Slot("ftz", ("ftz",), flag=True),
                           Slot("sat", ("sat",), flag=True), Slot("relu", ("relu",), flag=True),
                           _type_slot(FLOAT + HALF))
    operand_spec: ClassVar = (Opnd("dst", REG, rt="type"), Opnd("a", VAL, rt="type"), Opnd("b", VAL, rt="type"),
                              Opnd("c", VAL, rt="type"))
    examples: ClassVar = ("fma.rn.f32 %f0, %f1, %f2, %f3;", "fma.rz.ftz.sat.f32 %f0, %f1, 2.0, %f3;",
                          "fma.rn.f16x2 %r0, %r1, %r2, %r3;", "fma.rn.relu.bf16x2 %r0, %r1, %r2, %r3;",
                          "fma.rm.f64 %d0, %d1, %d2, %d3;")
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("a", "b", "c")
    rnd: str
    type: str
    dst: Reg
    a: Reg | Imm
    b: Reg | Imm
    c: Reg | Imm
    ftz: bool = False
    sat: bool = False
    relu: bool = False

    def _check(self) -> None:
        self._check_declared()
        t = self.type
        _one_of(self, "rnd", self.rnd, FLOAT_RND if t in FLOAT else ("rn",), self.rule)
        if self.ftz and t not in ("f32", "f16", "f16x2"):
            _fail(self, f".ftz is for .f32/.f16/.f16x2, not .{t}", self.rule)
        if self.sat and t not in ("f32", "f16", "f16x2"):
            _fail(self, f".sat is for .f32/.f16/.f16x2, not .{t}", self.rule)
        if self.relu and t in FLOAT:
            _fail(self, f".relu is for .f16/.f16x2/.bf16/.bf16x2, not .{t}", self.rule)
        if self.relu and self.sat:
            _fail(self, ".sat and .relu exclude each other", self.rule)


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

    Timing class MUFU: the sub-partition's special-function pipe (its costs are the timing layer's
    per-opcode classes, hopsim/timing/opclass.py: ex2/ex2_full/rcp/rcp_full)."""

    timing_class: ClassVar[str] = Kind.MUFU
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
