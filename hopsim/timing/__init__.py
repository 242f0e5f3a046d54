"""When it happens: SimPy processes and resources (warps, TMA unit, tensor cores, smem port,
L2/HBM). Never computes a data value; asks the functional layer for effects.

Public entry: `simulate(kernel, launch, gpu=load_gpu(), values=True, trace=False) -> SimResult`
(runner.py); the architecture page is docs/architecture.md."""

from hopsim.timing.runner import simulate

__all__ = ["simulate"]
