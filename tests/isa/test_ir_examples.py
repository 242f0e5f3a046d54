"""The realistic example: a TMA + WGMMA GEMM mainloop (also shown in docs/ir.md).

Laws: it parses, verifies clean, round-trips through the printer, equals the kernel that the
builder makes, and the copy in docs/ir.md is the same kernel.
"""

from __future__ import annotations

import pathlib
import re

from isa.ir import (
    Guard, Imm, KernelBuilder, Label, Mem, Reg, SReg, Sym, instructions as I, parse, to_text, verify,
)

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "ir.md"

GEMM_TEXT = r"""// A 64x128 tile, K loop over 2 stages: TMA producer (elected lane of warp 0) + WGMMA consumer.
.kernel gemm_mainloop
.param .tmap tmapA, tmapB
.param .u64 D_ptr
.param .u32 num_k_tiles
.shared .align 1024 .b8 smem[49152]       // 2 stages x (A 64x64 f16 = 8 KB, B 128x64 f16 = 16 KB)
.shared .align 8 .b64 full[2]              // one mbarrier per stage
.reg .u32 %r<24>
.reg .u64 %rd<12>
.reg .pred %p<8>
.reg .f32 %acc<64>

    mov.u32 %r0, %tid.x;
    ld.param.u32 %r1, [num_k_tiles];
    setp.eq.u32 %p0, %r0, 0;
@%p0 mbarrier.init.shared::cta.b64 [full], 1;
@%p0 mbarrier.init.shared::cta.b64 [full+8], 1;
@%p0 fence.mbarrier_init.release.cluster;
    bar.sync 0;
    elect.sync _|%p1, 0xffffffff;
    setp.lt.u32 %p2, %r0, 32;
    and.pred %p1, %p1, %p2;              // the producer: one elected lane of warp 0
    mov.u32 %r2, 0;                      // k tile
    mov.u32 %r3, 0;                      // stage
    mov.u32 %r4, 0;                      // phase parity
    mov.u32 %r10, smem;
    mov.u32 %r11, full;
K_LOOP:
    mul.lo.u32 %r5, %r3, 24576;
    add.u32 %r6, %r10, %r5;              // A tile of this stage
    add.u32 %r7, %r6, 8192;              // B tile of this stage
    shl.b32 %r8, %r3, 3;
    add.u32 %r9, %r11, %r8;              // the full barrier of this stage
    shl.b32 %r12, %r2, 6;                // k coordinate = 64 * k tile
@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r9], 24576;
@%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r6], [tmapA, {%r12, 0}], [%r9];
@%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r7], [tmapB, {%r12, 0}], [%r9];
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r9], %r4;
@!%p3 bra WAIT;
    cvt.u64.u32 %rd0, %r6;
    shr.u64 %rd0, %rd0, 4;
    or.b64 %rd0, %rd0, 0x4000004000010000;   // A descriptor: 128B swizzle, SBO 1024 B
    cvt.u64.u32 %rd1, %r7;
    shr.u64 %rd1, %rd1, 4;
    or.b64 %rd1, %rd1, 0x4000004000010000;
    wgmma.fence.sync.aligned;
    wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%acc0..%acc63}, %rd0, %rd1, 1, 1, 1, 0, 0;
    add.u64 %rd2, %rd0, 2;
    add.u64 %rd3, %rd1, 2;
    wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%acc0..%acc63}, %rd2, %rd3, 1, 1, 1, 0, 0;
    add.u64 %rd2, %rd0, 4;
    add.u64 %rd3, %rd1, 4;
    wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%acc0..%acc63}, %rd2, %rd3, 1, 1, 1, 0, 0;
    add.u64 %rd2, %rd0, 6;
    add.u64 %rd3, %rd1, 6;
    wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%acc0..%acc63}, %rd2, %rd3, 1, 1, 1, 0, 0;
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 1;
    xor.b32 %r3, %r3, 1;                 // next stage
    setp.eq.u32 %p4, %r3, 0;
@%p4 xor.b32 %r4, %r4, 1;               // parity flips when the stages wrap
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p5, %r2, %r1;
@%p5 bra K_LOOP;
    wgmma.wait_group.sync.aligned 0;
    // epilogue: thread t stores its first accumulator pair to D[row, col] (row-major f32, ld = 128)
    shr.u32 %r13, %r0, 5;                // warp
    and.b32 %r14, %r0, 31;               // lane
    shl.b32 %r15, %r13, 4;
    shr.u32 %r16, %r14, 2;
    add.u32 %r15, %r15, %r16;            // row = 16*warp + lane/4
    and.b32 %r17, %r14, 3;
    shl.b32 %r17, %r17, 1;               // col = 2*(lane%4)
    mad.lo.u32 %r18, %r15, 128, %r17;
    ld.param.u64 %rd4, [D_ptr];
    mul.wide.u32 %rd5, %r18, 4;
    add.u64 %rd6, %rd4, %rd5;
    st.global.v2.f32 [%rd6], {%acc0, %acc1};
    exit;
"""


