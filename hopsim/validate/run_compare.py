"""`hopsim validate compare`: simulate every recorded GEMM configuration and report against the H100.

    from hopsim.validate.run_compare import compare_records
    out = compare_records(out_dir="validation/reports/latest", jobs=2)
    out.gemm.overall.mape_pct, out.report_path

Steps:
1. Hardware points: every `gemm` record under validation/records/h100 with status ok; records with
   identical parameters (the same configuration measured in two sweeps) are merged: the measured
   time is their median, the clock their median.
2. Each point is simulated with `hopsim.gemm_sim.simulate_point` (fast mode) on a process pool.
   Results are cached per model fingerprint (a hash of the simulator's sources and calibrated
   config), so re-running the report after a plotting change costs nothing.
3. Basis. The headline is the real prediction: CUDA-event time against the simulated time at
   the sustained clock the power model predicts (hopsim/power; calibrated on the power
   microbenchmarks only), with predicted vs measured clock (and power where the record has
   `power_samples_summary`; old records: the nvidia-smi clock after the batches, so stated).
   Diagnostics of the SM model: each point is also simulated at the SM clock its own run measured
   (`HwPoint.sim_clock_mhz`); cycles: the `gemm_cycles` record (validation/cycle_profile.py:
   clock64 per CTA on the H100, max over SMs of the span from the first CTA start to the last CTA
   end) against the simulated cycles; time against the simulated cycles at the measured clock.
   The same simulate_point call gives both (the clock solve caches its simulations by clock).
4. Subsets. Every GEMM record is held out: the timing parameters come from microbenchmarks only
   (hopsim/validate/calibrate.py). Nothing is fitted to GEMM times.
5. Also: microbenchmarks simulated vs measured (hopsim/validate/micro_sim.py: rows a calibrated number
   was read from reproduce by construction and are marked; the rest are checks) and the
   bank-conflict truth set (exact matches).
"""

from __future__ import annotations

import functools
import json
import os
import pathlib
import statistics
from dataclasses import dataclass, field
from typing import Any, Sequence

from hopsim import sweep
from hopsim.fingerprint import model_fingerprint
from hopsim.functional.banks import wavefronts
from hopsim.power.model import PowerModel
from hopsim.cache import cache_dir
from hopsim.validate.compare import (
    HELD_OUT, BankResult, Entry, GemmComparison, MicroRow, compare_bank, compare_gemm,
)
from hopsim.validate.micro_sim import simulate_micro
from hopsim.validate.report import write_report
from validation.provenance import RECORDS_DIR, load_records

ROOT = pathlib.Path(__file__).resolve().parents[2]
CACHE_DIR = cache_dir()  # $HOPSIM_CACHE or ~/.cache/hopsim (hopsim/cache.py)
#: The CI fidelity subset: every CI_EVERY-th hardware point (sorted by parameters), re-simulated
#: by tests/validation/test_fidelity.py against the bounds the committed report states.
CI_EVERY = 10
#: Headroom of the stated CI bounds over the subset's error when the report was made: a
#: regression guard (a model change may not make the subset worse than this), not a target.
CI_MAPE_HEADROOM_PCT = 2.0
CI_SPEARMAN_HEADROOM = 0.03
REPORT_DIR = ROOT / "validation" / "reports" / "h100"
SHAPE_KNOBS = ("stages", "box_rows", "ctas_per_sm", "swizzle", "variant", "layout")


@functools.lru_cache(maxsize=1)
def _tensor_clock_ratio() -> float:
    """The SMs' clock over NVML's for a tensor kernel (hopsim/config/power.py), read once."""
    return PowerModel.load().sm_clock_ratio(tensor_cores=True)


