"""Register bits round-trip per PTX type; global memory per-lane access equals numpy indexing."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from hopsim.functional.errors import IllegalInstruction
from hopsim.functional.gmem import GlobalMemory
from hopsim.functional.regs import RegisterFile, RegLayout, from_bits, to_bits


@pytest.mark.parametrize("t,vals", [
    ("u32", np.array([0, 1, 2**32 - 1], np.uint32)),
    ("s32", np.array([-1, 0, 2**31 - 1, -2**31], np.int32)),
    ("f32", np.array([1.5, -0.0, np.inf], np.float32)),
    ("u64", np.array([2**64 - 1, 5], np.uint64)),
    ("s64", np.array([-7, 2**62], np.int64)),
    ("f16", np.array([1.5, -2.0], np.float16)),
    ("pred", np.array([True, False])),
])
def test_bits_roundtrip(t, vals):
    assert np.array_equal(from_bits(to_bits(vals, t), t), vals)


def test_negative_s32_wraps_and_zero_extends():
    b = to_bits(np.array([-1], np.int64), "s32")
    assert b[0] == 0xFFFFFFFF
    assert from_bits(b, "u32")[0] == 0xFFFFFFFF


@dataclass(frozen=True)
class _Decl:
    type: str
    name: str
    count: int | None = None


def test_register_file_rows_and_masked_write():
    lay = RegLayout.from_decls([_Decl("u32", "%r", 4), _Decl("f32", "%acc", 2), _Decl("pred", "%p")])
    assert lay.row("%r3") == 3 and lay.row("%acc1") == 5 and lay.row("%p") == 6
    rf = RegisterFile(lay, 64)
    w1 = slice(32, 64)
    rf.write(4, np.arange(32, dtype=np.float32), "f32", w1)
    mask = np.arange(32) % 2 == 0
    rf.write(4, np.full(32, -1.0, np.float32), "f32", w1, mask)
    got = rf.read(4, "f32", w1)
    exp = np.where(mask, -1.0, np.arange(32)).astype(np.float32)
    assert np.array_equal(got, exp)
    assert np.all(rf.read(4, "f32", slice(0, 32)) == 0)


def test_gmem_load_store_equal_numpy():
    g = GlobalMemory()
    x = np.arange(1000, dtype=np.float32)
    ax = g.alloc("x", x)
    ay = g.alloc("y", 4 * 100)
    assert ax % 256 == 0 and ay % 256 == 0 and ay >= ax + x.nbytes
    idx = np.array([3, 999, 0, 17])
    got = g.load(ax + 4 * idx.astype(np.uint64), np.float32)
    assert np.array_equal(got[:, 0], x[idx])
    v = g.load(np.array([ax + 16], np.uint64), np.float32, count=4)
    assert np.array_equal(v[0], x[4:8])
    g.store(ay + 4 * np.arange(4, dtype=np.uint64), np.array([1, 2, 3, 4], np.float32), np.float32)
    assert np.array_equal(g.view("y", np.float32)[:4], [1, 2, 3, 4])


def test_gmem_out_of_bounds_named():
    g = GlobalMemory()
    a = g.alloc("x", 64)
    with pytest.raises(IllegalInstruction, match="outside every buffer"):
        g.load(np.array([a + 64], np.uint64), np.uint32)
    with pytest.raises(IllegalInstruction, match="misaligned"):
        g.load(np.array([a + 2], np.uint64), np.uint32)


def test_tensor_map_registry():
    g = GlobalMemory()
    h = g.register_tensor_map("tmapA", object())
    assert h % 64 == 0 and g.tensor_map(h) is not None
    with pytest.raises(IllegalInstruction, match="tensor map"):
        g.tensor_map(h + 128)
