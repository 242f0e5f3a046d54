"""CuTe-style layouts: `Layout` (shape:stride), its composition, and `Swizzle o Layout`.

A layout maps a coordinate to an offset: `(64,64):(64,1)` is a row-major 64 x 64 tile, and
`L(r, c) = 64*r + c`. Shapes and strides are integers or (nested) tuples of integers of the same
structure. A mode may be given one integer even when its shape is a tuple: the integer is split
colexicographically (first sub-mode fastest), as CuTe's natural coordinates:

    L = Layout((16, (8, 2)), (8, (1, 128)))      # 16 rows of 8 + 8 columns, chunked by 8
    L(3, 10) == L(3, (2, 1)) == 3*8 + 2*1 + 1*128
    L(i)                                          # one integer: the 1-D index over the whole shape

Algebra (CuTe [CUTE-ALG], "Layout Algebra"):
  * `A.compose(B)` is R with R(c) == A(B(c)) for every c of B's domain, itself a layout of B's
    shape (computed mode by mode: divide A by B's stride, keep B's shape of what remains). CuTe's
    example: (6,2):(8,2) o (4,3):(3,1) == ((2,2),3):((24,2),8). A composition that needs a
    non-divisible split raises InputError (CuTe rejects it at compile time).
  * `compose(Swizzle(3, 4, 3), L)` (or `L.swizzled(sw)`) is the ComposedLayout sw o L:
    (sw o L)(c) == sw(L(c)), CuTe's `composition(Swizzle<3,4,3>{}, Layout<...>{})`; a Swizzle is a
    bijection on every block of 2^(M+S+B) offsets (its atom), so sw o L is a layout with its
    elements permuted inside each atom.

Sources: CuTe `layout.hpp`, `swizzle_layout.hpp` and the layout-algebra documentation
(docs.nvidia.com/cutlass/media/docs/cpp/cute/02_layout_algebra.html) [CUTE-ALG].
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from isa.errors import InputError
from isa.swizzle import Swizzle

__all__ = ["Layout", "ComposedLayout", "compose"]

IntTuple = int | tuple


def _congruent(shape, stride) -> bool:
    if isinstance(shape, tuple):
        return isinstance(stride, tuple) and len(shape) == len(stride) and \
            all(_congruent(a, b) for a, b in zip(shape, stride))
    return isinstance(shape, int) and isinstance(stride, int) and shape >= 1


def _flat(t) -> tuple:
    return sum((_flat(x) for x in t), ()) if isinstance(t, tuple) else (t,)


def _size(shape) -> int:
    return math.prod(_flat(shape))


def _offset(coord, shape, stride) -> int:
    """The offset of `coord` in mode (shape, stride): an int coordinate of a tuple mode is split
    colexicographically; the last sub-mode takes what is left (CuTe idx2crd)."""
    if not isinstance(shape, tuple):
        return int(coord) * stride
    if isinstance(coord, tuple):
        if len(coord) != len(shape):
            raise InputError("coordinate", coord, f"{len(shape)} components for shape {_text(shape)}")
        return sum(_offset(c, s, d) for c, s, d in zip(coord, shape, stride))
    off, rest = 0, int(coord)
    for i, (s, d) in enumerate(zip(shape, stride)):
        n = _size(s)
        c, rest = (rest, 0) if i == len(shape) - 1 else (rest % n, rest // n)
        off += _offset(c, s, d)
    return off


def _text(t) -> str:
    return "(" + ",".join(_text(x) for x in t) + ")" if isinstance(t, tuple) else str(t)


def _parse_tuple(s: str):
    """'(64,(8,2))' -> (64, (8, 2)); '16' -> 16."""
    tokens = re.findall(r"\(|\)|,|-?\d+", s)
    if "".join(tokens) != s.replace(" ", ""):
        raise InputError("layout", s, "integers and parentheses, e.g. (64,64):(64,1)")
    pos = 0

    def one():
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok != "(":
            return int(tok)
        items = [one()]
        while tokens[pos] == ",":
            pos += 1
            items.append(one())
        pos += 1  # ')'
        return tuple(items)

    try:
        return one()
    except (IndexError, ValueError):
        raise InputError("layout", s, "balanced parentheses, e.g. (64,(8,2)):(8,(1,512))") from None


@dataclass(frozen=True)
class Layout:
    """shape:stride, a function from coordinates to offsets (see the module docstring)."""

    shape: IntTuple
    stride: IntTuple

    def __post_init__(self) -> None:
        if not _congruent(self.shape, self.stride):
            raise InputError("layout", f"{_text(self.shape)}:{_text(self.stride)}",
                             "a shape of positive integers and a stride of the same structure")

    @classmethod
    def parse(cls, text: str) -> "Layout":
        """`Layout.parse("(64,64):(64,1)")` (CuTe's printed form)."""
        if text.count(":") != 1:
            raise InputError("layout", text, "SHAPE:STRIDE, e.g. (64,64):(64,1)")
        shape, stride = text.split(":")
        return cls(_parse_tuple(shape.strip()), _parse_tuple(stride.strip()))

    def __str__(self) -> str:
        return f"{_text(self.shape)}:{_text(self.stride)}"

    @property
    def size(self) -> int:
        """Number of coordinates (product of the shape)."""
        return _size(self.shape)

    @property
    def rank(self) -> int:
        return len(self.shape) if isinstance(self.shape, tuple) else 1

    def mode(self, i: int) -> "Layout":
        """Mode i as a layout (CuTe `layout<i>(L)`)."""
        if not isinstance(self.shape, tuple):
            return self
        return Layout(self.shape[i], self.stride[i])

    def __call__(self, *coord) -> int:
        """The offset of a coordinate: one integer (1-D index) or one entry per mode."""
        if len(coord) == 1:
            return _offset(coord[0], self.shape, self.stride)
        return _offset(tuple(coord), self.shape, self.stride)

    def flat(self) -> tuple[tuple[int, int], ...]:
        """The (shape, stride) leaves, first mode first."""
        return tuple(zip(_flat(self.shape), _flat(self.stride)))

    def coalesce(self) -> "Layout":
        """The same function of the 1-D index with the fewest modes (CuTe `coalesce`)."""
        return _coalesce(self.flat())

    def compose(self, other: "Layout") -> "Layout":
        """R = self o other: R(c) == self(other(c)), shaped like `other` (module docstring)."""
        if not isinstance(other, Layout):
            raise InputError("composition", type(other).__name__, "a Layout (use compose() for a Swizzle)")
        leaves = self.flat()
        if isinstance(other.shape, tuple):
            modes = [self.compose(other.mode(i)) for i in range(other.rank)]
            return Layout(tuple(m.shape for m in modes), tuple(m.stride for m in modes))
        return _compose_mode(leaves, other.shape, other.stride, str(self), str(other))

    def swizzled(self, swizzle: Swizzle, offset: int = 0) -> "ComposedLayout":
        """swizzle o (offset + self)."""
        return ComposedLayout(swizzle, self, offset)

    @property
    def cosize(self) -> int:
        """1 + the largest offset (CuTe `cosize`: the extent of the codomain). For strides >= 0
        that is 1 + sum((shape_i - 1) * stride_i) over the leaves; a negative stride counts 0."""
        return 1 + sum((s - 1) * d for s, d in self.flat() if d > 0)


def _coalesce(leaves) -> Layout:
    out: list[tuple[int, int]] = []
    for s, d in leaves:
        if s == 1:
            continue
        if out and out[-1][0] * out[-1][1] == d:
            out[-1] = (out[-1][0] * s, out[-1][1])
        else:
            out.append((s, d))
    if not out:
        return Layout(1, 0)
    if len(out) == 1:
        return Layout(*out[0])
    return Layout(tuple(s for s, _ in out), tuple(d for _, d in out))


def _compose_mode(leaves, s: int, d: int, a_txt: str, b_txt: str) -> Layout:
    """A (flat leaves) o s:d: skip the first d elements of A's 1-D index space (divide), then
    keep s of what remains (mod); the last leaf of A extends as far as needed."""
    def bad(why: str) -> InputError:
        return InputError("composition", f"{a_txt} o {b_txt}", f"divisible shapes ({why})")

    if d == 0:
        return Layout(s, 0)
    rest_d, divided = d, []
    for i, (si, di) in enumerate(leaves):
        last = i == len(leaves) - 1
        if last:
            divided.append((None, di * rest_d))
        elif rest_d % si == 0:
            rest_d //= si
        elif si % rest_d == 0:
            divided.append((si // rest_d, di * rest_d))
            rest_d = 1
        else:
            raise bad(f"stride {d} does not split shape {si}")
    out, rest_s = [], s
    for si, di in divided:
        if rest_s == 1:
            break
        if si is None or si % rest_s == 0 or si >= rest_s:
            if si is not None and si % rest_s:
                raise bad(f"shape {s} does not split shape {si}")
            out.append((rest_s, di))
            rest_s = 1
        elif rest_s % si == 0:
            out.append((si, di))
            rest_s //= si
        else:
            raise bad(f"shape {s} does not split shape {si}")
    lay = _coalesce(out)
    return lay if lay.size == s else Layout(s, 0)


@dataclass(frozen=True)
class ComposedLayout:
    """swizzle o (offset + layout): CuTe's ComposedLayout<Swizzle, offset, Layout>."""

    swizzle: Swizzle
    layout: Layout
    offset: int = 0

    def __call__(self, *coord) -> int:
        return self.swizzle(self.offset + self.layout(*coord))

    @property
    def size(self) -> int:
        return self.layout.size

    def __str__(self) -> str:
        return f"{self.swizzle} o {self.offset} o {self.layout}"


def compose(a, b):
    """a o b for a Layout or a Swizzle `a` and a Layout `b`."""
    if isinstance(a, Swizzle) and isinstance(b, Layout):
        return ComposedLayout(a, b)
    if isinstance(a, Layout):
        return a.compose(b)
    raise InputError("composition", f"{type(a).__name__} o {type(b).__name__}",
                     "Layout o Layout or Swizzle o Layout")
