"""Divergent control flow (issue 15 item 1; hopsim/functional/simt.py): a `@%p bra` whose guard
differs between a warp's lanes splits the warp, each path runs with only its lanes, the warp
reconverges at the branch's immediate post-dominator. Laws: results equal numpy's per-lane
evaluation of the same program; lanes that do not run a path keep their registers and memory;
a full-warp `.sync` collective after reconvergence sees every lane; `.sync`/`.aligned`
instructions executed by part of the warp are named errors, never a hang (.sync collectives on
several paths that meet: test_sync_rendezvous.py)."""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.functional.errors import Deadlock, DivergentBarrier, MemberMaskError
from isa.ir.cfg import NO_IPDOM, post_dominators
from isa.ir import parse, verify

from _func_helpers import GlobalMemory, Launch
from hopsim.functional.runner import run_kernel

HEAD = """
.kernel t
.param .u64 out
.reg .u32 %r<12>
.reg .u64 %rd<4>
.reg .pred %p<8>
.shared .align 8 .b8 bar[8]
    mov.u32 %r0, %tid.x;
    and.b32 %r1, %r0, 31;
    ld.param.u64 %rd0, [out];
    mul.wide.u32 %rd1, %r0, 4;
    add.u64 %rd2, %rd0, %rd1;
"""
STORE = "    st.global.u32 [%rd2], %r{r};\n    exit;\n"


def _run(body: str, threads: int = 64, r: int = 4, fill: int = 0):
    g = GlobalMemory()
    a = g.alloc("out", np.full(threads, fill, np.uint32))
    _LAST[0] = HEAD + body + STORE.format(r=r)
    k = parse(_LAST[0])
    stats = run_kernel(k, Launch(grid=1, block=threads, params={"out": a}), g)
    return g.view("out", np.uint32).copy(), stats


def _line_of(text: str) -> int:
    """Source line of the first instruction containing `text` in the last kernel `_run` parsed."""
    return next(i for i, ln in enumerate(_LAST[0].splitlines(), 1) if text in ln)


_LAST = [""]
T = np.arange(64)
LANE = T % 32


def test_if_else_equals_numpy():
    out, _ = _run("""
    mov.u32 %r4, 7;
    setp.lt.u32 %p0, %r1, 11;
@%p0 bra ELSE;
    mul.lo.u32 %r4, %r0, 3;
    bra END;
ELSE:
    add.u32 %r4, %r0, 100;
END:
    add.u32 %r4, %r4, 1;
""")
    assert (out == np.where(LANE < 11, T + 100, 3 * T) + 1).all()


def test_if_without_else_leaves_other_lanes_registers():
    """Lanes that skip the body keep their value (no write to an inactive lane)."""
    out, _ = _run("""
    mov.u32 %r4, 7;
    and.b32 %r2, %r0, 1;
    setp.eq.u32 %p0, %r2, 0;
@%p0 bra SKIP;
    mov.u32 %r4, 1000;
    st.global.u32 [%rd2], %r0;
SKIP:
""")
    assert (out == np.where(T % 2 == 0, 7, 1000)).all()


def test_per_lane_trip_count_loop_and_shfl_after_reconvergence():
    """A loop whose bound is the lane index (0 trips for lane 0: the loop is skipped by a divergent
    guard), then a full-warp shfl.sync: every lane has reconverged."""
    out, _ = _run("""
    mov.u32 %r3, 0;
    mov.u32 %r4, 0;
    setp.eq.u32 %p1, %r1, 0;
@%p1 bra DONE;
LOOP:
    add.u32 %r4, %r4, %r0;
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p0, %r3, %r1;
@%p0 bra LOOP;
DONE:
    shfl.sync.bfly.b32 %r5, %r4, 1, 31, 0xffffffff;
    add.u32 %r4, %r4, %r5;
""")
    s = T * LANE
    assert (out == s + s[T ^ 1]).all()


