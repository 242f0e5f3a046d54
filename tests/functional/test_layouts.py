"""Canonical WGMMA operand layouts: addresses through the descriptor reproduce the stored tile.

Golden law (seed 000): CUTLASS stores a 128x64 half tile with the swizzled layouts printed in the
seed and builds one descriptor per 64x16 (m-block, k-block); fetching A through each printed
descriptor must give exactly tile[64*mb : 64*mb+64, 16*kb : 16*kb+16].
"""

from __future__ import annotations

import itertools
import json
import pathlib

import numpy as np
import pytest

from hopsim.functional.layouts import fetch_operand, operand_addresses, operand_chunks, store_operand
from hopsim.functional.smem import SharedMemory
from isa.descriptor import MatrixDescriptor
from isa.errors import InputError
from isa.swizzle import SwizzleMode

# The smem layouts of the 128x64 half tile as seed 000 prints them (element offsets, CuTe
# hierarchical (shape):(stride), rows = M, cols = K), composed with Sw<b,4,3> on byte addresses.
SEED_LAYOUTS = {
    ("K", SwizzleMode.NONE): (((8, 16), (8, 8)), ((8, 64), (1, 1024))),
    ("K", SwizzleMode.B32): (((8, 16), (16, 4)), ((16, 128), (1, 2048))),
    ("K", SwizzleMode.B64): (((8, 16), (32, 2)), ((32, 256), (1, 4096))),
    ("K", SwizzleMode.B128): (((8, 16), (64, 1)), ((64, 512), (1, 0))),
    ("MN", SwizzleMode.NONE): (((8, 16), (8, 8)), ((1, 64), (8, 1024))),
    ("MN", SwizzleMode.B32): (((16, 8), (8, 8)), ((1, 128), (16, 1024))),
    ("MN", SwizzleMode.B64): (((32, 4), (8, 8)), ((1, 256), (32, 1024))),
    ("MN", SwizzleMode.B128): (((64, 2), (8, 8)), ((1, 512), (64, 1024))),
}
CODE = {"INTERLEAVE": SwizzleMode.NONE, "B32": SwizzleMode.B32, "B64": SwizzleMode.B64, "B128": SwizzleMode.B128}


def cute_offset(coord: np.ndarray, shape: tuple, stride: tuple) -> np.ndarray:
    """Offset of a 1-D coordinate in a (possibly nested, co-lexicographic) CuTe mode."""
    if isinstance(shape, int):
        return coord * stride
    out = np.zeros_like(coord)
    for s, d in zip(shape, stride):
        size = int(np.prod(s))
        out += cute_offset(coord % size, s, d)
        coord = coord // size
    return out


SEED000 = pathlib.Path(__file__).resolve().parents[1] / "data" / "seed000_gmma_descriptors.json"


def seed_cases():
    """[(major, swizzle, [descriptor values in iterator order])] from seed 000 (tests/data/)."""
    cases: dict[tuple[str, SwizzleMode], list[int]] = {}
    for d in json.loads(SEED000.read_text(encoding="utf-8"))["dumps"]:
        cases.setdefault((d["major"], CODE[d["layout_name"]]), []).append(int(d["hex"], 16))
    return cases


def test_seed000_descriptors_reproduce_the_stored_tile():
    cases = seed_cases()
    assert set(cases) == set(SEED_LAYOUTS) and all(len(v) == 8 for v in cases.values())
    rng = np.random.default_rng(0)
    tile = rng.standard_normal((128, 64)).astype(np.float16)
    m, k = np.indices(tile.shape)
    for (major, mode), descs in cases.items():
        (sm, sk), (dm, dk) = SEED_LAYOUTS[(major, mode)]
        base = MatrixDescriptor.decode(descs[0]).start_address_bytes  # the tile's smem address (0x40 -> 1024)
        offs = cute_offset(m, sm, dm) + cute_offset(k, sk, dk)
        smem = SharedMemory()
        smem.write(mode.apply(base + 2 * offs), tile)  # CuTe: Sw<b,4,3> o smem_ptr16b o layout
        for i, value in enumerate(descs):  # DescriptorIterator (_1,_2,_4): i = mb + 2*kb
            mb, kb = i % 2, i // 2
            got = fetch_operand(smem, MatrixDescriptor.decode(value), "A", major, "f16")
            want = tile[64 * mb:64 * mb + 64, 16 * kb:16 * kb + 16]
            assert np.array_equal(got, want), (major, mode.label, hex(value), mb, kb)


