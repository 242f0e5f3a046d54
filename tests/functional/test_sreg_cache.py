"""The per-warp special registers cached across CTAs (executor._sregs_uni) equal the direct
computation (_sregs) in every CTA and warp, and so do their warp-uniform values."""

from __future__ import annotations

import numpy as np

from hopsim.functional.executor import CTAExecutor, Launch
from hopsim.functional.gmem import GlobalMemory
from isa.ir import parse

K = parse(""".kernel k
.reg .u32 %r<2>
    mov.u32 %r0, %ctaid.y;
    mov.u32 %r1, %tid.x;
    exit;
""")


def test_cached_special_registers_equal_direct():
    launch = Launch(grid=(3, 2, 2), block=(96, 1, 1))
    gmem = GlobalMemory()
    for cta in (0, 4, 11, (2, 1, 1)):
        ex = CTAExecutor(K, launch, gmem, cta)
        for w, ws in enumerate(ex.warps):
            direct = ex._sregs(w)
            assert ws.sreg.keys() == direct.keys()
            for k, v in direct.items():
                assert np.array_equal(ws.sreg[k], v), (cta, w, k)
            assert ws.sreg_uni == {k: int(v[0]) for k, v in direct.items() if v.min() == v.max()}


def test_ctaid_is_per_cta_through_the_cache():
    gmem = GlobalMemory()
    k = parse(""".kernel k
.param .u64 out
.reg .u32 %r<2>
.reg .u64 %rd<2>
    mov.u32 %r0, %ctaid.x;
    ld.param.u64 %rd0, [out];
    mul.wide.u32 %rd1, %r0, 4;
    add.u64 %rd0, %rd0, %rd1;
    st.global.u32 [%rd0], %r0;
    exit;
""")
    addr = gmem.alloc("out", 16)
    launch = Launch(grid=(4, 1, 1), block=(32, 1, 1), params={"out": addr})
    from hopsim.functional.runner import run_kernel
    run_kernel(k, launch, gmem)
    assert gmem.view("out", np.uint32).tolist() == [0, 1, 2, 3]
