"""A small TMA + WGMMA GEMM in IR text, for the functional runner tests (and mutations of it).

    D[M=64, N] (f32, row-major) = A[64, K] (f16, row-major, K-major) @ B[N, K]^T (f16, K-major)

One CTA, one warpgroup (128 threads); thread 0 is also the TMA producer (predicated, not branched).
2 stages x (A 64x64 + B Nx64) f16 tiles, 128B swizzle, K-major; full[s] mbarriers (count 1,
arrive.expect_tx of the stage bytes). Per k-block: wait full[s] -> wgmma.fence -> 4 x m64nNk16
(descriptor start += 32 B per k16) -> commit -> wait_group 0 -> refill stage s with k-block kb+2.

    smem: [0, SA) A0 | [SA, SA+SB) B0 | A1 | B1 | full0 full1 (8 B each)

Mutations (keyword flags) provoke each check: extra_tx (tx-count never completes), early_reuse
(wait_group 1 then refill: stage overwritten while read), swizzle_type (descriptor layout type),
no_fence, no_wait (read before the TMA lands), touch_acc (read an accumulator in flight).
"""

from __future__ import annotations

import numpy as np

SW128 = 1  # descriptor layout type: 1 = 128B swizzle


def desc_const(swizzle_type: int = SW128, sbo: int = 1024, lbo: int = 16) -> int:
    """Descriptor bits without the start address: LBO (encoded >> 4) at 16, SBO at 32, type at 62."""
    return ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (swizzle_type << 62)


