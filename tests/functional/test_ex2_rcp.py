"""ex2.approx.f32 and rcp.approx.f32 (PTX ISA: `ex2.approx{.ftz}.f32 d, a;`, `rcp.approx{.ftz}.f32
d, a;`): parse/print round trip, the verifier's type rules, and the functional result equal to
numpy float32 (2**x, 1/x); .ftz flushes subnormal inputs/results to sign-preserving zero."""

from __future__ import annotations

import numpy as np
import pytest

from isa.ir import IRError, IRSyntaxError, KernelBuilder, Reg, parse, to_text, verify
from isa.ir.instructions import Ex2, Rcp
from isa.ir.kinds import Kind
from hopsim.functional.gmem import GlobalMemory

from _func_helpers import run

F = np.float32
# enumerated, not sampled: signs, zero, integers, fractions, extremes, overflow, inf, NaN
X = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, 10.0, -10.0, 0.1, -0.1, 1e-3, 7.25, 100.0, -100.0,
              127.0, 128.0, -126.0, -149.0, 1e30, -1e30, 3e38, 1e-38, np.inf, -np.inf, np.nan, 0.75,
              1.5, -2.5, 33.3, -0.001], dtype=F)

HEAD = """.kernel t
.param .u64 X, OUT
.reg .u32 %r<4>
.reg .u64 %rd<4>
.reg .f32 %f<4>
    mov.u32 %r0, %tid.x;
    cvt.u64.u32 %rd0, %r0;
    shl.b64 %rd0, %rd0, 2;
    ld.param.u64 %rd1, [X];
    add.u64 %rd1, %rd1, %rd0;
    ld.param.u64 %rd2, [OUT];
    add.u64 %rd2, %rd2, %rd0;
    ld.global.f32 %f1, [%rd1];
"""


def _run(op: str, x: np.ndarray) -> np.ndarray:
    g = GlobalMemory()
    ax, ao = g.alloc("X", x), g.alloc("OUT", 4 * len(x))
    run(HEAD + f"    {op} %f2, %f1;\n    st.global.f32 [%rd2], %f2;\n    exit;\n", block=len(x), gmem=g,
        params={"X": ax, "OUT": ao})
    return g.view("OUT", F)


def test_ex2_equals_numpy_float32():
    with np.errstate(over="ignore"):
        want = np.exp2(X)
    np.testing.assert_array_equal(_run("ex2.approx.f32", X), want)


def test_rcp_equals_numpy_float32():
    with np.errstate(divide="ignore"):
        want = F(1) / X
    np.testing.assert_array_equal(_run("rcp.approx.f32", X), want)


def test_ftz_flushes_subnormals_to_signed_zero():
    tiny = np.array([2.0 ** -130, -(2.0 ** -130)] * 16, dtype=F)       # subnormal f32
    assert np.all(np.abs(tiny) < np.finfo(F).tiny) and np.all(tiny != 0)
    # input flushed: 1/(+-0) = +-inf; without .ftz 1/2^-130 = 2^130 overflows to +-inf as well
    np.testing.assert_array_equal(_run("rcp.approx.ftz.f32", tiny), np.copysign(F(np.inf), tiny))
    # result flushed: 2^-130 is subnormal -> +0 with .ftz, exact 2^-130 without
    arg = np.full(32, -130.0, dtype=F)
    assert np.all(_run("ex2.approx.ftz.f32", arg) == 0)
    np.testing.assert_array_equal(_run("ex2.approx.f32", arg), np.full(32, 2.0 ** -130, dtype=F))


@pytest.mark.parametrize("text", ["ex2.approx.f32 %f0, %f1;", "ex2.approx.ftz.f32 %f0, %f1;",
                                  "rcp.approx.f32 %f0, %f1;", "rcp.approx.ftz.f32 %f2, 0.5;"])
def test_parse_print_round_trip(text):
    k = parse(f".kernel k\n.reg .f32 %f<4>\n    {text}\n    exit;\n")
    assert k.body[0].text() == text
    assert parse(to_text(k)) == k
    assert verify(k) == []


def test_declarations_and_builder():
    assert Ex2.timing_class == Kind.MUFU and Rcp.timing_class == Kind.MUFU  # the special-function pipe
    b = KernelBuilder("k")
    f = b.reg("f32")
    g = b.reg("f32")
    ins = b.rcp("f32", f, g, ftz=True)
    assert ins == Rcp("f32", f, g, ftz=True) and ins.text() == f"rcp.approx.ftz.f32 {f.name}, {g.name};"
    assert ins.reads() == (g,) and ins.writes() == (f,)


def test_illegal_type_is_rejected_naming_the_line_and_what_is_allowed():
    with pytest.raises(IRSyntaxError) as e:
        parse(".kernel k\n.reg .f64 %d<2>\n    ex2.approx.f64 %d0, %d1;\n", "k.ptx")
    assert (e.value.line, e.value.col) == (3, 5)
    assert "missing type; expected one of .f32" in str(e.value)
    with pytest.raises(IRSyntaxError) as e:
        parse(".kernel k\n.reg .f32 %f<2>\n    rcp.rn.f32 %f0, %f1;\n", "k.ptx")
    assert (e.value.line, e.value.col) == (3, 5) and "missing .approx" in str(e.value)
    with pytest.raises(IRError, match=r"ex2: type='f16' is invalid; allowed: f32 \(PTX ISA, ex2"):
        Ex2("f16", Reg("%h0"), Reg("%h1"))


def test_verifier_rejects_a_wrong_register_type_naming_the_line():
    k = parse(".kernel k\n.reg .u32 %r<2>\n    ex2.approx.f32 %r0, %r1;\n    exit;\n")
    diags = verify(k)
    assert [d.line for d in diags] == [3, 3]
    assert all("ex2 needs a register fitting .f32" in d.message for d in diags)
