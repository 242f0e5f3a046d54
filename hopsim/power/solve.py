"""The sustained SM clock: the highest supported clock at which the predicted power stays within
the limits (hopsim/power/model.py), solved as a fixed point over re-timed simulations.

    sol = solve_clock(lambda mhz: simulate(... gpu.at_clock(mhz) ...), events_of, PowerModel.load())
    sol.boost, sol.sustained                # ClockPoint: mhz, cycles, time_ms, power_w, energy_mj

A benchmark loop (launches back to back) settles at the sustained clock; a single launch shorter
than `governor_reaction_s` (the step record: the clock starts to fall ~87 ms after load on) runs
at the boost clock. Power is the steady NVML averaged reading the driver holds to the limit.

The solve (at most `MAX_SIMS` simulations; usually 2: the boost clock and the chosen one):

  1. Simulate at the boost clock f_b. Within the limits there: sustained = boost (1 simulation).
  2. Estimate every supported clock's cycles from the clocks simulated so far (`cycles_estimate`),
     with the physical model cycles(f) = C_sm + T_mem * f: SM-clock work (issue, tensor cores,
     shared memory) is a fixed number of cycles, memory time (L2/HBM latency and bandwidth) a fixed
     number of nanoseconds, so a memory-bound launch's cycles fall as f falls.
       - at a simulated clock: its cycles;
       - between two simulated clocks: linear interpolation (the chord);
       - below the lowest simulated clock f_0: the affine line through it with slope
           the prior (1 - s) * cycles(f_b) / f_b, where s = `sm_share(boost result)` is the share
             of the boost cycles that are SM-clock work (given by the caller: a GEMM's is
             hopsim/gemm_sim.py `sm_share`, tensor-busy or SM-clock warp share; else no prior);
           with two or more simulated clocks, the smaller of the prior and the secant of the two
             lowest (measured cycles(f) is convex: its slope shrinks as f falls and the launch
             turns SM-bound, so the secant over-estimates the slope below it);
           no prior and one simulated clock: slope 0 (cycles held constant).
         The slope is clamped to [0, cycles(f_0) / f_0]: cycles never rise and time never falls
         as f falls.
     Counts (FLOPs, bytes, instructions) come from the nearest simulated clock.
  3. Predicted power is monotone in f under these estimates, so bisection over the supported list
     finds the highest clock whose estimate is within the limits; simulate it (its report's cycles
     come from that simulation) and repeat from 2 until the chosen clock is one already simulated.
     The result: the chosen clock is simulated and within the limits by its own simulation, and
     the next higher supported clock is estimated over the limit (it lies between two simulated
     clocks, or is one). When the estimate is exact for affine cycles(f) the loop ends after 2
     simulations. If `MAX_SIMS` is reached first, the highest simulated clock within the limits
     is chosen (the lowest simulated one if none is).

Rates = counts / time(f), so a memory-bound launch, whose cycles fall as f falls (L2/HBM bandwidth
per SM cycle grows), speeds up less and draws less power. Results are cached by clock (`cache`),
so `--clock MHZ` and the boost/sustained pair share simulations.
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

    mhz: float                   # the SM clock NVML reports (what the power model is fitted at)
    cycles: int
    time_ms: float
    power_w: float
    energy_mj: float
    binding: str | None          # the limit exceeded at this clock ('power', 'tensor'), None within
    result: Any = field(repr=False, default=None)
    sm_mhz: float | None = None  # the clock the SMs count at (mhz x the solver's clock_ratio)

    def to_json(self) -> dict:
        return {"clock_mhz": self.mhz, "sm_clock_mhz": self.sm_mhz, "cycles": self.cycles, "time_ms": self.time_ms,
                "power_w": self.power_w, "energy_mj": self.energy_mj, "over_limit": self.binding}


def _clk(pt: ClockPoint) -> str:
    """'1980 MHz', or '1980 MHz, SMs at 1849' where the SMs' own clock differs from the reported one."""
    if pt.sm_mhz is None or abs(pt.sm_mhz - pt.mhz) < 0.5:
        return f"{pt.mhz:.0f} MHz"
    return f"{pt.mhz:.0f} MHz, SMs at {pt.sm_mhz:.0f}"


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
        return (f"boost ({_clk(b)}): {b.time_ms:.4g} ms, {b.power_w:.0f} W; "
                f"sustained ({_clk(s)}, {s.power_w:.0f} W, {why}): {s.time_ms:.4g} ms, "
                f"{s.energy_mj:.4g} mJ/launch")


