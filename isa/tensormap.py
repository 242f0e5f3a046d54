"""Tensor maps: the parameters of `cuTensorMapEncodeTiled`, validated as the driver validates them.

Dimensions are listed innermost first, as the driver takes them (a row-major R x C matrix of f16:
global_dims = (C, R), global_strides_bytes = (row pitch,), box_dims = (box C, box R)).

Rules (each InputError names its rule) [DRV-TMAP] cuTensorMapEncodeTiled, CUDA driver API:
    rank            1 <= rank <= 5; rank >= 3 when interleave is not none
    global_address  16-byte aligned (32-byte with 32B interleave)
    global_dims     each 1 .. 2^32
    global_strides  rank-1 of them (dims 1..rank-1, bytes): multiple of 16 (32 with 32B interleave), < 2^40
    box_dims        each 1 .. 256; no interleave: box_dims[0] * element bytes a multiple of 16
    element_strides each 1 .. 8 (element_strides[0] is ignored without interleave)
    swizzle         no interleave + swizzle: box_dims[0] * element bytes <= swizzle span (32/64/128 B);
                    32B interleave requires 32B swizzle
    oob_fill        'nan' (NAN_REQUEST_ZERO_FMA) only for floating-point types
Not checked (not documented as rejected): strides smaller than the extent of the dimension below.
The sm_100 swizzle sub-modes (128B_ATOM_*) and packed 4/6-bit types are not modelled.
Element types: the `isa.dtypes` names; e4m3/e5m2/s8 travel as the driver's UINT8, s16 as UINT16.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from isa.dtypes import DType, parse_dtype
from isa.errors import InputError
from isa.swizzle import SwizzleMode, parse_swizzle

INTERLEAVES = ("none", "16B", "32B")
L2_PROMOTIONS = ("none", "64B", "128B", "256B")
OOB_FILLS = ("zero", "nan")


def _choice(name: str, value, choices: tuple[str, ...]) -> str:
    v = str(value).strip().lower()
    for c in choices:
        if v == c.lower():
            return c
    raise InputError(name, value, "one of " + ", ".join(choices))


def _ints(name: str, values, n: int | None = None) -> tuple[int, ...]:
    try:
        out = tuple(int(v) for v in values)
        if any(isinstance(v, bool) or int(v) != v for v in values):
            raise TypeError
    except (TypeError, ValueError):
        raise InputError(name, values, "a sequence of integers") from None
    if n is not None and len(out) != n:
        raise InputError(name, values, f"{n} values (one per {'dimension' if 'stride' not in name else 'outer dimension'})")
    return out


@dataclass(frozen=True)
class TensorMap:
    """A validated `cuTensorMapEncodeTiled` parameter set (see the module docstring for the rules)."""

    dtype: DType | str
    global_dims: tuple[int, ...]
    global_strides_bytes: tuple[int, ...]
    box_dims: tuple[int, ...]
    element_strides: tuple[int, ...] | None = None
    global_address: int = 0
    interleave: str = "none"
    swizzle: SwizzleMode | str = SwizzleMode.NONE
    l2_promotion: str = "none"
    oob_fill: str = "zero"

    def __post_init__(self) -> None:
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731  (frozen dataclass)
        d = parse_dtype(self.dtype)
        set_("dtype", d)
        dims = _ints("global_dims", self.global_dims)
        rank = len(dims)
        if not 1 <= rank <= 5:
            raise InputError("rank", rank, "1..5 dimensions (rule: tensorRank)")
        set_("global_dims", dims)
        set_("interleave", _choice("interleave", self.interleave, INTERLEAVES))
        set_("swizzle", parse_swizzle(self.swizzle))
        set_("l2_promotion", _choice("l2_promotion", self.l2_promotion, L2_PROMOTIONS))
        set_("oob_fill", _choice("oob_fill", self.oob_fill, OOB_FILLS))
        il = self.interleave
        if il != "none" and rank < 3:
            raise InputError("rank", rank, f">= 3 with interleave {il} (rule: tensorRank with interleave)")
        align = 32 if il == "32B" else 16
        ga = self.global_address
        if isinstance(ga, bool) or not isinstance(ga, (int, np.integer)) or ga < 0 or ga % align:
            raise InputError("global_address", ga, f"a non-negative multiple of {align} B (rule: globalAddress alignment)")
        set_("global_address", int(ga))
        for i, v in enumerate(dims):
            if not 1 <= v <= 1 << 32:
                raise InputError(f"global_dims[{i}]", v, "1 .. 2^32 (rule: globalDim)")
        strides = _ints("global_strides_bytes", self.global_strides_bytes, rank - 1)
        smul = 32 if il == "32B" else 16
        for i, s in enumerate(strides):
            if s <= 0 or s % smul or s >= 1 << 40:
                raise InputError(f"global_strides_bytes[{i}]", s,
                                 f"a positive multiple of {smul} below 2^40 (rule: globalStrides)")
        set_("global_strides_bytes", strides)
        box = _ints("box_dims", self.box_dims, rank)
        for i, b in enumerate(box):
            if not 1 <= b <= 256:
                raise InputError(f"box_dims[{i}]", b, "1 .. 256 (rule: boxDim)")
        set_("box_dims", box)
        inner = box[0] * d.bytes
        if il == "none" and inner % 16:
            raise InputError("box_dims[0]", box[0], f"box_dims[0] x {d.bytes} B a multiple of 16 B; it is {inner} B "
                             "(rule: inner box bytes, no interleave)")
        es = _ints("element_strides", self.element_strides if self.element_strides is not None else (1,) * rank, rank)
        for i, s in enumerate(es):
            if not 1 <= s <= 8:
                raise InputError(f"element_strides[{i}]", s, "1 .. 8 (rule: elementStrides)")
        set_("element_strides", es)
        sw = self.swizzle
        if il == "none" and sw is not SwizzleMode.NONE and inner > sw.span_bytes:
            raise InputError("box_dims[0]", box[0], f"inner box {inner} B <= the {sw.label} swizzle span "
                             f"({sw.span_bytes} B) (rule: inner box bytes <= swizzle span)")
        if il == "32B" and sw is not SwizzleMode.B32:
            raise InputError("swizzle", sw.label, "32B when interleave is 32B (rule: interleave 32B needs swizzle 32B)")
        if self.oob_fill == "nan" and not d.is_float:
            raise InputError("oob_fill", "nan", f"zero for the integer type {d.name} "
                             "(rule: NAN_REQUEST_ZERO_FMA only for floating-point types)")

    # ------------------------------------------------------------------ derived
    @property
    def rank(self) -> int:
        return len(self.global_dims)

    @property
    def elem_bytes(self) -> int:
        return self.dtype.bytes

    @property
    def box_counts(self) -> tuple[int, ...]:
        """Elements loaded per dimension: ceil(box/elementStride), dim 0 without interleave: box[0]."""
        out = [math.ceil(b / s) for b, s in zip(self.box_dims, self.element_strides)]
        if self.interleave == "none":
            out[0] = self.box_dims[0]
        return tuple(out)

    @property
    def inner_box_bytes(self) -> int:
        return self.box_counts[0] * self.elem_bytes

    @property
    def box_bytes(self) -> int:
        """Bytes one box writes to shared memory (= the tx-count of a load, OOB fill included)."""
        return math.prod(self.box_counts) * self.elem_bytes

    @property
    def smem_row_pitch(self) -> int:
        """Shared-memory bytes per box row: the inner box bytes, or the swizzle span when the inner box
        is narrower than a swizzled span ([inferred] from "allocate the full swizzle width" [CPG-SWZ])."""
        if self.swizzle is not SwizzleMode.NONE:
            return max(self.inner_box_bytes, self.swizzle.span_bytes)
        return self.inner_box_bytes

    @property
    def smem_footprint(self) -> int:
        """Shared-memory bytes the box occupies (rows x pitch)."""
        return math.prod(self.box_counts[1:]) * self.smem_row_pitch
