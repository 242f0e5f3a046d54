"""The instructions of the hopsim IR: one frozen dataclass per PTX instruction.

Each class is named after its PTX mnemonic in PascalCase (`wgmma.mma_async` -> `WgmmaMmaAsync`),
carries the mnemonic as the class attribute `mnemonic`, validates itself in `__post_init__`
(raising `IRError` that cites the PTX ISA rule), and offers

    text()      the PTX text, e.g. "@%p0 mbarrier.init.shared::cta.b64 [smem], 1;"
    opcode()    the dotted mnemonic with its modifiers, e.g. "mul.wide.u32"
    operands()  the operand objects in text order
    reads()     registers read (guard predicate and address bases included)
    writes()    registers written

Every instruction takes a keyword-only `guard: Guard | None`. Python ints/floats given where an
operand is expected become `Imm`, tuples of `Reg` become `RegVec`.

Scope (what is modelled): the integer/float ALU subset used by GEMM kernels, ld/st of the
global/shared/param spaces, ldmatrix/stmatrix m8n8.b16, the mbarrier family on `.shared::cta`
`.b64` objects, TMA tensor loads/stores (`.tile` mode, no multicast / cache hints),
`wgmma.mma_async` m64nNk16 with f16/bf16 inputs, `setmaxnreg`, `elect.sync`, `bar.sync`, `bra`,
`exit`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import ClassVar

from isa.ir.kinds import Kind
from isa.ir.operands import (
    Guard, Imm, IRError, Label, Mem, Reg, RegVec, SReg, Sym, as_operand,
)

# ----------------------------------------------------------------------------------- type tables
TYPE_BITS: dict[str, int] = {
    "pred": 1, "b8": 8, "u8": 8, "s8": 8,
    "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
    "b32": 32, "u32": 32, "s32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32,
    "b64": 64, "u64": 64, "s64": 64, "f64": 64,
}
"""Width in bits of every PTX fundamental type the IR names."""

REG_TYPES: tuple[str, ...] = ("pred", "b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64",
                              "f16", "bf16", "f16x2", "bf16x2", "f32", "f64")
"""Types a `.reg` declaration may have (PTX ISA: no 8-bit registers)."""

UINT = ("u16", "u32", "u64")
SINT = ("s16", "s32", "s64")
INT = UINT + SINT
BITS = ("b16", "b32", "b64")
FLOAT = ("f32", "f64")
HALF = ("f16", "f16x2", "bf16", "bf16x2")
MEM_TYPES = ("b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f32", "f64")
CVT_TYPES = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16", "bf16", "f32", "f64")
FLOAT_RND = ("rn", "rz", "rm", "rp")
INT_RND = ("rni", "rzi", "rmi", "rpi")

CMP_SIGNED = ("eq", "ne", "lt", "le", "gt", "ge")
CMP_UNSIGNED = CMP_SIGNED + ("lo", "ls", "hi", "hs")
CMP_BIT = ("eq", "ne")
CMP_FLOAT = CMP_SIGNED + ("equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")


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


INSTRUCTION_CLASSES: dict[str, type["Instruction"]] = {}
"""mnemonic -> class, for every instruction class."""


def _fail(instr: "Instruction", what: str, rule: str) -> None:
    raise IRError(f"{instr.mnemonic}: {what} ({rule})")


def _one_of(instr: "Instruction", name: str, value, allowed, rule: str) -> None:
    if value not in allowed:
        allowed_s = ", ".join(str(a) for a in allowed)
        _fail(instr, f"{name}={value!r} is invalid; allowed: {allowed_s}", rule)


def _is(instr: "Instruction", name: str, value, kinds: tuple[type, ...], rule: str = "PTX ISA operand kinds") -> None:
    if not isinstance(value, kinds):
        want = " or ".join(k.__name__ for k in kinds)
        _fail(instr, f"operand {name}={value!r} must be {want}", rule)


def _regs_of(x) -> tuple[Reg, ...]:
    if isinstance(x, Reg):
        return (x,)
    if isinstance(x, RegVec):
        return x.regs
    if isinstance(x, Mem) and isinstance(x.base, Reg):
        return (x.base,)
    if isinstance(x, Guard):
        return (x.pred,)
    if isinstance(x, tuple):
        return tuple(r for item in x for r in _regs_of(item))
    return ()


def _fmt(x, abbreviate: bool) -> str:
    if isinstance(x, RegVec):
        return x.text(abbreviate)
    return x.text()


# ----------------------------------------------------------------------------------- base class
@dataclass(frozen=True)
class Instruction:
    """Base of every instruction: a frozen, hashable dataclass with an optional guard predicate."""

    mnemonic: ClassVar[str] = ""
    timing_class: ClassVar[str] = ""                 # the Kind the timing layer dispatches on
    _writes_fields: ClassVar[tuple[str, ...]] = ()   # operand fields the instruction writes
    _coerce_fields: ClassVar[tuple[str, ...]] = ()   # fields where int/float/tuple are coerced

    guard: Guard | None = field(default=None, kw_only=True)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.__dict__.get("mnemonic"):
            INSTRUCTION_CLASSES[cls.mnemonic] = cls

    def __post_init__(self) -> None:
        for name in self._coerce_fields:
            v = getattr(self, name)
            if isinstance(v, tuple) and name == "coords":
                object.__setattr__(self, name, tuple(as_operand(c) for c in v))
            else:
                object.__setattr__(self, name, as_operand(v))
        if self.guard is not None and not isinstance(self.guard, Guard):
            if isinstance(self.guard, Reg):
                object.__setattr__(self, "guard", Guard(self.guard))
            else:
                _fail(self, f"guard {self.guard!r} must be a Guard", "PTX ISA, predicated execution")
        self._check()

    def _check(self) -> None:
        """Validate fields; subclasses raise IRError citing the PTX rule."""

    # --------------------------------------------------------------------------- text
    def opcode(self) -> str:
        """The dotted mnemonic with modifiers, e.g. 'mul.wide.u32'."""
        return self.mnemonic

    def operands(self) -> tuple:
        """Operand objects in text order."""
        return ()

    def _operand_text(self, abbreviate: bool) -> str:
        return ", ".join(_fmt(o, abbreviate) for o in self.operands())

    def text(self, abbreviate: bool = True) -> str:
        """PTX text of the instruction with its guard and ';'. `abbreviate=False`: no `%a0..%a9` ranges."""
        ops = self._operand_text(abbreviate)
        g = f"{self.guard.text()} " if self.guard else ""
        return f"{g}{self.opcode()}{' ' + ops if ops else ''};"

    def __str__(self) -> str:
        return self.text()

    # --------------------------------------------------------------------------- dataflow
    def _operand_fields(self):
        return [f.name for f in fields(self) if f.name != "guard"]

    def writes(self) -> tuple[Reg, ...]:
        """Registers this instruction writes."""
        out: list[Reg] = []
        for name in self._writes_fields:
            v = getattr(self, name)
            if isinstance(v, (Reg, RegVec)):
                out.extend(_regs_of(v))
        return tuple(out)

    def reads(self) -> tuple[Reg, ...]:
        """Registers this instruction reads (guard predicate and address bases included)."""
        out: list[Reg] = list(_regs_of(self.guard)) if self.guard else []
        for name in self._operand_fields():
            v = getattr(self, name)
            if name in self._writes_fields:
                if isinstance(v, Mem):
                    out.extend(_regs_of(v))
                continue
            out.extend(_regs_of(v))
        return tuple(out)


# ----------------------------------------------------------------------------------- ALU
_VAL = (Reg, Imm)


@dataclass(frozen=True)
class Mov(Instruction):
    """`mov.type d, a;` a: register, immediate, special register, or a symbol (its address)."""

    mnemonic: ClassVar[str] = "mov"
    timing_class: ClassVar[str] = Kind.ALU
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("src",)
    type: str
    dst: Reg
    src: Reg | Imm | SReg | Sym

    def _check(self) -> None:
        _one_of(self, "type", self.type, ("pred",) + BITS + INT + FLOAT, "PTX ISA, mov types")
        _is(self, "dst", self.dst, (Reg,))
        _is(self, "src", self.src, (Reg, Imm, SReg, Sym))
        if isinstance(self.src, Sym) and self.type not in ("u32", "u64", "b32", "b64", "s32", "s64"):
            _fail(self, "the address of a symbol needs a 32/64-bit integer type", "PTX ISA, mov")

    def opcode(self) -> str:
        return f"mov.{self.type}"

    def operands(self) -> tuple:
        return (self.dst, self.src)


@dataclass(frozen=True)
class _Binary(Instruction):
    """Shared shape of `op.type d, a, b;`."""

    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("a", "b")
    _types: ClassVar[tuple[str, ...]] = ()
    _rule: ClassVar[str] = ""
    type: str
    dst: Reg
    a: Reg | Imm
    b: Reg | Imm

    def _check(self) -> None:
        _one_of(self, "type", self.type, self._types, self._rule)
        _is(self, "dst", self.dst, (Reg,))
        _is(self, "a", self.a, _VAL)
        _is(self, "b", self.b, _VAL)

    def opcode(self) -> str:
        return f"{self.mnemonic}.{self.type}"

    def operands(self) -> tuple:
        return (self.dst, self.a, self.b)


@dataclass(frozen=True)
class _Arith(_Binary):
    """add/sub: integer or float; floats may carry a rounding modifier `rnd`."""

    _types: ClassVar = INT + FLOAT + HALF
    rnd: str | None = None

    def _check(self) -> None:
        super()._check()
        if self.rnd is not None:
            if self.type in INT:
                _fail(self, f"rounding .{self.rnd} is for float types only", self._rule)
            _one_of(self, "rnd", self.rnd, FLOAT_RND, self._rule)

    def opcode(self) -> str:
        r = f".{self.rnd}" if self.rnd else ""
        return f"{self.mnemonic}{r}.{self.type}"


@dataclass(frozen=True)
class Add(_Arith):
    """`add{.rnd}.type d, a, b;` types u16..s64, f32, f64, f16{x2}, bf16{x2} (no .bN: PTX ISA)."""

    mnemonic: ClassVar[str] = "add"
    timing_class: ClassVar[str] = Kind.ALU
    _rule: ClassVar = "PTX ISA, add / add (float)"


@dataclass(frozen=True)
class Sub(_Arith):
    """`sub{.rnd}.type d, a, b;` (types as add)."""

    mnemonic: ClassVar[str] = "sub"
    timing_class: ClassVar[str] = Kind.ALU
    _rule: ClassVar = "PTX ISA, sub / sub (float)"


MUL_MODES = ("lo", "hi", "wide")


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


@dataclass(frozen=True)
class Mul(_Binary):
    """`mul.mode.type d, a, b;` mode lo|hi|wide for integers (wide: 16/32-bit only, d twice as wide);
    `mul{.rnd}.type` for floats."""

    mnemonic: ClassVar[str] = "mul"
    timing_class: ClassVar[str] = Kind.ALU
    _types: ClassVar = INT + FLOAT + HALF
    _rule: ClassVar = "PTX ISA, mul / mul (float)"
    mode: str | None = None
    rnd: str | None = None

    def _check(self) -> None:
        super()._check()
        _check_mul_mode(self, self.type, self.mode, self.rnd, self._rule)

    def opcode(self) -> str:
        m = f".{self.mode}" if self.mode else (f".{self.rnd}" if self.rnd else "")
        return f"mul{m}.{self.type}"


@dataclass(frozen=True)
class Mad(Instruction):
    """`mad.mode.type d, a, b, c;` (integers: lo|hi|wide) or `mad.rnd.f32/f64` (rounding required
    on sm_20+, PTX ISA)."""

    mnemonic: ClassVar[str] = "mad"
    timing_class: ClassVar[str] = Kind.ALU
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("a", "b", "c")
    _rule: ClassVar = "PTX ISA, mad / mad (float)"
    type: str
    dst: Reg
    a: Reg | Imm
    b: Reg | Imm
    c: Reg | Imm
    mode: str | None = None
    rnd: str | None = None

    def _check(self) -> None:
        _one_of(self, "type", self.type, INT + FLOAT, self._rule)
        for n in ("a", "b", "c"):
            _is(self, n, getattr(self, n), _VAL)
        _is(self, "dst", self.dst, (Reg,))
        _check_mul_mode(self, self.type, self.mode, self.rnd, self._rule)
        if self.type in FLOAT and self.rnd is None:
            _fail(self, "mad.f32/f64 requires a rounding modifier .rn/.rz/.rm/.rp", self._rule)

    def opcode(self) -> str:
        m = f".{self.mode}" if self.mode else f".{self.rnd}"
        return f"mad{m}.{self.type}"

    def operands(self) -> tuple:
        return (self.dst, self.a, self.b, self.c)


@dataclass(frozen=True)
class Min(_Binary):
    """`min.type d, a, b;`"""

    mnemonic: ClassVar[str] = "min"
    timing_class: ClassVar[str] = Kind.ALU
    _types: ClassVar = INT + FLOAT + HALF
    _rule: ClassVar = "PTX ISA, min"


@dataclass(frozen=True)
class Max(_Binary):
    """`max.type d, a, b;`"""

    mnemonic: ClassVar[str] = "max"
    timing_class: ClassVar[str] = Kind.ALU
    _types: ClassVar = INT + FLOAT + HALF
    _rule: ClassVar = "PTX ISA, max"


@dataclass(frozen=True)
class Shl(_Binary):
    """`shl.bN d, a, b;` b is a u32 shift amount (PTX ISA: types .b16 .b32 .b64)."""

    mnemonic: ClassVar[str] = "shl"
    timing_class: ClassVar[str] = Kind.ALU
    _types: ClassVar = BITS
    _rule: ClassVar = "PTX ISA, shl"


@dataclass(frozen=True)
class Shr(_Binary):
    """`shr.type d, a, b;` .sN is arithmetic, .uN/.bN logical (PTX ISA)."""

    mnemonic: ClassVar[str] = "shr"
    timing_class: ClassVar[str] = Kind.ALU
    _types: ClassVar = BITS + INT
    _rule: ClassVar = "PTX ISA, shr"


_LOGIC = ("pred",) + BITS


@dataclass(frozen=True)
class And(_Binary):
    """`and.type d, a, b;` types .pred .b16 .b32 .b64."""

    mnemonic: ClassVar[str] = "and"
    timing_class: ClassVar[str] = Kind.ALU
    _types: ClassVar = _LOGIC
    _rule: ClassVar = "PTX ISA, and"


@dataclass(frozen=True)
class Or(_Binary):
    """`or.type d, a, b;` types .pred .b16 .b32 .b64."""

    mnemonic: ClassVar[str] = "or"
    timing_class: ClassVar[str] = Kind.ALU
    _types: ClassVar = _LOGIC
    _rule: ClassVar = "PTX ISA, or"


@dataclass(frozen=True)
class Xor(_Binary):
    """`xor.type d, a, b;` types .pred .b16 .b32 .b64."""

    mnemonic: ClassVar[str] = "xor"
    timing_class: ClassVar[str] = Kind.ALU
    _types: ClassVar = _LOGIC
    _rule: ClassVar = "PTX ISA, xor"


@dataclass(frozen=True)
class Not(Instruction):
    """`not.type d, a;` types .pred .b16 .b32 .b64."""

    mnemonic: ClassVar[str] = "not"
    timing_class: ClassVar[str] = Kind.ALU
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("a",)
    type: str
    dst: Reg
    a: Reg | Imm

    def _check(self) -> None:
        _one_of(self, "type", self.type, _LOGIC, "PTX ISA, not")
        _is(self, "dst", self.dst, (Reg,))
        _is(self, "a", self.a, _VAL)

    def opcode(self) -> str:
        return f"not.{self.type}"

    def operands(self) -> tuple:
        return (self.dst, self.a)


@dataclass(frozen=True)
class Setp(Instruction):
    """`setp.cmp.type p, a, b;` cmp legal for the type: eq ne lt le gt ge (signed), + lo ls hi hs
    (unsigned), eq ne only (.bN), + equ neu ltu leu gtu geu num nan (floats)."""

    mnemonic: ClassVar[str] = "setp"
    timing_class: ClassVar[str] = Kind.ALU
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("a", "b")
    cmp: str
    type: str
    dst: Reg
    a: Reg | Imm
    b: Reg | Imm

    def _check(self) -> None:
        rule = "PTX ISA, setp, comparison operators by type"
        _one_of(self, "type", self.type, INT + BITS + FLOAT + ("f16", "bf16"), rule)
        _one_of(self, f"cmp (for .{self.type})", self.cmp, setp_cmps(self.type), rule)
        _is(self, "dst", self.dst, (Reg,))
        _is(self, "a", self.a, _VAL)
        _is(self, "b", self.b, _VAL)

    def opcode(self) -> str:
        return f"setp.{self.cmp}.{self.type}"

    def operands(self) -> tuple:
        return (self.dst, self.a, self.b)


@dataclass(frozen=True)
class Selp(Instruction):
    """`selp.type d, a, b, c;` d = c ? a : b (c a predicate)."""

    mnemonic: ClassVar[str] = "selp"
    timing_class: ClassVar[str] = Kind.ALU
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("a", "b")
    type: str
    dst: Reg
    a: Reg | Imm
    b: Reg | Imm
    c: Reg

    def _check(self) -> None:
        _one_of(self, "type", self.type, BITS + INT + FLOAT, "PTX ISA, selp")
        _is(self, "dst", self.dst, (Reg,))
        _is(self, "a", self.a, _VAL)
        _is(self, "b", self.b, _VAL)
        _is(self, "c", self.c, (Reg,), "PTX ISA, selp: c is a predicate register")

    def opcode(self) -> str:
        return f"selp.{self.type}"

    def operands(self) -> tuple:
        return (self.dst, self.a, self.b, self.c)


@dataclass(frozen=True)
class Cvt(Instruction):
    """`cvt{.rnd}{.sat}.dtype.stype d, a;` and `cvt.rnd.f16x2.f32 d, a, b;` (a -> upper half).

    Rounding (PTX ISA): float->int needs .rni/.rzi/.rmi/.rpi; int->float and narrowing
    float->float need .rn/.rz/.rm/.rp; widening float->float and int->int take none;
    f16x2/bf16x2 from a pair of f32 take .rn or .rz."""

    mnemonic: ClassVar[str] = "cvt"
    timing_class: ClassVar[str] = Kind.ALU
    _writes_fields: ClassVar = ("dst",)
    dtype: str
    stype: str
    dst: Reg
    src: Reg
    rnd: str | None = None
    sat: bool = False
    src2: Reg | None = None

    def _check(self) -> None:
        rule = "PTX ISA, cvt"
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

    def opcode(self) -> str:
        r = f".{self.rnd}" if self.rnd else ""
        s = ".sat" if self.sat else ""
        return f"cvt{r}{s}.{self.dtype}.{self.stype}"

    def operands(self) -> tuple:
        return (self.dst, self.src) + ((self.src2,) if self.src2 is not None else ())


# ----------------------------------------------------------------------------------- warp control
@dataclass(frozen=True)
class ElectSync(Instruction):
    """`elect.sync lane|pred, membermask;` elects one leader lane of membermask (sm_90).
    `lane` None prints the sink `_`."""

    mnemonic: ClassVar[str] = "elect.sync"
    timing_class: ClassVar[str] = Kind.ALU
    _writes_fields: ClassVar = ("lane", "pred")
    _coerce_fields: ClassVar = ("membermask",)
    pred: Reg
    membermask: Reg | Imm = Imm(0xFFFFFFFF)
    lane: Reg | None = None

    def _check(self) -> None:
        _is(self, "pred", self.pred, (Reg,))
        _is(self, "membermask", self.membermask, _VAL)
        if self.lane is not None:
            _is(self, "lane", self.lane, (Reg,))

    def operands(self) -> tuple:
        return tuple(x for x in (self.lane, self.pred, self.membermask) if x is not None)

    def _operand_text(self, abbreviate: bool) -> str:
        lane = self.lane.text() if self.lane is not None else "_"
        return f"{lane}|{self.pred.text()}, {self.membermask.text()}"


@dataclass(frozen=True)
class BarSync(Instruction):
    """`bar.sync a{, b};` named barrier a (0..15) with an optional thread count b (multiple of 32)."""

    mnemonic: ClassVar[str] = "bar.sync"
    timing_class: ClassVar[str] = Kind.BAR_SYNC
    _coerce_fields: ClassVar = ("barrier", "count")
    barrier: Reg | Imm = Imm(0)
    count: Reg | Imm | None = None

    def _check(self) -> None:
        rule = "PTX ISA, bar: barrier 0..15, count a multiple of the warp size"
        _is(self, "barrier", self.barrier, _VAL)
        if isinstance(self.barrier, Imm) and self.barrier.value not in range(16):
            _fail(self, f"barrier {self.barrier.value} out of 0..15", rule)
        if self.count is not None:
            _is(self, "count", self.count, _VAL)
            if isinstance(self.count, Imm) and (self.count.value <= 0 or self.count.value % 32):
                _fail(self, f"count {self.count.value} is not a positive multiple of 32", rule)

    def operands(self) -> tuple:
        return (self.barrier,) + ((self.count,) if self.count is not None else ())


@dataclass(frozen=True)
class Bra(Instruction):
    """`bra{.uni} target;` must be warp-uniform in hopsim (divergent branches are not modelled)."""

    mnemonic: ClassVar[str] = "bra"
    timing_class: ClassVar[str] = Kind.ALU
    target: Label
    uni: bool = False

    def _check(self) -> None:
        if isinstance(self.target, str):
            object.__setattr__(self, "target", Label(self.target))
        _is(self, "target", self.target, (Label,))

    def opcode(self) -> str:
        return "bra.uni" if self.uni else "bra"

    def operands(self) -> tuple:
        return (self.target,)


@dataclass(frozen=True)
class Exit(Instruction):
    """`exit;` the thread ends."""

    mnemonic: ClassVar[str] = "exit"
    timing_class: ClassVar[str] = Kind.EXIT


@dataclass(frozen=True)
class Setmaxnreg(Instruction):
    """`setmaxnreg.{inc,dec}.sync.aligned.u32 N;` N in 24..256, a multiple of 8 (PTX ISA);
    warpgroup-collective."""

    mnemonic: ClassVar[str] = "setmaxnreg"
    timing_class: ClassVar[str] = Kind.SETMAXNREG
    action: str
    count: int

    def _check(self) -> None:
        rule = "PTX ISA, setmaxnreg: imm-reg-count in 24..256, a multiple of 8"
        _one_of(self, "action", self.action, ("inc", "dec"), rule)
        if isinstance(self.count, Imm):
            object.__setattr__(self, "count", self.count.value)
        if isinstance(self.count, bool) or not isinstance(self.count, int) \
                or not 24 <= self.count <= 256 or self.count % 8:
            _fail(self, f"count={self.count!r} is invalid", rule)

    def opcode(self) -> str:
        return f"setmaxnreg.{self.action}.sync.aligned.u32"

    def operands(self) -> tuple:
        return (Imm(self.count),)


# ----------------------------------------------------------------------------------- memory
def _check_vec(instr, type_: str, vec: int, data, rule: str) -> None:
    _one_of(instr, "type", type_, MEM_TYPES, rule)
    _one_of(instr, "vec", vec, (1, 2, 4), rule)
    if TYPE_BITS[type_] * vec > 128:
        _fail(instr, f".v{vec}.{type_} is {TYPE_BITS[type_] * vec // 8} bytes; a vector access is at most "
                     "16 bytes (.v4 of 32-bit, .v2 of 64-bit)", rule)
    if vec == 1:
        _is(instr, "data register", data, (Reg,), rule)
    else:
        _is(instr, "data registers", data, (RegVec,), rule)
        if len(data) != vec:
            _fail(instr, f".v{vec} needs {vec} registers, got {len(data)}", rule)


def _vec_of(data) -> int:
    return len(data) if isinstance(data, RegVec) else 1


@dataclass(frozen=True)
class _Load(Instruction):
    """`ld.<space>{.vN}.type d, [a];`"""

    _space: ClassVar[str] = ""
    _rule: ClassVar[str] = "PTX ISA, ld"
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("dst",)
    type: str
    dst: Reg | RegVec
    addr: Mem
    vec: int = 0

    def _check(self) -> None:
        if self.vec == 0:
            object.__setattr__(self, "vec", _vec_of(self.dst))
        if isinstance(self.dst, RegVec) and len(self.dst) == 1 and self.vec == 1:
            object.__setattr__(self, "dst", self.dst.regs[0])
        _is(self, "addr", self.addr, (Mem,))
        _check_vec(self, self.type, self.vec, self.dst, self._rule)

    def opcode(self) -> str:
        v = f".v{self.vec}" if self.vec > 1 else ""
        return f"{self.mnemonic}{v}.{self.type}"

    def operands(self) -> tuple:
        return (self.dst, self.addr)


@dataclass(frozen=True)
class _Store(Instruction):
    """`st.<space>{.vN}.type [a], b;`"""

    _rule: ClassVar[str] = "PTX ISA, st"
    _coerce_fields: ClassVar = ("src",)
    type: str
    addr: Mem
    src: Reg | RegVec
    vec: int = 0

    def _check(self) -> None:
        if self.vec == 0:
            object.__setattr__(self, "vec", _vec_of(self.src))
        if isinstance(self.src, RegVec) and len(self.src) == 1 and self.vec == 1:
            object.__setattr__(self, "src", self.src.regs[0])
        _is(self, "addr", self.addr, (Mem,))
        _check_vec(self, self.type, self.vec, self.src, self._rule)

    def opcode(self) -> str:
        v = f".v{self.vec}" if self.vec > 1 else ""
        return f"{self.mnemonic}{v}.{self.type}"

    def operands(self) -> tuple:
        return (self.addr, self.src)


@dataclass(frozen=True)
class LdGlobal(_Load):
    """`ld.global{.v2,.v4}.type d, [a];` vectors up to 16 bytes."""

    mnemonic: ClassVar[str] = "ld.global"
    timing_class: ClassVar[str] = Kind.LD_GLOBAL


@dataclass(frozen=True)
class StGlobal(_Store):
    """`st.global{.v2,.v4}.type [a], b;` vectors up to 16 bytes."""

    mnemonic: ClassVar[str] = "st.global"
    timing_class: ClassVar[str] = Kind.ST_GLOBAL


@dataclass(frozen=True)
class LdShared(_Load):
    """`ld.shared{.v2,.v4}.type d, [a];` (the CTA's shared window; `.shared::cta` accepted)."""

    mnemonic: ClassVar[str] = "ld.shared"
    timing_class: ClassVar[str] = Kind.LD_SHARED


@dataclass(frozen=True)
class StShared(_Store):
    """`st.shared{.v2,.v4}.type [a], b;`"""

    mnemonic: ClassVar[str] = "st.shared"
    timing_class: ClassVar[str] = Kind.ST_SHARED


@dataclass(frozen=True)
class LdParam(_Load):
    """`ld.param.type d, [param];` reads a kernel parameter (the address is a param symbol)."""

    mnemonic: ClassVar[str] = "ld.param"
    timing_class: ClassVar[str] = Kind.ALU

    def _check(self) -> None:
        super()._check()
        if not isinstance(self.addr.base, Sym):
            _fail(self, "the address must be a parameter name [param] or [param+off]",
                  "PTX ISA, kernel parameters are read with ld.param [name]")


@dataclass(frozen=True)
class _Matrix(Instruction):
    _rule: ClassVar[str] = ""
    _coerce_fields: ClassVar = ("regs",)
    num: int
    regs: RegVec
    addr: Mem
    trans: bool = False
    shape: str = "m8n8"
    type: str = "b16"

    def _check(self) -> None:
        _one_of(self, "shape", self.shape, ("m8n8",), self._rule + " (hopsim models .m8n8 .b16 only)")
        _one_of(self, "type", self.type, ("b16",), self._rule + " (.m8n8 takes .b16)")
        _one_of(self, "num", self.num, (1, 2, 4), self._rule)
        if isinstance(self.regs, Reg):
            object.__setattr__(self, "regs", RegVec((self.regs,)))
        _is(self, "regs", self.regs, (RegVec,))
        _is(self, "addr", self.addr, (Mem,))
        if len(self.regs) != self.num:
            _fail(self, f".x{self.num} needs {self.num} 32-bit registers (one per 8x8 matrix), got "
                        f"{len(self.regs)}", self._rule)

    def opcode(self) -> str:
        t = ".trans" if self.trans else ""
        return f"{self.mnemonic}.sync.aligned.{self.shape}.x{self.num}{t}.shared.{self.type}"


@dataclass(frozen=True)
class Ldmatrix(_Matrix):
    """`ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16 {r..}, [a];` one b32 register per
    8x8 matrix (lanes 8j..8j+7 give the row addresses of matrix j)."""

    mnemonic: ClassVar[str] = "ldmatrix"
    timing_class: ClassVar[str] = Kind.LDMATRIX
    _rule: ClassVar = "PTX ISA, ldmatrix"
    _writes_fields: ClassVar = ("regs",)

    def operands(self) -> tuple:
        return (self.regs, self.addr)


@dataclass(frozen=True)
class Stmatrix(_Matrix):
    """`stmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16 [a], {r..};` (sm_90)."""

    mnemonic: ClassVar[str] = "stmatrix"
    timing_class: ClassVar[str] = Kind.STMATRIX
    _rule: ClassVar = "PTX ISA, stmatrix (sm_90)"

    def operands(self) -> tuple:
        return (self.addr, self.regs)


# ----------------------------------------------------------------------------------- fences
@dataclass(frozen=True)
class FenceProxyAsync(Instruction):
    """`fence.proxy.async{.space};` orders generic-proxy accesses with async-proxy ones (TMA, wgmma).
    space: "shared::cta" (default), "shared::cluster", "global", or None (all spaces)."""

    mnemonic: ClassVar[str] = "fence.proxy.async"
    timing_class: ClassVar[str] = Kind.ALU
    space: str | None = "shared::cta"

    def _check(self) -> None:
        _one_of(self, "space", self.space, (None, "shared::cta", "shared::cluster", "global"),
                "PTX ISA, membar/fence: fence.proxy.async{.global,.shared::{cta,cluster}}")

    def opcode(self) -> str:
        return "fence.proxy.async" + (f".{self.space}" if self.space else "")


@dataclass(frozen=True)
class FenceMbarrierInit(Instruction):
    """`fence.mbarrier_init.release.cluster;` makes mbarrier.init visible to the async proxy/cluster."""

    mnemonic: ClassVar[str] = "fence.mbarrier_init"
    timing_class: ClassVar[str] = Kind.ALU

    def opcode(self) -> str:
        return "fence.mbarrier_init.release.cluster"


# ----------------------------------------------------------------------------------- mbarrier
_MBAR_SPACE = ".shared::cta.b64"
_MBAR_RULE = "PTX ISA, mbarrier: a .b64 object in .shared::cta"


@dataclass(frozen=True)
class _Mbar(Instruction):
    def _check_addr(self) -> None:
        _is(self, "addr", self.addr, (Mem,), _MBAR_RULE)
        if self.addr.offset % 8:
            _fail(self, f"address offset {self.addr.offset} is not 8-byte aligned", _MBAR_RULE)


@dataclass(frozen=True)
class MbarrierInit(_Mbar):
    """`mbarrier.init.shared::cta.b64 [a], count;` count of expected arrivals, 1..2^20-1."""

    mnemonic: ClassVar[str] = "mbarrier.init"
    timing_class: ClassVar[str] = Kind.MBAR_INIT
    _coerce_fields: ClassVar = ("count",)
    addr: Mem
    count: Reg | Imm

    def _check(self) -> None:
        self._check_addr()
        _is(self, "count", self.count, _VAL)
        if isinstance(self.count, Imm) and not 1 <= self.count.value <= (1 << 20) - 1:
            _fail(self, f"count {self.count.value} out of 1..2^20-1", "PTX ISA, mbarrier.init")

    def opcode(self) -> str:
        return "mbarrier.init" + _MBAR_SPACE

    def operands(self) -> tuple:
        return (self.addr, self.count)


def _state_text(state) -> str:
    return state.text() if state is not None else "_"


@dataclass(frozen=True)
class MbarrierArrive(_Mbar):
    """`mbarrier.arrive.shared::cta.b64 state, [a]{, count};` state is a b64 register or `_`
    (None); count defaults to 1."""

    mnemonic: ClassVar[str] = "mbarrier.arrive"
    timing_class: ClassVar[str] = Kind.MBAR_ARRIVE
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
            _is(self, "count", self.count, _VAL)
            if isinstance(self.count, Imm) and not 1 <= self.count.value <= (1 << 20) - 1:
                _fail(self, f"count {self.count.value} out of 1..2^20-1", "PTX ISA, mbarrier.arrive")

    def opcode(self) -> str:
        return "mbarrier.arrive" + _MBAR_SPACE

    def operands(self) -> tuple:
        return tuple(x for x in (self.state, self.addr, self.count) if x is not None)

    def _operand_text(self, abbreviate: bool) -> str:
        c = f", {self.count.text()}" if self.count is not None else ""
        return f"{_state_text(self.state)}, {self.addr.text()}{c}"


_TX_RULE = "PTX ISA, tx-count: 0..2^20-1"


def _check_tx(instr, tx) -> None:
    _is(instr, "tx_count", tx, _VAL)
    if isinstance(tx, Imm) and not 0 <= tx.value <= (1 << 20) - 1:
        _fail(instr, f"tx_count {tx.value} out of range", _TX_RULE)


@dataclass(frozen=True)
class MbarrierArriveExpectTx(_Mbar):
    """`mbarrier.arrive.expect_tx.shared::cta.b64 state, [a], tx_count;` expect-tx then arrive."""

    mnemonic: ClassVar[str] = "mbarrier.arrive.expect_tx"
    timing_class: ClassVar[str] = Kind.MBAR_ARRIVE
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

    def opcode(self) -> str:
        return "mbarrier.arrive.expect_tx" + _MBAR_SPACE

    def operands(self) -> tuple:
        return tuple(x for x in (self.state, self.addr, self.tx_count) if x is not None)

    def _operand_text(self, abbreviate: bool) -> str:
        return f"{_state_text(self.state)}, {self.addr.text()}, {self.tx_count.text()}"


@dataclass(frozen=True)
class MbarrierExpectTx(_Mbar):
    """`mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [a], tx_count;` raises the tx-count."""

    mnemonic: ClassVar[str] = "mbarrier.expect_tx"
    timing_class: ClassVar[str] = Kind.MBAR_EXPECT_TX
    _coerce_fields: ClassVar = ("tx_count",)
    addr: Mem
    tx_count: Reg | Imm

    def _check(self) -> None:
        self._check_addr()
        _check_tx(self, self.tx_count)

    def opcode(self) -> str:
        return "mbarrier.expect_tx.relaxed.cta" + _MBAR_SPACE

    def operands(self) -> tuple:
        return (self.addr, self.tx_count)


@dataclass(frozen=True)
class MbarrierCompleteTx(_Mbar):
    """`mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [a], tx_count;` lowers the tx-count."""

    mnemonic: ClassVar[str] = "mbarrier.complete_tx"
    timing_class: ClassVar[str] = Kind.MBAR_COMPLETE_TX
    _coerce_fields: ClassVar = ("tx_count",)
    addr: Mem
    tx_count: Reg | Imm

    def _check(self) -> None:
        self._check_addr()
        _check_tx(self, self.tx_count)

    def opcode(self) -> str:
        return "mbarrier.complete_tx.relaxed.cta" + _MBAR_SPACE

    def operands(self) -> tuple:
        return (self.addr, self.tx_count)


def _check_parity(instr, parity) -> None:
    _is(instr, "parity", parity, _VAL)
    if isinstance(parity, Imm) and parity.value not in (0, 1):
        _fail(instr, f"phaseParity {parity.value} must be 0 or 1",
              "PTX ISA, mbarrier.test_wait/try_wait .parity")


@dataclass(frozen=True)
class MbarrierTryWaitParity(_Mbar):
    """`mbarrier.try_wait.parity.shared::cta.b64 p, [a], parity{, suspend_hint};` p = the phase
    with that parity completed (the thread may be suspended up to the hint meanwhile)."""

    mnemonic: ClassVar[str] = "mbarrier.try_wait.parity"
    timing_class: ClassVar[str] = Kind.MBAR_WAIT
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
            _is(self, "suspend_hint", self.suspend_hint, _VAL)

    def opcode(self) -> str:
        return "mbarrier.try_wait.parity" + _MBAR_SPACE

    def operands(self) -> tuple:
        return (self.pred, self.addr, self.parity) + ((self.suspend_hint,) if self.suspend_hint is not None else ())


@dataclass(frozen=True)
class MbarrierTestWaitParity(_Mbar):
    """`mbarrier.test_wait.parity.shared::cta.b64 p, [a], parity;` non-blocking test."""

    mnemonic: ClassVar[str] = "mbarrier.test_wait.parity"
    timing_class: ClassVar[str] = Kind.MBAR_TEST
    _writes_fields: ClassVar = ("pred",)
    _coerce_fields: ClassVar = ("parity",)
    pred: Reg
    addr: Mem
    parity: Reg | Imm

    def _check(self) -> None:
        self._check_addr()
        _is(self, "pred", self.pred, (Reg,))
        _check_parity(self, self.parity)

    def opcode(self) -> str:
        return "mbarrier.test_wait.parity" + _MBAR_SPACE

    def operands(self) -> tuple:
        return (self.pred, self.addr, self.parity)


@dataclass(frozen=True)
class MbarrierInval(_Mbar):
    """`mbarrier.inval.shared::cta.b64 [a];` the object may be reused as plain memory afterwards."""

    mnemonic: ClassVar[str] = "mbarrier.inval"
    timing_class: ClassVar[str] = Kind.MBAR_INVAL
    addr: Mem

    def _check(self) -> None:
        self._check_addr()

    def opcode(self) -> str:
        return "mbarrier.inval" + _MBAR_SPACE

    def operands(self) -> tuple:
        return (self.addr,)


# ----------------------------------------------------------------------------------- TMA (bulk tensor)
_TMA_RULE = "PTX ISA, cp.async.bulk.tensor: .dim in 1d..5d, one coordinate per dimension"


def _check_tma(instr, dims, tmap, coords) -> None:
    _one_of(instr, "dims", dims, (1, 2, 3, 4, 5), _TMA_RULE)
    _is(instr, "tmap", tmap, (Sym, Reg), _TMA_RULE + " (tensorMap: a .tmap param or a 64-bit register)")
    if not isinstance(coords, tuple) or not all(isinstance(c, (Reg, Imm)) for c in coords):
        _fail(instr, f"coords {coords!r} must be a tuple of registers/immediates", _TMA_RULE)
    if len(coords) != dims:
        _fail(instr, f".{dims}d needs {dims} coordinates, got {len(coords)}", _TMA_RULE)


def _tma_text(tmap, coords) -> str:
    return f"[{tmap.text()}, {{{', '.join(c.text() for c in coords)}}}]"


@dataclass(frozen=True)
class CpAsyncBulkTensorLoad(Instruction):
    """`cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
    [dst], [tmap, {c0..}], [mbar];` a TMA box copy global->shared; the bytes land complete_tx on mbar."""

    mnemonic: ClassVar[str] = "cp.async.bulk.tensor.load"
    timing_class: ClassVar[str] = Kind.TMA_LOAD
    _coerce_fields: ClassVar = ("coords",)
    dims: int
    dst: Mem
    tmap: Sym | Reg
    coords: tuple[Reg | Imm, ...]
    mbar: Mem

    def _check(self) -> None:
        _check_tma(self, self.dims, self.tmap, self.coords)
        _is(self, "dst", self.dst, (Mem,), _TMA_RULE)
        _is(self, "mbar", self.mbar, (Mem,), _TMA_RULE)
        if self.mbar.offset % 8:
            _fail(self, f"mbarrier offset {self.mbar.offset} is not 8-byte aligned", _MBAR_RULE)

    def opcode(self) -> str:
        return f"cp.async.bulk.tensor.{self.dims}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"

    def operands(self) -> tuple:
        return (self.dst, self.tmap) + self.coords + (self.mbar,)

    def _operand_text(self, abbreviate: bool) -> str:
        return f"{self.dst.text()}, {_tma_text(self.tmap, self.coords)}, {self.mbar.text()}"


@dataclass(frozen=True)
class CpAsyncBulkTensorStore(Instruction):
    """`cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [tmap, {c0..}], [src];`
    a TMA box copy shared->global, tracked by bulk async-groups."""

    mnemonic: ClassVar[str] = "cp.async.bulk.tensor.store"
    timing_class: ClassVar[str] = Kind.TMA_STORE
    _coerce_fields: ClassVar = ("coords",)
    dims: int
    tmap: Sym | Reg
    coords: tuple[Reg | Imm, ...]
    src: Mem

    def _check(self) -> None:
        _check_tma(self, self.dims, self.tmap, self.coords)
        _is(self, "src", self.src, (Mem,), _TMA_RULE)

    def opcode(self) -> str:
        return f"cp.async.bulk.tensor.{self.dims}d.global.shared::cta.tile.bulk_group"

    def operands(self) -> tuple:
        return (self.tmap,) + self.coords + (self.src,)

    def _operand_text(self, abbreviate: bool) -> str:
        return f"{_tma_text(self.tmap, self.coords)}, {self.src.text()}"


@dataclass(frozen=True)
class CpAsyncBulkCommitGroup(Instruction):
    """`cp.async.bulk.commit_group;` closes the current bulk async-group of the thread."""

    mnemonic: ClassVar[str] = "cp.async.bulk.commit_group"
    timing_class: ClassVar[str] = Kind.BULK_COMMIT


@dataclass(frozen=True)
class CpAsyncBulkWaitGroup(Instruction):
    """`cp.async.bulk.wait_group{.read} N;` waits until at most N bulk groups are pending
    (.read: only until their source reads are done)."""

    mnemonic: ClassVar[str] = "cp.async.bulk.wait_group"
    timing_class: ClassVar[str] = Kind.BULK_WAIT
    n: int = 0
    read: bool = False

    def _check(self) -> None:
        if isinstance(self.n, Imm):
            object.__setattr__(self, "n", self.n.value)
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 0:
            _fail(self, f"N={self.n!r} must be a non-negative integer constant",
                  "PTX ISA, cp.async.bulk.wait_group")

    def opcode(self) -> str:
        return "cp.async.bulk.wait_group" + (".read" if self.read else "")

    def operands(self) -> tuple:
        return (Imm(self.n),)


# ----------------------------------------------------------------------------------- WGMMA
_WG_RULE = "PTX ISA, wgmma.mma_async"
WGMMA_N = tuple(range(8, 257, 8))


@dataclass(frozen=True)
class WgmmaFence(Instruction):
    """`wgmma.fence.sync.aligned;` orders register accesses before the following wgmma.mma_async."""

    mnemonic: ClassVar[str] = "wgmma.fence"
    timing_class: ClassVar[str] = Kind.WGMMA_FENCE

    def opcode(self) -> str:
        return "wgmma.fence.sync.aligned"


@dataclass(frozen=True)
class WgmmaMmaAsync(Instruction):
    """`wgmma.mma_async.sync.aligned.m64nNk16.dtype_d.dtype_a.dtype_b d, a, b_desc, scale_d,
    imm_scale_a, imm_scale_b{, imm_trans_a}, imm_trans_b;`

    Legal here (PTX ISA, f16/bf16 dense):
        dtype_a == dtype_b in {f16, bf16};   dtype_d f32, or f16 only with f16 inputs
        N in 8..256 step 8;                  d: N/2 f32 regs (f32) or N/4 f16x2 regs (f16)
        a: a 64-bit smem descriptor, or a RegVec of 4 b32 regs (A from registers: no imm_trans_a)
        scale_d: predicate register or 0/1;  imm_scale_a/b in {1, -1};  imm_trans_a/b in {0, 1}
    """

    mnemonic: ClassVar[str] = "wgmma.mma_async"
    timing_class: ClassVar[str] = Kind.WGMMA
    _writes_fields: ClassVar = ("d",)
    _coerce_fields: ClassVar = ("d", "a", "scale_d")
    shape_n: int
    dtype_d: str
    dtype_a: str
    dtype_b: str
    d: RegVec
    a: Reg | RegVec
    b_desc: Reg
    scale_d: Reg | Imm = Imm(1)
    imm_scale_a: int = 1
    imm_scale_b: int = 1
    imm_trans_a: int = 0
    imm_trans_b: int = 0

    @property
    def a_from_regs(self) -> bool:
        return isinstance(self.a, RegVec)

    @property
    def num_d_regs(self) -> int:
        """Accumulator registers per thread: N/2 (f32) or N/4 (f16, packed f16x2)."""
        return self.shape_n // 2 if self.dtype_d == "f32" else self.shape_n // 4

    def _check(self) -> None:
        _one_of(self, "dtype_a", self.dtype_a, ("f16", "bf16"),
                _WG_RULE + " (hopsim models the f16/bf16 forms)")
        if self.dtype_b != self.dtype_a:
            _fail(self, f"dtype_b={self.dtype_b!r} must equal dtype_a={self.dtype_a!r}", _WG_RULE)
        _one_of(self, "dtype_d", self.dtype_d, ("f32", "f16"), _WG_RULE)
        if self.dtype_d == "f16" and self.dtype_a != "f16":
            _fail(self, f"an .f16 accumulator needs .f16 inputs, not .{self.dtype_a} "
                        "(.bf16 accumulates in .f32 only)", _WG_RULE)
        if self.shape_n not in WGMMA_N:
            _fail(self, f"shape m64n{self.shape_n}k16: N must be a multiple of 8 in 8..256 for "
                        f".{self.dtype_a}", _WG_RULE)
        _is(self, "d", self.d, (RegVec,))
        if len(self.d) != self.num_d_regs:
            what = "N/2 .f32" if self.dtype_d == "f32" else "N/4 .f16x2"
            _fail(self, f"m64n{self.shape_n}k16.{self.dtype_d} needs {self.num_d_regs} accumulator "
                        f"registers ({what}), got {len(self.d)}", _WG_RULE)
        _is(self, "a", self.a, (Reg, RegVec))
        if isinstance(self.a, RegVec) and len(self.a) != 4:
            _fail(self, f"A from registers needs 4 .b32 registers (64x16 .{self.dtype_a} over 128 threads), "
                        f"got {len(self.a)}", _WG_RULE)
        _is(self, "b_desc", self.b_desc, (Reg,))
        _is(self, "scale_d", self.scale_d, _VAL)
        if isinstance(self.scale_d, Imm) and self.scale_d.value not in (0, 1):
            _fail(self, f"scale-d {self.scale_d.value} must be a predicate or 0/1", _WG_RULE)
        for name in ("imm_scale_a", "imm_scale_b"):
            v = getattr(self, name)
            if isinstance(v, Imm):
                object.__setattr__(self, name, v.value)
            _one_of(self, name, getattr(self, name), (1, -1), _WG_RULE)
        for name in ("imm_trans_a", "imm_trans_b"):
            v = getattr(self, name)
            if isinstance(v, Imm):
                object.__setattr__(self, name, v.value)
            _one_of(self, name, getattr(self, name), (0, 1), _WG_RULE)
        if self.a_from_regs and self.imm_trans_a:
            _fail(self, "imm-trans-a is not allowed when A comes from registers", _WG_RULE)

    def reads(self) -> tuple[Reg, ...]:
        # The accumulator is read too (D = A*B + D) unless scale-d is the constant 0.
        base = super().reads()
        if isinstance(self.scale_d, Imm) and self.scale_d.value == 0:
            return base
        return base + self.d.regs

    def opcode(self) -> str:
        return (f"wgmma.mma_async.sync.aligned.m64n{self.shape_n}k16."
                f"{self.dtype_d}.{self.dtype_a}.{self.dtype_b}")

    def operands(self) -> tuple:
        ops = (self.d, self.a, self.b_desc, self.scale_d, Imm(self.imm_scale_a), Imm(self.imm_scale_b))
        if not self.a_from_regs:
            ops += (Imm(self.imm_trans_a),)
        return ops + (Imm(self.imm_trans_b),)


@dataclass(frozen=True)
class WgmmaCommitGroup(Instruction):
    """`wgmma.commit_group.sync.aligned;` closes the pending wgmma.mma_async ops into a group."""

    mnemonic: ClassVar[str] = "wgmma.commit_group"
    timing_class: ClassVar[str] = Kind.WGMMA_COMMIT

    def opcode(self) -> str:
        return "wgmma.commit_group.sync.aligned"


@dataclass(frozen=True)
class WgmmaWaitGroup(Instruction):
    """`wgmma.wait_group.sync.aligned N;` waits until at most N wgmma groups are pending."""

    mnemonic: ClassVar[str] = "wgmma.wait_group"
    timing_class: ClassVar[str] = Kind.WGMMA_WAIT
    n: int = 0

    def _check(self) -> None:
        if isinstance(self.n, Imm):
            object.__setattr__(self, "n", self.n.value)
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 0:
            _fail(self, f"N={self.n!r} must be a non-negative integer constant",
                  "PTX ISA, wgmma.wait_group")

    def opcode(self) -> str:
        return "wgmma.wait_group.sync.aligned"

    def operands(self) -> tuple:
        return (Imm(self.n),)


__all__ = ["Instruction", "INSTRUCTION_CLASSES", "TYPE_BITS", "REG_TYPES", "setp_cmps", "WGMMA_N"] + [
    c.__name__ for c in INSTRUCTION_CLASSES.values()
]
