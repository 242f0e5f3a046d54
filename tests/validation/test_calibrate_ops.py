"""hopsim/validate/calibrate_ops.py on synthetic microbench__ops records made from a known model:
a warp of 8 independent chains of an op with latency L issues 8 / L instructions per cycle, one
sub-partition at most 1 / I (I = issue interval), W warps spread over min(W, 4) sub-partitions.
The fit must give back L and I (and the derived quantities) exactly."""

from __future__ import annotations

import json

import pytest

from hopsim.validate.calibrate_ops import AUX, OPS_FILE, derive_ops, op_table

WARPS = (1, 2, 4, 8, 16, 32)
TRUTH = {"fma_f32": (4.0, 0.5), "iadd_xor": (3.0, 0.5), "ex2_ftz": (18.0, 2.0), "shfl_bfly": (23.0, 2.0),
         "rcp_ftz": (4.0 + 20.0, 2.0), "vote_ballot": (3.0 + 9.0, 1.0)}
"""op -> (latency of one step, issue interval per sub-partition); rcp_ftz's step is add.ftz (4, as
fma) + rcp (20); vote_ballot's step is setp (3, as iadd_xor) + vote (9)."""


def _spread(v):
    return {"median": v, "p10": v, "p90": v, "min": v, "max": v, "n": 5}


def model_rate(lat: float, interval: float, warps: int, chains: int = 8) -> float:
    return min(warps * chains / lat, min(warps, 4) / interval)


def synthetic_record(truth=TRUTH, mem=None) -> dict:
    lat, thr = {}, {}
    for op, (L, interval) in truth.items():
        lat[op] = {"reg": {"cycles_per_step": _spread(L), "steps": 2048}}
        thr[op] = {"reg": {str(w): {"warp_inst_per_cycle_per_sm": _spread(model_rate(L, interval, w))} for w in WARPS}}
    for op, (l_dist, l_same, i_dist, i_same, all_sms) in (mem or {}).items():
        lat[op] = {"distinct": {"cycles_per_step": _spread(l_dist)}, "same": {"cycles_per_step": _spread(l_same)}}
        thr[op] = {m: {**{str(w): {"warp_inst_per_cycle_per_sm": _spread(model_rate(lv, iv, w))} for w in WARPS},
                       "all_sms_32_warps": {"warp_inst_per_cycle_per_sm": _spread(all_sms)}}
                   for m, lv, iv in (("distinct", l_dist, i_dist), ("same", l_same, i_same))}
    bars = {"bar_sync": {"1": _spread(20.0), "32": _spread(40.0)}, "bar_pingpong": {"4": _spread(90.0)}}
    return {"kind": "microbench", "name": "ops", "provenance": {"device_name": "NVIDIA H100 80GB HBM3",
            "date_utc": "2026-11-24T12:00:00+00:00", "git_commit": "abcdef0123"},
            "results": {"latency": lat, "throughput": thr, "barriers": bars}}


def test_fit_recovers_latency_and_issue_interval():
    t = op_table(synthetic_record())
    for op, (L, interval) in TRUTH.items():
        aux = TRUTH[AUX[op]][0] if op in AUX else 0.0
        assert t[op].latency_cycles == pytest.approx(L - aux)
        assert t[op].issue_cycles == pytest.approx(interval)
        assert t[op].lane_results_per_cycle == pytest.approx(32 * 4 / interval)
    assert t["rcp_ftz"].latency_cycles == pytest.approx(20.0)
    assert t["vote_ballot"].latency_cycles == pytest.approx(9.0)


def test_warps_at_peak_is_the_fewest_saturating():
    # fma: 8 chains / 4 cycles = 2 per warp > 1 / 0.5: a warp saturates its sub-partition, so 4 warps
    # fill the SM; shfl: 8 / 23 per warp, one sub-partition at 1/2 needs 2 warps -> 8 warps
    t = op_table(synthetic_record())
    assert t["fma_f32"].warps_at_peak == 4
    assert t["shfl_bfly"].warps_at_peak == 8


def test_memory_ops_keep_both_modes_and_the_all_sm_rate():
    t = op_table(synthetic_record(truth={}, mem={"atom_shared_add_u32": (40.0, 90.0, 2.0, 32.0, 0.1)}))
    d, s = t["atom_shared_add_u32"], t["atom_shared_add_u32[same]"]
    assert (d.latency_cycles, d.latency_same_cycles, d.issue_cycles) == (40.0, 90.0, pytest.approx(2.0))
    assert s.latency_cycles == 90.0 and s.issue_cycles == pytest.approx(32.0)
    assert d.all_sms_warp_inst_per_cycle == 0.1


