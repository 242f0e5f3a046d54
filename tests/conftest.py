"""Shared test setup: GPU tests are skipped unless cupy sees an sm90 device; how many processes
run the tests (pyproject's `-n auto`, pytest-xdist)."""

from __future__ import annotations

import os
import pathlib

import pytest
from hypothesis import settings

REPO = pathlib.Path(__file__).resolve().parents[1]

# Property tests draw the same examples in every run and in every test process (a seed derived
# from the test, no example database): a run never depends on luck, on the order the tests run
# in, or on what an earlier run left in .hypothesis/.
settings.register_profile("hopsim", derandomize=True, database=None)
settings.load_profile("hopsim")


MAX_WORKERS = 2
"""Test processes at most: each holds up to ~0.7 GB (the simulator's caches), and the suite stays
under 1.5 GB in all (issue 11; 1.37 GB measured with 2, processes' PSS summed); `-n N` or
PYTEST_XDIST_AUTO_NUM_WORKERS=N asks for more."""


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: one worker per core (at most MAX_WORKERS) when the run is the whole suite or a
    directory; 0 (the tests run in this process, no worker start-up) when every argument names a
    test file or a single test, where starting workers costs more than it saves.
    PYTEST_XDIST_AUTO_NUM_WORKERS overrides (xdist's own variable)."""
    env = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if env:
        return int(env)
    args = [a.split("::")[0] for a in config.args]
    if args and all(a.endswith(".py") for a in args):
        return 0
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


def _have_sm90() -> bool:
    try:
        import cupy  # noqa: F401

        return cupy.cuda.runtime.getDeviceCount() > 0 and cupy.cuda.Device(0).compute_capability == "90"
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _have_sm90():
        return
    skip = pytest.mark.skip(reason="needs an sm90 GPU with cupy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
