"""Canonical WGMMA operand layouts: the shared-memory address of every element a wgmma reads.

    operand A: 64 rows (M) x K;   operand B: N rows (8..256 step 8) x K   (B is read as B^T[n, k])
    K per instruction = 32 bytes: f16/bf16 16, tf32 8, e4m3/e5m2 32
    K-major: K contiguous in 16-B core-matrix rows; MN-major (f16/bf16 only): M/N contiguous

Physical address = swizzle(linear address) on the ABSOLUTE shared-memory byte address, with
linear addresses from the descriptor per PTX ISA §9.7.15.5.1.2 (see `isa.descriptor.linear_offsets`
for the four formulas). Example, K-major 128B, f16, start 1024-aligned: element (r, k) is at
start + 128*(r%8) + SBO*(r//8) + 2*k, then chunk bits [4,7) ^= row bits [7,10).

Model, not measurement: the base-offset semantics (non-zero base offset) follow the ISA text
([inferred]); for base offset 0 the formulas reproduce the CUTLASS layouts of seed 000.
"""

from __future__ import annotations

import numpy as np

from isa.descriptor import MatrixDescriptor, linear_offsets, operand_rows
from isa.dtypes import parse_dtype
from isa.errors import InputError

K_BYTES = 32  # bytes of K one wgmma reads per row (dense)


def _check(operand: str, major: str, dtype, n) -> tuple[str, str, int]:
    op = str(operand).upper()
    if op not in ("A", "B"):
        raise InputError("operand", operand, "A or B")
    mj = str(major).upper()
    if mj not in ("K", "MN"):
        raise InputError("major", major, "K or MN")
    d = parse_dtype(dtype)
    if d.name not in ("f16", "bf16", "tf32", "e4m3", "e5m2"):
        raise InputError("dtype", d.name, "f16, bf16, tf32, e4m3 or e5m2 (wgmma inputs from shared memory)")
    if mj == "MN" and d.bits != 16:
        raise InputError("major", "MN", f"K for {d.name}: MN-major (transpose) is only for f16/bf16")
    if op == "B" and n is None:
        raise InputError("n", None, "N of wgmma m64nNk*: 8..256 in steps of 8")
    return op, mj, operand_rows(op, n)


def operand_addresses(desc: MatrixDescriptor, operand: str = "A", major: str = "K", dtype="f16",
                      n: int | None = None) -> np.ndarray:
    """int64[rows, K]: the physical shared-memory byte address of element (row, k) of the operand.

    rows = 64 for A, n for B. The array is row-major over the logical tile (A[m, k] or B^T[n, k]).
    """
    if not isinstance(desc, MatrixDescriptor):
        desc = MatrixDescriptor.decode(desc)
    _, mj, rows = _check(operand, major, dtype, n)
    lin = linear_offsets(desc, rows, mj, dtype)
    return desc.swizzle.apply(lin, desc.base_offset)


def operand_chunks(desc: MatrixDescriptor, operand: str = "A", major: str = "K", dtype="f16",
                   n: int | None = None) -> np.ndarray:
    """Sorted unique 16-byte chunk indices (address // 16) the operand read touches."""
    return np.unique(operand_addresses(desc, operand, major, dtype, n) // 16)


def fetch_operand(smem, desc: MatrixDescriptor, operand: str = "A", major: str = "K", dtype="f16",
                  n: int | None = None) -> np.ndarray:
    """The operand's element values as a row-major logical tile [rows, K] (storage dtype of `dtype`)."""
    addrs = operand_addresses(desc, operand, major, dtype, n)
    return smem.read(addrs, dtype)


def store_operand(smem, desc: MatrixDescriptor, tile, operand: str = "A", major: str = "K", dtype="f16",
                  n: int | None = None) -> None:
    """Write a logical tile [rows, K] to where `desc` says the wgmma reads it (inverse of fetch)."""
    addrs = operand_addresses(desc, operand, major, dtype, n)
    tile = np.asarray(tile)
    if tile.shape != addrs.shape:
        raise InputError("tile shape", tile.shape, f"{addrs.shape} for operand {operand} ({major}-major, {dtype})")
    smem.write(addrs, tile, dtype)


def k_per_instruction(dtype) -> int:
    """K of one dense wgmma: 32 bytes of K elements."""
    return K_BYTES // parse_dtype(dtype).bytes
