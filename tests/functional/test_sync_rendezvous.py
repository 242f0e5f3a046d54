"""shfl/vote/redux.sync and bar.warp.sync reached by lanes on different paths of a divergent branch (PTX ISA, sm_70+:
each executing thread waits until all non-exited threads of membermask have executed the
instruction "with the same qualifiers and same membermask value"; hopsim/functional/simt.py
`rendezvous`). Laws: the result equals the converged program's (one collective after a `selp` of
each path's operand), for full and partial membermasks and every collective; lanes that can never
meet (other qualifiers or membermask, a member waiting at another instruction, a whole-warp
.aligned instruction on two paths) are a named error naming the instructions' lines, never a hang."""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.functional.errors import DivergentBarrier, MemberMaskError
from hopsim.functional.runner import run_kernel
from isa.ir import parse

from _func_helpers import GlobalMemory, Launch
from _lane_kernels import lane_head

HEAD = lane_head("t", 16, 8) + """    and.b32 %r8, %r0, 5;
    setp.eq.u32 %p2, %r8, 1;
    setp.eq.u32 %p3, %r8, 4;
    mov.u32 %r4, 7;
"""
STORE = "    st.global.u32 [%rd2], %r4;\n    exit;\n"
THREADS = 64
LANE = np.arange(THREADS) % 32


def _run(body: str):
    g = GlobalMemory()
    a = g.alloc("out", np.full(THREADS, 9, np.uint32))
    text = HEAD + body + STORE
    run_kernel(parse(text), Launch(grid=1, block=THREADS, params={"out": a}), g)
    return g.view("out", np.uint32).copy(), text


def _line(text: str, part: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if part in ln)


# Each collective as (path A with input x, path B with input y, to %r4): a = %r2 (A), %r3 (B);
# vote inputs: %p2 (A), %p3 (B). The converged twin takes the same per-lane input by selp.
COLLECTIVES = {
    "shfl-bfly16": ("shfl.sync.bfly.b32 %r4, %r{x}, 16, 31, {m};", "r"),
    "shfl-idx0": ("shfl.sync.idx.b32 %r4, %r{x}, 0, 31, {m};", "r"),
    "shfl-down3": ("shfl.sync.down.b32 %r4|%p6, %r{x}, 3, 31, {m};", "r"),
    "vote-ballot": ("vote.sync.ballot.b32 %r4, %p{x}, {m};", "p"),
    "vote-any": ("vote.sync.any.pred %p6, %p{x}, {m};\n    selp.u32 %r4, 1, 0, %p6;", "p"),
    "redux-add": ("redux.sync.add.u32 %r4, %r{x}, {m};", "r"),
    "redux-max": ("redux.sync.max.u32 %r4, %r{x}, {m};", "r"),
    "bar.warp.sync": ("bar.warp.sync {m};\n    add.u32 %r4, %r{x}, 1;", "r"),
}
SPLITS = {  # (branch condition on the lane index %r1, membermask, guard of the collective or "")
    "halves": ("setp.lt.u32 %p0, %r1, 16;", "0xffffffff", ""),
    "odd-even": ("and.b32 %r9, %r1, 1;\n    setp.eq.u32 %p0, %r9, 0;", "0xffffffff", ""),
    # lanes 0..7 on one path, 8..31 on the other; membermask 0x0000ffff: members on both paths
    "partial-mask": ("setp.lt.u32 %p0, %r1, 8;", "0x0000ffff", "@%p5 "),
}
GUARD = "    setp.lt.u32 %p5, %r1, 16;\n"


def _diverged(coll: str, kind: str, split: str) -> str:
    cond, m, guard = SPLITS[split]
    x, y = "2", "3"
    a = coll.format(x=x, m=m).replace("\n    ", f"\n    {guard}")
    b = coll.format(x=y, m=m).replace("\n    ", f"\n    {guard}")
    return f"""{GUARD}    {cond}
@%p0 bra OTHER;
    {guard}{b}
    bra END;
OTHER:
    {guard}{a} // path A
END:
"""


def _converged(coll: str, kind: str, split: str) -> str:
    cond, m, guard = SPLITS[split]
    pick = ("    selp.u32 %r10, %r2, %r3, %p0;\n" if kind == "r" else
            "    selp.u32 %r10, 1, 0, %p2;\n    selp.u32 %r11, 1, 0, %p3;\n"
            "    selp.u32 %r10, %r10, %r11, %p0;\n    setp.ne.u32 %p4, %r10, 0;\n")
    src = "10" if kind == "r" else "4"
    one = coll.format(x=src, m=m).replace("\n    ", f"\n    {guard}")
    return f"{GUARD}    {cond}\n{pick}    {guard}{one}\n"


@pytest.mark.parametrize("split", list(SPLITS))
@pytest.mark.parametrize("name", list(COLLECTIVES))
def test_collective_on_both_paths_equals_the_converged_program(name, split):
    """Equal results, or the same named error (bfly 16 / down 3 under membermask 0x0000ffff source
    lanes outside it: a MemberMaskError in both programs)."""
    coll, kind = COLLECTIVES[name]
    out = []
    for text in (_diverged(coll, kind, split), _converged(coll, kind, split)):
        try:
            out.append(_run(text)[0])
        except MemberMaskError as e:
            out.append(type(e).__name__ + (": sourcing a lane outside" if "read lanes" in str(e) else str(e)))
    got, want = out
    if isinstance(want, str):
        assert got == want == "MemberMaskError: sourcing a lane outside"
        return
    np.testing.assert_array_equal(got, want)
    assert not (got == 9).all()