@dataclass(frozen=True)
class HwPoint:
    """One hardware configuration (records with equal params merged)."""

    params: dict
    measured_ms: float
    clock_mhz: float                 # nvidia-smi after the timed batches (the gemm record)
    tags: tuple
    sweeps: tuple
    n_records: int
    measured_cycles: float | None = None   # gemm_cycles record: clock64 span, max over SMs
    profile_clock_mhz: float | None = None  # gemm_cycles record: clock64 / globaltimer
    ctas_per_sm_seen: int | None = None
    nvml_clock_mhz: float | None = None    # power_samples_summary: time-weighted SM clock of the window
    nvml_power_w: float | None = None      # power_samples_summary: time-weighted NVML power
    nvml_clock_median_mhz: float | None = None  # power_samples_summary: median SM clock sample
    nvml_window_s: float | None = None     # power_samples_summary: length of the sampled window

    @property
    def sim_clock_mhz(self) -> float | None:
        """The SM clock the point is simulated at for the SM-model diagnostic: the one its run
        measured (clock64 over %globaltimer; else NVML's time-weighted clock over the timed
        window, else nvidia-smi after the batch, either x tensor_sm_clock_ratio: the SMs of a
        tensor kernel run below the clock NVML reports, hopsim/config/power.py), capped at the
        spec maximum."""
        reported = self.nvml_clock_mhz or (self.clock_mhz if self.clock_mhz == self.clock_mhz else None)
        c = self.profile_clock_mhz or (reported * _tensor_clock_ratio() if reported else None)
        return None if not c else round(min(float(c), 1980.0), 1)

    @property
    def measured_clock(self) -> tuple[float | None, str]:
        """The clock the predicted clock is compared with, and where it comes from."""
        if self.nvml_clock_mhz:
            return self.nvml_clock_mhz, "NVML time-weighted over the timed window"
        if self.profile_clock_mhz:
            return (self.profile_clock_mhz / _tensor_clock_ratio(),
                    "clock64 / %globaltimer (cycle profile) / tensor_sm_clock_ratio")
        if self.clock_mhz == self.clock_mhz:
            return self.clock_mhz, "nvidia-smi right after the timed batches (old record)"
        return None, "none"

    @property
    def key(self) -> str:
        return json.dumps({**self.params, "sm_clock_mhz": self.sim_clock_mhz}, sort_keys=True)

    @property
    def label(self) -> str:
        return self.tags[0]


def hardware_points(records_dir: pathlib.Path | None = None) -> list[HwPoint]:
    """The GEMM configurations measured on the H100 (merged by parameters), in a stable order."""
    groups: dict[str, list[dict]] = {}
    cycles: dict[str, dict] = {}
    for rec in load_records("gemm_cycles", records_dir or RECORDS_DIR):
        if rec.get("status") == "ok" and rec.get("kernel_cycles"):
            cycles[json.dumps(rec["params"], sort_keys=True)] = rec
    for rec in load_records("gemm", records_dir or RECORDS_DIR):
        if rec.get("status", "ok") != "ok" or not rec.get("time_ms") or not rec.get("correct", True):
            continue
        groups.setdefault(json.dumps(rec["params"], sort_keys=True), []).append(rec)
    out = []
    for key in sorted(groups):
        recs = groups[key]
        clocks = [float(r["sm_clock_mhz_after"]) for r in recs if r.get("sm_clock_mhz_after")]
        cyc = cycles.get(key, {})
        nv_clk = _nvml(recs, "sm_mhz")
        nv_pow = _nvml(recs, "power_w")
        nv_med = _nvml(recs, "sm_mhz", "median")
        nv_win = [float(r["power_samples_summary"]["seconds"]) for r in recs
                  if (r.get("power_samples_summary") or {}).get("seconds")]
        out.append(HwPoint(params=dict(recs[0]["params"]),
                           measured_ms=float(statistics.median(r["time_ms"] for r in recs)),
                           clock_mhz=float(statistics.median(clocks)) if clocks else float("nan"),
                           tags=tuple(sorted({r.get("tag", "") for r in recs})),
                           sweeps=tuple(sorted({r.get("sweep", "") for r in recs})),
                           n_records=len(recs), measured_cycles=cyc.get("kernel_cycles"),
                           profile_clock_mhz=cyc.get("clock_mhz"),
                           ctas_per_sm_seen=cyc.get("ctas_per_sm_seen"),
                           nvml_clock_mhz=nv_clk, nvml_power_w=nv_pow, nvml_clock_median_mhz=nv_med,
                           nvml_window_s=float(statistics.median(nv_win)) if nv_win else None))
    return out


