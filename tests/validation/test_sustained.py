"""Issue 13's sustained timing mode and held-out GEMM set, without a GPU: the held-out generator
(deterministic, only valid configurations, the frozen set's identity, coverage of every variant x
dtype x accumulator and every knob value, disjoint from the recorded configurations), the cuBLAS
picks, the run plan against the device budget, the sustained-window statistics on synthetic batch
series (laws: a constant rate gives that rate; the steady window is the last steady_s; the energy
counter's slope is the power), the records JSONL round trip and the CLI's bad input."""

from __future__ import annotations

import hashlib
import json

import pytest

from kernels.params import GemmParams
from validation import gemm_runs, heldout13, sustained
from validation.provenance import RECORDS_DIR, append_jsonl, load_records, record_dict, split_jsonl, write_record

#: sha256 of the held-out set's tags joined by newlines, as drawn on 2026-11-24 (SEED 20261124):
#: the set is held out only while it stays the same set.
FROZEN_DIGEST = "dd5dee0e2202ddb39839694c723f8192973aa765e1c790aa8c1a9afdd2587aa7"


def _digest(params) -> str:
    return hashlib.sha256("\n".join(p.tag for p in params).encode()).hexdigest()


# ----------------------------------------------------------------------------- generator
def test_generator_is_deterministic_and_the_set_is_frozen():
    a, b = heldout13.generate(), heldout13.generate()
    assert a == b
    assert _digest(a) == FROZEN_DIGEST
    assert heldout13.generate(seed=heldout13.SEED + 1) != a  # the seed matters


def test_generator_yields_n_distinct_valid_configurations():
    ps = heldout13.generate()
    assert len(ps) == heldout13.N_CONFIGS == 48 and len(set(ps)) == 48
    for p in ps:
        assert GemmParams.from_dict(p.to_dict()) == p  # construction re-validates every knob
        assert 1024 <= p.m <= 16384 and 1024 <= p.n <= 16384 and 512 <= p.k <= 16384
        assert heldout13.MIN_FLOPS <= p.flops <= heldout13.MAX_FLOPS
        assert 1 <= p.stages <= p.max_stages_that_fit
    assert len(heldout13.generate(n=7)) == 7 and heldout13.generate(n=7) == ps[:7]


def test_generator_covers_each_variant_dtype_accumulator_and_knob():
    ps = heldout13.generate()
    strata = {(p.variant, p.num_consumer_warpgroups, p.dtype, p.accum) for p in ps}
    assert strata == set(heldout13.STRATA) and len(strata) == 9
    for s in heldout13.STRATA:
        assert sum((p.variant, p.num_consumer_warpgroups, p.dtype, p.accum) == s for p in ps) >= 48 // 9
    knobs = {"bm": {64, 128, 256}, "bn": {64, 128, 256}, "swizzle": {"32B", "64B", "128B"},
             "box_rows": {8, 16, 32, 64, 128, 256}, "ctas_per_sm": {"auto", 1},
             "tma_issuer": {"lane", "elect"}, "epilogue": {"direct", "stmatrix"},
             "layout": {"tn", "nn"}, "raster": {"row", "grouped"}}
    for knob, values in knobs.items():
        assert {getattr(p, knob) for p in ps} == values, knob
    assert {p.stages for p in ps} >= {1, 2, 3, 4, 8}
    assert not any(p.m == p.n == p.k for p in ps)  # non-square shapes


def test_heldout_set_is_disjoint_from_records_and_other_sweeps():
    held = heldout13.generate()
    recorded = {GemmParams.from_dict(r["params"]) for r in load_records("gemm", RECORDS_DIR)}
    assert recorded and not (set(held) & recorded)
    for name, fn in gemm_runs.SWEEPS.items():
        if name != heldout13.SWEEP_NAME:
            assert not (set(held) & set(fn())), name


