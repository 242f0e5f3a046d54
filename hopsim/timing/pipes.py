"""FIFO servers computed arithmetically: the building block of every timed unit.

A `Pipe` is a single server with a first-come-first-served queue. Instead of a SimPy `Resource`
(one request event, one release, one queue entry per use) it keeps one number, ``next_free``:

    arrival t ──► start = max(t, next_free) ──► [ service s ] ──► next_free = start + s

so a use costs two float operations and the caller does ONE `env.timeout` to the completion time
it computes. This is exact FIFO for arrivals in time order (SimPy calls arrive at non-decreasing
``env.now``). A request reserved for a *future* arrival time (a TMA box whose bytes reach L2 later)
is served after everything already reserved: it never fills an idle gap before ``next_free``
(slightly pessimistic; stated in docs/architecture.md). `GapPipe` is the chip-wide link that
does fill gaps (the shared memory mode's L2 and HBM links, which many SMs reserve for future
arrivals; see its docstring).

A pipe also counts its busy cycles and uses and, when tracing, records one slice per use.

Service times are rounded up to a multiple of 1/1024 cycle (`QUANTUM`). Every time in the model is
then a dyadic rational (integer latencies, env.now, sums of quantised services), which floats add
exactly: a pipe's state relative to any start cycle is the same number whatever the start, so the
CTA memo (memo.py) can compare SM states exactly.
"""

from __future__ import annotations

import bisect
import math
import random


QUANTUM = 1024
"""Service times are multiples of 1/QUANTUM cycle (a power of two: exact in floating point)."""
_ceil = math.ceil


class Pipe:
    """One FIFO server (a unit's issue stage, a data path, a bandwidth link)."""

    __slots__ = ("name", "next_free", "busy", "uses", "slices", "payload")

    def __init__(self, name: str, trace: bool = False):
        self.name = name
        self.next_free = 0.0
        self.busy = 0.0
        self.uses = 0
        self.slices: list[tuple[float, float, str]] | None = [] if trace else None
        self.payload = 0  # bytes (or other units) moved, for statistics

    def reserve(self, arrival: float, service: float, label: str = "") -> float:
        """Queue a use of `service` cycles arriving at `arrival`; return its end time."""
        service = _ceil(service * QUANTUM) / QUANTUM
        start = arrival if arrival > self.next_free else self.next_free
        end = start + service
        self.next_free = end
        self.busy += service
        self.uses += 1
        if self.slices is not None and service > 0:
            self.slices.append((start, end, label))
        return end

    def forget_before(self, now: float) -> None:
        """Nothing to forget (GapPipe keeps its busy intervals)."""

    def busy_fraction(self, total_cycles: float) -> float:
        return min(1.0, self.busy / total_cycles) if total_cycles > 0 else 0.0


class GapPipe(Pipe):
    """A FIFO server whose reservations for a future arrival take the earliest idle interval at
    or after that arrival instead of queueing behind everything already reserved.

    Why: the shared memory mode's L2 and HBM links serve every SM. An SM reserves them for
    future arrivals (an ld.global that waits for room among its outstanding sectors, the L2 leg
    of a miss after its HBM transfer, a TMA box); behind such a reservation, a plain `Pipe` makes
    the other SMs' requests of *now* wait, with the link idle meanwhile: on 4 SMs the softmax
    kernel ran 1.9x longer than with each SM on its own link (issue 15 item 4). On silicon a
    request not yet issued does not hold the link. A reservation of `service` cycles arriving at
    `a` starts at the earliest t >= a such that [t, t + service) is free; arrivals in time order
    give exactly the `Pipe`'s FIFO times (every interval then ends at or before the arrival).

    `forget_before(now)`: intervals that end at or before `now` can take no later reservation
    (arrivals are >= the caller's clock); the owner calls it to keep the list short. Adjacent
    intervals are merged, so a saturated link keeps one interval.
    """

    __slots__ = ("_iv",)

    def __init__(self, name: str, trace: bool = False):
        super().__init__(name, trace)
        self._iv: list[list[float]] = []  # disjoint busy [start, end], sorted, non-adjacent

    def reserve(self, arrival: float, service: float, label: str = "") -> float:
        service = math.ceil(service * QUANTUM) / QUANTUM
        iv = self._iv
        i = bisect.bisect_right(iv, [arrival, math.inf])  # first interval starting after arrival
        t = arrival
        if i and iv[i - 1][1] > t:  # arrival inside a busy interval
            t = iv[i - 1][1]
        while i < len(iv) and iv[i][0] < t + service:  # does not fit before the next one
            t = iv[i][1]
            i += 1
        end = t + service
        if service > 0:
            self._insert(i, t, end)
        if end > self.next_free:
            self.next_free = end
        self.busy += service
        self.uses += 1
        if self.slices is not None and service > 0:
            self.slices.append((t, end, label))
        return end

    def _insert(self, i: int, start: float, end: float) -> None:
        """Insert busy [start, end] before iv[i] (it fits in the gap there), merging neighbours."""
        iv = self._iv
        left = i > 0 and iv[i - 1][1] == start
        right = i < len(iv) and iv[i][0] == end
        if left and right:
            iv[i - 1][1] = iv[i][1]
            del iv[i]
        elif left:
            iv[i - 1][1] = end
        elif right:
            iv[i][0] = start
        else:
            iv.insert(i, [start, end])

    def forget_before(self, now: float) -> None:
        iv = self._iv
        k = bisect.bisect_left(iv, [now, -math.inf])
        while k and iv[k - 1][1] > now:
            k -= 1
        if k > 32:
            del iv[:k]


class Jitter:
    """Optional seeded latency jitter (race flushing): adds 0..max_cycles to a latency.

    Off (the default) it returns the latency unchanged, so runs are deterministic; on, the same
    seed gives the same cycles.
    """

    __slots__ = ("max_cycles", "_rng")

    def __init__(self, seed: int | None = None, max_cycles: int = 0):
        self.max_cycles = int(max_cycles) if seed is not None else 0
        self._rng = random.Random(seed) if self.max_cycles > 0 else None

    def __call__(self, latency: float) -> float:
        if self._rng is None:
            return latency
        return latency + self._rng.randint(0, self.max_cycles)


def ceil_cycles(t: float) -> int:
    """Event times are integer SM cycles: round a computed completion time up."""
    return int(math.ceil(t - 1e-9))
