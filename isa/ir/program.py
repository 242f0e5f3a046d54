"""A kernel of the hopsim IR: parameters, register and shared declarations, and a body.

    Kernel(name, params=(Param("A", "u64"), Param("tmapA", "tmap")),
           regs=(RegDecl("u32", "%r", 16), RegDecl("pred", "%p", 4)),
           shared=(SharedDecl("smem", 1024, 65536),),
           body=(LabelDef("LOOP"), Add("u32", Reg("%r0"), Reg("%r0"), Imm(1)), ...))

Everything is frozen and compared by value (`parse(to_text(k)) == k`). `Kernel.lines` and
`Kernel.filename` (source positions from the parser) and `Kernel.cache` (a dict where the machine
may keep its compiled form) take no part in equality.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from isa.ir.instructions import REG_TYPES, Instruction
from isa.ir.operands import IRError, Reg, _IDENT, _REG_NAME

PARAM_TYPES = ("u32", "s32", "u64", "s64", "b32", "b64", "f32", "tmap")
"""Types of a `.param`; `.tmap` is a TMA tensor map (CUtensorMap, 128 bytes, 64-byte aligned)."""

__all__ = ["Param", "RegDecl", "SharedDecl", "LabelDef", "Kernel", "PARAM_TYPES", "REG_COUNT_MAX"]

REG_COUNT_MAX = 65536
"""Most registers one `.reg` declaration or one register range (%a0..%a63) may name (virtual
registers; far above the 255 per thread of the hardware, far below what would exhaust memory)."""


@dataclass(frozen=True)
class Param:
    """A kernel parameter `.param .u64 A_ptr` (type one of PARAM_TYPES)."""

    name: str
    type: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _IDENT.match(self.name):
            raise IRError(f".param name {self.name!r} is invalid: a letter/_/$ then letters, digits, _ or $")
        if self.type not in PARAM_TYPES:
            raise IRError(f".param {self.name}: type {self.type!r} is invalid; allowed: {', '.join(PARAM_TYPES)}")

    @property
    def nbytes(self) -> int:
        return 128 if self.type == "tmap" else (8 if self.type.endswith("64") else 4)

    def text(self) -> str:
        return f".param .{self.type} {self.name}"


@dataclass(frozen=True)
class RegDecl:
    """`.reg .u32 %r<16>` (name "%r", count 16: %r0..%r15) or `.reg .u32 %x` (count None)."""

    type: str
    name: str
    count: int | None = None

    def __post_init__(self) -> None:
        if self.type not in REG_TYPES:
            raise IRError(f".reg {self.name}: type {self.type!r} is invalid; allowed: {', '.join(REG_TYPES)} "
                          "(PTX ISA: registers are at least 16 bits, or .pred)")
        if not isinstance(self.name, str) or not _REG_NAME.match(self.name):
            raise IRError(f".reg name {self.name!r} is invalid: '%' then a letter/_/$ and letters, digits, _, $")
        if self.count is not None and (isinstance(self.count, bool) or not isinstance(self.count, int)
                                       or not 1 <= self.count <= REG_COUNT_MAX):
            raise IRError(f".reg {self.name}<{self.count}>: the count must be an integer 1..{REG_COUNT_MAX}")

    def names(self) -> tuple[str, ...]:
        """Register names this declaration creates."""
        if self.count is None:
            return (self.name,)
        return tuple(f"{self.name}{i}" for i in range(self.count))

    def regs(self) -> tuple[Reg, ...]:
        return tuple(Reg(n) for n in self.names())

    def text(self) -> str:
        n = f"<{self.count}>" if self.count is not None else ""
        return f".reg .{self.type} {self.name}{n}"


@dataclass(frozen=True)
class SharedDecl:
    """`.shared .align 1024 .b8 smem[65536]`: a static shared buffer (align a power of two)."""

    name: str
    align: int
    nbytes: int

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _IDENT.match(self.name):
            raise IRError(f".shared name {self.name!r} is invalid: a letter/_/$ then letters, digits, _ or $")
        if isinstance(self.align, bool) or not isinstance(self.align, int) or self.align < 1 \
                or self.align & (self.align - 1):
            raise IRError(f".shared {self.name}: .align {self.align!r} must be a power of two")
        if isinstance(self.nbytes, bool) or not isinstance(self.nbytes, int) or self.nbytes < 1:
            raise IRError(f".shared {self.name}: size {self.nbytes!r} must be a positive number of bytes")

    def text(self) -> str:
        return f".shared .align {self.align} .b8 {self.name}[{self.nbytes}]"


@dataclass(frozen=True)
class LabelDef:
    """`NAME:` a position in the body that `bra NAME` jumps to."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _IDENT.match(self.name):
            raise IRError(f"label {self.name!r} is invalid: a letter/_/$ then letters, digits, _ or $")

    def text(self) -> str:
        return f"{self.name}:"


