"""cp.async (PTX ISA: `cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size};`,
commit_group, wait_group N, wait_all): parse/print and verifier rules, the functional result (the
first src-size bytes from global memory, the rest zero-filled), the group law under the adversarial
completion order (after `wait_group N` every group but the N newest has landed), and a timed run.
"""

from __future__ import annotations

import numpy as np
import pytest

from isa.ir import IRError, IRSyntaxError, parse, to_text
from isa.ir.instructions import CpAsync, CpAsyncWaitGroup
from isa.ir.kinds import Kind
from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.timing.runner import simulate

from _func_helpers import run

HEAD = """.kernel t
.param .u64 X, OUT
.shared .align 1024 .b8 smem[8192]
.reg .u32 %r<12>
.reg .u64 %rd<8>
.reg .pred %p<2>
    mov.u32 %r0, %tid.x;
    cvt.u64.u32 %rd0, %r0;
    shl.b64 %rd0, %rd0, 4;
    ld.param.u64 %rd1, [X];
    add.u64 %rd1, %rd1, %rd0;
    ld.param.u64 %rd2, [OUT];
    add.u64 %rd2, %rd2, %rd0;
    shl.b32 %r1, %r0, 4;
    mov.u32 %r2, smem;
    add.u32 %r2, %r2, %r1;
"""
TAIL = """    ld.shared.v4.b32 {%r4, %r5, %r6, %r7}, [%r2];
    st.global.v4.b32 [%rd2], {%r4, %r5, %r6, %r7};
    exit;
"""


def _bytes(n: int) -> np.ndarray:
    return (np.arange(n, dtype=np.int64) * 7 + 3).astype(np.uint8)  # distinct, no zeros in a 16-B row


def test_declarations_round_trip_and_timing_classes():
    for cls in (CpAsync, CpAsyncWaitGroup):
        for ex in cls.examples:
            k = parse(f".kernel t\n.shared .b8 buf[64]\n.reg .u32 %r<4>\n.reg .u64 %rd<4>\n    {ex}\n    exit;\n")
            assert to_text(parse(to_text(k))) == to_text(k)
    assert CpAsync.timing_class == Kind.CP_ASYNC


@pytest.mark.parametrize("line,needle", [
    ("cp.async.ca.shared.global [%r0], [%rd0], 12;", "cp-size"),
    ("cp.async.cg.shared.global [%r0], [%rd0], 8;", ".cg"),
    ("cp.async.ca.shared.global [%r0], [%rd0], 16, 20;", "src-size"),
    ("cp.async.shared.global [%r0], [%rd0], 16;", ".ca or .cg"),
    ("cp.async.wait_group -1;", "N="),
])
def test_bad_instructions_are_named_errors(line, needle):
    with pytest.raises((IRError, IRSyntaxError), match=needle):
        parse(f".kernel t\n.reg .u32 %r<4>\n.reg .u64 %rd<4>\n    {line}\n    exit;\n")


@pytest.mark.parametrize("order", ["oldest", "newest"])
@pytest.mark.parametrize("form", ["ca16", "cg16_zfill_reg", "ca4x4_zfill_imm"])
def test_copy_and_zero_fill(order, form):
    n = 64
    src = _bytes(16 * n)
    if form == "ca16":
        body = "    cp.async.ca.shared.global [%r2], [%rd1], 16;\n"
        keep = np.full(n, 16)
    elif form == "cg16_zfill_reg":  # src-size = min(tid, 16): 0 (all zero) .. 16 (all copied)
        body = "    min.u32 %r3, %r0, 16;\n    cp.async.cg.shared.global [%r2], [%rd1], 16, %r3;\n"
        keep = np.minimum(np.arange(n), 16)
    else:  # four 4-byte copies, the third reads 1 byte and zero-fills 3
        body = "".join(f"    cp.async.ca.shared.global [%r2+{4 * i}], [%rd1+{4 * i}], 4{', 1' if i == 2 else ''};\n"
                       for i in range(4))
        keep = None
    g = GlobalMemory()
    ax, ao = g.alloc("X", src), g.alloc("OUT", 16 * n)
    text = HEAD + body + "    cp.async.commit_group;\n    cp.async.wait_group 0;\n" + TAIL
    run(text, block=n, gmem=g, params={"X": ax, "OUT": ao}, order=order)
    got = g.view("OUT", np.uint8).reshape(n, 16)
    want = src.reshape(n, 16).copy()
    if keep is not None:
        want[np.arange(16)[None, :] >= keep[:, None]] = 0
    else:
        want[:, 9:12] = 0
    np.testing.assert_array_equal(got, want)


