"""KernelBuilder: write IR kernels from Python.

    b = KernelBuilder("axpy")
    x = b.param("x_ptr", "u64")
    tid, n = b.reg("u32"), b.reg("u32")            # %r0, %r1 (declared as .reg .u32 %r<N>)
    acc = b.regs("f32", 64, "%acc")                # RegVec %acc0..%acc63 (.reg .f32 %acc<64>)
    b.mov("u32", tid, SReg("%tid.x"))
    with b.loop(n, stop=8) as top:                 # mov n,0; top: ...; add n,n,1; setp.lt p; @p bra top
        b.add("u32", tid, tid, 1)
    p = b.reg("pred")
    with b.guarded(p):                             # every instruction emitted here gets @%p
        b.exit()
    kernel = b.build()                             # a frozen Kernel (checked by verify unless check=False)

There is one method per instruction class, named in snake_case (`wgmma_mma_async`,
`mbarrier_try_wait_parity`, `cp_async_bulk_tensor_load`; `and_`, `or_`, `not_` for the Python
keywords). Each takes the class's arguments plus `guard=`, and returns the instruction.
Plain ints/floats become `Imm`, tuples of registers `RegVec`.
"""

from __future__ import annotations

import dataclasses
import keyword
import re
from contextlib import contextmanager

from isa.ir import instructions as I
from isa.ir.operands import Guard, Imm, IRError, Label, Mem, Reg, RegVec, Sym
from isa.ir.program import Kernel, LabelDef, Param, RegDecl, SharedDecl
from isa.ir.verify import check as _check

__all__ = ["KernelBuilder", "AUTO_PREFIX"]

AUTO_PREFIX = {
    "pred": "%p", "b16": "%bh", "b32": "%b", "b64": "%bd", "u16": "%rs", "u32": "%r", "u64": "%rd",
    "s16": "%ss", "s32": "%s", "s64": "%sd", "f16": "%h", "bf16": "%bf", "f16x2": "%hh",
    "bf16x2": "%bb", "f32": "%f", "f64": "%fd",
}
"""Name prefix of the automatically numbered registers of each type."""


def _method_name(cls_name: str) -> str:
    s = re.sub(r"(?<!^)(?=[A-Z])", "_", cls_name).lower()
    return s + "_" if keyword.iskeyword(s) else s


