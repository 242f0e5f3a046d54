"""Simulated against measured: the numbers of the validation report (numpy only, no GPU).

GEMM configurations (`Entry`: config dict, measured time, simulated time, subset):

    error_pct     = 100 * (simulated - measured) / measured        (signed, per configuration)
    MAPE          = mean |error_pct|
    worst         = the configuration with the largest |error_pct|
    Spearman rho  = Pearson correlation of the ranks (ties get their average rank)
    sweep shape   = configurations grouped by every knob except the swept one; in each group a
                    point's time relative to its group's best, sim vs hw:
                        rel_sim = sim / min(sim),  rel_hw = hw / min(hw)
                        ok  <=>  |rel_sim / rel_hw - 1| <= 10%   for every point of the group

`subset` separates configurations used to calibrate ("calibration") from the ones the simulator
never saw ("held-out"); the summary is computed over all, and over each subset on its own.

Microbenchmarks: (name, config field, measured, simulated, unit) -> error % and within 10%.
Bank conflicts: (pattern, measured wavefronts, simulated wavefronts) -> exact-match count.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

SHAPE_TOLERANCE = 0.10
MICRO_TOLERANCE = 0.10
CALIBRATION = "calibration"
HELD_OUT = "held-out"


@dataclass(frozen=True)
class Entry:
    """One GEMM configuration measured on hardware and simulated."""

    config: dict
    measured: float
    simulated: float
    subset: str = HELD_OUT
    label: str = ""

    @property
    def error_pct(self) -> float:
        return error_pct(self.measured, self.simulated)


def error_pct(measured: float, simulated: float) -> float:
    """Signed error of the simulation in percent of the measurement."""
    return 100.0 * (simulated - measured) / measured


def mape(measured: Sequence[float], simulated: Sequence[float]) -> float:
    """Mean absolute percentage error (percent)."""
    m = np.asarray(measured, dtype=float)
    s = np.asarray(simulated, dtype=float)
    if m.size == 0:
        return float("nan")
    return float(np.mean(np.abs(s - m) / m) * 100.0)


def rankdata(x: Sequence[float]) -> np.ndarray:
    """Ranks 1..n; tied values share the average of their ranks (as scipy's 'average')."""
    a = np.asarray(x, dtype=float)
    order = np.argsort(a, kind="mergesort")
    ranks = np.empty(a.size, dtype=float)
    sorted_a = a[order]
    i = 0
    while i < a.size:
        j = i
        while j + 1 < a.size and sorted_a[j + 1] == sorted_a[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation; nan for fewer than 2 points or a constant input."""
    if len(x) != len(y):
        raise ValueError("spearman: x and y differ in length")
    if len(x) < 2:
        return float("nan")
    rx, ry = rankdata(x), rankdata(y)
    rx -= rx.mean()
    ry -= ry.mean()
    den = math.sqrt(float(np.sum(rx * rx)) * float(np.sum(ry * ry)))
    return float(np.sum(rx * ry) / den) if den > 0 else float("nan")


# --------------------------------------------------------------------------- GEMM summary


@dataclass(frozen=True)
class Summary:
    """Error statistics over a set of entries."""

    n: int
    mape_pct: float
    worst_error_pct: float
    worst_label: str
    spearman: float
    mean_error_pct: float  # signed: > 0 means the simulator is slow on average

    def row(self) -> dict:
        return dict(n=self.n, mape_pct=self.mape_pct, worst_error_pct=self.worst_error_pct,
                    worst=self.worst_label, spearman=self.spearman,
                    mean_error_pct=self.mean_error_pct)


def summarize(entries: Sequence[Entry]) -> Summary:
    if not entries:
        return Summary(0, float("nan"), float("nan"), "", float("nan"), float("nan"))
    errs = np.array([e.error_pct for e in entries])
    w = int(np.argmax(np.abs(errs)))
    return Summary(
        n=len(entries),
        mape_pct=mape([e.measured for e in entries], [e.simulated for e in entries]),
        worst_error_pct=float(errs[w]),
        worst_label=entries[w].label or _label(entries[w].config),
        spearman=spearman([e.measured for e in entries], [e.simulated for e in entries]),
        mean_error_pct=float(errs.mean()),
    )


def _label(config: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in config.items())


@dataclass(frozen=True)
class SweepShape:
    """One sweep (a group of configurations that differ only in `knob`) and its shape check."""

    knob: str
    fixed: tuple              # ((knob, value), ...) shared by the group, only those that vary
    values: tuple             # the swept values, sorted
    rel_hw: tuple             # hw / min(hw) per value
    rel_sim: tuple            # sim / min(sim) per value
    measured: tuple
    simulated: tuple
    tolerance: float = SHAPE_TOLERANCE

    @property
    def deviation(self) -> tuple:
        """rel_sim / rel_hw - 1 per point."""
        return tuple(s / h - 1.0 for s, h in zip(self.rel_sim, self.rel_hw))

    @property
    def worst_deviation(self) -> float:
        return max((abs(d) for d in self.deviation), default=0.0)

    @property
    def ok(self) -> bool:
        return self.worst_deviation <= self.tolerance + 1e-12

    @property
    def best_agrees(self) -> bool:
        """The simulator picks the same best value of the knob as the hardware."""
        return int(np.argmin(self.measured)) == int(np.argmin(self.simulated))

    @property
    def name(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.fixed) or "all"


def _sort_key(v: Any):
    try:
        return (0, float(v), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(v))


def sweep_shapes(entries: Sequence[Entry], knob: str, *, tolerance: float = SHAPE_TOLERANCE,
                 min_points: int = 2) -> list[SweepShape]:
    """Every sweep along `knob`: entries grouped by all other config keys (configurations that
    lack the knob are skipped); groups with fewer than `min_points` values are not sweeps."""
    groups: dict = defaultdict(list)
    for e in entries:
        if knob not in e.config:
            continue
        rest = tuple(sorted((k, _hashable(v)) for k, v in e.config.items() if k != knob))
        groups[rest].append(e)
    varying = _varying_keys([e.config for e in entries], exclude=knob)
    out = []
    for rest, es in groups.items():
        by_val = {}
        for e in es:  # a repeated configuration: keep the first
            by_val.setdefault(_hashable(e.config[knob]), e)
        if len(by_val) < min_points:
            continue
        vals = sorted(by_val, key=_sort_key)
        hw = np.array([by_val[v].measured for v in vals], dtype=float)
        sim = np.array([by_val[v].simulated for v in vals], dtype=float)
        out.append(SweepShape(
            knob=knob, fixed=tuple((k, v) for k, v in rest if k in varying), values=tuple(vals),
            rel_hw=tuple(hw / hw.min()), rel_sim=tuple(sim / sim.min()),
            measured=tuple(hw), simulated=tuple(sim), tolerance=tolerance))
    return sorted(out, key=lambda s: [_sort_key(v) for _, v in s.fixed])


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _varying_keys(configs: Iterable[dict], exclude: str) -> set:
    seen: dict = defaultdict(set)
    for c in configs:
        for k, v in c.items():
            seen[k].add(repr(v))
    return {k for k, vs in seen.items() if len(vs) > 1 and k != exclude}


@dataclass(frozen=True)
class GemmComparison:
    """Everything the report says about GEMM configurations."""

    entries: tuple
    overall: Summary
    by_subset: dict
    shapes: dict = field(default_factory=dict)  # knob -> [SweepShape]

    def shape_counts(self, knob: str) -> tuple[int, int]:
        s = self.shapes.get(knob, [])
        return sum(x.ok for x in s), len(s)


def compare_gemm(triples: Iterable, knobs: Sequence[str] = ("stages", "box_rows"), *,
                 tolerance: float = SHAPE_TOLERANCE) -> GemmComparison:
    """From `Entry`s or (config, measured, simulated[, subset]) tuples: overall and per-subset
    summaries and the sweep shapes along each knob."""
    entries = tuple(t if isinstance(t, Entry) else Entry(*t) for t in triples)
    for e in entries:
        if not (e.measured > 0 and math.isfinite(e.measured) and math.isfinite(e.simulated)):
            raise ValueError(f"compare: measured and simulated must be finite, measured > 0: {e}")
    subsets = sorted({e.subset for e in entries})
    return GemmComparison(
        entries=entries, overall=summarize(entries),
        by_subset={s: summarize([e for e in entries if e.subset == s]) for s in subsets},
        shapes={k: sweep_shapes(entries, k, tolerance=tolerance) for k in knobs})


# --------------------------------------------------------------------------- microbenchmarks


@dataclass(frozen=True)
class MicroRow:
    """A microbenchmark simulated against its measurement."""

    name: str
    field: str        # the config field it measures
    measured: float
    simulated: float
    unit: str = "cycles"
    tolerance: float = MICRO_TOLERANCE
    calibration: bool = False  # a calibrated number was read from this row (reproduced, not validated)

    @property
    def error_pct(self) -> float:
        return error_pct(self.measured, self.simulated)

    @property
    def ok(self) -> bool:
        return abs(self.error_pct) <= 100 * self.tolerance + 1e-9


def compare_micro(rows: Iterable) -> list[MicroRow]:
    return [r if isinstance(r, MicroRow) else MicroRow(*r) for r in rows]


@dataclass(frozen=True)
class BankResult:
    """Bank-conflict truth set against the simulator: exact wavefront matches."""

    rows: tuple  # (pattern, measured, simulated)

    @property
    def exact(self) -> int:
        return sum(int(m) == int(s) for _, m, s in self.rows)

    @property
    def total(self) -> int:
        return len(self.rows)

    @property
    def mismatches(self) -> list:
        return [r for r in self.rows if int(r[1]) != int(r[2])]


def compare_bank(rows: Iterable[tuple]) -> BankResult:
    return BankResult(tuple(tuple(r) for r in rows))


# --------------------------------------------------------------------------- records


def gemm_entries_from_records(records: Iterable[dict], simulate, *,
                              calibration: Iterable[str] = (), config_keys: Sequence[str] | None = None
                              ) -> list[Entry]:
    """Entries from hardware records (`validation.provenance.load_records("gemm")`): each record's
    `params` are simulated with `simulate(params) -> time_ms`; records whose tag is in
    `calibration` are marked as the calibration subset. Failed or wrong records are skipped."""
    cal = set(calibration)
    out = []
    for rec in records:
        if rec.get("status", "ok") != "ok" or not rec.get("time_ms"):
            continue
        params = dict(rec["params"])
        cfg = {k: params[k] for k in config_keys} if config_keys else params
        tag = rec.get("tag", "")
        out.append(Entry(cfg, float(rec["time_ms"]), float(simulate(params)),
                         CALIBRATION if tag in cal else HELD_OUT, tag))
    return out