def test_wait_group_n_leaves_only_the_n_newest_pending():
    """Three groups (stages) of one 16-B copy each; after wait_group 2 stage 0 is in shared memory,
    after wait_group 1 stage 1, after wait_all stage 2 -- under the adversarial order that lands
    every copy as late as the waits allow."""
    n = 32
    src = _bytes(16 * n * 3)
    g = GlobalMemory()
    ax, ao = g.alloc("X", src), g.alloc("OUT", 16 * n * 3)
    stage = []
    for s in range(3):
        stage.append(f"    cp.async.ca.shared.global [%r2+{512 * s}], [%rd1+{512 * s}], 16;\n"
                     "    cp.async.commit_group;\n")
    out = []
    for s, wait in ((0, "cp.async.wait_group 2;"), (1, "cp.async.wait_group 1;"), (2, "cp.async.wait_all;")):
        out.append(f"    {wait}\n    ld.shared.v4.b32 {{%r4, %r5, %r6, %r7}}, [%r2+{512 * s}];\n"
                   f"    st.global.v4.b32 [%rd2+{512 * s}], {{%r4, %r5, %r6, %r7}};\n")
    run(HEAD + "".join(stage) + "".join(out) + "    exit;\n", block=n, gmem=g, params={"X": ax, "OUT": ao},
        order="newest")
    np.testing.assert_array_equal(g.view("OUT", np.uint8), src)


def test_reading_before_the_wait_sees_no_data_under_the_adversarial_order():
    """Without a wait the copy has not landed when the warp reads (a race the model exposes)."""
    n = 32
    g = GlobalMemory()
    ax, ao = g.alloc("X", _bytes(16 * n)), g.alloc("OUT", 16 * n)
    run(HEAD + "    cp.async.ca.shared.global [%r2], [%rd1], 16;\n    cp.async.commit_group;\n" + TAIL,
        block=n, gmem=g, params={"X": ax, "OUT": ao}, order="newest")
    assert not g.view("OUT", np.uint8).any()


def test_timed_run_copies_and_takes_a_global_round_trip():
    n = 128
    src = _bytes(16 * n)
    g = GlobalMemory()
    ax, ao = g.alloc("X", src), g.alloc("OUT", 16 * n)
    k = parse(HEAD + "    cp.async.cg.shared.global [%r2], [%rd1], 16;\n    cp.async.commit_group;\n"
              "    cp.async.wait_group 0;\n" + TAIL)
    res = simulate(k, Launch(grid=1, block=n, params={"X": ax, "OUT": ao}), gmem=g)
    np.testing.assert_array_equal(g.view("OUT", np.uint8), src)
    # the same kernel with ld.global instead: a cp.async round trip costs at least a global load
    k2 = parse(HEAD + "    ld.global.v4.b32 {%r4, %r5, %r6, %r7}, [%rd1];\n"
               "    st.shared.v4.b32 [%r2], {%r4, %r5, %r6, %r7};\n" + TAIL)
    g2 = GlobalMemory()
    ax2, ao2 = g2.alloc("X", src), g2.alloc("OUT", 16 * n)
    res2 = simulate(k2, Launch(grid=1, block=n, params={"X": ax2, "OUT": ao2}), gmem=g2)
    assert res.cycles >= res2.cycles * 0.9 and res.cycles > 200


