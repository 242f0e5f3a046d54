"""Dispatch-time L2 residency on arrays (memo.DispatchResidency) decides exactly what the
definition says, tile by tile: the reference below is the definition (its docstring) written as
a plain walk over (tensor map, coords) keys with a dict LRU. Seeded grids, small L2 capacities so
that tiles are evicted and re-fetched; both the vectorised path and the tile-by-tile path (used
when a CTA reads one tile twice) are compared.
"""

from __future__ import annotations

import bisect
import random

import numpy as np
import pytest

from hopsim.timing import dispatch_residency
from hopsim.timing.memo import DispatchResidency, TilePlan
from hopsim.timing.memory import L2Residency


def reference(plan: TilePlan, num_ctas: int, slots: int, capacity: int) -> list[list]:
    """[(hit, share) per tile in warp order] per CTA, from the definition."""
    res = L2Residency(capacity)
    readers: dict = {}
    for c in range(num_ctas):
        for row in plan.tiles(c):
            for h, co, _ in row:
                lst = readers.setdefault((h, co), [])
                if not lst or lst[-1] != c:
                    lst.append(c)

    def r_of(t, c):
        rd = readers[t]
        return max(1, bisect.bisect_left(rd, c + slots) - bisect.bisect_left(rd, c))

    window, share, out = {}, {}, []
    concurrent = min(slots, num_ctas) * sum(1 for row in plan.base if row)
    for c in range(num_ctas):
        got = []
        for row in plan.tiles(c):
            seen, touched = {}, 0   # this warp's earlier reads: tile -> its bytes read before
            for h, co, nb in row:
                t = (h, co)
                before = seen.get(t)
                seen[t] = touched
                touched += nb
                if before is not None and t in res:   # the warp's own re-read: LRU reuse distance
                    res.access(t, nb)
                    if (touched - nb - before) * concurrent > capacity:
                        res.hits, res.misses = res.hits - 1, res.misses + 1
                        got.append((False, 1.0))
                        continue
                    sw = share.get(t)
                    if sw is None or c >= sw[0]:
                        sw = share[t] = (c + slots, 1.0 / r_of(t, c))
                    got.append((True, sw[1]))
                    continue
                if not res.access(t, nb):
                    window[t] = (c + slots, 1.0 / r_of(t, c))
                    got.append((False, 1.0 / r_of(t, c)))
                    continue
                win = window.get(t)
                if win is not None and c < win[0]:
                    got.append((False, win[1]))
                    continue
                sw = share.get(t)
                if sw is None or c >= sw[0]:
                    sw = share[t] = (c + slots, 1.0 / r_of(t, c))
                got.append((True, sw[1]))
        out.append(got)
    return out, (res.hits, res.misses)


