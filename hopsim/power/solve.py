"""The sustained SM clock: the highest supported clock at which the predicted power stays within
the limits (hopsim/power/model.py), solved as a fixed point over re-timed simulations.

    sol = solve_clock(lambda mhz: simulate(... gpu.at_clock(mhz) ...), events_of, PowerModel.load())
    sol.boost, sol.sustained                # ClockPoint: mhz, cycles, time_ms, power_w, energy_mj

A benchmark loop (launches back to back) settles at the sustained clock; a single launch shorter
than `governor_reaction_s` (the step record: the clock starts to fall ~87 ms after load on) runs
at the boost clock. Power is the steady NVML averaged reading the driver holds to the limit.

The solve: simulate at the boost clock; if that is within the limits, sustained = boost. Else
estimate each candidate clock's cycles from the clocks already simulated (linear interpolation
in f between them, constant beyond), bisect the supported list for the highest clock within the
limits, simulate there, and repeat until the chosen clock is one already simulated (at most
`MAX_SIMS` simulations). Rates = counts / time(f), so a memory-bound launch, whose cycles fall
as f falls (L2/HBM bandwidth per SM cycle grows), speeds up less and draws less power; the
counts (FLOPs, bytes, instructions) are taken from the nearest simulated clock. Results are
cached by clock (`cache`), so `--clock MHZ` and the boost/sustained pair share simulations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from hopsim.power.model import Events, PowerModel
from isa.errors import InputError

MAX_SIMS = 5
CLOCK_WORDS = ("sustained", "boost")


def parse_clock(value: Any, model: PowerModel) -> str | float:
    """'sustained' | 'boost' | a clock in MHz within the supported range; InputError otherwise."""
    lo, hi = model.v["clock_min_mhz"], model.f_max
    allowed = (f"sustained, boost, or an SM clock in MHz from {lo:.0f} to {hi:.0f} "
               f"(supported clocks step {model.v['clock_step_mhz']:.0f} MHz)")
    text = str(value).strip().lower()
    if text in CLOCK_WORDS:
        return text
    try:
        mhz = float(text)
    except ValueError:
        raise InputError("clock", value, allowed) from None
    if not lo <= mhz <= hi:
        raise InputError("clock", value, allowed)
    return mhz


@dataclass
class ClockPoint:
    """One simulated clock: time, predicted power and energy of one launch."""

    mhz: float
    cycles: int
    time_ms: float
    power_w: float
    energy_mj: float
    binding: str | None          # the limit exceeded at this clock ('power', 'tensor'), None within
    result: Any = field(repr=False, default=None)

    def to_json(self) -> dict:
        return {"clock_mhz": self.mhz, "cycles": self.cycles, "time_ms": self.time_ms,
                "power_w": self.power_w, "energy_mj": self.energy_mj, "over_limit": self.binding}


@dataclass
class ClockSolution:
    boost: ClockPoint
    sustained: ClockPoint
    limit: str | None            # what holds the clock below boost ('power', 'tensor'), None: boost
    simulations: int
    single_launch_boost: bool    # one launch at boost ends before the governor reacts
    reaction_s: float

    def summary(self) -> str:
        b, s = self.boost, self.sustained
        why = {"power": f"power limit", "tensor": "tensor-throughput cap", None: "within the limits"}[self.limit]
        return (f"boost ({b.mhz:.0f} MHz): {b.time_ms:.4g} ms, {b.power_w:.0f} W; "
                f"sustained ({s.mhz:.0f} MHz, {s.power_w:.0f} W, {why}): {s.time_ms:.4g} ms, "
                f"{s.energy_mj:.4g} mJ/launch")


class ClockSolver:
    """Simulations by clock (cached) and the power model; `point(mhz)` and `solve()`."""

    def __init__(self, simulate_at: Callable[[float], Any], events_of: Callable[[Any], Events],
                 model: PowerModel):
        self.simulate_at, self.events_of, self.model = simulate_at, events_of, model
        self.cache: dict[float, Any] = {}

    def result(self, mhz: float) -> Any:
        mhz = float(mhz)
        if mhz not in self.cache:
            self.cache[mhz] = self.simulate_at(mhz)
        return self.cache[mhz]

    def point(self, mhz: float) -> ClockPoint:
        res = self.result(mhz)
        secs = res.cycles / (float(mhz) * 1e6)
        ev = self.events_of(res)
        p = self.model.power_w(mhz, ev, secs) if secs > 0 else self.model.v["floor_w"]
        return ClockPoint(float(mhz), res.cycles, secs * 1e3, p, p * secs * 1e3,
                          self.model.binding(mhz, ev, secs) if secs > 0 else None, res)

    def _estimate_ok(self, mhz: float) -> bool:
        """Within the limits at `mhz`, cycles interpolated from the simulated clocks."""
        known = sorted(self.cache)
        if mhz in self.cache:
            cycles = self.cache[mhz].cycles
        elif mhz <= known[0] or mhz >= known[-1]:
            cycles = self.cache[known[0] if mhz <= known[0] else known[-1]].cycles
        else:
            hi = min(k for k in known if k > mhz)
            lo = max(k for k in known if k < mhz)
            w = (mhz - lo) / (hi - lo)
            cycles = (1 - w) * self.cache[lo].cycles + w * self.cache[hi].cycles
        nearest = min(known, key=lambda k: abs(k - mhz))
        secs = cycles / (mhz * 1e6)
        return secs <= 0 or self.model.binding(mhz, self.events_of(self.cache[nearest]), secs) is None

    def _highest_ok(self) -> float:
        clocks = self.model.supported_clocks()           # highest first; ok is monotone in f
        if self._estimate_ok(clocks[0]):
            return clocks[0]
        lo, hi = 0, len(clocks) - 1                      # clocks[lo] not ok
        if not self._estimate_ok(clocks[hi]):
            return clocks[hi]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._estimate_ok(clocks[mid]):
                hi = mid
            else:
                lo = mid
        return clocks[hi]

    def solve(self) -> ClockSolution:
        boost = self.point(self.model.f_max)
        f = self.model.f_max
        for _ in range(MAX_SIMS - 1):
            f = self._highest_ok()
            if f in self.cache:
                break
            self.result(f)
        sus = self.point(f)
        limit = None if f == boost.mhz else (boost.binding or "power")
        react = self.model.v["governor_reaction_s"]
        return ClockSolution(boost, sus, limit, len(self.cache), boost.time_ms * 1e-3 < react, react)
