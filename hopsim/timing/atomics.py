"""atom / red on shared and global memory: per-SM atomic units with costs from microbench__ops.

A warp's atom/red (its effect's extra["atomic"] = (class, k), k = most lanes on one address) holds
its SM's unit of the space (one for shared, one for global memory; FIFO) for

    pipe + (k - 1) x lane    pipe: cycles per warp instruction on distinct words (1 / peak rate);
                             lane: per further lane on one word ((1 / the same-word rate of 32
                             warps - pipe) / 31)

A red goes on after issue + its warp gap. An atom's result is ready at the unit's start + latency +
(k - 1) x conflict latency (the record's distinct and same-word dependent chains): the destination
rows are scoreboarded and the warp goes on after its warp gap, except for shared f32 (ptxas: a
compare-and-swap loop, a branch per lane: the warp waits for the result). red.shared.f32 has no
record and takes atom_shared_f32's costs. Classes and fields: CLASSES / FIELDS; fitted by
hopsim/validate/calibrate_ops.py `derive_atomic_fields`. The global unit stands for the L2's
atomic units as one SM sees them (the record's per-SM rows; the chip-wide rate is not modelled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hopsim.timing.pipes import QUANTUM

CLASSES = ("atom_shared_u32", "red_shared_u32", "atom_shared_f32", "atom_global_u32", "red_global_u32",
           "atom_global_f32", "red_global_f32")
ALIAS = {"red_shared_f32": "atom_shared_f32"}
BLOCKING = frozenset({"atom_shared_f32"})
"""Classes whose warp waits for the result (a compare-and-swap loop in SASS)."""
QUANTITIES = ("pipe", "lane", "warp", "latency", "conflict_latency")
FIELDS = {c: {q: f"{c}_{q}_cycles" for q in QUANTITIES if c.startswith("atom") or q not in ("latency", "conflict_latency")}
          for c in CLASSES}
"""class -> quantity -> H100Timing field (red classes have no latency fields: no result)."""


@dataclass(frozen=True)
class AtomCost:
    pipe: float
    lane: float
    warp: float
    latency: float
    conflict_latency: float
    blocking: bool


def _q(x: float) -> float:
    return math.ceil(float(x) * QUANTUM) / QUANTUM


def atomic_costs(timing) -> dict[str, AtomCost]:
    """class (aliases included) -> AtomCost from a config's timing group."""
    out = {}
    for c in CLASSES:
        f = FIELDS[c]
        v = {q: float(getattr(timing, f[q]).value) if q in f else 0.0 for q in QUANTITIES}
        out[c] = AtomCost(_q(v["pipe"]), _q(v["lane"]), _q(v["warp"]), float(round(v["latency"])),
                          _q(v["conflict_latency"]), c in BLOCKING)
    for a, c in ALIAS.items():
        out[a] = out[c]
    return out


def atomic_timing(cost: AtomCost, k: int, unit, arrival: float, label: str) -> tuple[float, float]:
    """(start on the unit, result ready) of one warp atom/red with k lanes on its busiest word."""
    occ = cost.pipe + max(0, k - 1) * cost.lane
    end = unit.reserve(arrival, occ, label)
    start = end - occ
    return start, start + cost.latency + max(0, k - 1) * cost.conflict_latency


def atomic_op(run, w: int, eff, issued: float):
    """A CtaRun handler (hopsim/timing/sm.py) for a warp's atom/red: its SM's unit of the space, the
    atom's destination rows scoreboarded (`run.pend`, as a MUFU result) or, for a blocking class or
    without a compiled program, the warp waiting for the result. Returns (resume, wait reason)."""
    cls, k = eff.extra["atomic"]
    cost = run.c.atomics[cls]
    shared = "_shared_" in cls
    unit = run.sm.atom_smem if shared else run.sm.atom_gmem
    start, ready = atomic_timing(cost, k, unit, issued - run.c.issue, cls)
    if not eff.is_write:  # atom: a result
        table = run.reg_dst if shared else run.gld_dst
        rows = None if table is None else table.get(eff.index)
        if cost.blocking or rows is None:
            return ready, "smem" if shared else "gmem"
        pend, why = run.pend[w], run.pend_why[w]
        for r in rows:
            if pend.get(r, 0.0) < ready:
                pend[r] = ready
                why[r] = "smem" if shared else "gmem"
    return run._fractional(w, start + max(cost.warp, run.c.issue), start + run.c.issue), "smem" if shared else "gmem"