def test_cublas_picks_are_the_largest_distinct_shapes():
    ps = heldout13.generate()
    picks = heldout13.cublas_picks(ps)
    assert len(picks) == 6
    shape = lambda p: (p.m, p.n, p.k, p.dtype, p.layout)  # noqa: E731
    assert len({shape(ps[i]) for i in picks}) == 6
    smallest_pick = min(ps[i].flops for i in picks)
    assert all(ps[i].flops <= smallest_pick for i in range(len(ps))
               if i not in picks and shape(ps[i]) not in {shape(ps[j]) for j in picks})


def test_run_plan_fits_the_device_budget():
    """The planned run (3 s sustained each, 6 cuBLAS loops) fits the 420 s --budget, and the
    guard's worst case (a configuration started just before the budget, with its cuBLAS loop)
    ends within the 8 minutes the device run may take."""
    ps = heldout13.generate()
    plan = heldout13.plan_seconds(ps, 3.0, 6)
    assert plan <= 420
    worst_tail = 2 * (heldout13.OVERHEAD_S + 3.0)
    assert 420 + worst_tail + 30 <= 480
    assert heldout13.plan_seconds(ps, 6.0, 6) > plan  # the plan grows with the window


# ----------------------------------------------------------------------------- statistics
def _series(rates_ms, per_batch, t0=100.0):
    """Back-to-back batches: per-launch times -> (batch ends on the host clock, ms)."""
    ends, t = [], t0
    for r in rates_ms:
        t += r * per_batch / 1e3
        ends.append(t)
    return ends, list(rates_ms)


def test_constant_rate_gives_that_rate():
    ends, ms = _series([2.0] * 150, per_batch=10)  # 150 batches of 20 ms: a 3 s window
    s = sustained.sustained_summary(ends, ms, 10, steady_s=1.5, flops=int(1e12))
    assert s["time_ms"] == pytest.approx(2.0) and s["time_ms_mean"] == pytest.approx(2.0)
    assert s["window_s"] == pytest.approx(3.0) and s["drift_pct"] == pytest.approx(0.0)
    assert s["batches"] == 75 and s["launches"] == 750  # 1.5 s of 20 ms batches
    assert s["tflops"] == pytest.approx(1e12 / 2e-3 / 1e12)


def test_steady_window_is_the_last_steady_s():
    # 1.5 s at 1.0 ms/launch (the boost transient), then 1.5 s at 1.5 ms/launch (the capped clock)
    ends, ms = _series([1.0] * 75 + [1.5] * 50, per_batch=20)
    s = sustained.sustained_summary(ends, ms, 20, steady_s=1.5)
    assert s["time_ms"] == pytest.approx(1.5) and s["time_ms_mean"] == pytest.approx(1.5)
    assert s["batches"] == 50 and s["steady_from_s"] == pytest.approx(1.5)
    assert s["first_batch_time_ms"] == 1.0 and s["total_batches"] == 125
    # a window reaching back into the transient mixes both; the mean is total time / launches
    s2 = sustained.sustained_summary(ends, ms, 20, steady_s=2.1)
    t_steady = 2.1 - 1e-9
    n_fast = int(round((t_steady - 1.5) / 0.02))  # whole 20 ms batches of the fast part inside
    assert s2["batches"] == 50 + n_fast
    assert s2["time_ms_mean"] == pytest.approx((n_fast * 1.0 + 50 * 1.5) / (50 + n_fast))
    assert s2["drift_pct"] > 0  # second half slower than the first


