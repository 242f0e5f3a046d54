"""wgmma microbenchmarks of validation/cuda/micro_wgmma*.cu as IR kernels.

wgmma_bench (micro_wgmma.cu): every warpgroup of the CTA copies A (64 x 128 B) and B (N x 128 B)
from `src` into 1024-B aligned shared memory (16-B words, a thread-strided loop), fence.proxy.async,
bar.sync, builds the descriptors (start >> 4 | LBO 1 << 16 | SBO 64 << 32 | 128B swizzle 1 << 62),
reads its RS A fragment (4 x ld.shared.b32 in the wgmma A layout), zeroes the accumulators,
bar.sync, then `warm` untimed and `iters` timed rounds of [wgmma.fence; L x C wgmma m64nNk16
(the C accumulators round-robin, the chain unrolled); commit_group; wait_group 0], t0 = clock64 at
the first timed round (a compare and branch each round, as `if (it == 0)`), t1 = clock64 after;
thread 0 of each warpgroup stores t0, t1 at times[4 slot]. Not mirrored: the accumulator stores
to `out` after t1 (outside the timed window) and the %globaltimer reads (no ns clock in the IR).
"""

from __future__ import annotations

from isa.ir.parser import parse

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


def wgmma_bench(n: int, ty: int, rs: bool, c: int, nl: int, iters: int = 64, warm: int = 4):
    """One kernel of micro_wgmma.cu at chain length L = nl (0, 1, 2, 4, 8, 16).
    Launch: grid 1, block 128 x warpgroups; params src, times (u64)."""
    acc_t, in_t = TYPES[ty]
    r = n // 2 if acc_t == "f32" else n // 4
    reg_t = "f32" if acc_t == "f32" else "b32"
    zero = "0f00000000" if acc_t == "f32" else "0"
    nbytes = 8192 + n * 128
    a_op = "{%a0, %a1, %a2, %a3}" if rs else "%rd20"
    mma = "\n".join(
        f"    wgmma.mma_async.sync.aligned.m64n{n}k16.{acc_t}.{in_t}.{in_t} {{%c{j}_0..%c{j}_{r - 1}}}, "
        f"{a_op}, %rd21, 1, 1, 1{'' if rs else ', 0'}, 0;"
        for _ in range(nl) for j in range(c))
    decls = "\n".join(f".reg .{reg_t} %c{j}_<{r}>" for j in range(c))
    zeros = "\n".join(f"    mov.{reg_t} %c{j}_{v}, {zero};" for j in range(c) for v in range(r))
    return parse(f""".kernel wgmma_{'rs' if rs else 'ss'}_n{n}_{in_t}_{acc_t}_c{c}_l{nl}
.param .u64 src, times
.shared .align 1024 .b8 smem[{nbytes}]
.reg .u32 %r<32>
.reg .u64 %rd<32>
.reg .b32 %v<4>
.reg .b32 %a<4>
.reg .pred %p<4>
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
    or.b64 %rd20, %rd3, 4611686293305360384;
    add.u32 %r6, %r1, 8192;
    and.b32 %r6, %r6, 262143;
    shr.u32 %r6, %r6, 4;
    cvt.u64.u32 %rd4, %r6;
    or.b64 %rd21, %rd4, 4611686293305360384;
{_fragment_loads()}
{zeros}
    bar.sync 0;
    mov.u32 %r7, 0;
ROUND:
    setp.ne.u32 %p1, %r7, {warm};
@%p1 bra NOSTAMP;
    mov.u64 %rd5, %clock64;
NOSTAMP:
    wgmma.fence.sync.aligned;
{mma}
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p2, %r7, {warm + iters};
@%p2 bra ROUND;
    mov.u64 %rd6, %clock64;
    and.b32 %r8, %r0, 127;
    setp.eq.u32 %p3, %r8, 0;
    shr.u32 %r9, %r0, 7;
    ld.param.u64 %rd7, [times];
    mul.wide.u32 %rd8, %r9, 32;
    add.u64 %rd9, %rd7, %rd8;
@%p3 st.global.u64 [%rd9], %rd5;
@%p3 st.global.u64 [%rd9+8], %rd6;
    exit;
""")
