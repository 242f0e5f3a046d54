"""Named barriers (PTX ISA, bar): `bar.sync a{, b}` / `barrier.sync` wait until b threads (default:
the CTA) arrived at barrier a in this phase; `bar.arrive a, b` counts and never waits. Laws: the
FlashAttention-3 warpgroup ping-pong (two warpgroups alternating through barriers 1 and 2) gives
strictly alternating turns, functionally and timed, in either warp order; a barrier completes at
exactly b threads; named errors, never a hang: id out of range, a count that is no multiple of 32,
bar.arrive without a count, counts that disagree within a phase, a divergent bar.sync or wgmma,
too few arrivals (Deadlock naming the barrier)."""

from __future__ import annotations

import numpy as np
import pytest

from isa.ir import IRSyntaxError, parse, to_text, verify
from isa.ir.instructions import BarArrive, BarSync
from isa.ir.kinds import Kind
from hopsim.config import load_gpu
from hopsim.functional.errors import BarrierCountMismatch, Deadlock, DivergentBarrier
from hopsim.functional.executor import CTAExecutor, Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.timing.runner import simulate

from _func_helpers import run

ROUNDS = 4


def pingpong(first_wg: int) -> str:
    """Warpgroup `first_wg` takes the first turn; each turn its leader appends its warpgroup id to
    a shared log (log[c] = wg; c += 1). Barrier 1: 'warpgroup A may go', 2: 'warpgroup B may go'."""
    turn = """@%p1 ld.shared.u32 %r4, [smem];
@%p1 shl.b32 %r5, %r4, 2;
@%p1 add.u32 %r6, %r10, %r5;
@%p1 st.shared.u32 [%r6+4], %r1;
@%p1 add.u32 %r4, %r4, 1;
@%p1 st.shared.u32 [smem], %r4;
"""
    return f""".kernel pingpong
.param .u64 OUT
.shared .align 16 .b8 smem[256]
.reg .u32 %r<12>
.reg .u64 %rd<4>
.reg .pred %p<4>
    mov.u32 %r0, %tid.x;
    shr.u32 %r1, %r0, 7;
    and.b32 %r2, %r0, 127;
    setp.eq.u32 %p1, %r2, 0;
    mov.u32 %r10, smem;
    mov.u32 %r3, 0;
    setp.eq.u32 %p0, %r1, {first_wg};
@%p0 bra A;
    bar.arrive 1, 256;
LOOPB:
    barrier.sync.aligned 2, 256;
{turn}    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p2, %r3, {ROUNDS};
@!%p2 bra DONE;
    bar.arrive 1, 256;
    bra LOOPB;
A:
    bar.sync 1, 256;
{turn}    bar.arrive 2, 256;
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p2, %r3, {ROUNDS};
@%p2 bra A;
DONE:
    bar.sync 0;
    setp.lt.u32 %p3, %r0, {2 * ROUNDS};
    shl.b32 %r8, %r0, 2;
    add.u32 %r7, %r10, %r8;
@%p3 ld.shared.u32 %r9, [%r7+4];
    ld.param.u64 %rd0, [OUT];
    cvt.u64.u32 %rd1, %r8;
    add.u64 %rd0, %rd0, %rd1;
@%p3 st.global.u32 [%rd0], %r9;
    exit;
"""


@pytest.mark.parametrize("first_wg", [0, 1])
def test_pingpong_turns_alternate(first_wg):
    g = GlobalMemory()
    out = g.alloc("OUT", 4 * 2 * ROUNDS)
    run(pingpong(first_wg), block=256, gmem=g, params={"OUT": out})
    assert g.view("OUT", np.uint32).tolist() == [first_wg, 1 - first_wg] * ROUNDS


def test_pingpong_timed_waits_on_the_named_barriers():
    g = GlobalMemory()
    out = g.alloc("OUT", 4 * 2 * ROUNDS)
    r = simulate(parse(pingpong(0)), Launch(grid=1, block=256, params={"OUT": out}), load_gpu("h100_sxm"), gmem=g)
    assert g.view("OUT", np.uint32).tolist() == [0, 1] * ROUNDS
    waits = r.roles["other"]["wait"]
    assert waits.get("bar.sync 1", 0) > 0 and waits.get("bar.sync 2", 0) > 0


