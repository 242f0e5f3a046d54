"""The CTA memo is not blind to control flow that differs between CTAs (issue 15 item 4,
hopsim/timing/cta_classes.py): a branch on %ctaid taken by one unsampled CTA, a trip count that
is a function of %ctaid, CTAs of which some warps exit early, a partial last CTA, a grid-stride
tail and a trip count loaded from memory. Law: memo=True gives exactly what simulating every CTA
gives (memo=False, same partitioned mode): cycles, bytes, counters, role statistics. Each case
also checks that the differing CTAs matter (the result differs from the kernel in which every CTA
takes the common path), so an equal result is not an accident of a cheap difference."""

from __future__ import annotations

import pytest

from hopsim.functional.executor import CTAExecutor, Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.timing import cta_classes
from hopsim.timing.runner import simulate
from isa.ir.parser import parse
from kernels.membound import MemParams, build_membound
from tests.timing.test_memo_gmem import _gpu, _same

CTAS = 29
HEAD = """
.kernel ctl
.param .u64 a, c
.reg .u32 %r<8>
.reg .u64 %rd<12>
.reg .f32 %f<4>
.reg .pred %p<4>
    mov.u32 %r0, %tid.x;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mad.lo.u32 %r3, %r1, %r2, %r0;
    mul.wide.u32 %rd0, %r3, 4;
    ld.param.u64 %rd3, [a];
    ld.param.u64 %rd5, [c];
    add.u64 %rd6, %rd3, %rd0;
    add.u64 %rd8, %rd5, %rd0;
"""
LOOP = """    ld.global.f32 %f0, [%rd6];
LOOP:
    add.f32 %f0, %f0, %f0;
    sub.u32 %r4, %r4, 1;
    setp.ne.u32 %p1, %r4, 0;
    @%p1 bra LOOP;
STORE:
    st.global.f32 [%rd8], %f0;
    exit;
"""

ONE_CTA = HEAD + """    setp.eq.u32 %p0, %r1, {cta};
    mov.u32 %r4, 1;
    @%p0 bra EXTRA;
    bra GO;
EXTRA:
    mov.u32 %r4, 96;
GO:
""" + LOOP
"""CTA `cta` (not a sample of the tile plan: 0, 1, the middle, the last) loops 96 times, the others once."""

TRIPS = HEAD + """    and.b32 %r4, %r1, 3;
    add.u32 %r4, %r4, {extra};
""" + LOOP
"""A trip count (%ctaid.x mod 4) + extra: a register written at several places (the skeleton run)."""

HALF_EXIT = HEAD + """    setp.eq.u32 %p0, %r1, {cta};
    @%p0 bra HALF;
    bra GO;
HALF:
    setp.ge.u32 %p2, %r0, 128;
    @%p2 exit;
GO:
    mov.u32 %r4, 1;
""" + LOOP
"""In CTA `cta` warps 4..7 exit at once: fewer loads and stores than the plan's affine prediction."""

LOADED = HEAD + """    ld.global.u32 %r4, [%rd6];
    add.u32 %r4, %r4, {extra};
""" + LOOP
"""A trip count loaded from memory (data-dependent control flow: no classes, every CTA in detail)."""


def _sim(text, memo, regs, ctas=CTAS):
    gm = GlobalMemory()
    lch = Launch(grid=ctas, block=256, params={"a": gm.reserve("a", 4 * 256 * ctas),
                                                "c": gm.reserve("c", 4 * 256 * ctas)})
    return simulate(parse(text), lch, _gpu(4, 50 << 20), values=False, gmem=gm, memory="partitioned",
                    memo=memo, regs_per_thread=regs)


def _classes(text, ctas=CTAS):
    k = parse(text)
    gm = GlobalMemory()
    lch = Launch(grid=ctas, block=256, params={"a": gm.reserve("a", 4 * 256 * ctas),
                                                "c": gm.reserve("c", 4 * 256 * ctas)})
    return cta_classes.classify(k, lch, CTAExecutor(k, lch, gm, 0, values=False, checks=False))


@pytest.mark.parametrize("regs", [32, 255])  # 8 CTAs per SM (the SM-class memo), 1 (the per-CTA memo)
@pytest.mark.parametrize("text, common", [
    (ONE_CTA.format(cta=7), ONE_CTA.format(cta=10**6)),
    (TRIPS.format(extra=1), ONE_CTA.format(cta=10**6)),
    (HALF_EXIT.format(cta=13), HALF_EXIT.format(cta=10**6)),
], ids=["branch-on-ctaid", "ctaid-trip-count", "warps-exit-in-one-cta"])
def test_memo_equals_every_cta_simulated_when_control_depends_on_the_cta(text, common, regs):
    fast, full = _sim(text, True, regs), _sim(text, False, regs)
    _same(fast, full)
    if common is not None:  # the differing CTAs change the result: the law has teeth
        other = _sim(common, False, regs)
        assert (other.cycles, other.roles) != (full.cycles, full.roles)


def test_classes_of_the_cases():
    """The classes the memo keys on: the one CTA apart, the four trip counts, the early exits."""
    one = _classes(ONE_CTA.format(cta=7))
    assert one.refused is None and one.count == 2 and one.first == [0, 7] and one(7) == 1
    assert [one(c) for c in range(CTAS)].count(1) == 1
    trips = _classes(TRIPS.format(extra=1))
    assert trips.refused is None and trips.count == 4
    assert all(trips(c) == trips(c % 4) for c in range(CTAS))
    assert _classes(HALF_EXIT.format(cta=13)).first == [0, 13]
    assert _classes(LOADED.format(extra=1)).refused is not None


def test_loaded_trip_count_is_simulated_cta_by_cta():
    fast, full = _sim(LOADED.format(extra=2), True, 32), _sim(LOADED.format(extra=2), False, 32)
    assert fast.extra["sm_memo"].startswith("off: control flow may differ between CTAs")
    _same(fast, full)


@pytest.mark.parametrize("gs, n", [
    (False, 37 * 1024 - 96 * 4),   # a partial last CTA: lanes guarded off
    (True, 13 * 1024 * 3 - 5 * 128),  # grid-stride: the last CTAs make one trip fewer
])
def test_tails_memo_equals_every_cta_simulated(gs, n):
    p = MemParams(family="vecadd", n=n, vec=4, grid_stride=gs, ctas=13 if gs else None)
    runs = []
    for memo in (True, False):
        k, g, b = build_membound(p)
        gm = GlobalMemory()
        params = {name: gm.reserve(name, 4 * p.n) for name in p.buffers}
        params["n"] = p.n
        runs.append(simulate(k, Launch(grid=g, block=b, params=params), _gpu(4, 50 << 20), values=False,
                             gmem=gm, memory="partitioned", memo=memo, regs_per_thread=32))
    fast, full = runs
    assert fast.extra["memo_hits"] > 0
    _same(fast, full)
