"""The fourth held-out GEMM set (validation/heldout16.py), without a GPU and without simulating it:
heldout16 is frozen (its tags' digest), valid, sized, one knob per sweep, coverage enumerated as
heldout14's, a new draw of the shared design (heldout_draw), disjoint from every configuration
recorded under validation/records/h100/ (the exclusion rule: heldout16's 88 included) and from
every other sweep, and gemm_runs wires it in (records carry "issue14-16" and their sweep; no cuBLAS
loops; `--list` prints it without simulating; the planned run fits one device call)."""

from __future__ import annotations

import dataclasses

from kernels.params import BOX_ROWS
from tests.validation import heldout_checks as hc
from validation import heldout14, heldout15, heldout16, heldout_draw

#: sha256 of heldout16's tags joined by newlines, as drawn on 2026-11-24 (SEED 1620261124)
FROZEN_DIGEST = "ee429c892d1e1eb3273c22d2a3784cc3307295bb48aa67cae70569d7b8fe2145"


# ----------------------------------------------------------------------------- a new draw of the design
def test_the_seed_alone_makes_a_new_set():
    ps = set(heldout16.sweep())
    for other in (heldout14, heldout15):
        assert not (ps & set(other.sweep())), other.SWEEP_NAME
    same_design = dataclasses.replace(heldout16.held_set(), seed=heldout15.SEED, name="heldout15",
                                      tag="issue14-15", exclude=heldout15.held_set().exclude)
    assert heldout_draw.draw_sweeps(same_design) == heldout15.sweeps()
    assert heldout_draw.draw_singles(same_design) == heldout15.singles()


def test_the_exclusion_hit_nothing():
    """The frozen exclusion rejected no candidate: the draw equals the one without it."""
    hs = dataclasses.replace(heldout16.held_set(), exclude=frozenset())
    assert heldout_draw.draw_sweeps(hs) == heldout16.sweeps()
    assert heldout_draw.draw_singles(hs) == heldout16.singles()


# ----------------------------------------------------------------------------- heldout16
def test_set_is_deterministic_and_frozen():
    hc.check_frozen(heldout16, FROZEN_DIGEST)


def test_no_point_was_recorded_before():
    hc.check_not_recorded_before(heldout16, n_frozen=493, min_recorded=493)  # 493 tags on 2026-11-24 at 6a1f542
    assert heldout15.held_set().exclude | {p.tag for p in heldout15.sweep()} <= heldout16.held_set().exclude


def test_every_configuration_is_valid_distinct_and_sized():
    hc.check_valid_distinct_and_sized(heldout16, max_configs=90)


def test_each_sweep_varies_one_knob_around_one_shape():
    hc.check_one_knob_per_sweep(heldout16)


def test_coverage_is_enumerated():
    # box-row sweeps take every value that gives a distinct kernel for their tile (heldout_draw:
    # values above a tile extent clamp); this seed drew no box-row sweep on a 256-extent tile, so
    # they reach 128 (heldout14/15 reached 256), and 256-row boxes are timed in other points
    for s in heldout16.sweeps():
        if s.dim == "box_rows":
            extent = max(s.base.bm, s.base.bn if s.base.layout == "tn" else s.base.bk)
            assert s.labels == tuple(str(r) for r in BOX_ROWS if r <= extent), s.name
    hc.check_coverage(heldout16, box_rows={str(r) for r in BOX_ROWS if r <= 128})
    assert any(max(p.box_rows_a, p.box_rows_b) == 256 for p in heldout16.sweep())


# ----------------------------------------------------------------------------- gemm_runs wiring
def test_records_carry_their_set_and_sweep():
    hc.check_records_carry_their_set_and_sweep(heldout16)
    assert heldout16.HELDOUT_TAG == "issue14-16"


def test_run_options_and_plan_fit_one_device_call():
    hc.check_run_options(heldout16)
    # heldout14's 88 configurations took 253 s on the device against a plan of 391 s (heldout15's 88:
    # 273 s wall); heldout16 has 85
    assert heldout16.plan_seconds(heldout16.sweep()) <= heldout14.plan_seconds(heldout14.sweep()) <= 420


def test_list_prints_the_set_without_running_it(capsys, monkeypatch):
    hc.check_list(heldout16, FROZEN_DIGEST, capsys, monkeypatch)
