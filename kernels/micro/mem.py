"""Memory microbenchmarks of validation/cuda/micro_mem.cu as IR kernels.

smem_chase: one warp; 32 KiB of shared words loaded from `init` (+ the shared base), then every
active lane follows `p = ld.shared.u32 [p]` 32 times (warm-up) and `steps` times between two
clock64 reads (the loop unrolled 16 times, as `#pragma unroll 16`); out[0] = t1 - t0.
The `if (lane < active)` branch is a predicate on the loads (hopsim models no divergent
branch). Not expressible: `__syncwarp()` (the IR has no bar.warp.sync; one warp, so it orders
nothing here).

gchase: one thread follows `p = ld.global.u64 [p]` `warm` times, then `steps` times between two
clock64 reads (unrolled 8 times); out[0] = t1 - t0. Not expressible: the `.cg` / `.ca` cache
operators (the IR's ld.global has none; hopsim has no L1 for global data, so every load is an
L2 access, as `.cg`), and the %globaltimer read (the timed IR has no nanosecond clock).
"""

from __future__ import annotations

from isa.ir.parser import parse


def _unrolled(line: str, n: int) -> str:
    return "\n".join(f"    {line}" for _ in range(n))


def smem_chase(steps: int = 2048, warm: int = 32, unroll: int = 16):
    """The smem_chase kernel (launch: grid 1, block 32; params init, start, out: u64, active: u32)."""
    if steps % unroll:
        raise ValueError(f"steps {steps} must be a multiple of the unroll {unroll}")
    ld = "@%p1 ld.shared.u32 %r5, [%r5];"
    return parse(f"""
.kernel smem_chase
.param .u64 init, start, out
.param .u32 active
.shared .align 16 .b8 s[32768]
.reg .u32 %r<12>
.reg .u64 %rd<12>
.reg .pred %p<4>
    mov.u32 %r0, %tid.x;
    mov.u32 %r1, s;
    ld.param.u64 %rd0, [init];
    mov.u32 %r2, %r0;
FILL:
    mul.wide.u32 %rd1, %r2, 4;
    add.u64 %rd2, %rd0, %rd1;
    ld.global.u32 %r3, [%rd2];
    add.u32 %r3, %r3, %r1;
    shl.b32 %r4, %r2, 2;
    add.u32 %r4, %r4, %r1;
    st.shared.u32 [%r4], %r3;
    add.u32 %r2, %r2, 32;
    setp.lt.u32 %p0, %r2, 8192;
@%p0 bra FILL;
    ld.param.u64 %rd3, [start];
    mul.wide.u32 %rd4, %r0, 4;
    add.u64 %rd5, %rd3, %rd4;
    ld.global.u32 %r5, [%rd5];
    add.u32 %r5, %r5, %r1;
    ld.param.u32 %r6, [active];
    setp.lt.u32 %p1, %r0, %r6;
    mov.u32 %r7, 0;
WARM:
    {ld}
    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p2, %r7, {warm};
@%p2 bra WARM;
WARMED:
    mov.u64 %rd6, %clock64;
    mov.u32 %r7, 0;
CHASE:
{_unrolled(ld, unroll)}
    add.u32 %r7, %r7, {unroll};
    setp.lt.u32 %p2, %r7, {steps};
@%p2 bra CHASE;
    mov.u64 %rd7, %clock64;
    sub.s64 %rd8, %rd7, %rd6;
    setp.eq.u32 %p3, %r0, 0;
    ld.param.u64 %rd9, [out];
@%p3 st.global.u64 [%rd9], %rd8;
    exit;
""")


def gchase(steps: int, warm: int, unroll: int = 8):
    """The gchase kernel (launch: grid 1, block 32; params first, out: u64); thread 0 chases: the
    CUDA kernel's `if (threadIdx.x != 0) return;` is a lane-0 predicate on every load and store
    (hopsim does not model a divergent exit)."""
    if steps % unroll:
        raise ValueError(f"steps {steps} must be a multiple of the unroll {unroll}")
    ld = "@%p0 ld.global.u64 %rd1, [%rd1];"
    return parse(f"""
.kernel gchase
.param .u64 first, out
.reg .u32 %r<4>
.reg .u64 %rd<8>
.reg .pred %p<4>
    mov.u32 %r0, %tid.x;
    setp.eq.u32 %p0, %r0, 0;
    ld.param.u64 %rd0, [first];
@%p0 ld.global.u64 %rd1, [%rd0];
    mov.u32 %r1, 0;
    setp.ge.u32 %p1, %r1, {warm};
@%p1 bra WARMED;
WARM:
    {ld}
    add.u32 %r1, %r1, 1;
    setp.lt.u32 %p1, %r1, {warm};
@%p1 bra WARM;
WARMED:
    mov.u64 %rd2, %clock64;
    mov.u32 %r1, 0;
CHASE:
{_unrolled(ld, unroll)}
    add.u32 %r1, %r1, {unroll};
    setp.lt.u32 %p1, %r1, {steps};
@%p1 bra CHASE;
    mov.u64 %rd3, %clock64;
    sub.s64 %rd4, %rd3, %rd2;
    ld.param.u64 %rd5, [out];
@%p0 st.global.u64 [%rd5], %rd4;
    exit;
""")
