"""The pure-Python side of validation/micro_tma_loop.py (the per-tile phases of the persistent tmacopy
loop): its sweep, the shared-memory pinning of CTAs per SM, the tensors, and the phase / attribution
derivations on synthetic stamps whose answers follow from their construction (no GPU; the launch is
a fake bench)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from validation import micro_tma_loop as ml
from validation import portfolio_tmacopy as pt

CU = ml.pathlib.Path(ml.__file__).parent / "cuda" / "micro_tma_loop.cu"


def test_plan_covers_the_brief_and_names_are_unique():
    pts = ml.plan()
    assert len({p["name"] for p in pts}) == len(pts)
    assert {p["stages"] for p in pts} == {1, 2, 4} and {p["cps"] for p in pts} == {1, 2, 4}
    assert {p["where"] for p in pts} == {"l2", "hbm", "hbm_spread"} and {p["grid"] for p in pts} == {"1sm", "all"}
    assert {p["mode"] for p in pts} == {"full", "load_only", "no_fence"}
    assert max(p["box_bytes"] for p in pts) == 16384 and min(p["box_bytes"] for p in pts) == 256
    # every (box, stages, cps) that fits runs every residency x grid x mode
    combos = {(p["box"], p["stages"], p["cps"]) for p in pts}
    assert len(pts) == len(combos) * 3 * 2 * 3
    assert ml.planned_seconds(pts) < 40


def test_the_boxes_are_heldout4_persistent_shapes_or_the_16k_box():
    held = {(dt, br, bc, sw) for dt, _, _, br, bc, sw, _, cps in pt.heldout4_points() if cps is not None}
    for box in ml.BOXES:
        assert box in held or ml.stage_bytes(*box) == 16384


def test_stage_bytes_is_tmacopys():
    for dt, br, bc, sw in ml.BOXES:
        p = {"dtype": dt, "box_rows": br, "box_cols": bc, "swizzle": sw}
        assert ml.stage_bytes(dt, br, bc, sw) == pt.stage_bytes(p)


def test_dynamic_smem_pins_exactly_cps_ctas_per_sm():
    for c in ml.CTAS_PER_SM:
        per_cta = ml.dynamic_smem(c) + ml.STATIC_SMEM + ml.CTA_RESERVED
        assert c * per_cta <= ml.SMEM_PER_SM < (c + 1) * per_cta
        assert ml.dynamic_smem(c) + ml.STATIC_SMEM <= 227 * 1024  # the per-CTA opt-in limit


def test_infeasible_points_are_the_ones_that_do_not_fit():
    assert not ml.feasible(("f16", 128, 64, "128B"), 4, 4)  # 64 KiB of stages > 54 KiB
    assert ml.feasible(("f16", 128, 64, "128B"), 2, 4)


def test_tensors_are_power_of_two_tile_grids_within_budget_and_cold_ones_exceed_l2():
    for dt, br, bc, _ in ml.BOXES:
        for where in ml.WHERE:
            rows, cols = ml.tensor_shape(dt, br, bc, where)
            tiles = (rows // br) * (cols // bc)
            assert rows % br == 0 and tiles & (tiles - 1) == 0
            nbytes = rows * cols * ml.ESIZE[dt]
            if where == "l2":
                assert 4 << 20 < nbytes <= ml.L2_BYTES
            else:
                assert 512 << 20 <= nbytes <= ml.HBM_BYTES  # >= 10x the 50 MiB L2
                # the all-SM walk never wraps: every tile of a launch is a distinct tile
                assert 4 * 132 * ml.NTILES <= tiles


def test_spread_walk_is_a_permutation():
    tiles = 1 << 16
    i = np.arange(tiles, dtype=np.uint64)
    p = (i * ml.SPREAD_MULT) & (tiles - 1)
    assert len(np.unique(p)) == tiles
    assert ml.SPREAD_MULT % 2 == 1 and ml.SPREAD_MULT < 2 ** 32


def test_kernel_source_follows_tmacopys_refill_rule_and_modes():
    src = CU.read_text()
    assert "stages >= 2 ? 1 : 0, dist = stages >= 2 ? stages - 1 : 1" in src
    assert ml.lag_dist(1) == (0, 1) and ml.lag_dist(2) == (1, 1) and ml.lag_dist(4) == (1, 3)
    tc = (ml.pathlib.Path(ml.__file__).parents[1] / "kernels" / "cuda" / "tmacopy.cu").read_text()
    assert "stages >= 2 ? 1 : 0, dist = stages >= 2 ? stages - 1 : 1" in tc
    assert re.search(r"mode == 0\) asm volatile\(\"fence\.proxy\.async\.shared::cta;", src)
    assert ml.MODES == {"full": 0, "load_only": 1, "no_fence": 2}
    assert "LOOP_MAX_STAGES 8" in src and max(ml.STAGES) <= 8


def _synth(workers: int, ntiles: int, stages: int, period: float, lat: float, a: float, b: float,
           smids: list[int]) -> np.ndarray:
    """Out rows of a launch whose every worker lands tile k at 1000 + k * period, issued its load
    `lat` before, issued the store `a` after and left the wait `b` after that."""
    k = np.arange(ntiles)
    landed = 1000 + k * period
    st = np.stack([landed - lat, landed, landed + a, landed + a + b], axis=1)
    rows = []
    for w in range(workers):
        end = landed[-1] + a + b + 10
        hdr = [smids[w], 0, end, 0, round(end / 1.98), w, ntiles, 0]
        rows.append(np.concatenate([hdr, st.ravel()]))
    return np.asarray(rows, dtype=np.int64)


def test_phases_recover_the_constructed_times():
    ntiles, s = 96, 4
    arr = _synth(2, ntiles, s, period=400, lat=1100, a=30, b=50, smids=[0, 0])
    ph = ml.phases([arr, arr], ntiles, s)
    assert ph["tile_cycles"] == pytest.approx(400)
    assert ph["load_latency"] == pytest.approx(1100) and ph["load_latency_first"] == pytest.approx(1100)
    assert ph["store_issue"] == pytest.approx(30) and ph["read_wait"] == pytest.approx(50)
    assert ph["mbar_stall"] == pytest.approx(400 - 30 - 50)
    assert ph["refill_issue"] == pytest.approx(3 * 400 - 1100 - 30 - 50)  # D = 3 tiles ahead
    assert ph["sm_mhz"] == pytest.approx(1980, rel=1e-3)
    assert (ph["lag"], ph["loads_ahead"]) == (1, 3)


def test_placement_checks_the_pinning():
    ok = ml.placement(_synth(2, 8, 1, 100, 10, 1, 1, [0, 0])[:, :ml.HDR], 2, "1sm")
    assert ok == {"workers": 2, "sms_used": 1, "max_workers_per_sm": 2, "sm0_workers": 2, "pinned_ok": True}
    bad = ml.placement(_synth(3, 8, 1, 100, 10, 1, 1, [0, 1, 1])[:, :ml.HDR], 1, "all")
    assert bad["max_workers_per_sm"] == 2 and not bad["pinned_ok"]


class _FakeBench:
    """The launch of a loop whose tile costs `lat` / D + the store's `extra` (full, no_fence) and the
    L2 point's latency 600, the cold ones' 1100."""
    carveout = 100
    nsm = 4

    def launch(self, p):
        _, d = ml.lag_dist(p["stages"])
        lat = 600 if p["where"] == "l2" else 1100
        extra = {"full": 120, "no_fence": 100, "load_only": 0}[p["mode"]]
        workers = p["cps"] * (1 if p["grid"] == "1sm" else self.nsm)
        smids = [0] * workers if p["grid"] == "1sm" else [w // p["cps"] for w in range(workers)]
        rows = _synth(workers, ml.NTILES, p["stages"], lat / d + extra, lat, 20, extra, smids)
        return 0.05, rows, workers


def test_run_point_and_attribution_on_a_fake_bench():
    pts = [p for p in ml.plan() if p["box"] == ml.BOXES[0] and p["stages"] == 2 and p["cps"] == 2]
    recs = {p["name"]: ml.run_point(_FakeBench(), p) for p in pts}
    json.dumps(recs)  # the record is JSON
    rows = {(r["where"], r["grid"]): r for r in ml.attribute(recs)}
    assert len(rows) == 6
    r = rows[("hbm", "1sm")]
    assert r["tile_cycles"] == pytest.approx(1100 + 120) and r["sm_cycles_per_tile"] == pytest.approx(610)
    assert r["store_cost"] == pytest.approx(120) and r["fence_cost"] == pytest.approx(20)
    assert r["first_latency_over_l2"] == pytest.approx(500)
    assert r["tile_cycles_over_l2"] == pytest.approx(500)
    assert r["period_over_latency"] == pytest.approx(1220 / 1100)
    one = recs[[n for n in recs if n.endswith("hbm,1sm,full")][0]]["results"]
    assert one["pinned_ok"] and one["workers"] == 2 and len(one["stamps_rel"]) == 2
    assert "stamps_rel" not in recs[[n for n in recs if n.endswith("hbm,all,full")][0]]["results"]
    assert "f32_b8x8_swnone" in ml.summary(ml.attribute(recs))


def test_a_launch_where_no_cta_worked_is_an_error_not_a_record():
    class _Empty(_FakeBench):
        def launch(self, p):
            return 0.05, np.zeros((0, ml.HDR + 4 * ml.NTILES), dtype=np.int64), 0

    with pytest.raises(RuntimeError, match="no CTA took a ticket"):
        ml.run_point(_Empty(), ml.plan()[0])


def test_missing_out_is_exit_2(capsys):
    assert ml.main([]) == 2
    assert "--out" in capsys.readouterr().err
