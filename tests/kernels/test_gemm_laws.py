"""Laws of the GEMM generator (kernels/gemm/), checked on the code it emits, evaluated per thread
by tests/kernels/_ir_eval.py:

  * the k-loop's stage and phase: s = kt mod S, phase = (kt div S) mod 2 (flipped for the
    producer's empty-barrier waits), for every kt the loops reach, every S in 1..8;
  * every TMA box of a stage: the boxes cover the tile of k-tile kt exactly once, each lands at
    the smem layout of its origin (isa Layout, rows of one swizzle span), and the stage's
    expect_tx equals the bytes of its boxes;
  * every wgmma reads its descriptor at the smem layout of (row block, k-step) with the LBO, SBO
    and swizzle of the layout;
  * the stmatrix epilogue: the address of every (row, 16-byte chunk) a lane writes or reads is
    the slab layout Swizzle<3,4,3> o (16,64):(128,2), and each chunk is written and read once.
The product itself against numpy is tests/kernels/test_gemm_ir.py.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from isa.descriptor import MatrixDescriptor
from isa.swizzle import parse_swizzle
from kernels.gemm import consumer, epilogue, producer
from kernels.gemm.emit import Emitter
from kernels.gemm.plan import EPI_SLAB, Plan
from kernels.params import GemmParams

from _ir_eval import run

SA, SB, BAR = 1024 * 3, 1024 * 3 + 96 * 1024, 64  # stage bases (1024-aligned) and a barrier


def _emitter(**kw) -> Emitter:
    return Emitter(Plan(GemmParams(**kw)))


def _names(em: Emitter, **values) -> dict[str, int]:
    """Register values by purpose -> by register name."""
    return {em.u32(k).name: v for k, v in values.items()}


@pytest.mark.parametrize("stages", range(1, 9))
@pytest.mark.parametrize("flip", [False, True])
def test_stage_and_phase_of_every_k_tile(stages, flip):
    kt_count = 13
    em = _emitter(m=64, n=64, k=64 * kt_count, bm=64, bn=64, stages=stages)
    kt, s, ph = em.u32("kt"), em.u32("s"), em.u32("ph")
    em.stage_phase(s, ph, kt, flip=flip)
    kernel = em.b.build(check=False)
    for k in range(kt_count + stages):  # the refill computes the stage of k-tile kt - 1 + S
        regs, _ = run(kernel, {kt.name: k})
        assert regs[s.name] == k % stages
        assert regs[ph.name] == ((k // stages) % 2) ^ flip


TMA_GRID = [dict(layout=lay, swizzle=sw, box_rows=br, bm=bm, bn=bn, accum=acc)
            for lay, sw, br, (bm, bn, acc) in itertools.product(
                ("tn", "nn"), ("32B", "64B", "128B"), (8, 32, 256),
                ((64, 128, "f32"), (256, 64, "f32"), (128, 256, "f16")))]


def _box_extent(plan: Plan, tmap: str) -> tuple[int, int]:
    return plan.W, plan.RA if tmap == "tma_a" else plan.RB


@pytest.mark.parametrize("kw", TMA_GRID, ids=lambda kw: "-".join(str(v) for v in kw.values()))
def test_every_box_of_a_stage_is_loaded_once_at_its_layout(kw):
    em = _emitter(m=512, n=512, k=512, stages=2, **kw)
    plan, kt_v, tm, tn = em.plan, 3, 2, 1
    sa, sb, bar, kt = em.u32("sa"), em.u32("sb"), em.u32("bar"), em.u32("kt")
    producer.load_stage(em, sa, sb, bar, kt, em.pred("issuer"))
    regs = _names(em, sa=SA, sb=SB, bar=BAR, kt=kt_v, tmBM=tm * plan.BM, tnBN=tn * plan.BN)
    _, events = run(em.b.build(check=False), regs)
    assert events[0] == ("expect_tx", BAR, plan.TX)
    boxes = [e for e in events if e[0] == "tma"]
    k0 = kt_v * plan.BK
    # operand -> (smem base, layout of (row, k) in its stage, tile origin in (dim0, dim1))
    tiles = {"tma_a": (SA, lambda d0, d1: plan.a_offset(d1, d0), (k0, tm * plan.BM), (plan.BK, plan.BM))}
    if plan.NN:
        tiles["tma_b"] = (SB, lambda d0, d1: plan.b_offset(d0, d1), (tn * plan.BN, k0), (plan.BN, plan.BK))
    else:
        tiles["tma_b"] = (SB, lambda d0, d1: plan.b_offset(d1, d0), (k0, tn * plan.BN), (plan.BK, plan.BN))
    for tmap, (base, offset, origin, extent) in tiles.items():
        hits = np.zeros(extent, int)
        for _, t, dst, (c0, c1), mbar in (b for b in boxes if b[1] == tmap):
            assert mbar == BAR
            w, rows = _box_extent(plan, tmap)
            d0, d1 = c0 - origin[0], c1 - origin[1]
            hits[d0:d0 + w, d1:d1 + rows] += 1
            # TMA writes box row r at dst + r * span: the layout puts the same element there
            for r, x in itertools.product(range(rows), range(w)):
                assert base + offset(d0 + x, d1 + r) == dst + r * plan.SP + 2 * x
        assert (hits == 1).all(), f"{tmap}: elements loaded {hits.min()}..{hits.max()} times"
    assert len(boxes) == em.p.boxes_per_stage
    assert plan.TX == sum(_box_extent(plan, b[1])[0] * _box_extent(plan, b[1])[1] * 2 for b in boxes)


@pytest.mark.parametrize("kw", [dict(), dict(layout="nn"), dict(swizzle="32B", bm=256, bn=64),
                                dict(variant="ws", consumers=2, bn=256, swizzle="64B", layout="nn"),
                                dict(variant="ws", consumers=2, bm=256, bn=128)],
                         ids=["tn", "nn", "32B_256x64", "ws2_nn_64B", "ws2_256"])
def test_every_wgmma_reads_the_layout_of_its_k_step(kw):
    em = _emitter(m=512, n=512, k=512, stages=2, **kw)
    plan, cw_v = em.plan, 1 if em.p.num_consumer_warpgroups == 2 else 0
    em.declare_acc()
    sa, sb, cw = em.u32("sa"), em.u32("sb"), em.u32("cw")
    consumer.mma_stage(em, sa, sb, cw if em.plan.WS else None)
    regs, events = run(em.b.build(check=False), _names(em, sa=SA, sb=SB, cw=cw_v))
    mmas = [e for e in events if e[0] == "wgmma"]
    steps = list(itertools.product(range(plan.BK // 16), range(plan.MI)))
    assert len(mmas) == len(steps)
    sw = parse_swizzle(em.p.swizzle)
    for (kk, mi), (_, a, b, acc0) in zip(steps, mmas):
        da, db = MatrixDescriptor.decode(a), MatrixDescriptor.decode(b)
        row = (cw_v * plan.MI + mi) * 64
        assert da.start_address_bytes == SA + plan.a_offset(row, 16 * kk)
        assert db.start_address_bytes == SB + plan.b_offset(0, 16 * kk)
        assert (da.lbo_bytes, da.sbo_bytes, da.swizzle) == (*plan.a_desc, sw)
        assert (db.lbo_bytes, db.sbo_bytes, db.swizzle) == (*plan.b_desc, sw)
        assert acc0 == em.acc(mi)[0].name
    # SBO: 8 rows of the layout; nn LBO: the next n-chunk of the B layout
    assert plan.a_desc[1] == plan.a_offset(8, 0)
    if plan.NN:
        assert plan.b_desc == (plan.b_offset(plan.W, 0), plan.b_offset(0, 8))


def test_epilogue_slab_addresses_are_the_slab_layout():
    em = _emitter(m=256, n=256, k=256, epilogue="stmatrix")
    slab_v = 7 * 1024
    slab = em.u32("slab")
    writes = epilogue.stmatrix_addrs(em, slab)
    even, odd = epilogue.row_read_addrs(em, slab)
    kernel = em.b.build(check=False)
    wrote, read = np.zeros((16, 8), int), np.zeros((16, 8), int)
    for lane in range(32):
        regs, _ = run(kernel, _names(em, lane=lane, slab=slab_v))
        for jj, a in enumerate(writes):         # stmatrix.x4 jj: lane addresses row lane % 16
            r, ch = lane % 16, 2 * jj + lane // 16
            assert regs[a.name] == slab_v + EPI_SLAB(r, 8 * ch)
            wrote[r, ch] += 1
        for it in range(4):                     # ld.shared.v4 pass it: 4 rows of 8 chunks
            base = regs[(even if it % 2 == 0 else odd).name] + it * 4 * 128
            r, ch = it * 4 + lane // 8, lane % 8
            assert base == slab_v + EPI_SLAB(r, 8 * ch)
            read[r, ch] += 1
    assert (wrote == 1).all() and (read == 1).all()
