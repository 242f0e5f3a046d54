"""fma (f32/f64/f16/f16x2/bf16/bf16x2), float min/max NaN rules, cvt packing to f16x2/bf16x2 and
mov pack/unpack (PTX ISA). The reference rounds the exact rational a*b + c (Python Fractions) to
the format by the IEEE 754 definition, independently of hopsim's float64 TwoSum path; operands
are enumerated (signs, zeros, subnormals, halfway cases, overflow), never sampled."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from isa.ir import IRSyntaxError, parse, to_text, verify
from isa.ir.instructions import Fma, Max, Min
from isa.ir.kinds import Kind
from hopsim.functional import fround as FR
from hopsim.functional.gmem import GlobalMemory
from hopsim.functional.ops_float import fma64, minmax

from _func_helpers import run


# ---------------------------------------------------------------------------------- the reference
def ref_round(v: Fraction, fmt: FR.Format, mode: str) -> float:
    """IEEE 754 rounding of an exact rational to fmt (p significant bits, emin, emax)."""
    if v == 0:
        return 0.0
    neg, a = v < 0, abs(v)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    q = Fraction(2) ** (max(e, fmt.emin) - fmt.p + 1)
    y = a / q
    n = math.floor(y)
    rem = y - n
    if mode == "rn":
        n += 1 if rem > Fraction(1, 2) or rem == Fraction(1, 2) and n % 2 else 0
    elif mode == "rm":
        n += 1 if neg and rem else 0
    elif mode == "rp":
        n += 1 if not neg and rem else 0
    r = n * q
    mx = Fraction(fmt.max_finite)
    if r > mx:
        inf = {"rn": True, "rz": False, "rm": neg, "rp": not neg}[mode]
        r = math.inf if inf else mx
    return -float(r) if neg else float(r)


def _exact(x) -> Fraction:
    return Fraction(float(x))


F32_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, 1 + 2 ** -23, 1 + 2 ** -12, -(1 + 2 ** -12), 3.0, 2 ** -126, 2 ** -149,
              -(2 ** -140), 1e30, -1e30, 3e38, 2 ** -60, float(np.float32(1 / 3)), float(np.float32(-0.1))]
F16_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, 1 + 2 ** -10, 1 + 2 ** -5, -(1 + 2 ** -5), 3.0, 2 ** -14, 2 ** -24,
              -(2 ** -20), 65504.0, -65504.0, 256.0, float(np.float16(1 / 3)), float(np.float16(-0.1))]
BF16_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, 1 + 2 ** -7, 1 + 2 ** -4, -(1 + 2 ** -4), 3.0, 2 ** -126, 2 ** -133,
               -(2 ** -130), 2 ** 127, -(2 ** 120) * 1.5, 2 ** -60, 0.33203125, -0.10009765625]  # all exact in bf16 (<= 8 bits)


@pytest.mark.parametrize("fmt, values", [(FR.F32, F32_VALUES), (FR.F16, F16_VALUES), (FR.BF16, BF16_VALUES)],
                         ids=["f32", "f16", "bf16"])
@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_fma_rounds_once_like_the_exact_rational(fmt, values, mode):
    trip = list(itertools.product(values, repeat=3))
    a, b, c = (np.array(x, np.float64) for x in zip(*trip))
    got = FR.fma(a, b, c, fmt, mode)
    for i, (x, y, z) in enumerate(trip):
        v = Fraction(x) * Fraction(y) + Fraction(z)
        want = ref_round(v, fmt, mode)
        if v == 0:
            continue  # the sign of an exact zero is checked below
        assert got[i] == want, (fmt.name, mode, x, y, z, got[i], want)


def test_double_rounding_case_rounds_up():
    # a*b = 1 + 2^-11 + 2^-24 is an f32 halfway case; c = 2^-60 pushes it above: correct f32 is up,
    # while fl64(a*b + c) = a*b (the 2^-60 is lost) would round to even (down).
    a = b = 1 + 2 ** -12
    got = FR.fma(a, b, 2 ** -60, FR.F32, "rn")
    assert got == 1 + 2 ** -11 + 2 ** -23
    assert FR.fma(a, b, -(2 ** -60), FR.F32, "rn") == 1 + 2 ** -11
    assert float(np.float32(np.float64(a) * b + 2 ** -60)) == 1 + 2 ** -11   # what double rounding gives


def test_fma_specials_and_signed_zero():
    f = lambda a, b, c, m="rn": float(FR.fma(a, b, c, FR.F32, m))  # noqa: E731
    assert math.isnan(f(math.inf, 0.0, 1.0)) and f(math.inf, 2.0, 1.0) == math.inf
    assert math.isnan(f(math.inf, 1.0, -math.inf))
    assert math.copysign(1, f(-0.0, 1.0, -0.0)) == -1 and math.copysign(1, f(1.0, 1.0, -1.0)) == 1
    assert math.copysign(1, f(1.0, 1.0, -1.0, "rm")) == -1    # exact zero under round-down is -0
    assert f(3e38, 10.0, 0.0, "rz") == FR.F32.max_finite and f(3e38, 10.0, 0.0) == math.inf


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_fma_f64_is_the_exact_rational_rounded(mode):
    vals = [1.0, -1.0, 1 + 2 ** -52, 1 + 2 ** -27, -(1 + 2 ** -27), 2 ** -1074, 1e300, 3.0, 0.1]
    trip = list(itertools.product(vals, repeat=3))
    a, b, c = (np.array(x) for x in zip(*trip))
    got = fma64(a, b, c, mode)
    f64 = FR.Format("f64", 53, -1022, 1023)
    for i, (x, y, z) in enumerate(trip):
        v = Fraction(x) * Fraction(y) + Fraction(z)
        if v != 0:
            assert got[i] == ref_round(v, f64, mode), (mode, x, y, z)


# ---------------------------------------------------------------------------------- kernels
HEAD = """.kernel t
.param .u64 A, B, C, OUT
.reg .u32 %r<8>
.reg .u64 %rd<8>
.reg .f32 %f<8>
.reg .f16 %h<4>
.reg .bf16 %g<4>
.reg .f64 %d<4>
    mov.u32 %r0, %tid.x;
    cvt.u64.u32 %rd0, %r0;
    shl.b64 %rd0, %rd0, 2;
    ld.param.u64 %rd1, [A];
    add.u64 %rd1, %rd1, %rd0;
    ld.param.u64 %rd2, [B];
    add.u64 %rd2, %rd2, %rd0;
    ld.param.u64 %rd3, [C];
    add.u64 %rd3, %rd3, %rd0;
    ld.param.u64 %rd4, [OUT];
    add.u64 %rd4, %rd4, %rd0;
    ld.global.b32 %r1, [%rd1];
    ld.global.b32 %r2, [%rd2];
    ld.global.b32 %r3, [%rd3];
    mov.b32 %f1, %r1;
    mov.b32 %f2, %r2;
    mov.b32 %f3, %r3;