# ------------------------------------------------------------------ a multistage mainloop (seed 003)
def _mainloop(kt_steps: int, stages: int, swizzle: bool) -> str:
    """One warp streams a 16 x (32 kt_steps) f16 tile through `stages` shared-memory stages of
    16 x 32 halves (64-B rows): cp.async.cg 16 B per thread-copy (2 per thread per stage), commit per
    k-step, wait_group stages-2... as CUTLASS's multistage mainloop; then two ldmatrix.x4 per stage
    (lane l: row l % 16, 16-B chunk l / 16 + 2h) XOR-accumulated in 8 registers. Swizzle<2,3,3> on
    half offsets: chunk c of row r is stored at chunk c ^ ((r >> 1) & 3)."""
    x = "xor.b32" if swizzle else "or.b32"  # or with 0 = no swizzle
    lines = [".kernel ml", ".param .u64 A, OUT", f".shared .align 1024 .b8 smem[{1024 * stages}]",
             ".reg .u32 %r<32>", ".reg .u64 %rd<8>",
             "    mov.u32 %r0, %tid.x;",
             # d0 = (t/4)*64 + ((t%4) ^ ((t>>3)&3))*16 ; s0 = ((t/4)*K + (t%4)*8)*2
             "    shr.b32 %r1, %r0, 2;", "    and.b32 %r2, %r0, 3;", "    shr.b32 %r3, %r0, 3;",
             "    and.b32 %r3, %r3, 3;", f"    {x} %r4, %r2, {'%r3' if swizzle else '0'};", "    shl.b32 %r4, %r4, 4;",
             "    shl.b32 %r5, %r1, 6;", "    add.u32 %r5, %r5, %r4;", "    mov.u32 %r6, smem;",
             "    add.u32 %r5, %r5, %r6;",                                  # %r5 = smem + d0
             f"    mul.lo.u32 %r7, %r1, {32 * kt_steps};", "    shl.b32 %r8, %r2, 3;", "    add.u32 %r7, %r7, %r8;",
             "    shl.b32 %r7, %r7, 1;", "    cvt.u64.u32 %rd0, %r7;", "    ld.param.u64 %rd1, [A];",
             "    add.u64 %rd1, %rd1, %rd0;",                               # %rd1 = A + s0
             # ldmatrix rows: m_h = (l%16)*64 + (((l>>4) + 2h) ^ (((l%16)>>1)&3))*16
             "    and.b32 %r9, %r0, 15;", "    shr.b32 %r10, %r0, 4;", "    shr.b32 %r11, %r9, 1;",
             "    and.b32 %r11, %r11, 3;", "    shl.b32 %r12, %r9, 6;", "    add.u32 %r12, %r12, %r6;"]
    for h in (0, 1):
        lines += [f"    add.u32 %r13, %r10, {2 * h};", f"    {x} %r13, %r13, {'%r11' if swizzle else '0'};",
                  "    shl.b32 %r13, %r13, 4;", f"    add.u32 %r{14 + h}, %r12, %r13;"]  # %r14, %r15
    for r in range(16, 24):
        lines.append(f"    mov.u32 %r{r}, 0;")

    def load(kt):
        s = kt % stages
        return [f"    cp.async.cg.shared.global [%r5+{s * 1024 + i * 512}], [%rd1+{i * 8 * 32 * kt_steps * 2 + kt * 64}], 16;"
                for i in (0, 1)]

    for kt in range(stages - 1):
        lines += load(kt) + ["    cp.async.commit_group;"]
    for kt in range(kt_steps):
        if kt + stages - 1 < kt_steps:
            lines += load(kt + stages - 1)
        lines += ["    cp.async.commit_group;", f"    cp.async.wait_group {stages - 1};", "    bar.sync 0;"]
        s = kt % stages
        for h in (0, 1):
            lines.append(f"    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{%r24, %r25, %r26, %r27}}, [%r{14 + h}+{s * 1024}];")
            for j in range(4):
                lines.append(f"    xor.b32 %r{16 + 4 * h + j}, %r{16 + 4 * h + j}, %r{24 + j};")
        lines.append("    bar.sync 0;")
    lines += ["    cvt.u64.u32 %rd2, %r0;", "    shl.b64 %rd2, %rd2, 5;", "    ld.param.u64 %rd3, [OUT];",
              "    add.u64 %rd3, %rd3, %rd2;",
              "    st.global.v4.b32 [%rd3], {%r16, %r17, %r18, %r19};",
              "    st.global.v4.b32 [%rd3+16], {%r20, %r21, %r22, %r23};", "    exit;"]
    return "\n".join(lines) + "\n"


def _expected(a: np.ndarray, kt_steps: int) -> np.ndarray:
    """ldmatrix fragments: register j of thread t = (M_j[t/4][2(t%4)], M_j[t/4][2(t%4)+1]) packed,
    matrix j of x4 h = rows 8(j%2).., 16-B chunk j/2 + 2h of the k-step; XOR over the k-steps."""
    bits = a.view(np.uint16).astype(np.uint32)
    out = np.zeros((32, 8), dtype=np.uint32)
    for t in range(32):
        for h in (0, 1):
            for j in range(4):
                row = (j % 2) * 8 + t // 4
                for kt in range(kt_steps):
                    col = kt * 32 + (j // 2 + 2 * h) * 8 + 2 * (t % 4)
                    out[t, 4 * h + j] ^= bits[row, col] | (bits[row, col + 1] << 16)
    return out


@pytest.mark.parametrize("swizzle", [True, False])
def test_multistage_cp_async_ldmatrix_mainloop(swizzle):
    kt_steps, stages = 6, 3
    rng = np.random.default_rng(15)
    a = rng.standard_normal((16, 32 * kt_steps)).astype(np.float16)
    k = parse(_mainloop(kt_steps, stages, swizzle))
    want = _expected(a, kt_steps)
    for order in ("oldest", "newest"):  # functional, including the adversarial completion order
        g = GlobalMemory()
        aa, ao = g.alloc("A", a), g.alloc("OUT", 32 * 32)
        run(_mainloop(kt_steps, stages, swizzle), block=32, gmem=g, params={"A": aa, "OUT": ao}, order=order)
        np.testing.assert_array_equal(g.view("OUT", np.uint32).reshape(32, 8), want)
    g = GlobalMemory()
    aa, ao = g.alloc("A", a), g.alloc("OUT", 32 * 32)
    res = simulate(k, Launch(grid=1, block=32, params={"A": aa, "OUT": ao}), gmem=g)
    np.testing.assert_array_equal(g.view("OUT", np.uint32).reshape(32, 8), want)
    extra = res.smem_wavefronts - res.smem_ideal_wavefronts
    # swizzled: conflict-free (cp.async writes and ldmatrix); unswizzled: a matrix's 8 rows at 64-B
    # pitch share 2 of the 8 16-B bank slots, gcd(64/16 mod 8, 8) = 4 rows each -> 4 wavefronts, 3
    # extra per matrix, 4 matrices per ldmatrix.x4, 2 per k-step; the cp.async writes (a quarter-warp
    # writes 2 whole 64-B rows = 128 contiguous bytes) stay conflict-free
    assert extra == (0 if swizzle else kt_steps * 2 * 4 * 3)
