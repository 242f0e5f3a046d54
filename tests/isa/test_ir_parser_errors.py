"""Parser errors name the file, line and column of the offending token."""

from __future__ import annotations

import pytest

from isa.errors import HopsimError
from isa.ir import IRSyntaxError, parse

HEAD = ".kernel k\n.reg .u32 %r<4>\n.reg .u64 %rd<4>\n.reg .pred %p<2>\n.reg .f32 %acc<64>\n"
LINE = HEAD.count("\n") + 1          # the line the probe instruction lands on


def err(body: str) -> IRSyntaxError:
    with pytest.raises(IRSyntaxError) as e:
        parse(HEAD + body + "\n", "kernel.ptx")
    assert isinstance(e.value, HopsimError)
    return e.value


@pytest.mark.parametrize("body, col, msg", [
    ("    wgmma.mma_asyn.sync.aligned.m64n128k16.f32.f16.f16 {%acc0..%acc63}, %rd0, %rd1, 1, 1, 1, 0, 0;", 5,
     "unknown instruction 'wgmma.mma_asyn'; did you mean 'wgmma.mma_async'?"),
    ("    mbarrier.try_wiat.parity.shared::cta.b64 %p0, [%r0], 0;", 5,
     "did you mean 'mbarrier.try_wait.parity'?"),
    ("    adds.u32 %r0, %r1, 1;", 5, "unknown instruction 'adds'; did you mean 'add'?"),
    ("    frobnicate %r0;", 5, "unknown instruction 'frobnicate'"),
])
def test_unknown_instruction(body, col, msg):
    e = err(body)
    assert (e.line, e.col) == (LINE, col)
    assert msg in str(e)
    assert str(e).startswith(f"kernel.ptx:{LINE}:{col}: ")


@pytest.mark.parametrize("body, col, msg", [
    ("    add.u32 %r0, %r1 1;", 22, "expected ',' or ';'"),
    ("    add.u32 %r0, %r1, 1", 25, "missing ';'"),
    ("    add.u32 %r0, %r1, #;", 23, "unexpected character '#'"),
    ("    mov.u32 %r0, %tid.w;", 18, "unknown special register '%tid.w'"),
    ("    st.shared.u32 [%r0+], %r1;", 24, "expected a byte offset"),
    ("    ld.shared.v2.u32 {%r0..%rd1}, [%r2];", 23, "bad register range"),
    ("@%p0", 1, "expected an instruction, got end of file"),
    (".foo .u32 x", 1, "unknown directive '.foo'"),
    ("    add.u32.x %r0, %r1, 1;", 5, "unexpected modifier '.x' in 'add.u32.x'"),
])
def test_syntax_errors(body, col, msg):
    e = err(body)
    assert (e.line, e.col) == (LINE, col), str(e)
    assert msg in str(e)


@pytest.mark.parametrize("body, col, msg", [
    ("    add.u32 %r0, [%r1], 1;", 18, "operand 2 of add: expected a register or an immediate, got a memory"),
    ("    mbarrier.init.shared::cta.b64 %r0, 1;", 35, "expected a memory operand"),
    ("    ld.global.u32 %r0, %rd0;", 24, "expected a memory operand"),
    ("    bra 5;", 9, "expected a label"),
    ("    wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 %acc0, %rd0, %rd1, 1, 1, 1, 0, 0;", 57,
     "expected the accumulator vector"),
])
def test_wrong_operand_kind_points_at_the_operand(body, col, msg):
    e = err(body)
    assert (e.line, e.col) == (LINE, col), str(e)
    assert msg in str(e)


@pytest.mark.parametrize("body, msg", [
    ("    setp.lo.s32 %p0, %r0, 1;", "cmp (for .s32)='lo' is invalid"),
    ("    wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%acc0..%acc62}, %rd0, %rd1, 1, 1, 1, 0, 0;",
     "needs 64 accumulator registers"),
    ("    mbarrier.init.shared::cta.b32 [%r0], 1;", "must be .b64"),
    ("    mbarrier.init.shared::cluster.b64 [%r0], 1;", ".shared::cta"),
    ("    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r0, %r1}, [%r2];", ".x4 needs 4"),
    ("    ld.global.v4.b64 {%rd0, %rd1, %rd2, %rd3}, [%rd0];", "at most 16 bytes"),
    ("    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r0], [%rd0, {%r1}], [%r2];",
     ".2d needs 2 coordinates"),
    ("    setmaxnreg.inc.sync.aligned.u32 20;", "24..256"),
])
def test_illegal_instruction_reported_at_the_opcode(body, msg):
    e = err(body)
    assert (e.line, e.col) == (LINE, 5), str(e)
    assert msg in str(e) and "PTX ISA" in str(e)


def test_first_line_must_be_kernel():
    with pytest.raises(IRSyntaxError) as e:
        parse("\n\n  exit;\n", "x.ptx")
    assert (e.value.line, e.value.col) == (3, 3)


def test_bad_declaration():
    with pytest.raises(IRSyntaxError) as e:
        parse(".kernel k\n.reg .u8 %c\n")
    assert (e.value.line, e.value.col) == (2, 6) and "type .u8 is invalid for .reg" in str(e.value)