SMALL = """.kernel k
.reg .u32 %r<4>
.reg .pred %p<4>
    mov.u32 %r0, %tid.x;
    shr.u32 %r1, %r0, 5;
{body}    exit;
"""


def _ex(body: str, block: int = 128) -> CTAExecutor:
    return CTAExecutor(parse(SMALL.format(body=body)), Launch(grid=1, block=block), GlobalMemory())


def _issue_until_barrier(ex, w):
    """Issue warp w until it issues a barrier instruction (returns that Effect)."""
    while True:
        eff = ex.issue(w)
        if eff.kind in (Kind.BAR_SYNC, Kind.BAR_ARRIVE):
            return eff


def test_arrive_never_waits_and_sync_completes_at_exactly_count():
    body = "    setp.eq.u32 %p0, %r1, 0;\n@%p0 bra S;\n    bar.arrive 3, 96;\n    exit;\nS:\n    bar.sync 3, 96;\n"
    ex = _ex(body)
    e0 = _issue_until_barrier(ex, 0)
    assert e0.blocked_on == ("bar", 3, 0)                     # 32 of 96
    e1 = _issue_until_barrier(ex, 1)
    assert e1.kind == Kind.BAR_ARRIVE and e1.blocked_on is None and e1.fired == ()   # 64 of 96: goes on
    assert not ex.is_ready(("bar", 3, 0))
    e2 = _issue_until_barrier(ex, 2)
    assert e2.blocked_on is None and e2.fired == (("bar", 3, 0),)                    # 96: phase 0 completes
    assert ex.is_ready(("bar", 3, 0))
    e3 = _issue_until_barrier(ex, 3)                          # the 4th warp starts phase 1 (32 of 96)
    assert e3.fired == () and ex.bars[3][:2] == [32, 1]


def test_independent_barriers_of_two_warp_pairs():
    body = ("    setp.lt.u32 %p0, %r1, 2;\n@%p0 bar.sync 1, 64;\n@!%p0 bar.sync 2, 64;\n")
    run(SMALL.format(body=body), block=128)   # completes: each pair fills its own barrier


@pytest.mark.parametrize("body, err, match", [
    ("    setp.eq.u32 %p0, %r1, 0;\n@%p0 bar.sync 1, 64;\n@!%p0 bar.arrive 1, 128;\n", BarrierCountMismatch,
     r"barrier 1 phase 0 expects 64 threads but this warp gives 128 threads"),
    ("    setp.eq.u32 %p0, %r1, 0;\n@%p0 bar.sync 1, 64;\n@!%p0 bar.sync 1;\n", BarrierCountMismatch,
     r"expects 64 threads but this warp gives every thread of the CTA"),
    ("    and.b32 %r2, %r0, 31;\n    setp.lt.u32 %p0, %r2, 16;\n@%p0 bar.sync 0;\n", DivergentBarrier,
     r"bar.sync executed by 16 of the warp's 32 live lanes \(lanes 16, 17, 18, 19, 20, 21, 22, 23 ... have their guard false\)"),
    ("    and.b32 %r2, %r0, 31;\n    setp.lt.u32 %p0, %r2, 16;\n@%p0 bar.arrive 1, 64;\n", DivergentBarrier,
     r"bar.arrive executed by 16 of"),
    ("    and.b32 %r2, %r0, 31;\n    setp.lt.u32 %p0, %r2, 16;\n@%p0 wgmma.fence.sync.aligned;\n", DivergentBarrier,
     r"warpgroup-collective instruction executed by 16 of the warp's 32 live lanes"),
    ("    setp.lt.u32 %p0, %r1, 2;\n@%p0 bar.sync 1, 128;\n", Deadlock,
     r"waits on bar.sync 1 generation 0 \(64 threads arrived\)"),
    ("    add.u32 %r2, %r1, 14;\n    bar.sync %r2, 128;\n", Exception, r"barrier id differs between lanes|out of 0..15"),
    ("    mov.u32 %r2, 16;\n    bar.sync %r2;\n", Exception, r"barrier id 16 out of 0..15"),
    ("    mov.u32 %r2, 48;\n    bar.sync 1, %r2;\n", Exception, r"thread count 48 is not a multiple of 32"),
])
def test_run_time_errors_are_named_never_a_hang(body, err, match):
    with pytest.raises(err, match=match) as e:
        run(SMALL.format(body=body), block=128)
    assert "warp" in str(e.value) and "#" in str(e.value)   # located: warp and instruction
    assert "(line " in str(e.value) and e.value.line is not None and e.value.line > 5   # and its source line


