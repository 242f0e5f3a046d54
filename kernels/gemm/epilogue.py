"""The epilogue: accumulators -> C (row-major M x N, f16/bf16), after wgmma.wait_group 0.

Fragment of a warp (wgmma m64nN D layout): warp w of the warpgroup holds rows 16w .. 16w+15 of
each m64 block; lane l holds row l/4 (+8 for v1 = 1), columns 8 v2 + 2 (l % 4) + {0, 1} (v0).

    direct:    cvt.rn.{f16,bf16}x2.f32 (or the f16x2 accumulator itself); one 4-byte st.global
               per (v1, v2) pair
    stmatrix:  per 64 columns, 4 x stmatrix.x4 into the warp's slab (plan.EPI_SLAB,
               Swizzle<3,4,3> o (16,64):(128,2)), then 4 x (ld.shared.v4 + st.global.v4) per lane
               reading whole 128-B rows, 4 rows per pass
"""

from __future__ import annotations

from isa.ir import Mem, Reg, RegVec, Sym
from kernels.gemm.emit import Emitter, log2
from kernels.gemm.plan import EPI_SLAB

C_BYTES = 2  # f16 / bf16 output element
SLAB_ROWS = EPI_SLAB.layout.shape[0]                     # 16 rows of C per warp
ROW_BYTES = EPI_SLAB.layout.stride[0]                    # 128 B per slab row
CHUNK_BYTES = 1 << EPI_SLAB.swizzle.M                    # 16-B chunk: the swizzle's unit
CHUNKS_PER_ROW = ROW_BYTES // CHUNK_BYTES                # 8
PHASE_MASK = (1 << EPI_SLAB.swizzle.B) - 1               # row bits XORed into the chunk (r % 8)
ROWS_PER_PASS = 32 // CHUNKS_PER_ROW                     # rows one ld.shared.v4 of a warp covers
assert EPI_SLAB.swizzle.M + EPI_SLAB.swizzle.S == log2(ROW_BYTES)  # the XOR source bits are the row


def frag(em: Emitter, mi: int, v1: int, v2: int, dst: Reg) -> Reg:
    """The packed (v0 = 0, 1) pair of row half v1, column group v2 (a b32 register)."""
    a = em.acc(mi)
    if em.p.accum == "f16":
        return a[2 * v2 + v1]
    lo, hi = a[4 * v2 + 2 * v1], a[4 * v2 + 2 * v1 + 1]
    em.b.cvt(f"{em.p.dtype}x2", "f32", dst, hi, rnd="rn", src2=lo)
    return dst


def fragment_rows(em: Emitter, cw: Reg | None) -> Reg:
    """row0 = tm*BM + 16*(warp in warpgroup) (+ cw*MI*64 for consumer cw of two)."""
    b, plan = em.b, em.plan
    w = em.u32("wq")
    b.shr("u32", w, em.u32("tid"), 5)
    b.and_("b32", w, w, 3)
    row0 = em.u32("row0")
    b.shl("b32", row0, w, 4)
    b.add("u32", row0, row0, em.u32("tmBM"))
    if cw is not None and plan.NC > 1:
        b.mad("u32", row0, cw, plan.MI * 64, row0, mode="lo")
    return row0


def row_block(em: Emitter, gp: Reg, mi: int) -> Reg:
    """The global pointer of row block mi (64 rows further per mi)."""
    if mi == 0:
        return gp
    gmi = em.u64("gptr_mi")
    em.b.add("u64", gmi, gp, mi * 64 * em.p.n * C_BYTES)
    return gmi


def global_ptr(em: Emitter, gp: Reg, row: Reg, col: Reg, cptr: Reg) -> None:
    """gp = C + (row * N + col) * 2."""
    b, rd = em.b, em.u64("epi_rd")
    b.mul("u32", gp, row, C_BYTES * em.p.n, mode="wide")
    b.mul("u32", rd, col, C_BYTES, mode="wide")
    b.add("u64", gp, gp, rd)
    b.add("u64", gp, gp, cptr)