def _nvml(recs: list[dict], key: str, stat: str = "tw_mean") -> float | None:
    """Median over records of power_samples_summary[key][stat] (None for old records)."""
    vals = [float(r["power_samples_summary"][key][stat]) for r in recs
            if (r.get("power_samples_summary") or {}).get(key, {}).get(stat)]
    return float(statistics.median(vals)) if vals else None


def ci_points(points: Sequence[HwPoint]) -> list[HwPoint]:
    """The CI fidelity subset of `points` (every CI_EVERY-th)."""
    return list(points[::CI_EVERY])


def ci_summary(points: Sequence[HwPoint], rows: Sequence[dict]) -> dict:
    """MAPE and Spearman (cycles) of the CI subset, with the bounds the CI test enforces."""
    sub = {id(p) for p in ci_points(points)}
    pr = [(p, r) for p, r in zip(points, rows) if id(p) in sub]
    g = compare_gemm(entries([p for p, _ in pr], [r for _, r in pr]), knobs=()).overall
    return {"every": CI_EVERY, "n": g.n, "labels": [p.label for p, _ in pr],
            "mape_pct": g.mape_pct, "spearman": g.spearman,
            "bound_mape_pct": round(g.mape_pct + CI_MAPE_HEADROOM_PCT, 1),
            "bound_spearman": round(g.spearman - CI_SPEARMAN_HEADROOM, 3)}


def _cache_path(fp: str) -> pathlib.Path:
    return CACHE_DIR / "compare" / f"{fp}.json"


def simulate_points(points: Sequence[HwPoint], *, jobs: int | None = None, progress: bool = True,
                    use_cache: bool = True, gpu: str = "h100_sxm") -> list[dict]:
    """Simulated rows (hopsim.gemm_sim.flat_row) for each point, cached per model fingerprint."""
    fp = model_fingerprint()
    cache: dict[str, dict] = {}
    cp = _cache_path(fp)
    if use_cache and cp.exists():
        cache = json.loads(cp.read_text())
    todo = [p for p in points if p.key not in cache]
    if todo:
        rows = sweep.run_sweep([{**p.params, "gpu": gpu, "sm_clock_mhz": p.sim_clock_mhz} for p in todo],
                               sweep.load_function("hopsim.gemm_sim:simulate_point"),
                               executor="process" if len(todo) > 1 else "serial", jobs=jobs,
                               progress=progress)
        for p, r in zip(todo, rows):
            if not r.get("error"):
                cache[p.key] = {k: v for k, v in r.items() if k not in p.params and k != "gpu"}
            else:
                cache[p.key] = {"error": r["error"]}
        if use_cache:
            cp.parent.mkdir(parents=True, exist_ok=True)
            cp.write_text(json.dumps(cache))
    return [cache[p.key] for p in points]


@dataclass
class CompareOutput:
    gemm: GemmComparison              # cycles (primary)
    gemm_time: GemmComparison         # CUDA-event ms vs simulated cycles at the measured clock
    micro: list
    bank: BankResult | None
    failed: list = field(default_factory=list)
    report_path: pathlib.Path | None = None
    fingerprint: str = ""
    gemm_predicted: GemmComparison | None = None  # CUDA-event ms vs time at the PREDICTED clock
    clocks: list = field(default_factory=list)    # per point: predicted vs measured clock/power


