"""The pipe taken apart (validation/power/pipe2.py, kernel pipe2 in power_light.cu) without a GPU:
the opt-in selection and its GPU time, the design laws the lead reads the answer from (every mode
at one common stage rate; the wgmma-rate / byte-rate triangle), host/device agreement on the mode
codes, and bad parameters rejected with one line naming the field."""

from __future__ import annotations

import re

import pytest

from validation.power import benches, light, pipe2, run


def _selected():
    return [p for p in run.selectable() if p["name"] == "idle" or p["name"].startswith(("pipe2_", "idle_after"))]


def test_pipe2_selection_is_opt_in_and_fits_its_budget(capsys):
    pts = _selected()
    assert pts[0]["name"] == "idle" and pts[-1]["name"] == "idle_after"   # drift read off both ends
    assert all(p["family"] == "light_pipe2" for p in pts[1:-1]) and "light_pipe2" in run.FILES
    names = [p["name"] for p in pts]
    assert len(names) == len(set(names))
    # GPU time: load + per-point setup, the nvcc allowance aside (it overlaps the idle point)
    assert sum(p["seconds"] + run.SETUP_S for p in pts) <= 100.0
    assert run.planned_seconds(pts) <= 170.0                               # the --budget-s given
    assert not any(p["family"] == "light_pipe2" for p in run.plan())       # default run unchanged
    # the older selections do not pick these points up
    assert not any(p["name"].startswith(("light_", "light_pipe")) for p in pts[1:-1])
    assert run.main(["--plan", "--only", "pipe2_,idle_after", "--budget-s", "170"]) == 0
    assert "planned" in capsys.readouterr().out


def test_the_duty_ladder_is_its_own_selection(capsys):
    """The ladder (full pipe, 8 KB, 2 stages, periods between the paced point and unpaced) runs
    only with --only pipe2ladder_, never with the first run's pipe2_ selection."""
    sel = [p for p in run.selectable() if p["name"].startswith("pipe2ladder_")]
    assert len(sel) == len(pipe2.LADDER_PERIODS)
    assert all(p["kw"]["mode"] == "full" and p["kw"]["req_bytes"] == 8192 and p["kw"]["stages"] == 2 for p in sel)
    assert all(p["kw"]["period"] in pipe2.LADDER_PERIODS for p in sel)
    assert run.main(["--plan", "--only", "pipe2ladder_,idle_after", "--budget-s", "170"]) == 0
    assert "planned" in capsys.readouterr().out


def test_every_mode_runs_at_the_common_rate():
    kws = [p["kw"] for p in pipe2.plan()]
    common = {k["mode"] for k in kws if k["period"] == pipe2.PERIOD and k["reuse"] == 1 and k["sms"] is None
              and k["stages"] == 2 and k["req_bytes"] == 8192}
    assert common == set(pipe2.MODES)


def test_the_wgmma_byte_triangle_is_planned():
    # (P, reuse 1), (2P, reuse 2), (2P, reuse 1) of full: same wgmma rate at half the bytes, and
    # half of both; notma repeats the first two (the same wgmma rate at half the handshakes)
    key = {(k["mode"], k["period"], k["reuse"]) for k in (p["kw"] for p in pipe2.plan())}
    P = pipe2.PERIOD
    assert {("full", P, 1), ("full", 2 * P, 2), ("full", 2 * P, 1), ("notma", P, 1), ("notma", 2 * P, 2)} <= key
    reqs = {k["req_bytes"] for k in (p["kw"] for p in pipe2.plan()) if k["mode"] == "full"}
    stages = {k["stages"] for k in (p["kw"] for p in pipe2.plan()) if k["mode"] == "full"}
    assert {8192, 2048} <= reqs and {2, 4} <= stages


def test_shared_memory_fits_and_holds_one_cta_per_sm():
    for p in pipe2.plan():
        smem = pipe2.smem_bytes(p["kw"]["mode"], p["kw"]["stages"])
        assert light.RESIDENT_SMEM <= smem <= pipe2.SMEM_LIMIT
        assert 2 * smem > 228 * 1024           # H100: 228 KB of shared memory per SM
    assert pipe2.smem_bytes("nobar", 2) == 4 * light.PIPE_STAGE + 1024


def test_mode_codes_agree_with_the_kernel():
    src = benches.SOURCES["power_light"].read_text()
    m = re.search(r"constexpr int P2_FULL = (\d), P2_NOTMA = (\d), P2_NOWGMMA = (\d), P2_NOBAR = (\d);"
                  r"\s*// (\d) = baronly", src)
    assert m is not None
    assert [int(x) for x in m.groups()] == [pipe2.MODES[k] for k in ("full", "notma", "nowgmma", "nobar", "baronly")]
    assert f"PIPE_MAX_STAGES = {pipe2.MAX_STAGES};" in src
    assert "counts[5]" in src and len(pipe2.COUNTERS) == 6


def test_point_names():
    assert pipe2.point_name("full", 8192, 2, 1, 2400) == "pipe2_full_req8192_s2_p2400"
    assert pipe2.point_name("notma", 8192, 2, 2, 4800) == "pipe2_notma_s2_r2_p4800"
    assert pipe2.point_name("full", 2048, 4, 1, 0, 66) == "pipe2_full_req2048_s4_unpaced_sm66"


