"""shfl.sync, vote.sync and redux.sync (PTX ISA): round trip, the functional result against a
per-lane Python transcription of the PTX pseudocode over enumerated lane patterns (every b of
0..31 per mode, clamp/segment values of every width, per-lane b and c), and the membermask rules:
static verifier diagnostics naming the line, named run-time errors otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from isa.ir import IRError, IRSyntaxError, parse, to_text, verify
from isa.ir.instructions import ReduxSync, ShflSync, VoteSync
from isa.ir.kinds import Kind
from hopsim.functional.errors import MemberMaskError
from hopsim.functional.gmem import GlobalMemory

from _func_helpers import run

NT = 1024  # 32 warps: warp w uses b = w in the uniform-b runs

HEAD = """.kernel t
.param .u64 A, B, C, OUT, OUTP
.reg .u32 %r<8>
.reg .u64 %rd<8>
.reg .pred %p<4>
    mov.u32 %r0, %tid.x;
    cvt.u64.u32 %rd0, %r0;
    shl.b64 %rd0, %rd0, 2;
    ld.param.u64 %rd1, [A];
    add.u64 %rd1, %rd1, %rd0;
    ld.global.u32 %r1, [%rd1];
    ld.param.u64 %rd2, [B];
    add.u64 %rd2, %rd2, %rd0;
    ld.global.u32 %r2, [%rd2];
    ld.param.u64 %rd3, [C];
    add.u64 %rd3, %rd3, %rd0;
    ld.global.u32 %r3, [%rd3];
    ld.param.u64 %rd4, [OUT];
    add.u64 %rd4, %rd4, %rd0;
    ld.param.u64 %rd5, [OUTP];
    add.u64 %rd5, %rd5, %rd0;
"""
TAIL = """    st.global.u32 [%rd4], %r4;
    selp.u32 %r5, 1, 0, %p1;
    st.global.u32 [%rd5], %r5;
    exit;
