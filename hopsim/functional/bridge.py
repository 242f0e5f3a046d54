"""The executor's view of the layouts modules (TMA box copy, tensor maps, WGMMA operand fetch).

The layouts modules own the rules: `isa.tensormap.TensorMap` (box geometry), `hopsim.functional.tma`
(box copy with swizzle and OOB fill), `isa.descriptor.MatrixDescriptor` + `hopsim.functional.layouts`
(the shared address of every operand element through a descriptor). This module only adapts them to
the executor's calls and caches what repeats every k-block (descriptor values recur per stage):

    box_bytes(tmap) -> int                                       tx bytes of one box
    smem_footprint(tmap) -> int                                  shared bytes the box occupies
    global_ranges(gmem, tmap, coords) -> ((addr, nbytes), ...)   global runs the box touches
    tma_load(gmem, tmap, coords, smem, dst)                      box -> shared (swizzled, OOB filled)
    tma_store(gmem, tmap, coords, smem, src)                     shared -> global (in-bounds only)
    operand_addresses(desc, which, rows, dtype, trans) -> int64[rows, 16]  (cached)
    operand_chunks(desc, which, rows, dtype, trans) -> sorted unique 16-B chunks (cached)
    fetch_operand(smem, desc, which, rows, dtype, trans) -> uint16[rows, 16] element bits
        which "A": rows = 64, element [m, k];  which "B": rows = N, element [n, k] (B^T)
        trans 0 = K-major, 1 = MN-major (imm-trans-a/b)
`smem` is the executor's uint8 array; `gmem` a `GlobalMemory`.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import repeat

import numpy as np

from hopsim.functional import layouts as _layouts
from hopsim.functional import tma as _tma
from isa.descriptor import MatrixDescriptor


class _SmemView:
    """The `SharedMemory` interface `tma.py` uses (.data, .nbytes) over the executor's byte array."""

    __slots__ = ("data",)

    def __init__(self, data: np.ndarray):
        self.data = data

    @property
    def nbytes(self) -> int:
        return self.data.size


_GEOM: dict = {}  # id(tmap) -> (tmap, box bytes, smem footprint): TensorMap is frozen, the entry keeps it alive
_RUNS_GEOM: dict = {}  # id(tmap) -> (tmap, dims, strides, box counts, element strides all 1 past dim 0, elem bytes, address, key)
_GEOM_IDS: dict = {}  # a unit-stride geometry (those fields) -> its key in _RANGES
_RANGES: dict = {}  # (geometry key, coords) -> (tmap, global runs): a tile's runs recur for every CTA reading it
_RUNS_MAX = 1 << 18  # runs held by _RANGES before it is emptied (about 20 MB)
_held = [0]


def _geom(tmap) -> tuple:
    g = _GEOM.get(id(tmap))
    if g is None or g[0] is not tmap:
        if len(_GEOM) >= 4096:
            _GEOM.clear()
        g = _GEOM[id(tmap)] = (tmap, int(tmap.box_bytes), int(tmap.smem_footprint))
    return g


def geometry(tmap) -> tuple:
    """(tmap, box bytes, smem footprint) of a tensor map (cached)."""
    return _geom(tmap)


def box_bytes(tmap) -> int:
    return _geom(tmap)[1]


def smem_footprint(tmap) -> int:
    return _geom(tmap)[2]


def global_ranges(gmem, tmap, coords) -> tuple:
    """Contiguous in-bounds global runs of the box (cached per tensor-map geometry and coordinates:
    the runs of a row-major map are a function of its geometry (`_geometry`), so the tensor maps
    of every launch of one GEMM, e.g. the clock solve's re-timings, share them)."""
    g = _RUNS_GEOM.get(id(tmap))
    if g is None or g[0] is not tmap:
        g = _geometry(tmap)
    key = (g[7], coords)
    hit = _RANGES.get(key)
    if hit is not None and (hit[0] is tmap or g[4]):
        return hit[1]
    out = _global_ranges(tmap, coords)
    if _held[0] + len(out) > _RUNS_MAX:
        _RANGES.clear()
        _held[0] = 0
    _RANGES[key] = (tmap, out)
    _held[0] += len(out) + 1
    return out


