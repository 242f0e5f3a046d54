"""Persistent CTAs walking a tensor's boxes (kernels/membound/tmacopy.py --ctas G: CTA b copies
boxes b, b + G, ...): the box coordinates wrap from row to row (not affine in %ctaid), but the
linear box index is (linear_plan.LinearTilePlan). Laws: memo=True gives exactly the cycles,
bytes, counters and role statistics of simulating every CTA (memo=False, same partitioned mode),
for grids that divide the boxes evenly, leave a remainder (the last CTAs make one trip fewer,
also when CTA 1 already does) and do not divide the row of boxes; and the alike CTAs are replayed,
not simulated (memo hits)."""

from __future__ import annotations

import pytest

from hopsim.cli.tmacopy_cmd import setup
from hopsim.functional.executor import Launch
from hopsim.timing.linear_plan import BoxGrid, LinearTilePlan
from hopsim.timing.runner import simulate
from isa.tensormap import TensorMap
from kernels.membound.tmacopy import REGS_PER_THREAD, TmaCopyParams, build_tmacopy
from tests.timing.test_memo_gmem import _gpu, _same

CASES = [  # (rows, cols, persistent CTAs, SMs): boxes 64 x 64 f16 (the default box)
    (512, 1024, 8, 4),     # 128 boxes, 16 per CTA, 2 CTAs per SM
    (512, 1024, 12, 4),    # 128 = 12 x 10 + 8: CTAs 8..11 one trip fewer; 12 does not divide a row of 16
    (512, 960, 7, 4),      # 120 = 7 x 17 + 1: CTA 1 already short
    (256, 2048, 10, 2),    # 128 = 10 x 12 + 8: both SMs hold 4 long CTAs and a short one
]


def _run(p, sms, memo):
    kernel, grid, block = build_tmacopy(p)
    gm, params, _ = setup(p, values=False)
    return simulate(kernel, Launch(grid=grid, block=block, params=params), _gpu(sms, 50 << 20), values=False,
                    gmem=gm, checks=False, regs_per_thread=REGS_PER_THREAD, memory="partitioned", memo=memo)


@pytest.mark.parametrize("rows, cols, ctas, sms", CASES)
def test_persistent_tmacopy_memo_equals_every_cta_simulated(rows, cols, ctas, sms):
    p = TmaCopyParams(rows=rows, cols=cols, ctas=ctas)
    fast, full = _run(p, sms, True), _run(p, sms, False)
    assert fast.extra["memo_hits"] > 0, fast.extra
    _same(fast, full)
    assert fast.bytes_hbm == rows * cols * 2 == fast.extra["bytes_hbm_written"]


def test_box_grid_linear_index_is_row_major_and_invertible():
    tm = TensorMap(dtype="f16", global_dims=(960, 512), global_strides_bytes=(1920,), box_dims=(64, 32))

    class _Gmem:
        @staticmethod
        def tensor_map(handle):
            return tm

    g = BoxGrid(_Gmem())
    for q1 in range(16):
        for q0 in range(15):
            co = (q0 * 64, q1 * 32)
            assert g.linear(7, co) == (q0 + 15 * q1,)
            assert g.coords(7, g.linear(7, co)) == co
    assert g.linear(7, (32, 0)) is None      # not aligned to the box grid
    assert g.linear(7, (960, 0)) is None     # outside the tensor
    assert g.linear(7, (0,)) is None         # wrong rank


def test_plan_is_linear_for_persistent_ctas_only():
    """One CTA per tile (a 2-D grid, affine box coordinates) keeps the affine plan; persistent
    CTAs get the linear one."""
    from hopsim.timing import runner
    kinds = []
    orig = runner._Grid.plan

    def spy(self, *a, **k):
        orig(self, *a, **k)
        kinds.append(type(self.tile_plan))
    runner._Grid.plan = spy
    try:
        _run(TmaCopyParams(rows=256, cols=512), 2, True)
        _run(TmaCopyParams(rows=256, cols=512, ctas=3), 2, True)
    finally:
        runner._Grid.plan = orig
    assert kinds[0] is not LinearTilePlan and kinds[1] is LinearTilePlan