def test_gemm_parses_and_verifies_clean():
    k = parse(GEMM_TEXT, "gemm.ptx")
    assert verify(k) == []
    assert k.shared_layout() == {"smem": 0, "full": 49152}
    assert k.static_smem_bytes == 49152 + 2 * 8          # 2 stages x 24 KB, then 2 mbarriers
    kinds = [type(x).__name__ for _, x in k.instructions()]
    assert kinds.count("WgmmaMmaAsync") == 4
    assert kinds.count("CpAsyncBulkTensorLoad") == 2
    assert set(k.labels()) == {"K_LOOP", "WAIT"}


def test_gemm_round_trips():
    k = parse(GEMM_TEXT, "gemm.ptx")
    assert parse(to_text(k)) == k
    assert parse(to_text(k, abbreviate=False)) == k


def test_gemm_lines_point_at_the_source():
    k = parse(GEMM_TEXT, "gemm.ptx")
    src = GEMM_TEXT.splitlines()
    for i, x in k.instructions():
        assert x.mnemonic.split(".")[0] in src[k.line_of(i) - 1]


def test_doc_example_is_the_same_kernel():
    doc = DOC.read_text()
    blocks = re.findall(r"```ptx\n(.*?)```", doc, re.S)
    kernels = [parse(b) for b in blocks if ".kernel gemm_mainloop" in b]
    assert kernels == [parse(GEMM_TEXT)]


