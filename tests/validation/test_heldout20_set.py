"""The eighth held-out GEMM set (validation/heldout20.py), without a GPU and without simulating it:
heldout20 is frozen (its tags' digest), valid, sized, one knob per sweep, coverage enumerated as
heldout14's, a new draw of the shared design (heldout_draw), disjoint from every configuration
recorded under validation/records/h100/ (the exclusion rule: heldout19's 89 included) and from
every other sweep, and gemm_runs wires it in (records carry "issue14-20" and their sweep; no cuBLAS
loops; heldout17's SM-clock probe on; `--list` prints it without simulating; the planned run, probe
included, fits one device call)."""

from __future__ import annotations

import dataclasses

from kernels.params import BOX_ROWS
from tests.validation import heldout_checks as hc
from validation import (gemm_runs, heldout14, heldout15, heldout16, heldout17, heldout18, heldout19, heldout20,
                        heldout_draw)

#: sha256 of heldout20's tags joined by newlines, as drawn on 2026-11-25 (SEED 2020261125)
FROZEN_DIGEST = "9dfa127106269263580745f5747b6f516593f65ecd835d4e7e2f6ddef39709d8"


# ----------------------------------------------------------------------------- a new draw of the design
def test_the_seed_alone_makes_a_new_set():
    ps = set(heldout20.sweep())
    for other in (heldout14, heldout15, heldout16, heldout17, heldout18, heldout19):
        assert not (ps & set(other.sweep())), other.SWEEP_NAME
    same_design = dataclasses.replace(heldout20.held_set(), seed=heldout19.SEED, name="heldout19",
                                      tag="issue14-19", exclude=heldout19.held_set().exclude)
    assert heldout_draw.draw_sweeps(same_design) == heldout19.sweeps()
    assert heldout_draw.draw_singles(same_design) == heldout19.singles()


def test_the_exclusion_hit_nothing():
    """The frozen exclusion rejected no candidate: the draw equals the one without it."""
    hs = dataclasses.replace(heldout20.held_set(), exclude=frozenset())
    assert heldout_draw.draw_sweeps(hs) == heldout20.sweeps()
    assert heldout_draw.draw_singles(hs) == heldout20.singles()


# ----------------------------------------------------------------------------- heldout20
def test_set_is_deterministic_and_frozen():
    hc.check_frozen(heldout20, FROZEN_DIGEST)


def test_no_point_was_recorded_before():
    hc.check_not_recorded_before(heldout20, n_frozen=892, min_recorded=892)  # 892 tags on 2026-11-25 at 84f6bb2
    assert heldout19.held_set().exclude | {p.tag for p in heldout19.sweep()} <= heldout20.held_set().exclude


def test_every_configuration_is_valid_distinct_and_sized():
    hc.check_valid_distinct_and_sized(heldout20, max_configs=90)


def test_each_sweep_varies_one_knob_around_one_shape():
    hc.check_one_knob_per_sweep(heldout20)


def test_coverage_is_enumerated():
    # box-row sweeps take every value that gives a distinct kernel for their tile (heldout_draw:
    # values above a tile extent clamp)
    for s in heldout20.sweeps():
        if s.dim == "box_rows":
            extent = max(s.base.bm, s.base.bn if s.base.layout == "tn" else s.base.bk)
            assert s.labels == tuple(str(r) for r in BOX_ROWS if r <= extent), s.name
    hc.check_coverage(heldout20, box_rows={str(r) for r in BOX_ROWS})
    assert any(max(p.box_rows_a, p.box_rows_b) == 256 for p in heldout20.sweep())


def test_both_tma_issuers_appear_outside_the_issuer_sweeps():
    """The elect issuer is drawn for every sweep base and single point (heldout_draw), not only swept."""
    others = [p for s in heldout20.sweeps() if s.dim != "tma_issuer" for p in s.points] + list(heldout20.singles())
    assert {p.tma_issuer for p in others} == {"lane", "elect"}


# ----------------------------------------------------------------------------- gemm_runs wiring
def test_records_carry_their_set_and_sweep():
    hc.check_records_carry_their_set_and_sweep(heldout20)
    assert heldout20.HELDOUT_TAG == "issue14-20"


def test_run_options_probe_and_plan_fit_one_device_call():
    hc.check_run_options(heldout20)
    assert gemm_runs.SWEEP_PROBE["heldout20"] == gemm_runs.SWEEP_PROBE["heldout17"] == (0.5, 0.25)
    # heldout19's 89 configurations with the probe took 350 s on the device (`--budget 530`); one
    # device call is 600 s; the plan (an over-estimate) stays under that budget so none is cut
    plan = heldout20.plan_seconds(heldout20.sweep())
    assert heldout_draw.plan_seconds(heldout20.sweep()) < plan <= 530


def test_list_prints_the_set_without_running_it(capsys, monkeypatch):
    hc.check_list(heldout20, FROZEN_DIGEST, capsys, monkeypatch)
