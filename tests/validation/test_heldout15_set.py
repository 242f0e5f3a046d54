"""The third held-out GEMM set (validation/heldout15.py) and the shared drawing
(validation/heldout_draw.py), without a GPU and without simulating it: heldout14 drawn through the
shared code is exactly the set its committed records measured; heldout15 is frozen (its tags'
digest), valid, sized, one knob per sweep, coverage enumerated as heldout14's, disjoint from every
configuration recorded under validation/records/h100/ (the exclusion rule) and from every other
sweep, and gemm_runs wires it in (records carry "issue14-15" and their sweep; no cuBLAS loops;
`--list` prints it without simulating; the planned run fits one device call)."""

from __future__ import annotations

import dataclasses
import json

from kernels.params import BOX_ROWS
from tests.validation import heldout_checks as hc
from validation import heldout14, heldout15, heldout_draw

#: sha256 of heldout15's tags joined by newlines, as drawn on 2026-11-24 (SEED 1520261124)
FROZEN_DIGEST = "54ca9c6e4a401f949e1efa550e5dff1043057f7fa0affe784b602d3558abf48f"


# ----------------------------------------------------------------------------- the shared drawing
def test_heldout14_through_the_shared_drawing_is_the_measured_set():
    path = hc.H100 / "heldout14" / "gemm_sustained_heldout14.jsonl"
    recorded = [json.loads(x)["tag"] for x in path.read_text().splitlines() if x.strip()]
    assert [p.tag for p in heldout14.sweep()] == recorded  # same tags, same run order
    assert heldout14.SET.exclude == frozenset()


def test_the_seed_alone_makes_a_new_set():
    a, b = set(heldout14.sweep()), set(heldout15.sweep())
    assert not (a & b) and len(heldout15.sweep()) == len(heldout14.sweep())
    same_design = dataclasses.replace(heldout15.held_set(), seed=heldout14.SEED, name="heldout14",
                                      tag="issue14", exclude=frozenset())
    assert heldout_draw.draw_sweeps(same_design) == heldout14.sweeps()


def test_an_excluded_tag_is_redrawn():
    hs = dataclasses.replace(heldout15.held_set(), exclude=frozenset())
    first = heldout_draw.draw_sweeps(hs)[0]
    single = heldout_draw.draw_singles(hs)[0]
    banned = dataclasses.replace(hs, exclude=frozenset({first.points[0].tag, single.tag}))
    again = heldout_draw.draw_sweeps(banned)[0]
    assert first.points[0].tag not in {p.tag for p in again.points} and again.dim == first.dim
    assert heldout_draw.draw_singles(banned)[0].tag != single.tag
    assert heldout_draw.draw_sweeps(banned)[1:] == heldout_draw.draw_sweeps(hs)[1:]  # own streams


def test_recorded_tags_reads_every_kind_and_skips_the_own_folder(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "heldout15").mkdir()
    (tmp_path / "x.json").write_text(json.dumps({"tag": "t1", "params": {}}))
    (tmp_path / "a" / "y.jsonl").write_text(json.dumps({"tag": "t2"}) + "\n" + json.dumps({"tag": "t3"}) + "\n")
    (tmp_path / "heldout15" / "z.jsonl").write_text(json.dumps({"tag": "t4"}) + "\n")
    (tmp_path / "a" / "n.txt").write_text('"tag": "t5"')
    assert heldout_draw.recorded_tags(tmp_path, skip=("heldout15",)) == {"t1", "t2", "t3"}


# ----------------------------------------------------------------------------- heldout15
def test_set_is_deterministic_and_frozen():
    hc.check_frozen(heldout15, FROZEN_DIGEST)


def test_no_point_was_recorded_before():
    hc.check_not_recorded_before(heldout15, n_frozen=405, min_recorded=400)  # 405 tags on 2026-11-24


def test_every_configuration_is_valid_distinct_and_sized():
    hc.check_valid_distinct_and_sized(heldout15, max_configs=90)


def test_each_sweep_varies_one_knob_around_one_shape():
    hc.check_one_knob_per_sweep(heldout15)


def test_coverage_is_enumerated():
    hc.check_coverage(heldout15, box_rows={str(r) for r in BOX_ROWS})


# ----------------------------------------------------------------------------- gemm_runs wiring
def test_records_carry_their_set_and_sweep():
    hc.check_records_carry_their_set_and_sweep(heldout15)
    assert heldout15.HELDOUT_TAG == "issue14-15"


def test_run_options_and_plan_fit_one_device_call():
    hc.check_run_options(heldout15)
    # heldout14's 88 configurations took 253 s on the device against a plan of 391 s; same count here
    assert heldout15.plan_seconds(heldout15.sweep()) <= heldout14.plan_seconds(heldout14.sweep()) <= 420


def test_list_prints_the_set_without_running_it(capsys, monkeypatch):
    hc.check_list(heldout15, FROZEN_DIGEST, capsys, monkeypatch)
