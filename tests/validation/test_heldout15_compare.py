"""`--set heldout15` of hopsim.validate.heldout on synthetic records (never by simulating the set):
heldout14_report takes the set module, so heldout15 gets the same metrics, fixed targets and
report as heldout14, with its own membership, title and seed; records of another set (heldout14's)
are refused with one line and exit 2."""

from __future__ import annotations

from tests.validation import heldout_checks as hc
from validation import heldout15


def test_perfect_simulation_of_heldout15_meets_every_target():
    hc.check_perfect_simulation_meets_every_target(heldout15)


def test_heldout15_rows_measured_against_heldout14_membership_count_as_unmeasured():
    hc.check_rows_against_heldout14_count_as_unmeasured(heldout15)


def test_report_names_heldout15_its_seed_and_every_sweep():
    md, _, _ = hc.check_report(heldout15)
    title = md.splitlines()[0]
    assert "heldout15" in title and str(heldout15.SEED) in title and "issue 14:" not in title


def test_cli_refuses_another_sets_records(tmp_path, capsys):
    hc.check_cli_refuses_another_sets_records(heldout15, tmp_path, capsys)


def test_readme_lists_heldout15_only_once_its_report_exists(tmp_path, monkeypatch):
    hc.check_readme_lists_the_set_once_its_report_exists(heldout15, tmp_path, monkeypatch)
