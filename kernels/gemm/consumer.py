"""The consumer role: the k-loop over the pipeline (stage s = kt % S, phase (kt / S) & 1).

    per k-tile kt:  wait full[s] at phase ph; wgmma.fence; BK/16 x MI wgmma m64n{BN}k16 from the
                    descriptors of stage s; commit; wait_group 1 (0 when S = 1)
    release:        the stage read by the previous k-tile (rel = kt - 1; kt when S = 1, after
                    wait_group 0) is complete: lane 0 of every warp arrives on empty[rel % S]
    single:         warp 0 then waits empty[rel % S] and refills it with k-tile rel + S
    ws:             the producer warpgroup refills (kernels/gemm/producer.py)
    descriptors:    start | LBO | SBO | layout type (plan.a_desc / b_desc); k-step kk advances
                    the start by the smem layout offset of (row 0, k = 16 kk)
"""

from __future__ import annotations

from isa.descriptor import ADDRESS_LIMIT
from isa.ir import Guard, Mem, Reg
from kernels.gemm.emit import Emitter
from kernels.gemm.producer import load_stage

WGMMA_K = 16  # k of one wgmma with 16-bit inputs
WGMMA_M = 64  # rows of one wgmma (one warpgroup)


def desc_base(em: Emitter, dst: Reg, addr: Reg, lbo: int, sbo: int) -> None:
    """The .cu's make_desc(addr, lbo, sbo, layout): start address field | the constant bits."""
    b = em.b
    t = em.u32("desc_t")
    b.and_("b32", t, addr, ADDRESS_LIMIT - 1)
    b.shr("u32", t, t, 4)
    b.cvt("u64", "u32", dst, t)
    b.or_("b64", dst, dst, em.plan.desc_const(lbo, sbo))


def mma_stage(em: Emitter, sa: Reg, sb: Reg, cw: Reg | None) -> None:
    """The .cu's mma_stage(): BK/16 x MI wgmma m64nBNk16, descriptors advanced per k-step."""
    b, plan, p = em.b, em.plan, em.p
    dA, dB, da, db = em.u64("descA"), em.u64("descB"), em.u64("da"), em.u64("db")
    a_base = sa
    if cw is not None and plan.NC > 1:
        a_base = em.u32("sa_cw")
        b.mad("u32", a_base, cw, plan.a_offset(plan.MI * WGMMA_M, 0), sa, mode="lo")
    desc_base(em, dA, a_base, *plan.a_desc)
    desc_base(em, dB, sb, *plan.b_desc)
    b.wgmma_fence()
    for kk in range(plan.BK // WGMMA_K):
        bdesc = dB
        boff = plan.b_offset(0, kk * WGMMA_K)
        if boff:
            b.add("u64", db, dB, boff >> 4)
            bdesc = db
        for mi in range(plan.MI):
            adesc = dA
            aoff = plan.a_offset(mi * WGMMA_M, kk * WGMMA_K)
            if aoff:
                b.add("u64", da, dA, aoff >> 4)
                adesc = da
            b.wgmma_mma_async(plan.BN, p.accum, p.dtype, p.dtype, em.acc(mi), adesc, bdesc,
                              1, 1, 1, 0, 1 if plan.NN else 0)
    b.wgmma_commit_group()


def zero_acc(em: Emitter) -> None:
    t = "f32" if em.p.accum == "f32" else "b32"
    for mi in range(em.plan.MI):
        for r in em.acc(mi):
            em.b.mov(t, r, 0)


def release_and_refill(em: Emitter, kt: Reg, nxt, issuer: Reg | None) -> None:
    """single: arrive on empty[rel % S] (rel = kt - 1, or kt with one stage); warp 0 waits for
    every warp's arrival and loads k-tile rel + S into that stage."""
    b, plan = em.b, em.plan
    S, KT = plan.S, plan.KT
    lane0 = em.pred("lane0")
    rel, rs, rph = em.u32("rel"), em.u32("rs"), em.u32("rph")
    if S == 1:
        b.mov("u32", rel, kt)
    else:
        p0 = em.pred("first")
        b.setp("eq", "u32", p0, kt, 0)
        b.bra(nxt, guard=Guard(p0))
        b.sub("u32", rel, kt, 1)
    em.stage_phase(rs, rph, rel)
    ebar = em.u32("ebar")
    em.bar_addr(ebar, rs, "empty_bar")
    b.mbarrier_arrive(Mem(ebar), guard=Guard(lane0))
    prf = em.pred("refill")
    b.setp("lt", "s32", prf, rel, KT - S)
    b.and_("pred", prf, prf, em.pred("warp0"))
    b.bra(nxt, guard=Guard(prf, True))
    em.wait(ebar, rph)
    kl = em.u32("kload")
    b.add("u32", kl, rel, S)
    sa, sb, bar = em.u32("sa"), em.u32("sb"), em.u32("bar")
    em.stage_addrs(rs, sa, sb, bar, "full_bar")
    load_stage(em, sa, sb, bar, kl, issuer or lane0)


def release(em: Emitter, kt: Reg, s: Reg) -> None:
    """ws: lane 0 of each consumer warp arrives on empty[(kt-1) % S] once kt >= 1 (on empty[s]
    after wait_group 0 with one stage)."""
    b, plan = em.b, em.plan
    lane0, sig, ebar = em.pred("lane0"), em.pred("signal"), em.u32("ebar")
    if plan.S == 1:
        em.bar_addr(ebar, s, "empty_bar")
        b.mbarrier_arrive(Mem(ebar), guard=Guard(lane0))
        return
    b.setp("ne", "u32", sig, kt, 0)
    b.and_("pred", sig, sig, lane0)
    rel, rs = em.u32("rel"), em.u32("rs")
    b.sub("u32", rel, kt, 1)
    em.mod_const(rs, rel, plan.S, plan.KT + plan.S)
    em.bar_addr(ebar, rs, "empty_bar")
    b.mbarrier_arrive(Mem(ebar), guard=Guard(sig))


def mainloop(em: Emitter, cw: Reg | None, issuer: Reg | None = None) -> None:
    """The consumer k-loop of `single` (cw None: with warp 0's refill) or of a ws consumer."""
    b, plan = em.b, em.plan
    kt, s, ph = em.u32("kt"), em.u32("s"), em.u32("ph")
    bar, sa, sb = em.u32("bar"), em.u32("sa"), em.u32("sb")
    zero_acc(em)
    b.mov("u32", kt, 0)
    top, nxt = em.label("KLOOP"), em.label("KNEXT")
    b.place(top)
    em.stage_phase(s, ph, kt)
    em.bar_addr(bar, s, "full_bar")
    em.wait(bar, ph)
    em.stage_addrs(s, sa, sb, None)
    mma_stage(em, sa, sb, cw)
    b.wgmma_wait_group(0 if plan.S == 1 else 1)
    if not plan.WS:
        release_and_refill(em, kt, nxt, issuer)
    else:
        release(em, kt, s)
    em.loop_back(kt, plan.KT, top, after=nxt)
    b.wgmma_wait_group(0)