def test_derive_ops_names_sources_and_barriers(tmp_path):
    assert derive_ops(tmp_path) == {}
    (tmp_path / OPS_FILE).write_text(json.dumps(synthetic_record()))
    f = derive_ops(tmp_path)
    v, src = f["ops.ex2_ftz.issue_cycles"]
    assert v == pytest.approx(2.0) and src.startswith("measured: microbench__ops.json (NVIDIA H100")
    assert "commit abcdef0" in src
    assert f["ops.bar_sync_cycles[32]"][0] == 40.0
    assert f["ops.bar_handoff_cycles[4]"][0] == 45.0


def _class_record(truth: dict, a: float, b: float) -> dict:
    """A record made from the model the class fields describe: one warp runs 32 steps + 3 loop-control
    integer instructions per iteration, each at its gap (iadd_xor's for the loop), so its rate is
    32 / (32 g + 3 g_alu) (35 g_alu for iadd_xor itself); all sub-partitions busy give 4 / P
    (iadd_xor's pipe carries the loop too: 4 / (P x 35 / 32)); bar.sync[W] = a + b (W - 1) + ceil(W / 4)."""
    import math
    g_alu = truth["iadd_xor"][1]
    lat, thr = {}, {}
    for op, (L, g, P) in truth.items():
        it = 35 * g_alu if op == "iadd_xor" else 32 * g + 3 * g_alu
        peak = 4 / (P * 35 / 32) if op == "iadd_xor" else 4 / P
        lat[op] = {"reg": {"cycles_per_step": _spread(L)}}
        thr[op] = {"reg": {"1": {"warp_inst_per_cycle_per_sm": _spread(32 / it)},
                           "32": {"warp_inst_per_cycle_per_sm": _spread(peak)}}}
    bars = {"bar_sync": {str(w): _spread(a + b * (w - 1) + math.ceil(w / 4)) for w in WARPS}}
    return {"provenance": {"device_name": "NVIDIA H100 80GB HBM3", "date_utc": "2026-11-24", "git_commit": "abcdef0"},
            "results": {"latency": lat, "throughput": thr, "barriers": bars}}


def test_class_fields_recover_the_model(tmp_path):
    from hopsim.timing.opclass import FIELDS
    from hopsim.validate.calibrate_ops import derive_op_fields
    truth = {"iadd_xor": (5.0, 1.5, 1.0625), "fma_f32": (4.0, 1.25, 1.125), "shfl_bfly": (24.0, 4.5, 4.0)}
    (tmp_path / OPS_FILE).write_text(json.dumps(_class_record(truth, 26.5, 1.75)))
    f = derive_op_fields(tmp_path, FIELDS)
    for cls, op in (("alu", "iadd_xor"), ("fp32", "fma_f32"), ("shfl", "shfl_bfly")):
        L, g, P = truth[op]
        lat_f, pipe_f, warp_f = FIELDS[cls]
        assert (f[lat_f][0], f[warp_f][0], f[pipe_f][0]) == (pytest.approx(L), pytest.approx(g), pytest.approx(P)), cls
        assert f[lat_f][1].startswith("measured: microbench__ops.json (NVIDIA H100")
    assert f["bar_sync_cycles"][0] == pytest.approx(26.5)
    assert f["bar_sync_per_warp_cycles"][0] == pytest.approx(1.75)
    assert derive_op_fields(tmp_path / "none", FIELDS) == {}


def test_atomic_fields_recover_the_unit_model(tmp_path):
    """A record from the unit model: distinct words at 1 / pipe per SM cycle, one word at 1 / (pipe +
    31 lane) with 32 warps; latency L, one word L + 31 c; one warp gap g (+ 3 loop instructions)."""
    from hopsim.timing.atomics import FIELDS as AF
    from hopsim.validate.calibrate_ops import derive_atomic_fields
    g_alu, pipe, lane, L, c, g = 1.5, 1.25, 1.0, 27.0, 2.0, 5.0
    rec = _class_record({"iadd_xor": (5.0, g_alu, 1.0625)}, 26.0, 1.5)
    rate = lambda v: {"warp_inst_per_cycle_per_sm": _spread(v)}  # noqa: E731
    for op in ("atom_shared_add_u32", "red_shared_add_u32"):
        rec["results"]["throughput"][op] = {"distinct": {"1": rate(32 / (32 * g + 3 * g_alu)), "32": rate(1 / pipe)},
                                            "same": {"1": rate(0.5 / (pipe + 31 * lane)), "32": rate(1 / (pipe + 31 * lane))}}
        rec["results"]["latency"][op] = {"distinct": {"cycles_per_step": _spread(L)},
                                         "same": {"cycles_per_step": _spread(L + 31 * c)}}
    (tmp_path / OPS_FILE).write_text(json.dumps(rec))
    f = derive_atomic_fields(tmp_path, AF)
    a = AF["atom_shared_u32"]
    got = [f[a[q]][0] for q in ("pipe", "lane", "warp", "latency", "conflict_latency")]
    assert got == [pytest.approx(v) for v in (pipe, lane, g, L, c)]
    assert "red_shared_u32_latency_cycles" not in f and f["red_shared_u32_warp_cycles"][0] == pytest.approx(g)
