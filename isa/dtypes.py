"""Element types of TMA and WGMMA operands: bit width, numpy storage, conversions.

Storage convention (what `SharedMemory.read/write` and `fetch_operand` use):
    f16 -> np.float16        bf16 -> np.uint16 (bit pattern)     tf32 -> np.float32 (32-bit container)
    e4m3/e5m2 -> np.uint8 (bit pattern)   f32 -> np.float32   f64 -> np.float64   integers as named

T = 128 / bits is the number of elements in one 16-byte core-matrix row (PTX ISA §9.7.15.5.1.2):
f16/bf16 8, tf32 4, e4m3/e5m2 16.

Conversions are exact: bf16 <-> f32 round-to-nearest-even (NaN stays NaN); e4m3/e5m2 decode tables
follow the OCP FP8 formats (e4m3: bias 7, no infinities, S.1111.111 = NaN; e5m2: bias 15, IEEE-like).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from isa.errors import InputError


@dataclass(frozen=True)
class DType:
    """One element type: name, bits, numpy storage dtype, and whether it is floating point."""

    name: str
    bits: int
    storage: np.dtype
    is_float: bool

    @property
    def bytes(self) -> int:
        return self.bits // 8

    @property
    def per_16b(self) -> int:
        """T = 128 / bits: elements per 16-byte core-matrix row."""
        return 128 // self.bits

    def __str__(self) -> str:
        return self.name


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("f16", 16, np.dtype(np.float16), True),
        DType("bf16", 16, np.dtype(np.uint16), True),
        DType("tf32", 32, np.dtype(np.float32), True),
        DType("e4m3", 8, np.dtype(np.uint8), True),
        DType("e5m2", 8, np.dtype(np.uint8), True),
        DType("f32", 32, np.dtype(np.float32), True),
        DType("f64", 64, np.dtype(np.float64), True),
        DType("u8", 8, np.dtype(np.uint8), False),
        DType("s8", 8, np.dtype(np.int8), False),
        DType("u16", 16, np.dtype(np.uint16), False),
        DType("s16", 16, np.dtype(np.int16), False),
        DType("u32", 32, np.dtype(np.uint32), False),
        DType("s32", 32, np.dtype(np.int32), False),
        DType("u64", 64, np.dtype(np.uint64), False),
        DType("s64", 64, np.dtype(np.int64), False),
    )
}


def parse_dtype(name, field: str = "dtype") -> DType:
    """A DType from its name ('f16', 'bf16', ...); a DType passes through."""
    if isinstance(name, DType):
        return name
    d = DTYPES.get(str(name).strip().lower())
    if d is None:
        raise InputError(field, name, "one of " + ", ".join(DTYPES))
    return d


# ------------------------------------------------------------------------------- bf16 <-> f32
def bf16_bits_to_f32(bits) -> np.ndarray:
    """uint16 bf16 bit patterns -> float32 (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bf16_bits(x) -> np.ndarray:
    """float32 -> bf16 bit patterns, round to nearest even; NaN stays a (quiet) NaN."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    r = np.where(np.isnan(x), (u >> 16) | 0x40, r)
    return r.astype(np.uint16)


def f32_to_tf32(x) -> np.ndarray:
    """float32 -> tf32 value (10 mantissa bits) in a float32 container, round to nearest even."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0xFFF + ((u >> 13) & 1)) >> 13) << 13
    r = np.where(np.isnan(x) | np.isinf(x), u, r)
    return (r & 0xFFFFFFFF).astype(np.uint32).view(np.float32)


# ------------------------------------------------------------------------------- fp8 decode
@lru_cache(maxsize=None)
def _fp8_table(name: str) -> np.ndarray:
    ebits, bias = (4, 7) if name == "e4m3" else (5, 15)
    mbits = 7 - ebits
    v = np.arange(256, dtype=np.int64)
    sign = np.where(v >> 7, -1.0, 1.0)
    e = (v >> mbits) & ((1 << ebits) - 1)
    m = v & ((1 << mbits) - 1)
    normal = (1.0 + m / (1 << mbits)) * np.exp2(e.astype(np.float64) - bias)
    sub = (m / (1 << mbits)) * np.exp2(1.0 - bias)
    out = sign * np.where(e == 0, sub, normal)
    if name == "e4m3":
        out[(v & 0x7F) == 0x7F] = np.nan
    else:
        top = e == (1 << ebits) - 1
        out[top & (m == 0)] = sign[top & (m == 0)] * np.inf
        out[top & (m != 0)] = np.nan
    out = out.astype(np.float32)
    out.setflags(write=False)
    return out


def fp8_bits_to_f32(bits, name: str) -> np.ndarray:
    """uint8 e4m3/e5m2 bit patterns -> float32 (exact)."""
    return _fp8_table(parse_dtype(name).name)[np.asarray(bits, dtype=np.uint8)]


def to_f32(stored, dtype) -> np.ndarray:
    """Stored values of `dtype` (see the storage convention) -> float32 (exact for 8/16-bit types)."""
    d = parse_dtype(dtype)
    if d.name == "bf16":
        return bf16_bits_to_f32(stored)
    if d.name in ("e4m3", "e5m2"):
        return fp8_bits_to_f32(stored, d.name)
    return np.asarray(stored).astype(np.float32)


def from_f32(x, dtype) -> np.ndarray:
    """float32 values -> storage of `dtype` (RNE for f16/bf16/tf32). fp8 encoding is not provided."""
    d = parse_dtype(dtype)
    if d.name == "bf16":
        return f32_to_bf16_bits(x)
    if d.name == "tf32":
        return f32_to_tf32(x)
    if d.name in ("e4m3", "e5m2"):
        raise InputError("dtype", d.name, "f32 -> fp8 encoding is not modelled; store fp8 bit patterns (uint8)")
    return np.asarray(x, dtype=np.float32).astype(d.storage)
