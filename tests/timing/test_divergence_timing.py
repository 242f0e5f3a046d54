"""Timing of divergent control flow (functional/simt.py): the two paths of a divergent branch are
issued one after the other (the warp's issue slots pay both), a memory instruction of a partial
warp moves only its running lanes' sectors, and the memo refuses kernels whose CTAs diverge
(memo=True then equals memo=False exactly)."""

from __future__ import annotations

import numpy as np

from hopsim.config import load_gpu
from hopsim.config.base import P
from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.timing.runner import simulate
from isa.ir.parser import parse

from _lane_kernels import lane_head

GPU = load_gpu("h100_sxm")

KERNEL = """
.kernel d
.param .u64 out
.reg .u32 %r<12>
.reg .u64 %rd<4>
.reg .pred %p<4>
{shared}
    mov.u32 %r0, %tid.x;
    and.b32 %r1, %r0, 31;
    mov.u32 %r9, %ctaid.x;
    ld.param.u64 %rd0, [out];
    mul.wide.u32 %rd1, %r0, 4;
    add.u64 %rd2, %rd0, %rd1;
    ld.global.u32 %r8, [%rd2];
    mov.u32 %r3, 0;
    mov.u32 %r4, %r8;
    {split}
@%p0 bra ELSE;
THEN:
    add.u32 %r4, %r4, 3;
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p1, %r3, 40;
@%p1 bra THEN;
    bra END;
ELSE:
    add.u32 %r4, %r4, 5;
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p1, %r3, 60;
@%p1 bra ELSE;
END:
    {store}
    exit;
"""


def _sim(split: str, store: str = "st.global.u32 [%rd2], %r4;", ctas: int = 1, gpu=GPU, smem: int = 0, **kw):
    gm = GlobalMemory()
    lch = Launch(grid=ctas, block=64, params={"out": gm.reserve("out", 4 * 64 * ctas)})
    return simulate(parse(KERNEL.format(split=split, store=store,
                                      shared=f".shared .align 8 .b8 big[{smem}]" if smem else "")), lch, gpu, values=False, gmem=gm, **kw)


def _instructions(res) -> int:
    return sum(r["instructions"] if isinstance(r, dict) else r.instructions for r in res.roles.values())


def test_both_paths_are_issued_one_after_the_other():
    then = _sim("setp.lt.u32 %p0, %r1, 0;")      # no lane takes the branch: THEN only
    other = _sim("setp.lt.u32 %p0, %r1, 32;")    # every lane: ELSE only
    div = _sim("setp.lt.u32 %p0, %r1, 11;")      # lanes 0..10 ELSE, 11..31 THEN
    common = 11 + 2   # prefix (9, the split's setp and bra), store and exit
    n_then, n_else = _instructions(then) // 2 - common, _instructions(other) // 2 - common   # 2 warps
    assert n_then == 40 * 4 + 1 and n_else == 60 * 4
    assert _instructions(div) == 2 * (common + n_then + n_else)
    # serialised: the divergent warp pays, on top of one path, at least one issue slot (one cycle
    # per SMSP, H100: one warp instruction per cycle) per instruction of the other path
    assert div.cycles - then.cycles >= n_else and div.cycles - other.cycles >= n_then


def test_a_partial_warp_moves_only_its_running_lanes_sectors():
    """Lanes 0..7 store 4 B each (one 32-B sector per warp); the other lanes skip the store by a
    divergent branch: 1 sector per warp, not 4."""
    res = _sim("setp.lt.u32 %p0, %r1, 11;", store="setp.ge.u32 %p2, %r1, 8;\n@%p2 bra SKIP;\n"
               "    st.global.u32 [%rd2], %r4;\nSKIP:")
    full = _sim("setp.lt.u32 %p0, %r1, 11;")
    loads = 2 * 4   # every lane's ld.global (4 sectors per warp)
    assert full.extra["gmem_sectors"] == loads + 2 * 4 and full.bytes_stored == 2 * 128
    assert res.extra["gmem_sectors"] == loads + 2 * 1 and res.bytes_stored == 2 * 32


def test_memo_refuses_divergent_kernels_and_equals_detailed():
    """The lanes that diverge depend on %ctaid (CTAs of one memo class would run different paths):
    memo=True turns itself off and gives memo=False's numbers; the same kernel with a uniform
    branch is memoised."""
    gpu = GPU.model_copy(update={"spec": GPU.spec.with_values({"num_sms": P(4, "SMs", "test", "assumed: test")})})
    for smem, per_sm in ((150_000, 1), (0, 32)):   # the per-CTA memo, the SM-class memo
        kw = dict(ctas=24, gpu=gpu, memory="partitioned", smem=smem)
        uniform = _sim("setp.lt.u32 %p0, %r9, 0;", memo=True, **kw)
        assert uniform.ctas_per_sm == per_sm and uniform.extra["tile_plan"] and uniform.extra["memo_hits"] > 0
        split = "and.b32 %r10, %r9, 3;\n    shl.b32 %r10, %r10, 3;\n    setp.lt.u32 %p0, %r1, %r10;"
        fast, full = (_sim(split, memo=m, **kw) for m in (True, False))
        assert fast.cycles == full.cycles and fast.bytes_stored == full.bytes_stored
        assert fast.roles == full.roles
        assert not fast.extra["tile_plan"] and fast.extra.get("memo_hits", 0) == 0



RENDEZVOUS = lane_head("r", 12, 4) + """    setp.lt.u32 %p0, %r1, 16;
{body}
    st.global.u32 [%rd2], %r4;
    exit;
"""
DIVERGED = """@%p0 bra A;
    {op} %r4, %r3, {args};
    bra END;
A:
    {op} %r4, %r2, {args};
END:"""
CONVERGED = """    selp.u32 %r10, %r2, %r3, %p0;
    {op} %r4, %r10, {args};"""


def test_sync_collectives_on_two_paths_meet_in_the_timed_machine():
    """The rendezvous of .sync collectives across the two paths of a divergent branch
    (functional/simt.py) under simulate(): the values of the converged program (one collective
    after a selp of each path's operand), and the diverged warps issue both paths (more
    instructions)."""
    for op, args in (("shfl.sync.bfly.b32", "16, 31, 0xffffffff"), ("redux.sync.add.u32", "0xffffffff")):
        outs = []
        for body in (DIVERGED, CONVERGED):
            gm = GlobalMemory()
            lch = Launch(grid=1, block=64, params={"out": gm.alloc("out", np.full(64, 9, np.uint32))})
            r = simulate(parse(RENDEZVOUS.format(body=body.format(op=op, args=args))), lch, GPU, values=True, gmem=gm)
            outs.append((gm.view("out", np.uint32).copy(), _instructions(r)))
        (got, n_div), (want, n_conv) = outs
        assert (got == want).all() and n_div > n_conv, op