class ClockSolver:
    """Simulations by clock (cached) and the power model; `point(mhz)` and `solve()`.
    `sm_share(result)` -> [0, 1]: the share of a run's cycles that is SM-clock work (the prior of
    step 2 in the module docstring; None: 1, cycles held constant below the boost clock).
    Clocks here are the SM clock NVML reports (the power model's); `simulate_at` receives the clock
    the SMs count at, `clock_ratio` x it (a tensor kernel: `tensor_sm_clock_ratio`; else 1)."""

    def __init__(self, simulate_at: Callable[[float], Any], events_of: Callable[[Any], Events],
                 model: PowerModel, sm_share: Callable[[Any], float] | None = None,
                 clock_ratio: float = 1.0):
        self.simulate_at, self.events_of, self.model = simulate_at, events_of, model
        self.sm_share = sm_share
        self.clock_ratio = float(clock_ratio)
        self.cache: dict[float, Any] = {}

    def sm_mhz(self, mhz: float) -> float:
        """The clock the SMs count at when NVML reports `mhz`."""
        return float(mhz) * self.clock_ratio

    def result(self, mhz: float) -> Any:
        mhz = float(mhz)
        if mhz not in self.cache:
            self.cache[mhz] = self.simulate_at(self.sm_mhz(mhz))
        return self.cache[mhz]

    def point(self, mhz: float) -> ClockPoint:
        return self.point_of(mhz, self.result(mhz))

    def point_of(self, mhz: float, res: Any) -> ClockPoint:
        """The point of result `res` simulated at the SMs' clock for the reported clock `mhz`."""
        secs = res.cycles / (self.sm_mhz(mhz) * 1e6)
        ev = self.events_of(res)
        p = self.model.power_w(mhz, ev, secs) if secs > 0 else self.model.v["floor_w"]
        return ClockPoint(float(mhz), res.cycles, secs * 1e3, p, p * secs * 1e3,
                          self.model.binding(mhz, ev, secs) if secs > 0 else None, res, self.sm_mhz(mhz))

    def _slope_below(self, known: list[float]) -> float:
        """Cycles per MHz below the lowest simulated clock (secant or prior, clamped)."""
        f0, c0 = known[0], self.cache[known[0]].cycles
        slope = None
        if self.sm_share is not None:                    # the prior, from the boost run
            top = known[-1]
            share = min(1.0, max(0.0, float(self.sm_share(self.cache[top]))))
            slope = (1.0 - share) * self.cache[top].cycles / top
        if len(known) >= 2:
            f1, c1 = known[1], self.cache[known[1]].cycles
            secant = (c1 - c0) / (f1 - f0)
            slope = secant if slope is None else min(slope, secant)
        return min(max(slope or 0.0, 0.0), c0 / f0)

    def cycles_estimate(self, mhz: float) -> float:
        """Cycles at `mhz` from the simulated clocks (module docstring, step 2)."""
        if mhz in self.cache:
            return float(self.cache[mhz].cycles)
        known = sorted(self.cache)
        if mhz < known[0]:
            return self.cache[known[0]].cycles - self._slope_below(known) * (known[0] - mhz)
        if mhz > known[-1]:
            return float(self.cache[known[-1]].cycles)
        hi = min(k for k in known if k > mhz)
        lo = max(k for k in known if k < mhz)
        w = (mhz - lo) / (hi - lo)
        return (1 - w) * self.cache[lo].cycles + w * self.cache[hi].cycles

    def estimate_ok(self, mhz: float) -> bool:
        """Within the limits at `mhz` with the estimated cycles (the simulated ones at a simulated clock)."""
        cycles = self.cycles_estimate(mhz)
        nearest = min(self.cache, key=lambda k: abs(k - mhz))
        secs = cycles / (self.sm_mhz(mhz) * 1e6)
        return secs <= 0 or self.model.binding(mhz, self.events_of(self.cache[nearest]), secs) is None

    def _highest_ok(self) -> float:
        clocks = self.model.supported_clocks()           # highest first; ok is monotone in f
        if self.estimate_ok(clocks[0]):
            return clocks[0]
        lo, hi = 0, len(clocks) - 1                      # clocks[lo] not ok
        if not self.estimate_ok(clocks[hi]):
            return clocks[hi]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.estimate_ok(clocks[mid]):
                hi = mid
            else:
                lo = mid
        return clocks[hi]

    def solve(self) -> ClockSolution:
        boost = self.point(self.model.f_max)
        f = self.model.f_max
        for _ in range(MAX_SIMS):
            f = self._highest_ok()
            if f in self.cache or len(self.cache) >= MAX_SIMS:
                break
            self.result(f)
        if f not in self.cache:                          # MAX_SIMS reached before the fixed point
            ok = [k for k in self.cache if self.estimate_ok(k)]
            f = max(ok) if ok else min(self.cache)
        sus = self.point(f)
        limit = None if f == boost.mhz else (boost.binding or "power")
        react = self.model.v["governor_reaction_s"]
        return ClockSolution(boost, sus, limit, len(self.cache), boost.time_ms * 1e-3 < react, react)
