"""mbarrier microbenchmarks of validation/cuda/micro_mbarrier.cu as IR kernels (one CTA; clock64
around the timed loops, as the CUDA kernels).

Differences the IR imposes (hopsim models no divergent branch or exit): the CUDA kernels' one-thread
branches (`if (threadIdx.x != 0) return;`, `if (lane != 0) return;`) become a lane-0 predicate on
the arrives and stores, while all 32 lanes of the warp run the (read-only) try_wait loops with
lane 0. `mb_wait`'s spin-limit check (a clock64 read and compare after each failed try_wait) is
kept; its expiry path (atomicExch on a flag) is left out (it never runs).
"""

from __future__ import annotations

from isa.ir.parser import parse
from kernels.micro.spin import spin_wait

_HEAD = """.reg .u32 %r<16>
.reg .u64 %rd<16>
.reg .pred %p<8>
    mov.u32 %r0, %tid.x;
    and.b32 %r1, %r0, 31;
    shr.u32 %r2, %r0, 5;
    setp.eq.u32 %p0, %r1, 0;
"""


def _wait(bar: str, parity: str, tag: str) -> str:
    """mb_wait(bar, parity): s = clock64; spin on try_wait; clock check after each failure."""
    return spin_wait(bar, parity, tag, "%p4", selp=("%r9", "%p5"), clock=("%rd10", "%rd11", "%rd12", "%p6"))


def _body(mode: int, tag: str) -> str:
    if mode == 0:  # arrive, unroll 4, state folded into acc
        return "".join("@%p0 mbarrier.arrive.shared::cta.b64 %rd5, [bars+0];\n    add.u64 %rd6, %rd6, %rd5;\n"
                       for _ in range(4))
    if mode == 1:  # try_wait on a completed phase, chained through its result, unroll 4
        return "".join("mbarrier.try_wait.parity.shared::cta.b64 %p3, [bars+8], %r8;\n    selp.u32 %r9, 1, 0, %p3;\n"
                       "    xor.b32 %r8, %r9, 1;\n" for _ in range(4))
    if mode == 2:  # arrive (completes the phase) + wait
        return ("@%p0 mbarrier.arrive.shared::cta.b64 %rd5, [bars+16];\n    add.u64 %rd6, %rd6, %rd5;\n"
                + _wait("bars+16", "%r8", tag) + "    xor.b32 %r8, %r8, 1;\n")
    if mode == 3:  # arrive.expect_tx(128) + complete_tx(128) + wait
        return ("@%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bars+24], 128;\n"
                "@%p0 mbarrier.complete_tx.shared::cta.b64 [bars+24], 128;\n"
                + _wait("bars+24", "%r8", tag) + "    xor.b32 %r8, %r8, 1;\n")
    return ""  # mode 4: the empty loop


MODES = ("arrive", "try_wait_completed_phase", "arrive_then_wait_round_trip", "expect_tx_complete_tx_wait",
         "empty_loop")


def mbar_self(mode: int, iters: int = 4096, warm: int = 256):
    """mbar_self for one mode (0..4, MODES): out[0] = cycles of `iters` repetitions after `warm`.
    Launch: grid 1, block 32; param out: u64."""
    step = 4 if mode in (0, 1) else 1  # `#pragma unroll 4` of modes 0 and 1
    loops = []
    for rep, n in (("w", warm), ("t", iters)):
        loops.append(f"""    mov.u32 %r8, 0;
    mov.u64 %rd{1 if rep == 'w' else 3}, %clock64;
    mov.u32 %r7, 0;
L{rep}:
    {_body(mode, rep)}
    add.u32 %r7, %r7, {step};
    setp.lt.u32 %p1, %r7, {n};
@%p1 bra L{rep};
    mov.u64 %rd{2 if rep == 'w' else 4}, %clock64;
""")
    return parse(f""".kernel mbar_self_{mode}
.param .u64 out
.shared .align 8 .b8 bars[32]
{_HEAD}
@%p0 mbarrier.init.shared::cta.b64 [bars+0], 1048575;
@%p0 mbarrier.init.shared::cta.b64 [bars+8], 1;
@%p0 mbarrier.init.shared::cta.b64 [bars+16], 1;
@%p0 mbarrier.init.shared::cta.b64 [bars+24], 1;
    fence.mbarrier_init.release.cluster;
    mov.u64 %rd6, 0;
@%p0 mbarrier.arrive.shared::cta.b64 _, [bars+8];
{''.join(loops)}
    sub.s64 %rd7, %rd4, %rd3;
    ld.param.u64 %rd8, [out];
@%p0 st.global.u64 [%rd8], %rd7;
    exit;
""")


