"""Shared memory of one CTA as bytes, with vectorised typed gather/scatter.

    SharedMemory(nbytes=232448)      232448 B = 227 KiB, the most one CTA can use on H100 (sm_90)
      .data                          np.uint8[nbytes], the bytes themselves (little-endian values)
      .read(addrs, dtype)            values at byte addresses `addrs` (any shape) -> array of that shape
      .write(addrs, values, dtype)   store values (broadcast to addrs' shape) at those addresses
      .read_bytes(addr, n)           n bytes from addr (a copy)
      .write_bytes(addr, data)       bytes at addr

Every access is checked: addresses in [0, nbytes - size], aligned to the element size (as PTX
ld/st.shared requires); an InputError names the first offending address. dtype is an `isa.dtypes`
name ('f16', 'bf16', 'u32', ...; storage per that module: bf16 as uint16 bits) or a numpy dtype.
Duplicate addresses in one `write`: the last value in C order wins.
"""

from __future__ import annotations

import numpy as np

from isa.dtypes import DType, parse_dtype
from isa.errors import InputError

SMEM_BYTES_PER_CTA = 232448  # 227 KiB: the opt-in maximum per CTA on sm_90 [CUDA guide, CC 9.0 table]


def _storage(dtype) -> np.dtype:
    if isinstance(dtype, (np.dtype, type)) and not isinstance(dtype, DType):
        return np.dtype(dtype)
    return parse_dtype(dtype).storage


class SharedMemory:
    """A CTA's shared memory: `nbytes` bytes, zero-initialised. Models data only, no timing."""

    def __init__(self, nbytes: int = SMEM_BYTES_PER_CTA):
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes <= 0:
            raise InputError("nbytes", nbytes, "a positive number of bytes")
        self.data = np.zeros(int(nbytes), dtype=np.uint8)

    @property
    def nbytes(self) -> int:
        return self.data.size

    def _check(self, addrs: np.ndarray, size: int, what: str, aligned: bool = True) -> None:
        if addrs.size == 0:
            return
        lo, hi = int(addrs.min()), int(addrs.max())
        if lo < 0 or hi + size > self.nbytes:
            bad = lo if lo < 0 else hi
            raise InputError(f"{what} address", bad, f"0 <= address <= {self.nbytes - size} "
                             f"(shared memory has {self.nbytes} B, access is {size} B)")
        if aligned and size > 1:
            mis = addrs % size != 0
            if mis.any():
                raise InputError(f"{what} address", int(addrs[mis].flat[0]),
                                 f"a multiple of {size} (the element size)")

    def _byte_index(self, addrs: np.ndarray, size: int) -> np.ndarray:
        return addrs[..., None] + np.arange(size, dtype=np.int64)

    def read(self, addrs, dtype) -> np.ndarray:
        """Gather: the `dtype` values at byte addresses `addrs` (same shape as addrs)."""
        st = _storage(dtype)
        a = np.asarray(addrs, dtype=np.int64)
        self._check(a, st.itemsize, "read")
        if st.itemsize == 1:
            return self.data[a].view(st)
        raw = self.data[self._byte_index(a, st.itemsize)]
        return np.ascontiguousarray(raw).view(st).reshape(a.shape)

    def write(self, addrs, values, dtype=None) -> None:
        """Scatter: values (broadcast to addrs' shape) as `dtype` (default: values' own dtype)."""
        a = np.asarray(addrs, dtype=np.int64)
        v = np.asarray(values)
        st = v.dtype if dtype is None else _storage(dtype)
        v = np.ascontiguousarray(np.broadcast_to(v.astype(st, copy=False), a.shape))
        self._check(a, st.itemsize, "write")
        if st.itemsize == 1:
            self.data[a] = v.view(np.uint8)
            return
        self.data[self._byte_index(a, st.itemsize)] = v.view(np.uint8).reshape(*a.shape, st.itemsize)

    def read_bytes(self, addr: int, n: int) -> np.ndarray:
        """A copy of n bytes starting at addr."""
        self._check(np.array([int(addr)]), max(int(n), 1), "read_bytes", aligned=False)
        return self.data[int(addr):int(addr) + int(n)].copy()

    def write_bytes(self, addr: int, data) -> None:
        """Store bytes (anything np.uint8 accepts, or a bytes object) at addr."""
        b = np.frombuffer(data, dtype=np.uint8) if isinstance(data, (bytes, bytearray)) else \
            np.asarray(data, dtype=np.uint8).ravel()
        self._check(np.array([int(addr)]), max(b.size, 1), "write_bytes", aligned=False)
        self.data[int(addr):int(addr) + b.size] = b

    def __repr__(self) -> str:
        return f"SharedMemory(nbytes={self.nbytes})"
