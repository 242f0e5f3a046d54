"""The cached TMA box plan (per tensor map: relative offsets, swizzled shared offsets; 16-B chunk
gathers for whole boxes) equals the plan built from scratch for every call (`_box_transfer_uncached`),
and tma_load / tma_store move exactly the bytes the element-level plan names (OOB fill included)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hopsim.functional.smem import SharedMemory
from hopsim.functional.tma import _box_transfer_uncached, _fill, box_transfer, global_ranges, tma_load, tma_store
from isa.swizzle import SwizzleMode
from isa.tensormap import TensorMap

DTYPES = {"u8": 1, "f16": 2, "f32": 4, "f64": 8}


def random_case(seed: int):
    """A random valid tensor map (rank 1..5, every swizzle, element strides), coordinates that are
    inside, hanging over an edge or fully outside, and a 128-B aligned destination of any phase."""
    rng = np.random.default_rng(seed)
    dtype = str(rng.choice(list(DTYPES)))
    e = DTYPES[dtype]
    rank = int(rng.integers(1, 6))
    swizzle = list(SwizzleMode)[int(rng.integers(0, 4))]
    span = swizzle.span_bytes if swizzle is not SwizzleMode.NONE else 64
    inner = int(rng.integers(1, span // 16 + 1)) * 16 // e  # elements: a multiple of 16 B, <= span
    box = [inner] + [int(rng.integers(1, 6 if rank > 2 else 17)) for _ in range(rank - 1)]
    dims = [int(rng.integers(1, 3 * b + 2)) for b in box]
    strides, s = [], -(-dims[0] * e // 16) * 16
    for d in dims[1:]:
        s += 16 * int(rng.integers(0, 3))  # padded rows
        strides.append(s)
        s *= d
    es = [1] + [int(rng.integers(1, 4)) for _ in range(rank - 1)]
    tmap = TensorMap(dtype, tuple(dims), tuple(strides), tuple(box), element_strides=tuple(es),
                     global_address=16 * int(rng.integers(0, 4)), swizzle=swizzle,
                     oob_fill=str(rng.choice(["zero", "nan"])) if dtype != "u8" else "zero")
    kind = rng.integers(0, 3)
    coords = []
    for d, b in zip(dims, box):
        if kind == 0:
            coords.append(int(rng.integers(0, max(d - b, 0) + 1)))  # inside when the box fits
        elif kind == 1:
            coords.append(int(rng.integers(-b, d + 1)))  # over an edge
        else:
            coords.append(int(rng.choice([-3 * b - 1, d + int(rng.integers(0, 5))])))  # outside
    gbytes = s + tmap.global_address + 64
    dst = 128 * int(rng.integers(0, 16))
    return tmap, tuple(coords), dst, gbytes, rng


def element_load(gmem, tmap, coords, smem, dst):
    """The element-level load from the uncached plan (one element at a time)."""
    t = _box_transfer_uncached(tmap, coords, dst, smem.nbytes)
    fill = _fill(tmap)
    for k in range(t.in_bounds.size):
        s = int(t.smem_addrs[k])
        if t.in_bounds[k]:
            g = int(t.global_addrs[k])
            smem.data[s:s + t.elem_bytes] = gmem[g:g + t.elem_bytes]
        else:
            smem.data[s:s + t.elem_bytes] = fill


def element_store(gmem, tmap, coords, smem, src):
    t = _box_transfer_uncached(tmap, coords, src, smem.nbytes)
    n = 0
    for k in np.flatnonzero(t.in_bounds):
        g, s = int(t.global_addrs[k]), int(t.smem_addrs[k])
        gmem[g:g + t.elem_bytes] = smem.data[s:s + t.elem_bytes]
        n += t.elem_bytes
    return n


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_cached_plan_equals_uncached(seed):
    tmap, coords, dst, _, _ = random_case(seed)
    for _ in range(2):  # the second call reads the cache
        a, b = box_transfer(tmap, coords, dst), _box_transfer_uncached(tmap, coords, dst)
        assert (a.elem_bytes, a.tx_bytes) == (b.elem_bytes, b.tx_bytes)
        assert np.array_equal(a.smem_addrs, b.smem_addrs) and np.array_equal(a.in_bounds, b.in_bounds)
        assert np.array_equal(a.global_addrs[b.in_bounds], b.global_addrs[b.in_bounds])
        assert a.smem_addrs.dtype == a.global_addrs.dtype == np.int64
        a.smem_addrs[:] = -1  # the caller owns the arrays: the cache is not touched
        a.global_addrs[:] = -1


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_load_and_store_move_the_element_plan_bytes(seed):
    tmap, coords, dst, nbytes, rng = random_case(seed)
    gmem = rng.integers(0, 256, nbytes, dtype=np.uint8)
    smem_fast, smem_ref = SharedMemory(), SharedMemory()
    smem_fast.data[:] = smem_ref.data[:] = rng.integers(0, 256, smem_ref.nbytes, dtype=np.uint8)
    assert tma_load(gmem, tmap, coords, smem_fast, dst) == tmap.box_bytes
    element_load(gmem, tmap, coords, smem_ref, dst)
    assert np.array_equal(smem_fast.data, smem_ref.data)
    g_fast, g_ref = gmem.copy(), gmem.copy()
    smem_ref.data[:] = rng.integers(0, 256, smem_ref.nbytes, dtype=np.uint8)
    assert tma_store(g_fast, tmap, coords, smem_ref, dst) == element_store(g_ref, tmap, coords, smem_ref, dst)
    assert np.array_equal(g_fast, g_ref)


def test_global_ranges_unchanged_by_the_cache():
    for seed in range(50):
        tmap, coords, _, _, _ = random_case(seed)
        t = _box_transfer_uncached(tmap, coords, 0)
        g = np.unique(t.global_addrs[t.in_bounds])
        covered = {int(a) + k for a, n in global_ranges(tmap, coords) for k in range(0, n, t.elem_bytes)}
        assert covered == set(g.tolist())
