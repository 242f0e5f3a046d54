"""Laws of the L2 re-read rule (dispatch_residency: a warp's re-read of a line it read before hits
with the share `reread_hit_fraction` of its reuse footprint; the footprint counts the kernel's
stores): the share is 1 up to the ramp's start, 0 from its end, continuous and non-increasing in
between; a warp's hits follow the share (within one re-read); more stored bytes or a longer row
never give more hits; no ramp is the strict LRU at the residency's capacity; CTAs alike get equal
memo keys."""

from __future__ import annotations

import pytest

from hopsim.timing.dispatch_residency import reread_hit_fraction
from hopsim.timing.memo import DispatchResidency, TilePlan
from hopsim.timing.memory import L2Residency

LINE = 128


def two_pass_plan(lines: int, warps: int = 1, stored: int = 0) -> TilePlan:
    """Each warp reads its row of `lines` 128-B lines twice (a row kernel's two passes); CTA c's
    rows follow CTA 0's (1-D grid); the CTA stores `stored` bytes."""
    base, dx = [], []
    for w in range(warps):
        row = [(0x1, ((w * lines + i) * LINE,), LINE) for i in range(lines)]
        base.append(row + row)
        dx.append([(warps * lines * LINE,)] * (2 * lines))
    plan = TilePlan(base, [dx, None, None], lambda c: (c, 0, 0))
    plan.stored_bytes = stored
    return plan


def rereads_hit(plan: TilePlan, ctas: int, slots: int, capacity: int, ramp) -> list[int]:
    """Per CTA: how many of its re-reads (second passes) hit."""
    d = DispatchResidency(plan, L2Residency(capacity, ramp), ctas, slots)
    out = []
    for c in range(ctas):
        h = d.classify(c)
        out.append(sum(bool(h.of(w, i)[0]) for w, row in enumerate(plan.base)
                       for i in range(len(row) // 2, len(row))))
    return out


def test_share_limits_and_monotone():
    start, end = 29.0, 52.0
    assert reread_hit_fraction(0.0, start, end) == 1.0
    assert reread_hit_fraction(start, start, end) == 1.0
    assert reread_hit_fraction(end, start, end) == 0.0
    assert reread_hit_fraction(10 * end, start, end) == 0.0
    xs = [start + (end - start) * k / 100 for k in range(101)]
    ys = [reread_hit_fraction(x, start, end) for x in xs]
    assert all(a >= b for a, b in zip(ys, ys[1:]))
    assert all(abs(a - b) <= 0.0100001 for a, b in zip(ys, ys[1:]))  # continuous: 1/100 per step
    assert reread_hit_fraction((start + end) / 2, start, end) == pytest.approx(0.5)


@pytest.mark.parametrize("lines", [4, 16, 40])
def test_hits_follow_the_share(lines):
    """A warp's re-reads at footprint F: floor-or-ceil of share(F) x re-reads hit."""
    ctas, slots = 6, 3
    plan = two_pass_plan(lines)
    foot = lines * LINE * slots  # the row between the two reads x the resident warps (1 warp per CTA)
    for start_k, end_k in ((0.5, 2.0), (0.2, 1.1), (1.0, 3.0)):
        ramp = (start_k * foot, end_k * foot)
        want = reread_hit_fraction(foot, *ramp) * lines
        for got in rereads_hit(plan, ctas, slots, 1 << 30, ramp):
            assert abs(got - want) < 1.0 + 1e-9, (ramp, got, want)


def test_stores_count_in_the_footprint():
    """More stored bytes per read byte: never more hits; stores equal to the reads double the
    footprint (same hits as a row twice as long with no stores, per line)."""
    lines, ctas, slots = 16, 4, 4
    foot = lines * LINE * slots
    ramp = (0.8 * foot, 2.4 * foot)
    row_bytes = lines * LINE
    last = None
    for stored in (0, row_bytes // 4, row_bytes // 2, row_bytes, 2 * row_bytes, 4 * row_bytes):
        got = rereads_hit(two_pass_plan(lines, stored=stored), ctas, slots, 1 << 30, ramp)
        share = reread_hit_fraction(foot * (1 + stored / row_bytes), *ramp)
        assert all(abs(g - share * lines) < 1.0 + 1e-9 for g in got)
        if last is not None:
            assert max(got) <= min(last)
        last = got
    assert last == [0] * ctas  # 5 x the footprint is past the ramp's end: every re-read misses


def test_longer_rows_never_hit_more():
    ctas, slots = 4, 4
    ramp = (20 * LINE * slots, 60 * LINE * slots)
    shares = []
    for lines in (8, 16, 24, 32, 48, 64, 80):
        got = rereads_hit(two_pass_plan(lines), ctas, slots, 1 << 30, ramp)
        shares.append(max(got) / lines)
    assert all(a >= b - 1.0 / 8 for a, b in zip(shares, shares[1:]))
    assert shares[0] == 1.0 and shares[-1] == 0.0


def test_no_ramp_is_the_strict_lru_at_the_capacity():
    lines, ctas, slots = 16, 4, 4
    foot = lines * LINE * slots
    assert rereads_hit(two_pass_plan(lines), ctas, slots, foot, None) == [lines] * ctas
    assert rereads_hit(two_pass_plan(lines), ctas, slots, foot - 1, None) == [0] * ctas
    # stores count without a ramp too: the footprint doubles past the capacity
    assert rereads_hit(two_pass_plan(lines, stored=lines * LINE), ctas, slots, foot, None) == [0] * ctas


def test_ctas_alike_get_equal_keys_mid_ramp():
    """Mid-ramp the hits are spread the same way in every CTA (the memo key is equal)."""
    lines, ctas, slots = 24, 8, 4
    plan = two_pass_plan(lines, warps=2)
    foot = lines * LINE * slots * 2
    d = DispatchResidency(plan, L2Residency(1 << 30, (0.5 * foot, 1.5 * foot)), ctas, slots)
    keys = [d.classify(c).key for c in range(ctas)]
    assert len(set(keys)) == 1
