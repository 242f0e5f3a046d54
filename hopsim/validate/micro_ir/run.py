"""Run one microbenchmark IR kernel through `simulate()` and read back what its clock reads saw.

The functional layer's %clock64 is a counter (it has no time); here a `ClockedExecutor` (the
`executor_factory` of `simulate`) reads %clock / %clock64 as the cycle of the SM that runs the CTA
(the timed runner binds it, hopsim/timing/sm.py `CtaRun`), so a kernel that stores `t1 - t0` as its
CUDA twin does returns simulated SM cycles in its output buffer. A clock read always starts its ALU
batch (the batch ends before it), so it reads the cycle its batch is issued at, not an earlier one.
"""

from __future__ import annotations

from dataclasses import dataclass

from hopsim.config import load_gpu
from hopsim.functional.executor import CTAExecutor, Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.timing.runner import simulate
from isa.ir.instructions import Mov
from isa.ir.operands import SReg

CLOCKS = frozenset({"%clock", "%clock64"})


def gpu_at(clock_mhz: float | None = None):
    """The calibrated H100 at `clock_mhz` (capped at the spec clock), or at the spec clock."""
    g = load_gpu()
    return g.at_clock(min(float(clock_mhz), float(g.spec.clock_mhz.value))) if clock_mhz else g


class ClockedExecutor(CTAExecutor):
    """A CTAExecutor whose %clock / %clock64 read the simulated SM cycle (see the module doc)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._now = None
        rows = frozenset()
        for op in self.prog.ops:
            ins = op.instr
            if isinstance(ins, Mov) and isinstance(ins.src, SReg) and ins.src.name in CLOCKS:
                rows |= op.rows_written
        self._clock_rows = rows

    def bind_clock(self, now) -> None:
        """Called by the timed runner with a function returning the SM's current cycle."""
        self._now = now

    def issue(self, w: int, batch: int = 1, stop: frozenset | None = None):
        if self._clock_rows:
            stop = self._clock_rows if stop is None else stop | self._clock_rows
        return super().issue(w, batch, stop)

    def clock_tick(self) -> int:
        if self._now is None:  # zero-time sample runs (tile plan) and untimed use
            return super().clock_tick()
        self.clock_reads += 1
        return int(self._now())


@dataclass
class Run:
    """A simulated microbenchmark launch: the result, its global memory, the GPU it ran on."""

    result: object
    gmem: GlobalMemory
    gpu: object
    timed_ctas: frozenset = frozenset()
    """CTAs whose clock reads were SM cycles: those simulated in detail (with memo=True, a CTA
    replayed from an equal one runs untimed and its clock reads are the functional counter)."""

    def out(self, name: str, dtype):
        return self.gmem.view(name, dtype)


def run_kernel(kernel, launch: Launch, gmem: GlobalMemory, gpu, values: bool = True, **kw) -> Run:
    """simulate() the kernel with clock reads in SM cycles (`values`: False for timing-only runs,
    e.g. wgmma without the math; a chase needs its data)."""
    made: list = []

    def factory(cta):
        ex = ClockedExecutor(kernel, launch, gmem, cta, values=values, checks=False)
        made.append(ex)
        return ex
    res = simulate(kernel, launch, gpu, gmem=gmem, executor_factory=factory, values=values, **kw)
    return Run(res, gmem, gpu, frozenset(ex.cta_linear for ex in made if ex._now is not None))
