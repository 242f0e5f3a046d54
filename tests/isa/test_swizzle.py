"""Laws of the swizzles: bijection on the atom, involution, periodicity, CuTe <-> hardware mode."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isa.errors import InputError
from isa.swizzle import Swizzle, SwizzleMode, chunk_map, parse_swizzle, swizzle_address

MODES = list(SwizzleMode)
addrs = st.integers(min_value=0, max_value=(1 << 18) - 1)


@pytest.mark.parametrize("mode", MODES)
def test_bijection_on_every_aligned_atom(mode):
    for base in (0, 1024, 4096 + 2048, 227 * 1024 - 1024):
        x = base + np.arange(mode.atom_bytes)
        y = mode.apply(x)
        assert sorted(y.tolist()) == x.tolist()  # a permutation of the atom's own bytes


@pytest.mark.parametrize("mode", MODES)
@given(a=addrs)
def test_involution(mode, a):
    assert mode.apply(mode.apply(a)) == a


@pytest.mark.parametrize("mode", MODES)
@given(a=addrs, k=st.integers(0, 200))
def test_periodic_in_the_repeat(mode, a, k):
    # the XOR amount depends only on bits [7, 7+b): shifting by whole repeats shifts the result
    period = mode.atom_bytes
    assert mode.apply(a + k * period) == mode.apply(a) + k * period


@pytest.mark.parametrize("mode", MODES)
@given(a=addrs)
def test_moves_only_16_byte_chunks_within_the_128_byte_line(mode, a):
    y = mode.apply(a)
    assert y % 16 == a % 16 and y // 128 == a // 128


@pytest.mark.parametrize("mode", MODES)
def test_vectorised_equals_scalar(mode):
    x = np.arange(0, 4096, 7)
    assert mode.apply(x).tolist() == [mode.apply(int(v)) for v in x]
    assert mode.cute(x).tolist() == [mode.cute(int(v)) for v in x]


@pytest.mark.parametrize("mode", MODES)
@given(a=addrs)
def test_mode_is_cute_swizzle_b43(mode, a):
    assert mode.cute == Swizzle(mode.bits, 4, 3)
    assert mode.apply(a) == mode.cute(a)


@given(a=st.integers(0, (1 << 17) - 1))
def test_swizzle_333_on_half_offsets_is_128B_on_bytes(a):
    # CuTe's Layout_K_SW128_Atom for half: Sw<3,3,3> on element offsets == Sw<3,4,3> on bytes (x2)
    assert 2 * Swizzle(3, 3, 3)(a) == SwizzleMode.B128.apply(2 * a)


@given(a=st.integers(0, (1 << 16) - 1), b=st.integers(0, 3))
def test_swizzle_b23_on_float_offsets_is_mode_on_bytes(a, b):
    # 4-byte elements: Sw<b,2,3> on element offsets == Sw<b,4,3> on bytes (x4)
    assert 4 * Swizzle(b, 2, 3)(a) == SwizzleMode(b).apply(4 * a)


def test_formulas_from_the_fact_sheet():
    # docs/hopper-facts.md §4.1: 128B a ^ (((a >> 7) & 7) << 4), 64B & 3, 32B & 1
    for a in range(0, 8192, 16):
        assert SwizzleMode.B128.apply(a) == a ^ (((a >> 7) & 7) << 4)
        assert SwizzleMode.B64.apply(a) == a ^ (((a >> 7) & 3) << 4)
        assert SwizzleMode.B32.apply(a) == a ^ (((a >> 7) & 1) << 4)
        assert SwizzleMode.NONE.apply(a) == a


def test_chunk_map_128B_is_c_xor_r():
    m = chunk_map("128B", rows=16)
    r, c = np.indices((16, 8))
    assert (m == (c ^ (r & 7))).all()


def test_pattern_anchored_on_absolute_address():
    # a buffer at 1024 + 3*128: line 0 of the buffer is absolute line 3 -> chunk c goes to c ^ 3
    m = chunk_map("128B", rows=1, base_addr=1024 + 3 * 128)
    assert m[0].tolist() == [c ^ 3 for c in range(8)]


def test_base_offset_shifts_the_row_phase():
    # base_offset b: XOR amount ((a >> 7) - b) & 7; a pattern that starts at line b sees row 0 there
    a = 1024 + 3 * 128 + 5 * 16
    assert SwizzleMode.B128.apply(a, base_offset=3) == a  # row 0 of the pattern: identity
    assert SwizzleMode.B128.apply(a) == a ^ (3 << 4)


def test_mode_table():
    assert [m.label for m in MODES] == ["none", "32B", "64B", "128B"]
    assert [m.span_bytes for m in MODES] == [16, 32, 64, 128]
    assert [m.repeat_bytes for m in MODES[1:]] == [256, 512, 1024]
    assert [m.desc_code for m in MODES] == [0, 3, 2, 1]  # PTX ISA: 0 none, 1 128B, 2 64B, 3 32B
    for m in MODES:
        assert SwizzleMode.from_desc_code(m.desc_code) is m
    assert SwizzleMode.B128.tma_name == "CU_TENSOR_MAP_SWIZZLE_128B"


@pytest.mark.parametrize("text,mode", [("128B", SwizzleMode.B128), ("64b", SwizzleMode.B64),
                                       ("32B", SwizzleMode.B32), ("none", SwizzleMode.NONE), ("NONE", SwizzleMode.NONE)])
def test_parse(text, mode):
    assert parse_swizzle(text) is mode
    assert swizzle_address(1024 + 128 + 16, text) == mode.apply(1024 + 128 + 16)


@pytest.mark.parametrize("bad", ["96B", "128", "B128", "", "interleave"])
def test_parse_rejects(bad):
    with pytest.raises(InputError, match="none, 32B, 64B, 128B"):
        parse_swizzle(bad)


def test_cute_swizzle_rejects_overlapping_masks():
    with pytest.raises(InputError, match="S"):
        Swizzle(3, 4, 2)
    assert Swizzle(2, 0, -3)(0b00011) == 0b11011  # negative shift: ZZZ above YYY
