"""The drawing of issue 14's held-out GEMM sets: seeded one-dimensional sweeps + single points.

Issue 14 judges the frozen model on a fresh set it has never simulated: time error at the measured
and at the predicted clock, and, "for every one-dimensional sweep (stages, box rows, tile, swizzle,
CTAs/SM, variant), does the simulated best configuration equal the hardware's best (or lie within 3%
of it on hardware), and is the curve within 10% point by point". So a set is built of sweeps: each
of the 18 entries of PLAN draws one base configuration from the set's seed and varies ONE knob
around it (all other knobs, and the shape, stay the base's); `n_single` single points drawn like
issue 13's set (validation/heldout13.py) follow. A set (HeldoutSet: name, record tag, seed, single
points, excluded tags) is a pure function of these fields: validation/heldout14.py (seed
1420261124), validation/heldout15.py (seed 1520261124) and validation/heldout16.py (seed
1620261124) are draws of this one design; each binds its HeldoutSet with `set_functions` (the
functions a set module exports: sweeps, singles, sweep, membership, record_fields) and takes the
design's recommended run (SUSTAIN_S, STEADY_S, plan_seconds). Never change PLAN or the drawing code
(that would change every drawn set).

Coverage is enumerated, not left to the draw:
  * the swept knob of each entry is fixed by PLAN: stages x3, box rows x3, tile x3, swizzle x3,
    CTAs/SM x2, variant x2, TMA issuer x2 (each knob of issue 14's list at least twice);
  * the (variant, consumers, dtype, accumulator) of each entry is fixed by PLAN: all 9 strata of
    issue 13's set appear (variant sweeps cover single/ws1/ws2 at f16 and bf16 inputs);
  * stage sweeps use fixed stage lists whose union is 1..8 (tiles drawn among those where the
    deepest fits); tile sweeps use fixed tile lists whose union is every bm x bn in {64,128,256}^2
    (256x256 exists only for ws2 with f16 accumulators); box-row sweeps take every value 8..256
    that gives a distinct kernel (values above a tile extent clamp); swizzle sweeps all three;
  * K: entry i draws K from the log bin KBINS[i % 5] (512..16384), so every bin appears >= 3 times.
Drawn per entry (its own Random(f"{seed}:sweep:{i}")): the tile (where not swept), M, N
(log-uniform 1024..16384, multiples of the tile; 256 for tile sweeps; never square), layout, raster
and group, epilogue, TMA issuer, swizzle, box rows (8/16/32 for issuer sweeps: where the issuer
matters), CTAs/SM and the stages (2..what fits every point; for CTAs/SM sweeps what still fits two
CTAs). Every point of a sweep is a distinct kernel (its -D defines or launch smem differ). A
candidate sweep (or single point) with a point whose tag is in the set's `exclude` is rejected like
an invalid draw (the stream draws the next candidate).

Sizes: MIN_FLOPS (about 50 us a launch at ~650 TFLOP/s) .. MAX_FLOPS (about 2.5 ms at 600 TFLOP/s,
~20 ms for the slowest points a sweep reaches, e.g. 1 stage or 8-row boxes at ~70 TFLOP/s), so a
1 s steady window holds >= ~50 launches. Pure Python: no GPU, no simulator.
"""

from __future__ import annotations

import functools
import math
import pathlib
import random
import re
from dataclasses import dataclass
from typing import Callable, NamedTuple

from isa.errors import InputError
from kernels.params import BOX_ROWS, GemmParams
from validation import heldout13

MIN_FLOPS = heldout13.MIN_FLOPS
MAX_FLOPS = 1.5e12
#: log bins of K; entry i draws from KBINS[i % len(KBINS)]
KBINS = ((512, 1024), (1024, 2048), (2048, 4096), (4096, 8192), (8192, 16384))
TILES = tuple((bm, bn) for bm in (64, 128, 256) for bn in (64, 128, 256))
VARIANTS = (("single", 1), ("ws", 1), ("ws", 2))
MAX_TRIES = 20_000

#: sweep knob -> the values it takes (stages and tile: per entry, in PLAN)
DIM_VALUES = {
    "box_rows": BOX_ROWS,
    "swizzle": ("32B", "64B", "128B"),
    "ctas_per_sm": ("auto", 1),
    "variant": VARIANTS,
    "tma_issuer": ("lane", "elect"),
}
#: the fewest distinct points a sweep of this knob must have
MIN_POINTS = {"stages": 5, "box_rows": 4, "tile": 5, "swizzle": 3, "ctas_per_sm": 2, "variant": 3,
              "tma_issuer": 2}


@dataclass(frozen=True)
class Entry:
    """One planned sweep: the knob, the stratum of its base, and its values where fixed here."""

    dim: str
    variant: str
    consumers: int
    dtype: str
    accum: str
    values: tuple = ()