def entries(points: Sequence[HwPoint], rows: Sequence[dict], *, basis: str = "cycles") -> list[Entry]:
    """GEMM entries. basis "predicted": CUDA-event ms vs the simulated time at the clock the
    power model predicts (sustained: the real prediction); "cycles": H100 clock64 cycles vs
    simulated cycles (points without a cycle profile are left out); "observed": CUDA-event ms vs
    simulated cycles at the measured clock (diagnostics of the SM model)."""
    out = []
    for p, r in zip(points, rows):
        if r.get("error") or not r.get("cycles"):
            continue
        if basis == "predicted":
            if not r.get("time_ms_sustained"):
                continue
            measured, sim = p.measured_ms, float(r["time_ms_sustained"])
        elif basis == "cycles":
            if not p.measured_cycles:
                continue
            measured, sim = float(p.measured_cycles), float(r["cycles"])
        elif basis == "observed":
            clock = p.sim_clock_mhz or 1980.0
            measured, sim = p.measured_ms, float(r["cycles"]) / (clock * 1e3)
        else:
            raise ValueError(f"basis {basis!r}: 'predicted', 'cycles' or 'observed'")
        cfg = dict(p.params)
        cfg["shape"] = f"{p.params['m']}x{p.params['n']}x{p.params['k']}"
        out.append(Entry(cfg, measured, sim, HELD_OUT, p.label))
    return out


def bank_rows() -> list[tuple]:
    """(pattern, measured wavefronts, simulated wavefronts) for every ncu-measured pattern."""
    rows = []
    for rec in load_records("bank_conflicts"):
        for p in rec["patterns"]:
            r = wavefronts(p["op"], p["addrs"])
            rows.append((f"{rec['name']}:{p['name']}", p["wavefronts"], r.wavefronts))
    return rows


def micro_rows() -> list[MicroRow]:
    """Microbenchmarks simulated vs measured (hopsim/validate/micro_sim.py)."""
    rows = []
    for e in simulate_micro():
        if isinstance(e, MicroRow):
            rows.append(e)
        elif isinstance(e, Entry):
            rows.append(MicroRow(e.label or str(e.config), str(e.config.get("field", "")), e.measured,
                                 e.simulated))
        else:
            rows.append(MicroRow(*e))
    return rows


def compare_records(out_dir: str | os.PathLike | None = None, *, records_dir=None,
                    jobs: int | None = None, progress: bool = True, use_cache: bool = True,
                    only: int | None = None, micro: bool = True, bank: bool = True) -> CompareOutput:
    """Simulate every recorded configuration; write report.md + PNGs into out_dir if given."""
    points = hardware_points(records_dir)
    if only:
        points = points[:only]
    rows = simulate_points(points, jobs=jobs, progress=progress, use_cache=use_cache)
    failed = [(p.label, r["error"]) for p, r in zip(points, rows) if r.get("error")]
    g = compare_gemm(entries(points, rows), knobs=SHAPE_KNOBS)
    gt = compare_gemm(entries(points, rows, basis="observed"), knobs=())
    gp = compare_gemm(entries(points, rows, basis="predicted"), knobs=SHAPE_KNOBS)
    mrows = micro_rows() if micro else []
    brow = compare_bank(bank_rows()) if bank else None
    out = CompareOutput(g, gt, mrows, brow, failed, fingerprint=model_fingerprint(),
                        gemm_predicted=gp, clocks=clock_rows(points, rows))
    if out_dir is not None:
        pre = preamble(out, points)
        out.report_path = write_report(g, out_dir, micro=mrows, bank=brow, preamble=pre,
                                       title="hopsim vs H100: validation report", unit="cycles")
        ci = ci_summary(points, rows)
        with open(out.report_path, "a") as f:
            f.write(f"\n## CI fidelity bound\n\nEvery {ci['every']}th configuration ({ci['n']} of them) is "
                    f"re-simulated by `tests/validation/test_fidelity.py` in CI (no GPU). At this report: MAPE "
                    f"{ci['mape_pct']:.1f}%, Spearman {ci['spearman']:.3f}. The test fails if MAPE exceeds "
                    f"**{ci['bound_mape_pct']:.1f}%** or Spearman falls below **{ci['bound_spearman']:.3f}** "
                    f"(headroom {CI_MAPE_HEADROOM_PCT:g} points / {CI_SPEARMAN_HEADROOM:g}: a regression guard, "
                    "not the issue's target).\n")
        with open(out.report_path, "a") as f:
            f.write(clock_section(out.clocks))
        data = {"fingerprint": out.fingerprint, "ci": ci, "cycles": g.overall.row(),
                "time_predicted_clock": gp.overall.row(), "clocks": out.clocks,
                "time_profiled_clock": gt.overall.row(),
                "failed": failed,
                "points": [{"label": p.label, "params": p.params, "measured_ms": p.measured_ms,
                            "measured_cycles": p.measured_cycles, "clock_mhz": p.clock_mhz,
                            "profile_clock_mhz": p.profile_clock_mhz,
                            "ctas_per_sm_seen": p.ctas_per_sm_seen, "sim": r}
                           for p, r in zip(points, rows)]}
        pathlib.Path(out_dir, "compare.json").write_text(json.dumps(data, indent=1))
    return out


