"""House rule: no source file outside tests/ over 700 lines (small modules, each about one thing).

Every .py file under the shipped packages (isa/, kernels/, validation/, hopsim/) and benchmarks/
must have at most MAX_LINES lines; a file that grows past it is split into modules named after
what they model (e.g. hopsim/timing/memo.py -> tile_plan.py, dispatch_residency.py).
"""

from __future__ import annotations

import pathlib

REPO = pathlib.Path(__file__).resolve().parents[1]
#: The rule, as a fixed number (COMMON.md / the project's standards): not derived from the code.
MAX_LINES = 700
DIRS = ("hopsim", "isa", "kernels", "validation", "benchmarks")


def _lines(path: pathlib.Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


def test_no_source_file_over_the_limit():
    files = [p for d in DIRS for p in sorted((REPO / d).rglob("*.py")) if "__pycache__" not in p.parts]
    assert len(files) > 50, f"found only {len(files)} .py files under {DIRS}: wrong root?"
    over = [f"{p.relative_to(REPO)}: {n} lines" for p in files if (n := _lines(p)) > MAX_LINES]
    assert over == [], f"files over {MAX_LINES} lines (split them): " + "; ".join(over)
