"""The zero-time tile capture (hopsim/timing/tile_plan.py) ends on a spin-wait. A warp polling
with mbarrier.test_wait never blocks, so before SPIN_ISSUES the capture ran it forever (the
memo's plan is built before any cycle is simulated, so max_cycles could not stop it). Laws: a
spin that an async op ends (the GEMM's TMA fill) gives the memo the result of simulating every
CTA (memo=False); a spin that nothing ends stops the capture (CaptureLimit: no plan) and the
detailed simulation reports the livelock at max_cycles, naming the warp."""

from __future__ import annotations

import pytest

from hopsim.config import load_gpu
from hopsim.functional.executor import CTAExecutor, Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.gemm_setup import setup_gemm
from hopsim.timing import tile_plan
from hopsim.timing.runner import SimulationLimit, simulate
from isa.ir.parser import parse
from isa.ir.printer import to_text
from kernels.gemm import build_gemm
from kernels.params import GemmParams
from tests.timing.test_ir_kernels import SPIN
from tests.timing.test_memo_gmem import _same

GPU = load_gpu()


def _spin_gemm(memo: bool):
    """The IR GEMM with its consumers' try_wait loop polled with test_wait (never blocks)."""
    p = GemmParams(m=512, n=256, k=256)
    gk = build_gemm(p)
    text = to_text(gk.kernel, abbreviate=False)
    assert "mbarrier.try_wait" in text
    kernel = parse(text.replace("mbarrier.try_wait", "mbarrier.test_wait"))
    gmem, launch, _a, _b = setup_gemm(p, gk, values=False)
    return simulate(kernel, launch, GPU, values=False, gmem=gmem, memory="partitioned", memo=memo,
                    regs_per_thread=gk.regs_per_thread, max_cycles=10**6)


def test_spin_wait_gemm_memo_equals_every_cta_simulated():
    fast = _spin_gemm(memo=True)
    assert fast.extra.get("memo") is True and "memo_hits" in fast.extra  # the plan was built: the memo ran
    _same(fast, _spin_gemm(memo=False))


def test_endless_spin_stops_the_capture_and_is_a_livelock(monkeypatch):
    monkeypatch.setattr(tile_plan, "CAPTURE_ISSUES", 20_000)
    with pytest.raises(tile_plan.CaptureLimit, match="more than 20000"):
        tile_plan.capture_tiles(_executor())
    with pytest.raises(SimulationLimit, match="CTA 0 warp 0"):
        simulate(parse(SPIN), Launch(grid=2, block=32), GPU, values=False, memory="partitioned", memo=True,
                 max_cycles=20_000)


def _executor():
    return CTAExecutor(parse(SPIN), Launch(grid=1, block=32), GlobalMemory(), 0, values=False)