@dataclass(frozen=True)
class Sweep:
    """One drawn sweep: its name, knob, base configuration, points and each point's value label."""

    name: str
    dim: str
    base: GemmParams
    points: tuple
    labels: tuple


@dataclass(frozen=True)
class HeldoutSet:
    """One draw of the design: the sweep name (`gemm_runs --sweep`), the records' `heldout` tag,
    the seed, how many single points, and the configuration tags no point may have."""

    name: str
    tag: str
    seed: int
    n_single: int
    exclude: frozenset = frozenset()


PLAN = (
    Entry("stages", "single", 1, "f16", "f32", (1, 2, 3, 4, 6, 8)),
    Entry("stages", "ws", 1, "bf16", "f32", (1, 2, 3, 5, 7)),
    Entry("stages", "ws", 2, "f16", "f16", (1, 2, 3, 4, 5, 6)),
    Entry("box_rows", "single", 1, "bf16", "f32"),
    Entry("box_rows", "ws", 1, "f16", "f16"),
    Entry("box_rows", "ws", 2, "f16", "f32"),
    Entry("tile", "single", 1, "f16", "f32",
          ((64, 64), (64, 128), (64, 256), (128, 64), (128, 128), (256, 64))),
    Entry("tile", "ws", 1, "f16", "f16",
          ((64, 128), (64, 256), (128, 64), (128, 256), (256, 64), (256, 128))),
    Entry("tile", "ws", 2, "f16", "f16",
          ((128, 64), (128, 128), (128, 256), (256, 64), (256, 128), (256, 256))),
    Entry("swizzle", "single", 1, "f16", "f16"),
    Entry("swizzle", "ws", 1, "f16", "f32"),
    Entry("swizzle", "ws", 2, "bf16", "f32"),
    Entry("ctas_per_sm", "single", 1, "bf16", "f32"),  # ws variants hold one CTA/SM by registers
    Entry("ctas_per_sm", "single", 1, "f16", "f16"),
    Entry("variant", "single", 1, "f16", "f32"),
    Entry("variant", "single", 1, "bf16", "f32"),
    Entry("tma_issuer", "single", 1, "f16", "f32"),
    Entry("tma_issuer", "ws", 2, "bf16", "f32"),
)


