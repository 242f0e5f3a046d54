"""atom / red on .global and .shared (PTX ISA): the final memory of the commutative operations
equals Python's fold over every lane whatever the order, the order-dependent ones (inc, dec, exch,
cas) follow the declared serialisation (issue order, lanes in lane order) and every returned old
value is a state the cell passed through; counters give a permutation; .add.f32 flushes
subnormals; bad forms are named errors naming the line; declared timing classes."""

from __future__ import annotations

import numpy as np
import pytest

from isa.ir import IRSyntaxError, parse, to_text, verify
from isa.ir.instructions import AtomGlobal, AtomShared, RedGlobal, RedShared
from isa.ir.kinds import Kind
from hopsim.functional.gmem import GlobalMemory

from _func_helpers import run

M32, M64 = 0xFFFFFFFF, (1 << 64) - 1
VALUES32 = [0, 1, 2, 7, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xDEADBEEF, 12345, 0x0F0F0F0F, 31, 100]
VALUES64 = [0, 1, (1 << 63) - 1, 1 << 63, M64, 0x0123456789ABCDEF, 5, 1 << 40]


def _sv(v, w):
    return v - (1 << w) if v >> (w - 1) else v


def ref_op(op, t, o, b, c):
    w = 64 if t[1:] == "64" else 32
    m = (1 << w) - 1
    s = t[0] == "s"
    key = (lambda v: _sv(v, w)) if s else (lambda v: v)
    return {"add": (o + b) & m, "min": min(o, b, key=key), "max": max(o, b, key=key),
            "inc": 0 if o >= b else o + 1, "dec": b if o == 0 or o > b else o - 1,
            "and": o & b, "or": o | b, "xor": o ^ b, "exch": b, "cas": c if o == b else o}[op]


def _kernel(space: str, instr: str, w: int) -> str:
    """Thread t applies `instr` to cell t % 4 (init from INIT, result copied to OUT); operands from
    B, C; atom's old value to OLD."""
    ty = "b64" if w == 64 else "b32"
    r = "%rd" if w == 64 else "%r"
    sh = 3 if w == 64 else 2
    head = f""".kernel k
.param .u64 INIT, B, C, OUT, OLD
.shared .align 16 .b8 cells[64]
.reg .u32 %r<12>
.reg .u64 %rd<16>
.reg .pred %p<2>
    mov.u32 %r0, %tid.x;
    cvt.u64.u32 %rd0, %r0;
    shl.b64 %rd0, %rd0, {sh};
    ld.param.u64 %rd1, [B];
    add.u64 %rd1, %rd1, %rd0;
    ld.global.{ty} {r}8, [%rd1];
    ld.param.u64 %rd2, [C];
    add.u64 %rd2, %rd2, %rd0;
    ld.global.{ty} {r}9, [%rd2];
    and.b32 %r1, %r0, 3;
    shl.b32 %r1, %r1, {sh};
    cvt.u64.u32 %rd3, %r1;
    ld.param.u64 %rd4, [INIT];
    add.u64 %rd4, %rd4, %rd3;
    ld.param.u64 %rd5, [OUT];
    add.u64 %rd5, %rd5, %rd3;
    mov.u32 %r2, cells;
    add.u32 %r2, %r2, %r1;
    setp.lt.u32 %p0, %r0, 4;
"""
    if space == "global":
        body = f"@%p0 ld.global.{ty} {r}10, [%rd4];\n@%p0 st.global.{ty} [%rd5], {r}10;\n    bar.sync 0;\n"
        body += "    " + instr.format(addr="[%rd5]", b=f"{r}8", c=f"{r}9", d=f"{r}11") + "\n"
    else:
        body = f"@%p0 ld.global.{ty} {r}10, [%rd4];\n@%p0 st.shared.{ty} [%r2], {r}10;\n    bar.sync 0;\n"
        body += "    " + instr.format(addr="[%r2]", b=f"{r}8", c=f"{r}9", d=f"{r}11") + "\n"
        body += f"    bar.sync 0;\n@%p0 ld.shared.{ty} {r}10, [%r2];\n@%p0 st.global.{ty} [%rd5], {r}10;\n"
    tail = f"""    ld.param.u64 %rd6, [OLD];
    add.u64 %rd6, %rd6, %rd0;
    st.global.{ty} [%rd6], {r}11;
    exit;
"""
    return head + body + tail