def _gemm_by_builder():
    b = KernelBuilder("gemm_mainloop")
    tmap_a, tmap_b = b.param("tmapA", "tmap"), b.param("tmapB", "tmap")
    d_ptr, nk = b.param("D_ptr", "u64"), b.param("num_k_tiles", "u32")
    smem, full = b.shared("smem", 49152, 1024), b.shared("full", 16, 8)
    r = b.regs("u32", 24, "%r")
    rd = b.regs("u64", 12, "%rd")
    p = b.regs("pred", 8, "%p")
    acc = b.regs("f32", 64, "%acc")
    b.mov("u32", r[0], SReg("%tid.x"))
    b.ld_param("u32", r[1], Mem(nk))
    b.setp("eq", "u32", p[0], r[0], 0)
    with b.guarded(p[0]):
        b.mbarrier_init(Mem(full), 1)
        b.mbarrier_init(Mem(full, 8), 1)
        b.fence_mbarrier_init()
    b.bar_sync(0)
    b.elect_sync(p[1], 0xFFFFFFFF)
    b.setp("lt", "u32", p[2], r[0], 32)
    b.and_("pred", p[1], p[1], p[2])
    for j in (2, 3, 4):
        b.mov("u32", r[j], 0)
    b.mov("u32", r[10], smem)
    b.mov("u32", r[11], full)
    top = b.here("K_LOOP")
    b.mul("u32", r[5], r[3], 24576, mode="lo")
    b.add("u32", r[6], r[10], r[5])
    b.add("u32", r[7], r[6], 8192)
    b.shl("b32", r[8], r[3], 3)
    b.add("u32", r[9], r[11], r[8])
    b.shl("b32", r[12], r[2], 6)
    with b.guarded(p[1]):
        b.mbarrier_arrive_expect_tx(Mem(r[9]), 24576)
        b.cp_async_bulk_tensor_load(2, Mem(r[6]), tmap_a, (r[12], 0), Mem(r[9]))
        b.cp_async_bulk_tensor_load(2, Mem(r[7]), tmap_b, (r[12], 0), Mem(r[9]))
    wait = b.here("WAIT")
    b.mbarrier_try_wait_parity(p[3], Mem(r[9]), r[4])
    b.bra(wait, guard=Guard(p[3], True))
    desc = 0x4000004000010000
    for dst, src in ((rd[0], r[6]), (rd[1], r[7])):
        b.cvt("u64", "u32", dst, src)
        b.shr("u64", dst, dst, 4)
        b.or_("b64", dst, dst, desc)
    b.wgmma_fence()
    b.wgmma_mma_async(128, "f32", "f16", "f16", acc, rd[0], rd[1], 1)
    for k in (2, 4, 6):
        b.add("u64", rd[2], rd[0], k)
        b.add("u64", rd[3], rd[1], k)
        b.wgmma_mma_async(128, "f32", "f16", "f16", acc, rd[2], rd[3], 1)
    b.wgmma_commit_group()
    b.wgmma_wait_group(1)
    b.xor("b32", r[3], r[3], 1)
    b.setp("eq", "u32", p[4], r[3], 0)
    b.xor("b32", r[4], r[4], 1, guard=Guard(p[4]))
    b.add("u32", r[2], r[2], 1)
    b.setp("lt", "u32", p[5], r[2], r[1])
    b.bra(top, guard=Guard(p[5]))
    b.wgmma_wait_group(0)
    b.shr("u32", r[13], r[0], 5)
    b.and_("b32", r[14], r[0], 31)
    b.shl("b32", r[15], r[13], 4)
    b.shr("u32", r[16], r[14], 2)
    b.add("u32", r[15], r[15], r[16])
    b.and_("b32", r[17], r[14], 3)
    b.shl("b32", r[17], r[17], 1)
    b.mad("u32", r[18], r[15], 128, r[17], mode="lo")
    b.ld_param("u64", rd[4], Mem(d_ptr))
    b.mul("u32", rd[5], r[18], 4, mode="wide")
    b.add("u64", rd[6], rd[4], rd[5])
    b.st_global("f32", Mem(rd[6]), (acc[0], acc[1]))
    b.exit()
    return b.build()


def test_builder_makes_the_parsed_kernel():
    built = _gemm_by_builder()
    assert built == parse(GEMM_TEXT)
    assert parse(to_text(built)) == built


DOC_HEAD = """.kernel k
.param .tmap tmapA, tmapD
.param .u64 D_ptr
.shared .align 8 .b8 smem[64]
.shared .align 8 .b8 bar[16]
.reg .u32 %r<16>
.reg .u64 %rd<8>
.reg .pred %p<4>
.reg .f32 %f<4>
.reg .f32 %acc<64>
.reg .b32 %a<4>
.reg .f16x2 %h<2>
"""


def test_every_instruction_example_in_the_doc_parses_and_round_trips():
    examples = [e.replace("\\|", "|") for e in re.findall(r"`([^`]*;)`", DOC.read_text())]
    examples = [e for e in examples if e != ";" and not e.startswith("[@")]
    assert len(examples) > 40
    for e in examples:
        k = parse(DOC_HEAD + "    " + e + "\n")
        (x,) = k.body
        assert x.text(abbreviate=True) == e or parse(DOC_HEAD + "    " + x.text() + "\n") == k, e
