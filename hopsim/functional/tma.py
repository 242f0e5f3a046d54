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
from functools import lru_cache

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


# ------------------------------------------------------------------------------- the cached plan
# Everything about a box that does not depend on the coordinates or the destination, per tensor map
# (box shape included), computed once:
#
#     element k of the box (C order, innermost last) has box indices (j0, j1, .., jr), and
#       coord_i(k)  = c_i + off_i[j_i]            off_i = arange(count_i) * elementStride_i (1 for dim 0)
#       global(k)   = base(c) + rel_global[k]     base(c) = globalAddress + sum_i c_i * stride_i
#       smem(k)     = dst + swz_p(rel_smem[k])    dst 128-B aligned, p = (dst >> 7) & (2^b - 1)
#
#   swz_p(r) = r ^ ((((r >> 7) + p) & (2^b - 1)) << 4): the swizzle on absolute addresses, since
#   dst is a multiple of 128 B (its bits [0,7) are zero, its row phase p is added to r's row).
#   in_bounds is separable: the AND over dimensions of the 1-D tests 0 <= c_i + off_i < dim_i.
@dataclass(frozen=True)
class _Plan:
    counts: tuple[int, ...]
    offsets: tuple[np.ndarray, ...]  # off_i, innermost dimension first
    strides: tuple[int, ...]  # byte stride of one coordinate step per dimension (dim 0: element bytes)
    rel_global: np.ndarray  # int64[n]
    rel_smem: np.ndarray  # int64[n], before the swizzle
    byte_lanes: np.ndarray  # arange(elem_bytes)
    extents: tuple[int, ...]  # off_i[-1]: the box spans c_i .. c_i + extent_i along dimension i
    footprint: int  # shared bytes of the box (tmap.smem_footprint)
    phase_mask: int  # 2^b - 1 of the swizzle


@lru_cache(maxsize=256)
def _plan(tmap: TensorMap) -> _Plan:
    counts = tmap.box_counts
    e = tmap.elem_bytes
    offsets = tuple(np.arange(n, dtype=np.int64) * (tmap.element_strides[i] if i > 0 else 1)
                    for i, n in enumerate(counts))
    strides = (e,) + tuple(tmap.global_strides_bytes)
    shape = counts[::-1]  # C order: outermost first
    idx = np.indices(shape, dtype=np.int64).reshape(len(shape), -1)[::-1]  # idx[i] = j_i (innermost first)
    rel_global = np.zeros(idx.shape[1], dtype=np.int64)
    for i in range(tmap.rank):
        rel_global += offsets[i][idx[i]] * strides[i]
    row = np.zeros(idx.shape[1], dtype=np.int64)
    for i in range(tmap.rank - 1, 0, -1):
        row = row * counts[i] + idx[i]
    rel_smem = row * tmap.smem_row_pitch + idx[0] * e
    out = _Plan(counts, offsets, strides, rel_global, rel_smem, np.arange(e, dtype=np.int64),
                tuple(int(o[-1]) for o in offsets), tmap.smem_footprint, (1 << tmap.swizzle.value) - 1)
    for arr in (*out.offsets, out.rel_global, out.rel_smem, out.byte_lanes):
        arr.setflags(write=False)
    return out


@lru_cache(maxsize=1024)
def _smem_offsets(tmap: TensorMap, phase: int) -> tuple[np.ndarray, np.ndarray]:
    """(element offsets, byte offsets) from a destination of row phase `phase`, swizzled."""
    p = _plan(tmap)
    r = p.rel_smem
    b = tmap.swizzle.value
    if b:
        r = r ^ ((((r >> 7) + phase) & ((1 << b) - 1)) << 4)
    by = (r[:, None] + p.byte_lanes).ravel()
    r = np.array(r)
    r.setflags(write=False)
    by.setflags(write=False)
    return r, by


_CHUNK = 16  # bytes: the inner box is a multiple of 16 B and swizzles move whole 16-B chunks
_V16 = np.dtype("V16")


