"""`--set heldout20` of hopsim.validate.heldout on synthetic records (never by simulating the set):
heldout20 gets heldout14's metrics, fixed targets and report, with its own membership, title
(issues 13-20) and seed; records of another set are refused; the README lists it only once its
report exists. Its records carry heldout17's SM-clock probe; the third basis is tested once, for
heldout17 (tests/validation/test_heldout17_compare.py), by the same code."""

from __future__ import annotations

from tests.validation import heldout_checks as hc
from validation import heldout20


def test_perfect_simulation_of_heldout20_meets_every_target():
    hc.check_perfect_simulation_meets_every_target(heldout20)


def test_heldout20_rows_measured_against_heldout14_membership_count_as_unmeasured():
    hc.check_rows_against_heldout14_count_as_unmeasured(heldout20)


def test_report_names_heldout20_its_seed_and_every_sweep():
    md, _, _ = hc.check_report(heldout20)
    assert "heldout20 (issues 13-20, seed 2020261125)" in md.splitlines()[0]


def test_cli_refuses_another_sets_records(tmp_path, capsys):
    hc.check_cli_refuses_another_sets_records(heldout20, tmp_path, capsys)


def test_readme_lists_heldout20_only_once_its_report_exists(tmp_path, monkeypatch):
    hc.check_readme_lists_the_set_once_its_report_exists(heldout20, tmp_path, monkeypatch)
