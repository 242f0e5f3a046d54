"""The metrics of a held-out comparison that a kernel engineer reads (issue 14): pure functions.

Errors are simulated / measured - 1 (> 0: the simulator is slower than the H100).
  * `stats`: MAPE (mean |error|), signed mean, worst (the error of largest magnitude), counts
    within 5% and 10% (by |error|).
  * `sweep_fit`: one one-dimensional sweep (points that differ in one knob only, one shape):
    - the simulated best is the point with the lowest simulated time; among points the simulator
      ties, the one the hardware runs slowest (a tie never earns credit by luck);
    - best agrees: the simulated best is the hardware's best, or its hardware time lies within
      BEST_WITHIN (3%) of the hardware's best (issue 14);
    - shape within 10%: each point's time relative to its curve's best, simulated over measured,
      within CURVE_TOLERANCE (the curve's shape, as `validate compare`'s sweep shapes);
    - points within 10%: each point's own error within CURVE_TOLERANCE (the curve itself);
    - Spearman rank correlation of simulated vs measured times over the sweep's points.
  * `judge`: fixed targets (constants in the caller, never derived from an earlier report) ->
    met / not met; a target with no value is not met.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from hopsim.validate.compare import spearman

BEST_WITHIN = 0.03  # issue 14: "or lie within 3% of it on hardware"
CURVE_TOLERANCE = 0.10  # issue 14: "is the curve within 10% point by point"
TIE_REL = 1e-9  # simulated times this close (relative) are a tie


def err(sim: float | None, hw: float | None) -> float | None:
    """sim / hw - 1, or None where either is missing or hw is 0."""
    if sim is None or hw is None or not hw:
        return None
    return sim / hw - 1.0


def stats(xs: Sequence[float | None]) -> dict:
    """MAPE, signed mean and worst error (%), counts within 5% and 10%, over the finite values."""
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    if not xs:
        return {"n": 0}
    a = [abs(x) for x in xs]
    worst = max(xs, key=abs)
    return {"n": len(xs), "mape_pct": 100 * sum(a) / len(a), "mean_pct": 100 * sum(xs) / len(xs),
            "worst_pct": 100 * worst, "within_5pct": sum(x <= 0.05 for x in a),
            "within_10pct": sum(x <= 0.10 for x in a)}


def _finite(x: float) -> float | None:
    return x if x is not None and math.isfinite(x) else None


@dataclass(frozen=True)
class SweepFit:
    """One one-dimensional sweep: its points' labels, measured and simulated times (same order)."""

    name: str
    dim: str
    labels: tuple
    hw: tuple
    sim: tuple

    @property
    def hw_best(self) -> int:
        return min(range(len(self.hw)), key=lambda i: self.hw[i])

    @property
    def sim_best(self) -> int:
        """The simulated best; among simulated ties the point the hardware runs slowest."""
        lo = min(self.sim)
        tied = [i for i in range(len(self.sim)) if self.sim[i] <= lo * (1 + TIE_REL)]
        return max(tied, key=lambda i: self.hw[i])

    @property
    def hw_loss(self) -> float:
        """How much slower, on the hardware, the simulated best runs than the hardware's best."""
        return self.hw[self.sim_best] / self.hw[self.hw_best] - 1.0

    @property
    def best_same(self) -> bool:
        return self.hw[self.sim_best] == self.hw[self.hw_best]

    @property
    def best_agrees(self) -> bool:
        return self.hw_loss <= BEST_WITHIN + 1e-12

    @property
    def shape_dev(self) -> tuple:
        """(sim / min sim) / (hw / min hw) - 1 per point."""
        hmin, smin = min(self.hw), min(self.sim)
        return tuple((s / smin) / (h / hmin) - 1.0 for s, h in zip(self.sim, self.hw))

    @property
    def point_err(self) -> tuple:
        return tuple(s / h - 1.0 for s, h in zip(self.sim, self.hw))

    @property
    def shape_ok(self) -> bool:
        return max(abs(d) for d in self.shape_dev) <= CURVE_TOLERANCE + 1e-12

    @property
    def points_ok(self) -> bool:
        return max(abs(e) for e in self.point_err) <= CURVE_TOLERANCE + 1e-12

    @property
    def rho(self) -> float | None:
        return _finite(spearman(list(self.hw), list(self.sim)))

    def row(self) -> dict:
        return {"name": self.name, "dim": self.dim, "labels": list(self.labels),
                "hw_ms": list(self.hw), "sim_ms": list(self.sim),
                "hw_best": self.labels[self.hw_best], "sim_best": self.labels[self.sim_best],
                "hw_loss_pct": 100 * self.hw_loss, "best_same": self.best_same,
                "best_agrees": self.best_agrees, "shape_dev_pct": [100 * d for d in self.shape_dev],
                "worst_shape_dev_pct": 100 * max(self.shape_dev, key=abs), "shape_ok": self.shape_ok,
                "point_err_pct": [100 * e for e in self.point_err],
                "worst_point_err_pct": 100 * max(self.point_err, key=abs), "points_ok": self.points_ok,
                "spearman": self.rho}


def failed_row(name: str, dim: str, labels: Sequence, why: str) -> dict:
    """A sweep the simulator could not run at some measured point: it agrees on nothing."""
    return {"name": name, "dim": dim, "labels": list(labels), "error": why, "best_same": False,
            "best_agrees": False, "shape_ok": False, "points_ok": False, "spearman": None}


def sweep_summary(rows: Sequence[dict]) -> dict:
    """Counts over sweep rows (SweepFit.row() or failed_row()), overall and per knob."""
    def block(rs: Sequence[dict]) -> dict:
        rhos = [r["spearman"] for r in rs if r["spearman"] is not None and len(r["labels"]) >= 3]
        n = len(rs)
        agree = sum(r["best_agrees"] for r in rs)
        return {"n": n, "best_same": sum(r["best_same"] for r in rs), "best_agrees": agree,
                "best_agrees_pct": 100 * agree / n if n else None,
                "shape_ok": sum(r["shape_ok"] for r in rs), "points_ok": sum(r["points_ok"] for r in rs),
                "spearman_mean": sum(rhos) / len(rhos) if rhos else None, "spearman_n": len(rhos)}
    dims = sorted({r["dim"] for r in rows})
    return {"all": block(rows), "by_dim": {d: block([r for r in rows if r["dim"] == d]) for d in dims}}


@dataclass(frozen=True)
class Target:
    """A fixed target: `metric` (a key of the flat metrics) `op` `limit`, from issue `issue`."""

    issue: int
    what: str
    metric: str
    op: str  # "<=" or ">="
    limit: float
    unit: str = "%"

    def met(self, value: float | None) -> bool:
        if value is None or not math.isfinite(value):
            return False
        return value <= self.limit + 1e-12 if self.op == "<=" else value >= self.limit - 1e-12


def judge(targets: Sequence[Target], metrics: dict) -> list[dict]:
    """Each target with its value (None when the comparison has none) and met / not met."""
    out = []
    for t in targets:
        v = metrics.get(t.metric)
        out.append({"issue": t.issue, "what": t.what, "metric": t.metric, "op": t.op,
                    "limit": t.limit, "unit": t.unit, "value": v, "met": t.met(v)})
    return out
