"""The sixth held-out GEMM set (validation/heldout18.py), without a GPU and without simulating it:
heldout18 is frozen (its tags' digest), valid, sized, one knob per sweep, coverage enumerated as
heldout14's, a new draw of the shared design (heldout_draw), disjoint from every configuration
recorded under validation/records/h100/ (the exclusion rule: heldout17's 87 included) and from
every other sweep, and gemm_runs wires it in (records carry "issue14-18" and their sweep; no cuBLAS
loops; heldout17's SM-clock probe on; `--list` prints it without simulating; the planned run, probe
included, fits one device call)."""

from __future__ import annotations

import dataclasses

from kernels.params import BOX_ROWS
from tests.validation import heldout_checks as hc
from validation import gemm_runs, heldout14, heldout15, heldout16, heldout17, heldout18, heldout_draw

#: sha256 of heldout18's tags joined by newlines, as drawn on 2026-11-24 (SEED 1820261124)
FROZEN_DIGEST = "d2122d197b0410bbff539040cc9ab0ecc182d62d2711a7dda277542718baac9b"


# ----------------------------------------------------------------------------- a new draw of the design
def test_the_seed_alone_makes_a_new_set():
    ps = set(heldout18.sweep())
    for other in (heldout14, heldout15, heldout16, heldout17):
        assert not (ps & set(other.sweep())), other.SWEEP_NAME
    same_design = dataclasses.replace(heldout18.held_set(), seed=heldout17.SEED, name="heldout17",
                                      tag="issue14-17", exclude=heldout17.held_set().exclude)
    assert heldout_draw.draw_sweeps(same_design) == heldout17.sweeps()
    assert heldout_draw.draw_singles(same_design) == heldout17.singles()


def test_the_exclusion_hit_nothing():
    """The frozen exclusion rejected no candidate: the draw equals the one without it."""
    hs = dataclasses.replace(heldout18.held_set(), exclude=frozenset())
    assert heldout_draw.draw_sweeps(hs) == heldout18.sweeps()
    assert heldout_draw.draw_singles(hs) == heldout18.singles()


# ----------------------------------------------------------------------------- heldout18
def test_set_is_deterministic_and_frozen():
    hc.check_frozen(heldout18, FROZEN_DIGEST)


def test_no_point_was_recorded_before():
    hc.check_not_recorded_before(heldout18, n_frozen=669, min_recorded=669)  # 669 tags on 2026-11-24 at 0e32c95
    assert heldout17.held_set().exclude | {p.tag for p in heldout17.sweep()} <= heldout18.held_set().exclude


def test_every_configuration_is_valid_distinct_and_sized():
    hc.check_valid_distinct_and_sized(heldout18, max_configs=90)


def test_each_sweep_varies_one_knob_around_one_shape():
    hc.check_one_knob_per_sweep(heldout18)


def test_coverage_is_enumerated():
    # box-row sweeps take every value that gives a distinct kernel for their tile (heldout_draw:
    # values above a tile extent clamp)
    for s in heldout18.sweeps():
        if s.dim == "box_rows":
            extent = max(s.base.bm, s.base.bn if s.base.layout == "tn" else s.base.bk)
            assert s.labels == tuple(str(r) for r in BOX_ROWS if r <= extent), s.name
    hc.check_coverage(heldout18, box_rows={str(r) for r in BOX_ROWS})
    assert any(max(p.box_rows_a, p.box_rows_b) == 256 for p in heldout18.sweep())


# ----------------------------------------------------------------------------- gemm_runs wiring
def test_records_carry_their_set_and_sweep():
    hc.check_records_carry_their_set_and_sweep(heldout18)
    assert heldout18.HELDOUT_TAG == "issue14-18"


def test_run_options_probe_and_plan_fit_one_device_call():
    hc.check_run_options(heldout18)
    assert gemm_runs.SWEEP_PROBE["heldout18"] == gemm_runs.SWEEP_PROBE["heldout17"] == (0.5, 0.25)
    # heldout17's 87 configurations with the probe took 332 s on the device (plan 494 s); one
    # device call is 600 s
    plan = heldout18.plan_seconds(heldout18.sweep())
    assert heldout_draw.plan_seconds(heldout18.sweep()) < plan <= 560


def test_list_prints_the_set_without_running_it(capsys, monkeypatch):
    hc.check_list(heldout18, FROZEN_DIGEST, capsys, monkeypatch)