@pytest.mark.parametrize("kw,field", [
    ({"mode": "half"}, "mode: 'half'"),
    ({"req_bytes": 3000}, "req_bytes: 3000"),
    ({"req_bytes": 0}, "req_bytes: 0"),
    ({"stages": 5}, "stages: 5"),
    ({"mode": "nobar", "stages": 3}, "stages: 3 is not valid for mode nobar"),
    ({"reuse": 3}, "reuse: 3"),
    ({"period": -1}, "period: -1"),
    ({"mode": "nobar", "period": 0}, "period: 0 is not valid for mode nobar"),
    ({"sms": 0}, "sms: 0"),
])
def test_bad_parameters_name_the_field(kw, field):
    args = {"mode": "full", "req_bytes": 8192, "stages": 2, "reuse": 1, "period": 2400, "sms": None, **kw}
    with pytest.raises(ValueError, match=re.escape(field)):
        pipe2.check(**args)


def test_stage_cycles_is_clock_over_rate():
    # chip rates of 132 CTAs (one per SM), each at one stage every 2400 cycles (TMA: every 4800)
    res = {"power_steady_summary": {"sm_mhz": {"median": 1980.0}},
           "steady_rates_per_s": {"stages": 132 * 1980e6 / 2400, "bytes": 132 * 1980e6 / 4800 * light.PIPE_STAGE}}
    assert pipe2.stage_cycles(res, 132) == {"consumer": pytest.approx(2400.0), "tma": pytest.approx(4800.0),
                                            "sm_mhz": 1980.0}
    assert pipe2.stage_cycles({"steady_rates_per_s": {"stages": 0}}, 132) == {"consumer": None, "tma": None,
                                                                             "sm_mhz": None}


def test_the_high_rate_points_are_their_own_selection():
    """The high-rate points (pipe2.HIGH_POINTS: reuse 2, unpaced, 33..132 SMs) run only with
    --only pipe2hi_, never with the first run's pipe2_ or the ladder's pipe2ladder_ selection."""
    sel = [p for p in run.selectable() if p["name"].startswith("pipe2hi_")]
    assert len(sel) == len(pipe2.HIGH_POINTS)
    assert all(p["kw"]["reuse"] == 2 and p["kw"]["period"] == 0 for p in sel)
    assert not any(p["name"].startswith(("pipe2_", "pipe2ladder_")) for p in sel)
    assert run.main(["--plan", "--only", "pipe2hi_,idle_after", "--budget-s", "120"]) == 0


def test_the_shared_source_points_come_in_pairs(capsys):
    """Each shared-source point runs spread (every SM its own data, as every earlier pipe run) and
    same (every SM the same addresses) back to back, under --only pipe2sh_ alone; the kernel's
    stride parameter replaces the constant the earlier runs used (7919), so they are unchanged."""
    sel = [p for p in run.selectable() if p["name"].startswith("pipe2sh_")]
    assert len(sel) == 2 * len(pipe2.SHARED_POINTS)
    for a, b in zip(sel[::2], sel[1::2]):
        assert a["kw"]["spread"] == pipe2.SPREAD and b["kw"]["spread"] == 0
        assert {k: v for k, v in a["kw"].items() if k != "spread"} == {k: v for k, v in b["kw"].items() if k != "spread"}
        assert a["name"].replace("_spread_", "_same_") == b["name"]
    assert pipe2.SPREAD == 7919
    assert not any(p["name"].startswith("pipe2sh_") for p in run.plan())
    assert all("spread" not in p["kw"] for p in pipe2.plan() if not p["name"].startswith("pipe2sh_"))
    src = benches.SOURCES["power_light"].read_text()
    assert src.count("((blockIdx.x / group) * (unsigned long long)spread * PIPE_STAGE)") == 3
    assert run.main(["--plan", "--only", "pipe2sh_,idle_after", "--budget-s", "170"]) == 0
    assert "planned" in capsys.readouterr().out


def test_the_source_size_points_span_l2_and_hbm(capsys):
    """pipe2src_: the same paced pipe with its source L2-resident (8 MiB = light.L2_BUF_BYTES, as
    every earlier point), spanning the L2 and far beyond its 50 MB, with and without tensor work."""
    sel = [p for p in run.selectable() if p["name"].startswith("pipe2src_")]
    assert len(sel) == len(pipe2.SOURCE_POINTS) == 6
    assert {p["kw"]["src_mb"] for p in sel} == {8, 32, 256} and {p["kw"]["mode"] for p in sel} == {"full", "nowgmma"}
    assert pipe2.SRC_MB << 20 == light.L2_BUF_BYTES
    assert max(p["kw"]["src_mb"] for p in sel) << 20 > 50 * 10**6 * 4
    assert all("src_mb" not in p["kw"] for p in pipe2.plan() if not p["name"].startswith("pipe2src_"))
    assert run.main(["--plan", "--only", "pipe2src_,idle_after", "--budget-s", "170"]) == 0
    assert "planned" in capsys.readouterr().out


def test_the_share_group_points_span_one_to_every_sm(capsys):
    """pipe2grp_: the paced pipe and its TMA stream alone with groups of 1..132 CTAs on the same
    addresses (group 1 = every earlier point's pattern)."""
    sel = [p for p in run.selectable() if p["name"].startswith("pipe2grp_")]
    assert len(sel) == len(pipe2.GROUP_POINTS) == 10
    assert {p["kw"]["group"] for p in sel} == {1, 2, 4, 16, 132}
    assert all("group" not in p["kw"] for p in pipe2.plan() if not p["name"].startswith(("pipe2grp_", "pipe2grpu_")))
    unp = [p for p in run.selectable() if p["name"].startswith("pipe2grpu_")]
    assert len(unp) == len(pipe2.GROUP_UNPACED) and all(p["kw"]["period"] == 0 for p in unp)
    assert run.main(["--plan", "--only", "pipe2grp_,idle_after", "--budget-s", "170"]) == 0
    assert "planned" in capsys.readouterr().out