def test_nested_divergence_and_loop_inside_a_path():
    out, _ = _run("""
    mov.u32 %r4, 0;
    setp.lt.u32 %p0, %r1, 16;
@!%p0 bra OUTER_ELSE;
    and.b32 %r2, %r1, 3;
    setp.eq.u32 %p1, %r2, 0;
@%p1 bra INNER;
    add.u32 %r4, %r4, 1;
INNER:
    add.u32 %r4, %r4, 10;
    bra OUTER_END;
OUTER_ELSE:
    mov.u32 %r3, 0;
L2:
    add.u32 %r4, %r4, 100;
    add.u32 %r3, %r3, 1;
    sub.u32 %r6, %r1, 14;
    setp.lt.u32 %p2, %r3, %r6;
@%p2 bra L2;
OUTER_END:
    vote.sync.ballot.b32 %r7, %p0, 0xffffffff;
    add.u32 %r4, %r4, %r7;
""")
    inner = np.where(LANE % 4 == 0, 10, 11)
    outer_else = 100 * (LANE - 14)
    assert (out == np.where(LANE < 16, inner, outer_else) + 0x0000FFFF).all()


def test_sync_collective_inside_a_path_with_its_lanes_as_membermask():
    out, _ = _run("""
    mov.u32 %r4, 0;
    setp.lt.u32 %p0, %r1, 16;
@!%p0 bra END;
    redux.sync.add.u32 %r4, %r1, 0x0000ffff;
END:
""")
    assert (out == np.where(LANE < 16, sum(range(16)), 0)).all()


def test_statistics_count_only_the_paths_issued():
    """Each instruction of a path is issued once for the warp (both paths serialised); a uniform
    warp issues one path only. 5 instructions in HEAD; 1 bra, then 3 + bra END, else 2, 2 after."""
    body = """
    setp.lt.u32 %p0, %r1, {k};
@%p0 bra ELSE;
    mov.u32 %r4, 1;
    add.u32 %r4, %r4, 1;
    add.u32 %r4, %r4, 1;
    bra END;
ELSE:
    mov.u32 %r4, 5;
    add.u32 %r4, %r4, 1;
END:
    add.u32 %r4, %r4, 1;
"""
    head, tail = 5 + 2, 1 + 2   # + setp, bra; + add, st, exit
    _, div = _run(body.format(k=11), threads=32)
    _, uni_then = _run(body.format(k=0), threads=32)
    _, uni_else = _run(body.format(k=32), threads=32)
    assert uni_then.instructions == head + 4 + tail
    assert uni_else.instructions == head + 2 + tail
    assert div.instructions == head + 4 + 2 + tail


# ---------------------------------------------------------------------------------- exit on some lanes
def test_exit_on_some_lanes_then_the_others_go_on():
    out, _ = _run("""
    mov.u32 %r4, 5;
    and.b32 %r2, %r0, 1;
    setp.eq.u32 %p0, %r2, 1;
@%p0 exit;
    bar.sync 0;
    add.u32 %r4, %r0, 1;
""", fill=9)
    assert (out == np.where(T % 2 == 1, 9, T + 1)).all()   # bar.sync counts per warp (PTX ISA, bar)


def test_exit_inside_one_path_the_other_path_finishes():
    out, _ = _run("""
    mov.u32 %r4, 5;
    setp.lt.u32 %p0, %r1, 8;
@%p0 bra QUIT;
    add.u32 %r4, %r0, 2;
    bra END;
QUIT:
    exit;
END:
""", fill=9)
    assert (out == np.where(LANE < 8, 9, T + 2)).all()


def test_a_warp_whose_lanes_all_exit_on_different_paths_is_done():
    out, _ = _run("""
    mov.u32 %r4, 5;
    setp.lt.u32 %p0, %r1, 8;
@%p0 bra A;
    st.global.u32 [%rd2], %r0;
    exit;
A:
    add.u32 %r4, %r0, 1000;
    st.global.u32 [%rd2], %r4;
    exit;
""", fill=9)
    assert (out == np.where(LANE < 8, T + 1000, T)).all()


# ---------------------------------------------------------------------------------- named errors
def test_full_mask_collective_in_a_path_waits_for_the_others_to_exit():
    """Lanes 0..15 leave the path and exit; lanes 16.. reach a full-warp vote.sync: it waits for
    the non-exited members only (PTX ISA), as under Independent Thread Scheduling."""
    out, _ = _run("""
    mov.u32 %r4, 0;
    setp.lt.u32 %p0, %r1, 16;
@%p0 bra QUIT;
    and.b32 %r2, %r1, 3;
    setp.eq.u32 %p1, %r2, 0;
    vote.sync.ballot.b32 %r4, %p1, 0xffffffff;
    bra END;
QUIT:
    exit;
END:
""", fill=9)
    ballot = sum(1 << i for i in range(16, 32) if i % 4 == 0)
    assert (out == np.where(LANE < 16, 9, ballot)).all()


