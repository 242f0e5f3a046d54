"""wgmma microbenchmarks of validation/cuda/micro_wgmma*.cu as IR kernels.

wgmma_bench (micro_wgmma.cu): every warpgroup of the CTA copies A (64 x 128 B) and B (N x 128 B)
from `src` into 1024-B aligned shared memory (16-B words, a thread-strided loop), fence.proxy.async,
bar.sync, builds the descriptors (start >> 4 | LBO 1 << 16 | SBO 64 << 32 | 128B swizzle 1 << 62),
reads its RS A fragment (4 x ld.shared.b32 in the wgmma A layout), zeroes the accumulators,
bar.sync, then `warm` untimed and `iters` timed rounds of [wgmma.fence; L x C wgmma m64nNk16
(the C accumulators round-robin, the chain unrolled); commit_group; wait_group 0], t0 = clock64 at
the first timed round (a compare and branch each round, as `if (it == 0)`), t1 = clock64 after;
thread 0 of each warpgroup stores t0, t1 at times[4 slot], slot = cta x warpgroups + warpgroup. wgq (micro_wgmma_queue.cu): the
same prologue, then rounds of [t0; fence; L wgmmas; t1; commit; wait_group G; t2]. Not mirrored: the accumulator stores
to `out` after t1 (outside the timed window) and the %globaltimer reads (no ns clock in the IR).
"""

from __future__ import annotations

from isa.ir.parser import parse
from kernels.micro.spin import LOAD, spin_wait, warm_loop

TYPES = {0: ("f32", "f16"), 1: ("f32", "bf16"), 2: ("f16", "f16")}
"""TY of micro_mma.cuh -> (accumulator type, input type)."""


def _fragment_loads() -> str:
    """a[q] = smem[micro_swz(16 w + l/4 + 8 (q & 1), 2 (l % 4) + 8 (q >> 1))], q = 0..3."""
    out = ["    shr.u32 %r20, %r0, 5;", "    and.b32 %r20, %r20, 3;", "    and.b32 %r21, %r0, 31;",
           "    shr.u32 %r22, %r21, 2;", "    mad.lo.u32 %r22, %r20, 16, %r22;",  # 16 w + l / 4
           "    and.b32 %r23, %r21, 3;", "    shl.b32 %r23, %r23, 1;"]           # 2 (l % 4)
    for q in range(4):
        out += [f"    add.u32 %r24, %r22, {8 * (q & 1)};",                       # row
                f"    add.u32 %r25, %r23, {8 * (q >> 1)};",                      # col
                "    shr.u32 %r26, %r24, 3;", "    shl.b32 %r26, %r26, 10;",     # (row >> 3) * 1024
                "    and.b32 %r27, %r24, 7;", "    shl.b32 %r28, %r27, 7;", "    add.u32 %r26, %r26, %r28;",
                "    shr.u32 %r29, %r25, 3;", "    xor.b32 %r29, %r29, %r27;", "    shl.b32 %r29, %r29, 4;",
                "    add.u32 %r26, %r26, %r29;",
                "    and.b32 %r29, %r25, 7;", "    shl.b32 %r29, %r29, 1;", "    add.u32 %r26, %r26, %r29;",
                "    add.u32 %r26, %r26, %r1;",
                f"    ld.shared.b32 %a{q}, [%r26];"]
    return "\n".join(out)


def _mma(n: int, ty: int, rs: bool, acc_of_j) -> str:
    acc_t, in_t = TYPES[ty]
    r = n // 2 if acc_t == "f32" else n // 4
    a_op = "{%a0, %a1, %a2, %a3}" if rs else "%rd20"
    return "\n".join(f"    wgmma.mma_async.sync.aligned.m64n{n}k16.{acc_t}.{in_t}.{in_t} "
                     f"{{%c{c}_0..%c{c}_{r - 1}}}, {a_op}, %rd21, 1, 1, 1{'' if rs else ', 0'}, 0;"
                     for c in acc_of_j)


