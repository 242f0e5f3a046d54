"""The power model and the sustained-clock solve (issue 13 items 3-4): laws, the calibration's
reproducibility from the power records, a fit check on the calibration points (labelled: not a
fidelity test), and the clock flag's bad input."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from types import SimpleNamespace

import pytest

from hopsim.cli import main
from hopsim.config.power import POWER_FILES, load_power
from hopsim.fingerprint import digest, model_files
from hopsim.power.model import NOT_COUNTS, Events, PowerModel
from hopsim.power.solve import ClockSolver, parse_clock
from hopsim.validate import calibrate_power
from isa.errors import InputError
from validation.power.records import load_all

PM = PowerModel.load()
#: A launch with some of every event (1 ms at 1980 MHz).
BASE = Events(tensor_flops=3e11, l2_bytes=5e9, hbm_read_bytes=1e9, hbm_write_bytes=5e8,
              smem_wavefronts=1e8, smem_ld_wavefronts=1e7, smem_st_wavefronts=1e7, instructions=1e9)
COUNTS = [f.name for f in fields(Events) if f.name not in NOT_COUNTS]
#: the counts that each cost energy (l2_shared_bytes is a part of l2_bytes: the reads the L2 served once for several SMs)
ENERGY_COUNTS = [c for c in COUNTS if c != "l2_shared_bytes"]


def test_committed_calibration_equals_what_the_records_give():
    text = json.dumps(calibrate_power.calibrated_json(), indent=1) + "\n"
    assert POWER_FILES["h100_sxm"].read_text() == text


def test_every_power_field_is_measured_or_spec_after_calibration():
    for name, prm in load_power().params().items():
        assert prm.kind in ("measured", "spec"), (name, prm.source)
        assert prm.unit and prm.meaning


def test_energies_are_positive_and_random_data_costs_more_than_zero_data():
    v = PM.v
    for k, x in v.items():
        if k.startswith("e_"):
            assert x > 0, k
    for var in ("f16f32", "bf16f32", "f16f16"):
        assert v[f"e_tensor_{var}_pj_per_flop"] > v[f"e_tensor_{var}_zero_pj_per_flop"]


@pytest.mark.parametrize("count", ENERGY_COUNTS)
def test_power_rises_with_each_event_rate(count):
    more = Events(**{**{c: getattr(BASE, c) for c in COUNTS}, count: getattr(BASE, count) * 2 + 1e6})
    for mhz in (1980, 1500, 900):
        assert PM.power_w(mhz, more, 1e-3) > PM.power_w(mhz, BASE, 1e-3)


def test_power_falls_as_more_of_the_same_l2_bytes_are_shared_reads():
    # the same bytes delivered, fewer of them read by the L2 itself: only the fed-L2 term falls
    shared = [replace(BASE, l2_shared_bytes=f * BASE.l2_bytes) for f in (0.0, 0.2, 0.4, 0.6)]
    for mhz in (1980, 1500, 900):
        ps = [PM.power_w(mhz, ev, 1e-3) for ev in shared]
        assert all(b < a for a, b in zip(ps, ps[1:]))


def test_power_rises_with_the_clock_at_fixed_rates():
    ps = [PM.power_w(f, BASE, 1e-3) for f in sorted(PM.supported_clocks())]
    assert all(b > a for a, b in zip(ps, ps[1:]))


def test_supported_clocks_are_the_records_list():
    clocks = PM.supported_clocks()
    assert clocks[0] == 1980 and clocks[-1] == 345 and len(clocks) == 110
    assert all(a - b == 15 for a, b in zip(clocks, clocks[1:]))


def _solver(cycles_at, ev: Events):
    """A solver over a synthetic launch: cycles_at(mhz) cycles, the same counts at every clock."""
    res = lambda mhz: SimpleNamespace(cycles=cycles_at(mhz))  # noqa: E731
    return ClockSolver(res, lambda r: ev, PM)


def _within(mhz, ev, cycles):
    return PM.binding(mhz, ev, cycles / (mhz * 1e6)) is None


def test_solved_clock_is_the_highest_supported_clock_within_the_limit():
    # compute-bound: cycles independent of the clock; tensor-heavy (power-bound at 1980)
    ev = Events(tensor_flops=2e11, l2_bytes=2e9)
    cyc = 2e11 / (132 * 4096 * 0.9)
    sol = _solver(lambda f: cyc, ev).solve()
    f = sol.sustained.mhz
    assert f < 1980 and sol.limit == "power"
    assert _within(f, ev, cyc) and not _within(f + 15, ev, cyc)
    assert sol.sustained.power_w <= PM.limit_w < PM.power_w(f + 15, ev, cyc / ((f + 15) * 1e6))


def test_memory_bound_phases_speed_up_less_and_the_solve_simulates_the_chosen_clock():
    # half the launch in a fixed time (memory clock domain), half in SM cycles
    ev = Events(tensor_flops=1.5e11, l2_bytes=2e9)
    t_mem = 1.5e-4

    def cycles(mhz):
        return int(1.5e5 + t_mem * mhz * 1e6)

    solver = _solver(cycles, ev)
    sol = solver.solve()
    f = sol.sustained.mhz
    assert f in solver.cache and sol.sustained.cycles == cycles(f)
    assert _within(f, ev, cycles(f)) and not _within(f + 15, ev, cycles(f + 15))
    assert sol.simulations <= 5


def test_boost_when_power_at_1980_is_under_the_limit():
    ev = Events(tensor_flops=1e9, l2_bytes=1e8)
    sol = _solver(lambda f: 1e6, ev).solve()
    assert sol.sustained.mhz == sol.boost.mhz == 1980 and sol.limit is None and sol.simulations == 1


def test_hbm_bound_copy_stays_at_boost_as_the_d2d_copy_did():
    # docs/hopper-facts.md, clocks and power: a 2 GB device-to-device copy loop ran at 1980 MHz
    # (~380 W): 2 GB read + 2 GB written at 2.8e12 B/s (the hbm_copy record's rate)
    nbytes = 2 * 2**30
    secs = 2 * nbytes / 2.8e12
    ev = Events(l2_bytes=2 * nbytes, hbm_read_bytes=nbytes, hbm_write_bytes=nbytes,
                instructions=2 * nbytes / 512)
    sol = _solver(lambda f: secs * f * 1e6, ev).solve()  # HBM-bound: time fixed in ns
    assert sol.sustained.mhz == 1980 and sol.sustained.power_w < PM.limit_w


def test_tensor_cap_binds_for_zero_data_at_full_duty():
    # a zero-operand burner at 96% tensor duty: held by the tensor cap, not by power
    ev = Events(tensor_flops=1e12, zero_data=True)
    cyc = 1e12 / (132 * 4096 * 0.96)
    sol = _solver(lambda f: cyc, ev).solve()
    assert sol.limit == "tensor" and sol.sustained.power_w < 400 and sol.sustained.mhz < 1980


def test_fit_check_calibration_points_power_and_clock():
    """FIT CHECK (the model against the points it was fitted on, not a validation): steady power
    within 30 W at every point, and the solved clock of every burner (per-cycle rates held) within
    2% of the measured time-weighted clock."""
    for p in calibrate_power.fit_points(load_all()):
        ev, f = p["events"], p["mhz"]
        assert abs(PM.power_w(f, ev, 1.0) - p["power_w"]) < 30, p["name"]
        per_mhz = ev.scaled(1.0 / f)
        solved = next(c for c in PM.supported_clocks() if PM.binding(c, per_mhz.scaled(c), 1.0) is None)
        assert abs(solved - f) / f < 0.02, (p["name"], solved, f)


@pytest.mark.parametrize("value", ["0", "-100", "2000", "1980.5", "turbo", "", "nan"])
def test_parse_clock_bad_input(value):
    with pytest.raises(InputError) as e:
        parse_clock(value, PM)
    assert "clock" in str(e.value) and "sustained, boost" in str(e.value)


@pytest.mark.parametrize("value, want", [("sustained", "sustained"), ("BOOST", "boost"),
                                         ("1500", 1500.0), ("345", 345.0), ("1980", 1980.0)])
def test_parse_clock_good_input(value, want):
    assert parse_clock(value, PM) == want


@pytest.mark.parametrize("cmd", [["simulate", "gemm", "--m", "256", "--n", "256", "--k", "256"],
                                 ["sweep", "--m", "256", "--n", "256", "--k", "256"]])
@pytest.mark.parametrize("value", ["0", "-5", "1995", "fast"])
def test_clock_flag_bad_input_is_one_line_exit_2(cmd, value, capsys):
    assert main(cmd + ["--clock", value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "clock" in err[0] and value in err[0] and "sustained, boost" in err[0]


# ----------------------------------------------------------------------------- model fingerprint


def test_model_fingerprint_changes_when_a_config_value_changes():
    files = model_files()
    assert "hopsim/config/h100_sxm_power_calibrated.json" in files
    assert "hopsim/config/h100_sxm_calibrated.json" in files
    assert any(p.startswith("hopsim/timing/") for p in files)
    base = digest(files)
    assert digest(dict(files)) == base and len(base) == 64
    cal = json.loads(files["hopsim/config/h100_sxm_power_calibrated.json"])
    cal["power"]["power_limit_w"]["value"] = 699.0
    changed = {**files, "hopsim/config/h100_sxm_power_calibrated.json": json.dumps(cal, indent=1).encode()}
    assert digest(changed) != base
    timing = files["hopsim/config/h100_sxm.py"].replace(b"P(132,", b"P(131,")
    assert timing != files["hopsim/config/h100_sxm.py"]
    assert digest({**files, "hopsim/config/h100_sxm.py": timing}) != base


# ----------------------------------------------------------------------------- the product


SMALL = ["--m", "256", "--n", "256", "--k", "512", "--no-progress"]


@pytest.mark.parametrize("clock", ["sustained", "boost", "1500"])
def test_simulate_gemm_json_has_both_clocks_power_and_energy(clock, capsys):
    assert main(["simulate", "gemm", *SMALL, "--json", "--clock", clock]) == 0
    d = json.loads(capsys.readouterr().out)
    want = {"sustained": d["sustained_clock_mhz"], "boost": 1980.0, "1500": 1500.0}[clock]
    assert d["clock_mhz"] == want
    # a GEMM uses the tensor cores: its SMs run at tensor_sm_clock_ratio x the reported clock, and
    # its cycles convert to time at that clock
    assert d["sm_clock_mhz"] == pytest.approx(want * PM.v["tensor_sm_clock_ratio"])
    assert d["time_ms"] == pytest.approx(d["cycles"] / (d["sm_clock_mhz"] * 1e3))
    assert d["time_ms_boost"] <= d["time_ms_sustained"]
    assert d["energy_mj"] == pytest.approx(d["power_w"] * d["time_ms"])   # W x ms = mJ
    assert d["tflops_per_w"] == pytest.approx(d["tflops"] / d["power_w"])
    assert d["power"]["sustained"]["power_w"] <= PM.limit_w


def test_sweep_tabulates_tflops_per_watt(capsys):
    assert main(["sweep", *SMALL, "--stages", "1,2", "--y", "tflops_per_w", "--json", "--jobs", "1"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 2
    for r in rows:
        assert r["tflops_per_w"] == pytest.approx(r["tflops"] / r["power_w"]) and r["clock"] == "sustained"
        assert r["clock_mhz"] == r["sustained_clock_mhz"]
