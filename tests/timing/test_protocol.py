"""The functional suite's GEMM and its protocol mutations, re-run on the TIMED machine (also with
seeded latency jitter): the product is right, and every broken kernel raises the same named error
(tests/functional/test_runner.py runs them on the zero-time functional runner)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from hopsim.functional.checks import (
    AccumulatorTouched, Deadlock, ReadBeforeLand, StageOverwrite, WgmmaWithoutFence,
)
from hopsim.functional.executor import Launch
from hopsim.timing.runner import simulate
from isa.ir.parser import parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "functional"))
from _gemm_kernel import gemm_text, reference, setup  # noqa: E402

JITTER = [None, 7, 11]


def _sim(n=64, k=256, seed=None, **mut):
    g, params, a, b = setup(k, n)
    r = simulate(parse(gemm_text(n, **mut)), Launch(block=128, params=params), gmem=g,
                 jitter_seed=seed, jitter_cycles=200 if seed is not None else 0)
    return r, g.view("D", np.float32).reshape(64, n), reference(a, b)


@pytest.mark.parametrize("seed", JITTER)
@pytest.mark.parametrize("n,k", [(64, 256), (128, 512)])
def test_single_warpgroup_gemm_is_right_on_the_timed_machine(n, k, seed):
    r, d, ref = _sim(n, k, seed)
    np.testing.assert_allclose(d, ref, rtol=1e-5, atol=1e-4 * np.sqrt(k))
    assert r.extra["tma_boxes"] == 2 * (k // 64)  # predicated-off copies of the other lanes cost nothing


@pytest.mark.parametrize("seed", JITTER)
@pytest.mark.parametrize("mut,err", [
    (dict(extra_tx=16), Deadlock),
    (dict(early_reuse=True), StageOverwrite),
    (dict(no_fence=True), WgmmaWithoutFence),
    (dict(no_wait=True), ReadBeforeLand),
    (dict(touch_acc=True), AccumulatorTouched),
])
def test_mutations_raise_their_named_error(mut, err, seed):
    with pytest.raises(err) as ei:
        _sim(seed=seed, **mut)
    assert ei.value.warp is not None and ei.value.text