def test_shfl_across_paths_reads_the_other_paths_operand():
    """The converged result spelled out: lane i of either half reads lane i ^ 16's own input,
    which the other path's instruction names (lanes < 16 branch to the one reading %r2 = 3 tid,
    lanes >= 16 fall through to the one reading %r3 = tid + 100)."""
    got, _ = _run(_diverged(COLLECTIVES["shfl-bfly16"][0], "r", "halves"))
    t = np.arange(THREADS)
    src = t ^ 16
    want = np.where(src % 32 < 16, 3 * src, src + 100)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("a, b, what", [
    ("shfl.sync.bfly.b32 %r4, %r2, 1, 31, 0xffffffff;", "shfl.sync.idx.b32 %r4, %r3, 1, 31, 0xffffffff;",
     "other qualifiers"),
    ("redux.sync.add.u32 %r4, %r2, 0xffffffff;", "redux.sync.min.u32 %r4, %r3, 0xffffffff;", "other qualifiers"),
    ("vote.sync.ballot.b32 %r4, %p2, 0xffffffff;", "shfl.sync.idx.b32 %r4, %r3, 1, 31, 0xffffffff;",
     "another instruction"),
    ("shfl.sync.bfly.b32 %r4, %r2, 1, 31, 0xffffffff;", "shfl.sync.bfly.b32 %r4, %r3, 1, 31, 0x7fffffff;",
     "another membermask"),
])
def test_mismatched_collectives_on_two_paths_are_named_errors(a, b, what):
    """Instructions of different qualifiers or membermask never meet (PTX ISA: undefined / a hang
    on the GPU): a MemberMaskError naming both lines. (The 0x7fffffff one is also executed by lane
    31 outside its membermask when it runs first: named too.)"""
    with pytest.raises(MemberMaskError) as e:
        _run(f"""    setp.lt.u32 %p0, %r1, 16;
@%p0 bra OTHER;
    {b} // second
    bra END;
OTHER:
    {a} // first
END:
""")
    msg = str(e.value)
    assert "membermask" in msg, what


def test_never_meeting_collectives_name_both_lines():
    body = """    setp.lt.u32 %p0, %r1, 16;
@%p0 bra OTHER;
    shfl.sync.idx.b32 %r4, %r3, 1, 31, 0xffffffff; // second
    bra END;
OTHER:
    shfl.sync.bfly.b32 %r4, %r2, 1, 31, 0xffffffff; // first
END:
"""
    text = HEAD + body + STORE
    with pytest.raises(MemberMaskError, match="wait at different warp-synchronous instructions") as e:
        _run(body)
    msg = str(e.value)
    assert f"line {_line(text, '// first')}" in msg and f"line {_line(text, '// second')}" in msg
    assert e.value.line == _line(text, "// first")  # the taken path arrives last (simt.py: fall-through first)


def test_member_waiting_at_a_barrier_is_a_named_error():
    """A full-warp shfl on one path waits for lanes that wait at bar.sync on the other: neither can
    go on (a hang on the GPU): DivergentBarrier/MemberMaskError naming both lines."""
    body = """    setp.lt.u32 %p0, %r1, 16;
@%p0 bra OTHER;
    bar.sync 0; // bar
    bra END;
OTHER:
    shfl.sync.bfly.b32 %r4, %r2, 1, 31, 0xffffffff; // shfl
END:
"""
    text = HEAD + body + STORE
    with pytest.raises((MemberMaskError, DivergentBarrier), match="wait at different") as e:
        _run(body)
    assert f"line {_line(text, '// bar')}" in str(e.value) and f"line {_line(text, '// shfl')}" in str(e.value)


@pytest.mark.parametrize("inst", ["bar.sync 0;", "wgmma.fence.sync.aligned;"])
def test_aligned_instructions_on_two_paths_name_both_lines(inst):
    """bar.sync/wgmma are .aligned (PTX ISA: every thread of the warp executes the same
    instruction): written on both paths they never meet, a DivergentBarrier naming both lines."""
    body = f"""    setp.lt.u32 %p0, %r1, 16;
@%p0 bra OTHER;
    {inst} // one
    bra END;
OTHER:
    {inst} // two
END:
"""
    text = HEAD + body + STORE
    with pytest.raises(DivergentBarrier, match=r"\.aligned") as e:
        _run(body)
    assert f"line {_line(text, '// one')}" in str(e.value) and f"line {_line(text, '// two')}" in str(e.value)


def test_bar_warp_sync_waits_for_members_that_exit_on_the_other_path():
    """PTX ISA: the non-exited lanes of membermask: lanes 0..15 exit, 16..31 go on alone."""
    out, _ = _run("""    setp.lt.u32 %p0, %r1, 16;
@%p0 bra QUIT;
    bar.warp.sync 0xffffffff;
    mov.u32 %r4, %r3;
    bra END;
QUIT:
    exit;
END:
""")
    t = np.arange(THREADS)
    np.testing.assert_array_equal(out, np.where(LANE < 16, 9, t + 100))


def test_bar_warp_sync_with_other_membermasks_on_two_paths_is_named():
    body = """    setp.lt.u32 %p0, %r1, 16;
@%p0 bra OTHER;
    bar.warp.sync 0xffffffff; // full
    bra END;
OTHER:
    bar.warp.sync 0xffff0000; // half
END:
"""
    with pytest.raises(MemberMaskError, match="membermask"):
        _run(body)
