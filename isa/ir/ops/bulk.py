"""TMA (bulk tensor) copies and bulk async-groups: cp.async.bulk.tensor (load: TMA_LOAD, store:
TMA_STORE), cp.async.bulk.commit_group (BULK_COMMIT), cp.async.bulk.wait_group (BULK_WAIT).

Both tensor directions share the head `cp.async.bulk.tensor`; the completion mechanism
(`.mbarrier::complete_tx::bytes` or `.bulk_group`) picks the class in one family hook.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from isa.ir.operands import Imm, Mem, Reg, Sym
from isa.ir.ops.base import INT_CONST, Instruction, Kind, Opnd, Slot, _fail, _is, _one_of, int_field, is_int, syntax
from isa.ir.ops.mbarrier import MBAR_RULE
from isa.ir.syntax import TensorRef

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


def _tma_regs(smem: tuple, tmap, coords) -> list:
    return [(m.base, "addr") for m in smem] + [(tmap, "desc")] + [(c, "u32") for c in coords]


def _tma_syms(smem: tuple, tmap) -> list:
    out = [(m.base, "shared") for m in smem if isinstance(m.base, Sym)]
    return out + ([(tmap, "tmap")] if isinstance(tmap, Sym) else [])


@dataclass(frozen=True)
class CpAsyncBulkTensorLoad(Instruction):
    """`cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
    [dst], [tmap, {c0..}], [mbar];` a TMA box copy global->shared; the bytes land complete_tx on mbar."""

    mnemonic: ClassVar[str] = "cp.async.bulk.tensor.load"
    timing_class: ClassVar[str] = Kind.TMA_LOAD
    family_syntax: ClassVar[bool] = True
    examples: ClassVar = ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                          "[%r0], [tmap_a, {%r1, %r2}], [bars];",)
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
            _fail(self, f"mbarrier offset {self.mbar.offset} is not 8-byte aligned", MBAR_RULE)

    def opcode(self) -> str:
        return f"cp.async.bulk.tensor.{self.dims}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"

    def operands(self) -> tuple:
        return (self.dst, self.tmap) + self.coords + (self.mbar,)

    def _operand_text(self, abbreviate: bool) -> str:
        return f"{self.dst.text()}, {_tma_text(self.tmap, self.coords)}, {self.mbar.text()}"

    def typed_registers(self) -> list:
        return _tma_regs((self.dst, self.mbar), self.tmap, self.coords)

    def symbol_uses(self) -> list:
        return _tma_syms((self.dst, self.mbar), self.tmap)


@dataclass(frozen=True)
class CpAsyncBulkTensorStore(Instruction):
    """`cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [tmap, {c0..}], [src];`
    a TMA box copy shared->global, tracked by bulk async-groups."""

    mnemonic: ClassVar[str] = "cp.async.bulk.tensor.store"
    timing_class: ClassVar[str] = Kind.TMA_STORE
    family_syntax: ClassVar[bool] = True
    examples: ClassVar = ("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [tmap_c, {%r1, 0}], [%r0];",)
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

    def typed_registers(self) -> list:
        return _tma_regs((self.src,), self.tmap, self.coords)

    def symbol_uses(self) -> list:
        return _tma_syms((self.src,), self.tmap)


@syntax("cp.async.bulk.tensor", produces=(CpAsyncBulkTensorLoad, CpAsyncBulkTensorStore))
def _parse_tensor(c):
    dim_t = c.need(("1d", "2d", "3d", "4d", "5d"), "dimension .1d...5d")
    dims = int(dim_t[0])
    c.take("tile")
    for bad in ("im2col", "multicast::cluster", "L2::cache_hint", "im2col_no_offs", "tile::gather4"):
        if c.take(bad):
            raise c.err(f"{c.name}: .{bad} is not modelled by hopsim (loads: .tile, no multicast/cache hint)")
    if c.take("mbarrier::complete_tx::bytes"):
        if c.take("shared::cluster", "shared::cta") is None:
            raise c.err(f"{c.name}: a tensor load needs destination .shared::cluster (or .shared::cta)")
        c.need(("global",), "source space .global")
        c.done()
        c.count(3)
        ref = c.get(1, (TensorRef,), "[tensorMap, {coords}]")
        return CpAsyncBulkTensorLoad(dims, c.mem(0), ref.tmap, ref.coords, c.mem(2, "the mbarrier [addr]"))
    if c.take("bulk_group"):
        c.need(("global",), "destination space .global")
        c.need(("shared::cta",), "source space .shared::cta")
        c.done()
        c.count(2)
        ref = c.get(0, (TensorRef,), "[tensorMap, {coords}]")
        return CpAsyncBulkTensorStore(dims, ref.tmap, ref.coords, c.mem(1))
    raise c.err(f"{c.name}: expected completion .mbarrier::complete_tx::bytes (load) or .bulk_group (store)")


@dataclass(frozen=True)
class CpAsyncBulkCommitGroup(Instruction):
    """`cp.async.bulk.commit_group;` closes the current bulk async-group of the thread."""

    mnemonic: ClassVar[str] = "cp.async.bulk.commit_group"
    timing_class: ClassVar[str] = Kind.BULK_COMMIT
    examples: ClassVar = ("cp.async.bulk.commit_group;",)


def check_group_count(instr, rule: str) -> None:
    """`N` of a wait_group: a non-negative integer constant."""
    v = int_field(instr, "n")
    if not is_int(v) or v < 0:
        _fail(instr, f"N={v!r} must be a non-negative integer constant", rule)


@dataclass(frozen=True)
class CpAsyncBulkWaitGroup(Instruction):
    """`cp.async.bulk.wait_group{.read} N;` waits until at most N bulk groups are pending
    (.read: only until their source reads are done)."""

    mnemonic: ClassVar[str] = "cp.async.bulk.wait_group"
    timing_class: ClassVar[str] = Kind.BULK_WAIT
    modifiers: ClassVar = (Slot("read", ("read",), flag=True),)
    operand_spec: ClassVar = (Opnd("n", INT_CONST),)
    examples: ClassVar = ("cp.async.bulk.wait_group 0;", "cp.async.bulk.wait_group.read 1;")
    n: int = 0
    read: bool = False

    def _check(self) -> None:
        check_group_count(self, "PTX ISA, cp.async.bulk.wait_group")
