"""The WGMMA math: m64nNk16 with f16/bf16 inputs, f32 or f16 accumulators, fragment layouts.

Accumulator fragment CLayout_64xN = ((4,8,4),(2,2,N/8)) : ((128,1,16),(64,8,512))  [CUTE-GMMA]
(thread t = 32*warp + lane of the warpgroup, value v = v0 + 2*v1 + 4*v2):

    row = 16*warp + lane/4 + 8*v1          col = 2*(lane%4) + v0 + 8*v2

            col 0   1   2   3   4   5   6   7 | 8 ...
    row 0     T0v0 T0v1 T1v0 T1v1 T2v0 T2v1 T3v0 T3v1 | T0v4 ...
    row 1     T4v0 T4v1 T5v0 ...
    ...
    row 8     T0v2 T0v3 T1v2 ...                 (v1 = 1: rows +8)
    row 16    T32v0 ...                          (warp 1)

f32 D: thread register i holds value i (N/2 registers). f16 D: register j is an f16x2 holding
values 2j (bits 0..15) and 2j+1 (bits 16..31) (N/4 registers). A from registers (f16/bf16) uses
ALayout_64x16 = CLayout_64x16: 4 b32 registers, register j packs values 2j, 2j+1.

Arithmetic model (PTX ISA §9.7.15.5): D = scale_a*A · scale_b*B + (scale_d ? D : 0). Products of
f16/bf16 values are exact in f32; the 16-term sum plus D is formed in float64 and rounded ONCE to
the accumulator type per instruction (f32: round-to-nearest; f16: round-to-nearest f16, i.e. one
rounding per k16 chunk). The hardware's internal adder order/truncation is not documented; this
model is exact up to that final rounding.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

M, K = 64, 16
LEGAL_N = tuple(range(8, 257, 8))
INPUT_TYPES = ("f16", "bf16")
ACCUM_TYPES = ("f32", "f16")


# ------------------------------------------------------------------------------------ bit helpers
def f16_bits_to_f32(u16: np.ndarray) -> np.ndarray:
    return np.asarray(u16, dtype=np.uint16).view(np.float16).astype(np.float32)


def bf16_bits_to_f32(u16: np.ndarray) -> np.ndarray:
    return (np.asarray(u16, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even float32 -> bf16 bits (NaN kept quiet)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    r = np.where(np.isnan(np.asarray(x, np.float32)), (u >> 16) | 0x40, r)
    return r.astype(np.uint16)


def to_f32(bits_u16: np.ndarray, dtype: str) -> np.ndarray:
    """16-bit element bits of dtype ('f16' | 'bf16') as float32 values."""
    return f16_bits_to_f32(bits_u16) if dtype == "f16" else bf16_bits_to_f32(bits_u16)


# ------------------------------------------------------------------------------------ layouts
@lru_cache(maxsize=None)
def accumulator_coords(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols), each int[128, n//2]: the (row, col) of D held by thread t as value v."""
    if n % 8 or not 8 <= n <= 256:
        raise ValueError(f"N={n}: wgmma m64nNk16 needs N in 8..256 step 8")
    t = np.arange(128)[:, None]
    v = np.arange(n // 2)[None, :]
    warp, lane = t // 32, t % 32
    v0, v1, v2 = v % 2, (v // 2) % 2, v // 4
    rows = 16 * warp + lane // 4 + 8 * v1
    cols = 2 * (lane % 4) + v0 + 8 * v2
    rows.setflags(write=False)
    cols.setflags(write=False)
    return rows, cols


def scatter(matrix: np.ndarray) -> np.ndarray:
    """(64, n) matrix -> fragments [128 threads, n//2 values] (CLayout_64xN)."""
    rows, cols = accumulator_coords(matrix.shape[1])
    return matrix[rows, cols]


def gather(frags: np.ndarray) -> np.ndarray:
    """fragments [128, n//2] -> (64, n) matrix (inverse of `scatter`)."""
    n = frags.shape[1] * 2
    rows, cols = accumulator_coords(n)
    out = np.empty((M, n), dtype=frags.dtype)
    out[rows, cols] = frags
    return out


# Register <-> fragment value packing ------------------------------------------------------------
def accum_regs(n: int, dtype_d: str) -> int:
    """Registers per thread of the D fragment: N/2 (f32) or N/4 (f16x2)."""
    return n // 2 if dtype_d == "f32" else n // 4


@lru_cache(maxsize=None)
def _flat_index_t(n: int) -> np.ndarray:
    """int[n//2, 128]: flat index row*n + col of value v of thread t, transposed (register-major)."""
    rows, cols = accumulator_coords(n)
    idx = np.ascontiguousarray((rows * n + cols).T)
    idx.setflags(write=False)
    return idx


def unpack_accumulator(bits: np.ndarray, n: int, dtype_d: str) -> np.ndarray:
    """Register bits uint64[regs, 128] -> (64, n) matrix (float32 or float16)."""
    idx = _flat_index_t(n)
    if dtype_d == "f32":
        vals = bits.astype(np.uint32).view(np.float32)          # [n/2, 128]
        out = np.empty(64 * n, dtype=np.float32)
    else:
        u = bits.astype(np.uint32)
        vals = np.empty((n // 2, 128), dtype=np.uint16)
        vals[0::2] = (u & 0xFFFF).astype(np.uint16)
        vals[1::2] = (u >> 16).astype(np.uint16)
        vals = vals.view(np.float16)
        out = np.empty(64 * n, dtype=np.float16)
    out[idx] = vals
    return out.reshape(64, n)


def pack_accumulator(d: np.ndarray, dtype_d: str) -> np.ndarray:
    """(64, n) matrix -> register bits uint64[regs, 128]."""
    n = d.shape[1]
    idx = _flat_index_t(n)
    if dtype_d == "f32":
        return np.ascontiguousarray(d, dtype=np.float32).ravel().take(idx).view(np.uint32).astype(np.uint64)
    h = np.ascontiguousarray(d, dtype=np.float16).ravel().take(idx).view(np.uint16).astype(np.uint64)
    return h[0::2] | (h[1::2] << np.uint64(16))


def unpack_a_registers(bits: np.ndarray, dtype_a: str) -> np.ndarray:
    """A fragment registers uint64[4, 128] (b32 each, two 16-bit values) -> (64, 16) float32."""
    u = bits.astype(np.uint32)
    frag = np.empty((128, 8), dtype=np.uint16)
    frag[:, 0::2] = (u & 0xFFFF).astype(np.uint16).T
    frag[:, 1::2] = (u >> 16).astype(np.uint16).T
    return to_f32(gather(frag), dtype_a)


def pack_a_registers(a_bits: np.ndarray) -> np.ndarray:
    """(64, 16) uint16 element bits -> A fragment registers uint64[4, 128]."""
    h = scatter(np.asarray(a_bits, dtype=np.uint16)).astype(np.uint64)
    return (h[:, 0::2] | (h[:, 1::2] << np.uint64(16))).T.copy()


# ------------------------------------------------------------------------------------ the MMA
def mma(a: np.ndarray, b: np.ndarray, d: np.ndarray | None, *, dtype_d: str = "f32",
        scale_d: bool = True, scale_a: int = 1, scale_b: int = 1) -> np.ndarray:
    """One m64nNk16: returns D' = (scale_a*A)(scale_b*B) + (D if scale_d else 0).

    a: (64, 16) values (float32 holding f16/bf16 values), b: (16, N) values, d: (64, N) float32 or
    float16 (ignored if scale_d is false). Result float32 (dtype_d 'f32') or float16 ('f16').
    """
    if dtype_d not in ACCUM_TYPES:
        raise ValueError(f"dtype_d={dtype_d!r}: wgmma accumulates in f32 or f16")
    acc = np.dot(np.asarray(a, np.float64), np.asarray(b, np.float64))
    if scale_a * scale_b < 0:
        np.negative(acc, out=acc)
    if scale_d and d is not None:
        acc += d
    return acc.astype(np.float32 if dtype_d == "f32" else np.float16)
