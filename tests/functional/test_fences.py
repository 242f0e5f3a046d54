"""fence{.sem}.scope, membar.level and fence.proxy.tensormap::generic (PTX ISA): round trip, bad
forms naming the line and what is allowed, no effect on a kernel's result (the functional model is
sequentially consistent) and timing class ALU."""

from __future__ import annotations

import numpy as np
import pytest

from isa.ir import IRSyntaxError, parse, to_text, verify
from isa.ir.instructions import Fence, FenceProxyTensormap, Membar
from isa.ir.kinds import Kind
from hopsim.functional.gmem import GlobalMemory

from _func_helpers import run


def test_round_trip_and_class():
    for cls in (Fence, Membar, FenceProxyTensormap):
        assert cls.timing_class == Kind.ALU
        for text in cls.examples:
            k = parse(f".kernel k\n.reg .u64 %rd<2>\n    {text}\n    exit;\n")
            assert k.body[0].text() == text and parse(to_text(k)) == k and verify(k) == []


@pytest.mark.parametrize("src, msg", [
    ("fence.acq_rel;", "missing scope; expected one of .cta, .cluster, .gpu, .sys"),
    ("fence.relaxed.gpu;", "unexpected modifier '.relaxed'"),
    ("membar.gpu;", "missing level; expected one of .cta, .gl, .sys"),
    ("fence.proxy.tensormap::generic.acquire.gpu;", ".acquire takes the tensor map's address and size 128"),
    ("fence.proxy.tensormap::generic.acquire.gpu [%rd0], 64;", ".acquire takes the tensor map's address and size 128"),
    ("fence.proxy.tensormap::generic.release.gpu [%rd0], 128;", ".release takes no operands"),
])
def test_bad_forms_name_the_line(src, msg):
    with pytest.raises(IRSyntaxError) as e:
        parse(".kernel k\n.reg .u64 %rd<2>\n    " + src + "\n", "k.ptx")
    assert e.value.line == 3 and msg in str(e.value)


def test_fences_do_not_change_a_result():
    src = """.kernel k
.param .u64 OUT
.reg .u32 %r<2>
.reg .u64 %rd<4>
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd0, %r0, 4;
    ld.param.u64 %rd1, [OUT];
    add.u64 %rd1, %rd1, %rd0;
    st.global.u32 [%rd1], %r0;
    fence.acq_rel.gpu;
    membar.gl;
    fence.proxy.tensormap::generic.release.gpu;
    ld.global.u32 %r1, [%rd1];
    add.u32 %r1, %r1, 1;
    st.global.u32 [%rd1], %r1;
    exit;
"""
    g = GlobalMemory()
    out = g.alloc("OUT", 4 * 64)
    run(src, block=64, gmem=g, params={"OUT": out})
    assert g.view("OUT", np.uint32).tolist() == list(range(1, 65))
