"""The fast, deterministic slice of the CLI fuzz harness (tests/fuzz/cli_fuzz.py): 300 seeded
cases over every command; each must end (exit 0, 1 or 2) without a traceback, a hang, a second
error line or a partial output. The full run (>= 10,000 cases) is

    python3 tests/fuzz/cli_fuzz.py --cases 12000 --seed 1
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

_spec = importlib.util.spec_from_file_location("cli_fuzz", pathlib.Path(__file__).with_name("cli_fuzz.py"))
cli_fuzz = sys.modules.setdefault("cli_fuzz", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(cli_fuzz)

SLICE, SEED = 300, 11


def test_the_slice_reaches_every_command():
    """The cases are drawn per surface; the slice exercises each top-level command."""
    firsts = {cli_fuzz.make_case(SEED, i).argv[0] if cli_fuzz.make_case(SEED, i).argv else "" for i in range(SLICE)}
    assert {"simulate", "sweep", "bank-conflicts", "desc", "swizzle", "config", "validate"} <= firsts


def test_fuzz_slice_no_traceback_no_hang_no_partial_output():
    res = cli_fuzz.summary(cli_fuzz.run_cases(SLICE, SEED, timeout_s=60))
    assert res["failures"] == [], res["failures"][:5]
    assert res["cases"] == SLICE