def gemm_like_plan(gx: int, gy: int, k_tiles: int, boxes: int, repeat: bool) -> TilePlan:
    """Warp 0 loads, per k-tile, `boxes` boxes of A (row by) and of B (column bx); affine in the
    CTA's (x, y). `repeat`: also re-reads its first A box at the end (a tile read twice)."""
    base, dx, dy = [], [], []
    for k in range(k_tiles):
        for b in range(boxes):
            base.append((0xA, (64 * k, 8 * b), 1024)); dx.append((0, 0)); dy.append((0, 8 * boxes))
        for b in range(boxes):
            base.append((0xB, (64 * k, 8 * b), 1024)); dx.append((0, 8 * boxes)); dy.append((0, 0))
    if repeat:
        base.append(base[0]); dx.append(dx[0]); dy.append(dy[0])
    return TilePlan([base, []], [[dx, []], [dy, []], None], lambda c: (c % gx, c // gx, 0))


@pytest.mark.parametrize("seed", range(6))
def test_arrays_decide_as_the_definition(seed):
    rnd = random.Random(seed)
    gx, gy = rnd.choice([(4, 3), (6, 5), (8, 2)])
    k_tiles, boxes = rnd.choice([(3, 2), (5, 1), (2, 4)])
    repeat = seed % 2 == 1
    plan = gemm_like_plan(gx, gy, k_tiles, boxes, repeat)
    n = gx * gy
    slots = rnd.choice([2, 3, 5])
    capacity = 1024 * rnd.choice([4, 9, 16, 1000])
    want, counts = reference(plan, n, slots, capacity)
    res = L2Residency(capacity)
    d = DispatchResidency(plan, res, n, slots)
    assert bool(d._dup_rows.any()) == repeat  # the tile-by-tile path is the one taken when a tile repeats
    for c in range(n):
        h = d.classify(c)
        got = [h.of(0, i) for i in range(len(want[c]))]
        assert got == want[c], c
        assert d.tiles(c) == plan.tiles(c)
    assert (res.hits, res.misses) == counts


def test_equal_keys_for_equal_decisions_only():
    plan = gemm_like_plan(4, 4, 2, 2, False)
    d = DispatchResidency(plan, L2Residency(1024 * 1000), 16, 4)
    hits = [d.classify(c) for c in range(16)]
    for a in hits:
        for b in hits:
            same = [a.of(0, i) for i in range(8)] == [b.of(0, i) for i in range(8)]
            assert (a.key == b.key) == same


def test_reread_distance_counts_only_the_grids_resident_ctas():
    """A grid of fewer CTAs than slots has only its own CTAs resident: each warp re-reads its row
    of 4 lines (two passes); with 2 CTAs x 1 warp x 512 B between the reads = 1 KiB <= the
    2 KiB capacity the re-read hits, though slots (8) x 512 B = 4 KiB would not fit."""
    row = [(0x1, (i,), 128) for i in range(4)]
    plan = TilePlan([row + row], [[[(1,)] * 8], None, None], lambda c: (c, 0, 0))
    res = L2Residency(2048)
    d = DispatchResidency(plan, res, 2, 8)
    want, _ = reference(plan, 2, 8, 2048)
    for c in range(2):
        h = d.classify(c)
        got = [h.of(0, i) for i in range(8)]
        assert got == want[c]
        assert [g[0] for g in got[4:]] == [True] * 4


@pytest.mark.parametrize("seed", range(6))
def test_dense_ids_are_the_ranks_of_the_distinct_tiles(seed):
    """Law: `_dense_ids` numbers the distinct (handle, coords) tiles 0.. in their sorted order
    (np.unique's inverse of the tile keys), whether it ranks them through a table (coordinates
    on a grid: a box's rows apart) or by sorting (a span too wide for the table)."""
    rng = np.random.default_rng(seed)
    n, t, dims = int(rng.integers(1, 40)), int(rng.integers(1, 24)), int(rng.integers(1, 4))
    step = rng.integers(1, 129, size=dims)
    coords = rng.integers(-6, 7, size=(n, t, dims)) * step + rng.integers(-1000, 1000, size=dims)
    hidx = rng.integers(0, 3, size=t)
    keys = np.concatenate([np.broadcast_to(hidx[None, :, None], (n, t, 1)), coords], axis=2).reshape(n * t, -1)
    _, want = np.unique(keys, axis=0, return_inverse=True)
    for table in (dispatch_residency.DENSE_TABLE_MAX, 0):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(dispatch_residency, "DENSE_TABLE_MAX", table)
            got = dispatch_residency._dense_ids(hidx, coords)
        assert got.dtype == np.int64 and (got.reshape(-1) == want.reshape(-1)).all()


@pytest.mark.parametrize("seed", range(4))
def test_readers_counted_in_any_order(seed):
    """Law: r (the readers of a tile among CTAs [c, c + slots)) is the same whether `_readers` is
    asked in linear CTA order (the sliding count), out of order (binary search in the codes) or
    jumping ahead past the window; and it is the definition's count."""
    rnd = random.Random(seed)
    gx, gy = rnd.choice([(4, 3), (6, 5), (8, 2)])
    plan = gemm_like_plan(gx, gy, 3, 2, seed % 2 == 1)
    n, slots = gx * gy, rnd.choice([2, 3, 5])
    readers: dict = {}
    for c in range(n):
        for h, co, _ in plan.tiles(c)[0]:
            readers.setdefault((h, co), set()).add(c)

    def want(c):
        return [max(1, sum(1 for x in readers[(h, co)] if c <= x < c + slots)) for h, co, _ in plan.tiles(c)[0]]
    linear = DispatchResidency(plan, L2Residency(1 << 20), n, slots)
    for c in range(n):
        assert linear._readers(linear.ids[c], c).tolist() == want(c), c
    order = list(range(n))
    rnd.shuffle(order)
    shuffled = DispatchResidency(plan, L2Residency(1 << 20), n, slots)
    for c in [0] + order:
        assert shuffled._readers(shuffled.ids[c], c).tolist() == want(c), c
    jumping = DispatchResidency(plan, L2Residency(1 << 20), n, slots)
    for c in range(0, n, slots + 1):
        assert jumping._readers(jumping.ids[c], c).tolist() == want(c), c


def test_dense_ids_of_keys_too_wide_for_one_code():
    """Law (as above) when the packed code would pass 2^62 (coordinates spread over ~2^40 on
    step 1 in 3 dimensions): the ids come from sorting the key rows, still the ranks."""
    rng = np.random.default_rng(7)
    n, t = 5, 9
    coords = rng.integers(-(1 << 40), 1 << 40, size=(n, t, 3))
    coords[0, 0] = coords[1, 1]  # a tile two CTAs share
    hidx = rng.integers(0, 2, size=t)
    hidx[0] = hidx[1]
    keys = np.concatenate([np.broadcast_to(hidx[None, :, None], (n, t, 1)), coords], axis=2).reshape(n * t, -1)
    _, want = np.unique(keys, axis=0, return_inverse=True)
    got = dispatch_residency._dense_ids(hidx, coords)
    assert got.dtype == np.int64 and (got.reshape(-1) == want.reshape(-1)).all()
    assert got[0, 0] == got[1, 1]
