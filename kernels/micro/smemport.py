"""The shared-memory port contention microbenchmark of validation/cuda/micro_smemport.cu as an IR
kernel (record microbench__smemport; validation/micro_smemport.py).

smemport(roles, window, rows): 384 threads, one CTA. All threads copy A0, A1 (64 x 128 B each) and
B (256 x 128 B) from `src` into 1024-B aligned shared memory, thread 0 inits the 6 ring mbarriers,
bar.sync; thread 0 stores t0 = clock64 + 2000, bar.sync, every thread reads t0 and spins to it.
Then by warp (role bits as the CUDA kernel: 1 warpgroup 0, 2 warpgroup 1, 4 TMA, 8 ld.shared.v4,
16 st.shared.v4, 32 stmatrix.x4; a warp whose role is off exits):
  warps 0-7   per warpgroup: thread 0 of the warpgroup writes stop[it & 1] = (clock64 - t0 >= window),
              bar.sync 1 + wg, 128, all read it; else [fence; 16 x wgmma m64n256k16 f32.f16.f16 SS
              (k16 slices 0..3 of A and B: descriptor + 2 k); commit; wait_group 0]
  warp 8      lane 0 (a predicate, the try_wait spin on all lanes): until clock64 - t0 >= window,
              16 KB boxes (map {64, rows}, box {64, 128}, rows (n x 128) mod rows) into a 6-slot
              ring, a slot's reuse waits for its previous fill; then waits for the last fills
  warps 9-11  until clock64 - t0 >= window: 8 x 512-B warp instructions at region + lane x 16 +
              i x 512 (conflict-free, 4 wavefronts each)
Each role stores (units, cycles from t0 to its end) at times[2 slot] (slot 0/1 warpgroups, 2 TMA,
3-5 LSU warps), lane/thread 0 of it. Differences the IR imposes: the CUDA kernel's LSU data
(xor-accumulated loads, counter-valued stores) are not mirrored (timing only), and `warm_l2`
becomes an untimed prologue in which warp 8 loads every box of the map once (hopsim starts a
launch with an empty L2; the record's tensor is L2-resident).
Launch: grid 1, block 384; params src (u64: 48 KB of f16), times (u64: 16 x int64), map (.tmap).
"""

from __future__ import annotations

from isa.ir.parser import parse
from kernels.micro.spin import LOAD, spin_wait, warm_loop

ROLE_WG0, ROLE_WG1, ROLE_TMA, ROLE_LD, ROLE_ST, ROLE_STM = 1, 2, 4, 8, 16, 32
RING, BOX = 6, 16384
A_BYTES, B_BYTES, LSU_BYTES = 8192, 32768, 4096
RING_OFF = 2 * A_BYTES + B_BYTES
LSU_OFF = RING_OFF + RING * BOX
SMEM = LSU_OFF + 3 * LSU_BYTES
DESC_BITS = (1 << 16) | (64 << 32) | (1 << 62)  # sm90::make_desc(addr, 16, 1024, 1)


def _wait(bar: str, parity: str, tag: str) -> str:
    """try_wait.parity spin (sm90 mbar_try_wait; the CUDA kernel's 2^30-cycle bound is not needed)."""
    return spin_wait(bar, parity, tag, "%p8", selp=("%r60", "%p9"))


def _window() -> str:
    """%p4 = clock64 - t0 >= window (t0 in %rd2)."""
    return f"""    mov.u64 %rd31, %clock64;
    sub.s64 %rd32, %rd31, %rd2;
    setp.ge.s64 %p4, %rd32, %rd3;
"""


