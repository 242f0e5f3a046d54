"""Laws of isa/layout.py (CuTe layout algebra): composition R(c) == A(B(c)), coalesce keeps the
function, natural coordinates, Swizzle o Layout; goldens from the CuTe documentation."""

from __future__ import annotations

import itertools

import pytest

from isa.errors import InputError
from isa.layout import ComposedLayout, Layout, compose
from isa.swizzle import Swizzle


def _colex(i: int, shape: tuple) -> tuple:
    out = []
    for s in shape[:-1]:
        out.append(i % s)
        i //= s
    return tuple(out) + (i,)


def _flat_layouts(max_modes: int = 2):
    """Every flat layout with shapes in {1,2,3,4,6} and strides in {0,1,2,3,4,8} (up to 2 modes)."""
    shapes, strides = (1, 2, 3, 4, 6), (0, 1, 2, 3, 4, 8)
    for r in range(1, max_modes + 1):
        for sh in itertools.product(shapes, repeat=r):
            for st in itertools.product(strides, repeat=r):
                yield Layout(sh if r > 1 else sh[0], st if r > 1 else st[0])


def test_cute_documentation_goldens():
    # CuTe "Layout Algebra": composition example and coalesce example
    a, b = Layout.parse("(6,2):(8,2)"), Layout.parse("(4,3):(3,1)")
    assert str(a.compose(b)) == "((2,2),3):((24,2),8)"
    assert str(Layout.parse("(2,(1,6)):(1,(6,2))").coalesce()) == "12:1"


def test_composition_law_on_every_small_pair():
    """R(c) == A(B(c)) for every coordinate of a one-mode B, for every pair that composes (A taken
    as CuTe takes it: its last mode extends); R has B's size."""
    composed = 0
    layouts = list(_flat_layouts())
    for a in layouts:
        for b in (x for x in layouts if x.rank == 1):
            try:
                r = a.compose(b)
            except InputError:
                continue
            composed += 1
            assert r.size == b.size, (a, b, r)
            for i in range(b.size):
                assert r(i) == a(b(i)), (str(a), str(b), str(r), i)
    assert composed > len(layouts) * 6 // 2  # most pairs compose (the law is not vacuous)


def test_composition_distributes_over_the_modes_of_b():
    """CuTe: A o (B0, B1) == (A o B0, A o B1); where B's modes do not carry across A's modes (a
    tiler of a tile) the whole law R(c) == A(B(c)) holds too."""
    layouts = list(_flat_layouts())
    for a in layouts[::7]:
        for b in (x for x in layouts if x.rank == 2):
            try:
                r = a.compose(b)
            except InputError:
                continue
            assert r.mode(0) == a.compose(b.mode(0)) and r.mode(1) == a.compose(b.mode(1))
    tile = Layout.parse("(8,16):(16,1)")          # row-major 8 x 16
    for tiler in ("(2,4):(1,8)", "(4,2):(2,16)", "(8,2):(1,8)"):
        b = Layout.parse(tiler)
        r = tile.compose(b)
        assert all(r(i) == tile(b(i)) for i in range(b.size)), (tiler, str(r))


def test_composition_by_mode_keeps_the_shape_of_b():
    a = Layout.parse("(4,8):(8,1)")          # a row-major 4 x 8 tile
    b = Layout.parse("(2,4):(1,2)")
    r = a.compose(b)
    assert r.rank == 2
    for c in itertools.product(range(2), range(4)):
        assert r(*c) == a(b(*c))


def test_non_divisible_composition_is_refused():
    with pytest.raises(InputError, match="composition"):
        Layout.parse("(6,2):(1,6)").compose(Layout(2, 4))   # stride 4 does not split 6


@pytest.mark.parametrize("text", ["(64,64):(64,1)", "(16,(8,2)):(8,(1,128))", "8:1", "((2,2),3):((24,2),8)"])
def test_parse_print_round_trip_and_natural_coordinates(text):
    lay = Layout.parse(text)
    assert str(lay) == text and Layout.parse(str(lay)) == lay
    flat_shape = tuple(s for s, _ in lay.flat())
    for i in range(lay.size):
        # the 1-D index equals the colexicographic coordinate over the flattened shape
        coord = _colex(i, flat_shape)
        assert lay(i) == sum(c * d for c, (_, d) in zip(coord, lay.flat()))


def test_row_major_tile_and_hierarchical_mode():
    tile = Layout.parse("(64,64):(64,1)")
    assert tile(3, 5) == 3 * 64 + 5 and tile.size == 4096
    chunked = Layout((16, (8, 2)), (8, (1, 128)))
    assert chunked(3, 10) == chunked(3, (2, 1)) == 3 * 8 + 2 + 128


@pytest.mark.parametrize("text", ["(2,(1,6)):(1,(6,2))", "(4,2,3):(1,4,8)", "(2,3):(3,1)", "(1,4):(7,2)"])
def test_coalesce_keeps_the_function(text):
    lay = Layout.parse(text)
    co = lay.coalesce()
    assert co.size == lay.size and all(co(i) == lay(i) for i in range(lay.size))
    assert not isinstance(co.shape, tuple) or all(not isinstance(s, tuple) for s in co.shape)


@pytest.mark.parametrize("B,M,S", [(1, 4, 3), (2, 4, 3), (3, 4, 3), (3, 3, 3), (2, 0, 2), (3, 1, 4)])
def test_swizzle_is_a_bijection_on_its_atom_and_composes(B, M, S):
    sw = Swizzle(B, M, S)
    atom = 1 << (M + S + B)
    assert sorted(sw(x) for x in range(atom)) == list(range(atom))
    lay = Layout((atom // 8, 8), (8, 1))
    cl = compose(sw, lay)
    assert isinstance(cl, ComposedLayout) and cl == lay.swizzled(sw)
    for r, c in itertools.product(range(atom // 8), range(8)):
        assert cl(r, c) == sw(lay(r, c))
    assert sorted(cl(i) for i in range(cl.size)) == list(range(atom))


def test_epilogue_slab_swizzle_is_the_hardware_128B_pattern():
    """Swizzle<3,4,3> o (16,64):(128,2) puts 16-B chunk ch of row r at ch ^ (r % 8)."""
    slab = Layout((16, 64), (128, 2)).swizzled(Swizzle(3, 4, 3))
    for r, ch in itertools.product(range(16), range(8)):
        assert slab(r, 8 * ch) == r * 128 + ((ch ^ (r % 8)) << 4)


@pytest.mark.parametrize("bad", ["(2,3):(1)", "(2,3)", "(0,2):(1,1)", "(2,(3):(1,1)", "a:b"])
def test_bad_layout_text_is_one_input_error(bad):
    with pytest.raises(InputError):
        Layout.parse(bad)
