"""Each protocol/race check fires as a named error that carries warp, instruction, barrier, phase."""

from __future__ import annotations

import pytest

from hopsim.functional.checks import (
    ArrivalCountOutOfRange, BadParity, Deadlock, DivergentBranch, MbarrierNotInitialised,
    TxCountOutOfRange,
)
from hopsim.functional.errors import ProtocolError
from isa.errors import HopsimError

from _func_helpers import run

PRE = """
.kernel t
.shared .align 1024 .b8 smem[4096]
.reg .u32 %r<8>
.reg .pred %p<4>
    mov.u32 %r0, %tid.x;
    setp.eq.u32 %p0, %r0, 0;
@%p0 mbarrier.init.shared::cta.b64 [smem+8], 1;
    bar.sync 0;
"""


def test_errors_are_hopsim_errors():
    assert issubclass(Deadlock, ProtocolError) and issubclass(ProtocolError, HopsimError)


def test_deadlock_names_warp_barrier_and_phase():
    src = PRE + """
@%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [smem+8], 1024;
W:
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [smem+8], 0;
@!%p1 bra W;
    exit;
"""
    with pytest.raises(Deadlock) as ei:
        run(src, block=64)
    e = ei.value
    assert e.barrier == 8 and e.phase == 0 and e.warp == 0
    assert "mbarrier.try_wait.parity" in e.text
    msg = str(e)
    assert "warp 0" in msg and "warp 1" in msg and "tx-count 1024" in msg and "0x8 phase 0" in msg
    assert len(e.waiters) == 2


def test_deadlock_on_bar_sync_missing_warp():
    src = """
.kernel t
.reg .u32 %r<4>
.reg .pred %p<2>
    mov.u32 %r0, %tid.x;
    setp.lt.u32 %p0, %r0, 32;
@%p0 bra SKIP;
    bar.sync 1, 128;
SKIP:
    exit;
"""
    with pytest.raises(Deadlock, match="bar.sync 1 generation 0"):
        run(src, block=128)


def test_tx_count_out_of_range():
    src = PRE + """
@%p0 mbarrier.expect_tx.shared::cta.b64 [smem+8], 1048575;
@%p0 mbarrier.expect_tx.shared::cta.b64 [smem+8], 1;
    exit;
"""
    with pytest.raises(TxCountOutOfRange) as ei:
        run(src, block=32)
    assert ei.value.barrier == 8 and ei.value.index is not None and "expect_tx" in ei.value.text


def test_arrival_count_out_of_range():
    src = PRE + """
@%p0 mbarrier.arrive.shared::cta.b64 _, [smem+8], 2;
    exit;
"""
    with pytest.raises(ArrivalCountOutOfRange):
        run(src, block=32)


def test_init_count_out_of_range():
    src = """
.kernel t
.shared .align 8 .b8 smem[64]
.reg .u32 %r<2>
    mov.u32 %r0, 1048576;  // a register count: the IR cannot reject it statically
    mbarrier.init.shared::cta.b64 [smem], %r0;
    exit;
"""
    with pytest.raises(ArrivalCountOutOfRange):
        run(src, block=32)


def test_mbarrier_not_initialised():
    src = """
.kernel t
.shared .align 8 .b8 smem[64]
    mbarrier.arrive.shared::cta.b64 _, [smem+16];
    exit;
"""
    with pytest.raises(MbarrierNotInitialised) as ei:
        run(src, block=32)
    assert ei.value.barrier == 16


def test_divergent_bra_uni():
    """`bra.uni` asserts a non-divergent branch (PTX ISA): a divergent one is a named error (a plain
    `bra` diverges: tests/functional/test_divergence.py)."""
    src = """
.kernel t
.reg .u32 %r<4>
.reg .pred %p<2>
    mov.u32 %r0, %tid.x;
    setp.lt.u32 %p0, %r0, 5;
@%p0 bra.uni L;
    add.u32 %r1, %r0, 1;
L:
    exit;
"""
    with pytest.raises(DivergentBranch) as ei:
        run(src, block=32)
    assert ei.value.warp == 0 and ei.value.text.startswith("@%p0 bra.uni") and ei.value.line == 7


def test_bad_parity_when_a_warp_misses_a_phase():
    """The barrier completes phases 0 and 1 while warp 1 still means to wait on phase 0 (parity 0
    now names the current phase 2): ambiguous on hardware -> BadParity."""
    src = PRE + """
    shr.u32 %r1, %r0, 5;
    setp.eq.u32 %p2, %r1, 1;
@%p2 bra LATE;
@%p0 mbarrier.arrive.shared::cta.b64 _, [smem+8];
@%p0 mbarrier.arrive.shared::cta.b64 _, [smem+8];
    bar.sync 1, 64;
    exit;
LATE:
    bar.sync 1, 64;
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [smem+8], 0;
    exit;
"""
    with pytest.raises(BadParity) as ei:
        run(src, block=64)
    assert ei.value.barrier == 8 and ei.value.phase == 2 and ei.value.warp == 1
    # the same kernel is legal (it just blocks forever) without the phase discipline check
    with pytest.raises(Deadlock):
        run(src, block=64, check_phases=False)


def test_fresh_barrier_parity_one_is_the_previous_phase():
    src = PRE + """
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [smem+8], 1;
    exit;
"""
    run(src, block=64)  # returns at once (CUTLASS producer start state); no error