def _prologue(rows: int, window: int, warm_l2: bool) -> str:
    warm = ""
    if warm_l2:
        loop = warm_loop("@%p10", "%r13", BOX, "%r14", "%r11", "%r11", 128, rows, "%r12", _wait("%r13", "%r12", "pre"),
                         before_load=f"    add.u32 %r14, %r1, {RING_OFF};\n")
        warm = f"""    setp.eq.u32 %p10, %r0, 256;
    shr.u32 %r4, %r0, 5;
    setp.ne.u32 %p1, %r4, 8;
@%p1 bra NOWARM;
    mov.u32 %r11, 0;
    mov.u32 %r12, 0;
    mov.u32 %r13, bars;
    add.u32 %r13, %r13, {8 * RING};
{loop}NOWARM:
"""
    inits = "\n".join(f"@%p11 mbarrier.init.shared::cta.b64 [bars+{8 * s}], 1;" for s in range(RING + 1))
    return f"""    mov.u32 %r0, %tid.x;
    mov.u32 %r1, smem;
    mov.u32 %r2, %ntid.x;
    ld.param.u64 %rd0, [src];
    mov.u32 %r3, %r0;
FILL:
    mul.wide.u32 %rd5, %r3, 16;
    add.u64 %rd6, %rd0, %rd5;
    ld.global.v4.b32 {{%v0, %v1, %v2, %v3}}, [%rd6];
    shl.b32 %r4, %r3, 4;
    add.u32 %r4, %r4, %r1;
    st.shared.v4.b32 [%r4], {{%v0, %v1, %v2, %v3}};
    add.u32 %r3, %r3, %r2;
    setp.lt.u32 %p0, %r3, {RING_OFF // 16};
@%p0 bra FILL;
    setp.eq.u32 %p11, %r0, 0;
{inits}
    fence.mbarrier_init.release.cluster;
{warm}    fence.proxy.async.shared::cta;
    bar.sync 0;
    mov.u64 %rd1, %clock64;
    add.s64 %rd1, %rd1, 2000;
@%p11 st.shared.u64 [start], %rd1;
    bar.sync 0;
    ld.shared.u64 %rd2, [start];
SPIN0:
    mov.u64 %rd1, %clock64;
    setp.lt.s64 %p1, %rd1, %rd2;
@%p1 bra SPIN0;
    shr.u32 %r4, %r0, 5;
    and.b32 %r5, %r0, 31;
    ld.param.u64 %rd4, [times];
    mov.u64 %rd3, {window};
    setp.lt.u32 %p1, %r4, 8;
@%p1 bra WG;
    setp.eq.u32 %p1, %r4, 8;
@%p1 bra TMA;
    bra LSU;
"""


def _wgmma_role(roles: int) -> str:
    if not roles & ROLE_WG0:
        return "WG:\n    exit;\n"
    off = "" if roles & ROLE_WG1 else "    setp.ne.u32 %p2, %r6, 0;\n@%p2 bra END;\n"
    descs = []
    for k in range(1, 4):
        descs += [f"    add.u64 %rd{20 + 2 * k}, %rd20, {2 * k};", f"    add.u64 %rd{21 + 2 * k}, %rd21, {2 * k};"]
    mma = "\n".join(f"    wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {{%c0_0..%c0_127}}, "
                    f"%rd{20 + 2 * k}, %rd{21 + 2 * k}, 1, 1, 1, 0, 0;" for _ in range(4) for k in range(4))
    zeros = "\n".join(f"    mov.f32 %c0_{v}, 0f00000000;" for v in range(128))
    return f"""WG:
    shr.u32 %r6, %r4, 2;
{off}    and.b32 %r7, %r0, 127;
    setp.eq.u32 %p3, %r7, 0;
    add.u32 %r8, %r6, 1;
    mov.u32 %r9, stop;
    shl.b32 %r10, %r6, 3;
    add.u32 %r9, %r9, %r10;
    mul.lo.u32 %r10, %r6, {A_BYTES};
    add.u32 %r10, %r10, %r1;
    and.b32 %r10, %r10, 262143;
    shr.u32 %r10, %r10, 4;
    cvt.u64.u32 %rd7, %r10;
    or.b64 %rd20, %rd7, {DESC_BITS};
    add.u32 %r10, %r1, {2 * A_BYTES};
    and.b32 %r10, %r10, 262143;
    shr.u32 %r10, %r10, 4;
    cvt.u64.u32 %rd7, %r10;
    or.b64 %rd21, %rd7, {DESC_BITS};
{chr(10).join(descs)}
{zeros}
    mov.u32 %r12, 0;
    mov.u64 %rd30, 0;
WLOOP:
{_window()}    selp.u32 %r13, 1, 0, %p4;
    and.b32 %r14, %r12, 1;
    shl.b32 %r14, %r14, 2;
    add.u32 %r14, %r14, %r9;
@%p3 st.shared.u32 [%r14], %r13;
    bar.sync %r8, 128;
    ld.shared.u32 %r15, [%r14];
    setp.ne.u32 %p5, %r15, 0;
@%p5 bra WEND;
    wgmma.fence.sync.aligned;
{mma}
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
    add.u64 %rd30, %rd30, 16;
    add.u32 %r12, %r12, 1;
    bra WLOOP;
WEND:
    mov.u64 %rd33, %clock64;
    sub.s64 %rd34, %rd33, %rd2;
    mul.wide.u32 %rd35, %r6, 16;
    add.u64 %rd36, %rd4, %rd35;
@%p3 st.global.u64 [%rd36], %rd30;
@%p3 st.global.u64 [%rd36+8], %rd34;
    exit;
"""