def _geometry(tmap) -> tuple:
    """_RUNS_GEOM's entry of `tmap`: (tmap, dims, strides, box counts, element strides all 1 past
    dim 0, elem bytes, address, key) with key the geometry's own id (one per distinct geometry of
    those fields) for a map of unit element strides, else a key of this map object alone."""
    if len(_RUNS_GEOM) >= 4096:
        _RUNS_GEOM.clear()
    geo = (tuple(tmap.global_dims), tuple(tmap.global_strides_bytes), tuple(tmap.box_counts),
           all(s == 1 for s in tmap.element_strides[1:]), tmap.elem_bytes, tmap.global_address)
    if geo[3]:
        if len(_GEOM_IDS) >= 4096:
            _GEOM_IDS.clear()
            _RANGES.clear()
            _held[0] = 0
        key = _GEOM_IDS.setdefault(geo, ("geometry", len(_GEOM_IDS)))
    else:
        key = ("map", id(tmap))
    g = _RUNS_GEOM[id(tmap)] = (tmap, *geo, key)
    return g


def _global_ranges(tmap, coords) -> tuple:
    """One run per box row for a row-major tensor.

    Computed from the tensor-map geometry per row (dim 0 run, clipped to the tensor), which equals
    `tma.global_ranges` for element strides 1 without building the element-level plan (test_executor
    checks the equality)."""
    g = _RUNS_GEOM.get(id(tmap))
    if g is None or g[0] is not tmap:  # the tensor map's geometry, read once (box_counts is computed)
        g = _geometry(tmap)
    _t, dims, strides, box, unit, e, address, _key = g
    if not unit:
        return _tma.global_ranges(tmap, coords)
    lo = max(coords[0], 0)
    hi = min(coords[0] + box[0], dims[0])
    if hi <= lo:
        return ()
    n = (hi - lo) * e
    if len(dims) == 2 and strides[0] > 0:  # a 2-D box: one run per row in address order, or one run
        r0, r1 = max(coords[1], 0), min(coords[1] + box[1], dims[1])
        first, step = address + lo * e + r0 * strides[0], strides[0]
        if r1 <= r0:
            return ()
        if step == n:  # rows that touch merge (as below)
            return ((first, n * (r1 - r0)),)
        rows = r1 - r0
        return tuple(zip(range(first, first + rows * step, step), repeat(n, rows)))
    starts = [address + lo * e]  # plain ints: a box has few rows (numpy costs more here)
    for d in range(len(dims) - 1, 0, -1):
        step = strides[d - 1]
        offs = [i * step for i in range(max(coords[d], 0), min(coords[d] + box[d], dims[d]))]
        starts = [a + b for a in starts for b in offs]
    n = (hi - lo) * e
    out = []
    for a in sorted(starts):  # merge rows that touch (as tma.global_ranges does)
        if out and out[-1][0] + out[-1][1] == a:
            out[-1][1] += n
        else:
            out.append([a, n])
    return tuple((a, b) for a, b in out)


def tma_load(gmem, tmap, coords, smem: np.ndarray, dst: int) -> None:
    _tma.tma_load(gmem, tmap, coords, _SmemView(smem), dst)


def tma_store(gmem, tmap, coords, smem: np.ndarray, src: int) -> None:
    _tma.tma_store(gmem, tmap, coords, _SmemView(smem), src)


@lru_cache(maxsize=8192)
def operand_addresses(desc: int, which: str, rows: int, dtype: str, trans: int) -> np.ndarray:
    md = MatrixDescriptor.decode(int(desc), strict=False)
    a = _layouts.operand_addresses(md, which, "MN" if trans else "K", dtype, rows if which == "B" else None)
    a = np.ascontiguousarray(a, dtype=np.int64)
    a.setflags(write=False)
    return a


@lru_cache(maxsize=8192)
def operand_chunks(desc: int, which: str, rows: int, dtype: str, trans: int) -> np.ndarray:
    c = np.unique(operand_addresses(desc, which, rows, dtype, trans) >> 4)
    c.setflags(write=False)
    return c


def fetch_operand(smem: np.ndarray, desc: int, which: str, rows: int, dtype: str, trans: int) -> np.ndarray:
    """uint16[rows, 16]: the 16-bit element bits the operand read returns (little-endian bytes)."""
    a = operand_addresses(desc, which, rows, dtype, trans)
    return smem[a].astype(np.uint16) | (smem[a + 1].astype(np.uint16) << 8)
