"""Per-thread registers of one CTA, stored as raw bits in one numpy array.

    bits : uint64[num_regs, num_threads]          row = register, column = thread (tid)
           ┌──── warp 0 ────┬──── warp 1 ────┬─ ...
    %r0    │ lane0 .. lane31│ lane0 .. lane31│
    %r1    │                │                │
    %acc0  │                │                │          (a register vector is a run of rows)

A warp is the column slice [32w, 32w+32) (a numpy view, no copy), a warpgroup [128g, 128g+128).
Every register holds up to 64 bits; an instruction's type (not the declaration) decides how the bits
are read (`from_bits`) and written (`to_bits`): f32 is the low 32 bits viewed as float32, f16x2 packs
two f16 (element 0 in bits 0..15), pred is 0/1. Writes zero-extend to 64 bits.

The row of each register name is fixed per Kernel (`RegLayout`), so executors resolve names once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

WARP = 32

# type -> (numpy dtype of the value, width in bits)
TYPES: dict[str, tuple[np.dtype, int]] = {
    "pred": (np.dtype(bool), 1),
    "b8": (np.dtype(np.uint8), 8), "u8": (np.dtype(np.uint8), 8), "s8": (np.dtype(np.int8), 8),
    "b16": (np.dtype(np.uint16), 16), "u16": (np.dtype(np.uint16), 16), "s16": (np.dtype(np.int16), 16),
    "f16": (np.dtype(np.float16), 16), "bf16": (np.dtype(np.uint16), 16),
    "b32": (np.dtype(np.uint32), 32), "u32": (np.dtype(np.uint32), 32), "s32": (np.dtype(np.int32), 32),
    "f32": (np.dtype(np.float32), 32), "f16x2": (np.dtype(np.uint32), 32), "bf16x2": (np.dtype(np.uint32), 32),
    "b64": (np.dtype(np.uint64), 64), "u64": (np.dtype(np.uint64), 64), "s64": (np.dtype(np.int64), 64),
    "f64": (np.dtype(np.float64), 64),
}
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def dtype_of(t: str) -> np.dtype:
    """numpy dtype of values of PTX type `t` (bf16 and packed types are raw unsigned bits)."""
    return TYPES[t][0]


def from_bits(bits: np.ndarray, t: str) -> np.ndarray:
    """Interpret uint64 register bits as values of PTX type `t`."""
    dt, w = TYPES[t]
    if w == 1:
        return bits != 0
    if w == 64:
        return bits.view(dt) if dt != np.uint64 else bits.copy()
    return bits.astype(_UINT[w]).view(dt)


def to_bits(values, t: str) -> np.ndarray:
    """Raw uint64 bits of values of PTX type `t` (zero-extended; signed values wrap to the width)."""
    dt, w = TYPES[t]
    v = np.asarray(values)
    if w == 1:
        return (v != 0).astype(np.uint64)
    if v.dtype != dt:
        if dt.kind in "ui" and v.dtype.kind in "ui":
            v = v.astype(np.int64 if v.dtype.kind == "i" else np.uint64).astype(_UINT[w] if dt.kind == "u" else dt, copy=False)
        else:
            v = v.astype(dt)
    if w == 64:
        return np.ascontiguousarray(v).view(np.uint64)
    return np.ascontiguousarray(v).view(_UINT[w]).astype(np.uint64)


@dataclass(frozen=True)
class RegLayout:
    """Register name -> row, and the declared type of each row (from `Kernel.regs`).

    `RegDecl(type, name, count)` with a count declares name0..name{count-1}; without, one register
    `name`. Names are stored as written in the declaration (with their `%`)."""

    rows: dict[str, int]
    types: tuple[str, ...]
    vectors: dict[str, tuple[int, int]] = field(default_factory=dict)  # prefix -> (first row, count)

    @classmethod
    def from_decls(cls, decls) -> "RegLayout":
        rows: dict[str, int] = {}
        types: list[str] = []
        vectors: dict[str, tuple[int, int]] = {}
        for d in decls:
            count = getattr(d, "count", None)
            names = [d.name] if count is None else [f"{d.name}{i}" for i in range(count)]
            if count is not None:
                vectors[d.name] = (len(types), count)
            for n in names:
                if n in rows:
                    continue
                rows[n] = len(types)
                types.append(d.type)
        return cls(rows=rows, types=tuple(types), vectors=vectors)

    def row(self, name: str) -> int:
        try:
            return self.rows[name]
        except KeyError:
            alt = name[1:] if name.startswith("%") else "%" + name
            if alt in self.rows:
                return self.rows[alt]
            raise

    def __len__(self) -> int:
        return len(self.types)


class RegisterFile:
    """Registers of all threads of one CTA (see module docstring)."""

    def __init__(self, layout: RegLayout, num_threads: int):
        self.layout = layout
        self.num_threads = num_threads
        self.bits = np.zeros((max(len(layout), 1), num_threads), dtype=np.uint64)

    def warp(self, w: int) -> np.ndarray:
        """The warp's column block (a view: uint64[num_regs, 32])."""
        return self.bits[:, w * WARP:(w + 1) * WARP]

    def read(self, row: int, t: str, lanes: slice) -> np.ndarray:
        """Values of register `row` as type `t` for the threads in `lanes`."""
        return from_bits(self.bits[row, lanes], t)

    def write(self, row: int, values, t: str, lanes: slice, mask: np.ndarray | None = None) -> None:
        """Write `values` (type `t`) into register `row` for `lanes`, only where `mask` is true."""
        b = to_bits(values, t)
        if mask is None:
            self.bits[row, lanes] = b
        else:
            dst = self.bits[row, lanes]
            np.copyto(dst, np.broadcast_to(b, dst.shape), where=mask)

    def read_rows(self, rows: np.ndarray, lanes: slice) -> np.ndarray:
        """Raw bits of several registers (uint64[len(rows), nlanes]), e.g. a wgmma accumulator."""
        return self.bits[rows, lanes]

    def write_rows(self, rows: np.ndarray, bits: np.ndarray, lanes: slice) -> None:
        self.bits[rows, lanes] = bits


@dataclass
class RegisterPool:
    """The CTA's registers under setmaxnreg (PTX ISA, setmaxnreg): the launch gives every thread
    `launch_regs`, so the CTA holds launch_regs * 128 per warpgroup; `.dec` gives a warpgroup's
    surplus back to the pool, `.inc` takes from it (and waits until enough has been given back).
    Occupancy is fixed at launch by launch_regs (timing/occupancy.py); setmaxnreg only moves
    registers between the CTA's warpgroups. `released` counts .dec events (the wake-up key)."""

    launch_regs: int
    per_wg: list
    released: int = 0

    @classmethod
    def of(cls, launch_regs, warpgroups: int):
        if launch_regs is None:
            return None
        return cls(int(launch_regs), [int(launch_regs)] * warpgroups)

    @property
    def free(self) -> int:
        """Registers per thread-slot of a warpgroup (x128 registers) not held by any warpgroup."""
        return self.launch_regs * len(self.per_wg) - sum(self.per_wg)

    def describe(self) -> str:
        return (f"warpgroups hold {self.per_wg} registers per thread of the {self.launch_regs} x "
                f"{len(self.per_wg)} the CTA was launched with ({self.free} x 128 free)")
