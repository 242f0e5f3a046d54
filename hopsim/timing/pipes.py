"""FIFO servers computed arithmetically: the building block of every timed unit.

A `Pipe` is a single server with a first-come-first-served queue. Instead of a SimPy `Resource`
(one request event, one release, one queue entry per use) it keeps one number, ``next_free``:

    arrival t ──► start = max(t, next_free) ──► [ service s ] ──► next_free = start + s

so a use costs two float operations and the caller does ONE `env.timeout` to the completion time
it computes. This is exact FIFO for arrivals in time order (SimPy calls arrive at non-decreasing
``env.now``). A request reserved for a *future* arrival time (a TMA box whose bytes reach L2 later)
is served after everything already reserved: it never fills an idle gap before ``next_free``
(slightly pessimistic; stated in docs/architecture.md).

A pipe also counts its busy cycles and uses and, when tracing, records one slice per use.

Service times are rounded up to a multiple of 1/1024 cycle (`QUANTUM`). Every time in the model is
then a dyadic rational (integer latencies, env.now, sums of quantised services), which floats add
exactly: a pipe's state relative to any start cycle is the same number whatever the start, so the
CTA memo (memo.py) can compare SM states exactly.
"""

from __future__ import annotations

import math
import random


QUANTUM = 1024
"""Service times are multiples of 1/QUANTUM cycle (a power of two: exact in floating point)."""


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
        service = math.ceil(service * QUANTUM) / QUANTUM
        start = arrival if arrival > self.next_free else self.next_free
        end = start + service
        self.next_free = end
        self.busy += service
        self.uses += 1
        if self.slices is not None and service > 0:
            self.slices.append((start, end, label))
        return end

    def busy_fraction(self, total_cycles: float) -> float:
        return min(1.0, self.busy / total_cycles) if total_cycles > 0 else 0.0


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
