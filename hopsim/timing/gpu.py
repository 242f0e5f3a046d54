"""The CTA scheduler: CTAs of a grid over the SMs of the GPU, in waves.

Model: each SM has `ctas_per_sm` slots (occupancy.py). CTAs are dispatched in linear order
(blockIdx.x fastest). The first wave fills the slots breadth-first (CTA i -> SM i % num_sms for
i < num_sms, then the second slot of each SM, ...), as the hardware spreads a launch over SMs;
the first wave starts at cycle 0 (no freed slot to wait for); afterwards, each time a CTA exits,
the next CTA in order takes its slot `timing.cta_launch_cycles` later (the relaunch gap of a
freed slot, launch2 spin records' clock64 stamps). So with uniform CTAs of D cycles, one per SM:

    total = waves * D + (waves - 1) * cta_launch_cycles,  waves = ceil(num_ctas / (num_sms * ctas_per_sm))

The launch itself (front end, grid completion: `timing.launch_overhead_ns`) and an SM's CTA
dispatch rate (`timing.cta_dispatch_cycles`, a bound on the grid's end, not a per-CTA stagger) are
added per launch by launch.py. Not modelled: GPC/TPC grouping, clusters (CTAs of a cluster
co-scheduled), heterogeneous SMs.
"""

from __future__ import annotations

import math
from typing import Callable

import simpy


def waves(num_ctas: int, num_sms: int, ctas_per_sm: int) -> int:
    return math.ceil(num_ctas / (num_sms * ctas_per_sm))


class CtaScheduler:
    """Runs `run_cta(sm, slot, cta)` (a generator: one CTA's life) over the slots of every SM."""

    def __init__(self, env: simpy.Environment, *, num_sms: int, ctas_per_sm: int, num_ctas: int,
                 launch_cycles: float, run_cta: Callable, on_dispatch: Callable | None = None):
        self.env = env
        self.num_sms = num_sms
        self.ctas_per_sm = ctas_per_sm
        self.num_ctas = num_ctas
        self.launch_cycles = launch_cycles
        self.run_cta = run_cta
        self.on_dispatch = on_dispatch
        self._next = 0
        self.placement: dict[int, tuple[int, int, float]] = {}  # cta -> (sm, slot, start cycle)
        self.sms_used = min(num_sms, num_ctas)
        self.done = env.all_of([env.process(self._slot(sm, slot))
                                for slot in range(ctas_per_sm) for sm in range(num_sms)
                                if slot * num_sms + sm < num_ctas])

    def _slot(self, sm: int, slot: int):
        # breadth-first first wave: slot s of SM m gets CTA s * num_sms + m
        cta = slot * self.num_sms + sm
        first_wave = self.num_sms * self.ctas_per_sm
        ready = 0.0  # the first wave: no freed slot to wait for
        while cta is not None:
            if ready > self.env.now:
                yield self.env.timeout(ready - self.env.now)
            self.placement[cta] = (sm, slot, self.env.now)
            if self.on_dispatch:
                self.on_dispatch(sm, slot, cta)
            yield from self.run_cta(sm, slot, cta)
            cta = self._take(first_wave)
            ready = self.env.now + self.launch_cycles

    def _take(self, first_wave: int):
        if self._next < first_wave:
            self._next = first_wave
        if self._next >= self.num_ctas:
            return None
        cta = self._next
        self._next += 1
        return cta