CASES = list(itertools.product(["K", "MN"], list(SwizzleMode), ["f16", "bf16"]))


def canonical_desc(major, mode, rows, base=2048):
    """A densely packed canonical descriptor for `rows` x 16 16-bit elements (MN-first atoms)."""
    s = mode.span_bytes
    if major == "K":
        return MatrixDescriptor(base, rows * 16 if mode is SwizzleMode.NONE else 16,
                                128 if mode is SwizzleMode.NONE else 8 * s, 0, mode)
    if mode is SwizzleMode.NONE:
        return MatrixDescriptor(base, (rows // 8) * 128, 128, 0, mode)
    atoms = max(1, rows * 2 // s)
    return MatrixDescriptor(base, 8 * s, atoms * 8 * s, 0, mode)


@pytest.mark.parametrize("major,mode,dtype", CASES)
@pytest.mark.parametrize("operand,n", [("A", None), ("B", 64), ("B", 256)])
def test_addresses_are_distinct_and_fetch_inverts_store(major, mode, dtype, operand, n):
    rows = 64 if operand == "A" else n
    d = canonical_desc(major, mode, rows)
    a = operand_addresses(d, operand, major, dtype, n)
    assert a.shape == (rows, 16) and np.unique(a).size == a.size
    assert (a % 2 == 0).all()
    chunks = operand_chunks(d, operand, major, dtype, n)
    assert chunks.size == rows * 16 * 2 // 16  # every 16-B chunk fully used: dense packing
    smem = SharedMemory()
    x = np.random.default_rng(1).integers(0, 1 << 16, size=(rows, 16), dtype=np.uint16)
    store_operand(smem, d, x.view(np.float16) if dtype == "f16" else x, operand, major, dtype, n)
    got = fetch_operand(smem, d, operand, major, dtype, n)
    assert np.array_equal(got.view(np.uint16), x)


def test_k_major_sw128_formula():
    # element (r, k) of a K-major SW128 f16 operand at 1024: 1024 + 128*(r%8) + SBO*(r//8) + 2k, chunk ^= r%8
    d = MatrixDescriptor(1024, 16, 1024, 0, "128B")
    a = operand_addresses(d, "A", "K", "f16")
    r, k = np.indices((64, 16))
    lin = 1024 + 128 * (r % 8) + 1024 * (r // 8) + 2 * k
    assert np.array_equal(a, lin ^ ((r % 8) << 4))


@pytest.mark.parametrize("dtype,kk", [("tf32", 8), ("e4m3", 32), ("e5m2", 32)])
def test_other_types_k_major(dtype, kk):
    d = MatrixDescriptor(1024, 16, 1024, 0, "128B")
    a = operand_addresses(d, "B", "K", dtype, n=32)
    assert a.shape == (32, kk) and np.unique(a).size == a.size


def test_rejections():
    d = MatrixDescriptor(1024, 16, 1024, 0, "128B")
    with pytest.raises(InputError, match="MN-major"):
        operand_addresses(d, "A", "MN", "tf32")
    with pytest.raises(InputError):
        operand_addresses(d, "B", "K", "f16", n=12)
    with pytest.raises(InputError):
        operand_addresses(d, "B", "K", "f16")
    with pytest.raises(InputError):
        operand_addresses(d, "C", "K", "f16")
    with pytest.raises(InputError):
        operand_addresses(d, "A", "K", "f32")