def test_full_mask_collective_after_lanes_exited_ignores_them():
    """PTX ISA: shfl/vote/redux.sync wait for the non-exited threads of membermask: lanes 0..3 have
    exited, the others reduce among themselves."""
    out, _ = _run("""
    mov.u32 %r4, 0;
    setp.lt.u32 %p0, %r1, 4;
@%p0 exit;
    redux.sync.add.u32 %r4, %r1, 0xffffffff;
""", fill=9)
    assert (out == np.where(LANE < 4, 9, sum(range(4, 32)))).all()


def test_shfl_reading_an_exited_lane_is_a_member_mask_error():
    with pytest.raises(MemberMaskError, match=r"lanes 4 read lanes 3, which do not execute it") as e:
        _run("""
    mov.u32 %r4, 0;
    setp.lt.u32 %p0, %r1, 4;
@%p0 exit;
    shfl.sync.up.b32 %r4, %r0, 1, 0, 0xffffffff;
""")
    assert e.value.line == _line_of("shfl.sync.up")


@pytest.mark.parametrize("inst", ["bar.sync 0;", "bar.arrive 1, 64;", "wgmma.fence.sync.aligned;",
                                  "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r5}, [%r9];",
                                  "stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r9], {%r5};"])
def test_whole_warp_instructions_on_two_paths_never_meet(inst):
    """bar, wgmma, ldmatrix/stmatrix are .aligned (PTX ISA): the same instruction written on both
    paths of a divergent branch is two instructions, each waiting for the other half of the warp:
    a named DivergentBarrier, not a hang."""
    with pytest.raises(DivergentBarrier, match="wait at different warp-synchronous instructions") as e:
        _run(f"""
    mov.u32 %r4, 0;
    mov.u32 %r9, 0;
    setp.lt.u32 %p0, %r1, 16;
@%p0 bra OTHER;
    {inst}
    bra END;
OTHER:
    {inst} // other
END:
""", threads=128)
    assert e.value.line == _line_of("// other")


def test_barrier_inside_a_path_with_a_guard_false_lane_is_named():
    with pytest.raises(DivergentBarrier, match=r"lanes 17 have their guard false") as e:
        _run("""
    mov.u32 %r4, 0;
    setp.lt.u32 %p0, %r1, 16;
@%p0 bra END;
    setp.ne.u32 %p1, %r1, 17;
@%p1 bar.sync 0;
END:
""")
    assert e.value.line == _line_of("@%p1 bar.sync")


def test_barrier_needing_exited_threads_is_a_deadlock():
    """Warp 1's lanes all exit (on two paths); warp 0 then waits at bar.sync 1, 64, which needs
    warp 1: a named Deadlock naming the barrier."""
    with pytest.raises(Deadlock, match=r"waits on bar.sync 1 generation 0 \(32 threads arrived\)"):
        _run("""
    mov.u32 %r4, 0;
    setp.lt.u32 %p0, %r0, 32;
@%p0 bra W0;
    setp.lt.u32 %p1, %r1, 5;
@%p1 exit;
    exit;
W0:
    bar.sync 1, 64;
""")


def test_mbarrier_needing_exited_lanes_is_a_deadlock():
    """An mbarrier expecting one arrival per thread of the warp: lanes 16.. exit first, the
    remaining 16 arrivals never complete the phase -> Deadlock naming the mbarrier."""
    with pytest.raises(Deadlock, match=r"mbarrier 0x0 phase 0"):
        _run("""
    mov.u32 %r4, 0;
    setp.eq.u32 %p0, %r0, 0;
    mov.u32 %r5, bar;
@%p0 mbarrier.init.shared.b64 [%r5], 32;
    bar.sync 0;
    setp.ge.u32 %p1, %r1, 16;
@%p1 exit;
    mbarrier.arrive.shared.b64 %rd3, [%r5];
WAIT:
    mbarrier.try_wait.parity.shared.b64 %p2, [%r5], 0;
@!%p2 bra WAIT;
""", threads=32)


# ---------------------------------------------------------------------------------- the post-dominators
def test_post_dominators_of_if_else_loop_and_exit():
    # 0: @p bra 3; 1: a; 2: bra 4; 3: b; 4: @q bra 4?  -> use explicit successor lists
    succ = [[3, 1], [2], [4], [4], [5, 4], [6, 7], [], [8], []]
    # 4 -> 5; 4 also loops to itself: [5, 4]; 5 branches to an exit (6) or on (7 -> 8 exit)
    ip = post_dominators(succ)
    assert ip[0] == 4 and ip[1] == 2 and ip[2] == 4 and ip[4] == 5
    assert ip[5] == NO_IPDOM   # one path exits at 6, the other at 8: only the exit post-dominates


