"""The second memory-bound held-out set: sizes never measured before, chosen by --set / env."""

import json
import pathlib

import pytest

from validation import portfolio as pf
from validation import portfolio_runs

REC = pathlib.Path(pf.__file__).resolve().parent / "records" / "h100" / "portfolio"


def test_heldout2_sizes_are_new():
    assert not set(pf.HELDOUT2_SIZES) & set(pf.SIZES)
    measured = set()
    for path in REC.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            if line.strip():
                measured.add(json.loads(line).get("params", {}).get("n_floats"))
    assert not set(pf.HELDOUT2_SIZES) & measured


def test_points_follow_the_set(monkeypatch):
    monkeypatch.setenv(pf.SET_ENV, "heldout2")
    pts = pf.points()
    assert {p["n_floats"] for p in pts} == set(pf.HELDOUT2_SIZES)
    assert {p["set"] for p in pts} == {"heldout2"}
    assert len(pts) == len(pf.FAMILIES) * len(pf.VARIANTS) * len(pf.HELDOUT2_SIZES)
    monkeypatch.delenv(pf.SET_ENV)
    assert {p["n_floats"] for p in pf.points()} == set(pf.SIZES)


def test_unknown_set_is_refused(capsys, monkeypatch):
    monkeypatch.delenv(pf.SET_ENV, raising=False)
    assert portfolio_runs.main(["--plan", "--set", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--set" in err[0] and "heldout2" in err[0]
    monkeypatch.setenv(pf.SET_ENV, "nope")
    with pytest.raises(ValueError, match="HOPSIM_PORTFOLIO_SET"):
        pf.points()