def test_steady_power_from_samples_in_the_window():
    ends, ms = _series([1.0] * 75 + [1.5] * 50, per_batch=20, t0=0.0)
    ts = [i * 0.01 for i in range(301)]
    # boost then cap: 1980 MHz / 500 W before 1.45 s, 1350 MHz / 700 W after (the counter's
    # slope); the averaged reading lags: 450 W until 1.6 s, then 690 W
    energy, e = [], 0.0
    for i, t in enumerate(ts):
        if i:
            e += (500.0 if ts[i - 1] < 1.45 else 700.0) * (t - ts[i - 1]) * 1e3
        energy.append(e)
    samples = [{"t": t, "sm_mhz": 1980 if t < 1.45 else 1350, "power_w": 450.0 if t < 1.6 else 690.0,
                "energy_mj": en, "reasons": 0 if t < 1.45 else 0x4} for t, en in zip(ts, energy)]
    s = sustained.sustained_summary(ends, ms, 20, steady_s=1.5, samples=samples)
    assert s["sm_clock_mhz_tw"] == pytest.approx(1350) and s["sm_clock_mhz_max"] == 1350
    assert s["power_w_counter"] == pytest.approx(700.0)
    assert s["energy_per_launch_mj"] == pytest.approx(700.0 * 1.5)  # W x ms = mJ
    assert s["reasons"] == {"sw_power_cap": pytest.approx(1.0)}
    # the lagging reading, held from the window's start (1.5 s) to the next sample
    assert s["power_w_nvml_tw"] == pytest.approx((0.1 * 450 + 1.4 * 690) / 1.5)


def test_summary_rejects_mismatched_series_and_trajectory_is_compact():
    with pytest.raises(ValueError):
        sustained.sustained_summary([1.0, 2.0], [1.0], 1, 1.0)
    tr = sustained.trajectory([10.123456, 10.5], [1.234567891, 2.0], 10.0)
    assert tr == {"t_end_s": [0.1235, 0.5], "ms_per_launch": [1.2346, 2.0]}


def test_plan_batch_is_a_multiple_of_the_input_sets_near_the_target():
    assert sustained.plan_batch(1e-3, 4) == 20  # 20 ms target / 1 ms, a multiple of 4
    assert sustained.plan_batch(1e-3, 6) == 18
    assert sustained.plan_batch(0.5, 2) == 2  # a launch longer than the target: one pass over the sets
    assert sustained.plan_batch(1e-7, 3, max_launches=512) == 510
    assert all(sustained.plan_batch(t, n) % n == 0 for t in (1e-5, 1e-4, 1e-2) for n in (2, 3, 32))


class _FakeGpu:
    """A stand-in for cupy.cuda with a virtual GPU clock: each launch takes `launch_ms`; events
    read the clock when recorded; graph capture is refused (the loop's stream fallback)."""

    def __init__(self, launch_ms: float):
        self.launch_ms, self.now_ms, self.launched = launch_ms, 0.0, []
        gpu = self

        class Event:
            def record(self, stream=None):
                self.t = gpu.now_ms

            def synchronize(self):
                pass

        class Stream:
            def __init__(self, non_blocking=False):
                pass

            def __enter__(self):
                return self

            def __exit__(self, *a):
                return False

            def begin_capture(self):
                raise RuntimeError("capture not supported by the fake")

            def end_capture(self):
                return None

            def synchronize(self):
                pass

        class Device:
            def synchronize(self):
                pass

        self.cuda = type("cuda", (), {"Event": Event, "Stream": Stream, "Device": Device,
                                      "get_elapsed_time": staticmethod(lambda a, b: b.t - a.t)})

    def launch(self, j):
        self.launched.append(j)
        self.now_ms += self.launch_ms


