"""The power-measurement side of issue 13 without a GPU: sampler statistics on synthetic samples
(laws: zero-order-hold means, energy = power x time, first-order step delays), the sampler thread
against a fake NVML and without NVML, the record schema round trip, the run plan's budget, and
the CUDA sources compiling for sm_90a where nvcc exists."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import time

import pytest

from validation.power import benches, nvml_sampler, run, stats


def _samples(ts, **cols):
    return [{"t": t, **{k: v[i] for k, v in cols.items()}} for i, t in enumerate(ts)]


def test_time_weighted_mean_is_zero_order_hold():
    # 10 held 1 s, 20 held 2 s, 30 held 1 s (until t_end = 4): (10 + 40 + 30) / 4
    assert stats.time_weighted_mean([0.0, 1.0, 3.0], [10.0, 20.0, 30.0], t_end=4.0) == pytest.approx(20.0)
    # without t_end the last sample holds for no time: (10 + 40) / 3
    assert stats.time_weighted_mean([0.0, 1.0, 3.0], [10.0, 20.0, 30.0]) == pytest.approx(50.0 / 3)
    assert stats.time_weighted_mean([], []) is None


def test_field_stats_and_missing_fields():
    s = _samples([0, 1, 2, 3], sm_mhz=[1980, 1400, 1300, 1350], power_w=[None, None, None, None])
    st = stats.field_stats(s, "sm_mhz", t_end=4)
    assert (st["median"], st["min"], st["max"], st["n"]) == (1375.0, 1300.0, 1980.0, 4)
    assert st["tw_mean"] == pytest.approx((1980 + 1400 + 1300 + 1350) / 4)
    assert stats.field_stats(s, "power_w") is None


def test_reasons_decoded_and_time_fractions():
    assert stats.decode_reasons(0x5) == ["gpu_idle", "sw_power_cap"]
    assert stats.decode_reasons(0x4 | 0x1000) == ["sw_power_cap", "unknown_0x1000"]
    s = _samples([0.0, 1.0, 2.0], reasons=[0x4, 0x0, 0x0])
    fr = stats.reason_fractions(s, t_end=4.0)
    assert fr == {"sw_power_cap": pytest.approx(0.25)}
    assert stats.reason_fractions(_samples([0.0, 1.0], reasons=[0, 0])) == {"none": 1.0}


def test_energy_counter_gives_power_times_time():
    # a 700 W load: the counter (mJ) grows 700 J per second; sampled every 10 ms for 2 s
    ts = [i * 0.01 for i in range(201)]
    s = _samples(ts, energy_mj=[5e6 + 700e3 * t for t in ts], power_w=[700.0] * len(ts))
    en = stats.energy_from_counter(s)
    assert en["energy_j"] == pytest.approx(1400.0) and en["mean_power_w"] == pytest.approx(700.0)
    out = stats.summarize(s, launches=1000)
    assert out["energy_per_launch_mj"] == pytest.approx(1400.0)  # 1400 J / 1000 launches
    assert out["energy_j_from_power_w"] == pytest.approx(1400.0)
    assert out["period"]["median_ms"] == pytest.approx(10.0)
    # the exact window energy from the counter read at the ends wins over the samples'
    assert stats.summarize(s, launches=10, counter_energy_j=1500.0)["energy_per_launch_mj"] == pytest.approx(150e3)


def test_step_response_of_a_first_order_lag():
    # reading = 70 + 630 (1 - exp(-(t - 1)/tau)) after a step at t = 1 s, sampled every 1 ms:
    # the 10/50/90 % delays are tau ln(10/9), tau ln 2, tau ln 10 (to one sample)
    tau, ts = 0.1, [i * 1e-3 for i in range(3000)]
    vs = [70.0 if t < 1.0 else 70.0 + 630.0 * (1 - math.exp(-(t - 1.0) / tau)) for t in ts]
    r = stats.step_response(ts, vs, 1.0)
    assert r["level_before"] == 70.0 and r["level_after"] == pytest.approx(700.0, abs=1e-3)
    for pct, law in ((10, math.log(10 / 9)), (50, math.log(2)), (90, math.log(10))):
        assert r[f"t{pct}_s"] == pytest.approx(tau * law, abs=1.5e-3)
    # falling step: same delays
    down = stats.step_response(ts, [770.0 - v for v in vs], 1.0)
    assert down["t50_s"] == pytest.approx(tau * math.log(2), abs=1.5e-3)
    assert stats.step_response(ts, [5.0] * len(ts), 1.0) is None


def test_energy_derivative_recovers_power():
    ts = [i * 0.005 for i in range(100)]
    dts, ws = stats.derivative(ts, [300.0 * t for t in ts], min_dt=0.02)
    assert ws and all(w == pytest.approx(300.0) for w in ws)
    assert all(b - a >= 0.02 - 1e-9 for a, b in zip(dts, dts[1:]))  # pairs span > min_dt


class _FakeValue:
    def __init__(self, mw):
        self.nvmlReturn, self.valueType = 0, 1
        self.value = type("U", (), {"uiVal": mw})()


class _FakeNvml:
    """A driver at a constant 650 W, 1350 MHz, SW power cap; energy grows with real time."""
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 0, 2, 0

    def __init__(self):
        self.t0 = time.perf_counter()

    def nvmlDeviceGetPowerUsage(self, h):
        return 650_000

    def nvmlDeviceGetFieldValues(self, h, ids):
        return [_FakeValue(640_000), _FakeValue(660_000)]

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        return int(1e6 + 650e3 * (time.perf_counter() - self.t0))

    def nvmlDeviceGetClockInfo(self, h, which):
        return 1350 if which == 0 else 2619

    def nvmlDeviceGetTemperature(self, h, which):
        return 60

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 0x4


def test_sampler_thread_against_fake_nvml(monkeypatch):
    monkeypatch.setitem(nvml_sampler._NVML, "inited", True)
    monkeypatch.setitem(nvml_sampler._NVML, "lib", _FakeNvml())
    monkeypatch.setitem(nvml_sampler._NVML, "handle", object())
    with nvml_sampler.PowerSampler(period_s=0.01) as ps:
        time.sleep(0.3)
    s = ps.summary(launches=100)
    assert s["n_samples"] >= 10
    assert s["sm_mhz"]["median"] == 1350 and s["mem_mhz"]["max"] == 2619
    assert s["power_w"]["tw_mean"] == pytest.approx(650.0)
    assert s["power_average_w"]["median"] == pytest.approx(640.0)
    assert s["power_instant_w"]["median"] == pytest.approx(660.0)
    assert s["energy"]["mean_power_w"] == pytest.approx(650.0, rel=0.05)
    assert s["reasons"] == {"sw_power_cap": pytest.approx(1.0)}
    assert set(ps.trajectory()) >= {"t_s", "sm_mhz", "power_w", "energy_mj", "reasons"}
    steady = ps.summary(last_s=0.1)
    assert 0 < steady["n_samples"] < s["n_samples"]


def test_sampler_without_nvml_degrades(monkeypatch):
    monkeypatch.setitem(nvml_sampler._NVML, "inited", True)
    monkeypatch.setitem(nvml_sampler._NVML, "lib", None)
    monkeypatch.setitem(nvml_sampler._NVML, "error", "NVMLError: no driver")
    with nvml_sampler.PowerSampler() as ps:
        pass
    assert ps.summary(launches=5) == {"nvml_error": "NVMLError: no driver", "n_samples": 0}
    assert nvml_sampler.power_limits() == {"nvml_error": "NVMLError: no driver"}


def test_record_round_trip_and_a_failing_point():
    pt_ok = {"family": "units", "name": "fake_ok", "seconds": 0.0, "kw": {"x": 1},
             "fn": lambda x: {"rate_per_s": 2.0e12, "power_steady_summary": {"sm_mhz": {"median": 1350},
                                                                              "reasons": {"sw_power_cap": 1.0}}}}
    pt_bad = {"family": "wgmma", "name": "fake_bad", "seconds": 0.0, "kw": {},
              "fn": lambda: (_ for _ in ()).throw(RuntimeError("launch failed"))}
    prov = {"device_name": "test"}
    recs = [json.loads(json.dumps(run.run_point(p, prov))) for p in (pt_ok, pt_bad)]
    assert recs[0]["error"] is None and recs[0]["rate_per_s"] == 2.0e12 and recs[0]["params"] == {"x": 1}
    assert recs[0]["provenance"] == prov and recs[0]["kind"] == "power"
    assert recs[1]["error"] == "RuntimeError: launch failed"
    assert "1350 MHz" in run.summary_line(recs[0]) and "ERROR" in run.summary_line(recs[1])


def test_plan_fits_the_budget_and_covers_every_unit():
    pts = run.plan()
    assert run.planned_seconds(pts) <= 420.0
    names = [p["name"] for p in pts]
    assert len(names) == len(set(names))
    assert all(p["family"] in run.FILES for p in pts)
    for prefix in ("idle", "step_", "wgmma_f16f32_duty25_zero", "wgmma_bf16f32_duty100_random",
                   "wgmma_f16f16_duty50_random", "bulk_l2_duty50", "hbm_read", "hbm_copy",
                   "smem_ld", "smem_st", "alu_fma", "burst_"):
        assert any(n.startswith(prefix) for n in names), prefix


def test_bad_budget_exits_2(capsys):
    assert run.main(["--budget-s", "-5", "--plan"]) == 2
    assert "--budget-s" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed here")
@pytest.mark.parametrize("stem", sorted(benches.SOURCES))
def test_power_sources_compile_for_sm90a(tmp_path, stem):
    r = subprocess.run([*benches.NVCC, "-o", str(tmp_path / f"{stem}.cubin"), str(benches.SOURCES[stem])],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


def test_execute_survives_a_failing_point_and_writes_every_file(tmp_path, monkeypatch):
    # the idle point needs no GPU (sampler degrades without NVML); "no_such_point" makes its child
    # exit 2: the run records the error and goes on to the next point
    monkeypatch.setattr(benches, "start_compiles", lambda: {})
    pts = [p for p in run.plan() if p["name"] == "idle"]
    bad = {"family": "wgmma", "name": "no_such_point", "seconds": 0.0, "kw": {}, "fn": benches.wgmma_point}
    assert run.execute([pts[0], bad, pts[0]], tmp_path, budget_s=120.0) == 0
    units = [json.loads(x) for x in (tmp_path / "units.jsonl").read_text().splitlines()]
    wg = [json.loads(x) for x in (tmp_path / "wgmma.jsonl").read_text().splitlines()]
    assert [r["name"] for r in units] == ["idle", "idle"] and all(r["error"] is None for r in units)
    assert "power_samples_summary" in units[0] and "provenance" in units[0]
    assert wg[0]["error"].startswith("child exited 2")
    assert (tmp_path / "summary.txt").read_text().count("\n") == 5


def test_records_loader_round_trip_and_bad_lines(tmp_path):
    from validation.power import records

    good = run.run_point({"family": "units", "name": "x", "seconds": 0.0, "kw": {}, "fn": lambda: {"rate_per_s": 1.0}},
                         {"device_name": "test"})
    f = tmp_path / "units.jsonl"
    f.write_text(json.dumps(good) + "\n\n")
    assert records.load(f) == [json.loads(json.dumps(good))]
    assert records.load_all(tmp_path)[0]["name"] == "x"
    for bad, msg in (("{not json", "units.jsonl:1: not JSON"),
                     (json.dumps({"kind": "power"}), "missing field 'family'"),
                     (json.dumps({**good, "kind": "gemm"}), "kind='gemm'; valid: 'power'")):
        f.write_text(bad + "\n")
        with pytest.raises(records.RecordError, match=msg):
            records.load(f)


def test_light_plan_selection_fits_its_budget():
    # the light-load points run alone with `--only light_,idle_after` (the lead's phase-1 command)
    pts = [p for p in run.plan() if p["name"] == "idle" or p["name"].startswith(("light_", "idle_after"))]
    assert pts[0]["name"] == "idle" and pts[-1]["name"] == "idle_after"
    assert all(p["family"] == "light" for p in pts[1:-1]) and len(pts) >= 12
    load_s = sum(p["seconds"] + run.SETUP_S for p in pts)
    assert load_s <= 120.0                      # GPU time of the light run (compile overlaps idle)
    for prefix in ("light_resident_sleep", "light_resident_poll", "light_tma_req", "light_pipe_",
                   "light_wgswz32", "light_wgmma_bf16f32_duty10", "light_churn_"):
        assert any(p["name"].startswith(prefix) for p in pts), prefix


def test_light_steady_rates_per_counter():
    from validation.power.light import _steady_rates

    s = {"t_end_s": [0.2, 0.4, 2.0, 2.2], "gpu_s": [0.2] * 4, "events": [[10, 1], [10, 1], [20, 2], [30, 3]]}
    r = _steady_rates(s, ("bytes", "requests"), steady_s=0.5)
    assert r["rates_per_s"] == {"bytes": 70 / 0.8, "requests": 7 / 0.8}
    assert r["steady_rates_per_s"] == {"bytes": 50 / 0.4, "requests": 5 / 0.4}   # last two launches
    assert r["steady_rate_per_s"] == 50 / 0.4 and r["events"] == 70
