"""CuTe-style laws of isa/layout.py and isa/swizzle.py, enumerated (no sampling):

- a layout is colexicographic: L(i) == sum(c_k * d_k) with c the colex coordinate of i over the
  flattened shape; hierarchical coordinates equal the flat 1-D index;
- cosize == 1 + max offset; size == product of the shape;
- composition R = A o B satisfies R(c) == A(B(c)) for every coordinate c of B (hierarchical B too);
- Swizzle<B,M,S> is a bijection on every atom of 2^(M+S+B) offsets and an involution;
- the TMA modes 32B/64B/128B equal Swizzle<1,4,3>/<2,4,3>/<3,4,3> on every byte address of the atom;
- Swizzle o Layout permutes the layout's offsets inside each atom.
"""

from __future__ import annotations

import itertools

import pytest

from isa.errors import InputError
from isa.layout import Layout, compose
from isa.swizzle import Swizzle, SwizzleMode


def _colex(i: int, shape: tuple) -> tuple:
    out = []
    for s in shape[:-1]:
        out.append(i % s)
        i //= s
    return tuple(out) + (i,)


NESTED = ["((8,8),(8,8)):((8,64),(1,512))", "(64,64):(64,1)", "(64,64):(1,64)", "((2,4),(4,8)):((4,1),(8,32))",
          "(8,(4,2)):(4,(1,32))", "(128,32):(32,1)", "((8,16),(8,4)):((8,64),(1,1024))"]


@pytest.mark.parametrize("text", NESTED)
def test_call_is_colexicographic_and_hierarchical_coordinates_agree(text):
    lay = Layout.parse(text)
    leaves = lay.flat()
    flat_shape = tuple(s for s, _ in leaves)
    offsets = []
    for i in range(lay.size):
        c = _colex(i, flat_shape)
        expect = sum(ci * d for ci, (_, d) in zip(c, leaves))
        assert lay(i) == expect, (text, i)
        offsets.append(expect)
    # per-mode coordinates: mode k takes the colex index over its own sub-shape
    m0, m1 = lay.mode(0), lay.mode(1)
    for r, col in itertools.product(range(m0.size), range(m1.size)):
        assert lay(r, col) == m0(r) + m1(col)
        assert lay(r + m0.size * col) == lay(r, col)
    # size and cosize
    assert lay.size == len(offsets)
    assert lay.cosize == max(offsets) + 1


def test_nested_example_by_hand():
    # ((8,8),(8,8)):((8,64),(1,512)): 8x8 tiles of 8x8 row-major blocks of 64 elements
    lay = Layout.parse("((8,8),(8,8)):((8,64),(1,512))")
    assert lay((3, 2), (5, 1)) == 3 * 8 + 2 * 64 + 5 * 1 + 1 * 512
    assert lay(11, 13) == lay((3, 1), (5, 1))
    assert lay.size == 4096 and lay.cosize == 4096


def _small_layouts():
    shapes, strides = (1, 2, 3, 4), (0, 1, 2, 4, 8)
    for sh in itertools.product(shapes, repeat=2):
        for st in itertools.product(strides, repeat=2):
            yield Layout(sh, st)


def test_composition_law_over_all_coordinates():
    """One-mode B: R(c) == A(B(c)) for every c (A's last mode extends, as in CuTe). Two-mode B:
    CuTe composes mode by mode, A o (B0, B1) == (A o B0, A o B1), each mode obeying the law."""
    lays = list(_small_layouts())
    one_mode = [Layout(s, d) for s in (1, 2, 3, 4, 6) for d in (0, 1, 2, 3, 4, 8)]
    composed = 0
    for a in lays:
        for b in one_mode:
            try:
                r = a.compose(b)
            except InputError:
                continue
            composed += 1
            assert r.size == b.size
            assert all(r(i) == a(b(i)) for i in range(b.size)), (str(a), str(b), str(r))
        for b in lays[::3]:
            try:
                r = a.compose(b)
            except InputError:
                continue
            for k in (0, 1):
                bk, rk = b.mode(k), r.mode(k)
                assert all(rk(i) == a(bk(i)) for i in range(bk.size)), (str(a), str(b), str(r), k)
    assert composed > 500


