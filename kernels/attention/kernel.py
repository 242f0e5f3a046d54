"""The attention tile kernel: one CTA = one warpgroup of 128 threads, one 64-row Q tile.

    setup       sQ (dynamic base rounded up to 1024 B), sK, sV; thread 0 inits full[s] (count 1),
                empty[s] (count 4: lane 0 of each warp) and q_bar (count 1); bar.sync 0
    prologue    warp 0 (lane 0 issues): expect_tx(q_bar, Q bytes) + the Q boxes; then KV blocks
                0 .. min(S, KT)-1 into stages 0.. (expect_tx(full[s], K + V bytes) + K and V boxes)
    loop j      s = j % S, ph = (j / S) & 1; wait full[s]; wgmma.fence; S = Q K^T as d/16 wgmma
                m64n{kvb}k16 (scale-d 0 on the first: S is not zeroed); commit; wait_group 0;
                online softmax (softmax.py); wgmma.fence; O += P V as kvb/16 wgmma m64n{d}k16 with
                A from registers and V MN-major (trans-b 1); commit; wait_group 0; lane 0 of every
                warp arrives on empty[s]; warp 0 waits empty[s] (phase ph) and loads block j + S
    epilogue    O /= rowsum; st.global.v2.f32 of each thread's pairs (row, col), (row, col + 1), or
                (out f16) cvt to f16x2, st.shared into the Q tile (128B swizzle), TMA store
    overlap     the softmax of block j overlaps the P V wgmma of block j - 1 (mainloop_overlap)
    ws          warp 4 (threads 128..159) is the producer: Q, then for every block j: wait empty[s]
                (phase flipped: the first pass needs no release), load block j into stage s; the
                warpgroup only waits full[s], computes and releases (no refill, no prologue)

Branches are warp-uniform (as in kernels/gemm/): `if (threadIdx.x == 0)` is the whole warp with the
lanes predicated. Names of values follow the GEMM emitter (kernels/gemm/emit.py).
"""

from __future__ import annotations

from isa.ir import Guard, Kernel, Mem, Reg, SReg, Sym
from kernels.attention import softmax
from kernels.attention.params import AttnParams, TILE_M
from kernels.attention.plan import WGMMA_K, Plan
from kernels.gemm.consumer import desc_base
from kernels.gemm.emit import Emitter, log2

KERNEL_NAME = "attention_tile"
REG_POOLS = (("u32", "%r"), ("u64", "%rd"), ("pred", "%p"), ("f32", "%f"))
TMA_DIMS = 2
OUT_BYTES = 4          # f32 O


def declare(em: Emitter) -> None:
    b, plan = em.b, em.plan
    for name in ("tma_q", "tma_k", "tma_v"):
        b.param(name, "tmap")
    if em.p.out == "f16":
        b.param("tma_o", "tmap")
    else:
        b.param("O", "u64")
    b.shared("full_bar", 8 * plan.S, align=8)
    b.shared("empty_bar", 8 * plan.S, align=8)
    b.shared("q_bar", 8, align=8)
    b.shared("static_pad", plan.pad, align=8)
    em.s_acc = b.regs("f32", plan.S_REGS, "%sacc")
    em.o_acc = b.regs("f32", plan.O_REGS, "%oacc")
    em.p_regs = b.regs("b32", plan.P_REGS, "%pa")


def setup(em: Emitter) -> None:
    """tid, lane, sQ/sK/sV, the barrier addresses, the tile's first row; barrier init."""
    b, plan = em.b, em.plan
    tid, sq = em.u32("tid"), em.u32("sQ")
    b.mov("u32", tid, SReg("%tid.x"))
    b.mov("u32", sq, Sym("static_pad"))
    b.add("u32", sq, sq, plan.pad + 1023)
    b.and_("b32", sq, sq, 0xFFFFFC00)
    b.add("u32", em.u32("sK"), sq, plan.K_OFF)
    b.add("u32", em.u32("sV"), sq, plan.V_OFF)
    b.mov("u32", em.u32("full_bar"), Sym("full_bar"))
    b.mov("u32", em.u32("empty_bar"), Sym("empty_bar"))
    b.mov("u32", em.u32("cta"), SReg("%ctaid.x"))
    b.shl("b32", em.u32("qrow0"), em.u32("cta"), log2(TILE_M))
    t0 = em.pred("t0")
    b.setp("eq", "u32", t0, tid, 0)
    with b.guarded(t0):
        for s in range(plan.S):
            b.mbarrier_init(Mem(Sym("full_bar"), 8 * s), 1)
            b.mbarrier_init(Mem(Sym("empty_bar"), 8 * s), 4)
        b.mbarrier_init(Mem(Sym("q_bar")), 1)
        b.fence_mbarrier_init()
    b.bar_sync(0)
    lane = em.u32("lane")
    b.and_("b32", lane, tid, 31)
    b.setp("eq", "u32", em.pred("lane0"), lane, 0)
    b.setp("lt", "u32", em.pred("warp0"), tid, 32)


