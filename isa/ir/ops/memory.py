"""Loads and stores: ld/st of the .global, .shared (::cta) and .param spaces, scalar or .v2/.v4.

The space picks the class (`ld.global` -> LdGlobal), so the `ld` and `st` heads are parsed by one
family hook each. Timing classes: LD_/ST_GLOBAL, LD_/ST_SHARED; ld.param is ALU (a kernel
parameter read, no memory traffic modelled).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from isa.ir.operands import Mem, Reg, RegVec, Sym
from isa.ir.ops.base import MEM, MEM_TYPES, TYPE_BITS, Instruction, Kind, Opnd, _fail, _is, _one_of, syntax

_DATA = (Reg, RegVec)


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
class _Access(Instruction):
    """Shared checks and text of ld/st: `op.<space>{.vN}.type`."""

    family_syntax: ClassVar[bool] = True
    _data: ClassVar[str] = ""
    _addr_rule: ClassVar[str] = "addr"      # register type rule of the address base

    def _check(self) -> None:
        data = getattr(self, self._data)
        if self.vec == 0:
            object.__setattr__(self, "vec", _vec_of(data))
        if isinstance(data, RegVec) and len(data) == 1 and self.vec == 1:
            object.__setattr__(self, self._data, data.regs[0])
        _is(self, "addr", self.addr, (Mem,))
        _check_vec(self, self.type, self.vec, getattr(self, self._data), self.rule)

    def opcode(self) -> str:
        v = f".v{self.vec}" if self.vec > 1 else ""
        return f"{self.mnemonic}{v}.{self.type}"

    def typed_registers(self) -> list:
        data = getattr(self, self._data)
        regs = data.regs if isinstance(data, RegVec) else (data,)
        return [(r, ("of", self.type, True)) for r in regs] + [(self.addr.base, self._addr_rule)]


@dataclass(frozen=True)
class _Load(_Access):
    """`ld.<space>{.vN}.type d, [a];`"""

    rule: ClassVar[str] = "PTX ISA, ld"
    _data: ClassVar[str] = "dst"
    _writes_fields: ClassVar = ("dst",)
    _coerce_fields: ClassVar = ("dst",)
    type: str
    dst: Reg | RegVec
    addr: Mem
    vec: int = 0


@dataclass(frozen=True)
class _Store(_Access):
    """`st.<space>{.vN}.type [a], b;`"""

    rule: ClassVar[str] = "PTX ISA, st"
    _data: ClassVar[str] = "src"
    _coerce_fields: ClassVar = ("src",)
    type: str
    addr: Mem
    src: Reg | RegVec
    vec: int = 0


_LD_SPEC = (Opnd("dst", _DATA), Opnd("addr", MEM, space="shared"))
_ST_SPEC = (Opnd("addr", MEM, space="shared"), Opnd("src", _DATA))


@dataclass(frozen=True)
class LdGlobal(_Load):
    """`ld.global{.v2,.v4}.type d, [a];` vectors up to 16 bytes."""

    mnemonic: ClassVar[str] = "ld.global"
    timing_class: ClassVar[str] = Kind.LD_GLOBAL
    operand_spec: ClassVar = (Opnd("dst", _DATA), Opnd("addr", MEM, space="global"))
    examples: ClassVar = ("ld.global.u32 %r0, [%rd0];", "ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%rd0+16];")
    _addr_rule: ClassVar[str] = "addr64"


@dataclass(frozen=True)
class StGlobal(_Store):
    """`st.global{.v2,.v4}.type [a], b;` vectors up to 16 bytes."""

    mnemonic: ClassVar[str] = "st.global"
    timing_class: ClassVar[str] = Kind.ST_GLOBAL
    operand_spec: ClassVar = (Opnd("addr", MEM, space="global"), Opnd("src", _DATA))
    examples: ClassVar = ("st.global.f32 [%rd0], %f0;", "st.global.v2.u64 [%rd0], {%rd1, %rd2};")
    _addr_rule: ClassVar[str] = "addr64"


@dataclass(frozen=True)
class LdShared(_Load):
    """`ld.shared{.v2,.v4}.type d, [a];` (the CTA's shared window; `.shared::cta` accepted)."""

    mnemonic: ClassVar[str] = "ld.shared"
    timing_class: ClassVar[str] = Kind.LD_SHARED
    operand_spec: ClassVar = _LD_SPEC
    examples: ClassVar = ("ld.shared.u32 %r0, [%r1+4];", "ld.shared.v2.b32 {%r0, %r1}, [buf];")


@dataclass(frozen=True)
class StShared(_Store):
    """`st.shared{.v2,.v4}.type [a], b;`"""

    mnemonic: ClassVar[str] = "st.shared"
    timing_class: ClassVar[str] = Kind.ST_SHARED
    operand_spec: ClassVar = _ST_SPEC
    examples: ClassVar = ("st.shared.b32 [%r0], %r1;",)


@dataclass(frozen=True)
class LdParam(_Load):
    """`ld.param.type d, [param];` reads a kernel parameter (the address is a param symbol)."""

    mnemonic: ClassVar[str] = "ld.param"
    timing_class: ClassVar[str] = Kind.ALU
    operand_spec: ClassVar = (Opnd("dst", _DATA), Opnd("addr", MEM, space="param"))
    examples: ClassVar = ("ld.param.u64 %rd0, [a_ptr];", "ld.param.u32 %r0, [n+4];")

    def _check(self) -> None:
        super()._check()
        if not isinstance(self.addr.base, Sym):
            _fail(self, "the address must be a parameter name [param] or [param+off]",
                  "PTX ISA, kernel parameters are read with ld.param [name]")


_SPACES = {"global": "global", "shared": "shared", "shared::cta": "shared", "param": "param"}
_LD = {"global": LdGlobal, "shared": LdShared, "param": LdParam}
_ST = {"global": StGlobal, "shared": StShared}


@syntax("ld", produces=(LdGlobal, LdShared, LdParam))
def _parse_ld(c):
    space = c.need(("global", "shared", "shared::cta", "param"), "state space")
    cls = _LD[_SPACES[space]]
    v = c.take("v2", "v4")
    ty = c.type(MEM_TYPES)
    c.done()
    c.count(2)
    dst = c.reg_or_vec(0)
    return cls(ty, dst, c.mem(1), int(v[1]) if v else 1)


@syntax("st", produces=(StGlobal, StShared))
def _parse_st(c):
    space = c.need(("global", "shared", "shared::cta"), "state space")
    cls = _ST[_SPACES[space]]
    v = c.take("v2", "v4")
    ty = c.type(MEM_TYPES)
    c.done()
    c.count(2)
    return cls(ty, c.mem(0), c.reg_or_vec(1), int(v[1]) if v else 1)