@pytest.mark.parametrize("a,b", [
    ("(64,64):(64,1)", "((8,8),(8,8)):((1,8),(64,512))"),      # a 64x64 tile re-tiled into 8x8 blocks
    ("(64,64):(64,1)", "(8,(4,2)):(1,(8,32))"),
    ("(16,32):(32,1)", "((2,8),(4,8)):((1,2),(16,64))"),
    ("(8,64):(64,1)", "(8,8):(1,8)"),
])
def test_composition_law_with_hierarchical_tilers(a, b):
    A, B = Layout.parse(a), Layout.parse(b)
    R = A.compose(B)
    assert R.size == B.size
    for i in range(B.size):
        assert R(i) == A(B(i)), (a, b, str(R), i)


SWIZZLES = [(b, m, s) for b in (1, 2, 3) for m in (0, 1, 2, 3, 4) for s in range(b, 5)]


@pytest.mark.parametrize("B,M,S", SWIZZLES)
def test_swizzle_is_a_bijection_on_its_atom_and_an_involution(B, M, S):
    sw = Swizzle(B, M, S)
    atom = 1 << (M + S + B)
    for base in (0, atom, 5 * atom):
        xs = range(base, base + atom)
        ys = [sw(x) for x in xs]
        assert sorted(ys) == list(xs)
        assert all(sw(y) == x for x, y in zip(xs, ys))


@pytest.mark.parametrize("b", [1, 2, 3])
def test_tma_modes_are_swizzle_b43_on_every_byte_of_the_atom(b):
    mode, sw = SwizzleMode(b), Swizzle(b, 4, 3)
    atom = 1 << (4 + 3 + b)
    assert mode.atom_bytes == atom
    for base in (0, atom, 7 * atom):
        for a in range(base, base + atom):
            assert mode.apply(a) == sw(a)


@pytest.mark.parametrize("text,elem", [("(64,64):(64,1)", 2), ("(128,32):(32,1)", 2), ("(64,32):(32,1)", 4)])
def test_swizzle_o_layout_permutes_offsets_inside_atoms(text, elem):
    # element offsets: Swizzle<B, 4 - log2(elem), 3> is the 128B-mode family on elements
    m = 4 - (elem.bit_length() - 1)
    for b in (1, 2, 3):
        sw = Swizzle(b, m, 3)
        lay = Layout.parse(text)
        cl = compose(sw, lay)
        offs = [cl(i) for i in range(lay.size)]
        assert sorted(offs) == sorted(lay(i) for i in range(lay.size))
        atom = 1 << (m + 3 + b)
        assert all(cl(i) // atom == lay(i) // atom for i in range(lay.size))
        # and on byte addresses it is the TMA mode
        assert all(elem * cl(i) == SwizzleMode(b).apply(elem * lay(i)) for i in range(lay.size))


@pytest.mark.parametrize("text,bms", [("Swizzle<3,3,3>", (3, 3, 3)), ("Sw<2, 4, 3>", (2, 4, 3)),
                                      (" Swizzle<1,4,3> ", (1, 4, 3))])
def test_swizzle_parse(text, bms):
    assert Swizzle.parse(text) == Swizzle(*bms)
    assert Swizzle.parse(str(Swizzle(*bms))) == Swizzle(*bms)


@pytest.mark.parametrize("bad", ["Swizzle<3,3>", "Swizzle<3,3,1>", "128B", "Swizzle<a,b,c>", "Swizzle<999,3,3>"])
def test_swizzle_parse_rejects_with_one_input_error(bad):
    with pytest.raises(InputError, match="swizzle"):
        Swizzle.parse(bad)
