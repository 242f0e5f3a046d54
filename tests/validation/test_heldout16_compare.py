"""`--set heldout16` of hopsim.validate.heldout on synthetic records (never by simulating the set):
heldout14_report takes the set module, so heldout16 gets the same metrics, fixed targets and
report as heldout14, with its own membership, title (issues 14-16) and seed (heldout15's title as
published); records of another set (heldout14's) are refused with one line and exit 2."""

from __future__ import annotations

from hopsim.validate import heldout14_report
from tests.validation import heldout_checks as hc
from validation import heldout15, heldout16


def test_perfect_simulation_of_heldout16_meets_every_target():
    hc.check_perfect_simulation_meets_every_target(heldout16)


def test_heldout16_rows_measured_against_heldout14_membership_count_as_unmeasured():
    hc.check_rows_against_heldout14_count_as_unmeasured(heldout16)


def test_report_names_heldout16_its_seed_and_every_sweep():
    md, s, rows = hc.check_report(heldout16)
    title = md.splitlines()[0]
    assert "heldout16 (issues 14-16, seed 1620261124)" in title and str(heldout16.SEED) in title
    h15 = heldout14_report.markdown(s, rows, "e" * 64, "", hset=heldout15)  # heldout15's as published
    assert h15.startswith("# Held-out comparison, heldout15 (issues 14 and 15, seed 1520261124):")


def test_cli_refuses_another_sets_records(tmp_path, capsys):
    hc.check_cli_refuses_another_sets_records(heldout16, tmp_path, capsys)


def test_readme_lists_heldout16_only_once_its_report_exists(tmp_path, monkeypatch):
    hc.check_readme_lists_the_set_once_its_report_exists(heldout16, tmp_path, monkeypatch)
