"""TMA box copies: laws against numpy, and TMA -> WGMMA operand fetch reproduces the tile.

Also the SharedMemory byte store the copies write into (gather/scatter, bounds, alignment).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hopsim.functional.layouts import fetch_operand
from hopsim.functional.smem import SharedMemory
from hopsim.functional.tma import box_transfer, global_ranges, tma_load, tma_store
from isa.descriptor import MatrixDescriptor, lint
from isa.dtypes import bf16_bits_to_f32, f32_to_bf16_bits
from isa.errors import InputError
from isa.swizzle import SwizzleMode
from isa.tensormap import TensorMap

RNG = np.random.default_rng(7)


def gbytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8).ravel().copy()


# ------------------------------------------------------------------- TMA -> WGMMA operand fetch
def load_k_major(rows, ktot, mode, dst):
    """G[rows, ktot] f16 row-major; boxes of (span/2 or 8) K x rows; returns (G, smem, desc(kb))."""
    g = RNG.standard_normal((rows, ktot)).astype(np.float16)
    inner = 8 if mode is SwizzleMode.NONE else mode.span_bytes // 2
    t = TensorMap("f16", (ktot, rows), (ktot * 2,), (inner, rows), swizzle=mode)
    smem = SharedMemory()
    for j in range(ktot // inner):
        assert tma_load(gbytes(g), t, (j * inner, 0), smem, dst + j * t.box_bytes) == rows * inner * 2

    def desc(kb):
        if mode is SwizzleMode.NONE:  # two 8-element core matrices per k-block: boxes 2kb, 2kb+1
            return MatrixDescriptor(dst + 2 * kb * t.box_bytes, t.box_bytes, 128, 0, mode)
        j, off = divmod(kb * 32, mode.span_bytes)
        return MatrixDescriptor(dst + j * t.box_bytes + off, 16, mode.atom_bytes, 0, mode)
    return g, smem, desc


def load_mn_major(rows, ktot, mode, dst):
    """G^T[ktot, rows] f16 (MN contiguous); per k-block, boxes of (span/2 or 8) MN x 16 K."""
    gt = RNG.standard_normal((ktot, rows)).astype(np.float16)
    inner = 8 if mode is SwizzleMode.NONE else mode.span_bytes // 2
    t = TensorMap("f16", (rows, ktot), (rows * 2,), (inner, 16), swizzle=mode)
    smem = SharedMemory()
    per_kb = (rows // inner) * t.box_bytes
    for kb in range(ktot // 16):
        for i in range(rows // inner):
            tma_load(gbytes(gt), t, (i * inner, 16 * kb), smem, dst + kb * per_kb + i * t.box_bytes)

    def desc(kb):
        start = dst + kb * per_kb
        if mode is SwizzleMode.NONE:  # core matrix rows = k at 16 B; next 8 k: 128 B; next 8 MN: one box
            return MatrixDescriptor(start, 128, t.box_bytes, 0, mode)
        return MatrixDescriptor(start, t.box_bytes, mode.atom_bytes, 0, mode)  # LBO: next MN atom box
    return gt.T, smem, desc


def other_mode(mode):
    return SwizzleMode((mode.value + 1) % 4)


@pytest.mark.parametrize("major,mode,operand,rows", [
    (mj, md, op, r) for mj, md in itertools.product(["K", "MN"], list(SwizzleMode))
    for op, r in (("A", 64), ("B", 64), ("B", 128), ("B", 256))])
@pytest.mark.parametrize("dst", [1024, 4096 + 2048])
def test_tma_then_wgmma_fetch_reproduces_tile(major, mode, operand, rows, dst):
    tile, smem, desc = (load_k_major if major == "K" else load_mn_major)(rows, 64, mode, dst)
    n = None if operand == "A" else rows
    for kb in range(4):
        d = desc(kb)
        got = fetch_operand(smem, d, operand, major, "f16", n)
        assert np.array_equal(got, tile[:rows, 16 * kb:16 * kb + 16]), (kb, d)
        assert not [f for f in lint(d, operand=operand, major=major, dtype="f16",
                                    tile=(rows, 16 if major == "MN" else 64), swizzle=mode, n=n)
                    if f.severity == "error"]
    # a descriptor with the wrong swizzle reads a different tile, and lint says why
    bad = MatrixDescriptor(d.start_address_bytes, d.lbo_bytes, d.sbo_bytes, 0, other_mode(mode))
    wrong = fetch_operand(smem, bad, operand, major, "f16", n)
    assert not np.array_equal(wrong, tile[:rows, 48:64])
    findings = lint(bad, operand=operand, major=major, dtype="f16", tile=(rows, 64), swizzle=mode, n=n)
    assert any(f.field == "layout_type" and f.expected.startswith(str(mode.desc_code)) for f in findings)


def test_non_1024_aligned_destination_uses_absolute_pattern():
    # TMA anchors the 128B pattern on absolute address bits: a box at 1024 + 384 is read back with
    # base offset 0 and the same descriptor arithmetic (docs/hopper-facts.md §4.1 anchoring)
    tile, smem, desc = load_k_major(64, 64, SwizzleMode.B128, 1024 + 384)
    first_line = smem.read(np.arange(1024 + 384, 1024 + 512, 16), "u8")  # chunk c holds logical c ^ 3
    assert first_line.size == 8
    assert np.array_equal(fetch_operand(smem, desc(0), "A", "K", "f16"), tile[:, :16])


# ----------------------------------------------------------------------- box copy against numpy
@pytest.mark.parametrize("mode", list(SwizzleMode))
def test_box_bytes_land_at_swizzled_addresses(mode):
    g = RNG.integers(0, 1 << 16, size=(100, 96), dtype=np.uint16)  # u16 tensor 96 wide, 100 rows
    inner = 8 if mode is SwizzleMode.NONE else mode.span_bytes // 2
    t = TensorMap("u16", (96, 100), (192,), (inner, 32), swizzle=mode)
    smem = SharedMemory()
    tma_load(gbytes(g), t, (16, 40), smem, 2048)
    r, c = np.indices((32, inner))
    lin = 2048 + r * t.smem_row_pitch + 2 * c
    assert np.array_equal(smem.read(mode.apply(lin), "u16"), g[40:72, 16:16 + inner])


@pytest.mark.parametrize("fill", ["zero", "nan"])
def test_out_of_bounds_fill_and_tx_count(fill):
    g = RNG.standard_normal((20, 40)).astype(np.float32)
    t = TensorMap("f32", (40, 20), (160,), (32, 16), swizzle="128B", oob_fill=fill)
    smem = SharedMemory()
    smem.data[:] = 0xAB
    tx = tma_load(gbytes(g), t, (24, -4), smem, 1024)  # cols 24..55 (40.. OOB), rows -4..11 (<0 OOB)
    assert tx == 32 * 16 * 4  # the full box, OOB fill included
    r, c = np.indices((16, 32))
    box = smem.read(SwizzleMode.B128.apply(1024 + 128 * r + 4 * c), "f32")
    gr, gc = r - 4, c + 24
    inside = (gr >= 0) & (gc < 40)
    assert np.array_equal(box[inside], g[gr[inside], gc[inside]])
    if fill == "zero":
        assert (box[~inside] == 0).all()
    else:
        assert np.isnan(box[~inside]).all()


def test_fully_out_of_bounds_box_still_counts_bytes():
    t = TensorMap("f16", (64, 64), (128,), (64, 8), swizzle="128B")
    smem = SharedMemory()
    assert tma_load(np.zeros(8192, np.uint8), t, (0, 1000), smem, 0) == 64 * 8 * 2
    assert (smem.data[:1024] == 0).all()


def test_store_writes_only_in_bounds_elements():
    g = np.zeros((20, 40), dtype=np.float32)
    before = gbytes(g)
    t = TensorMap("f32", (40, 20), (160,), (32, 16), swizzle="128B")
    smem = SharedMemory()
    vals = RNG.standard_normal((16, 32)).astype(np.float32)
    r, c = np.indices((16, 32))
    smem.write(SwizzleMode.B128.apply(1024 + 128 * r + 4 * c), vals)
    written = tma_store(before, t, (24, 10), smem, 1024)  # rows 10..25 (>=20 OOB), cols 24..55 (>=40 OOB)
    out = before.view(np.float32).reshape(20, 40)
    assert written == 10 * 16 * 4
    assert np.array_equal(out[10:20, 24:40], vals[:10, :16])
    out[10:20, 24:40] = 0
    assert (out == 0).all()


def test_round_trip_load_store_rank3_with_element_strides():
    g = RNG.integers(0, 255, size=(6, 10, 32), dtype=np.uint8)  # dims (32, 10, 6)
    t = TensorMap("u8", (32, 10, 6), (32, 320), (32, 5, 3), element_strides=(1, 2, 1), swizzle="32B")
    smem = SharedMemory()
    tma_load(gbytes(g), t, (0, 1, 2), smem, 512)
    out = np.zeros_like(gbytes(g))
    tma_store(out, t, (0, 1, 2), smem, 512)
    o = out.reshape(6, 10, 32)
    assert t.box_counts == (32, 3, 3)
    assert np.array_equal(o[2:5, 1:7:2, :], g[2:5, 1:7:2, :])
    o[2:5, 1:7:2, :] = 0
    assert (o == 0).all()


def test_global_ranges():
    t = TensorMap("f16", (64, 64), (256,), (64, 4))
    rs = global_ranges(t, (0, 62))
    assert rs == ((62 * 256, 128), (63 * 256, 128))  # rows 64, 65 are out of bounds


def test_destination_alignment_and_bounds():
    t = TensorMap("f16", (64, 64), (128,), (64, 64), swizzle="128B")
    smem = SharedMemory()
    with pytest.raises(InputError, match="128"):
        tma_load(np.zeros(8192, np.uint8), t, (0, 0), smem, 1024 + 64)
    with pytest.raises(InputError, match="needs 8192 B"):
        tma_load(np.zeros(8192, np.uint8), t, (0, 0), smem, smem.nbytes - 4096)
    with pytest.raises(InputError, match="coordinates"):
        box_transfer(t, (0,), 0)


# ------------------------------------------------------------------------------ SharedMemory
def test_smem_typed_gather_scatter():
    s = SharedMemory(4096)
    a = np.array([[0, 8], [16, 24]])
    s.write(a, np.array([[1.5, -2.0], [3.25, 4.0]], dtype=np.float32))
    assert s.read(a, "f32").tolist() == [[1.5, -2.0], [3.25, 4.0]]
    assert s.read(np.array([0]), "u8")[0] == 0x00 and s.read(np.array([3]), "u8")[0] == 0x3F  # 1.5f = 0x3fc00000
    s.write_bytes(100, b"\x01\x02\x03")
    assert s.read_bytes(100, 3).tolist() == [1, 2, 3]
    bits = f32_to_bf16_bits(np.array([1.0, -3.5, 1 / 3], dtype=np.float32))
    s.write(np.array([200, 202, 204]), bits, "bf16")
    assert np.array_equal(s.read(np.array([200, 202, 204]), "bf16"), bits)
    assert bf16_bits_to_f32(bits)[:2].tolist() == [1.0, -3.5]


def test_smem_checks():
    s = SharedMemory(1024)
    with pytest.raises(InputError, match="multiple of 4"):
        s.read(np.array([2]), "f32")
    with pytest.raises(InputError, match="1020"):
        s.write(np.array([1024]), np.float32(1))
    with pytest.raises(InputError):
        s.read(np.array([-2]), "u16")
    with pytest.raises(InputError):
        s.write_bytes(1020, b"12345")
    assert SharedMemory().nbytes == 232448
