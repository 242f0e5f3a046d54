"""The SM-clock probe of gemm_runs' sustained sweeps (validation/gemm_profile.py), without a GPU:
its fields follow from a synthetic ring of profile slots by the law clock = an SM's clock64 cycles
over the %globaltimer ns of the same span (per launch the median over SMs; median / min / max over
the ring's launches that started in the steady window; kernel cycles = the longest SM span, median
over launches); only heldout17 probes (heldout13..16 compile and run exactly as before); a failed
probe keeps the timing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from validation import gemm_profile, gemm_runs, heldout13, heldout14, heldout15, heldout16, heldout17

#: per launch, per SM: (cycles, ns) of its busy span; SM clock = cycles / ns x 1000 MHz
LAUNCHES = (((1800, 1000), (1700, 1000)),   # SM clocks 1800, 1700 -> median 1750; longest 1800
            ((1900, 1000), (3800, 2000)),   # 1900, 1900 -> 1900; longest 3800
            ((1600, 1000), (1700, 1000)))   # 1600, 1700 -> 1650; longest 1700


def ring(launches=LAUNCHES, empty: int = 1, t0_ns: int = 10**10) -> tuple[np.ndarray, int]:
    """Profile slots {smid, c0, c1, g0, g1} per CTA: two CTAs per SM (back to back within the
    SM's span), each SM's clock64 with its own offset (SM counters are not synchronised), launch j
    starting at t0_ns + 5 ms x j on the globaltimer; `empty` slots never written (zeros)."""
    grid = 2 * len(launches[0])
    slots = []
    for j, sms in enumerate(launches):
        rows = []
        for s, (cyc, ns) in enumerate(sms):
            c, g = 10_000 * (s + 1) + 77 * j, t0_ns + 5_000_000 * j + 333 * s
            rows += [(s, c, c + cyc // 2, g, g + ns // 2), (s, c + cyc // 2, c + cyc, g + ns // 2, g + ns)]
        slots.append(np.array(rows, dtype=np.uint64).reshape(-1))
    slots += [np.zeros(grid * 5, dtype=np.uint64)] * empty
    return np.stack(slots), grid


def test_probe_fields_from_a_synthetic_ring():
    prof, grid = ring()
    eff = gemm_profile.effective_clocks(prof, grid)
    out = {"sm_clock_mhz_tw": 1785.0, "time_ms": 0.4321, "power_w_nvml_tw": 690.0}
    f = gemm_profile.probe_fields(eff, out)
    assert f["sm_clock_eff_mhz"] == pytest.approx(1750.0)
    assert f["sm_clock_eff_min"] == pytest.approx(1650.0) and f["sm_clock_eff_max"] == pytest.approx(1900.0)
    assert f["probe_kernel_cycles"] == 1800 and f["probe_launches_profiled"] == 3
    assert f["probe_nvml_clock_mhz_tw"] == 1785.0 and f["probe_time_ms"] == 0.4321
    assert set(f) == {"sm_clock_eff_mhz", "sm_clock_eff_min", "sm_clock_eff_max", "probe_kernel_cycles",
                      "probe_launches_profiled", "probe_nvml_clock_mhz_tw", "probe_time_ms"}


def test_slots_of_the_warm_up_are_left_out():
    """A batch shorter than the ring leaves warm-up launches (a second before, at 1200 MHz) in
    the other slots: only the launches that started within the steady window count."""
    steady, grid = ring()
    warm, _ = ring(launches=(((1200, 1000), (1200, 1000)),), empty=0, t0_ns=10**10 - 10**9)
    prof = np.concatenate([warm, steady])
    kept = gemm_profile.steady_slots(prof, grid, 0.25)
    assert len(kept) == 3 and (kept == steady[:3]).all()
    f = gemm_profile.probe_fields(gemm_profile.effective_clocks(kept, grid), {})
    assert f["sm_clock_eff_mhz"] == pytest.approx(1750.0) and f["sm_clock_eff_min"] == pytest.approx(1650.0)
    assert gemm_profile.effective_clocks(prof, grid)["eff_clock_mhz_min"] == pytest.approx(1200.0)  # unfiltered
    assert len(gemm_profile.steady_slots(prof, grid, 2.0)) == 4


def test_an_unwritten_ring_gives_no_clock():
    prof, grid = ring(launches=(((1800, 1000), (1700, 1000)),), empty=3)
    prof[0] = 0
    f = gemm_profile.probe_fields(gemm_profile.effective_clocks(prof, grid), {})
    assert f["sm_clock_eff_mhz"] is None and f["probe_kernel_cycles"] is None
    assert f["probe_launches_profiled"] == 0
    assert len(gemm_profile.steady_slots(prof, grid, 0.25)) == 0


# ----------------------------------------------------------------------------- gemm_runs' sustained sweep
class FakeDevice:
    """gemm_runs' GPU side replaced: compiles, the check, the timing and the probe are recorded."""

    def __init__(self, monkeypatch, probe_fails: bool = False):
        self.compiles, self.probes = [], []
        self.probe_fails = probe_fails
        monkeypatch.setattr(gemm_runs.harness, "compile_many", self.compile_many)
        monkeypatch.setattr(gemm_runs, "_kernel_checked", lambda p, comp, rec, seed: (comp, "ok"))
        monkeypatch.setattr(gemm_runs, "_sustained_timings",
                            lambda kern, p, cb, s, st, samples: {"time_ms": 1.25, "sm_clock_mhz_tw": 1700.0})
        monkeypatch.setattr(gemm_profile, "sm_clock_probe", self.sm_clock_probe)
        monkeypatch.setattr(gemm_runs, "device_provenance", lambda: {})
        monkeypatch.setattr(gemm_runs, "power_limits", lambda: {})
        monkeypatch.setattr(gemm_runs, "_context_alive", lambda: True)

    def compile_many(self, params, workers=None, extra_flags=None):
        self.compiles.append((list(params), extra_flags))
        flags = extra_flags or [()] * len(params)
        return [("build", p.tag, tuple(f)) for p, f in zip(params, flags)]

    def sm_clock_probe(self, p, comp, sustain_s, steady_s):
        self.probes.append((p.tag, comp, sustain_s, steady_s))
        if self.probe_fails:
            raise RuntimeError("profile launch failed")
        return {"sm_clock_eff_mhz": 1650.0, "probe_time_ms": 1.3}


def records(out, name: str) -> list[dict]:
    return [json.loads(x) for x in (out / f"gemm_sustained_{name}.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("hset", (heldout13, heldout14, heldout15, heldout16), ids=lambda m: m.SWEEP_NAME)
def test_older_sets_do_not_probe(hset, tmp_path, monkeypatch):
    dev = FakeDevice(monkeypatch)
    assert gemm_runs.run_sustained_sweep(hset.SWEEP_NAME, tmp_path, 2.0, 1.0, only=2) == 0
    assert dev.compiles == [(hset.sweep()[:2], None)] and dev.probes == []
    for rec in records(tmp_path, hset.SWEEP_NAME):
        assert not {k for k in rec if k.startswith(("sm_clock_eff", "probe_"))}
    summary = json.loads((tmp_path / f"summary_{hset.SWEEP_NAME}.json").read_text())
    assert set(summary[0]) == {"tag", "status", *gemm_runs.SUSTAINED_SUMMARY_KEYS}


def test_heldout17_probes_each_configuration_after_its_timing(tmp_path, monkeypatch):
    dev = FakeDevice(monkeypatch)
    ps = heldout17.sweep()[:3]
    assert gemm_runs.run_sustained_sweep("heldout17", tmp_path, 2.0, 1.0, only=3) == 0
    # one pool: the plain builds, then the same configurations' profile builds
    assert dev.compiles == [(ps + ps, [()] * 3 + [gemm_profile.PROFILE_FLAGS] * 3)]
    assert dev.probes == [(p.tag, ("build", p.tag, gemm_profile.PROFILE_FLAGS), 0.5, 0.25) for p in ps]
    for rec in records(tmp_path, "heldout17"):
        assert rec["time_ms"] == 1.25 and rec["sm_clock_mhz_tw"] == 1700.0  # the plain kernel's timing
        assert rec["sm_clock_eff_mhz"] == 1650.0 and rec["probe_time_ms"] == 1.3 and rec["status"] == "ok"
        assert rec["heldout"] == "issue14-17"
    summary = json.loads((tmp_path / "summary_heldout17.json").read_text())
    assert summary[0]["sm_clock_eff_mhz"] == 1650.0


def test_a_failed_probe_keeps_the_timing(tmp_path, monkeypatch):
    FakeDevice(monkeypatch, probe_fails=True)
    assert gemm_runs.run_sustained_sweep("heldout17", tmp_path, 2.0, 1.0, only=2) == 0
    for rec in records(tmp_path, "heldout17"):
        assert rec["status"] == "ok" and rec["time_ms"] == 1.25
        assert rec["probe_error"] == "RuntimeError: profile launch failed" and "sm_clock_eff_mhz" not in rec


def test_a_profile_build_that_failed_to_compile_is_a_probe_error():
    err = gemm_runs.probe_record(heldout17.sweep()[0], RuntimeError("nvcc failed"), (0.5, 0.25))
    assert err == {"probe_error": "RuntimeError: nvcc failed"}