def clock_rows(points: Sequence[HwPoint], rows: Sequence[dict]) -> list[dict]:
    """Per point: predicted (sustained) clock and power against the measured ones."""
    out = []
    for p, r in zip(points, rows):
        if r.get("error") or not r.get("sustained_clock_mhz"):
            continue
        mclk, src = p.measured_clock
        pc, pp = float(r["sustained_clock_mhz"]), r.get("power_w_sustained")
        out.append({"label": p.label, "predicted_clock_mhz": pc, "measured_clock_mhz": mclk,
                    "measured_clock_source": src,
                    "clock_error_pct": 100.0 * (pc - mclk) / mclk if mclk else None,
                    "measured_clock_median_mhz": p.nvml_clock_median_mhz,
                    "measured_window_s": p.nvml_window_s,
                    "predicted_power_w": pp, "measured_power_w": p.nvml_power_w,
                    "power_error_pct": (100.0 * (pp - p.nvml_power_w) / p.nvml_power_w
                                        if pp and p.nvml_power_w else None),
                    "predicted_ms": r.get("time_ms_sustained"), "measured_ms": p.measured_ms,
                    "time_error_pct": (100.0 * (r["time_ms_sustained"] - p.measured_ms) / p.measured_ms
                                       if r.get("time_ms_sustained") else None)})
    return out


def clock_summary(clocks: Sequence[dict]) -> dict:
    """Mean absolute clock and power errors (%) over the points that have them."""
    def mae(key):
        v = [abs(c[key]) for c in clocks if c.get(key) is not None]
        return (sum(v) / len(v), len(v)) if v else (None, 0)
    (ce, cn), (pe, pn) = mae("clock_error_pct"), mae("power_error_pct")
    return {"clock_mape_pct": ce, "clock_n": cn, "power_mape_pct": pe, "power_n": pn}


