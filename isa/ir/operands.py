"""Operands of the hopsim IR: registers, immediates, special registers, symbols, memory, labels.

Every operand is a frozen, hashable dataclass with `text()` giving its PTX spelling:

    Reg("%r0")                      %r0            a declared register (name includes the '%')
    Imm(16), Imm(1.5)               16, 1.5        an integer or float immediate
    SReg("%tid.x")                  %tid.x         a special register (read-only, `mov` source)
    Sym("smem")                     smem           a .shared buffer or a .param name
    Mem(Reg("%r3"), 16)             [%r3+16]       an address: base register or symbol + byte offset
    Mem(Sym("smem"))                [smem]
    Label("LOOP")                   LOOP           a branch target
    RegVec((Reg("%a0"), ...))       {%a0, %a1}     a register vector (printed {%a0..%a63} when a range)
    Guard(Reg("%p0"), negate=True)  @!%p0          an instruction predicate
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass

from isa.errors import HopsimError

__all__ = [
    "IRError", "Reg", "Imm", "SReg", "Sym", "Mem", "Label", "RegVec", "Guard",
    "Operand", "Value", "SPECIAL_REGISTERS", "as_operand",
]


class IRError(HopsimError, ValueError):
    """An illegal IR construct: the message names the instruction and cites the PTX rule."""


SPECIAL_REGISTERS: frozenset[str] = frozenset({
    "%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z",
    "%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z",
    "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%clock", "%clock64", "%globaltimer",
    "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt",
    "%dynamic_smem_size", "%total_smem_size", "%cluster_ctarank", "%cluster_nctarank",
})
"""Special registers the machine provides (PTX ISA). `%clock64` and `%globaltimer` are 64-bit, the
rest 32-bit."""

SPECIAL_64 = frozenset({"%clock64", "%globaltimer"})

_REG_NAME = re.compile(r"^%[A-Za-z_$][A-Za-z0-9_$]*$")
_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_TRAILING_NUM = re.compile(r"^(.*?)(\d+)$")


@dataclass(frozen=True)
class Reg:
    """A register, by its declared name (with the leading '%'): `Reg("%r0")`, `Reg("%acc12")`."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _REG_NAME.match(self.name) or self.name in SPECIAL_REGISTERS:
            raise IRError(f"register name {self.name!r} is invalid: '%' followed by a letter/_/$ "
                          "then letters, digits, _ or $ (PTX ISA, identifiers), not a special register")

    def text(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Imm:
    """An immediate: an int (any width; the instruction type gives its bits) or a float."""

    value: int | float

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
            raise IRError(f"immediate {self.value!r} is invalid: an int or a float")

    @property
    def is_float(self) -> bool:
        return isinstance(self.value, float)

    def text(self) -> str:
        v = self.value
        if isinstance(v, float):
            if math.isfinite(v):
                return repr(v)
            return "0d%016X" % struct.unpack("<Q", struct.pack("<d", v))[0]
        return hex(v) if v >= 0x10000 else str(v)

    def __str__(self) -> str:
        return self.text()


@dataclass(frozen=True)
class SReg:
    """A special register such as `%tid.x`, `%laneid`, `%clock64` (see `SPECIAL_REGISTERS`)."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in SPECIAL_REGISTERS:
            raise IRError(f"special register {self.name!r} is unknown: one of {', '.join(sorted(SPECIAL_REGISTERS))}")

    @property
    def bits(self) -> int:
        return 64 if self.name in SPECIAL_64 else 32

    def text(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Sym:
    """A named address: a `.shared` buffer or a `.param` (a tensor map is a `.tmap` param)."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _IDENT.match(self.name):
            raise IRError(f"symbol name {self.name!r} is invalid: a letter/_/$ then letters, digits, _ or $")

    def text(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Mem:
    """A memory operand `[base+offset]`; base is a register holding an address or a symbol."""

    base: Reg | Sym
    offset: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.base, (Reg, Sym)):
            raise IRError(f"memory base {self.base!r} is invalid: a register or a symbol ([%r1+8], [smem+8])")
        if isinstance(self.offset, bool) or not isinstance(self.offset, int):
            raise IRError(f"memory offset {self.offset!r} is invalid: an integer byte offset")

    def text(self) -> str:
        if self.offset > 0:
            return f"[{self.base.text()}+{self.offset}]"
        if self.offset < 0:
            return f"[{self.base.text()}-{-self.offset}]"
        return f"[{self.base.text()}]"

    def __str__(self) -> str:
        return self.text()


@dataclass(frozen=True)
class Label:
    """A branch target (the name of a `LabelDef` in the kernel body)."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _IDENT.match(self.name):
            raise IRError(f"label name {self.name!r} is invalid: a letter/_/$ then letters, digits, _ or $")

    def text(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class RegVec:
    """A vector of registers `{%a0, %a1, ...}` (wgmma fragments, ld/st.v2/.v4, ldmatrix)."""

    regs: tuple[Reg, ...]

    def __post_init__(self) -> None:
        regs = tuple(self.regs)
        if not regs or not all(isinstance(r, Reg) for r in regs):
            raise IRError(f"register vector {self.regs!r} is invalid: one or more Reg")
        object.__setattr__(self, "regs", regs)

    def __len__(self) -> int:
        return len(self.regs)

    def __iter__(self):
        return iter(self.regs)

    def __getitem__(self, i):
        return self.regs[i]

    def text(self, abbreviate: bool = True) -> str:
        """`{%a0, %a1}`; with `abbreviate`, runs of 3+ consecutive names print as `%a0..%a63`."""
        if not abbreviate:
            return "{" + ", ".join(r.name for r in self.regs) + "}"
        parts: list[str] = []
        i, n = 0, len(self.regs)
        while i < n:
            m = _TRAILING_NUM.match(self.regs[i].name)
            j = i
            if m:
                prefix, start = m.group(1), int(m.group(2))
                while j + 1 < n and self.regs[j + 1].name == f"{prefix}{start + j + 1 - i}" \
                        and str(start) == m.group(2):
                    j += 1
            if j - i >= 2:
                parts.append(f"{self.regs[i].name}..{self.regs[j].name}")
            else:
                parts.extend(r.name for r in self.regs[i:j + 1])
            i = j + 1
        return "{" + ", ".join(parts) + "}"

    def __str__(self) -> str:
        return self.text()


@dataclass(frozen=True)
class Guard:
    """An instruction predicate: `@%p` (negate=False) or `@!%p` (negate=True)."""

    pred: Reg
    negate: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.pred, Reg):
            raise IRError(f"guard {self.pred!r} is invalid: a predicate register")

    def text(self) -> str:
        return f"@{'!' if self.negate else ''}{self.pred.name}"

    def __str__(self) -> str:
        return self.text()


Value = Reg | Imm
Operand = Reg | Imm | SReg | Sym | Mem | Label | RegVec


def as_operand(x):
    """Coerce Python values: int/float -> Imm, a tuple/list of Reg -> RegVec; operands unchanged."""
    if isinstance(x, bool):
        return Imm(int(x))
    if isinstance(x, (int, float)):
        return Imm(x)
    if isinstance(x, (tuple, list)) and x and all(isinstance(r, Reg) for r in x):
        return RegVec(tuple(x))
    return x
