"""Illegal instructions are rejected when built, with a message citing the PTX rule."""

from __future__ import annotations

import pytest

from isa.errors import HopsimError
from isa.ir import IRError, Imm, Mem, Reg, RegVec, Sym, instructions as I

r = [Reg(f"%r{i}") for i in range(8)]
rd = [Reg(f"%rd{i}") for i in range(4)]
p = Reg("%p0")
acc = lambda n: tuple(Reg(f"%acc{i}") for i in range(n))  # noqa: E731
M = Mem(r[0])


def wg(n=128, dd="f32", da="f16", db=None, d=None, a=rd[0], **kw):
    d = acc(n // 2 if dd == "f32" else n // 4) if d is None else d
    return I.WgmmaMmaAsync(n, dd, da, db or da, d, a, rd[1], **kw)


BAD = {
    "wgmma N not a multiple of 8": (lambda: wg(n=132, d=acc(66)), "multiple of 8 in 8..256"),
    "wgmma N above 256": (lambda: wg(n=264, d=acc(132)), "multiple of 8 in 8..256"),
    "wgmma f16 accum with bf16 inputs": (lambda: wg(dd="f16", da="bf16"), "needs .f16 inputs"),
    "wgmma mixed input types": (lambda: wg(da="f16", db="bf16"), "must equal dtype_a"),
    "wgmma tf32 not modelled": (lambda: wg(da="tf32"), "f16/bf16"),
    "wgmma f32 accum count": (lambda: wg(d=acc(32)), "needs 64 accumulator registers (N/2 .f32)"),
    "wgmma f16 accum count": (lambda: wg(dd="f16", d=acc(64)), "needs 32 accumulator registers (N/4 .f16x2)"),
    "wgmma A regs + trans-a": (lambda: wg(a=tuple(r[:4]), imm_trans_a=1), "imm-trans-a is not allowed"),
    "wgmma A regs count": (lambda: wg(a=tuple(r[:2])), "needs 4 .b32 registers"),
    "wgmma scale-a": (lambda: wg(imm_scale_a=2), "imm_scale_a=2"),
    "wgmma scale-d": (lambda: wg(scale_d=2), "scale-d 2"),
    "wgmma trans-b": (lambda: wg(imm_trans_b=3), "imm_trans_b=3"),
    "tma dims 6": (lambda: I.CpAsyncBulkTensorLoad(6, M, Sym("t"), tuple(r[:6]), M), "1d..5d"),
    "tma coord count": (lambda: I.CpAsyncBulkTensorLoad(3, M, Sym("t"), (r[0], r[1]), M), ".3d needs 3 coordinates"),
    "tma store coord count": (lambda: I.CpAsyncBulkTensorStore(1, Sym("t"), (r[0], r[1]), M), ".1d needs 1"),
    "tma mbarrier misaligned": (lambda: I.CpAsyncBulkTensorLoad(1, M, Sym("t"), (r[0],), Mem(r[1], 4)), "8-byte"),
    "ld.shared vec 3": (lambda: I.LdShared("b32", tuple(r[:3]), M, 3), "vec=3"),
    "ld.shared v4.b64 > 16 bytes": (lambda: I.LdShared("b64", tuple(rd), M), "at most 16 bytes"),
    "st.global vec/regs mismatch": (lambda: I.StGlobal("b32", M, tuple(r[:2]), 4), ".v4 needs 4 registers"),
    "ld type pred": (lambda: I.LdShared("pred", r[0], M), "type='pred'"),
    "ld.param of a register address": (lambda: I.LdParam("u32", r[0], M), "[param]"),
    "ldmatrix x4 with 2 regs": (lambda: I.Ldmatrix(4, tuple(r[:2]), M), ".x4 needs 4"),
    "ldmatrix x3": (lambda: I.Ldmatrix(3, tuple(r[:3]), M), "num=3"),
    "ldmatrix m16n16": (lambda: I.Ldmatrix(1, (r[0],), M, shape="m16n16"), "m8n8"),
    "stmatrix x2 with 4 regs": (lambda: I.Stmatrix(2, tuple(r[:4]), M), ".x2 needs 2"),
    "mbarrier misaligned": (lambda: I.MbarrierInit(Mem(Sym("bar"), 4), 1), "8-byte aligned"),
    "mbarrier init count 0": (lambda: I.MbarrierInit(M, 0), "1..2^20-1"),
    "tx-count too large": (lambda: I.MbarrierArriveExpectTx(M, 1 << 20), "tx_count"),
    "parity 2": (lambda: I.MbarrierTryWaitParity(p, M, 2), "0 or 1"),
    "setmaxnreg 20": (lambda: I.Setmaxnreg("inc", 20), "24..256"),
    "setmaxnreg 100": (lambda: I.Setmaxnreg("dec", 100), "multiple of 8"),
    "setmaxnreg action": (lambda: I.Setmaxnreg("set", 128), "action='set'"),
    "setp lo on signed": (lambda: I.Setp("lo", "s32", p, r[0], r[1]), "cmp (for .s32)"),
    "setp lt on bits": (lambda: I.Setp("lt", "b32", p, r[0], r[1]), "cmp (for .b32)"),
    "setp nan on ints": (lambda: I.Setp("nan", "u32", p, r[0], r[1]), "cmp (for .u32)"),
    "shl on unsigned": (lambda: I.Shl("u32", r[0], r[1], 2), "type='u32'"),
    "shr on float": (lambda: I.Shr("f32", r[0], r[1], 2), "type='f32'"),
    "add on bits": (lambda: I.Add("b32", r[0], r[1], 2), "type='b32'"),
    "and on ints": (lambda: I.And("u32", r[0], r[1], 2), "type='u32'"),
    "mul int without mode": (lambda: I.Mul("u32", r[0], r[1], 2), "needs a mode"),
    "mul wide on 64-bit": (lambda: I.Mul("u64", rd[0], rd[1], 2, mode="wide"), "16- and 32-bit"),
    "mul float with mode": (lambda: I.Mul("f32", r[0], r[1], 2.0, mode="lo"), "integer types only"),
    "mad.f32 without rounding": (lambda: I.Mad("f32", r[0], r[1], r[2], r[3]), "requires a rounding"),
    "cvt float->int without rounding": (lambda: I.Cvt("s32", "f32", r[0], r[1]), "rnd (float->int)"),
    "cvt narrowing without rounding": (lambda: I.Cvt("f16", "f32", r[0], r[1]), "narrowing"),
    "cvt f16x2 needs two sources": (lambda: I.Cvt("f16x2", "f32", r[0], r[1], rnd="rn"), "two f32 sources"),
    "cvt int->int with rounding": (lambda: I.Cvt("u64", "u32", rd[0], r[1], rnd="rn"), "int->int"),
    "bar.sync id 16": (lambda: I.BarSync(16), "0..15"),
    "bar.sync count 100": (lambda: I.BarSync(1, 100), "multiple of 32"),
    "wait_group negative": (lambda: I.WgmmaWaitGroup(-1), "non-negative"),
    "fence space": (lambda: I.FenceProxyAsync("local"), "space='local'"),
    "mov address to float": (lambda: I.Mov("f32", r[0], Sym("smem")), "32/64-bit integer"),
    "add operand is memory": (lambda: I.Add("u32", r[0], M, 1), "must be Reg or Imm"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_illegal_instruction_is_rejected(name):
    make, msg = BAD[name]
    with pytest.raises(IRError) as e:
        make()
    assert isinstance(e.value, HopsimError)
    assert msg in str(e.value), str(e.value)
    assert "PTX ISA" in str(e.value)


def test_legal_edges_are_accepted():
    for n in (8, 256):
        assert wg(n=n).num_d_regs == n // 2
        assert wg(n=n, dd="f16").num_d_regs == n // 4
    assert wg(a=tuple(r[:4]), imm_trans_b=1).a_from_regs
    I.CpAsyncBulkTensorLoad(5, M, rd[0], tuple(r[:5]), M)
    I.Setmaxnreg("inc", 24), I.Setmaxnreg("dec", 256)
    I.LdShared("b64", tuple(rd[:2]), M)
    I.LdGlobal("u8", tuple(r[:4]), Mem(rd[0]))
    I.Setp("hs", "u64", p, rd[0], rd[1])
    I.Setp("ltu", "f32", p, r[0], 1.0)


def test_instructions_are_frozen_hashable_values():
    a = I.Add("u32", r[0], r[1], 1)
    assert a == I.Add("u32", r[0], r[1], Imm(1)) and hash(a) == hash(I.Add("u32", r[0], r[1], Imm(1)))
    with pytest.raises(AttributeError):
        a.type = "s32"
    assert len({a, I.Add("u32", r[0], r[1], 1), I.Sub("u32", r[0], r[1], 1)}) == 2


def test_reads_and_writes():
    from isa.ir import Guard
    x = I.Add("u32", r[0], r[1], r[2], guard=Guard(p))
    assert x.writes() == (r[0],) and set(x.reads()) == {r[1], r[2], p}
    st = I.StShared("b32", Mem(r[3], 4), tuple(r[:2]))
    assert st.writes() == () and set(st.reads()) == {r[0], r[1], r[3]}
    w = wg(n=8, scale_d=p)
    assert set(w.writes()) == set(acc(4)) and set(w.reads()) == {rd[0], rd[1], p} | set(acc(4))
    w0 = wg(n=8, scale_d=0)                      # D = A*B: the accumulator is not read
    assert set(w0.reads()) == {rd[0], rd[1]}
    e = I.ElectSync(p, lane=r[5])
    assert set(e.writes()) == {p, r[5]} and e.reads() == ()
    t = I.MbarrierTryWaitParity(p, Mem(r[1]), r[2])
    assert t.writes() == (p,) and set(t.reads()) == {r[1], r[2]}


def test_text_is_ptx():
    assert I.Mul("u32", rd[0], r[1], 4, mode="wide").text() == "mul.wide.u32 %rd0, %r1, 4;"
    assert I.Ldmatrix(4, tuple(r[:4]), M, trans=True).text() == \
        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r0..%r3}, [%r0];"
    assert I.CpAsyncBulkTensorStore(2, Sym("tD"), (r[1], 0), Mem(Sym("smem"), 64)).text() == \
        "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [tD, {%r1, 0}], [smem+64];"
    assert wg(n=8, a=tuple(r[:4])).text(abbreviate=False) == (
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%acc0, %acc1, %acc2, %acc3}, "
        "{%r0, %r1, %r2, %r3}, %rd1, 1, 1, 1, 0;")
    assert RegVec((Reg("%a1"), Reg("%a2"), Reg("%b"), Reg("%a3"))).text() == "{%a1, %a2, %b, %a3}"