@dataclass(frozen=True)
class Kernel:
    """One kernel: name, parameters, declarations and a body of instructions and label definitions."""

    name: str
    params: tuple[Param, ...] = ()
    regs: tuple[RegDecl, ...] = ()
    shared: tuple[SharedDecl, ...] = ()
    body: tuple[Instruction | LabelDef, ...] = ()
    lines: tuple[int, ...] = field(default=(), compare=False, repr=False)
    """Source line of each body item (from the parser), else ()."""
    filename: str = field(default="<string>", compare=False, repr=False)
    cache: dict = field(default_factory=dict, init=False, compare=False, repr=False, hash=False)
    """Scratch space for the machine (e.g. the compiled form); not part of the kernel's value."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _IDENT.match(self.name):
            raise IRError(f".kernel name {self.name!r} is invalid: a letter/_/$ then letters, digits, _ or $")
        for attr in ("params", "regs", "shared", "body", "lines"):
            object.__setattr__(self, attr, tuple(getattr(self, attr)))
        for item in self.body:
            if not isinstance(item, (Instruction, LabelDef)):
                raise IRError(f"kernel {self.name}: body item {item!r} is neither an Instruction nor a LabelDef")

    def __hash__(self) -> int:
        return hash((self.name, self.params, self.regs, self.shared, self.body))

    # ------------------------------------------------------------------ derived views
    def labels(self) -> dict[str, int]:
        """Label name -> index in `body` of its LabelDef (a branch continues at that index)."""
        return dict(self._labels)

    @cached_property
    def _labels(self) -> dict[str, int]:
        return {item.name: i for i, item in enumerate(self.body) if isinstance(item, LabelDef)}

    def instructions(self) -> list[tuple[int, Instruction]]:
        """(index in body, instruction) for every instruction (labels skipped)."""
        return [(i, x) for i, x in enumerate(self.body) if isinstance(x, Instruction)]

    def reg_types(self) -> dict[str, str]:
        """Register name -> declared type."""
        return dict(self._reg_types)

    @cached_property
    def _reg_types(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for decl in self.regs:
            for n in decl.names():
                out[n] = decl.type
        return out

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def shared_layout(self) -> dict[str, int]:
        """Shared buffer name -> byte offset in the CTA's shared window (declaration order, each
        aligned to its `.align`, starting at 0)."""
        return dict(self._shared_layout[0])

    @cached_property
    def _shared_layout(self) -> tuple[dict[str, int], int]:
        off, out = 0, {}
        for s in self.shared:
            off = (off + s.align - 1) // s.align * s.align
            out[s.name] = off
            off += s.nbytes
        return out, off

    @property
    def static_smem_bytes(self) -> int:
        """Bytes of static shared memory (end of the last buffer in `shared_layout`)."""
        return self._shared_layout[1]

    def line_of(self, index: int) -> int | None:
        """Source line of body[index] if the kernel was parsed, else None."""
        return self.lines[index] if index < len(self.lines) else None
