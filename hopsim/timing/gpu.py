"""The CTA scheduler: CTAs of a grid over the SMs of the GPU, in waves.

Model: each SM has `ctas_per_sm` slots (occupancy.py). CTAs are dispatched in linear order
(blockIdx.x fastest). The first wave fills the slots breadth-first (CTA i -> SM i % num_sms for
i < num_sms, then the second slot of each SM, ...), as the hardware spreads a launch over SMs;
afterwards, each time a CTA exits, the next CTA in order takes its slot, after
`timing.cta_launch_cycles`. So with uniform CTAs of D cycles:

    total = waves * (cta_launch_cycles + D),  waves = ceil(num_ctas / (num_sms * ctas_per_sm))

Not modelled: GPC/TPC grouping, clusters (CTAs of a cluster co-scheduled), the launch latency of
the grid itself, heterogeneous SMs.
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
        while cta is not None:
            if self.launch_cycles:
                yield self.env.timeout(self.launch_cycles)
            self.placement[cta] = (sm, slot, self.env.now)
            if self.on_dispatch:
                self.on_dispatch(sm, slot, cta)
            yield from self.run_cta(sm, slot, cta)
            cta = self._take(first_wave)

    def _take(self, first_wave: int):
        if self._next < first_wave:
            self._next = first_wave
        if self._next >= self.num_ctas:
            return None
        cta = self._next
        self._next += 1
        return cta
