"""The pure-Python side of validation/micro_reread.py (the L2 re-read hit-share microbenchmark):
its sweep, the per-round time and the two hit-share derivations, on synthetic records whose
answers follow from the definitions (no GPU)."""

from __future__ import annotations

import pytest

from validation import micro_reread as rr

MIB = rr.MIB


def test_plan_covers_the_footprints_and_store_ratios():
    pts = rr.plan()
    assert {(p["footprint_bytes"] // MIB, p["store_ratio"]) for p in pts} == {
        (f, r) for f in rr.FOOTPRINTS_MIB for r in (0.0, 0.5, 1.0)}
    for f in (32, 40, 44, 48, 52, 56, 64, 80, 96, 128):  # the brief's footprints past 40 MiB
        assert f in rr.FOOTPRINTS_MIB
    assert all(p["rounds"] >= rr.MIN_ROUNDS for p in pts)
    assert len({p["name"] for p in pts}) == len(pts)


def test_per_round_time_cancels_the_first_round_and_overhead():
    # t_R = overhead + cold + (R-1) * round: (t_R - t_1)/(R-1) = round
    assert rr.per_round_s([1.0, 1.1, 0.9], [1.0 + 3 * 0.5, 2.5, 2.4], 4) == pytest.approx(0.5e-3)


def _rec(f: int, ratio: float, tau: float, probe: list[int]) -> dict:
    return {"params": {"footprint_bytes": f * MIB, "store_ratio": ratio},
            "results": {"per_round_s": tau * f * MIB, "probe_cycles": probe}}


def test_derive_maps_the_baselines_to_zero_and_one_and_mixes_linearly():
    t_l2, t_hbm = 1.0e-13, 4.0e-13
    hit, miss = [300] * 100, [900] * 100
    recs = [_rec(4, 0.0, t_l2, hit), _rec(8, 0.0, t_l2 * 1.1, hit), _rec(256, 0.0, t_hbm, miss),
            _rec(512, 0.0, t_hbm, miss),
            _rec(64, 0.0, 0.25 * t_l2 + 0.75 * t_hbm, hit[:25] + miss[:75])]  # 25 % from L2
    rows = {d["footprint_mib"]: d for d in rr.derive(recs)}
    assert rows[4]["hit_share_time"] == pytest.approx(1.0)
    assert rows[512]["hit_share_time"] == pytest.approx(0.0)
    assert rows[64]["hit_share_time"] == pytest.approx(0.25)
    assert rows[64]["resident_share_probe"] == pytest.approx(0.25)
    assert rows[64]["probe_threshold_cycles"] == pytest.approx(600)


def test_probe_threshold_falls_back_to_medians_when_the_probes_overlap():
    assert rr.probe_threshold([100, 200, 1000], [150, 900, 1100]) == pytest.approx((200 + 900) / 2)


def test_missing_out_is_exit_2(capsys):
    assert rr.main([]) == 2
    assert "--out" in capsys.readouterr().err
