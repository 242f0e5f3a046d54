"""Laws of the mbarrier (PTX ISA §9.7.13.15): the phase flips exactly when pending arrivals and the
tx-count both reach zero; counts outside the PTX limits are named errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hopsim.functional.errors import ArrivalCountOutOfRange, BadParity, TxCountOutOfRange
from hopsim.functional.mbarrier import MAX_COUNT, MbarrierState


def test_init_state():
    b = MbarrierState.init(3)
    assert (b.phase, b.pending, b.expected, b.tx_count) == (0, 3, 3, 0)
    # parity 1 names the (virtual) preceding phase of a fresh barrier: already complete (CUTLASS
    # producers start on it); parity 0 is the current phase: not complete.
    assert b.test_wait_parity(1) is True
    assert b.test_wait_parity(0) is False


@pytest.mark.parametrize("count", [0, MAX_COUNT + 1, -1])
def test_init_count_limits(count):
    with pytest.raises(ArrivalCountOutOfRange):
        MbarrierState.init(count)


def test_init_max_count_ok():
    assert MbarrierState.init(MAX_COUNT).pending == MAX_COUNT


def test_arrive_expect_tx_cannot_complete_early():
    b = MbarrierState.init(1)
    assert b.arrive_expect_tx(4096) is False  # expect first, then arrive: tx still 4096
    assert b.phase == 0
    assert b.complete_tx(4000) is False
    assert b.complete_tx(96) is True
    assert (b.phase, b.pending, b.tx_count) == (1, 1, 0)
    assert b.test_wait_parity(0) is True and b.test_wait_parity(1) is False


def test_tma_may_land_before_expect_tx():
    # tx-count may go negative (HPMLL issues the copy before expect_tx)
    b = MbarrierState.init(1)
    assert b.complete_tx(128) is False and b.tx_count == -128
    assert b.arrive() is False  # pending 0 but tx != 0
    assert b.expect_tx(128) is True
    assert b.phase == 1


def test_plain_arrive_before_expect_completes_early():
    b = MbarrierState.init(1)
    assert b.arrive() is True  # the bug CUTLASS avoids with arrive.expect_tx
    assert b.phase == 1


def test_tx_limits():
    b = MbarrierState.init(1)
    b.expect_tx(MAX_COUNT)
    with pytest.raises(TxCountOutOfRange):
        b.expect_tx(1)
    c = MbarrierState.init(1)
    c.complete_tx(MAX_COUNT)
    with pytest.raises(TxCountOutOfRange):
        c.complete_tx(1)


def test_too_many_arrivals():
    b = MbarrierState.init(2)
    with pytest.raises(ArrivalCountOutOfRange):
        b.arrive(3)


def test_parity_must_be_a_bit_and_phase_current_or_previous():
    b = MbarrierState.init(1)
    with pytest.raises(BadParity):
        b.test_wait_parity(2)
    for _ in range(3):
        b.arrive()
    b.check_phase(3)
    b.check_phase(2)
    with pytest.raises(BadParity):
        b.check_phase(1)


ops = st.lists(st.one_of(
    st.tuples(st.just("arrive"), st.integers(1, 3)),
    st.tuples(st.just("expect"), st.integers(0, 5000)),
    st.tuples(st.just("complete"), st.integers(0, 5000)),
), max_size=60)


@settings(max_examples=300, deadline=None)
@given(count=st.integers(1, 4), seq=ops)
def test_phase_flips_exactly_when_arrivals_and_tx_reach_zero(count, seq):
    """Reference model: a phase completes at the first operation after which pending == 0 and
    tx == 0; counting independently of MbarrierState."""
    b = MbarrierState.init(count)
    pending, tx, phase = count, 0, 0
    for op, n in seq:
        if op == "arrive" and n > pending:
            with pytest.raises(ArrivalCountOutOfRange):
                b.arrive(n)
            continue
        if op == "arrive":
            pending -= n
            flipped = b.arrive(n)
        elif op == "expect":
            tx += n
            flipped = b.expect_tx(n)
        else:
            tx -= n
            flipped = b.complete_tx(n)
        expect_flip = pending == 0 and tx == 0
        assert flipped == expect_flip
        if expect_flip:
            phase += 1
            pending = count
        assert (b.phase, b.pending, b.tx_count) == (phase, pending, tx)
        assert b.test_wait_parity(phase & 1) is False
        assert b.test_wait_parity((phase - 1) & 1) is True