"""


def _run(body: str, a, b, c):
    g = GlobalMemory()
    n = len(a)
    params = {"A": g.alloc("A", np.asarray(a, np.uint32)), "B": g.alloc("B", np.asarray(b, np.uint32)),
              "C": g.alloc("C", np.asarray(c, np.uint32)), "OUT": g.alloc("OUT", 4 * n),
              "OUTP": g.alloc("OUTP", 4 * n)}
    run(HEAD + body + TAIL, block=n, gmem=g, params=params)
    return g.view("OUT", np.uint32).copy(), g.view("OUTP", np.uint32).copy()


def ref_shfl(mode: str, a, b, c):
    """The PTX ISA pseudocode of shfl.sync, lane by lane (one warp)."""
    d, p = [0] * 32, [0] * 32
    for lane in range(32):
        bval, cval, seg = b[lane] & 31, c[lane] & 31, (c[lane] >> 8) & 31
        max_lane = (lane & seg) | (cval & ~seg)
        min_lane = lane & seg
        if mode == "up":
            j = lane - bval
            pval = j >= max_lane
        elif mode == "down":
            j = lane + bval
            pval = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            pval = j <= max_lane
        else:
            j = min_lane | (bval & ~seg & 31)
            pval = j <= max_lane
        if not pval:
            j = lane
        d[lane], p[lane] = a[j], int(pval)
    return d, p


A = [(0x9E3779B1 * (i + 1)) & 0xFFFFFFFF for i in range(NT)]  # distinct per thread (Weyl sequence)
# clamp/segment words of every shuffle width w (CUDA's ((32 - w) << 8) | 31 and the up form (32 - w) << 8),
# plus raw clamps 0, 5, 31
C_VALUES = sorted({((32 - w) << 8) | x for w in (32, 16, 8, 4, 2, 1) for x in (0, 31)} | {0, 5, 31})


@pytest.mark.parametrize("mode", ["up", "down", "bfly", "idx"])
def test_shfl_equals_the_ptx_pseudocode_for_every_b_and_width(mode):
    body = f"    shfl.sync.{mode}.b32 %r4|%p1, %r1, %r2, %r3, 0xffffffff;\n"
    b = [t // 32 for t in range(NT)]  # warp w: b = w, all 32 values of b
    for cval in C_VALUES:
        c = [cval] * NT
        d, p = _run(body, A, b, c)
        for w in range(32):
            s = slice(32 * w, 32 * w + 32)
            want_d, want_p = ref_shfl(mode, A[s], b[s], c[s])
            assert d[s].tolist() == want_d, (mode, w, hex(cval))
            assert p[s].tolist() == want_p, (mode, w, hex(cval))


@pytest.mark.parametrize("mode", ["up", "down", "bfly", "idx"])
def test_shfl_with_per_lane_b_and_c(mode):
    body = f"    shfl.sync.{mode}.b32 %r4|%p1, %r1, %r2, %r3, 0xffffffff;\n"
    b = [(7 * t + t // 32) % 37 for t in range(NT)]  # also b >= 32 (only b[4:0] counts)
    c = [C_VALUES[(t + 3 * (t // 32)) % len(C_VALUES)] for t in range(NT)]
    d, p = _run(body, A, b, c)
    for w in range(32):
        s = slice(32 * w, 32 * w + 32)
        assert (d[s].tolist(), p[s].tolist()) == ref_shfl(mode, A[s], b[s], c[s]), (mode, w)


def test_shfl_textbook_cases():
    a = list(range(100, 132))
    d, p = _run("    shfl.sync.bfly.b32 %r4|%p1, %r1, 16, 31, 0xffffffff;\n", a, [0] * 32, [0] * 32)
    assert d.tolist() == a[16:] + a[:16] and p.tolist() == [1] * 32
    d, p = _run("    shfl.sync.up.b32 %r4|%p1, %r1, 1, 0, 0xffffffff;\n", a, [0] * 32, [0] * 32)
    assert d.tolist() == [100] + a[:31] and p.tolist() == [0] + [1] * 31   # lane 0 keeps its own value
    d, p = _run("    shfl.sync.down.b32 %r4|%p1, %r1, 4, 0x181f, 0xffffffff;\n", a, [0] * 32, [0] * 32)
    want = [a[i + 4] if i % 8 < 4 else a[i] for i in range(32)]               # width-8 segments
    assert d.tolist() == want and p.tolist() == [int(i % 8 < 4) for i in range(32)]
    d, _ = _run("    shfl.sync.idx.b32 %r4, %r1, 3, 0x181f, 0xffffffff;\n    setp.eq.u32 %p1, 0, 0;\n",
                a, [0] * 32, [0] * 32)
    assert d.tolist() == [a[8 * (i // 8) + 3] for i in range(32)]             # broadcast within segments


def test_guarded_shfl_over_a_half_warp_mask():
    a = list(range(32))
    body = ("    setp.lt.u32 %p2, %r0, 16;\n    mov.u32 %r4, 7;\n    setp.eq.u32 %p1, 0, 1;\n"
            "    @%p2 shfl.sync.bfly.b32 %r4|%p1, %r1, 1, 31, 0x0000ffff;\n")
    d, p = _run(body, a, [0] * 32, [0] * 32)
    assert d.tolist() == [i ^ 1 for i in range(16)] + [7] * 16   # lanes 16..31 do not execute
    assert p.tolist() == [1] * 16 + [0] * 16


@pytest.mark.parametrize("body, match", [
    ("    shfl.sync.bfly.b32 %r4, %r1, 1, 31, 0x0000ffff;\n", r"lanes 16, 17, .* execute it but are not in membermask"),
    ("    setp.lt.u32 %p2, %r0, 16;\n    @%p2 shfl.sync.bfly.b32 %r4, %r1, 1, 31, 0xffffffff;\n",
     r"lanes 16, 17, .* of membermask 0xffffffff do not execute it"),
    ("    setp.lt.u32 %p2, %r0, 16;\n    @%p2 shfl.sync.bfly.b32 %r4, %r1, 16, 31, 0x0000ffff;\n",
     r"read lanes 16, .* which do not execute it"),
    ("    setp.lt.u32 %p2, %r0, 8;\n    @%p2 vote.sync.any.pred %p1, %p2, 0xffffffff;\n", r"vote.sync: lanes 8"),
    ("    redux.sync.add.u32 %r4, %r1, %r0;\n", r"redux.sync membermask differs between lanes"),
])
def test_membermask_violations_are_named_errors(body, match):
    with pytest.raises(Exception) as e:
        _run(body, list(range(32)), [0] * 32, [0] * 32)
    assert e.type is MemberMaskError or "membermask" in str(e.value)
    assert e.match(match)


def _diags(line: str):
    k = parse(".kernel k\n.reg .u32 %r<4>\n.reg .pred %p<4>\n    " + line + "\n    exit;\n", "k.ptx")
    return [(d.line, d.severity, d.rule, d.message) for d in verify(k)]


def test_verifier_membermask_rules_name_the_line():
    (diag,) = _diags("shfl.sync.bfly.b32 %r0, %r1, 1, 31, 0xffff0000;")
    assert diag[:3] == (4, "error", "membermask")
    assert "excludes lane 0" in diag[3] and "allowed: 0xffffffff" in diag[3]
    (diag,) = _diags("vote.sync.any.pred %p0, %p1, 0x0000ff0f;")
    assert diag[:2] == (4, "error") and "excludes lane 4" in diag[3]
    (diag,) = _diags("redux.sync.add.u32 %r0, %r1, 0x0000ffff;")
    assert diag[:2] == (4, "warning") and "partial warp of 16 threads" in diag[3]
    assert _diags("shfl.sync.bfly.b32 %r0, %r1, 1, 31, 0xffffffff;") == []
    assert _diags("@%p0 shfl.sync.bfly.b32 %r0, %r1, 1, 31, 0xffff0000;") == []   # guarded: run time decides
    assert _diags("shfl.sync.bfly.b32 %r0, %r1, 1, 31, %r2;") == []               # register: run time decides


@pytest.mark.parametrize("src, msg", [
    ("shfl.sync.xor.b32 %r0, %r1, 1, 31, 0xffffffff;", "missing mode; expected one of .up, .down, .bfly, .idx"),
    ("shfl.sync.bfly.u32 %r0, %r1, 1, 31, 0xffffffff;", "missing type; expected one of .b32"),
    ("shfl.sync.bfly.b32 %r0, %r1, 1, 31;", "expected 5 operands, got 4"),
    ("vote.sync.ballot.pred %p0, %p1, 0xffffffff;", "vote.sync.ballot takes .b32, not .pred"),
    ("vote.sync.all.b32 %r0, %p1, 0xffffffff;", "vote.sync.all takes .pred, not .b32"),
    ("redux.sync.add.b32 %r0, %r1, 0xffffffff;", "type (for .add)='b32' is invalid; allowed: u32, s32"),
    ("redux.sync.xor.u32 %r0, %r1, 0xffffffff;", "type (for .xor)='u32' is invalid; allowed: b32"),
])
def test_bad_forms_name_the_line_and_what_is_allowed(src, msg):
    with pytest.raises(IRSyntaxError) as e:
        parse(".kernel k\n.reg .u32 %r<4>\n.reg .pred %p<4>\n    " + src + "\n", "k.ptx")
    assert e.value.line == 4 and msg in str(e.value)


def test_wrong_register_types_are_verifier_errors():
    (d1,) = [d for d in _diags("vote.sync.ballot.b32 %p0, %p1, 0xffffffff;")]
    assert d1[0] == 4 and d1[2] == "operand-type"
    assert [x[2] for x in _diags("shfl.sync.bfly.b32 %r0|%r1, %r1, 1, 31, 0xffffffff;")] == ["operand-type"]


def test_round_trip_and_timing_class():
    assert ShflSync.timing_class == Kind.SHFL  # the shuffle pipe
    for cls in (ShflSync, VoteSync, ReduxSync):
        assert cls.timing_class in Kind.REGISTER
        for text in cls.examples:
            k = parse(f".kernel k\n.reg .u32 %r<4>\n.reg .pred %p<4>\n    {text}\n    exit;\n")
            assert k.body[0].text() == text and parse(to_text(k)) == k
    with pytest.raises(IRError):
        VoteSync("ballot", "pred", None, None, 0)


# ---------------------------------------------------------------------------------- vote / redux
def _patterns():
    """Enumerated 32-lane predicate patterns: none, all, each single lane, each single hole,
    alternating, halves."""
    pats = [[0] * 32, [1] * 32, [i % 2 for i in range(32)], [int(i < 16) for i in range(32)]]
    pats += [[int(i == k) for i in range(32)] for k in range(0, 32, 3)]
    pats += [[int(i != k) for i in range(32)] for k in range(1, 32, 5)]
    return pats


VOTE_BODY = "    setp.ne.u32 %p2, %r1, 0;\n    vote.sync.{m}.{t} {d}, {neg}%p2, 0xffffffff;\n"


@pytest.mark.parametrize("neg", ["", "!"])
@pytest.mark.parametrize("mode", ["all", "any", "uni", "ballot"])
def test_vote_over_enumerated_patterns(mode, neg):
    pats = _patterns()
    a = [x for pat in pats for x in pat]
    if mode == "ballot":
        body = VOTE_BODY.format(m=mode, t="b32", d="%r4", neg=neg) + "    setp.eq.u32 %p1, 0, 0;\n"
    else:
        body = VOTE_BODY.format(m=mode, t="pred", d="%p1", neg=neg) + "    mov.u32 %r4, 0;\n"
    d, p = _run(body, a, [0] * len(a), [0] * len(a))
    for w, pat in enumerate(pats):
        v = [x ^ (neg == "!") for x in pat]
        s = slice(32 * w, 32 * w + 32)
        if mode == "ballot":
            assert d[s].tolist() == [sum(bit << i for i, bit in enumerate(v))] * 32
        else:
            want = {"all": all(v), "any": any(v), "uni": all(v) or not any(v)}[mode]
            assert p[s].tolist() == [int(want)] * 32, (mode, neg, pat)


REDUX_VALUES = [0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xDEADBEEF, 12345, 0x0F0F0F0F, 0xF0F0F0F0]


def _redux_ref(op: str, t: str, vals):
    sv = [v - (1 << 32) if t == "s32" and v >> 31 else v for v in vals]
    r = {"add": sum(vals), "min": min(sv), "max": max(sv)}.get(op)
    if r is None:
        r = vals[0]
        for v in vals[1:]:
            r = {"and": r & v, "or": r | v, "xor": r ^ v}[op]
    return r & 0xFFFFFFFF


@pytest.mark.parametrize("op, t", [("add", "u32"), ("add", "s32"), ("min", "u32"), ("min", "s32"),
                                   ("max", "u32"), ("max", "s32"), ("and", "b32"), ("or", "b32"), ("xor", "b32")])
def test_redux_equals_python_over_enumerated_warps(op, t):
    # warp w: value (w, lane) from the table rotated by w, one lane of each warp overwritten by a table entry
    warps = []
    for w in range(len(REDUX_VALUES) * 2):
        row = [REDUX_VALUES[(w + i) % len(REDUX_VALUES)] ^ (i * 0x01000193 if w % 2 else 0) for i in range(32)]
        warps.append([x & 0xFFFFFFFF for x in row])
    a = [x for row in warps for x in row]
    body = f"    redux.sync.{op}.{t} %r4, %r1, 0xffffffff;\n    setp.eq.u32 %p1, 0, 0;\n"
    d, _ = _run(body, a, [0] * len(a), [0] * len(a))
    for w, row in enumerate(warps):
        assert d[32 * w:32 * w + 32].tolist() == [_redux_ref(op, t, row)] * 32, (op, t, w)


def test_partial_last_warp_with_a_prefix_mask():
    """A 16-thread block: lanes 16..31 do not exist, so 0x0000ffff is the whole warp (the verifier
    only warns) and 0xffffffff is accepted too (the missing lanes are ignored)."""
    a = list(range(200, 216))
    for mask in ("0x0000ffff", "0xffffffff"):
        d, p = _run(f"    shfl.sync.bfly.b32 %r4|%p1, %r1, 8, 31, {mask};\n", a, [0] * 16, [0] * 16)
        assert d.tolist() == [a[i ^ 8] for i in range(16)] and p.tolist() == [1] * 16
    d, _ = _run("    redux.sync.max.u32 %r4, %r1, 0x0000ffff;\n    setp.eq.u32 %p1, 0, 0;\n", a, [0] * 16, [0] * 16)
    assert d.tolist() == [215] * 16