class KernelBuilder:
    """Builds a Kernel step by step: declarations, labels, instructions (see the module doc)."""

    def __init__(self, name: str):
        self.name = name
        self._params: list[Param] = []
        self._shared: list[SharedDecl] = []
        self._named_regs: list[RegDecl] = []
        self._auto: dict[str, int] = {}          # type -> registers allocated
        self._prefix: dict[str, str] = {}        # type -> pool prefix set by reg_pool
        self._body: list = []
        self._guards: list[Guard] = []
        self._labels: dict[str, bool] = {}        # name -> placed
        self._nlabel = 0

    # ------------------------------------------------------------------ declarations
    def param(self, name: str, type: str) -> Sym:
        """Declare `.param .type name`; returns the symbol (use `Mem(sym)` with ld.param)."""
        self._params.append(Param(name, type))
        return Sym(name)

    def shared(self, name: str, nbytes: int, align: int = 16) -> Sym:
        """Declare `.shared .align A .b8 name[nbytes]`; returns the symbol."""
        self._shared.append(SharedDecl(name, align, nbytes))
        return Sym(name)

    def reg(self, type: str, name: str | None = None) -> Reg:
        """A new register: named (`.reg .type name`) or the next of the type's pool (`%r7`)."""
        if name is not None:
            self._named_regs.append(RegDecl(type, name))
            return Reg(name)
        if type not in AUTO_PREFIX:
            raise IRError(f"register type {type!r} is invalid; allowed: {', '.join(AUTO_PREFIX)}")
        i = self._auto.get(type, 0)
        self._auto[type] = i + 1
        return Reg(f"{self._prefix.get(type, AUTO_PREFIX[type])}{i}")

    def regs(self, type: str, n: int, name: str | None = None) -> RegVec:
        """n new registers as a RegVec: `name0..name{n-1}` (`.reg .type name<n>`) or from the pool."""
        if name is not None:
            self._named_regs.append(RegDecl(type, name, n))
            return RegVec(tuple(Reg(f"{name}{i}") for i in range(n)))
        return RegVec(tuple(self.reg(type) for _ in range(n)))

    # ------------------------------------------------------------------ labels and control flow
    def label(self, name: str | None = None) -> Label:
        """A new label (not placed yet: see `place`)."""
        if name is None:
            name = f"L{self._nlabel}"
            self._nlabel += 1
            while name in self._labels:
                name = f"L{self._nlabel}"
                self._nlabel += 1
        if name in self._labels:
            raise IRError(f"label {name!r} is already defined")
        self._labels[name] = False
        return Label(name)

    def place(self, label: Label) -> Label:
        """Put `label:` at the current position."""
        if self._labels.get(label.name) is None:
            self._labels[label.name] = False
        if self._labels[label.name]:
            raise IRError(f"label {label.name!r} is placed twice")
        self._labels[label.name] = True
        self._body.append(LabelDef(label.name))
        return label

    def here(self, name: str | None = None) -> Label:
        """A new label placed at the current position."""
        return self.place(self.label(name))

    @contextmanager
    def guarded(self, pred: Reg, negate: bool = False):
        """Every instruction emitted inside gets the guard `@pred` (`@!pred` with negate)."""
        self._guards.append(Guard(pred, negate))
        try:
            yield
        finally:
            self._guards.pop()

    @contextmanager
    def loop(self, counter: Reg, stop, start=0, step=1, type: str = "u32", name: str | None = None):
        """A counted loop `for counter in range(start, stop, step)` (body runs at least once):

            mov.type counter, start;  TOP: <body>  add.type counter, counter, step;
            setp.lt.type %p, counter, stop;  @%p bra TOP;
        """
        self.mov(type, counter, start)
        top = self.here(name)
        yield top
        self.add(type, counter, counter, step)
        p = self.reg("pred")
        self.setp("lt", type, p, counter, stop)
        self.bra(top, guard=Guard(p))

    def wait_parity(self, addr: Mem, parity, pred: Reg | None = None) -> Reg:
        """Spin until the mbarrier phase with `parity` completed:
        `W: mbarrier.try_wait.parity p, [addr], parity; @!p bra W;`"""
        p = pred if pred is not None else self.reg("pred")
        top = self.here()
        self.mbarrier_try_wait_parity(p, addr, parity)
        self.bra(top, guard=Guard(p, True))
        return p

    def reg_pools(self, *pools: tuple[str, str]) -> None:
        """Declare the automatically numbered pools now, in this order, with these name prefixes:
        `reg_pools(("u32", "%r"), ("b32", "%h"))` makes `reg("b32")` give %h0, %h1, ... and
        puts `.reg .u32 %r<N>` before `.reg .b32 %h<M>` (a pool left empty is not declared).
        Call it before the first `reg` of those types."""
        for type, prefix in pools:
            if type not in AUTO_PREFIX:
                raise IRError(f"register type {type!r} is invalid; allowed: {', '.join(AUTO_PREFIX)}")
            if self._auto.get(type):
                raise IRError(f"reg_pools: registers of type {type!r} were already allocated")
            if not isinstance(prefix, str) or not re.match(r"^%[A-Za-z_$][A-Za-z_$]*$", prefix):
                raise IRError(f"reg_pools: prefix {prefix!r} is invalid: '%' then letters, _ or $")
            self._prefix[type] = prefix
            self._auto[type] = 0

    # ------------------------------------------------------------------ instructions
    def emit(self, instr: I.Instruction) -> I.Instruction:
        """Append an instruction (the innermost `guarded` predicate applies if it has none)."""
        if not isinstance(instr, I.Instruction):
            raise IRError(f"emit: {instr!r} is not an Instruction")
        if instr.guard is None and self._guards:
            instr = dataclasses.replace(instr, guard=self._guards[-1])
        self._body.append(instr)
        return instr

    @staticmethod
    def mem(base: Reg | Sym, offset: int = 0) -> Mem:
        return Mem(base, offset)

    # ------------------------------------------------------------------ result
    def reg_decls(self) -> tuple[RegDecl, ...]:
        auto = tuple(RegDecl(t, self._prefix.get(t, AUTO_PREFIX[t]), n) for t, n in self._auto.items() if n)
        return auto + tuple(self._named_regs)

    def build(self, check: bool = True) -> Kernel:
        """The frozen Kernel; with `check`, `verify.check` raises on any error diagnostic."""
        unplaced = [n for n, placed in self._labels.items() if not placed]
        if unplaced:
            raise IRError(f"kernel {self.name}: labels never placed: {', '.join(unplaced)}")
        k = Kernel(self.name, tuple(self._params), self.reg_decls(), tuple(self._shared), tuple(self._body))
        if check:
            _check(k)
        return k


def _make_method(cls):
    def method(self, *args, guard: Guard | None = None, **kw):
        return self.emit(cls(*args, guard=guard, **kw))
    method.__name__ = _method_name(cls.__name__)
    method.__doc__ = f"Emit `{cls.__name__}` ({cls.mnemonic}).\n\n{cls.__doc__ or ''}"
    return method


for _cls in I.INSTRUCTION_CLASSES.values():
    setattr(KernelBuilder, _method_name(_cls.__name__), _make_method(_cls))

del _cls
_ = Imm  # re-exported for convenience in type hints