def _setup(name: str, n: int, ty: int, rs: bool, c: int, params: str = "src, times", extra: str = "") -> str:
    """Declarations and the untimed prologue shared by the wgmma kernels: copy A and B into
    shared memory, fence.proxy.async, bar.sync, descriptors (%rd20 A, %rd21 B), the RS fragment
    (%a0..%a3, when `rs`), zeroed accumulators %c<j>_<v>, bar.sync."""
    acc_t, _in_t = TYPES[ty]
    r = n // 2 if acc_t == "f32" else n // 4
    reg_t = "f32" if acc_t == "f32" else "b32"
    zero = "0f00000000" if acc_t == "f32" else "0"
    nbytes = 8192 + n * 128
    decls = "\n".join(f".reg .{reg_t} %c{j}_<{r}>" for j in range(c))
    zeros = "\n".join(f"    mov.{reg_t} %c{j}_{v}, {zero};" for j in range(c) for v in range(r))
    return f""".kernel {name}
.param .u64 {params}
.shared .align 1024 .b8 smem[{nbytes}]
{extra}.reg .u32 %r<32>
.reg .u64 %rd<32>
.reg .b32 %v<4>
.reg .b32 %a<4>
.reg .pred %p<12>
{decls}
    mov.u32 %r0, %tid.x;
    mov.u32 %r1, smem;
    mov.u32 %r2, %ntid.x;
    ld.param.u64 %rd0, [src];
    mov.u32 %r3, %r0;
FILL:
    mul.wide.u32 %rd1, %r3, 16;
    add.u64 %rd2, %rd0, %rd1;
    ld.global.v4.b32 {{%v0, %v1, %v2, %v3}}, [%rd2];
    shl.b32 %r4, %r3, 4;
    add.u32 %r4, %r4, %r1;
    st.shared.v4.b32 [%r4], {{%v0, %v1, %v2, %v3}};
    add.u32 %r3, %r3, %r2;
    setp.lt.u32 %p0, %r3, {nbytes // 16};
@%p0 bra FILL;
    fence.proxy.async.shared::cta;
    bar.sync 0;
    and.b32 %r5, %r1, 262143;
    shr.u32 %r5, %r5, 4;
    cvt.u64.u32 %rd3, %r5;
    or.b64 %rd20, %rd3, {DESC_BITS};
    add.u32 %r6, %r1, 8192;
    and.b32 %r6, %r6, 262143;
    shr.u32 %r6, %r6, 4;
    cvt.u64.u32 %rd4, %r6;
    or.b64 %rd21, %rd4, {DESC_BITS};
{_fragment_loads() if rs else ""}
{zeros}
    bar.sync 0;
"""


DESC_BITS = (1 << 16) | (64 << 32) | (1 << 62)
"""micro_desc / sm90::make_desc(addr, 16, 1024, 1): LBO 16 B (encoded 1), SBO 1024 B, 128B swizzle."""


def wgmma_bench(n: int, ty: int, rs: bool, c: int, nl: int, iters: int = 64, warm: int = 4):
    """One kernel of micro_wgmma.cu at chain length L = nl (0, 1, 2, 4, 8, 16).
    Launch: grid 1, block 128 x warpgroups; params src, times (u64)."""
    acc_t, in_t = TYPES[ty]
    name = f"wgmma_{'rs' if rs else 'ss'}_n{n}_{in_t}_{acc_t}_c{c}_l{nl}"
    return parse(_setup(name, n, ty, rs, c) + f"""    mov.u32 %r7, 0;
ROUND:
    setp.ne.u32 %p1, %r7, {warm};
@%p1 bra NOSTAMP;
    mov.u64 %rd5, %clock64;
NOSTAMP:
    wgmma.fence.sync.aligned;
{_mma(n, ty, rs, [j for _ in range(nl) for j in range(c)])}
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p2, %r7, {warm + iters};
@%p2 bra ROUND;
    mov.u64 %rd6, %clock64;
    and.b32 %r8, %r0, 127;
    setp.eq.u32 %p3, %r8, 0;
    shr.u32 %r9, %r0, 7;
    mov.u32 %r10, %ctaid.x;
    shr.u32 %r11, %r2, 7;
    mad.lo.u32 %r9, %r10, %r11, %r9;
    ld.param.u64 %rd7, [times];
    mul.wide.u32 %rd8, %r9, 32;
    add.u64 %rd9, %rd7, %rd8;
@%p3 st.global.u64 [%rd9], %rd5;
@%p3 st.global.u64 [%rd9+8], %rd6;
    exit;
""")


