"""The declaration machinery of the hopsim IR: type tables, `Slot`/`Opnd` specs and the
`Instruction` base class from which parsing, printing, verification and dispatch are derived.

An opcode is declared once, as a frozen dataclass subclass of `Instruction` with class attributes:

    mnemonic       the dotted PTX mnemonic ("add", "mbarrier.init"); registers the class
    modifiers      ordered `Slot`s: the dotted modifiers after the mnemonic (field, allowed values)
    operand_spec   ordered `Opnd`s: operand field, allowed kinds, register type rule, symbol space
    rule           the PTX ISA section the verifier cites in its errors
    timing_class   the `Kind` the timing layer dispatches on
    examples       PTX texts of the opcode (the table test parses and prints each)

`text()`, `opcode()`, `operands()` and the generic parser (`parse_syntax`) follow from those; an
irregular opcode overrides `opcode`/`_operand_text`/`parse_syntax` (a small hook in its module).
Verifier rules beyond the declared slots/kinds live in the class's `_check` (raising `IRError`
citing the PTX rule).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Callable, ClassVar

from isa.ir.kinds import Kind
from isa.ir.operands import Guard, Imm, IRError, Mem, Reg, RegVec, Sym, as_operand

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

INSTRUCTION_CLASSES: dict[str, type["Instruction"]] = {}
"""mnemonic -> class, for every declared instruction class."""

SYNTAX: dict[str, Callable] = {}
"""Opcode prefix -> parse hook(ctx) -> Instruction (the longest dotted prefix of a head wins)."""

PRODUCES: dict[str, tuple[type, ...]] = {}
"""Opcode prefix -> the instruction classes its parse hook can return."""


def syntax(*prefixes: str, produces: tuple[type, ...]):
    """Register the decorated function as the parse hook of `prefixes` (an irregular family such as
    `ld.<space>` whose classes share one head)."""
    def deco(f):
        for p in prefixes:
            SYNTAX[p] = f
            PRODUCES[p] = tuple(produces)
        return f
    return deco


# ----------------------------------------------------------------------------------- specs
@dataclass(frozen=True)
class Slot:
    """One dotted modifier position. `field` None: a fixed modifier (`values[0]`, required, always
    printed, not stored). `flag`: a bool field printed as `.values[0]` when true. `optional`: may be
    absent (None). `checked`: the verifier checks the field against `values`."""

    field: str | None
    values: tuple
    what: str | None = None
    optional: bool = False
    flag: bool = False
    checked: bool = False


INT_CONST = "int-constant"
"""Operand kind: an integer constant stored as a Python int (printed as an immediate)."""


@dataclass(frozen=True)
class Opnd:
    """One operand position: the dataclass field, allowed kinds, the parse-error wording, whether it
    may be absent (`optional`, trailing) or written `_` (`sink`, stored as None), the register type
    rule the verifier applies (`rt`: "type" = the instruction's .type, or a name in
    `verify.REG_RULES`) and, for Mem/Sym operands, the symbol space it names (`space`)."""

    name: str
    kinds: tuple
    what: str | None = None
    optional: bool = False
    sink: bool = False
    rt: str | None = None
    space: str | None = None


_WHAT = {(Reg,): "a register", (Reg, Imm): "a register or an immediate", (Mem,): "a memory operand [addr]",
         (RegVec,): "a register vector {..}", (Reg, RegVec): "a register or a register vector {..}",
         INT_CONST: "an integer constant"}


def what_of(o: Opnd) -> str:
    if o.what:
        return o.what
    if o.sink:
        return "a register or '_'"
    return _WHAT.get(o.kinds, "an operand")


# ----------------------------------------------------------------------------------- checks
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


def int_field(instr: "Instruction", name: str):
    """The value of a constant-integer field, an `Imm` given for it replaced by its int."""
    v = getattr(instr, name)
    if isinstance(v, Imm):
        object.__setattr__(instr, name, v.value)
        v = v.value
    return v


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


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
    modifiers: ClassVar[tuple[Slot, ...]] = ()
    operand_spec: ClassVar[tuple[Opnd, ...]] = ()
    rule: ClassVar[str] = "PTX ISA"
    aliases: ClassVar[tuple[str, ...]] = ()          # other heads parsed the same ("barrier.sync")
    ignored_modifiers: ClassVar[tuple[str, ...]] = ()  # accepted when parsing, not stored
    examples: ClassVar[tuple[str, ...]] = ()
    family_syntax: ClassVar[bool] = False            # parsed by a module-level @syntax hook
    _writes_fields: ClassVar[tuple[str, ...]] = ()   # operand fields the instruction writes
    _coerce_fields: ClassVar[tuple[str, ...]] = ()   # fields where int/float/tuple are coerced

    guard: Guard | None = field(default=None, kw_only=True)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.__dict__.get("mnemonic"):
            if cls.mnemonic in INSTRUCTION_CLASSES:
                raise TypeError(f"opcode {cls.mnemonic!r} declared twice")
            INSTRUCTION_CLASSES[cls.mnemonic] = cls
            if not cls.family_syntax:
                for p in (cls.mnemonic,) + cls.aliases:
                    SYNTAX[p] = cls.parse_syntax
                    PRODUCES[p] = (cls,)

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
        """Validate fields: by default the checked slots and the operand kinds of the declaration;
        subclasses add rules, raising IRError citing the PTX rule."""
        self._check_declared()

    def _check_declared(self) -> None:
        for s in self.modifiers:
            if s.checked:
                _one_of(self, s.field, getattr(self, s.field), s.values, self.rule)
        for o in self.operand_spec:
            v = getattr(self, o.name)
            if v is None and (o.optional or o.sink):
                continue
            if o.kinds != INT_CONST:
                _is(self, o.name, v, o.kinds)

    def lint(self) -> list[tuple[str, str, str]]:
        """Static diagnostics beyond construction-time checks, as (rule, message, severity
        "error"/"warning"): rules that depend on the guard or on operand values the verifier sees
        (e.g. a warp collective's membermask); none by default."""
        return []

    # --------------------------------------------------------------------------- parse
    @classmethod
    def parse_modifiers(cls, c) -> dict:
        """Field values of the declared modifier slots, taken from the parse context `c`."""
        kw = {}
        for s in cls.modifiers:
            if s.field is None:
                c.need(s.values[:1], s.what or f".{s.values[0]}")
            elif s.flag:
                kw[s.field] = c.take(*s.values) is not None
            elif s.optional:
                kw[s.field] = c.take(*s.values)
            else:
                kw[s.field] = c.need(s.values, s.what or s.field)
        c.take(*cls.ignored_modifiers)
        c.done()
        return kw

    @classmethod
    def parse_operands(cls, c) -> dict:
        """Field values of the declared operands, taken from the parse context `c`."""
        spec = cls.operand_spec
        need = sum(1 for o in spec if not o.optional)
        c.count(*range(need, len(spec) + 1))
        kw = {}
        for i, o in enumerate(spec):
            if i >= len(c.ops):
                break
            if o.kinds == INT_CONST:
                kw[o.name] = c.int_imm(i, what_of(o))
            elif o.sink:
                kw[o.name] = c.opt_reg(i, what_of(o))
            else:
                kw[o.name] = c.get(i, o.kinds, what_of(o))
        return kw

    @classmethod
    def parse_syntax(cls, c) -> "Instruction":
        """Build the instruction from a parse context (generic: declared slots, then operands)."""
        kw = cls.parse_modifiers(c)
        kw.update(cls.parse_operands(c))
        return cls(**kw)

    # --------------------------------------------------------------------------- text
    def opcode(self) -> str:
        """The dotted mnemonic with modifiers, e.g. 'mul.wide.u32'."""
        parts = [self.mnemonic]
        for s in self.modifiers:
            if s.field is None:
                parts.append(s.values[0])
                continue
            v = getattr(self, s.field)
            if s.flag:
                if v:
                    parts.append(s.values[0])
            elif v is not None:
                parts.append(str(v))
        return ".".join(parts)

    def operands(self) -> tuple:
        """Operand objects in text order."""
        out = []
        for o in self.operand_spec:
            v = getattr(self, o.name)
            if v is not None:
                out.append(Imm(v) if o.kinds == INT_CONST else v)
        return tuple(out)

    def _operand_text(self, abbreviate: bool) -> str:
        if not any(o.sink for o in self.operand_spec):
            return ", ".join(_fmt(o, abbreviate) for o in self.operands())
        out = []
        for o in self.operand_spec:
            v = getattr(self, o.name)
            if v is None:
                if o.sink:
                    out.append("_")
                continue
            out.append(_fmt(Imm(v) if o.kinds == INT_CONST else v, abbreviate))
        return ", ".join(out)

    def text(self, abbreviate: bool = True) -> str:
        """PTX text of the instruction with its guard and ';'. `abbreviate=False`: no `%a0..%a9` ranges."""
        ops = self._operand_text(abbreviate)
        g = f"{self.guard.text()} " if self.guard else ""
        return f"{g}{self.opcode()}{' ' + ops if ops else ''};"

    def __str__(self) -> str:
        return self.text()

    # --------------------------------------------------------------------------- verifier data
    def typed_registers(self) -> list[tuple[object, object]]:
        """(operand, register type rule) for every typed operand: the rule is "pred", "u32", "addr",
        "addr64", "desc", "b32", "state64", or ("of", type, wider_ok) (a register fitting .type)."""
        out: list = []
        for o in self.operand_spec:
            if o.rt is None:
                continue
            v = getattr(self, o.name)
            if isinstance(v, Mem):
                v = v.base
            out.append((v, ("of", self.type, False) if o.rt == "type" else o.rt))
        return out

    def symbol_uses(self) -> list[tuple[Sym, str]]:
        """(symbol, space wanted: "shared", "param", "tmap", "global", "any") for each symbol operand."""
        out: list = []
        for o in self.operand_spec:
            if o.space is None:
                continue
            v = getattr(self, o.name)
            if isinstance(v, Mem):
                v = v.base
            if isinstance(v, Sym):
                out.append((v, o.space))
        return out

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


VAL = (Reg, Imm)
REG = (Reg,)
MEM = (Mem,)

__all__ = ["Instruction", "Slot", "Opnd", "INT_CONST", "INSTRUCTION_CLASSES", "SYNTAX", "PRODUCES", "syntax",
           "TYPE_BITS", "REG_TYPES", "Kind"]