def direct(em: Emitter, row0: Reg, cptr: Reg) -> None:
    """Registers -> global: lane l stores row row0 + l/4 (+8), column tn*BN + 8 v2 + 2 (l % 4)."""
    b, plan, N = em.b, em.plan, em.p.n
    lane, t, gp = em.u32("lane"), em.u32("epi_t"), em.u64("gptr")
    col = em.u32("col")
    b.shr("u32", t, lane, 2)
    b.add("u32", t, t, row0)
    b.and_("b32", col, lane, 3)
    b.shl("b32", col, col, 1)
    b.add("u32", col, col, em.u32("tnBN"))
    global_ptr(em, gp, t, col, cptr)
    h = em.b32("pack0")
    em.reserve(("u64", "gptr_mi"))
    for mi in range(plan.MI):
        base = row_block(em, gp, mi)
        for v2 in range(plan.BN // 8):
            for v1 in range(2):
                v = frag(em, mi, v1, v2, h)
                b.st_global("b32", Mem(base, (8 * v1 * N + 8 * v2) * C_BYTES), v, vec=1)


def slab_base(em: Emitter) -> Reg:
    """slab = sA + EPI_OFF + (consumer warp) * 2 KB."""
    b, plan = em.b, em.plan
    slab, warp = em.u32("slab"), em.u32("warp")
    b.shr("u32", warp, em.u32("tid"), 5)
    if plan.WS:
        b.sub("u32", warp, warp, 4)
    b.mad("u32", slab, warp, EPI_SLAB.size * C_BYTES, em.u32("sA"), mode="lo")
    b.add("u32", slab, slab, plan.EPI_OFF)
    return slab


def stmatrix_addrs(em: Emitter, slab: Reg) -> list[Reg]:
    """Lane l's row address for stmatrix.x4 number jj: slab + EPI_SLAB(r, chunk 2 jj + l/16),
    r = l % 16 (lanes 8q .. 8q+7 address the rows of matrix q)."""
    b, lane, t = em.b, em.u32("lane"), em.u32("epi_t")
    r16, x = em.u32("st_r"), em.u32("st_x")
    b.and_("b32", r16, lane, SLAB_ROWS - 1)
    b.shr("u32", x, lane, log2(SLAB_ROWS))
    b.and_("b32", t, lane, PHASE_MASK)
    b.xor("b32", x, x, t)                        # (l / 16) ^ (r % 8)
    b.shl("b32", r16, r16, log2(ROW_BYTES))
    b.add("u32", r16, r16, slab)
    out = []
    for jj in range(4):
        a = em.u32(f"st_addr{jj}")
        b.xor("b32", t, x, 2 * jj)
        b.shl("b32", t, t, log2(CHUNK_BYTES))
        b.add("u32", a, r16, t)
        out.append(a)
    return out


def row_read_addrs(em: Emitter, slab: Reg) -> tuple[Reg, Reg]:
    """Lane l reads chunk ch = l % 8 of row r = pass*4 + l/8: slab + EPI_SLAB(r, 8 ch), which is
    (even pass, odd pass) + pass*4*128 (r % 8 = l/8 or 4 + l/8)."""
    b, lane, t = em.b, em.u32("lane"), em.u32("epi_t")
    sta = em.u32("st_a")
    r8, ch = em.u32("ld_r8"), em.u32("ld_ch")
    lde, ldo = em.u32("ld_even"), em.u32("ld_odd")
    b.shr("u32", r8, lane, log2(CHUNKS_PER_ROW))
    b.and_("b32", ch, lane, CHUNKS_PER_ROW - 1)
    b.shl("b32", t, r8, log2(ROW_BYTES))
    b.add("u32", sta, slab, t)
    b.xor("b32", t, ch, r8)
    b.shl("b32", t, t, log2(CHUNK_BYTES))
    b.add("u32", lde, sta, t)
    b.xor("b32", t, r8, ROWS_PER_PASS)
    b.xor("b32", t, t, ch)
    b.shl("b32", t, t, log2(CHUNK_BYTES))
    b.add("u32", ldo, sta, t)
    return lde, ldo


def via_stmatrix(em: Emitter, row0: Reg, cptr: Reg) -> None:
    """Registers -> swizzled smem slab (stmatrix) -> 16-B row-wise global stores."""
    b, plan, N = em.b, em.plan, em.p.n
    em.reserve(("u32", "slab"), ("u32", "st_r"), ("u32", "st_x"), ("u32", "st_a"))
    slab = slab_base(em)
    st_addr = stmatrix_addrs(em, slab)
    lde, ldo = row_read_addrs(em, slab)
    t, gp, rd, ch = em.u32("epi_t"), em.u64("gptr"), em.u64("epi_rd"), em.u32("ld_ch")
    b.add("u32", t, row0, em.u32("ld_r8"))               # C + ((row0 + l/8) * N
    b.mul("u32", gp, t, C_BYTES * N, mode="wide")
    b.shl("b32", t, ch, log2(CHUNK_BYTES // C_BYTES))    #      + tn*BN + 8 ch) * 2
    b.add("u32", t, t, em.u32("tnBN"))
    b.mul("u32", rd, t, C_BYTES, mode="wide")
    b.add("u64", gp, gp, rd)
    b.add("u64", gp, gp, cptr)
    hs = [em.b32(f"pack{i}") for i in range(4)]
    vs = RegVec(tuple(em.b32(f"vec{i}") for i in range(4)))
    em.reserve(("u64", "gptr_mi"))
    for mi in range(plan.MI):
        base = row_block(em, gp, mi)
        for nc in range(plan.BN // 64):
            for jj in range(4):
                v2 = nc * 8 + 2 * jj
                regs = (frag(em, mi, 0, v2, hs[0]), frag(em, mi, 1, v2, hs[1]),
                        frag(em, mi, 0, v2 + 1, hs[2]), frag(em, mi, 1, v2 + 1, hs[3]))
                b.stmatrix(4, RegVec(regs), Mem(st_addr[jj]))
            for it in range(4):
                src = lde if it % 2 == 0 else ldo
                b.ld_shared("b32", vs, Mem(src, it * ROWS_PER_PASS * ROW_BYTES), vec=4)
                b.st_global("b32", Mem(base, (it * ROWS_PER_PASS * N + nc * 64) * C_BYTES), vs, vec=4)


def epilogue(em: Emitter, cw: Reg | None) -> None:
    """The .cu's epilogue(): fragment rows, the C pointer, then the direct or stmatrix path."""
    em.reserve(("u32", "tid"), ("u32", "lane"), ("u32", "wq"))
    row0 = fragment_rows(em, cw)
    cptr = em.u64("C")
    em.reserve(("u64", "gptr"), ("u32", "epi_t"), ("u64", "epi_rd"))
    em.b.ld_param("u64", cptr, Mem(Sym("C")), vec=1)
    if em.p.epilogue == "direct":
        direct(em, row0, cptr)
    else:
        via_stmatrix(em, row0, cptr)