"""


def _run(body: str, a, b, c) -> np.ndarray:
    g = GlobalMemory()
    bits = [np.asarray(x, np.uint32) for x in (a, b, c)]
    n = len(bits[0])
    params = {k: g.alloc(k, v) for k, v in zip("ABC", bits)}
    params["OUT"] = g.alloc("OUT", 4 * n)
    run(HEAD + body + "    st.global.b32 [%rd4], %r4;\n    exit;\n", block=n, gmem=g, params=params)
    return g.view("OUT", np.uint32).copy()


def _f32bits(xs):
    return np.asarray(xs, np.float32).view(np.uint32)


def _pack(lo, hi, fmt):
    return (FR.to_bits(lo, fmt).astype(np.uint32) | (FR.to_bits(hi, fmt).astype(np.uint32) << 16))


def test_fma_rn_f32_in_a_kernel_equals_the_reference():
    trip = list(itertools.product(F32_VALUES[:8], F32_VALUES[4:12], [0.0, 2 ** -60, -1.0, 1e30]))[:256]
    a, b, c = (np.array(x, np.float32) for x in zip(*trip))
    out = _run("    fma.rn.f32 %f4, %f1, %f2, %f3;\n    mov.b32 %r4, %f4;\n", _f32bits(a), _f32bits(b), _f32bits(c))
    want = [ref_round(_exact(x) * _exact(y) + _exact(z), FR.F32, "rn") for x, y, z in zip(a, b, c)]
    np.testing.assert_array_equal(out.view(np.float32), np.array(want, np.float32))


def test_fma_sat_and_ftz_f32():
    a = np.array([0.5, 2.0, -1.0, np.nan, 2 ** -127, 1.0] * 2, np.float32)
    b = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 2 ** -127] * 2, np.float32)
    c = np.zeros(12, np.float32)
    out = _run("    fma.rn.sat.f32 %f4, %f1, %f2, %f3;\n    mov.b32 %r4, %f4;\n", _f32bits(a), _f32bits(b), _f32bits(c))
    assert out.view(np.float32)[:6].tolist() == [0.5, 1.0, 0.0, 0.0, 2 ** -127, 2 ** -127]
    out = _run("    fma.rn.ftz.f32 %f4, %f1, %f2, %f3;\n    mov.b32 %r4, %f4;\n", _f32bits(a), _f32bits(b), _f32bits(c))
    assert out[:6].tolist()[4:] == [0, 0] and out[3] == 0x7FFFFFFF   # subnormal input flushed; canonical NaN


@pytest.mark.parametrize("t, fmt, values", [("f16x2", FR.F16, F16_VALUES), ("bf16x2", FR.BF16, BF16_VALUES)])
def test_packed_fma_computes_each_half_independently(t, fmt, values):
    trip = list(itertools.product(values[:8], values[4:12], values[8:]))[:512]
    x, y, z = (np.array(v) for v in zip(*trip))
    n = len(trip) // 2
    # lane i: low half = triple i, high half = triple i + n
    a, b, c = (_pack(v[:n], v[n:2 * n], fmt) for v in (x, y, z))
    out = _run(f"    fma.rn.{t} %r4, %r1, %r2, %r3;\n", a, b, c)
    want = [ref_round(Fraction(p) * Fraction(q) + Fraction(r), fmt, "rn") for p, q, r in trip[:2 * n]]
    want = _pack(np.array(want[:n]), np.array(want[n:]), fmt)
    np.testing.assert_array_equal(out, want)


def test_relu_bf16x2_and_f16_scalar():
    lo = np.array([1.0, -1.0, 0.5, -0.0] * 8)
    hi = np.array([-2.0, 3.0, -0.5, 2.0] * 8)
    one = _pack(np.ones(32), np.ones(32), FR.BF16)
    out = _run("    fma.rn.relu.bf16x2 %r4, %r1, %r2, %r3;\n", _pack(lo, hi, FR.BF16), one, _pack(np.zeros(32), np.zeros(32), FR.BF16))
    np.testing.assert_array_equal(out, _pack(np.maximum(lo, 0) + 0.0, np.maximum(hi, 0) + 0.0, FR.BF16))
    # f16 scalar: mov unpacks the low half into %h registers, fma.rn.f16, mov packs it back
    a = _pack(np.full(32, 1 + 2 ** -10), np.zeros(32), FR.F16)
    body = ("    mov.b32 {%h0, %h1}, %r1;\n    mov.b32 {%h2, %h3}, %r2;\n    fma.rn.f16 %h1, %h0, %h0, %h2;\n"
            "    mov.b32 %r4, {%h1, %h3};\n")
    out = _run(body, a, _pack(np.full(32, 2 ** -20), np.zeros(32), FR.F16), a)
    want = ref_round(Fraction(1 + 2 ** -10) ** 2 + Fraction(2 ** -20), FR.F16, "rn")
    np.testing.assert_array_equal(out, _pack(np.full(32, want), np.zeros(32), FR.F16))


@pytest.mark.parametrize("rnd", ["rn", "rz"])
@pytest.mark.parametrize("t, fmt", [("f16x2", FR.F16), ("bf16x2", FR.BF16)])
def test_cvt_packs_two_f32_with_one_rounding_and_unpacks(t, fmt, rnd):
    vals = np.array(F32_VALUES + [np.inf, -np.inf, 65520.0, 1 + 2 ** -11, 1 + 2 ** -11 + 2 ** -23,
                                  1 + 2 ** -8 + 2 ** -23, -(1 + 2 ** -8)] * 2, np.float32)[:32]
    rev = vals[::-1].copy()
    out = _run(f"    cvt.{rnd}.{t}.f32 %r4, %f1, %f2;\n", _f32bits(vals), _f32bits(rev), _f32bits(vals))
    hi = [ref_round(_exact(v), fmt, rnd) if np.isfinite(v) and v != 0 else float(v) for v in vals]
    lo = [ref_round(_exact(v), fmt, rnd) if np.isfinite(v) and v != 0 else float(v) for v in rev]
    np.testing.assert_array_equal(out, _pack(np.array(lo), np.array(hi), fmt))   # a -> upper half, b -> lower
    # unpack: mov.b32 {lo, hi} then cvt.f32.f16/.bf16 gives back the rounded values exactly
    h = "%h" if t == "f16x2" else "%g"
    body = (f"    cvt.{rnd}.{t}.f32 %r5, %f1, %f2;\n    mov.b32 {{{h}0, {h}1}}, %r5;\n"
            f"    cvt.f32.{t[:-2]} %f4, {h}1;\n    mov.b32 %r4, %f4;\n")
    out = _run(body, _f32bits(vals), _f32bits(rev), _f32bits(vals))
    np.testing.assert_array_equal(out.view(np.float32), np.array(hi, np.float32))


def test_min_max_nan_rules_and_signed_zero():
    nan, inf = float("nan"), float("inf")
    cases = [(1.0, 2.0), (nan, 2.0), (2.0, nan), (nan, nan), (-0.0, 0.0), (0.0, -0.0), (-inf, inf), (-1.0, -1.0)]
    a, b = (np.array(x) for x in zip(*cases))
    mn, mx = minmax(a, b, False, False), minmax(a, b, True, False)
    assert mn[[0, 1, 2, 6, 7]].tolist() == [1.0, 2.0, 2.0, -inf, -1.0] and np.isnan(mn[3])
    assert mx[[0, 1, 2, 6, 7]].tolist() == [2.0, 2.0, 2.0, inf, -1.0] and np.isnan(mx[3])
    assert np.signbit(mn[4]) and np.signbit(mn[5]) and not np.signbit(mx[4]) and not np.signbit(mx[5])
    assert np.isnan(minmax(a, b, False, True)[1:4]).all() and minmax(a, b, True, True)[0] == 2.0
    av = np.array([v for v, _ in cases] * 4, np.float32)
    bv = np.array([v for _, v in cases] * 4, np.float32)
    for op, is_max in (("min", False), ("max", True)):
        out = _run(f"    {op}.f32 %f4, %f1, %f2;\n    mov.b32 %r4, %f4;\n", _f32bits(av), _f32bits(bv), _f32bits(av))
        want = FR.to_bits(minmax(av.astype(np.float64), bv.astype(np.float64), is_max, False), FR.F32)
        np.testing.assert_array_equal(out, want)
        out = _run(f"    {op}.NaN.f32 %f4, %f1, %f2;\n    mov.b32 %r4, %f4;\n", _f32bits(av), _f32bits(bv), _f32bits(av))
        assert [int(out[i]) == 0x7FFFFFFF for i in range(8)] == [False, True, True, True, False, False, False, False]
    lo = np.array([v for v, _ in cases] * 4)
    hi = np.array([v for _, v in cases] * 4)
    out = _run("    max.bf16x2 %r4, %r1, %r2;\n", _pack(lo, hi, FR.BF16), _pack(hi, lo, FR.BF16), _pack(lo, lo, FR.BF16))
    np.testing.assert_array_equal(out, _pack(minmax(lo, hi, True, False), minmax(hi, lo, True, False), FR.BF16))


# ---------------------------------------------------------------------------------- declarations
def test_round_trip_and_timing_class():
    for cls in (Fma, Min, Max):
        assert cls.timing_class == Kind.ALU
    for text in Fma.examples + ("min.ftz.NaN.f32 %f0, %f1, %f2;", "mov.b32 {%h0, %h1}, %r0;"):
        k = parse(f".kernel k\n.reg .f32 %f<4>\n.reg .b32 %r<4>\n.reg .f64 %d<4>\n.reg .f16 %h<2>\n    {text}\n    exit;\n")
        assert k.body[0].text() == text and parse(to_text(k)) == k
        assert [d for d in verify(k) if d.severity == "error"] == []


@pytest.mark.parametrize("src, msg", [
    ("fma.f32 %f0, %f1, %f2, %f3;", "missing rounding; expected one of .rn, .rz, .rm, .rp"),
    ("fma.rz.f16x2 %r0, %r1, %r2, %r3;", "rnd='rz' is invalid; allowed: rn"),
    ("fma.rn.sat.bf16x2 %r0, %r1, %r2, %r3;", ".sat is for .f32/.f16/.f16x2, not .bf16x2"),
    ("fma.rn.relu.f32 %f0, %f1, %f2, %f3;", ".relu is for .f16/.f16x2/.bf16/.bf16x2, not .f32"),
    ("fma.rn.u32 %r0, %r1, %r2, %r3;", "missing type; expected one of .f32, .f64"),
    ("min.ftz.u32 %r0, %r1, %r2;", ".ftz and .NaN are for float types only"),
    ("max.ftz.bf16 %r0, %r1, %r2;", ".ftz is for .f32/.f16/.f16x2, not .bf16"),
    ("mov.b32 {%r0, %r1, %r2}, %r3;", "a vector of 3 with .b32; allowed: .b32 with 2 elements"),
    ("mov.u32 {%r0, %r1}, %r3;", "a vector of 2 with .u32"),
])
def test_bad_forms_name_the_line_and_what_is_allowed(src, msg):
    with pytest.raises(IRSyntaxError) as e:
        parse(".kernel k\n.reg .f32 %f<4>\n.reg .b32 %r<4>\n    " + src + "\n", "k.ptx")
    assert e.value.line == 4 and msg in str(e.value)


def test_verifier_types_of_packed_moves():
    k = parse(".kernel k\n.reg .b32 %r<2>\n.reg .f32 %f<2>\n    mov.b32 {%f0, %f1}, %r0;\n    exit;\n")
    d = [x for x in verify(k) if x.severity == "error"]
    assert [x.line for x in d] == [4, 4] and "needs a register fitting .b16" in d[0].message


@pytest.mark.parametrize("rnd", ["rn", "rz", "rm", "rp"])
@pytest.mark.parametrize("d, fmt, reg", [("f16", FR.F16, "%h"), ("bf16", FR.BF16, "%g")])
def test_cvt_narrowing_f32_rounds_once_by_mode(d, fmt, reg, rnd):
    vals = np.array(F32_VALUES + [65520.0, 1 + 2 ** -11, 1 + 2 ** -11 + 2 ** -23, -(1 + 2 ** -8 + 2 ** -23),
                                  3e38, -3e38, 2 ** -25, -(2 ** -134), 0.1, -0.7, 1e-9, 7e4, 1.5, 255.5], np.float32)[:32]
    body = (f"    cvt.{rnd}.{d}.f32 {reg}0, %f1;\n    mov.b32 %r4, {{{reg}0, {reg}1}};\n"
            f"    and.b32 %r4, %r4, 65535;\n")
    out = _run(body, _f32bits(vals), _f32bits(vals), _f32bits(vals))
    want = [ref_round(_exact(v), fmt, rnd) if v != 0 else float(v) for v in vals]
    np.testing.assert_array_equal(out, FR.to_bits(np.array(want), fmt).astype(np.uint32))


def test_cvt_f32_from_f64_and_sat_nan():
    body = "    cvt.rz.sat.f16.f32 %h0, %f1;\n    mov.b32 %r4, {%h0, %h1};\n    and.b32 %r4, %r4, 65535;\n"
    v = np.array([np.nan, -1.0, 0.5, 2.0] * 8, np.float32)
    out = _run(body, _f32bits(v), _f32bits(v), _f32bits(v))
    assert out[:4].tolist() == [0, 0, 0x3800, 0x3C00]          # NaN -> +0, clamp to [0, 1]
    d = FR.Format("f32", 24, -126, 127)
    x = np.array([1 + 2 ** -24 + 2 ** -60, 1 + 2 ** -24, -(1 + 2 ** -23 + 2 ** -30)])
    for mode in ("rn", "rz", "rm", "rp"):
        got = FR.narrow(x, FR.F32, mode)
        assert got.tolist() == [ref_round(Fraction(float(v)), d, mode) for v in x], mode


@pytest.mark.parametrize("fmt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_zeros_and_non_finite_pass_through_alone_as_in_a_mix(fmt, mode):
    """narrow/round_exact of a vector of only zeros and non-finite values (the shortcut: a
    timing-only run converts all-zero accumulators) gives each element bit for bit what it gives
    inside a vector that also holds finite non-zero values (the general path): the value itself."""
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 0.0, -0.0, np.inf], np.float64)
    alone = FR.narrow(specials, FR.FORMATS[fmt], mode)
    mixed = FR.narrow(np.concatenate([specials, [1.0 + 2.0 ** -20, -3.5e-3]]), FR.FORMATS[fmt], mode)[:8]
    assert alone.view(np.uint64).tolist() == mixed.view(np.uint64).tolist() == specials.view(np.uint64).tolist()
    assert FR.narrow(np.float64(-0.0), FR.FORMATS[fmt], mode).view(np.uint64) == np.float64(-0.0).view(np.uint64)
