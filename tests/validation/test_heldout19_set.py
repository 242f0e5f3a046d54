"""The seventh held-out GEMM set (validation/heldout19.py), without a GPU and without simulating it:
heldout19 is frozen (its tags' digest), valid, sized, one knob per sweep, coverage enumerated as
heldout14's, a new draw of the shared design (heldout_draw), disjoint from every configuration
recorded under validation/records/h100/ (the exclusion rule: heldout18's 86 included) and from
every other sweep, and gemm_runs wires it in (records carry "issue14-19" and their sweep; no cuBLAS
loops; heldout17's SM-clock probe on; `--list` prints it without simulating; the planned run, probe
included, fits one device call)."""

from __future__ import annotations

import dataclasses

from kernels.params import BOX_ROWS
from tests.validation import heldout_checks as hc
from validation import gemm_runs, heldout14, heldout15, heldout16, heldout17, heldout18, heldout19, heldout_draw

#: sha256 of heldout19's tags joined by newlines, as drawn on 2026-11-24 (SEED 1920261124)
FROZEN_DIGEST = "7ffd4103dc99a9282344b023e6c29cfaece514f4534229dc00ca96cc5e539ead"


# ----------------------------------------------------------------------------- a new draw of the design
def test_the_seed_alone_makes_a_new_set():
    ps = set(heldout19.sweep())
    for other in (heldout14, heldout15, heldout16, heldout17, heldout18):
        assert not (ps & set(other.sweep())), other.SWEEP_NAME
    same_design = dataclasses.replace(heldout19.held_set(), seed=heldout18.SEED, name="heldout18",
                                      tag="issue14-18", exclude=heldout18.held_set().exclude)
    assert heldout_draw.draw_sweeps(same_design) == heldout18.sweeps()
    assert heldout_draw.draw_singles(same_design) == heldout18.singles()


def test_the_exclusion_hit_nothing():
    """The frozen exclusion rejected no candidate: the draw equals the one without it."""
    hs = dataclasses.replace(heldout19.held_set(), exclude=frozenset())
    assert heldout_draw.draw_sweeps(hs) == heldout19.sweeps()
    assert heldout_draw.draw_singles(hs) == heldout19.singles()


# ----------------------------------------------------------------------------- heldout19
def test_set_is_deterministic_and_frozen():
    hc.check_frozen(heldout19, FROZEN_DIGEST)


def test_no_point_was_recorded_before():
    hc.check_not_recorded_before(heldout19, n_frozen=803, min_recorded=803)  # 803 tags on 2026-11-24 at 4dd29d9
    assert heldout18.held_set().exclude | {p.tag for p in heldout18.sweep()} <= heldout19.held_set().exclude


def test_every_configuration_is_valid_distinct_and_sized():
    hc.check_valid_distinct_and_sized(heldout19, max_configs=90)


def test_each_sweep_varies_one_knob_around_one_shape():
    hc.check_one_knob_per_sweep(heldout19)


def test_coverage_is_enumerated():
    # box-row sweeps take every value that gives a distinct kernel for their tile (heldout_draw:
    # values above a tile extent clamp)
    for s in heldout19.sweeps():
        if s.dim == "box_rows":
            extent = max(s.base.bm, s.base.bn if s.base.layout == "tn" else s.base.bk)
            assert s.labels == tuple(str(r) for r in BOX_ROWS if r <= extent), s.name
    hc.check_coverage(heldout19, box_rows={str(r) for r in BOX_ROWS})
    assert any(max(p.box_rows_a, p.box_rows_b) == 256 for p in heldout19.sweep())


def test_both_tma_issuers_appear_outside_the_issuer_sweeps():
    """The elect issuer is drawn for every sweep base and single point (heldout_draw), not only swept."""
    others = [p for s in heldout19.sweeps() if s.dim != "tma_issuer" for p in s.points] + list(heldout19.singles())
    assert {p.tma_issuer for p in others} == {"lane", "elect"}


# ----------------------------------------------------------------------------- gemm_runs wiring
def test_records_carry_their_set_and_sweep():
    hc.check_records_carry_their_set_and_sweep(heldout19)
    assert heldout19.HELDOUT_TAG == "issue14-19"


def test_run_options_probe_and_plan_fit_one_device_call():
    hc.check_run_options(heldout19)
    assert gemm_runs.SWEEP_PROBE["heldout19"] == gemm_runs.SWEEP_PROBE["heldout17"] == (0.5, 0.25)
    # heldout18's 86 configurations with the probe took 344 s on the device (`--budget 530`); one
    # device call is 600 s; the plan (an over-estimate) stays under that budget so none is cut
    plan = heldout19.plan_seconds(heldout19.sweep())
    assert heldout_draw.plan_seconds(heldout19.sweep()) < plan <= 530


def test_list_prints_the_set_without_running_it(capsys, monkeypatch):
    hc.check_list(heldout19, FROZEN_DIGEST, capsys, monkeypatch)