def mbar_pingpong(partner: int, iters: int = 2000, warm: int = 100):
    """mbar_pingpong: lane 0 of warp 0 and of warp `partner` alternate on two count-1 barriers;
    out[0] = cycles of `iters` round trips seen by warp 0. Launch: grid 1, block 32 (partner + 1)."""
    total = warm + iters
    return parse(f""".kernel mbar_pingpong
.param .u64 out
.shared .align 8 .b8 bars[16]
{_HEAD}
    setp.eq.u32 %p7, %r0, 0;
@%p7 mbarrier.init.shared::cta.b64 [bars+0], 1;
@%p7 mbarrier.init.shared::cta.b64 [bars+8], 1;
    fence.mbarrier_init.release.cluster;
    bar.sync 0;
    setp.eq.u32 %p2, %r2, 0;
@%p2 bra PING;
    setp.eq.u32 %p2, %r2, {partner};
@%p2 bra PONG;
    exit;
PING:
    mov.u64 %rd3, %clock64;
    mov.u32 %r7, 0;
LP:
    setp.ne.u32 %p3, %r7, {warm};
@%p3 bra NOSTAMP;
    mov.u64 %rd3, %clock64;
NOSTAMP:
@%p0 mbarrier.arrive.shared::cta.b64 _, [bars+0];
    and.b32 %r8, %r7, 1;
{_wait("bars+8", "%r8", "a")}
    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p1, %r7, {total};
@%p1 bra LP;
    mov.u64 %rd4, %clock64;
    sub.s64 %rd7, %rd4, %rd3;
    ld.param.u64 %rd8, [out];
@%p0 st.global.u64 [%rd8], %rd7;
    exit;
PONG:
    mov.u32 %r7, 0;
LQ:
    and.b32 %r8, %r7, 1;
{_wait("bars+0", "%r8", "b")}
@%p0 mbarrier.arrive.shared::cta.b64 _, [bars+8];
    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p1, %r7, {total};
@%p1 bra LQ;
    exit;
""")


def mbar_fanout(delay: int = 4000):
    """mbar_fanout: lane 0 of warp 0 spins `delay` cycles on clock64, reads clock64 and arrives;
    warps 1..4 wait on the phase and read clock64 when they see it: out[0] = the arrive's clock,
    out[w] = warp w's. Launch: grid 1, block 160; param out: u64."""
    return parse(f""".kernel mbar_fanout
.param .u64 out
.shared .align 8 .b8 bars[8]
{_HEAD}
    setp.eq.u32 %p7, %r0, 0;
@%p7 mbarrier.init.shared::cta.b64 [bars+0], 1;
    fence.mbarrier_init.release.cluster;
    bar.sync 0;
    ld.param.u64 %rd8, [out];
    setp.ne.u32 %p2, %r2, 0;
@%p2 bra WAITER;
    mov.u64 %rd1, %clock64;
SPIN:
    mov.u64 %rd2, %clock64;
    sub.s64 %rd3, %rd2, %rd1;
    setp.lt.s64 %p3, %rd3, {delay};
@%p3 bra SPIN;
    mov.u64 %rd4, %clock64;
@%p0 mbarrier.arrive.shared::cta.b64 _, [bars+0];
@%p0 st.global.u64 [%rd8], %rd4;
    exit;
WAITER:
{_wait("bars+0", "0", "c")}
    mov.u64 %rd4, %clock64;
    mul.wide.u32 %rd5, %r2, 8;
    add.u64 %rd6, %rd8, %rd5;
@%p0 st.global.u64 [%rd6], %rd4;
    exit;
""")