@pytest.mark.parametrize("src, msg", [
    ("bar.sync 16;", "bar.sync: barrier 16 out of 0..15 (PTX ISA, bar: barrier id 0..15"),
    ("bar.sync 1, 100;", "count 100 is not a multiple of 32 in 32..1024"),
    ("bar.sync 1, 0;", "count 0 is not a multiple of 32 in 32..1024"),
    ("barrier.sync 1, 2048;", "count 2048 is not a multiple of 32 in 32..1024"),
    ("bar.arrive 1;", "bar.arrive: the thread count b is required (bar.arrive a, b; b a multiple of 32)"),
    ("bar.arrive 17, 64;", "barrier 17 out of 0..15"),
    ("bar.arrive 1, 33;", "count 33 is not a multiple of 32"),
])
def test_bad_forms_name_the_line_and_what_is_allowed(src, msg):
    with pytest.raises(IRSyntaxError) as e:
        parse(".kernel k\n.reg .u32 %r<2>\n    " + src + "\n    exit;\n", "k.ptx")
    assert e.value.line == 3 and msg in str(e.value)


def test_round_trip_timing_classes_and_count_warning():
    assert BarSync.timing_class == Kind.BAR_SYNC and BarArrive.timing_class == Kind.BAR_ARRIVE
    for text in BarArrive.examples + BarSync.examples:
        k = parse(f".kernel k\n.reg .u32 %r<2>\n    {text}\n    exit;\n")
        assert k.body[0].text() == text and parse(to_text(k)) == k and verify(k) == []
    k = parse(".kernel k\n    bar.sync 1, 256;\n    bar.arrive 1, 128;\n    bar.arrive 2, 64;\n    exit;\n")
    (d,) = verify(k)
    assert (d.line, d.severity, d.rule) == (3, "warning", "barrier-count")
    assert "barrier 1 is given 128 threads here and 256 threads at line 2" in d.message


def _warnings(body: str):
    k = parse(SMALL.format(body=body))
    return [(d.line, d.rule) for d in verify(k) if d.rule == "divergent-barrier"]


def test_verifier_warns_on_a_lane_varying_guard_of_a_barrier_or_collective():
    lane = "    and.b32 %r2, %r0, 31;\n    setp.lt.u32 %p0, %r2, 16;\n"
    assert _warnings(lane + "@%p0 bar.sync 0;\n") == [(8, "divergent-barrier")]
    assert _warnings(lane + "@%p0 wgmma.fence.sync.aligned;\n") == [(8, "divergent-barrier")]
    assert _warnings("    mov.u32 %r2, %laneid;\n    setp.eq.u32 %p0, %r2, 0;\n@%p0 bar.arrive 1, 64;\n") == [
        (8, "divergent-barrier")]
    # warp-uniform guards: the warp index (tid.x >> 5), a vote, a constant comparison
    assert _warnings("    setp.lt.u32 %p0, %r1, 2;\n@%p0 bar.sync 1, 64;\n") == []
    assert _warnings(lane + "    vote.sync.any.pred %p1, %p0, 0xffffffff;\n@%p1 bar.sync 0;\n") == []
    assert _warnings(lane + "@%p0 add.u32 %r3, %r3, 1;\n") == []          # not a barrier: predication is fine
    msg = verify(parse(SMALL.format(body=lane + "@%p0 bar.sync 0;\n")))[-1].message
    assert "bar.sync is guarded by %p0, which may differ between the lanes of a warp" in msg
