"""mbarrier state: phase, pending arrivals, expected arrivals, tx-count (PTX ISA §9.7.13.15).

Models the 64-bit shared-memory object as a Python record (the opaque bit layout is not modelled;
shared bytes of an mbarrier are not touched). Semantics [PTX-MBAR], docs/hopper-facts.md §6.2:

    init(count)          phase = 0, pending = expected = count, tx = 0
    expect_tx(n)         tx += n
    complete_tx(n)       tx -= n                      then maybe complete the phase
    arrive(c=1)          pending -= c                 then maybe complete the phase
    arrive_expect_tx(n)  expect_tx(n); arrive(1)      (expect first: cannot complete early)
    phase completes  <=> pending == 0 and tx == 0  ->  phase += 1, pending = expected
    test_wait_parity(p)  True iff (phase & 1) != p    (p names the current or previous phase)

Limits (§9.7.13.15.1): expected/init count in [1, 2^20-1]; pending in [0, 2^20-1]; tx-count in
[-(2^20-1), 2^20-1]. A violation raises the named error from `errors.py`.

Not modelled: arrive_drop (expected count of later phases), remote (cluster) barriers, the
returned 64-bit state token.

`phase` is the number of completed phases (an int, not a bit); parity = phase & 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from hopsim.functional.errors import ArrivalCountOutOfRange, BadParity, TxCountOutOfRange

MAX_COUNT = (1 << 20) - 1
"""Largest arrival count and largest |tx-count| (PTX ISA §9.7.13.15.1)."""


@dataclass
class MbarrierState:
    """One mbarrier. Mutable; methods return True when the call completed a phase."""

    expected: int
    pending: int
    tx_count: int = 0
    phase: int = 0
    address: int | None = None

    # ----------------------------------------------------------------------------- construction
    @classmethod
    def init(cls, count: int, address: int | None = None) -> "MbarrierState":
        """mbarrier.init: phase 0, pending = expected = count, tx-count 0."""
        if not 1 <= count <= MAX_COUNT:
            raise ArrivalCountOutOfRange(f"mbarrier.init count {count} outside [1, 2^20-1]", barrier=address, phase=0)
        return cls(expected=count, pending=count, address=address)

    @property
    def parity(self) -> int:
        """Parity of the current (incomplete) phase."""
        return self.phase & 1

    # ----------------------------------------------------------------------------- updates
    def expect_tx(self, nbytes: int) -> bool:
        """mbarrier.expect_tx: tx-count += nbytes. Completes the phase only in the corner case where
        the arrivals are done and a negative tx-count (bytes landed early) returns to 0."""
        self._set_tx(self.tx_count + nbytes, f"expect_tx({nbytes})")
        return self._maybe_complete()

    def complete_tx(self, nbytes: int) -> bool:
        """mbarrier.complete_tx (also what a TMA load does when its bytes land): tx-count -= nbytes."""
        self._set_tx(self.tx_count - nbytes, f"complete_tx({nbytes})")
        return self._maybe_complete()

    def arrive(self, count: int = 1) -> bool:
        """mbarrier.arrive: pending -= count; completes the phase if pending and tx-count are 0."""
        if not 1 <= count <= MAX_COUNT:
            raise ArrivalCountOutOfRange(f"arrive count {count} outside [1, 2^20-1]", barrier=self.address, phase=self.phase)
        if count > self.pending:
            raise ArrivalCountOutOfRange(
                f"arrive({count}) but only {self.pending} of {self.expected} arrivals pending in this phase",
                barrier=self.address, phase=self.phase)
        self.pending -= count
        return self._maybe_complete()

    def arrive_expect_tx(self, nbytes: int, count: int = 1) -> bool:
        """mbarrier.arrive.expect_tx: expect-tx(nbytes) then arrive(count)."""
        self._set_tx(self.tx_count + nbytes, f"arrive.expect_tx({nbytes})")
        return self.arrive(count)

    # ----------------------------------------------------------------------------- waits
    def test_wait_parity(self, parity: int) -> bool:
        """test_wait/try_wait.parity: True iff the phase with this parity has completed, i.e. the
        parity names the immediately preceding phase ((phase & 1) != parity)."""
        if parity not in (0, 1):
            raise BadParity(f"phaseParity {parity} is not 0 or 1", barrier=self.address, phase=self.phase)
        return (self.phase & 1) != parity

    def check_phase(self, wanted: int) -> None:
        """Raise BadParity unless phase number `wanted` is the current or the previous phase."""
        if wanted not in (self.phase, self.phase - 1):
            raise BadParity(
                f"wait names phase {wanted} (parity {wanted & 1}) but the barrier is in phase {self.phase}: "
                f"only the current phase ({self.phase}) or the previous one ({self.phase - 1}) may be waited on",
                barrier=self.address, phase=self.phase)

    # ----------------------------------------------------------------------------- internals
    def _set_tx(self, value: int, what: str) -> None:
        if not -MAX_COUNT <= value <= MAX_COUNT:
            raise TxCountOutOfRange(
                f"{what} moves tx-count from {self.tx_count} to {value}, outside [-(2^20-1), 2^20-1]",
                barrier=self.address, phase=self.phase)
        self.tx_count = value

    def _maybe_complete(self) -> bool:
        if self.pending == 0 and self.tx_count == 0:
            self.phase += 1
            self.pending = self.expected
            return True
        return False
