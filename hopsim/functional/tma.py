"""TMA tiled box copies (`cp.async.bulk.tensor.*.tile`): global tensor <-> swizzled shared memory.

A box at signed element coordinates (c0, c1, ..) (innermost first) covers, along dimension i,
coordinates c_i + j * elementStride_i for j < count_i (count_0 = box_0 without interleave). In
shared memory the box is laid out row after row, the inner dimension contiguous:

    linear(j0, j1, .., jr) = dst + row(j1..jr) * pitch + j0 * elem_bytes     row = C-order index of (jr..j1)
    physical = swizzle(linear)   on ABSOLUTE shared-memory addresses (bits [7,10) -> [4,7)) [PTX-TENSOR §5.5.7]

    pitch = inner box bytes; with a swizzle and an inner box narrower than the swizzle span, the
    span ([inferred]: the CUDA guide asks for the full swizzle width to be allocated, not measured)

Loads fill out-of-bounds elements with zero, or with a quiet NaN when oob_fill='nan' (the exact NaN
bit pattern of NAN_REQUEST_ZERO_FMA is not published; all-ones-mantissa quiet NaN here). The
tx-count of a load is the full box bytes, OOB fill included. Stores write in-bounds elements only.
The shared-memory destination must be 128-byte aligned. Interleaved layouts are not modelled.

`gmem` is a flat np.uint8 array (byte address = index) or an object with `region(addr, nbytes)`
returning a writable uint8 view (hopsim.functional.gmem.GlobalMemory).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa.errors import InputError
from isa.tensormap import TensorMap

SMEM_DST_ALIGN = 128

_NAN_BITS = {2: 0x7FFF, 4: 0x7FFFFFFF, 8: 0x7FFFFFFFFFFFFFFF}


@dataclass(frozen=True)
class BoxTransfer:
    """What one box copy moves, element by element (C order over the box, innermost last).

    smem_addrs:   int64[n] physical shared-memory byte address of each element
    global_addrs: int64[n] global byte address (meaningless where not in_bounds)
    in_bounds:    bool[n]
    tx_bytes:     bytes the box writes to shared memory (load tx-count; OOB fill included)
    """

    smem_addrs: np.ndarray
    global_addrs: np.ndarray
    in_bounds: np.ndarray
    elem_bytes: int
    tx_bytes: int

    def byte_addresses(self, which: str = "smem") -> np.ndarray:
        """int64[n * elem_bytes]: every byte's address (element order, bytes in order)."""
        a = self.smem_addrs if which == "smem" else self.global_addrs
        return (a[:, None] + np.arange(self.elem_bytes)).ravel()


def _check_coords(tmap: TensorMap, coords) -> tuple[int, ...]:
    try:
        c = tuple(int(v) for v in coords)
    except (TypeError, ValueError):
        raise InputError("coords", coords, f"{tmap.rank} integer coordinates") from None
    if len(c) != tmap.rank:
        raise InputError("coords", coords, f"{tmap.rank} coordinates (one per tensor dimension, innermost first)")
    for i, v in enumerate(c):
        if not -(1 << 31) <= v < 1 << 31:
            raise InputError(f"coords[{i}]", v, "a signed 32-bit coordinate")
    return c


