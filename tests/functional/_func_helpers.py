"""Helpers for the functional-layer tests: build a kernel from IR text and run it."""

from __future__ import annotations

import numpy as np

from hopsim.functional.executor import CTAExecutor, Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.functional.runner import run_kernel


def kernel(src: str):
    from isa.ir import parse
    return parse(src)


def run(src: str, block=128, grid=1, params=None, gmem=None, **kw):
    g = gmem or GlobalMemory()
    k = kernel(src)
    stats = run_kernel(k, Launch(grid=grid, block=block, params=params or {}), g, **kw)
    return g, stats


__all__ = ["kernel", "run", "CTAExecutor", "Launch", "GlobalMemory"]
