"""The fed-L2 term of the power model (issue 13, `l2_fed_sq_w`, hopsim/power/model.py `fed_l2_w`):
laws of the term, its place in the sustained-clock solve, and its fit against the TMA+wgmma pipe
records (the golden is the hardware's measured power and clock, validation/records/h100/power/light_pipe2*)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from hopsim.cli import main
from hopsim.config import load_gpu
from hopsim.config.base import Param
from hopsim.config.power import load_power
from hopsim.power.model import Events, PowerModel
from hopsim.gemm_sim import simulate_gemm
from hopsim.power.solve import ClockSolver
from hopsim.timing.memory import MemorySystem
from hopsim.validate import calibrate_power_pipe
from kernels.params import GemmParams
from validation.power.records import POWER_RECORDS_DIR, load_all

PM = PowerModel.load()
_p = load_power()
NO_TERM = PowerModel(_p.with_values({"l2_fed_sq_w": Param(**{**_p.params()["l2_fed_sq_w"].model_dump(), "value": 0.0})}))
#: the residuals docs/guide/power-model.md states (max |fit - measured|, W) by group of pipe points
STATED_MAX_W = {"first run": 32.0, "first run capped": 22.5, "ladder": 35.0, "ladder capped": 16.0,
                "high-rate": 8.0, "high-rate capped": 45.0}
#: the stated bound on the capped points' solved clock vs their measured steady clock
CAPPED_CLOCK_REL = 0.03
TF = 1e12


def fed(tflops_per_sm: float, sms: int, gbps_per_sm: float = 40.0) -> Events:
    """Rates per second of a TMA-fed tensor launch on `sms` SMs."""
    return Events(tensor_flops=tflops_per_sm * TF * sms, l2_bytes=gbps_per_sm * 1e9 * sms, sm_fraction=sms / 132)


def test_the_coefficient_is_positive_and_measured():
    prm = load_power().params()["l2_fed_sq_w"]
    assert PM.v["l2_fed_sq_w"] > 0 and prm.kind == "measured" and "light_pipe2hi" in prm.source


@pytest.mark.parametrize("ev", [Events(l2_bytes=5e12), Events(l2_bytes=5e12, instructions=1e12),
                                Events(tensor_flops=5e14), Events(tensor_flops=5e14, l2_bytes=5e12, sm_fraction=0.0),
                                Events()])
def test_no_tensor_work_or_no_l2_feed_adds_nothing(ev):
    # the wgmma-only burners (no L2 traffic) and the L2/HBM streaming burners fit without it
    assert PM.fed_l2_w(ev) == 0.0
    assert PM.breakdown_w(1980, ev, 1.0)["fed_l2"] == 0.0


@pytest.mark.parametrize("sms", [1, 33, 66, 132])
def test_the_term_grows_faster_than_the_l2_rate(sms):
    ws = [PM.fed_l2_w(fed(2.0, sms, g)) for g in (5.0, 10.0, 20.0, 40.0, 80.0)]
    assert all(b > a > 0 for a, b in zip(ws, ws[1:]))
    assert PM.fed_l2_w(fed(2.0, sms, 40.0)) > 2 * PM.fed_l2_w(fed(2.0, sms, 20.0))


@pytest.mark.parametrize("per_sm", [0.5, 1.5, 4.0])
def test_the_term_grows_with_the_tensor_active_sms_at_fixed_per_sm_rates(per_sm):
    ws = [PM.fed_l2_w(fed(per_sm, n)) for n in (1, 33, 66, 99, 132)]
    assert all(b > a for a, b in zip(ws, ws[1:]))


@pytest.mark.parametrize("sms", [33, 132])
def test_the_term_never_falls_as_tensor_activity_rises(sms):
    ws = [PM.fed_l2_w(fed(t, sms)) for t in (0.0, 0.5, 2.0, 4.0, 6.0)]
    assert ws[0] == 0.0 and all(b >= a for a, b in zip(ws, ws[1:]))


def test_the_term_enters_the_predicted_power():
    ev = fed(2.0, 132)
    assert PM.power_w(1980, ev, 1.0) - NO_TERM.power_w(1980, ev, 1.0) == pytest.approx(PM.fed_l2_w(ev))


def _sustained(model: PowerModel, tflops: float, l2_bytes: float, sms: int) -> float:
    """Sustained clock of a compute-bound 1 ms-at-1980 launch (cycles fixed) under `model`."""
    ev = Events(tensor_flops=tflops * 1e-3, l2_bytes=l2_bytes * 1e-3, sm_fraction=sms / 132)
    cyc = 1980e3
    return ClockSolver(lambda mhz: SimpleNamespace(cycles=cyc), lambda r: ev, model).solve().sustained.mhz


LAUNCHES = [(t * TF, b, n) for t in (50, 200, 400, 600) for b in (0.0, 2e12, 6e12) for n in (66, 132)]


@pytest.mark.parametrize("tflops,l2,sms", LAUNCHES)
def test_the_sustained_clock_with_the_term_is_at_most_the_clock_without(tflops, l2, sms):
    assert _sustained(PM, tflops, l2, sms) <= _sustained(NO_TERM, tflops, l2, sms)


def test_the_term_lowers_the_clock_of_a_tma_fed_power_bound_launch():
    assert _sustained(PM, 600 * TF, 6e12, 132) < _sustained(NO_TERM, 600 * TF, 6e12, 132)


@pytest.fixture(scope="module")
def pipe():
    pts = calibrate_power_pipe.pipe_points(PM)
    return pts, calibrate_power_pipe.fit_points(pts)


def test_the_fit_reproduces_every_pipe_record_within_the_stated_residual(pipe):
    """Hardware golden: each pipe point's measured steady power (validation/records/h100/power/
    light_pipe2/, light_pipe2_ladder/, light_pipe2hi/) vs the model with the term (+ the fit's
    nuisance columns and the run's measured idle drift), within the residual the guide states for
    its group; the committed coefficient is the fit's."""
    f = pipe[1]
    assert set(f["groups"]) == set(STATED_MAX_W) and len(f["points"]) == 29
    for p in f["points"]:
        assert abs(p["residual_w"]) <= STATED_MAX_W[calibrate_power_pipe._group(p)], p
    assert f["l2_fed_sq_w"] == pytest.approx(PM.v["l2_fed_sq_w"], rel=1e-4)


def test_the_term_at_least_halves_the_miss_at_the_capped_132_sm_points(pipe):
    # the sum of parts misses them by 79..133 W (the records' PROVENANCE)
    capped = [p for p in pipe[1]["points"] if p["sms"] == 132 and p["measured_w"] >= calibrate_power_pipe.CAPPED_W]
    assert len(capped) == 5
    for p in capped:
        assert abs(p["residual_w"]) < 0.5 * abs(p["residual_w"] - p["term_w"]), p


def test_the_capped_points_clock_solves_near_their_measured_clock(pipe):
    pts, f = pipe
    clocks = calibrate_power_pipe.capped_clocks(pts, PM, f["l2_fed_sq_w"])
    assert len(clocks) == 6
    for c in clocks:
        assert c["solved_mhz"] == pytest.approx(c["measured_mhz"], rel=CAPPED_CLOCK_REL), c


def test_the_model_form_has_the_lowest_rms_of_the_candidates_and_exponent_two_is_near_the_best(pipe):
    pts = pipe[0]
    forms = calibrate_power_pipe.form_scan(pts, PM)
    assert forms[calibrate_power_pipe.MODEL_FORM][0] == min(r for r, _ in forms.values())
    scan = calibrate_power_pipe.exponent_scan(pts)
    assert scan[2.0] <= min(scan.values()) + 1.0 and scan[2.0] < scan[1.0]


def test_the_never_fitted_capped_light_pipe_is_predicted_closer_with_the_term():
    # light/light.jsonl (another run, never read by this fit): the GEMM-like pipe at the cap, 7.3 TB/s
    rec = next(r for r in load_all(POWER_RECORDS_DIR / "light") if r["name"] == "light_pipe_req8192_s2")
    s, rt = rec["power_steady_summary"], rec["steady_rates_per_s"]
    ev = Events(tensor_flops=rt["wgmma"] * calibrate_power_pipe.WGMMA_FLOP, l2_bytes=rt["bytes"])
    f, measured = s["sm_mhz"]["tw_mean"], s["power_w"]["tw_mean"]
    assert abs(PM.power_w(f, ev, 1.0) - measured) < abs(NO_TERM.power_w(f, ev, 1.0) - measured) - 100


def test_config_show_lists_the_field_with_unit_and_source(capsys):
    assert main(["config", "show"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "l2_fed_sq_w" in ln)
    assert "W/(TB/s)^2" in line and "measured" in line
    assert main(["config", "show", "--json"]) == 0
    assert "light_pipe2hi" in capsys.readouterr().out


# ---- the variable: the L2's distinct bytes (a tile several SMs read together counts once)
GPU = load_gpu("h100_sxm")
MERGE = float(GPU.timing.l2_share_bytes_merge.value)


def test_the_term_follows_the_l2s_distinct_bytes_not_the_bytes_delivered():
    # 8 TB/s delivered, of which 3 TB/s went to further SMs of shared reads: charged on 5 TB/s
    shared = Events(tensor_flops=5e14, l2_bytes=8e12, l2_shared_bytes=3e12, sm_fraction=1.0)
    distinct = Events(tensor_flops=5e14, l2_bytes=5e12, sm_fraction=1.0)
    assert shared.l2_distinct_bytes == 5e12
    assert PM.fed_l2_w(shared) == pytest.approx(PM.fed_l2_w(distinct))
    assert PM.fed_l2_w(shared) < PM.fed_l2_w(Events(tensor_flops=5e14, l2_bytes=8e12, sm_fraction=1.0))
    # the per-byte energy still counts every delivered byte
    assert PM.breakdown_w(1980, shared, 1.0)["l2"] == PM.breakdown_w(1980, replace(shared, l2_shared_bytes=0.0), 1.0)["l2"]


def test_shared_bytes_scale_with_the_other_counts():
    ev = Events(tensor_flops=1e9, l2_bytes=8e6, l2_shared_bytes=3e6)
    assert ev.scaled(1e3).l2_distinct_bytes == pytest.approx(5e9)


@pytest.mark.parametrize("readers", [1, 2, 4, 8])
def test_the_counter_is_what_the_l2_link_is_charged_for(readers):
    """A byte-bound hit read by `readers` SMs together (share 1/r): the L2 link's busy time is the
    counted distinct bytes over l2_bytes_per_s, which is nbytes x (1 - merge x (1 - 1/r))."""
    mem = MemorySystem(GPU)
    nbytes = 1 << 20
    mem.read(0.0, ("t", 0), nbytes, hit=True, hbm_share=1.0 / readers, requests=1)
    assert mem.bytes_l2_distinct == pytest.approx(nbytes * (1.0 - MERGE * (1.0 - 1.0 / readers)))
    assert mem.l2_pipe.busy == pytest.approx(mem.bytes_l2_distinct / GPU.l2_bytes_per_cycle, rel=1e-6, abs=1.0)


@pytest.fixture(scope="module")
def shared_gemm():
    # 1024^3, 128x128 tiles: 64 CTAs on 64 SMs in one wave, each A row-tile read by 8 CTAs, each B
    # column-tile by 8 (the fast mode's dispatch-time sharing, timing/dispatch_residency.py)
    return simulate_gemm(GemmParams(m=1024, n=1024, k=1024, bm=128, bn=128, stages=4)).result


def test_a_gemm_whose_tiles_several_sms_read_is_charged_on_its_distinct_bytes(shared_gemm):
    res = shared_gemm
    loaded = res.bytes_l2 + res.bytes_hbm
    distinct = res.extra["bytes_l2_distinct"]
    # each tile is read by 8 CTAs of its wave: at most the merge's share of 7/8 of its bytes saved
    assert loaded * (1.0 - MERGE * 7 / 8) - 1 <= distinct < loaded
    ev = Events.from_result(res)
    assert ev.l2_distinct_bytes == pytest.approx(distinct + res.bytes_stored, abs=1.0)
    s = res.time_ms * 1e-3
    assert PM.fed_l2_w(ev.scaled(1 / s)) == pytest.approx(
        PM.v["l2_fed_sq_w"] * ((distinct + res.bytes_stored) / s / 1e12) ** 2)


def test_the_shared_memory_mode_charges_every_read_as_distinct():
    res = simulate_gemm(GemmParams(m=256, n=256, k=256, bm=128, bn=128, stages=2), mode="full").result
    assert res.extra["bytes_l2_distinct"] == res.bytes_l2 + res.bytes_hbm
    assert Events.from_result(res).l2_shared_bytes == 0.0