def test_sustain_loop_on_a_virtual_gpu(monkeypatch):
    """The loop's bookkeeping on a fake GPU whose launches take exactly 0.5 ms: every batch
    reads 0.5 ms per launch, the batches cover >= the requested GPU seconds plus at most the
    in-flight depth, inputs rotate over all sets, and the summary gives back 0.5 ms."""
    import sys

    gpu = _FakeGpu(0.5)
    monkeypatch.setitem(sys.modules, "cupy", gpu)
    loop = sustained.sustain_loop(gpu.launch, n_sets=4, seconds=0.3, warmup=5)
    assert loop["method"] == "stream" and loop["est_launch_ms"] == pytest.approx(0.5)
    per_batch = loop["per_batch"]
    assert per_batch == sustained.plan_batch(0.5e-3, 4) == 40
    assert all(m == pytest.approx(0.5) for m in loop["batch_ms"])
    covered = sum(loop["batch_ms"]) * per_batch / 1e3
    assert 0.3 <= covered <= 0.3 + (sustained.DEPTH + 1) * per_batch * 0.5e-3
    timed = gpu.launched[-len(loop["batch_ms"]) * per_batch:]
    assert [j % 4 for j in timed[:8]] == [0, 1, 2, 3, 0, 1, 2, 3]
    gaps = [b - a for a, b in zip(loop["batch_end_s"], loop["batch_end_s"][1:])]
    assert all(g == pytest.approx(per_batch * 0.5e-3) for g in gaps)  # back to back on the host clock
    s = sustained.sustained_summary(loop["batch_end_s"], loop["batch_ms"], per_batch, 0.1)
    assert s["time_ms"] == pytest.approx(0.5) and s["batches"] == 5


# ----------------------------------------------------------------------------- records, CLI
def test_records_jsonl_round_trip(tmp_path):
    prov = {"device_name": "test", "git_commit": "abc"}
    jl = tmp_path / "recs.jsonl"
    recs = [record_dict("gemm_sustained", f"heldout13__t{i}", {"time_ms": 1.0 + i, "sweep": "heldout13"}, prov)
            for i in range(2)]
    for r in recs:
        append_jsonl(jl, r)
    paths = split_jsonl(jl, tmp_path / "out")
    ref = write_record("gemm_sustained", "heldout13__t1", {"time_ms": 2.0, "sweep": "heldout13"}, prov,
                       out_dir=tmp_path / "ref")
    assert len(paths) == 2 and paths[1].read_text() == ref.read_text()
    assert json.loads(paths[0].read_text())["time_ms"] == 1.0
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(recs[0]) + "\n{\"no\": 1}\n")
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        split_jsonl(bad, tmp_path / "out2")
    assert not (tmp_path / "out2").exists()  # all lines checked before any file is written


def test_heldout_record_fields():
    p = heldout13.generate()[0]
    rec = gemm_runs.base_record(heldout13.SWEEP_NAME, p)
    assert rec["sweep"] == "heldout13" and rec["heldout"] == "issue13" and rec["tag"] == p.tag
    assert "heldout" not in gemm_runs.base_record("smoke", p)


@pytest.mark.parametrize("argv, field", [
    (["--sweep", "heldout13", "--list", "--steady-s", "3"], "--steady-s"),
    (["--sweep", "heldout13", "--list", "--sustain-s", "0"], "--sustain-s"),
    (["--sweep", "smoke", "--list", "--sustain-s", "2", "--steady-s", "-1"], "--steady-s"),
    (["--sweep", "heldout13", "--budget", "-5"], "--budget"),
    (["--list"], "--sweep"),
])
def test_cli_bad_input_is_one_line_and_exit_2(argv, field, capsys):
    assert gemm_runs.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and field in err