@lru_cache(maxsize=1024)
def _chunk_plan(tmap: TensorMap, phase: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The box as 16-B chunks (inner box bytes are a multiple of 16; element stride 1 along dim 0,
    so a chunk is contiguous in global memory, and the swizzle keeps it contiguous in shared):
    (smem chunk index from dst / 16, global chunk index from the lowest element, lowest rel_global,
    global span in bytes: a multiple of 16)."""
    p = _plan(tmap)
    q = _CHUNK // tmap.elem_bytes
    rel_s, _ = _smem_offsets(tmap, phase)
    g = p.rel_global[::q]
    lo = int(g.min())
    sidx = rel_s[::q] // _CHUNK
    gidx = (g - lo) // _CHUNK
    for arr in (sidx, gidx):
        arr.setflags(write=False)
    return sidx, gidx, lo, int(g.max()) - lo + _CHUNK


def _check_box(tmap: TensorMap, coords, smem_addr, smem_nbytes) -> tuple[tuple[int, ...], int, _Plan | None]:
    """Validated (coords, smem_addr, plan); the plan is None for the uncached reference."""
    if tmap.interleave != "none":
        raise InputError("interleave", tmap.interleave, "none (interleaved TMA layouts are not modelled)")
    c = _check_coords(tmap, coords)
    if isinstance(smem_addr, bool) or int(smem_addr) < 0 or int(smem_addr) % SMEM_DST_ALIGN:
        raise InputError("smem address", smem_addr, f"a multiple of {SMEM_DST_ALIGN} B (TMA shared-memory box alignment)")
    smem_addr = int(smem_addr)
    p = _plan(tmap)
    if smem_nbytes is not None and smem_addr + p.footprint > smem_nbytes:
        raise InputError("smem address", smem_addr, f"<= {smem_nbytes - p.footprint}: the box needs {p.footprint} B")
    return c, smem_addr, p


def _in_bounds(p: _Plan, tmap: TensorMap, c: tuple[int, ...]) -> np.ndarray | None:
    """bool[n] in-bounds mask of the box at c, or None when the whole box is in bounds."""
    if all(0 <= ci and ci + x < d for ci, x, d in zip(c, p.extents, tmap.global_dims)):
        return None
    oks = [(c[i] + off >= 0) & (c[i] + off < tmap.global_dims[i]) for i, off in enumerate(p.offsets)]
    if all(ok.all() for ok in oks):
        return None
    m = oks[-1]
    for ok in oks[-2::-1]:  # outermost first: C order over the box
        m = np.logical_and.outer(m, ok)
    return m.ravel()


def _global_base(p: _Plan, tmap: TensorMap, c: tuple[int, ...]) -> int:
    return tmap.global_address + sum(ci * s for ci, s in zip(c, p.strides))


def box_transfer(tmap: TensorMap, coords, smem_addr: int, smem_nbytes: int | None = None) -> BoxTransfer:
    """The element-level plan of one box copy (no data moved). The coordinate-independent part is
    cached per tensor map (`_plan`); a call adds the base addresses and tests the bounds."""
    c, smem_addr, p = _check_box(tmap, coords, smem_addr, smem_nbytes)
    ib = _in_bounds(p, tmap, c)
    if ib is None:
        ib = np.ones(p.rel_global.size, dtype=bool)
    rel, _ = _smem_offsets(tmap, (smem_addr >> 7) & p.phase_mask)
    return BoxTransfer(smem_addr + rel, _global_base(p, tmap, c) + p.rel_global, ib, tmap.elem_bytes, tmap.box_bytes)


def _box_transfer_uncached(tmap: TensorMap, coords, smem_addr: int, smem_nbytes: int | None = None) -> BoxTransfer:
    """Reference: the element-level plan built from scratch, element by element (tests compare)."""
    c, smem_addr, _ = _check_box(tmap, coords, smem_addr, smem_nbytes)
    counts = tmap.box_counts
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


def _whole_box(tmap: TensorMap, coords, smem, smem_addr: int):
    """When the box is entirely in bounds: (shared uint8 array viewed as 16-B chunks, its chunk
    indices, the global bytes viewed as 16-B chunks, their chunk indices): one gather moves the box.
    Else None (the element-level path with OOB fill)."""
    c, smem_addr, p = _check_box(tmap, coords, smem_addr, smem.nbytes)
    data = smem.data
    if _in_bounds(p, tmap, c) is not None or data.size % _CHUNK or not data.flags.c_contiguous:
        return None
    sidx, gidx, lo, span = _chunk_plan(tmap, (smem_addr >> 7) & p.phase_mask)
    return data, sidx, gidx, lo, span, _global_base(p, tmap, c), smem_addr


def tma_load(gmem, tmap: TensorMap, coords, smem, smem_addr: int) -> int:
    """Copy the box at `coords` into `smem` (a SharedMemory) at `smem_addr`; returns tx bytes."""
    whole = _whole_box(tmap, coords, smem, smem_addr)
    if whole is not None:
        data, sidx, gidx, lo, span, base, dst = whole
        src = _global_bytes(gmem, base + lo, span).view(_V16)
        data.view(_V16)[dst // _CHUNK + sidx] = src[gidx]
        return tmap.box_bytes
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
    whole = _whole_box(tmap, coords, smem, smem_addr)
    if whole is not None:
        data, sidx, gidx, lo, span, base, dst = whole
        _global_bytes(gmem, base + lo, span).view(_V16)[gidx] = data.view(_V16)[dst // _CHUNK + sidx]
        return tmap.box_bytes
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
