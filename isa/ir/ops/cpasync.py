"""Non-bulk asynchronous copies global -> shared (sm_80+): cp.async (CP_ASYNC), cp.async.commit_group
(CP_ASYNC_COMMIT), cp.async.wait_group / cp.async.wait_all (CP_ASYNC_WAIT).

    cp.async.ca.shared.global [dst], [src], cp-size{, src-size};    cp-size 4, 8 or 16 (.ca)
    cp.async.cg.shared.global [dst], [src], 16{, src-size};          .cg: 16 only (L2 only, bypasses L1)
    cp.async.commit_group;            closes the thread's current cp.async group
    cp.async.wait_group N;            waits until at most N of the thread's committed groups are pending
    cp.async.wait_all;                = commit_group + wait_group 0

Each thread copies cp-size bytes; only the first src-size bytes (default cp-size) are read from
global memory and the rest of the destination is zero-filled (CUTLASS `cp_async_zfill`: src-size 0
for a predicated-off access). The copy is complete only after a wait: reading the destination
before is a race. Source: PTX ISA, "Data Movement and Conversion Instructions: cp.async",
"cp.async.commit_group", "cp.async.wait_group / cp.async.wait_all". Not modelled: the
.L2::cache_hint / .L2::{64,128,256}B prefetch qualifiers, .shared::cluster, the mbarrier-based
completion (cp.async.mbarrier.arrive).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from isa.ir.operands import Imm, Mem, Reg
from isa.ir.ops.base import INT_CONST, MEM, VAL, Instruction, Kind, Opnd, Slot, _fail, int_field, is_int
from isa.ir.ops.bulk import check_group_count

CP_ASYNC_RULE = "PTX ISA, cp.async: .ca with cp-size 4, 8 or 16, .cg with 16; src-size <= cp-size"


@dataclass(frozen=True)
class CpAsync(Instruction):
    """`cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size};` (module docstring)."""

    mnemonic: ClassVar[str] = "cp.async"
    timing_class: ClassVar[str] = Kind.CP_ASYNC
    rule: ClassVar[str] = CP_ASYNC_RULE
    modifiers: ClassVar = (Slot("cache", ("ca", "cg"), what="cache operator .ca or .cg", checked=True),
                           Slot(None, ("shared",), what="destination space .shared"),
                           Slot(None, ("global",), what="source space .global"))
    operand_spec: ClassVar = (Opnd("dst", MEM, rt="addr", space="shared"), Opnd("src", MEM, rt="addr64",
                                                                                 space="global"),
                              Opnd("size", INT_CONST, what="cp-size 4, 8 or 16"),
                              Opnd("src_size", VAL, optional=True, rt="u32", what="src-size: a register or an integer"))
    examples: ClassVar = ("cp.async.ca.shared.global [%r0], [%rd0], 16;", "cp.async.cg.shared.global [buf+16], [%rd2], 16, %r3;",
                          "cp.async.ca.shared.global [%r1], [%rd1+4], 4, 0;")
    _coerce_fields: ClassVar = ("src_size",)
    cache: str
    dst: Mem
    src: Mem
    size: int
    src_size: Reg | Imm | None = None

    def _check(self) -> None:
        self._check_declared()
        size = int_field(self, "size")
        if not is_int(size) or size not in (4, 8, 16):
            _fail(self, f"cp-size={size!r} is invalid; allowed: 4, 8, 16", self.rule)
        if self.cache == "cg" and size != 16:
            _fail(self, f".cg copies 16 bytes, not cp-size={size}", self.rule)
        s = self.src_size
        if isinstance(s, Imm) and (not is_int(s.value) or not 0 <= s.value <= size):
            _fail(self, f"src-size={s.value!r} must be an integer in 0..{size} (cp-size)", self.rule)


@dataclass(frozen=True)
class CpAsyncCommitGroup(Instruction):
    """`cp.async.commit_group;` closes the thread's current cp.async group (possibly empty)."""

    mnemonic: ClassVar[str] = "cp.async.commit_group"
    timing_class: ClassVar[str] = Kind.CP_ASYNC_COMMIT
    examples: ClassVar = ("cp.async.commit_group;",)


@dataclass(frozen=True)
class CpAsyncWaitGroup(Instruction):
    """`cp.async.wait_group N;` waits until at most N committed cp.async groups are pending."""

    mnemonic: ClassVar[str] = "cp.async.wait_group"
    timing_class: ClassVar[str] = Kind.CP_ASYNC_WAIT
    operand_spec: ClassVar = (Opnd("n", INT_CONST),)
    examples: ClassVar = ("cp.async.wait_group 0;", "cp.async.wait_group 2;")
    n: int = 0

    def _check(self) -> None:
        check_group_count(self, "PTX ISA, cp.async.wait_group")


@dataclass(frozen=True)
class CpAsyncWaitAll(Instruction):
    """`cp.async.wait_all;` = cp.async.commit_group + cp.async.wait_group 0."""

    mnemonic: ClassVar[str] = "cp.async.wait_all"
    timing_class: ClassVar[str] = Kind.CP_ASYNC_WAIT
    examples: ClassVar = ("cp.async.wait_all;",)
