"""Shared test setup: GPU tests are skipped unless cupy sees an sm90 device."""

from __future__ import annotations

import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]


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
