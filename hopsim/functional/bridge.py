"""The executor's view of the layouts modules (TMA box copy, tensor maps, WGMMA operand fetch).

The layouts helper owns `hopsim.functional.tma`, `hopsim.functional.layouts`, `isa.tensormap`,
`isa.descriptor`, `isa.swizzle`; this module adapts them to the few calls the executor makes:

    box_bytes(tmap) -> int                                       bytes one box writes to smem
    global_ranges(gmem, tmap, coords) -> ((addr, nbytes), ...)   global rows the box touches
    tma_load(gmem, tmap, coords, smem, dst)                      box -> smem[dst:] (swizzled, OOB = 0)
    tma_store(gmem, tmap, coords, smem, src)                     smem[src:] -> global (in-bounds only)
    operand_chunks(desc, which, rows, dtype, trans) -> sorted unique 16-B chunk indices read
    fetch_operand(smem, desc, which, rows, dtype, trans) -> uint16[rows, 16] element bits
        which "A": rows = M = 64, element [m, k];  which "B": rows = N, element [n, k]
        trans 0 = K-major operand, 1 = MN-major (imm-trans-a/b)

INTERIM: until those modules land, the functions below are a small self-contained reading of the
same PTX rules (hopper-facts §4.1, §5.1, §7.2), enough for the executor's tests: tile-mode boxes
(element strides 1, no interleave) and the canonical K-major / MN-major descriptor layouts. They
are replaced by calls into the layouts modules when those exist (see `_delegate`).

    Swizzle<B,4,3> on the absolute byte address a:  a ^ (((a >> 7) & (2^B - 1)) << 4)
        B = 3 (128B span), 2 (64B), 1 (32B), 0 (none)

    K-major operand, element (r, k) of a 16-bit type (T = 8 elements per 16 B):
        swizzled: start + (r % 8) * span + (r // 8) * SBO + (k % T) * 2 + (k // T) * 16, then Swizzle
        none:     start + (r % 8) * 16   + (r // 8) * SBO + (k % T) * 2 + (k // T) * LBO
    MN-major operand, element (mn, k):
        swizzled: start + (k % 8) * span + (mn % (span/2)) * 2 + (mn // (span/2)) * LBO + (k // 8) * SBO
        none:     start + (k % 8) * 16   + (mn % T) * 2 + (mn // T) * SBO + (k // 8) * LBO

    descriptor: bits 0-13 start >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4, 49-51 base offset,
                62-63 layout type (0 none, 1 128B, 2 64B, 3 32B)
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from hopsim.functional.errors import IllegalInstruction

_SPAN = {0: 0, 1: 128, 2: 64, 3: 32}          # descriptor layout type -> swizzle span (bytes)
_SWZ_BITS = {0: 0, 32: 1, 64: 2, 128: 3}       # span -> Swizzle B


def swizzle(addr: np.ndarray, span: int) -> np.ndarray:
    """Swizzle<B,4,3> of absolute byte addresses for a span of 0/32/64/128 bytes."""
    b = _SWZ_BITS[span]
    if b == 0:
        return addr
    return addr ^ (((addr >> 7) & ((1 << b) - 1)) << 4)


# ------------------------------------------------------------------------------ tensor maps
def _attr(obj, *names, default=None):
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    if default is not None:
        return default
    raise IllegalInstruction(f"tensor map {obj!r} has none of the fields {names}")


_GEOM: dict[int, tuple] = {}


def _geometry(tmap):
    """(global address, dims, strides (bytes; dim 0 = elem size), box, elem bytes, swizzle span)."""
    hit = _GEOM.get(id(tmap))
    if hit is not None and hit[0] is tmap:
        return hit[1]
    g = _geometry_uncached(tmap)
    if len(_GEOM) > 1024:
        _GEOM.clear()
    _GEOM[id(tmap)] = (tmap, g)
    return g


def _geometry_uncached(tmap):
    esize = int(_attr(tmap, "elem_bytes", "element_bytes", "elem_size"))
    dims = tuple(int(d) for d in _attr(tmap, "global_dims", "dims", "global_dim"))
    strides = tuple(int(s) for s in _attr(tmap, "global_strides", "strides", "global_stride"))
    if len(strides) == len(dims) - 1:
        strides = (esize,) + strides
    box = tuple(int(b) for b in _attr(tmap, "box_dims", "box", "box_dim"))
    swz = _attr(tmap, "swizzle_bytes", "swizzle", default=0)
    swz = int(getattr(swz, "value", swz) or 0)
    if swz in (1, 2, 3):  # an enum index: 1 = 32B, 2 = 64B, 3 = 128B (CUtensorMapSwizzle order)
        swz = {1: 32, 2: 64, 3: 128}[swz]
    addr = int(_attr(tmap, "global_address", "address", "base"))
    return addr, dims, strides, box, esize, swz


def box_bytes(tmap) -> int:
    f = _delegate("box_bytes")
    if f is not None:
        return int(f(tmap))
    _, _, _, box, esize, _ = _geometry(tmap)
    return int(np.prod(box)) * esize


def _box_offsets(tmap, coords):
    """Global byte offsets of every box element (row-major box, dim 0 fastest) and the in-bounds mask."""
    addr, dims, strides, box, esize, _ = _geometry(tmap)
    if len(coords) != len(dims):
        raise IllegalInstruction(f"TMA with {len(coords)} coordinates on a {len(dims)}-d tensor map")
    off = np.zeros(1, dtype=np.int64)
    ok = np.ones(1, dtype=bool)
    for d in reversed(range(len(dims))):
        idx = coords[d] + np.arange(box[d], dtype=np.int64)
        inb = (idx >= 0) & (idx < dims[d])
        off = (off[:, None] + idx[None, :] * strides[d]).ravel()
        ok = (ok[:, None] & inb[None, :]).ravel()
    return addr, off, ok, esize


def global_ranges(gmem, tmap, coords) -> tuple:
    """(address, nbytes) of each in-bounds box row in global memory (dim-0 runs)."""
    f = _delegate("global_ranges")
    if f is not None:
        return tuple(f(gmem, tmap, coords))
    addr, dims, strides, box, esize, _ = _geometry(tmap)
    lo = max(coords[0], 0)
    hi = min(coords[0] + box[0], dims[0])
    if hi <= lo:
        return ()
    rows = np.zeros(1, dtype=np.int64)
    ok = np.ones(1, dtype=bool)
    for d in reversed(range(1, len(dims))):
        idx = coords[d] + np.arange(box[d], dtype=np.int64)
        inb = (idx >= 0) & (idx < dims[d])
        rows = (rows[:, None] + idx[None, :] * strides[d]).ravel()
        ok = (ok[:, None] & inb[None, :]).ravel()
    start = addr + lo * esize
    n = (hi - lo) * esize
    starts = (rows[ok] + start).tolist()
    return tuple(zip(starts, [n] * len(starts)))


def _smem_addrs(dst: int, nbytes: int, span: int) -> np.ndarray:
    """Swizzled smem byte address of each byte of a packed box written at dst."""
    a = dst + np.arange(nbytes, dtype=np.int64)
    return swizzle(a, span)


def tma_load(gmem, tmap, coords, smem: np.ndarray, dst: int) -> None:
    f = _delegate("tma_load")
    if f is not None:
        f(gmem, tmap, coords, smem, dst)
        return
    base, off, ok, esize = _box_offsets(tmap, coords)
    swz = _geometry(tmap)[5]
    nbytes = len(off) * esize
    data = np.zeros((len(off), esize), dtype=np.uint8)
    if ok.any():
        good = off[ok]
        lo, hi = int(good.min()), int(good.max()) + esize
        region = gmem.region(base + lo, hi - lo)
        data[ok] = region[(good - lo)[:, None] + np.arange(esize)]
    smem[_smem_addrs(dst, nbytes, swz)] = data.ravel()


def tma_store(gmem, tmap, coords, smem: np.ndarray, src: int) -> None:
    f = _delegate("tma_store")
    if f is not None:
        f(gmem, tmap, coords, smem, src)
        return
    base, off, ok, esize = _box_offsets(tmap, coords)
    swz = _geometry(tmap)[5]
    data = smem[_smem_addrs(src, len(off) * esize, swz)].reshape(len(off), esize)
    if ok.any():
        good = off[ok]
        lo, hi = int(good.min()), int(good.max()) + esize
        region = gmem.region(base + lo, hi - lo)
        region[(good - lo)[:, None] + np.arange(esize)] = data[ok]


# ------------------------------------------------------------------------------ descriptors
def decode(desc: int) -> tuple[int, int, int, int, int]:
    """(start, LBO, SBO, base_offset, layout type) in bytes."""
    start = (desc & 0x3FFF) << 4
    lbo = ((desc >> 16) & 0x3FFF) << 4
    sbo = ((desc >> 32) & 0x3FFF) << 4
    base = (desc >> 49) & 7
    layout = (desc >> 62) & 3
    return start, lbo, sbo, base, layout


@lru_cache(maxsize=4096)
def operand_addresses(desc: int, rows: int, trans: int) -> np.ndarray:
    """Byte address of element [r, k] (int64[rows, 16]) of a 16-bit operand through `desc`."""
    f = _delegate("operand_addresses")
    if f is not None:
        a = np.asarray(f(desc, rows, trans), dtype=np.int64)
        a.setflags(write=False)
        return a
    start, lbo, sbo, base, layout = decode(desc)
    span = _SPAN[layout]
    r = np.arange(rows, dtype=np.int64)[:, None]
    k = np.arange(16, dtype=np.int64)[None, :]
    if not trans:  # K-major
        if span:
            a = start + (r % 8) * span + (r // 8) * sbo + (k % 8) * 2 + (k // 8) * 16
        else:
            a = start + (r % 8) * 16 + (r // 8) * sbo + (k % 8) * 2 + (k // 8) * lbo
    else:          # MN-major
        if span:
            per = span // 2
            a = start + (k % 8) * span + (r % per) * 2 + (r // per) * lbo + (k // 8) * sbo
        else:
            a = start + (k % 8) * 16 + (r % 8) * 2 + (r // 8) * sbo + (k // 8) * lbo
    if span:
        # base offset: the pattern starts at a 128-B row `base` within its repeat (PTX: (addr >> 7) & 7)
        a = swizzle(a + (base << 7), span) - (base << 7) if base else swizzle(a, span)
    a.setflags(write=False)
    return a


@lru_cache(maxsize=4096)
def operand_chunks(desc: int, which: str, rows: int, dtype: str, trans: int) -> np.ndarray:
    a = operand_addresses(desc, rows, trans)
    c = np.unique(a >> 4)
    c.setflags(write=False)
    return c


def fetch_operand(smem: np.ndarray, desc: int, which: str, rows: int, dtype: str, trans: int) -> np.ndarray:
    a = operand_addresses(desc, rows, trans)
    lo = smem[a]
    hi = smem[a + 1]
    return lo.astype(np.uint16) | (hi.astype(np.uint16) << 8)


# ------------------------------------------------------------------------------ delegation
_DELEGATES: dict[str, object] = {}


def _delegate(name: str):
    """The layouts modules' implementation of `name`, once they provide one (else None)."""
    return _DELEGATES.get(name)