# ---------------------------------------------------------------------------------- the verifier
def test_verifier_accepts_divergent_branches_and_partial_masks_inside_their_paths():
    """A membermask naming only the upper half-warp is an error on an unguarded instruction that
    every lane runs, but correct inside the path of lanes 16..31 (and runs so); a bar.sync inside a
    possibly divergent path is warned about."""

    body = """
    mov.u32 %r4, 0;
    setp.lt.u32 %p0, %r1, 16;
@%p0 bra END;
    shfl.sync.idx.b32 %r4, %r0, 16, 31, 0xffff0000;
END:
"""
    k = parse(HEAD + body + STORE.format(r=4))
    assert [d for d in verify(k) if d.severity == "error"] == []
    out, _ = _run(body)
    assert (out == np.where(LANE < 16, 0, T - LANE + 16)).all()
    k2 = parse(HEAD + body.replace("shfl.sync.idx.b32 %r4, %r0, 16, 31, 0xffff0000;", "bar.sync 0;") + STORE.format(r=4))
    (d,) = [d for d in verify(k2) if d.rule == "divergent-barrier"]
    assert d.severity == "warning" and "inside a path of a branch" in d.message
    # unguarded and outside any divergent path, the same mask is still an error
    k3 = parse(HEAD + "    shfl.sync.idx.b32 %r4, %r0, 16, 31, 0xffff0000;\n" + STORE.format(r=4))
    assert [d.rule for d in verify(k3) if d.severity == "error"] == ["membermask"]


@pytest.mark.parametrize("bound, warned", [(128, False), (96, False), (100, True)])
def test_a_role_split_at_a_warp_boundary_is_not_divergent(bound, warned):
    """`setp.ge %p, tid.x, 128` is the same in every lane of a warp (warp-specialised roles): a
    barrier on one side is not in a divergent path; `tid >= 100` splits warp 3."""
    body = f"""
    mov.u32 %r4, 0;
    setp.ge.u32 %p0, %r0, {bound};
@%p0 bra END;
    bar.sync 1, 96;
END:
"""
    k = parse(HEAD + body + STORE.format(r=4))
    assert any(d.rule == "divergent-barrier" for d in verify(k)) == warned


def test_early_exit_inside_a_path_then_a_barrier_for_the_rest():
    """`if (lane >= 8) { if (lane >= 24) { store; return; } x += 1; } __syncthreads(); ...`: the
    barrier does not post-dominate the split (lanes 24.. leave by OUT), so the lanes reaching it
    wait there (simt.converge) until lanes 24.. have stored and exited; it then runs with every
    non-exited lane (per-warp count, PTX ISA)."""
    out, _ = _run("""
    mov.u32 %r4, 5;
    setp.lt.u32 %p0, %r1, 8;
@%p0 bra SYNC;
    setp.ge.u32 %p1, %r1, 24;
@%p1 bra OUT;
    add.u32 %r4, %r4, 1;
SYNC:
    bar.sync 0;
    add.u32 %r4, %r4, 10;
    st.global.u32 [%rd2], %r4;
OUT:
""", fill=9)
    assert (out == np.where(LANE < 8, 15, np.where(LANE < 24, 16, 5))).all()


def test_break_out_of_a_loop_with_per_lane_conditions():
    """for (i = 0; i < 6; i++) { if (i == lane % 8) break; s += i; }  then a full-warp vote of
    whether the lane broke out."""
    out, _ = _run("""
    mov.u32 %r3, 0;
    mov.u32 %r4, 0;
    and.b32 %r6, %r1, 7;
LOOP:
    setp.eq.u32 %p0, %r3, %r6;
@%p0 bra AFTER;
    add.u32 %r4, %r4, %r3;
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p1, %r3, 6;
@%p1 bra LOOP;
AFTER:
    vote.sync.ballot.b32 %r7, %p0, 0xffffffff;
    add.u32 %r4, %r4, %r7;
""")
    k = LANE % 8
    ballot = sum(1 << i for i in range(32) if i % 8 < 6)
    assert (out == np.where(k < 6, k * (k - 1) // 2, 15) + ballot).all()