def wgq(n: int, nl: int, c: int, g: int, iters: int = 64):
    """wgq_n{N}_l{L}_c{C}_g{G} of micro_wgmma_queue.cu: one warpgroup, f16 SS, f32 accumulators;
    4 untimed + `iters` rounds of [t0; fence; L wgmmas (accumulator j % C); t1; commit;
    wait_group G; t2]; then wait_group 0; thread 0 stores sum(t1 - t0), sum(t2 - t0). The
    accumulator fence_operand / sum / store after the loop are left out (outside the window).
    Launch: grid 1, block 128; params src, times (u64)."""
    return parse(_setup(f"wgq_n{n}_l{nl}_c{c}_g{g}", n, 0, False, c) + f"""    mov.u64 %rd8, 0;
    mov.u64 %rd9, 0;
    mov.u32 %r7, 0;
ROUND:
    mov.u64 %rd5, %clock64;
    wgmma.fence.sync.aligned;
{_mma(n, 0, False, [j % c for j in range(nl)])}
    mov.u64 %rd6, %clock64;
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned {g};
    mov.u64 %rd7, %clock64;
    setp.lt.u32 %p1, %r7, 4;
@%p1 bra NEXT;
    sub.s64 %rd10, %rd6, %rd5;
    add.s64 %rd8, %rd8, %rd10;
    sub.s64 %rd11, %rd7, %rd5;
    add.s64 %rd9, %rd9, %rd11;
NEXT:
    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p2, %r7, {4 + iters};
@%p2 bra ROUND;
    wgmma.wait_group.sync.aligned 0;
    setp.eq.u32 %p3, %r0, 0;
    ld.param.u64 %rd12, [times];
@%p3 st.global.u64 [%rd12], %rd8;
@%p3 st.global.u64 [%rd12+8], %rd9;
    exit;
""")


LAYOUT = {128: 1, 64: 2, 32: 3}
"""Swizzle span (bytes) -> the descriptor's layout field (sm90::make_desc)."""


def _desc(dst: str, addr_reg: str, offset: int, lbo: int, sbo: int, sp: int) -> str:
    """dst = make_desc(addr_reg + offset, lbo, sbo, LAYOUT[sp]) (computed once, before the loop)."""
    bits = ((lbo & 0x3FFFF) >> 4) << 16 | ((sbo & 0x3FFFF) >> 4) << 32 | LAYOUT[sp] << 62
    return (f"    add.u32 %r10, {addr_reg}, {offset};\n    and.b32 %r10, %r10, 262143;\n"
            f"    shr.u32 %r10, %r10, 4;\n    cvt.u64.u32 %rd14, %r10;\n    or.b64 {dst}, %rd14, {bits};\n")