def gemm_text(n: int = 64, *, extra_tx: int = 0, early_reuse: bool = False, swizzle_type: int = SW128,
              no_fence: bool = False, no_wait: bool = False, touch_acc: bool = False) -> str:
    sa = 64 * 64 * 2
    sb = n * 64 * 2
    stage = sa + sb
    bars = 2 * stage
    acc = n // 2
    dconst = desc_const(swizzle_type)
    wgmmas = []
    for k in range(4):
        sd = "%p3" if k == 0 else "1"
        wgmmas.append(f"    add.u64 %rd10, %rd4, {2 * k};\n    add.u64 %rd11, %rd5, {2 * k};\n"
                      f"    wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{%acc0..%acc{acc - 1}}}, "
                      f"%rd10, %rd11, {sd}, 1, 1, 0, 0;")
    epi = []
    for v2 in range(n // 8):
        for v1 in range(2):
            r = 4 * v2 + 2 * v1
            off = (8 * v1 * n + 8 * v2) * 4
            epi.append(f"    st.global.v2.f32 [%rd20+{off}], {{%acc{r}, %acc{r + 1}}};")
    wait_n = 1 if early_reuse else 0
    fence = "" if no_fence else "    wgmma.fence.sync.aligned;\n"
    wait = "" if no_wait else (
        "WAIT:\n"
        "    mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r11], %r12;\n"
        "@!%p1 bra WAIT;\n")
    touch = "    mov.b32 %r30, %acc0;\n" if touch_acc else ""
    return f"""
.kernel gemm_tn_m64n{n}
.param .tmap tmA, tmB
.param .u64 D
.param .u32 KT
.shared .align 1024 .b8 smem[{bars + 16}]
.reg .u32 %r<32>
.reg .u64 %rd<24>
.reg .pred %p<8>
.reg .f32 %acc<{acc}>
    mov.u32 %r0, %tid.x;
    setp.eq.u32 %p0, %r0, 0;                          // thread 0: the TMA producer
    ld.param.u32 %r1, [KT];
@%p0 mbarrier.init.shared::cta.b64 [smem+{bars}], 1;
@%p0 mbarrier.init.shared::cta.b64 [smem+{bars + 8}], 1;
    fence.mbarrier_init.release.cluster;
    bar.sync 0;
    mov.u32 %r2, 0;                                   // kb: k-block being loaded in the prologue
PROLOGUE:
    and.b32 %r3, %r2, 1;                              // stage
    mul.lo.u32 %r4, %r3, {stage};                     // A_s
    add.u32 %r5, %r4, {sa};                           // B_s
    shl.b32 %r6, %r3, 3;
    add.u32 %r6, %r6, {bars};                         // full[s]
    shl.b32 %r7, %r2, 6;                              // k0 = 64 * kb
    mov.u32 %r8, 0;
@%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r6], {stage + extra_tx};
@%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r4], [tmA, {{%r7, %r8}}], [%r6];
@%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r5], [tmB, {{%r7, %r8}}], [%r6];
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p2, %r2, 2;
@%p2 bra PROLOGUE;
    mov.u32 %r9, 0;                                   // kb: k-block being consumed
    mov.u64 %rd0, {dconst};
LOOP:
    and.b32 %r10, %r9, 1;                             // stage s
    shl.b32 %r11, %r10, 3;
    add.u32 %r11, %r11, {bars};                       // full[s]
    shr.u32 %r12, %r9, 1;
    and.b32 %r12, %r12, 1;                            // phase parity of this use of stage s
{wait}    mul.lo.u32 %r13, %r10, {stage};
    add.u32 %r14, %r13, {sa};
    shr.u32 %r13, %r13, 4;
    shr.u32 %r14, %r14, 4;
    cvt.u64.u32 %rd1, %r13;
    cvt.u64.u32 %rd2, %r14;
    add.u64 %rd4, %rd0, %rd1;                         // desc A_s
    add.u64 %rd5, %rd0, %rd2;                         // desc B_s
    setp.ne.u32 %p3, %r9, 0;                          // scale-d: 0 for the very first k16
{fence}{chr(10).join(wgmmas)}
    wgmma.commit_group.sync.aligned;
{touch}    wgmma.wait_group.sync.aligned {wait_n};
    add.u32 %r15, %r9, 2;                             // refill stage s with k-block kb + 2
    setp.lt.u32 %p4, %r15, %r1;
    and.pred %p5, %p4, %p0;
    shl.b32 %r16, %r15, 6;
    mul.lo.u32 %r17, %r10, {stage};
    add.u32 %r18, %r17, {sa};
@%p5 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r11], {stage + extra_tx};
@%p5 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r17], [tmA, {{%r16, %r8}}], [%r11];
@%p5 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r18], [tmB, {{%r16, %r8}}], [%r11];
    add.u32 %r9, %r9, 1;
    setp.lt.u32 %p6, %r9, %r1;
@%p6 bra LOOP;
    wgmma.wait_group.sync.aligned 0;
    // epilogue: thread (warp w, lane l) holds rows 16w + l/4 (+8), cols 2(l%4) + 8*v2 (+1)
    shr.u32 %r20, %r0, 5;
    and.b32 %r21, %r0, 31;
    shr.u32 %r22, %r21, 2;
    shl.b32 %r23, %r20, 4;
    add.u32 %r23, %r23, %r22;                         // row
    and.b32 %r24, %r21, 3;
    shl.b32 %r24, %r24, 1;                            // col
    mul.lo.u32 %r25, %r23, {n};
    add.u32 %r25, %r25, %r24;
    mul.wide.u32 %rd21, %r25, 4;
    ld.param.u64 %rd20, [D];
    add.u64 %rd20, %rd20, %rd21;
{chr(10).join(epi)}
    exit;
"""


def operands(k: int, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((64, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16)
    return a, b


def reference(a, b):
    return a.astype(np.float64) @ b.astype(np.float64).T


def tensor_map(address: int, rows: int, cols: int, box_rows: int = 64, box_cols: int = 64, swizzle: str = "128B"):
    """A 2-D f16 row-major tensor map (dim 0 = cols, innermost), box box_cols x box_rows."""
    from isa.tensormap import TensorMap
    return TensorMap(dtype="f16", global_dims=(cols, rows), global_strides_bytes=(cols * 2,),
                     box_dims=(box_cols, box_rows), global_address=address, swizzle=swizzle)


def setup(k: int, n: int, seed: int = 0, swizzle: str = "128B"):
    """(gmem, launch params, a, b) for gemm_text(n) with K = k."""
    from hopsim.functional.gmem import GlobalMemory
    a, b = operands(k, n, seed)
    g = GlobalMemory()
    aa, ab = g.alloc("A", a), g.alloc("B", b)
    ad = g.alloc("D", 64 * n * 4)
    ha = g.register_tensor_map("tmA", tensor_map(aa, 64, k, swizzle=swizzle))
    hb = g.register_tensor_map("tmB", tensor_map(ab, n, k, box_rows=n, swizzle=swizzle))
    return g, {"tmA": ha, "tmB": hb, "D": ad, "KT": k // 64}, a, b


def ws_gemm_text(stages: int = 4) -> str:
    """Warp-specialised 128x128x64-tile GEMM (the benchmark shape): D[128,128] f32 = A[128,K] @ B[128,K]^T.

    384 threads: warpgroup 0 = producer (warp 0, lane 0 issues; warps 1-3 exit), warpgroups 1 and 2 =
    consumers (rows 0-63 and 64-127, m64n128k16 each). Per stage: A 128x64 + B 128x64 f16 (32 KB),
    full[s] (count 1, arrive.expect_tx) and empty[s] (count 2: one arrive per consumer warpgroup).
    """
    sa = 128 * 64 * 2
    stage = 2 * sa
    bars = stages * stage
    dconst = desc_const()
    wg = []
    for k in range(4):
        sd = "%p3" if k == 0 else "1"
        wg.append(f"    add.u64 %rd10, %rd4, {2 * k};\n    add.u64 %rd11, %rd5, {2 * k};\n"
                  f"    wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{%acc0..%acc63}}, "
                  f"%rd10, %rd11, {sd}, 1, 1, 0, 0;")
    epi = []
    for v2 in range(16):
        for v1 in range(2):
            r = 4 * v2 + 2 * v1
            epi.append(f"    st.global.v2.f32 [%rd20+{(8 * v1 * 128 + 8 * v2) * 4}], {{%acc{r}, %acc{r + 1}}};")
    return f"""
.kernel gemm_ws_128x128x64
.param .tmap tmA, tmB
.param .u64 D
.param .u32 KT
.shared .align 1024 .b8 smem[{bars + 16 * stages}]
.reg .u32 %r<32>
.reg .u64 %rd<24>
.reg .pred %p<8>
.reg .f32 %acc<64>
    mov.u32 %r0, %tid.x;
    shr.u32 %r1, %r0, 7;                              // warpgroup
    ld.param.u32 %r2, [KT];
    setp.eq.u32 %p0, %r0, 0;
    mov.u32 %r3, 0;
INIT:
    shl.b32 %r4, %r3, 3;
    add.u32 %r4, %r4, {bars};
@%p0 mbarrier.init.shared::cta.b64 [%r4], 1;          // full[s]
    add.u32 %r4, %r4, {8 * stages};
@%p0 mbarrier.init.shared::cta.b64 [%r4], 2;          // empty[s]
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p1, %r3, {stages};
@%p1 bra INIT;
    fence.mbarrier_init.release.cluster;
    bar.sync 0;
    setp.ne.u32 %p1, %r1, 0;
@%p1 bra CONSUMER;
    setp.ge.u32 %p2, %r0, 32;
@%p2 bra DONE;                                        // warps 1-3 of the producer warpgroup
    mov.u32 %r5, 0;                                   // kb
    mov.u32 %r8, 0;
PLOOP:
    and.b32 %r6, %r5, {stages - 1};                   // stage (stages is a power of 2)
    shr.u32 %r7, %r5, {stages.bit_length() - 1};
    and.b32 %r7, %r7, 1;
    xor.b32 %r7, %r7, 1;                              // empty parity: starts at 1 (buffers free)
    shl.b32 %r9, %r6, 3;
    add.u32 %r10, %r9, {bars + 8 * stages};           // empty[s]
    add.u32 %r9, %r9, {bars};                         // full[s]
PWAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r10], %r7;
@!%p4 bra PWAIT;
    mul.lo.u32 %r11, %r6, {stage};
    add.u32 %r12, %r11, {sa};
    shl.b32 %r13, %r5, 6;
@%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r9], {stage};
@%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r11], [tmA, {{%r13, %r8}}], [%r9];
@%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r12], [tmB, {{%r13, %r8}}], [%r9];
    add.u32 %r5, %r5, 1;
    setp.lt.u32 %p5, %r5, %r2;
@%p5 bra PLOOP;
    bra DONE;
CONSUMER:
    sub.u32 %r14, %r1, 1;                             // consumer index c (rows 64c..64c+63)
    and.b32 %r15, %r0, 127;
    setp.eq.u32 %p6, %r15, 0;                         // one arriving thread per consumer warpgroup
    mov.u64 %rd0, {dconst};
    mov.u32 %r5, 0;
CLOOP:
    and.b32 %r6, %r5, {stages - 1};                   // stage (stages is a power of 2)
    shr.u32 %r7, %r5, {stages.bit_length() - 1};
    and.b32 %r7, %r7, 1;
    shl.b32 %r9, %r6, 3;
    add.u32 %r10, %r9, {bars + 8 * stages};
    add.u32 %r9, %r9, {bars};
CWAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r9], %r7;
@!%p4 bra CWAIT;
    mul.lo.u32 %r11, %r6, {stage};
    mad.lo.u32 %r16, %r14, 8192, %r11;                // A rows of this consumer
    add.u32 %r12, %r11, {sa};
    shr.u32 %r16, %r16, 4;
    shr.u32 %r12, %r12, 4;
    cvt.u64.u32 %rd1, %r16;
    cvt.u64.u32 %rd2, %r12;
    add.u64 %rd4, %rd0, %rd1;
    add.u64 %rd5, %rd0, %rd2;
    setp.ne.u32 %p3, %r5, 0;
    wgmma.fence.sync.aligned;
{chr(10).join(wg)}
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
@%p6 mbarrier.arrive.shared::cta.b64 _, [%r10];
    add.u32 %r5, %r5, 1;
    setp.lt.u32 %p5, %r5, %r2;
@%p5 bra CLOOP;
    shr.u32 %r20, %r15, 5;
    and.b32 %r21, %r15, 31;
    shr.u32 %r22, %r21, 2;
    shl.b32 %r23, %r20, 4;
    add.u32 %r23, %r23, %r22;
    mad.lo.u32 %r23, %r14, 64, %r23;                  // row
    and.b32 %r24, %r21, 3;
    shl.b32 %r24, %r24, 1;
    mad.lo.u32 %r25, %r23, 128, %r24;
    mul.wide.u32 %rd21, %r25, 4;
    ld.param.u64 %rd20, [D];
    add.u64 %rd20, %rd20, %rd21;
{chr(10).join(epi)}
DONE:
    exit;
"""


def ws_setup(k: int, seed: int = 0):
    from hopsim.functional.gmem import GlobalMemory
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((128, k)).astype(np.float16)
    b = rng.standard_normal((128, k)).astype(np.float16)
    g = GlobalMemory()
    aa, ab = g.alloc("A", a), g.alloc("B", b)
    ad = g.alloc("D", 128 * 128 * 4)
    ha = g.register_tensor_map("tmA", tensor_map(aa, 128, k, box_rows=128))
    hb = g.register_tensor_map("tmB", tensor_map(ab, 128, k, box_rows=128))
    return g, {"tmA": ha, "tmB": hb, "D": ad, "KT": k // 64}, a, b
