"""The fifth held-out GEMM set (validation/heldout17.py), without a GPU and without simulating it:
heldout17 is frozen (its tags' digest), valid, sized, one knob per sweep, coverage enumerated as
heldout14's, a new draw of the shared design (heldout_draw), disjoint from every configuration
recorded under validation/records/h100/ (the exclusion rule: heldout16's 85 included) and from
every other sweep, and gemm_runs wires it in (records carry "issue14-17" and their sweep; no cuBLAS
loops; the SM-clock probe on, for this set only; `--list` prints it without simulating; the planned
run, probe included, fits one device call)."""

from __future__ import annotations

import dataclasses

from kernels.params import BOX_ROWS
from tests.validation import heldout_checks as hc
from validation import gemm_runs, heldout14, heldout15, heldout16, heldout17, heldout_draw

#: sha256 of heldout17's tags joined by newlines, as drawn on 2026-11-24 (SEED 1720261124)
FROZEN_DIGEST = "f7db2f618dc1496e4d1cc400f957cd307e67dd50842b83dbeaead99c118a832a"


# ----------------------------------------------------------------------------- a new draw of the design
def test_the_seed_alone_makes_a_new_set():
    ps = set(heldout17.sweep())
    for other in (heldout14, heldout15, heldout16):
        assert not (ps & set(other.sweep())), other.SWEEP_NAME
    same_design = dataclasses.replace(heldout17.held_set(), seed=heldout16.SEED, name="heldout16",
                                      tag="issue14-16", exclude=heldout16.held_set().exclude)
    assert heldout_draw.draw_sweeps(same_design) == heldout16.sweeps()
    assert heldout_draw.draw_singles(same_design) == heldout16.singles()


def test_the_exclusion_hit_nothing():
    """The frozen exclusion rejected no candidate: the draw equals the one without it."""
    hs = dataclasses.replace(heldout17.held_set(), exclude=frozenset())
    assert heldout_draw.draw_sweeps(hs) == heldout17.sweeps()
    assert heldout_draw.draw_singles(hs) == heldout17.singles()


# ----------------------------------------------------------------------------- heldout17
def test_set_is_deterministic_and_frozen():
    hc.check_frozen(heldout17, FROZEN_DIGEST)


def test_no_point_was_recorded_before():
    # worst17/: heldout17's worst configurations re-profiled after its comparison was published
    # (validation/cycle_profile.py --set worst17), on the chip (its own tags) and on one SM
    hc.check_not_recorded_before(heldout17, n_frozen=578, min_recorded=578, after=("worst17",))  # 578 tags on 2026-11-24 at f93b8ef
    assert heldout16.held_set().exclude | {p.tag for p in heldout16.sweep()} <= heldout17.held_set().exclude


def test_every_configuration_is_valid_distinct_and_sized():
    hc.check_valid_distinct_and_sized(heldout17, max_configs=90)


def test_each_sweep_varies_one_knob_around_one_shape():
    hc.check_one_knob_per_sweep(heldout17)


def test_coverage_is_enumerated():
    # box-row sweeps take every value that gives a distinct kernel for their tile (heldout_draw:
    # values above a tile extent clamp); this seed, like heldout16's, drew no box-row sweep on a
    # 256-extent tile, so they reach 128, and 256-row boxes are timed in other points
    for s in heldout17.sweeps():
        if s.dim == "box_rows":
            extent = max(s.base.bm, s.base.bn if s.base.layout == "tn" else s.base.bk)
            assert s.labels == tuple(str(r) for r in BOX_ROWS if r <= extent), s.name
    hc.check_coverage(heldout17, box_rows={str(r) for r in BOX_ROWS if r <= 128})
    assert any(max(p.box_rows_a, p.box_rows_b) == 256 for p in heldout17.sweep())


# ----------------------------------------------------------------------------- gemm_runs wiring
def test_records_carry_their_set_and_sweep():
    hc.check_records_carry_their_set_and_sweep(heldout17)
    assert heldout17.HELDOUT_TAG == "issue14-17"


def test_run_options_probe_and_plan_fit_one_device_call():
    hc.check_run_options(heldout17)
    assert gemm_runs.SWEEP_PROBE["heldout17"] == (0.5, 0.25)  # the probe: heldout17 (and later sets)
    # heldout16's 85 configurations took 254 s on the device (plan 379 s); the probe adds its
    # compiles (same pool) and 0.5 s + overhead per configuration; one device call is 600 s
    plan = heldout17.plan_seconds(heldout17.sweep())
    assert heldout_draw.plan_seconds(heldout17.sweep()) < plan <= 560


def test_list_prints_the_set_without_running_it(capsys, monkeypatch):
    hc.check_list(heldout17, FROZEN_DIGEST, capsys, monkeypatch)