def _boxes(em: Emitter, boxes, base: Reg, row: Reg, bar: Mem) -> None:
    b, col = em.b, em.u32("ld_col")
    for box in boxes:
        b.mov("u32", col, box.col)
        b.cp_async_bulk_tensor_load(TMA_DIMS, Mem(base, box.smem_offset), Sym(box.tmap), (col, row), bar,
                                    guard=Guard(em.pred("lane0")))


def load_q(em: Emitter) -> None:
    em.b.mbarrier_arrive_expect_tx(Mem(Sym("q_bar")), em.plan.Q_BYTES, guard=Guard(em.pred("lane0")))
    _boxes(em, em.plan.q_boxes(), em.u32("sQ"), em.u32("qrow0"), Mem(Sym("q_bar")))


def stage_addrs(em: Emitter, s: Reg) -> None:
    """sk, sv = the K and V tiles of stage s; bar = &full[s]; ebar = &empty[s]."""
    b, plan = em.b, em.plan
    b.mad("u32", em.u32("sk"), s, plan.KV_BYTES, em.u32("sK"), mode="lo")
    b.mad("u32", em.u32("sv"), s, plan.KV_BYTES, em.u32("sV"), mode="lo")
    em.bar_addr(em.u32("bar"), s, "full_bar")
    em.bar_addr(em.u32("ebar"), s, "empty_bar")


def load_kv(em: Emitter, j: Reg) -> None:
    """expect_tx(full[s], K + V bytes), then the K and V boxes of KV block j (keys j*kvb ..)."""
    b, plan = em.b, em.plan
    bar, key0 = em.u32("bar"), em.u32("ld_key0")
    b.mbarrier_arrive_expect_tx(Mem(bar), plan.TX, guard=Guard(em.pred("lane0")))
    b.shl("b32", key0, j, log2(plan.KVB))
    _boxes(em, plan.kv_boxes("tma_k"), em.u32("sk"), key0, Mem(bar))
    _boxes(em, plan.kv_boxes("tma_v"), em.u32("sv"), key0, Mem(bar))


def prologue(em: Emitter) -> None:
    """Warp 0: Q and KV blocks 0 .. min(S, KT)-1."""
    b, plan = em.b, em.plan
    skip = em.label("PROLOGUE_END")
    b.bra(skip, guard=Guard(em.pred("warp0"), True))
    load_q(em)
    s = em.u32("s")
    b.mov("u32", s, 0)
    top = b.place(em.label("PROLOGUE"))
    stage_addrs(em, s)
    load_kv(em, s)
    em.loop_back(s, min(plan.S, plan.KT), top)
    b.place(skip)