def _log_uniform_multiple(rng: random.Random, lo: int, hi: int, unit: int) -> int:
    """A multiple of `unit` in [lo, hi], log-uniform (rounded to the nearest multiple)."""
    x = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    return min(hi // unit * unit, max(-(-lo // unit) * unit, int(round(x / unit)) * unit))


def label(dim: str, p: GemmParams) -> str:
    """The value of knob `dim` in p, as the report writes it."""
    if dim == "tile":
        return f"{p.bm}x{p.bn}"
    if dim == "variant":
        return "single" if p.variant == "single" else f"ws{p.consumers}"
    return str(getattr(p, dim))


def with_value(p: GemmParams, dim: str, value) -> GemmParams:
    """p with knob `dim` set to `value` (raises InputError where that is not a valid kernel)."""
    if dim == "tile":
        return p.replace(bm=value[0], bn=value[1])
    if dim == "variant":
        return p.replace(variant=value[0], consumers=value[1])
    return p.replace(**{dim: value})


def _kernel_key(p: GemmParams) -> tuple:
    """What makes two configurations the same launch: the -D defines and the launch smem."""
    return tuple(sorted(p.cuda_defines().items())) + (p.dynamic_smem_bytes,)


def _values(entry: Entry) -> tuple:
    return entry.values or DIM_VALUES[entry.dim]


def _points(base: GemmParams, entry: Entry) -> list[GemmParams]:
    """The sweep's points in value order, one per distinct kernel (the first value of a clamped
    run of box rows); raises InputError when a value gives no valid kernel."""
    out, seen = [], set()
    for v in _values(entry):
        p = with_value(base, entry.dim, v)
        key = _kernel_key(p)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def _stage_cap(knobs: dict, entry: Entry) -> int:
    """The most stages every point of the sweep fits (CTAs/SM sweeps: that still fit two CTAs
    per SM with 'auto', so that the two points differ)."""
    fits = [with_value(GemmParams(**knobs, stages=1), entry.dim, v).max_stages_that_fit
            for v in _values(entry)]
    cap = min(fits)
    if entry.dim == "ctas_per_sm":
        base = GemmParams(**{**knobs, "ctas_per_sm": "auto"}, stages=1)
        cap = max([s for s in range(1, cap + 1) if base.replace(stages=s).smem_limited_ctas_per_sm >= 2]
                  or [0])
    return cap


def _draw_sweep(rng: random.Random, entry: Entry, kbin: tuple,
                exclude: frozenset = frozenset()) -> list[GemmParams] | None:
    """One candidate sweep (its points), or None when a knob combination, the size bounds, the
    point count or an excluded tag rejects it. The number of rng calls does not depend on the
    outcome."""
    bm, bn = rng.choice(entry.values if entry.dim == "tile" else TILES)
    unit_m, unit_n = (256, 256) if entry.dim == "tile" else (bm, bn)
    m = _log_uniform_multiple(rng, 1024, 16384, unit_m)
    n = _log_uniform_multiple(rng, 1024, 16384, unit_n)
    k = _log_uniform_multiple(rng, kbin[0], kbin[1], 64)
    raster, group = rng.choice(("row", "grouped")), rng.choice((4, 8, 16))
    rows = rng.choice((8, 16, 32) if entry.dim == "tma_issuer" else BOX_ROWS)
    knobs = dict(m=m, n=n, k=k, dtype=entry.dtype, accum=entry.accum, bm=bm, bn=bn,
                 variant=entry.variant, consumers=entry.consumers, layout=rng.choice(("tn", "nn")),
                 box_rows=rows, swizzle=rng.choice(("32B", "64B", "128B")),
                 ctas_per_sm=rng.choice(("auto", 1)), tma_issuer=rng.choice(("lane", "elect")),
                 epilogue=rng.choice(("direct", "stmatrix")), raster=raster,
                 group_m=group if raster == "grouped" else 8)
    stage_u = rng.random()
    if m == n or not MIN_FLOPS <= 2 * m * n * k <= MAX_FLOPS:
        return None
    try:
        if entry.dim == "stages":
            stages = entry.values[len(entry.values) // 2]
        else:
            cap = _stage_cap(knobs, entry)
            if cap < 2:
                return None
            stages = 2 + int(stage_u * (cap - 1))
        points = _points(GemmParams(**knobs, stages=stages), entry)
    except InputError:
        return None
    if any(p.tag in exclude for p in points):
        return None
    return points if len(points) >= MIN_POINTS[entry.dim] else None


def _draw_single(rng: random.Random, stratum: tuple, kbin: tuple,
                 exclude: frozenset = frozenset()) -> GemmParams | None:
    """One single point of the stratum (issue 13's draw, K from `kbin`), or None."""
    variant, consumers, dtype, accum = stratum
    bm, bn = rng.choice(TILES)
    m = _log_uniform_multiple(rng, 1024, 16384, bm)
    n = _log_uniform_multiple(rng, 1024, 16384, bn)
    k = _log_uniform_multiple(rng, kbin[0], kbin[1], 64)
    raster, group = rng.choice(("row", "grouped")), rng.choice((4, 8, 16))
    knobs = dict(m=m, n=n, k=k, dtype=dtype, accum=accum, bm=bm, bn=bn, variant=variant,
                 consumers=consumers, layout=rng.choice(("tn", "nn")), box_rows=rng.choice(BOX_ROWS),
                 swizzle=rng.choice(("32B", "64B", "128B")), ctas_per_sm=rng.choice(("auto", 1)),
                 tma_issuer=rng.choice(("lane", "elect")), epilogue=rng.choice(("direct", "stmatrix")),
                 raster=raster, group_m=group if raster == "grouped" else 8)
    stage_u = rng.random()
    if m == n or not MIN_FLOPS <= 2 * m * n * k <= MAX_FLOPS:
        return None
    try:
        fit = GemmParams(**knobs, stages=1).max_stages_that_fit
        p = GemmParams(**knobs, stages=1 + int(stage_u * fit))
    except InputError:
        return None
    return None if p.tag in exclude else p


def _first(draw, what: str):
    for _ in range(MAX_TRIES):
        got = draw()
        if got is not None:
            return got
    raise RuntimeError(f"no valid {what} in {MAX_TRIES} draws")


def draw_sweeps(hs: HeldoutSet) -> tuple[Sweep, ...]:
    """The 18 sweeps of PLAN, each from its own seeded stream (deterministic)."""
    out = []
    for i, entry in enumerate(PLAN):
        rng = random.Random(f"{hs.seed}:sweep:{i}")
        kbin = KBINS[i % len(KBINS)]
        pts = _first(lambda: _draw_sweep(rng, entry, kbin, hs.exclude), f"{hs.name} sweep {i} ({entry.dim})")
        mid = pts[len(pts) // 2]
        out.append(Sweep(name=f"{i:02d}_{entry.dim}", dim=entry.dim, base=mid, points=tuple(pts),
                         labels=tuple(label(entry.dim, p) for p in pts)))
    return tuple(out)


def draw_singles(hs: HeldoutSet) -> tuple[GemmParams, ...]:
    """The set's single points: strata and K bins in turn (issue 13's strata)."""
    out = []
    for j in range(hs.n_single):
        rng = random.Random(f"{hs.seed}:single:{j}")
        stratum = heldout13.STRATA[j % len(heldout13.STRATA)]
        kbin = KBINS[j % len(KBINS)]
        out.append(_first(lambda: _draw_single(rng, stratum, kbin, hs.exclude), f"{hs.name} single point {j}"))
    return tuple(out)


def run_order(sweeps: tuple[Sweep, ...], singles: tuple[GemmParams, ...]) -> list[GemmParams]:
    """The run order of `gemm_runs`: each sweep's points together (they meet the same thermal
    state), sweeps in PLAN order, single points last (a --budget stop cuts single points first)."""
    return [p for s in sweeps for p in s.points] + list(singles)


def membership(sweeps: tuple[Sweep, ...], singles: tuple[GemmParams, ...]) -> dict[str, dict]:
    """tag -> {"heldout_sweep": sweep name or "single", "sweep_dim": knob or None,
    "sweep_value": the point's value label or None}."""
    out = {p.tag: {"heldout_sweep": s.name, "sweep_dim": s.dim, "sweep_value": lab}
           for s in sweeps for p, lab in zip(s.points, s.labels)}
    out.update({p.tag: {"heldout_sweep": "single", "sweep_dim": None, "sweep_value": None}
                for p in singles})
    return out


_TAG_FIELD = re.compile(r'"tag": ?"([^"]+)"')


def recorded_tags(root: pathlib.Path, skip: tuple[str, ...] = ()) -> frozenset:
    """Every `"tag"` value in the *.json / *.jsonl files under `root` (the GEMM records' configuration
    tags, every folder and kind), except in the folders named in `skip` (a set's own records)."""
    out = set()
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".json", ".jsonl") or any(part in skip for part in path.relative_to(root).parts):
            continue
        out.update(_TAG_FIELD.findall(path.read_text(errors="replace")))
    return frozenset(out)


def excluded_set(name: str, tag: str, seed: int, n_single: int,
                 excluded_file: pathlib.Path) -> Callable[[], HeldoutSet]:
    """A set module's `held_set()`: the set's drawing parameters, its exclusion the tags recorded
    before the draw (frozen in `excluded_file`, one a line; read at the first call, then cached)."""

    @functools.lru_cache(maxsize=1)
    def held_set() -> HeldoutSet:
        """The set's drawing parameters, its exclusion the tags recorded before the draw."""
        excluded = frozenset(excluded_file.read_text().split())
        return HeldoutSet(name=name, tag=tag, seed=seed, n_single=n_single, exclude=excluded)

    return held_set


class SetFunctions(NamedTuple):
    """The functions a set module (validation/heldout14.py ...) exports, bound to its HeldoutSet."""

    sweeps: Callable[[], tuple[Sweep, ...]]
    singles: Callable[[], tuple[GemmParams, ...]]
    sweep: Callable[[], list[GemmParams]]
    membership: Callable[[], dict[str, dict]]
    record_fields: Callable[[GemmParams], dict]


def set_functions(held_set: Callable[[], HeldoutSet]) -> SetFunctions:
    """sweeps / singles / membership (each drawn once, cached), sweep and record_fields of the set
    `held_set()` returns (called at the first draw, not at import)."""

    @functools.lru_cache(maxsize=1)
    def sweeps() -> tuple[Sweep, ...]:
        """The 18 sweeps of PLAN, each from its own seeded stream (deterministic)."""
        return draw_sweeps(held_set())

    @functools.lru_cache(maxsize=1)
    def singles() -> tuple[GemmParams, ...]:
        """The set's N_SINGLE single points: strata and K bins in turn (issue 13's strata)."""
        return draw_singles(held_set())

    def sweep() -> list[GemmParams]:
        """The set `gemm_runs --sweep <its name>` runs, in run order (run_order)."""
        return run_order(sweeps(), singles())

    @functools.lru_cache(maxsize=1)
    def set_membership() -> dict[str, dict]:
        """tag -> its sweep, knob and value label (membership)."""
        return membership(sweeps(), singles())

    def record_fields(p: GemmParams) -> dict:
        """The fields a record of the set carries beyond the common ones: its `heldout` tag and
        the point's sweep, knob and value label."""
        return {"heldout": held_set().tag, **set_membership().get(p.tag, {})}

    return SetFunctions(sweeps, singles, sweep, set_membership, record_fields)


#: the recommended run of a set of this design (heldout14's): 2 s back to back per configuration,
#: statistics over the last 1 s
SUSTAIN_S = 2.0
STEADY_S = 1.0


def plan_seconds(params: list[GemmParams], sustain_s: float = SUSTAIN_S) -> float:
    """Estimated wall seconds on the H100 machine (heldout13's plan; no cuBLAS loops)."""
    return heldout13.plan_seconds(params, sustain_s, 0)
