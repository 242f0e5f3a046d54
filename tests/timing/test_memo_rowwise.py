"""CTA memoisation of the row-wise kernels (kernels/rowwise: shfl.sync, ex2/rcp.approx, and in
the cta mapping ld/st.shared and bar.sync): memo=True gives exactly the cycles, bytes, counters,
role statistics and busy fractions of memo=False (same partitioned mode) on multi-wave grids, an L2 small
enough to evict, at 8 and at 1 CTA per SM, and with a partial last CTA (warp mapping: rows not a
multiple of the warps per CTA)."""

from __future__ import annotations

import pytest

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.timing.runner import simulate
from kernels.rowwise import RowParams, build_rowwise
from tests.timing.test_memo_gmem import _gpu, _same

CASES = [  # (family, mapping, rows, cols, regs per thread, L2 bytes)
    ("softmax", "warp", 8 * 37, 256, 32, 50 << 20),       # 37 CTAs on 4 SMs: 2 waves and a partial one
    ("rowsum", "warp", 8 * 21, 512, 32, 64 << 10),        # L2 evicting
    ("softmax", "cta", 21, 1024, 32, 64 << 10),
    ("rowsum", "cta", 37, 384, 255, 50 << 20),            # 1 CTA per SM; 3 chunks over 8 warps
    ("softmax", "warp", 8 * 37, 256, 32, 640 << 10),      # re-reads mid-ramp (footprint 512 KiB, stores counted)
]


def _launch(p: RowParams):
    kernel, grid, block = build_rowwise(p)
    gm = GlobalMemory()
    params = {"x": gm.reserve("x", 4 * p.rows * p.cols), "y": gm.reserve("y", 4 * p.out_elements),
              "rows": p.rows, "cols": p.cols}
    return kernel, Launch(grid=grid, block=block, params=params), gm


@pytest.mark.parametrize("family, mapping, rows, cols, regs, l2", CASES)
def test_memo_equals_detailed_for_rowwise_kernels(family, mapping, rows, cols, regs, l2):
    p = RowParams(family=family, rows=rows, cols=cols, mapping=mapping)
    gpu = _gpu(4, l2)
    runs = []
    for memo in (True, False):
        k, lch, gm = _launch(p)
        runs.append(simulate(k, lch, gpu, values=False, gmem=gm, memory="partitioned", memo=memo,
                             regs_per_thread=regs))
    fast, full = runs
    assert fast.extra["memo_hits"] > 0, fast.extra
    _same(fast, full)


@pytest.mark.parametrize("family", ["softmax", "rowsum"])
@pytest.mark.parametrize("rows", [8 * 37 - 3, 8 * 37 - 7])
def test_partial_last_cta_is_memoised_exactly(family, rows):
    """rows not a multiple of the warps per CTA: the last CTA's idle warps exit at once (a
    truncated tile plan, TilePlan.cut, in DispatchResidency): the other CTAs are still memoised
    and the result equals memo=False."""
    p = RowParams(family=family, rows=rows, cols=256, mapping="warp")
    runs = []
    for memo in (True, False):
        k, lch, gm = _launch(p)
        runs.append(simulate(k, lch, _gpu(4, 50 << 20), values=False, gmem=gm, memory="partitioned", memo=memo,
                             regs_per_thread=32))
    assert runs[0].extra["memo_hits"] > 0, runs[0].extra
    _same(*runs)


@pytest.mark.parametrize("mapping, rows, l2, reads_from_hbm", [
    ("warp", 256, 50 << 20, 1),    # 256 warps x 4 KB between a line's reads = 1 MB: fits, re-reads hit
    # one CTA per row: 64 CTAs on 4 SMs at 8 a SM are 2 waves, 256 KB in a 50 MB L2 (fits, as 256
    # rows, 1 MB, do: the fits side of the law does not depend on the row count; 4x fewer CTAs
    # simulated in detail in the shared mode)
    ("cta", 64, 50 << 20, 1),
    ("warp", 256, 256 << 10, 3),   # 1 MB > 256 KB: evicted before the second and third pass, re-read from HBM
])
def test_second_and_third_pass_bytes_follow_lru_reuse_distance(mapping, rows, l2, reads_from_hbm):
    """softmax reads its row three times: the partitioned mode (residency decided at dispatch,
    memo.DispatchResidency._classify_walk) moves the bytes that the shared mode's LRU over time
    moves (an independent implementation): x once from HBM and twice from L2 when the rows of
    all resident warps fit in L2, x three times from HBM when they do not."""
    p = RowParams(family="softmax", rows=rows, cols=1024, mapping=mapping)
    x_bytes = 4 * p.rows * p.cols
    got = []
    for mode in ({"memory": "partitioned", "memo": True}, {}):
        k, lch, gm = _launch(p)
        r = simulate(k, lch, _gpu(4, l2), values=False, gmem=gm, regs_per_thread=32, **mode)
        got.append((r.bytes_hbm, r.bytes_l2))
    assert got[0] == (reads_from_hbm * x_bytes, (3 - reads_from_hbm) * x_bytes)
    assert got[0] == got[1]