def _run(space, instr, w, init, b, c, n):
    dt = np.uint64 if w == 64 else np.uint32
    g = GlobalMemory()
    p = {k: g.alloc(k, np.asarray(v, dt)) for k, v in (("INIT", init), ("B", b), ("C", c))}
    p["OUT"] = g.alloc("OUT", 4 * (w // 8))
    p["OLD"] = g.alloc("OLD", n * (w // 8))
    run(_kernel(space, instr, w), block=n, gmem=g, params=p)
    return g.view("OUT", dt).tolist(), g.view("OLD", dt).tolist()


def serial(op, t, init, b, c, warp_order):
    """(final cells, old value per thread) of the warps' atomics applied in `warp_order`, lanes in
    lane order; thread i works on cell i % 4."""
    cells, old = list(init), [0] * len(b)
    for w in warp_order:
        for i in range(32 * w, 32 * w + 32):
            old[i] = cells[i % 4]
            cells[i % 4] = ref_op(op, t, cells[i % 4], b[i], c[i])
    return cells, old


CASES = [("add", "u32"), ("add", "s32"), ("add", "u64"), ("min", "u32"), ("min", "s32"), ("min", "s64"),
         ("max", "u32"), ("max", "s32"), ("max", "u64"), ("inc", "u32"), ("dec", "u32"), ("and", "b32"),
         ("or", "b64"), ("xor", "b32"), ("exch", "b32"), ("cas", "b32"), ("cas", "b64")]


@pytest.mark.parametrize("space", ["global", "shared"])
@pytest.mark.parametrize("op, t", CASES)
def test_atom_and_red_against_the_serial_fold(space, op, t):
    w = 64 if t[1:] == "64" else 32
    vals = VALUES64 if w == 64 else VALUES32
    n = 64  # two warps, each lane its own operand
    init = [vals[i % len(vals)] for i in range(3, 7)]
    b = [vals[(5 * i + 1) % len(vals)] for i in range(n)]
    if op in ("inc", "dec"):
        b = [x % 50 for x in b]
    c = [vals[(3 * i + 2) % len(vals)] for i in range(n)]
    if op == "cas":  # make some compares succeed: lane i compares with the cell's initial value
        b = [init[i % 4] if i % 3 == 0 else b[i] for i in range(n)]
    cas_c = ", {c}" if op == "cas" else ""
    out, old = _run(space, f"atom.{space}.{op}.{t} {{d}}, {{addr}}, {{b}}{cas_c};", w, init, b, c, n)
    serials = [serial(op, t, init, b, c, order) for order in ([0, 1], [1, 0])]
    # sequential consistency: one order of the two warps' operations, lanes in lane order, explains
    # every returned old value and the final cells (which warp issues first is the scheduler's)
    assert (out, old) in serials
    if op in ("add", "min", "max", "and", "or", "xor"):
        assert serials[0][0] == serials[1][0]    # commutative: the final cells do not depend on the order
    if op not in ("exch", "cas"):
        out_red, _ = _run(space, f"red.{space}.{op}.{t} {{addr}}, {{b}};\n    mov.b{w} {{d}}, 0;", w, init, b, c, n)
        assert out_red in [sv[0] for sv in serials]


def test_counter_returns_a_permutation():
    g = GlobalMemory()
    ctr = g.alloc("CTR", np.zeros(1, np.uint32))
    old = g.alloc("OLD", 4 * 256)
    src = """.kernel k
.param .u64 CTR, OLD
.reg .u32 %r<4>
.reg .u64 %rd<4>
    ld.param.u64 %rd0, [CTR];
    atom.global.add.u32 %r1, [%rd0], 1;
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd1, %r0, 4;
    ld.param.u64 %rd2, [OLD];
    add.u64 %rd2, %rd2, %rd1;
    st.global.u32 [%rd2], %r1;
    exit;
"""
    run(src, block=256, gmem=g, params={"CTR": ctr, "OLD": old})
    assert g.view("CTR", np.uint32)[0] == 256
    assert sorted(g.view("OLD", np.uint32).tolist()) == list(range(256))


def test_add_f32_rounds_and_flushes_subnormals():
    g = GlobalMemory()
    x = g.alloc("X", np.array([1.0, 0.0, 2.0 ** -130, 1e30], np.float32))
    src = """.kernel k
.param .u64 X
.reg .u64 %rd<2>
.reg .f32 %f<2>
.reg .u32 %r<2>
.reg .pred %p<2>
    ld.param.u64 %rd0, [X];
    mov.u32 %r0, %tid.x;
    setp.eq.u32 %p0, %r0, 0;
@%p0 red.global.add.f32 [%rd0], 0f33800000;
@%p0 red.global.add.f32 [%rd0+4], 0f0A000000;
@%p0 atom.global.add.f32 %f0, [%rd0+8], 0f3F800000;
@%p0 red.global.add.f32 [%rd0+12], 1.0;
    exit;
"""
    run(src, block=32, gmem=g, params={"X": x})
    got = g.view("X", np.float32)
    # 1 + 2^-24 is halfway: rounds to even (1.0); 0 + 0f0A000000 (2^-107, normal) is exact
    assert got[0] == 1.0 and got[1] == np.float32(2.0 ** -107)
    assert got[2] == 1.0            # the subnormal 2^-130 operand in memory is flushed to +0 first
    assert got[3] == np.float32(1e30)


@pytest.mark.parametrize("src, msg", [
    ("atom.global.add.b32 %r0, [%rd0], 1;", "missing type for .add; expected one of .u32, .s32, .u64, .f32, .f64"),
    ("atom.global.cas.b32 %r0, [%rd0], 1;", "expected 4 operands, got 3"),
    ("atom.global.inc.u64 %rd1, [%rd0], 1;", "missing type for .inc; expected one of .u32"),
    ("red.global.exch.b32 [%rd0], %r0;", "missing operation; expected one of .add"),
    ("atom.local.add.u32 %r0, [%rd0], 1;", "missing state space; expected one of .global, .shared"),
    ("atom.weak.global.add.u32 %r0, [%rd0], 1;", "unexpected modifier '.weak'"),
])
def test_bad_forms_name_the_line_and_what_is_allowed(src, msg):
    with pytest.raises(IRSyntaxError) as e:
        parse(".kernel k\n.reg .u32 %r<2>\n.reg .u64 %rd<2>\n    " + src + "\n", "k.ptx")
    assert e.value.line == 4 and msg in str(e.value)


def test_round_trip_timing_classes_and_register_types():
    assert (AtomGlobal.timing_class, AtomShared.timing_class) == (Kind.LD_GLOBAL, Kind.LD_SHARED)
    assert (RedGlobal.timing_class, RedShared.timing_class) == (Kind.ST_GLOBAL, Kind.ST_SHARED)
    decl = ".reg .u32 %r<4>\n.reg .u64 %rd<4>\n.reg .f32 %f<2>\n.shared .align 8 .b8 buf[64]\n"
    for cls in (AtomGlobal, AtomShared, RedGlobal, RedShared):
        for text in cls.examples:
            k = parse(f".kernel k\n{decl}    {text}\n    exit;\n")
            assert k.body[0].text() == text and parse(to_text(k)) == k and verify(k) == [], text
    k = parse(f".kernel k\n{decl}    atom.global.add.u32 %r0, [%r1], 1;\n    exit;\n")
    assert [(d.line, d.rule) for d in verify(k)] == [(6, "operand-type")]   # a global address is 64-bit