def wgmma_sw(n: int, sp: int, nn: bool, iters: int = 400, warm: int = 40):
    """wgmma_sw_n{N}_sp{SP}_{tn|nn} of micro_wgmma_swizzle.cu: per warpgroup, `warm` then `iters`
    k-tiles of [fence; 4 x m64nNk16 (K advancing 32 B, the GEMM's descriptors); commit;
    wait_group 1], wait_group 0 and a per-warpgroup named barrier before t0, wait_group 0 before
    t1; thread 0 of each warpgroup stores t0, t1. B (N x 64 f16) at the base, each warpgroup's A
    (64 x 64) after it. The descriptors (constant per k step) are computed before the loops (as
    ptxas hoists them); the accumulator sum after t1 is left out. Shared memory is not filled
    (timing only, as the CUDA kernel). Launch: grid 1, block 128 x warpgroups; param times (u64)."""
    descs = []
    for kk in range(4):
        kb = kk * 32
        descs.append(_desc(f"%rd{20 + kk}", "%r3", (kb // sp) * 64 * sp + kb % sp, 16, 8 * sp, sp))
        if not nn:
            descs.append(_desc(f"%rd{24 + kk}", "%r1", (kb // sp) * n * sp + kb % sp, 16, 8 * sp, sp))
        else:
            descs.append(_desc(f"%rd{24 + kk}", "%r1", kk * 16 * sp, 64 * sp, 8 * sp, sp))
    mma = "\n".join(f"    wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{%c0_0..%c0_{n // 2 - 1}}}, "
                    f"%rd{20 + kk}, %rd{24 + kk}, 1, 1, 1, 0, {1 if nn else 0};" for kk in range(4))
    ktile = (f"    wgmma.fence.sync.aligned;\n{mma}\n    wgmma.commit_group.sync.aligned;\n"
             "    wgmma.wait_group.sync.aligned 1;\n")
    zeros = "\n".join(f"    mov.f32 %c0_{v}, 0f00000000;" for v in range(n // 2))
    return parse(f""".kernel wgmma_sw_n{n}_sp{sp}_{'nn' if nn else 'tn'}
.param .u64 times
.shared .align 1024 .b8 smem[{n * 128 + 2 * 8192}]
.reg .u32 %r<16>
.reg .u64 %rd<32>
.reg .pred %p<4>
.reg .f32 %c0_<{n // 2}>
    mov.u32 %r0, %tid.x;
    mov.u32 %r1, smem;
    shr.u32 %r2, %r0, 7;
    mad.lo.u32 %r3, %r2, 8192, %r1;
    add.u32 %r3, %r3, {n * 128};
{''.join(descs)}{zeros}
    mov.u32 %r7, 0;
WARM:
{ktile}    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p1, %r7, {warm};
@%p1 bra WARM;
    wgmma.wait_group.sync.aligned 0;
    add.u32 %r8, %r2, 1;
    bar.sync %r8, 128;
    mov.u64 %rd5, %clock64;
    mov.u32 %r7, 0;
TIMED:
{ktile}    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p1, %r7, {iters};
@%p1 bra TIMED;
    wgmma.wait_group.sync.aligned 0;
    mov.u64 %rd6, %clock64;
    and.b32 %r9, %r0, 127;
    setp.eq.u32 %p3, %r9, 0;
    ld.param.u64 %rd7, [times];
    mul.wide.u32 %rd8, %r2, 16;
    add.u64 %rd9, %rd7, %rd8;
@%p3 st.global.u64 [%rd9], %rd5;
@%p3 st.global.u64 [%rd9+8], %rd6;
    exit;
""")


def _tma_wait(bar: str, parity: str, tag: str) -> str:
    """sm90 mbar_try_wait spin with the clock64 bound of the CUDA kernel (2^30)."""
    return spin_wait(bar, parity, tag, "%p8", clock=("%rd15", "%rd16", "%rd17", "%p9"), limit=1 << 30)


def wgt(n: int, rs: bool, tma: bool, rows: int, iters: int = 256, warm_l2: bool = True):
    """wgt_{ss|rs}_n{N} of micro_wgmma_tma.cu: 160 threads. Warps 0-3: (after a 20000-cycle clock64
    spin) 4 untimed + `iters` timed rounds of [fence; 16 x m64nNk16 (one chain); commit;
    wait_group 0]; thread 0 stores t1 - t0 and sets the shared `done` flag. Warp 4 lane 0 (when
    `tma`): streams 16 KB boxes (128-B x 128 rows) into a ring of 4 slots until `done`, then drains
    and stores boxes and cycles. The one-lane branch of warp 4 is a lane-0 predicate on its arrives
    and copies (hopsim has no divergent branch); `warm_l2`: the record's tensor is L2-resident, so
    warp 4 first loads every box once (untimed, before the bar.sync), as in kernels/micro/tma.py.
    Launch: grid 1, block 160; params src, times (u64), map (.tmap)."""
    nbytes = 8192 + n * 128
    ring = (nbytes + 1023) // 1024 * 1024
    a_op = "{%a0, %a1, %a2, %a3}" if rs else "%rd20"
    mma = "\n".join(f"    wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{%c0_0..%c0_{n // 2 - 1}}}, "
                    f"{a_op}, %rd21, 1, 1, 1{'' if rs else ', 0'}, 0;" for _ in range(16))
    pre = ""
    if warm_l2:
        pre = "    setp.eq.u32 %p10, %r0, 128;\n    mov.u32 %r11, 0;\n    mov.u32 %r12, 0;\n" + warm_loop(
            "@%p10", "bars", 16384, "%r13", "%r11", "%r11", 128, rows, "%r12", _tma_wait("bars", "%r12", "p"))
    text = _setup(f"wgt_{'rs' if rs else 'ss'}_n{n}", n, 0, rs, 1, "src, times",
                  f".param .tmap map\n.shared .align 1024 .b8 ring[{4 * 16384}]\n.shared .align 8 .b8 bars[32]\n"
                  ".shared .align 4 .b8 done[4]\n")
    # the prologue of _setup ends with bar.sync 0 after the fragment loads; the CUDA kernel inits
    # the barriers and the flag before its __syncthreads, so they go before the fill here
    head, body = text.split("    mov.u32 %r0, %tid.x;\n", 1)
    init = """    mov.u32 %r0, %tid.x;
    setp.eq.u32 %p11, %r0, 0;
@%p11 mbarrier.init.shared::cta.b64 [bars], 1;
@%p11 mbarrier.init.shared::cta.b64 [bars+8], 1;
@%p11 mbarrier.init.shared::cta.b64 [bars+16], 1;
@%p11 mbarrier.init.shared::cta.b64 [bars+24], 1;
    fence.mbarrier_init.release.cluster;
    mov.u32 %r14, 0;
@%p11 st.shared.u32 [done], %r14;
    mov.u32 %r13, ring;
"""
    body = body.replace("    fence.proxy.async.shared::cta;\n    bar.sync 0;\n",
                        pre + "    fence.proxy.async.shared::cta;\n    bar.sync 0;\n    setp.ge.u32 %p7, %r0, 128;\n"
                        "@%p7 bra STREAM;\n", 1)
    body = body.rsplit("    bar.sync 0;\n", 1)[0]  # the CUDA kernel has no second __syncthreads
    stream = "    exit;\n" if not tma else f"""    setp.eq.u32 %p10, %r0, 128;
    mov.u64 %rd25, %clock64;
    mov.u32 %r15, 0;
SLOOP:
    ld.shared.u32 %r16, [done];
    setp.ne.u32 %p4, %r16, 0;
@%p4 bra SDRAIN;
    and.b32 %r17, %r15, 3;
    shl.b32 %r18, %r17, 3;
    mov.u32 %r19, bars;
    add.u32 %r18, %r18, %r19;
    setp.lt.u32 %p5, %r15, 4;
@%p5 bra SISSUE;
    shr.u32 %r20, %r15, 2;
    sub.u32 %r20, %r20, 1;
    and.b32 %r20, %r20, 1;
{_tma_wait("%r18", "%r20", "s")}SISSUE:
@%p10 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r18], 16384;
    mad.lo.u32 %r21, %r17, 16384, %r13;
    mul.lo.u32 %r22, %r15, 128;
    and.b32 %r22, %r22, {rows - 1};
@%p10 {LOAD} [%r21], [map, {{0, %r22}}], [%r18];
    add.u32 %r15, %r15, 1;
    bra SLOOP;
SDRAIN:
    mov.u32 %r23, 0;
    setp.gt.u32 %p6, %r15, 4;
@%p6 sub.u32 %r23, %r15, 4;
DLOOP:
    setp.ge.u32 %p6, %r23, %r15;
@%p6 bra SDONE;
    and.b32 %r17, %r23, 3;
    shl.b32 %r18, %r17, 3;
    add.u32 %r18, %r18, %r19;
    shr.u32 %r20, %r23, 2;
    and.b32 %r20, %r20, 1;
DW:
    mbarrier.try_wait.parity.shared::cta.b64 %p8, [%r18], %r20;
@!%p8 bra DW;
    add.u32 %r23, %r23, 1;
    bra DLOOP;
SDONE:
    mov.u64 %rd26, %clock64;
    sub.s64 %rd27, %rd26, %rd25;
    cvt.u64.u32 %rd28, %r15;
    ld.param.u64 %rd29, [times];
@%p10 st.global.u64 [%rd29+8], %rd28;
@%p10 st.global.u64 [%rd29+16], %rd27;
    exit;
"""
    return parse(head + init + body + f"""    mov.u64 %rd10, %clock64;
SPIN:
    mov.u64 %rd11, %clock64;
    sub.s64 %rd12, %rd11, %rd10;
    setp.lt.s64 %p1, %rd12, 20000;
@%p1 bra SPIN;
    mov.u32 %r7, 0;
ROUND:
    setp.ne.u32 %p1, %r7, 4;
@%p1 bra NOSTAMP;
    mov.u64 %rd5, %clock64;
NOSTAMP:
    wgmma.fence.sync.aligned;
{mma}
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p2, %r7, {4 + iters};
@%p2 bra ROUND;
    mov.u64 %rd6, %clock64;
    setp.eq.u32 %p3, %r0, 0;
    sub.s64 %rd7, %rd6, %rd5;
    ld.param.u64 %rd8, [times];
@%p3 st.global.u64 [%rd8], %rd7;
    mov.u32 %r14, 1;
@%p3 st.shared.u32 [done], %r14;
    exit;
STREAM:
{stream}""")
