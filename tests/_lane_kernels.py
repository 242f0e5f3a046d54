"""Kernel text shared by the functional and the timed tests of divergent .sync collectives
(tests/functional/test_sync_rendezvous.py, tests/timing/test_divergence_timing.py): the head that
gives each thread its lane (%r1), its output address (%rd2) and two per-thread operands
(%r2 = 3 x tid, %r3 = tid + 100) for the two paths of a branch."""

from __future__ import annotations


def lane_head(kernel: str, u32_regs: int, preds: int) -> str:
    """The kernel's declarations and its per-thread lane, address and operands (see the module)."""
    return f"""
.kernel {kernel}
.param .u64 out
.reg .u32 %r<{u32_regs}>
.reg .u64 %rd<4>
.reg .pred %p<{preds}>
    mov.u32 %r0, %tid.x;
    and.b32 %r1, %r0, 31;
    ld.param.u64 %rd0, [out];
    mul.wide.u32 %rd1, %r0, 4;
    add.u64 %rd2, %rd0, %rd1;
    mul.lo.u32 %r2, %r0, 3;
    add.u32 %r3, %r0, 100;
"""
