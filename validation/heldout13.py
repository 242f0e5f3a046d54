"""Issue 13's held-out GEMM set: 48 seeded configurations, measured in sustained mode only.

The set validates the power/clock model ("predicted sustained clock within 5% of the measured
time-weighted clock, power within 10%, time error at the predicted clock"). It is held out by
construction: the configurations come from a fixed seed, drawn once (2026-11-24), and must never
be simulated while the model is developed (`gemm_runs --sweep heldout13 --list` prints them
without simulating). Never change SEED, N or the drawing code: that would make a new set.

Draws cover what the earlier records rarely do: non-square shapes (M, N 1024..16384, K 512..16384,
log-uniform, multiples of the tile), tiles 64..256, variants single / ws1 / ws2, f16 and bf16
inputs, f32 and f16 accumulators, stages 1..(what fits), box rows 8..256, swizzles 32B/64B/128B,
layouts tn/nn, rasters row/grouped (group 4/8/16), CTAs/SM auto/1, TMA issuer lane/elect,
epilogues direct/stmatrix. Coverage of variant x (dtype, accumulator) is enumerated, not left to
luck: configuration i belongs to stratum i mod 9. Sizes are kept between MIN_FLOPS (about 50 us a
launch at the capped clock) and MAX_FLOPS (about 10 ms) so that the 1.5 s steady window holds
many launches and no launch outlasts a batch by much. Pure Python: no GPU, no simulator.
"""

from __future__ import annotations

import math
import random

from isa.errors import InputError
from kernels.params import BOX_ROWS, GemmParams

SEED = 20261124  # drawn 2026-11-24 for issue 13; fixed forever
N_CONFIGS = 48
N_CUBLAS = 6  # the largest distinct shapes also get a sustained cuBLAS loop
SWEEP_NAME = "heldout13"
HELDOUT_TAG = "issue13"

#: 2*M*N*K bounds: >= ~50 us at ~650 TFLOP/s (dense f16 near 1350 MHz), <= ~10 ms at ~400.
MIN_FLOPS = 3.3e10
MAX_FLOPS = 4.0e12
#: (variant, consumers, dtype, accum): every one appears N_CONFIGS // 9 or more times
STRATA = tuple((v, c, d, a) for v, c in (("single", 1), ("ws", 1), ("ws", 2))
               for d, a in (("f16", "f32"), ("f16", "f16"), ("bf16", "f32")))
MAX_TRIES = 200_000


def _log_uniform_multiple(rng: random.Random, lo: int, hi: int, unit: int) -> int:
    """A multiple of `unit` in [lo, hi], log-uniform (rounded to the nearest multiple)."""
    x = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    return min(hi // unit * unit, max(-(-lo // unit) * unit, int(round(x / unit)) * unit))


def _draw(rng: random.Random, stratum: tuple) -> GemmParams | None:
    """One candidate of the stratum, or None when GemmParams or the size bounds reject it.
    The number of rng calls does not depend on the outcome (so the stream stays aligned)."""
    variant, consumers, dtype, accum = stratum
    bm, bn = rng.choice((64, 128, 256)), rng.choice((64, 128, 256))
    m = _log_uniform_multiple(rng, 1024, 16384, bm)
    n = _log_uniform_multiple(rng, 1024, 16384, bn)
    k = _log_uniform_multiple(rng, 512, 16384, 64)
    raster = rng.choice(("row", "grouped"))
    group = rng.choice((4, 8, 16))
    knobs = dict(m=m, n=n, k=k, dtype=dtype, accum=accum, bm=bm, bn=bn, variant=variant,
                 consumers=consumers, layout=rng.choice(("tn", "nn")),
                 box_rows=rng.choice(BOX_ROWS), swizzle=rng.choice(("32B", "64B", "128B")),
                 ctas_per_sm=rng.choice(("auto", 1)), tma_issuer=rng.choice(("lane", "elect")),
                 epilogue=rng.choice(("direct", "stmatrix")), raster=raster,
                 group_m=group if raster == "grouped" else 8)
    stage_u = rng.random()
    if not MIN_FLOPS <= 2 * m * n * k <= MAX_FLOPS:
        return None
    try:
        fit = GemmParams(**knobs, stages=1).max_stages_that_fit
        return GemmParams(**knobs, stages=1 + int(stage_u * fit))
    except InputError:
        return None


def generate(n: int = N_CONFIGS, seed: int = SEED) -> list[GemmParams]:
    """The first n valid, distinct configurations of the seeded draw (deterministic)."""
    rng = random.Random(seed)
    out: list[GemmParams] = []
    seen: set[GemmParams] = set()
    for _ in range(MAX_TRIES):
        if len(out) >= n:
            return out
        p = _draw(rng, STRATA[len(out) % len(STRATA)])
        if p is not None and p not in seen:
            seen.add(p)
            out.append(p)
    raise RuntimeError(f"heldout13: only {len(out)} valid configurations in {MAX_TRIES} draws")


def sweep() -> list[GemmParams]:
    """The sweep `gemm_runs --sweep heldout13` runs."""
    return generate()


def cublas_picks(params: list[GemmParams], k: int = N_CUBLAS) -> set[int]:
    """Indices of the k configurations with the largest problems (flops), one per distinct
    (m, n, k, dtype, layout): they also get a sustained cuBLAS loop."""
    order = sorted(range(len(params)), key=lambda i: (-params[i].flops, i))
    picks, shapes = set(), set()
    for i in order:
        p = params[i]
        key = (p.m, p.n, p.k, p.dtype, p.layout)
        if key not in shapes:
            shapes.add(key)
            picks.add(i)
        if len(picks) == k:
            break
    return picks


#: Wall-time plan on the H100 machine (16 cores). Sources: one nvcc of gemm_sm90.cu took 2.0 s
#: on this dev machine (2026-11-24); the per-configuration overhead (inputs, NaN-poisoned check
#: with an f32 cuBLAS reference, cuobjdump, two nvidia-smi reads, graph capture, warm-up) is
#: taken generously at 2 s; process start, CuPy import and device provenance at 15 s.
NVCC_S = 4.0
OVERHEAD_S = 2.0
STARTUP_S = 15.0


def plan_seconds(params: list[GemmParams], sustain_s: float, n_cublas: int, cores: int = 16) -> float:
    """Estimated wall seconds of the whole run: startup + parallel compiles + per configuration
    (overhead + the sustained window) + the cuBLAS loops."""
    compile_s = math.ceil(len(params) / cores) * NVCC_S
    per_config = len(params) * (OVERHEAD_S + sustain_s)
    return STARTUP_S + compile_s + per_config + n_cublas * (OVERHEAD_S + sustain_s)
