"""Tensor-map parameters: what cuTensorMapEncodeTiled rejects is rejected, naming the rule."""

from __future__ import annotations

import pytest

from isa.errors import InputError
from isa.swizzle import SwizzleMode
from isa.tensormap import TensorMap

OK = dict(dtype="f16", global_dims=(4096, 4096), global_strides_bytes=(8192,), box_dims=(64, 128),
          swizzle="128B")


def make(**kw):
    return TensorMap(**{**OK, **kw})


def test_valid_map_and_derived_sizes():
    t = make()
    assert t.rank == 2 and t.swizzle is SwizzleMode.B128 and t.element_strides == (1, 1)
    assert t.box_bytes == 64 * 128 * 2  # 128 rows of one 128-B swizzle span
    assert t.inner_box_bytes == 128 and t.smem_row_pitch == 128


@pytest.mark.parametrize("kw,field,rule", [
    (dict(global_dims=(1,) * 6, global_strides_bytes=(16,) * 5, box_dims=(8,) * 6), "rank", "tensorRank"),
    (dict(global_dims=(), global_strides_bytes=(), box_dims=()), "rank", "tensorRank"),
    (dict(box_dims=(64, 257)), "box_dims[1]", "boxDim"),
    (dict(box_dims=(0, 64)), "box_dims[0]", "boxDim"),
    (dict(box_dims=(4, 64), swizzle="none"), "box_dims[0]", "multiple of 16"),        # 8 B inner box
    (dict(box_dims=(128, 64)), "box_dims[0]", "swizzle span"),                          # 256 B > 128 B
    (dict(box_dims=(32, 64), swizzle="32B"), "box_dims[0]", "swizzle span"),            # 64 B > 32 B
    (dict(global_strides_bytes=(8200,)), "global_strides_bytes[0]", "globalStrides"),   # not a multiple of 16
    (dict(global_strides_bytes=(1 << 40,)), "global_strides_bytes[0]", "globalStrides"),
    (dict(global_strides_bytes=(8192, 16)), "global_strides_bytes", "one per"),         # rank-1 of them
    (dict(global_dims=(0, 64)), "global_dims[0]", "globalDim"),
    (dict(global_dims=((1 << 32) + 1, 64)), "global_dims[0]", "globalDim"),
    (dict(element_strides=(1, 9)), "element_strides[1]", "elementStrides"),
    (dict(element_strides=(0, 1)), "element_strides[0]", "elementStrides"),
    (dict(global_address=8), "global_address", "globalAddress"),
    (dict(interleave="16B"), "rank", "interleave"),
    (dict(swizzle="96B"), "swizzle", "none, 32B, 64B, 128B"),
    (dict(dtype="u16", oob_fill="nan"), "oob_fill", "floating-point"),
    (dict(l2_promotion="512B"), "l2_promotion", "none, 64B, 128B, 256B"),
])
def test_rejections_name_the_rule(kw, field, rule):
    with pytest.raises(InputError) as ei:
        make(**kw)
    assert ei.value.field == field
    assert rule in str(ei.value)


def test_interleave_rules():
    base = dict(dtype="f16", global_dims=(8, 64, 64), global_strides_bytes=(32, 2048), box_dims=(8, 64, 4))
    TensorMap(**base, interleave="16B")  # rank 3 is fine
    with pytest.raises(InputError, match="32B when interleave is 32B"):
        TensorMap(**base, interleave="32B", global_address=0)
    with pytest.raises(InputError, match="globalAddress"):
        TensorMap(**{**base, "global_strides_bytes": (32, 2048)}, interleave="32B", swizzle="32B", global_address=16)
    with pytest.raises(InputError, match="globalStrides"):
        TensorMap(**{**base, "global_strides_bytes": (48, 2048)}, interleave="32B", swizzle="32B")


def test_element_strides_count():
    t = make(box_dims=(64, 128), element_strides=(1, 3))
    assert t.box_counts == (64, 43)  # ceil(128 / 3); dim 0's stride is ignored without interleave
    assert t.box_bytes == 64 * 43 * 2