def _tma_role(roles: int, rows: int) -> str:
    if not roles & ROLE_TMA:
        return "TMA:\n    exit;\n"
    drain = []
    for i in range(RING):
        drain.append(f"""    setp.lt.u32 %p6, %r21, {i + 1};
@%p6 bra OLD{i};
{_wait(f"bars+{8 * i}", "%r22", f"n{i}")}    bra NEXT{i};
OLD{i}:
    setp.lt.u32 %p7, %r20, {RING};
@%p7 bra NEXT{i};
{_wait(f"bars+{8 * i}", "%r23", f"o{i}")}NEXT{i}:""")
    return f"""TMA:
    setp.eq.u32 %p10, %r0, 256;
    mov.u32 %r19, bars;
    mov.u32 %r20, 0;
    mov.u32 %r21, 0;
    mov.u32 %r22, 0;
    add.u32 %r24, %r1, {RING_OFF};
TLOOP:
{_window()}@%p4 bra TDRAIN;
    shl.b32 %r25, %r21, 3;
    add.u32 %r25, %r25, %r19;
    setp.lt.u32 %p6, %r20, {RING};
@%p6 bra TISSUE;
    xor.b32 %r23, %r22, 1;
{_wait("%r25", "%r23", "t")}TISSUE:
@%p10 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r25], {BOX};
    mad.lo.u32 %r26, %r21, {BOX}, %r24;
    mul.lo.u32 %r27, %r20, 128;
    and.b32 %r27, %r27, {rows - 1};
@%p10 {LOAD} [%r26], [map, {{0, %r27}}], [%r25];
    add.u32 %r20, %r20, 1;
    add.u32 %r21, %r21, 1;
    setp.lt.u32 %p6, %r21, {RING};
@%p6 bra TLOOP;
    mov.u32 %r21, 0;
    xor.b32 %r22, %r22, 1;
    bra TLOOP;
TDRAIN:
    xor.b32 %r23, %r22, 1;
{chr(10).join(drain)}
    mov.u64 %rd33, %clock64;
    sub.s64 %rd34, %rd33, %rd2;
    cvt.u64.u32 %rd30, %r20;
@%p10 st.global.u64 [%rd4+32], %rd30;
@%p10 st.global.u64 [%rd4+40], %rd34;
    exit;
"""


def _lsu_role(roles: int) -> str:
    if roles & ROLE_LD:
        op = "    ld.shared.v4.b32 {{%v0, %v1, %v2, %v3}}, [%r31+{off}];"
    elif roles & ROLE_ST:
        op = "    st.shared.v4.b32 [%r31+{off}], {{%v0, %v1, %v2, %v3}};"
    elif roles & ROLE_STM:
        op = "    stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r31+{off}], {{%v0, %v1, %v2, %v3}};"
    else:
        return "LSU:\n    exit;\n"
    body = "\n".join(op.format(off=512 * i) for i in range(8))
    return f"""LSU:
    sub.u32 %r30, %r4, 9;
    mul.lo.u32 %r31, %r30, {LSU_BYTES};
    add.u32 %r31, %r31, %r1;
    add.u32 %r31, %r31, {LSU_OFF};
    shl.b32 %r32, %r5, 4;
    add.u32 %r31, %r31, %r32;
    mov.b32 %v0, %r5;
    mov.b32 %v1, 1;
    mov.b32 %v2, 2;
    mov.b32 %v3, 3;
    mov.u64 %rd30, 0;
LLOOP:
{_window()}@%p4 bra LEND;
{body}
    add.u64 %rd30, %rd30, 8;
    bra LLOOP;
LEND:
    mov.u64 %rd33, %clock64;
    sub.s64 %rd34, %rd33, %rd2;
    setp.eq.u32 %p3, %r5, 0;
    add.u32 %r33, %r30, 3;
    mul.wide.u32 %rd35, %r33, 16;
    add.u64 %rd36, %rd4, %rd35;
@%p3 st.global.u64 [%rd36], %rd30;
@%p3 st.global.u64 [%rd36+8], %rd34;
    exit;
"""


def smemport(roles: int, window: int, rows: int, warm_l2: bool = True):
    """The kernel for one configuration (role mask as roles_of in validation/micro_smemport.py)."""
    if roles & ROLE_WG1 and not roles & ROLE_WG0:
        raise ValueError(f"roles {roles}: warpgroup 1 without warpgroup 0 is not a configuration")
    text = f""".kernel smemport_r{roles}
.param .u64 src, times
.param .tmap map
.shared .align 1024 .b8 smem[{SMEM}]
.shared .align 8 .b8 bars[{8 * (RING + 1)}]
.shared .align 8 .b8 stop[16]
.shared .align 8 .b8 start[8]
.reg .u32 %r<64>
.reg .u64 %rd<64>
.reg .b32 %v<4>
.reg .pred %p<12>
.reg .f32 %c0_<128>
{_prologue(rows, window, warm_l2)}{_wgmma_role(roles)}{_tma_role(roles, rows)}{_lsu_role(roles)}END:
    exit;
"""
    return parse(text)