def _f(v, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def clock_section(clocks: Sequence[dict]) -> str:
    s = clock_summary(clocks)
    lines = ["", "## Predicted vs measured clock and power (power model, hopsim/power)", "",
             f"Clock MAPE {_f(s['clock_mape_pct'], '.1f')}% over {s['clock_n']} configurations; power "
             f"MAPE {_f(s['power_mape_pct'], '.1f')}% over {s['power_n']} (only records with "
             "`power_samples_summary` have a measured power; old records give the clock nvidia-smi "
             "read right after the timed batches, stated per row). The prediction is the steady clock "
             "of a back-to-back loop; the clock falls ~90 ms after load starts and settles within "
             "~0.4 s (power/governor.jsonl step record), so a timed window of a few tenths of a "
             "second that starts near boost has a time-weighted clock above the steady one: the "
             "median sample and the window length are shown beside it.", "",
             "| configuration | predicted MHz | measured MHz (tw) | median MHz | window s | clock err % "
             "| predicted W | measured W | predicted ms | measured ms | time err % | measured clock from |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in clocks:
        lines.append(f"| `{c['label']}` | {c['predicted_clock_mhz']:.0f} | {_f(c['measured_clock_mhz'], '.0f')} "
                     f"| {_f(c['measured_clock_median_mhz'], '.0f')} | {_f(c['measured_window_s'], '.2f')} "
                     f"| {_f(c['clock_error_pct'], '+.1f')} | {_f(c['predicted_power_w'], '.0f')} "
                     f"| {_f(c['measured_power_w'], '.0f')} | {_f(c['predicted_ms'], '.4g')} "
                     f"| {c['measured_ms']:.4g} | {_f(c['time_error_pct'], '+.1f')} | {c['measured_clock_source']} |")
    return "\n".join(lines) + "\n"


def preamble(out: CompareOutput, points: Sequence[HwPoint]) -> str:
    g, gt = out.gemm.overall, out.gemm_time.overall
    gp = out.gemm_predicted.overall if out.gemm_predicted else None
    cs = clock_summary(out.clocks)
    head = [] if gp is None else [
        f"**Headline (time at the predicted clock, the real prediction): MAPE {gp.mape_pct:.1f}%, "
        f"worst {gp.worst_error_pct:+.1f}% (`{gp.worst_label}`), Spearman {gp.spearman:.3f} over "
        f"{gp.n} configurations.** Each configuration is simulated at the sustained clock the power "
        f"model predicts (hopsim/power: highest supported clock within the 700 W limit); predicted "
        f"clock vs measured: MAPE {_f(cs['clock_mape_pct'], '.1f')}% ({cs['clock_n']} points), power "
        f"{_f(cs['power_mape_pct'], '.1f')}% ({cs['power_n']} points with NVML power).", "",
        "The cycle and measured-clock numbers below are **diagnostics of the SM model** (the "
        "simulation told the clock the run measured), not predictions.", ""]
    n_prof = sum(1 for p in points if p.measured_cycles)
    lines = head + [
        f"Model fingerprint (SHA-256) `{out.fingerprint}`; {len(points)} H100 GEMM configurations "
        f"({sum(p.n_records for p in points)} records; repeated configurations merged by median), "
        f"{n_prof} of them with a cycle profile.",
        "",
        "**Every GEMM configuration is held out**: the timing parameters were calibrated on "
        "microbenchmarks only (`hopsim validate calibrate`); nothing was fitted to GEMM times.",
        "",
        "**Diagnostic basis.** The simulator predicts SM cycles. Under heavy tensor load the H100 lowers its "
        "SM clock (power management, predicted by the power model above; 1180-1980 MHz in these runs), while L2 and HBM "
        "keep their own clocks, so memory bandwidth per SM cycle depends on the SM clock. Each "
        "configuration is therefore simulated at the SM clock measured in its own run (clock64 over "
        "%globaltimer; an input condition, like the problem size, not a fitted number), and the "
        "primary comparison is in cycles: clock64 spans measured per SM on the H100 (`gemm_cycles` "
        "records, validation/cycle_profile.py) against simulated cycles.",
        "",
        f"**SM-model diagnostic (cycles at the measured clock): MAPE {g.mape_pct:.1f}%, worst {g.worst_error_pct:+.1f}% "
        f"(`{g.worst_label}`), Spearman {g.spearman:.3f}, mean signed error {g.mean_error_pct:+.1f}% "
        f"over {g.n} configurations.**",
        "",
        f"Time (CUDA events, median of the timed batches) against simulated cycles at the measured "
        f"clock: MAPE {gt.mape_pct:.1f}%, Spearman {gt.spearman:.3f} over {gt.n} configurations.",
    ]
    if out.failed:
        lines += ["", f"{len(out.failed)} configurations failed to simulate: " +
                  "; ".join(f"`{t}`: {e[:120]}" for t, e in out.failed)]
    return "\n".join(lines)
