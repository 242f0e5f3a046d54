"""The producer role: TMA loads of pipeline stages.

    load_stage(kt):  @issuer arrive.expect_tx(full[s], stage bytes); then every TMA box of k-tile kt
                     (plan.boxes(): A {kt*64 + c*W, tm*BM + i*RA}; B tn {kt*64 + c*W, tn*BN + i*RB};
                     B nn {tn*BN + j*W, kt*64 + i*RB}) into sA/sB + the smem layout of the box origin
    single:          warp 0 fills stages 0 .. min(S, KT)-1 before the mainloop (which refills)
    ws:              warpgroup 0 gives registers back (setmaxnreg.dec 40); warp 0 loops over every
                     k-tile: wait empty[s] (phase flipped: the first pass needs no consumer), load
"""

from __future__ import annotations

from isa.ir import Guard, Label, Mem, Reg, Sym
from kernels.gemm.emit import Emitter, log2

TMA_LOAD_DIMS = 2


def load_stage(em: Emitter, sa: Reg, sb: Reg, bar: Reg, kt: Reg, issuer: Reg) -> None:
    """The .cu's load_stage(): arrive.expect_tx(stage bytes) + every TMA box of k-tile kt."""
    b, plan = em.b, em.plan
    guard = Guard(issuer)
    b.mbarrier_arrive_expect_tx(Mem(bar), plan.TX, guard=guard)
    k0, kc, row = em.u32("ld_k0"), em.u32("ld_kc"), em.u32("ld_row")
    bases = {"k0": k0, "tmBM": em.u32("tmBM"), "tnBN": em.u32("tnBN")}
    b.shl("b32", k0, kt, log2(plan.BK))

    def coord(dst: Reg, base: str, add: int) -> Reg:
        if add == 0:
            return bases[base]
        b.add("u32", dst, bases[base], add)
        return dst

    for column in plan.boxes():
        c0 = coord(kc, *column[0].coord0)
        for box in column:
            c1 = coord(row, *box.coord1)
            dst = sa if box.tmap == "tma_a" else sb
            b.cp_async_bulk_tensor_load(TMA_LOAD_DIMS, Mem(dst, box.smem_offset), Sym(box.tmap),
                                        (c0, c1), Mem(bar), guard=guard)


def fill_pipeline(em: Emitter, issuer: Reg) -> None:
    """single: warp 0 loads k-tiles 0 .. min(S, KT)-1 into stages 0.. (lane `issuer` issues)."""
    b, plan = em.b, em.plan
    w0 = em.pred("warp0")
    b.setp("lt", "u32", w0, em.u32("tid"), 32)
    skip = em.label("PROLOGUE_END")
    b.bra(skip, guard=Guard(w0, True))
    s, sa, sb, bar = em.u32("s"), em.u32("sa"), em.u32("sb"), em.u32("bar")
    b.mov("u32", s, 0)
    top = b.place(em.label("PROLOGUE"))
    em.stage_addrs(s, sa, sb, bar)
    load_stage(em, sa, sb, bar, s, issuer)
    em.loop_back(s, min(plan.S, plan.KT), top)
    b.place(skip)


def producer_warpgroup(em: Emitter, issuer: Reg, done: Label) -> None:
    """ws: warpgroup 0 (setmaxnreg.dec 40); warp 0 loads every k-tile after empty[s] completes
    the phase of the previous pass; the other producer warps exit."""
    b, plan = em.b, em.plan
    b.setmaxnreg("dec", 40)
    pw = em.pred("not_warp0")
    b.setp("ge", "u32", pw, em.u32("tid"), 32)
    b.bra(done, guard=Guard(pw))
    kt, s, ph, bar, sa, sb = (em.u32(x) for x in ("kt", "s", "ph", "bar", "sa", "sb"))
    ebar = em.u32("ebar")
    b.mov("u32", kt, 0)
    top = b.place(em.label("PLOOP"))
    em.stage_phase(s, ph, kt, flip=True)
    em.bar_addr(ebar, s, "empty_bar")
    em.wait(ebar, ph)
    em.stage_addrs(s, sa, sb, bar)
    load_stage(em, sa, sb, bar, kt, issuer if em.p.tma_issuer == "elect" else em.pred("t0"))
    em.loop_back(kt, plan.KT, top)
    b.bra(done, uni=True)
