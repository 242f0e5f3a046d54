"""`hopsim swizzle show`: the drawn chunk map is the XOR pattern of the mode."""

from __future__ import annotations

import json

import pytest

from hopsim.cli import main


def test_show_128B_rows(capsys):
    assert main(["swizzle", "show", "128B"]) == 0
    lines = [l for l in capsys.readouterr().out.splitlines() if "|" in l and l.strip()[0].isdigit()]
    assert len(lines) == 8
    for r, line in enumerate(lines):
        cells = line.split("|")[1].split()
        assert cells == [f"c{p ^ (r & 7)}" for p in range(8)]  # physical p holds logical p ^ r


def test_show_json_and_base(capsys):
    assert main(["swizzle", "show", "64B", "--rows", "4", "--base", "1152", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    # base 1152 = 1024 + 128: absolute line 9 -> row phase (9 & 3) = 1 for the first drawn line
    assert got["physical_chunk"][0] == [c ^ 1 for c in range(8)]
    assert got["cute"] == "Swizzle<2,4,3>"


def test_show_none_is_identity(capsys):
    assert main(["swizzle", "show", "none", "--rows", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["physical_chunk"] == [list(range(8))] * 2


@pytest.mark.parametrize("argv,needle", [
    (["swizzle", "show", "96B"], "swizzle='96B'"),
    (["swizzle", "show", "128B", "--rows", "0"], "rows=0"),
    (["swizzle", "show", "128B", "--base", "100"], "base=100"),
])
def test_bad_input(capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1