def test_cli_split_bad_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "x.jsonl"
    bad.write_text("not json\n")
    assert gemm_runs.main(["--split", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "x.jsonl:1" in err
    assert not (tmp_path / "o").exists()  # no partial output


def test_list_prints_without_simulating(capsys):
    assert gemm_runs.main(["--sweep", "heldout13", "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 49 and sum(line.endswith(" cublas") for line in out) == 6
    assert "48 configurations" in out[-1] and "plan about" in out[-1]


@pytest.mark.gpu
def test_sustained_loop_on_the_gpu():
    """On a GPU: a short sustained run keeps its laws (window >= seconds, the steady batches in
    the last steady_s, median between min and max, one trajectory point per batch)."""
    from validation import harness

    p = GemmParams(m=2048, n=2048, k=2048, bm=128, bn=128, stages=4)
    kern = harness.GemmKernel(p, harness.compile_gemm(p))
    r = harness.time_gemm_sustained(kern, seconds=0.6, steady_s=0.3)
    assert r["window_s"] >= 0.6 and r["timing_mode"] == "sustained"
    assert r["steady_from_s"] >= r["window_s"] - 0.3 - 1e-6
    assert r["time_ms_min"] <= r["time_ms"] <= r["time_ms_max"]
    assert len(r["trajectory"]["t_end_s"]) == len(r["trajectory"]["ms_per_launch"]) == r["total_batches"]
    assert r["launches_per_batch"] % r["input_sets"] == 0


def test_sustained_sweep_writes_one_jsonl_line_per_configuration(tmp_path, monkeypatch, capsys):
    """The run's bookkeeping with the GPU parts faked: one record line and one samples line per
    configuration, the held-out marker, cuBLAS on the picks only, a summary; the budget stops
    starting configurations; --split turns the JSONL into record files."""
    import types

    calls = []

    def timing(ms):
        return {"time_ms": ms, "time_ms_mean": ms, "tflops": 1.0, "sm_clock_mhz_tw": 1350.0,
                "power_w_counter": 699.0, "power_w_nvml_tw": 690.0, "drift_pct": 0.1,
                "energy_per_launch_mj": 699.0 * ms, "reasons": {"sw_power_cap": 1.0},
                "samples": {"t_s": [0.0, 0.01], "sm_mhz": [1980, 1350]}}

    fake = types.SimpleNamespace(
        compile_many=lambda ps: [types.SimpleNamespace(resources=lambda: {"registers": 168}, cubin=None)
                                 for _ in ps],
        GemmKernel=lambda p, c: types.SimpleNamespace(p=p, occupancy=lambda: 1),
        check_gemm=lambda k, seed: {"rel_err": 1e-4, "unwritten": 0, "correct": True},
        time_gemm_sustained=lambda k, s, st: calls.append(("kernel", k.p.tag)) or timing(2.0),
        time_cublas_sustained=lambda p, s, st: calls.append(("cublas", p.tag)) or timing(1.0))
    monkeypatch.setattr(gemm_runs, "harness", fake)
    monkeypatch.setattr(gemm_runs, "device_provenance", lambda: {"device_name": "fake", "git_commit": "x"})
    monkeypatch.setattr(gemm_runs, "power_limits", lambda: {"power_limit_enforced_w": 700.0})
    monkeypatch.setattr(gemm_runs, "sass_counts", lambda cubin: None)
    out = tmp_path / "run"
    assert gemm_runs.main(["--sweep", "heldout13", "--only", "8", "--out", str(out)]) == 0
    lines = [json.loads(x) for x in (out / "gemm_sustained_heldout13.jsonl").read_text().splitlines()]
    ps = heldout13.generate()[:8]
    assert [r["tag"] for r in lines] == [p.tag for p in ps]
    assert all(r["kind"] == "gemm_sustained" and r["heldout"] == "issue13" and r["status"] == "ok"
               and r["provenance"]["power"]["power_limit_enforced_w"] == 700.0 for r in lines)
    assert sum(r["cublas_pick"] for r in lines) == 6 == sum(c[0] == "cublas" for c in calls)
    assert all((r.get("pct_of_cublas") == 50.0) == r["cublas_pick"] for r in lines)
    assert all("samples" not in r for r in lines)
    smp = [json.loads(x) for x in (out / "samples_heldout13.jsonl").read_text().splitlines()]
    assert len(smp) == 8 and smp[0]["kernel"]["sm_mhz"] == [1980, 1350]
    assert len(json.loads((out / "summary_heldout13.json").read_text())) == 8
    # a budget already spent: nothing starts
    assert gemm_runs.main(["--sweep", "heldout13", "--only", "3", "--budget", "1e-9", "--out", str(out)]) == 1
    assert not (out / "gemm_sustained_heldout13.jsonl").exists() or \
        (out / "gemm_sustained_heldout13.jsonl").read_text() == ""
    capsys.readouterr()
