"""Atomic read-modify-write and reductions on global and shared memory: atom and red (PTX ISA).

    atom{.sem}{.scope}.space.op.type  d, [a], b;        op add|min|max|inc|dec|and|or|xor|exch
    atom{.sem}{.scope}.space.cas.type d, [a], b, c;
    red{.sem}{.scope}.space.op.type   [a], b;           op add|min|max|inc|dec|and|or|xor

space .global or .shared (::cta); sem .relaxed|.acquire|.release|.acq_rel and scope
.cta|.cluster|.gpu|.sys are accepted and printed (the functional model is sequentially consistent:
every lane's operation is applied in issue order, lanes in lane order). The space picks the class
and its timing class: an atom returns a value, so it is costed as the space's load (the warp waits
for the round trip: LD_GLOBAL / LD_SHARED); a red returns nothing and is costed as the space's
store (ST_GLOBAL / ST_SHARED). [inferred] The L2/smem read-modify-write itself is not separately
modelled; per-opcode costs come later from microbenchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from isa.ir.operands import Imm, Mem, Reg, Sym
from isa.ir.ops.base import Instruction, Kind, _fail, _is, _one_of, syntax

ATOM_TYPES: dict[str, tuple[str, ...]] = {
    "add": ("u32", "s32", "u64", "f32", "f64"),
    "min": ("u32", "s32", "u64", "s64"), "max": ("u32", "s32", "u64", "s64"),
    "inc": ("u32",), "dec": ("u32",),
    "and": ("b32", "b64"), "or": ("b32", "b64"), "xor": ("b32", "b64"),
    "exch": ("b32", "b64"), "cas": ("b32", "b64"),
}
"""op -> the types PTX ISA (atom/red, sm_90 without the .f16/.bf16/.b128 forms) allows."""

RED_OPS = tuple(op for op in ATOM_TYPES if op not in ("exch", "cas"))
SEMS = ("relaxed", "acquire", "release", "acq_rel")
SCOPES = ("cta", "cluster", "gpu", "sys")
_RULE = "PTX ISA, atom/red: " + "; ".join(f".{op} {'/'.join('.' + t for t in ts)}" for op, ts in ATOM_TYPES.items())


@dataclass(frozen=True)
class _Atomic(Instruction):
    """Fields and checks shared by atom and red (see the module docstring)."""

    family_syntax: ClassVar[bool] = True
    rule: ClassVar[str] = _RULE
    space: ClassVar[str] = ""
    _ops: ClassVar[tuple[str, ...]] = tuple(ATOM_TYPES)
    _coerce_fields: ClassVar = ("b", "c")
    op: str
    type: str
    addr: Mem
    b: Reg | Imm
    c: Reg | Imm | None = None
    sem: str | None = None
    scope: str | None = None

    def _check(self) -> None:
        _one_of(self, "op", self.op, self._ops, self.rule)
        _one_of(self, f"type (for .{self.op})", self.type, ATOM_TYPES[self.op], self.rule)
        _one_of(self, "sem", self.sem, (None,) + SEMS, self.rule)
        _one_of(self, "scope", self.scope, (None,) + SCOPES, self.rule)
        _is(self, "addr", self.addr, (Mem,))
        _is(self, "b", self.b, (Reg, Imm))
        if (self.op == "cas") != (self.c is not None):
            _fail(self, ".cas takes a compare value b and a new value c; other operations take only b", self.rule)
        if self.c is not None:
            _is(self, "c", self.c, (Reg, Imm))

    def _head(self) -> str:
        parts = [self.mnemonic.split(".")[0]] + [x for x in (self.sem, self.scope) if x]
        return ".".join(parts + [self.space, self.op, self.type])

    def opcode(self) -> str:
        return self._head()

    def typed_registers(self) -> list:
        out = [(self.addr.base, "addr64" if self.space == "global" else "addr"), (self.b, ("of", self.type, False))]
        return out + ([(self.c, ("of", self.type, False))] if self.c is not None else [])

    def symbol_uses(self) -> list:
        return [(self.addr.base, self.space)] if isinstance(self.addr.base, Sym) else []


@dataclass(frozen=True)
class _Atom(_Atomic):
    _writes_fields: ClassVar = ("dst",)
    dst: Reg = None  # type: ignore[assignment]

    def operands(self) -> tuple:
        return tuple(x for x in (self.dst, self.addr, self.b, self.c) if x is not None)

    def _operand_text(self, abbreviate: bool) -> str:
        return ", ".join(x.text() for x in self.operands())

    def typed_registers(self) -> list:
        return [(self.dst, ("of", self.type, False))] + super().typed_registers()

    def _check(self) -> None:
        super()._check()
        _is(self, "dst", self.dst, (Reg,))


@dataclass(frozen=True)
class _Red(_Atomic):
    _ops: ClassVar[tuple[str, ...]] = RED_OPS

    def operands(self) -> tuple:
        return (self.addr, self.b)

    def _operand_text(self, abbreviate: bool) -> str:
        return f"{self.addr.text()}, {self.b.text()}"


TIMING = {("atom", "global"): Kind.LD_GLOBAL, ("atom", "shared"): Kind.LD_SHARED,
          ("red", "global"): Kind.ST_GLOBAL, ("red", "shared"): Kind.ST_SHARED}
"""Timing class per (family, space): an atom is costed as the space's load (the warp waits for the
round trip), a red as its store (the warp goes on); see the module docstring."""


def _declare(base: type, space: str, doc: str, examples: tuple) -> type:
    """The concrete class of `base` (_Atom or _Red) on `space`: `AtomGlobal` ... `RedShared`, opcode
    `{atom|red}.{space}`, its timing class from TIMING."""
    family = "atom" if base is _Atom else "red"
    name = family.capitalize() + space.capitalize()
    cls = type(name, (base,), {"__doc__": doc, "__module__": __name__, "__qualname__": name,
                               "mnemonic": f"{family}.{space}", "timing_class": TIMING[family, space],
                               "space": space, "examples": examples})
    return dataclass(frozen=True)(cls)


AtomGlobal = _declare(_Atom, "global", "`atom.global.op.type d, [a], b{, c};` d = the old value (timing: LD_GLOBAL, "
                      "a round trip).", ("atom.global.add.u32 %r0, [%rd0], 1;",
                                         "atom.global.cas.b32 %r0, [%rd0+4], %r1, %r2;",
                                         "atom.relaxed.gpu.global.add.f32 %f0, [%rd0], %f1;",
                                         "atom.global.exch.b64 %rd1, [%rd0], %rd2;"))
AtomShared = _declare(_Atom, "shared", "`atom.shared.op.type d, [a], b{, c};` d = the old value (timing: LD_SHARED).",
                      ("atom.shared.max.s32 %r0, [%r1], %r2;", "atom.shared.inc.u32 %r0, [buf+8], 15;"))
RedGlobal = _declare(_Red, "global", "`red.global.op.type [a], b;` no result (timing: ST_GLOBAL, the warp goes on).",
                     ("red.global.add.u32 [%rd0], 1;", "red.release.gpu.global.add.f32 [%rd0+8], %f1;"))
RedShared = _declare(_Red, "shared", "`red.shared.op.type [a], b;` no result (timing: ST_SHARED).",
                     ("red.shared.or.b32 [%r0], %r1;", "red.shared.min.u64 [buf], %rd1;"))
CLASSES = {("atom", "global"): AtomGlobal, ("atom", "shared"): AtomShared,
           ("red", "global"): RedGlobal, ("red", "shared"): RedShared}


_SPACE = {"global": "global", "shared": "shared", "shared::cta": "shared"}


def _common(c, ops):
    sem = c.take(*SEMS)
    scope = c.take(*SCOPES)
    space = _SPACE[c.need(tuple(_SPACE), "state space")]
    op = c.need(ops, "operation")
    ty = c.need(ATOM_TYPES[op], f"type for .{op}")
    c.done()
    return dict(sem=sem, scope=scope, op=op, type=ty), space


@syntax("atom", produces=(AtomGlobal, AtomShared))
def _parse_atom(c):
    kw, space = _common(c, tuple(ATOM_TYPES))
    c.count(4 if kw["op"] == "cas" else 3)
    cval = c.val(3) if kw["op"] == "cas" else None
    return CLASSES["atom", space](addr=c.mem(1), b=c.val(2), c=cval, dst=c.reg(0), **kw)


@syntax("red", produces=(RedGlobal, RedShared))
def _parse_red(c):
    kw, space = _common(c, RED_OPS)
    c.count(2)
    return CLASSES["red", space](addr=c.mem(0), b=c.val(1), **kw)
