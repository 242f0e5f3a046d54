"""Kernel setup, run by every thread before the roles split: declarations, the dynamic shared
memory base, the CTA's tile (raster), the mbarriers, and the lane predicates.

    .shared full_bar[S], empty_bar[S] (.b64 mbarriers), static_pad (static segment = 1024 B as
    ptxas reports for the .cu, whose dynamic array is __align__(1024))
    sA = (static_pad + pad + 1023) & ~1023;  sB = sA + S * A_STAGE
    full[s]: count 1 (the producer's arrive.expect_tx); empty[s]: count 4*NC (lane 0 of every
    consumer warp arrives)
"""

from __future__ import annotations

from isa.ir import Guard, Mem, Reg, SReg, Sym
from kernels.gemm.emit import Emitter


def declare(em: Emitter) -> None:
    """Parameters and static shared memory, as the .cu's kernel signature and __shared__ arrays."""
    b, plan = em.b, em.plan
    b.param("tma_a", "tmap")
    b.param("tma_b", "tmap")
    b.param("C", "u64")
    b.shared("full_bar", 8 * plan.S, align=8)
    b.shared("empty_bar", 8 * plan.S, align=8)
    b.shared("static_pad", plan.pad, align=8)


def smem_base(em: Emitter) -> None:
    """tid, sA (dynamic base rounded up to 1024 B), sB, and the barrier arrays' addresses."""
    b, plan = em.b, em.plan
    tid = em.u32("tid")
    b.mov("u32", tid, SReg("%tid.x"))
    base = em.u32("sA")
    b.mov("u32", base, Sym("static_pad"))
    b.add("u32", base, base, plan.pad + 1023)
    b.and_("b32", base, base, 0xFFFFFC00)
    b.add("u32", em.u32("sB"), base, plan.S * plan.A_STAGE)
    b.mov("u32", em.u32("full_bar"), Sym("full_bar"))
    b.mov("u32", em.u32("empty_bar"), Sym("empty_bar"))


def tile_coords(em: Emitter) -> None:
    """The .cu's tile_coords(blockIdx.x, tm, tn): tmBM = tm*BM, tnBN = tn*BN.
    row: tm = id / TILES_N, tn = id % TILES_N; grouped: group_m M-tiles walk the N tiles."""
    b, plan = em.b, em.plan
    cta, tm, tn = em.u32("cta"), em.u32("tm"), em.u32("tn")
    grid = plan.TILES_M * plan.TILES_N
    b.mov("u32", cta, SReg("%ctaid.x"))
    if em.p.raster == "row":
        em.div_const(tm, cta, plan.TILES_N, grid)
        em.mod_const(tn, cta, plan.TILES_N, grid, q=tm)
    else:
        grouped_raster(em, cta, tm, tn, grid)
    b.mul("u32", em.u32("tmBM"), tm, plan.BM, mode="lo")
    b.mul("u32", em.u32("tnBN"), tn, plan.BN, mode="lo")


def grouped_raster(em: Emitter, cta: Reg, tm: Reg, tn: Reg, grid: int) -> None:
    """Group g = id / (G * TILES_N) covers M tiles first_m = g*G .. + gsz, walking N:
    tm = first_m + r % gsz, tn = r / gsz (r = id % (G * TILES_N)); gsz = min(G, TILES_M - first_m)
    is G except in a smaller last group (then two constant divisions and selp)."""
    b, plan, G = em.b, em.plan, em.p.group_m
    per = G * plan.TILES_N
    grp, fm, r = em.u32("grp"), em.u32("first_m"), em.u32("grp_r")
    em.div_const(grp, cta, per, grid)
    b.mul("u32", fm, grp, G, mode="lo")
    em.mod_const(r, cta, per, grid, q=grp)
    tail = plan.TILES_M % G
    if tail == 0 or plan.TILES_M < G:
        gsz = min(G, plan.TILES_M)  # every group has this size
        q = em.u32("grp_q")
        em.div_const(q, r, gsz, per)
        em.mod_const(tm, r, gsz, per, q=q)
        b.add("u32", tm, tm, fm)
        b.mov("u32", tn, q)
        return
    pfull, left = em.pred("grp_full"), em.u32("grp_left")
    b.sub("u32", left, plan.TILES_M, fm)
    b.setp("ge", "u32", pfull, left, G)
    q1, r1, q2, r2 = em.u32("grp_q1"), em.u32("grp_r1"), em.u32("grp_q2"), em.u32("grp_r2")
    em.div_const(q1, r, G, per)
    em.mod_const(r1, r, G, per, q=q1)
    em.div_const(q2, r, tail, per)
    em.mod_const(r2, r, tail, per, q=q2)
    b.selp("u32", tn, q1, q2, pfull)
    b.selp("u32", tm, r1, r2, pfull)
    b.add("u32", tm, tm, fm)


def init_barriers(em: Emitter) -> None:
    """Thread 0 initialises full[s] (count 1) and empty[s] (count 4*NC); then bar.sync 0."""
    b, plan = em.b, em.plan
    t0 = em.pred("t0")
    b.setp("eq", "u32", t0, em.u32("tid"), 0)
    with b.guarded(t0):
        for s in range(plan.S):
            b.mbarrier_init(Mem(Sym("full_bar"), 8 * s), 1)
            b.mbarrier_init(Mem(Sym("empty_bar"), 8 * s), 4 * plan.NC)
        b.fence_mbarrier_init()
    b.bar_sync(0)


def lane_predicates(em: Emitter) -> Reg:
    """lane = tid & 31, lane0; returns the TMA issuer predicate: lane 0, or with tma_issuer
    "elect" the lane elect.sync elects (CUTLASS's elect_one_sync())."""
    b = em.b
    lane, lane0 = em.u32("lane"), em.pred("lane0")
    b.and_("b32", lane, em.u32("tid"), 31)
    b.setp("eq", "u32", lane0, lane, 0)
    if em.p.tma_issuer != "elect":
        return lane0
    issuer = em.pred("issuer")
    b.elect_sync(issuer, 0xFFFFFFFF)
    return issuer


def prologue(em: Emitter) -> Reg:
    """Everything before the roles split; returns the TMA issuer predicate."""
    smem_base(em)
    tile_coords(em)
    init_barriers(em)
    return lane_predicates(em)
