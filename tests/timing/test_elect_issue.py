"""TMA issue cost by guard (microbench__tma_issue): a copy guarded by a predicate that holds an
elect.sync result holds the issuing warp `tma_issue_elect_cycles` (~11 on the H100), a
lane-predicated copy `tma_issue_cycles` (~78): ptxas issues the former on the uniform path and
wraps the latter in a per-lane loop."""

from __future__ import annotations

import pytest

from hopsim.config import load_gpu
from hopsim.timing.opclass import elect_guarded as _elect_guarded, elected_predicates
from hopsim.validate.calibrate import TMA_ISSUE_TWIN_BOX_CYCLES
from hopsim.validate.micro_ir.run import gpu_at
from hopsim.validate.micro_ir.tma import issue_run
from isa.ir import parse
from tests.isa.test_ir_examples import GEMM_TEXT


def test_elect_narrowed_by_a_warp_condition_is_still_elected():
    k = parse(GEMM_TEXT)  # elect.sync _|%p1 ; and.pred %p1, %p1, %p2 (warp 0)
    assert "%p1" in elected_predicates(k)
    assert "%p0" not in elected_predicates(k)  # setp.eq on %tid.x: a lane predicate
    copies = [i for i in k.body if type(i).__name__.startswith("CpAsyncBulkTensor")]
    assert copies and all(_elect_guarded(i, elected_predicates(k)) for i in copies)


def test_a_lane_predicate_is_not_elected():
    k = parse(GEMM_TEXT.replace("elect.sync _|%p1, 0xffffffff;", "setp.eq.u32 %p1, %r0, 0;"))
    assert "%p1" not in elected_predicates(k)


def test_calibrated_holds_differ_as_measured():
    t = load_gpu().timing
    assert float(t.tma_issue_elect_cycles.value) < float(t.tma_issue_cycles.value) / 4


def test_elect_issuer_speeds_up_many_small_boxes_in_simulation():
    """The GEMM with 8-row boxes (32 boxes a stage) is issue-bound with lane-predicated copies;
    guarded by elect.sync, each box holds the issuer tma_issue_elect_cycles instead of
    tma_issue_cycles, so the k-loop shortens by about 32 x the difference per k-tile."""
    from hopsim.gemm_sim import simulate_gemm
    from kernels.params import GemmParams

    p = GemmParams(m=128, n=128, k=1024, box_rows=8, stages=4)
    lane = simulate_gemm(p).cycles
    elect = simulate_gemm(p.replace(tma_issuer="elect")).cycles
    t = load_gpu().timing
    saved = 16 * 32 * (float(t.tma_issue_cycles.value) - float(t.tma_issue_elect_cycles.value))
    assert elect < lane
    assert lane - elect == pytest.approx(saved, rel=0.35)


def test_an_unguarded_copy_on_its_own_path_holds_the_uniform_cost():
    """microbench__tma_issue thread_unpredicated: lane 0 alone on a divergent path issues copies with
    no predicate (ptxas: uniform operands, 9 SASS a box, no per-lane loop); per box the issuing thread
    is held tma_issue_uniform_cycles, between the elect.sync and the lane-predicated holds (as
    measured: 12 < 47 < 83 cycles a box at R8). Law: the issue time of K boxes grows by the hold per box."""
    gpu = gpu_at()
    t = gpu.timing
    assert float(t.tma_issue_elect_cycles.value) < float(t.tma_issue_uniform_cycles.value) < float(t.tma_issue_cycles.value)
    got = {}
    for mode in ("thread_unpredicated", "warp_lane0"):
        i1, _ = issue_run(8, mode, 1, gpu, iters=4)
        i9, _ = issue_run(8, mode, 9, gpu, iters=4)
        got[mode] = (i9 - i1) / 8
    twin = TMA_ISSUE_TWIN_BOX_CYCLES  # the twin's own per-box instructions
    assert got["thread_unpredicated"] == pytest.approx(float(t.tma_issue_uniform_cycles.value) + twin, abs=1.5)
    assert got["warp_lane0"] == pytest.approx(float(t.tma_issue_cycles.value) + twin, abs=1.5)