def box_transfer(tmap: TensorMap, coords, smem_addr: int, smem_nbytes: int | None = None) -> BoxTransfer:
    """The element-level plan of one box copy (no data moved)."""
    if tmap.interleave != "none":
        raise InputError("interleave", tmap.interleave, "none (interleaved TMA layouts are not modelled)")
    c = _check_coords(tmap, coords)
    if isinstance(smem_addr, bool) or int(smem_addr) < 0 or int(smem_addr) % SMEM_DST_ALIGN:
        raise InputError("smem address", smem_addr, f"a multiple of {SMEM_DST_ALIGN} B (TMA shared-memory box alignment)")
    smem_addr = int(smem_addr)
    counts = tmap.box_counts
    if smem_nbytes is not None and smem_addr + tmap.smem_footprint > smem_nbytes:
        raise InputError("smem address", smem_addr,
                         f"<= {smem_nbytes - tmap.smem_footprint}: the box needs {tmap.smem_footprint} B")
    shape = counts[::-1]  # C order: outermost first
    idx = np.indices(shape, dtype=np.int64).reshape(len(shape), -1)[::-1]  # idx[i] = j_i (innermost first)
    e = tmap.elem_bytes
    in_bounds = np.ones(idx.shape[1], dtype=bool)
    gaddr = np.full(idx.shape[1], tmap.global_address, dtype=np.int64)
    for i in range(tmap.rank):
        coord = c[i] + idx[i] * (tmap.element_strides[i] if (i > 0 or tmap.interleave != "none") else 1)
        in_bounds &= (coord >= 0) & (coord < tmap.global_dims[i])
        gaddr += coord * (e if i == 0 else tmap.global_strides_bytes[i - 1])
    row = np.zeros(idx.shape[1], dtype=np.int64)
    for i in range(tmap.rank - 1, 0, -1):
        row = row * counts[i] + idx[i]
    linear = smem_addr + row * tmap.smem_row_pitch + idx[0] * e
    return BoxTransfer(tmap.swizzle.apply(linear), gaddr, in_bounds, e, tmap.box_bytes)


def _global_bytes(gmem, lo: int, nbytes: int) -> np.ndarray:
    if isinstance(gmem, np.ndarray):
        if lo < 0 or lo + nbytes > gmem.size:
            raise InputError("global address", lo, f"inside the {gmem.size}-byte global array")
        return gmem.reshape(-1).view(np.uint8)[lo:lo + nbytes]
    return gmem.region(lo, nbytes)


def _fill(tmap: TensorMap) -> np.ndarray:
    e = tmap.elem_bytes
    if tmap.oob_fill == "nan" and e in _NAN_BITS:
        return np.frombuffer(int(_NAN_BITS[e]).to_bytes(e, "little"), dtype=np.uint8)
    return np.zeros(e, dtype=np.uint8)


def tma_load(gmem, tmap: TensorMap, coords, smem, smem_addr: int) -> int:
    """Copy the box at `coords` into `smem` (a SharedMemory) at `smem_addr`; returns tx bytes."""
    t = box_transfer(tmap, coords, smem_addr, smem.nbytes)
    e = t.elem_bytes
    vals = np.empty((t.in_bounds.size, e), dtype=np.uint8)
    vals[:] = _fill(tmap)
    if t.in_bounds.any():
        g = t.global_addrs[t.in_bounds]
        lo, hi = int(g.min()), int(g.max()) + e
        view = _global_bytes(gmem, lo, hi - lo)
        vals[t.in_bounds] = view[(g - lo)[:, None] + np.arange(e)]
    smem.data[(t.smem_addrs[:, None] + np.arange(e)).ravel()] = vals.ravel()
    return t.tx_bytes


def tma_store(gmem, tmap: TensorMap, coords, smem, smem_addr: int) -> int:
    """Copy the box in `smem` at `smem_addr` to global at `coords` (in-bounds elements only);
    returns the bytes written to global memory."""
    t = box_transfer(tmap, coords, smem_addr, smem.nbytes)
    e = t.elem_bytes
    if not t.in_bounds.any():
        return 0
    src = smem.data[t.smem_addrs[t.in_bounds][:, None] + np.arange(e)]
    g = t.global_addrs[t.in_bounds]
    lo, hi = int(g.min()), int(g.max()) + e
    view = _global_bytes(gmem, lo, hi - lo)
    view[(g - lo)[:, None] + np.arange(e)] = src
    return int(src.size)


def global_ranges(tmap: TensorMap, coords) -> tuple[tuple[int, int], ...]:
    """(global address, bytes) of each contiguous in-bounds run of the box (for traffic costing)."""
    t = box_transfer(tmap, coords, 0)
    g = np.sort(t.global_addrs[t.in_bounds])
    if g.size == 0:
        return ()
    e = t.elem_bytes
    breaks = np.nonzero(np.diff(g) != e)[0]
    starts = np.concatenate(([0], breaks + 1))
    ends = np.concatenate((breaks, [g.size - 1]))
    return tuple((int(g[s]), int(g[x] - g[s]) + e) for s, x in zip(starts, ends))