def scores(em: Emitter, wait: bool = True) -> None:
    """S = Q K^T: d/16 wgmma m64n{kvb}k16, K-major A (Q) and B (K) from shared memory (fence,
    commit; wait_group 0 unless `wait` is False)."""
    b, plan = em.b, em.plan
    dq, dk, da, db = em.u64("descQ"), em.u64("descK"), em.u64("da"), em.u64("db")
    desc_base(em, dk, em.u32("sk"), *plan.k_desc)
    b.wgmma_fence()
    for kk in range(plan.D // WGMMA_K):
        qa, kb = dq, dk
        if plan.q_step(kk):
            b.add("u64", da, dq, plan.q_step(kk) >> 4)
            qa = da
        if plan.k_step(kk):
            b.add("u64", db, dk, plan.k_step(kk) >> 4)
            kb = db
        b.wgmma_mma_async(plan.KVB, "f32", "f16", "f16", em.s_acc, qa, kb, 0 if kk == 0 else 1, 1, 1, 0, 0)
    b.wgmma_commit_group()
    if wait:
        b.wgmma_wait_group(0)


def pv(em: Emitter, sv: Reg | None = None, fence: bool = True, wait: bool = True) -> None:
    """O += P V: kvb/16 wgmma m64n{d}k16, A = the P fragments in registers, V MN-major (trans-b),
    V at `sv` (default the current stage's)."""
    b, plan = em.b, em.plan
    dv, db = em.u64("descV"), em.u64("db")
    desc_base(em, dv, sv if sv is not None else em.u32("sv"), *plan.v_desc)
    if fence:
        b.wgmma_fence()
    for kk in range(plan.KVB // WGMMA_K):
        vb = dv
        if plan.v_step(kk):
            b.add("u64", db, dv, plan.v_step(kk) >> 4)
            vb = db
        a = em.p_regs.regs[4 * kk:4 * kk + 4]
        b.wgmma_mma_async(plan.D, "f32", "f16", "f16", em.o_acc, a, vb, 1, 1, 1, 0, 1)
    b.wgmma_commit_group()
    if wait:
        b.wgmma_wait_group(0)


def release_and_refill(em: Emitter, j: Reg, ph: Reg, nxt) -> None:
    """Lane 0 of every warp arrives on empty[s]; warp 0 waits for all four and loads block j + S."""
    b, plan = em.b, em.plan
    b.mbarrier_arrive(Mem(em.u32("ebar")), guard=Guard(em.pred("lane0")))
    prf = em.pred("refill")
    b.setp("lt", "u32", prf, j, max(plan.KT - plan.S, 0))
    b.and_("pred", prf, prf, em.pred("warp0"))
    b.bra(nxt, guard=Guard(prf, True))
    em.wait(em.u32("ebar"), ph)
    kl = em.u32("kload")
    b.add("u32", kl, j, plan.S)
    load_kv(em, kl)


def producer_warp(em: Emitter, done) -> None:
    """ws: the producer warp loads Q, then every KV block j into stage j % S once the warpgroup
    released the stage's previous block (empty[s], phase (j / S) & 1 ^ 1)."""
    b, plan = em.b, em.plan
    load_q(em)
    j, s, ph = em.u32("pj"), em.u32("s"), em.u32("ph")
    b.mov("u32", j, 0)
    top = b.place(em.label("PLOOP"))
    em.stage_phase(s, ph, j, flip=True)
    stage_addrs(em, s)
    em.wait(em.u32("ebar"), ph)
    load_kv(em, j)
    em.loop_back(j, plan.KT, top)
    b.bra(done, uni=True)


def release(em: Emitter) -> None:
    """ws: lane 0 of every consumer warp arrives on empty[s]."""
    em.b.mbarrier_arrive(Mem(em.u32("ebar")), guard=Guard(em.pred("lane0")))


def mainloop(em: Emitter, ws: bool = False) -> None:
    b, plan = em.b, em.plan
    for r in em.o_acc:
        b.mov("f32", r, 0.0)
    softmax.init_stats(em)
    desc_base(em, em.u64("descQ"), em.u32("sQ"), *plan.q_desc)
    b.mov("u32", em.u32("qph"), 0)
    em.wait(Sym("q_bar"), em.u32("qph"))
    j, s, ph = em.u32("kt"), em.u32("s"), em.u32("ph")
    b.mov("u32", j, 0)
    top, nxt = em.label("KVLOOP"), em.label("KVNEXT")
    b.place(top)
    em.stage_phase(s, ph, j)
    stage_addrs(em, s)
    em.wait(em.u32("bar"), ph)
    scores(em)
    softmax.online_block(em, em.s_acc, em.o_acc, em.p_regs, plan.p.softmax_scale * softmax.LOG2E)
    pv(em)
    if ws:
        release(em)
    else:
        release_and_refill(em, j, ph, nxt)
    em.loop_back(j, plan.KT, top, after=nxt)


def mainloop_overlap(em: Emitter, ws: bool = False) -> None:
    """FlashAttention-3's intra-warpgroup pipelining: the softmax of block j runs while the P V
    wgmma of block j - 1 is in flight (needs >= 2 stages: stage j - 1 is released one block later).

        block 0:   wait full; S = Q K_0 (wait 0); exp_block; rescale_and_pack
        j >= 1:    wait full[j % S]; fence; S = Q K_j; commit; O += P V_{j-1}; commit;
                   wait_group 1 (S_j retired: groups retire in order); exp_block (S only);
                   wait_group 0 (P V_{j-1} retired); release stage (j - 1) % S (+ refill in single);
                   O *= alpha; pack P_j
        tail:      fence; O += P V_{KT-1}; wait_group 0
    The arithmetic is the same instructions on the same values as `mainloop`: O is bit-identical."""
    b, plan = em.b, em.plan
    c = plan.p.softmax_scale * softmax.LOG2E
    for r in em.o_acc:
        b.mov("f32", r, 0.0)
    softmax.init_stats(em)
    desc_base(em, em.u64("descQ"), em.u32("sQ"), *plan.q_desc)
    b.mov("u32", em.u32("qph"), 0)
    em.wait(Sym("q_bar"), em.u32("qph"))
    j, s, ph, prev_sv = em.u32("kt"), em.u32("s"), em.u32("ph"), em.u32("sv_prev")
    b.mov("u32", j, 0)
    em.stage_phase(s, ph, j)
    stage_addrs(em, s)
    em.wait(em.u32("bar"), ph)
    scores(em)
    softmax.online_block(em, em.s_acc, em.o_acc, em.p_regs, c)
    b.mov("u32", prev_sv, em.u32("sv"))
    if plan.KT > 1:
        b.mov("u32", j, 1)
        top, nxt = em.label("KVLOOP"), em.label("KVNEXT")
        b.place(top)
        em.stage_phase(s, ph, j)
        stage_addrs(em, s)
        em.wait(em.u32("bar"), ph)
        scores(em, wait=False)
        pv(em, prev_sv, fence=False, wait=False)
        b.wgmma_wait_group(1)
        softmax.exp_block(em, em.s_acc, c)
        b.wgmma_wait_group(0)
        b.mov("u32", prev_sv, em.u32("sv"))
        rel, rs, rph = em.u32("rel"), em.u32("rs"), em.u32("rph")
        b.sub("u32", rel, j, 1)
        em.stage_phase(rs, rph, rel)
        stage_addrs(em, rs)
        if ws:
            release(em)
        else:
            release_and_refill(em, rel, rph, nxt)
        b.place(nxt)
        softmax.rescale_and_pack(em, em.s_acc, em.o_acc, em.p_regs)
        em.loop_back(j, plan.KT, top)
    pv(em, prev_sv)


def epilogue(em: Emitter) -> None:
    """O /= l, then f32 direct stores or the f16 TMA-store epilogue."""
    softmax.normalise(em, em.o_acc)
    (store_f16 if em.p.out == "f16" else store_f32)(em)


def store_f32(em: Emitter) -> None:
    """Thread stores row qrow0 + 16 warp + lane/4 (+8), columns 8 v2 + 2 (lane % 4) + {0, 1}."""
    b, D = em.b, em.plan.D
    row, col, t = em.u32("row"), em.u32("col"), em.u32("epi_t")
    gp, rd = em.u64("gptr"), em.u64("epi_rd")
    b.shr("u32", t, em.u32("tid"), 5)
    b.shl("b32", row, t, 4)
    b.add("u32", row, row, em.u32("qrow0"))
    b.shr("u32", t, em.u32("lane"), 2)
    b.add("u32", row, row, t)
    b.and_("b32", col, em.u32("lane"), 3)
    b.shl("b32", col, col, 1)
    b.mad("u32", t, row, D, col, mode="lo")
    b.mul("u32", rd, t, OUT_BYTES, mode="wide")
    b.ld_param("u64", gp, Mem(Sym("O")))
    b.add("u64", gp, gp, rd)
    for v2 in range(D // 8):
        for h in range(2):
            i = 4 * v2 + 2 * h
            b.st_global("f32", Mem(gp, (8 * h * D + 8 * v2) * OUT_BYTES), (em.o_acc[i], em.o_acc[i + 1]), vec=2)


def slab_addrs(em: Emitter) -> list[Reg]:
    """The f16 O tile reuses the Q tile (plan.q_smem with the 128B swizzle): the pair (row r,
    columns c, c + 1) of chunk c / 64 is at r*128 + 16 ((c % 64) / 8 ^ r % 8) + 2 (c % 8). A thread's
    rows are r0 = 16 warp + lane/4 (+8: the same r % 8), so its 16-B chunk j (= v2 % 8) is at
    base + 16 (j ^ lane/4), base = sQ + r0*128 + 4 (lane % 4): eight address registers."""
    b, lane = em.b, em.u32("lane")
    base, x, t = em.u32("o_base"), em.u32("o_x"), em.u32("epi_t")
    b.shr("u32", t, em.u32("tid"), 5)
    b.shr("u32", x, lane, 2)
    b.shl("b32", base, t, 4)
    b.add("u32", base, base, x)
    b.shl("b32", base, base, 7)
    b.add("u32", base, base, em.u32("sQ"))
    b.and_("b32", t, lane, 3)
    b.shl("b32", t, t, 2)
    b.add("u32", base, base, t)
    out = []
    for j in range(8):
        a = em.u32(f"o_addr{j}")
        b.xor("b32", t, x, j)
        b.shl("b32", t, t, 4)
        b.add("u32", a, base, t)
        out.append(a)
    return out


def store_f16(em: Emitter) -> None:
    """cvt.rn.f16x2.f32 pairs -> st.shared.b32 into the swizzled tile (Q is dead: every wgmma that
    read it has retired); fence.proxy.async (generic writes -> the TMA's async proxy); bar.sync 1,
    128 (the warpgroup only: the ws producer warp does not take part); thread 0 stores each
    64-column chunk with a TMA store, commit, wait_group 0 (the stores complete before the CTA
    exits, as kernels/membound/tmacopy.py; hopsim's timed machine drops the global write of a store
    still pending at exit, so wait_group.read 0, enough on hardware, is not used here)."""
    b, plan = em.b, em.plan
    addrs = slab_addrs(em)
    pk = em.value("b32", "o_pack")
    for v2 in range(plan.D // 8):
        for h in range(2):
            i = 4 * v2 + 2 * h
            b.cvt("f16x2", "f32", pk, em.o_acc[i + 1], rnd="rn", src2=em.o_acc[i])
            b.st_shared("b32", Mem(addrs[v2 % 8], (v2 // 8) * plan.q_smem.stride[1][1] + h * 8 * plan.q_smem.stride[0]), pk)
    b.fence_proxy_async()
    b.bar_sync(1, 128)
    col, t0 = em.u32("ld_col"), Guard(em.pred("t0"))
    for box in plan.q_boxes():
        b.mov("u32", col, box.col)
        b.cp_async_bulk_tensor_store(TMA_DIMS, Sym("tma_o"), (col, em.u32("qrow0")),
                                     Mem(em.u32("sQ"), box.smem_offset), guard=t0)
    b.cp_async_bulk_commit_group(guard=t0)
    b.cp_async_bulk_wait_group(0, guard=t0)


def build_kernel(params: AttnParams, check: bool = True) -> Kernel:
    em = Emitter(Plan(params), name=KERNEL_NAME)
    em.b.reg_pools(*REG_POOLS)
    declare(em)
    setup(em)
    if params.variant == "ws":
        done, prod = em.label("DONE"), em.label("PRODUCER")
        pw = em.pred("producer")
        em.b.setp("ge", "u32", pw, em.u32("tid"), 128)
        em.b.bra(prod, guard=Guard(pw))
        (mainloop_overlap if params.overlap else mainloop)(em, ws=True)
        epilogue(em)
        em.b.bra(done, uni=True)
        em.b.place(prod)
        producer_warp(em, done)
        em.b.place(done)
    else:
        prologue(em)
        (mainloop_overlap if params.overlap else mainloop)(em)
        epilogue(em)
    em.b.exit()
    return em.b.build(check=check)
