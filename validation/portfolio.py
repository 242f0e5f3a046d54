"""The memory-bound portfolio's points (issue 15 item 3, first families: vecadd and copy): which
CUDA kernel, launch shape and size each held-out H100 record measures. Pure Python (no cupy).

The hopsim side reads only the records (JSONL written by `python3 -m validation.portfolio_runs`),
never this module; it is the contract for writing IR twins of the same kernels:

  family  variant  kernel          elements/thread  per thread (PTX of kernels/cuda/<family>.cu, -O3)
  vecadd  f32      vecadd_f32      1 float          ld.global.f32 a[i], b[i]; add.f32; st.global.f32 c[i]
  vecadd  f4       vecadd_f4       1 float4         ld.global.v4.f32 a[i], b[i]; 4 add.f32; st.global.v4.f32
  vecadd  f32_gs   vecadd_f32_gs   grid-stride      per trip: the f32 body; i += gridDim.x*256 (no unroll)
  vecadd  f4_gs    vecadd_f4_gs    grid-stride      per trip: the f4 body
  copy    f32      copy_f32        1 float          ld.global.f32 a[i]; st.global.f32 b[i]
  copy    f4       copy_f4         1 float4         ld.global.v4.u32 a[i]; st.global.v4.u32 b[i]
  copy    f32_gs   copy_f32_gs     grid-stride      per trip: the f32 body (no unroll)
  copy    f4_gs    copy_f4_gs      grid-stride      per trip: the f4 body

i = blockIdx.x * 256 + threadIdx.x (32-bit), guarded by `i < n` (n in elements of the variant:
floats, or float4s = floats / 4). Every CTA has 256 threads. Grid: one-element-per-thread variants
launch elements / 256 CTAs (every size is a multiple of 1024 floats, so no partial CTA);
grid-stride variants launch GS_CTAS_PER_SM CTAs per SM (132 SMs on the H100 SXM: 1056 CTAs).
Arrays are distinct cudaMalloc allocations (256-B aligned). Bytes moved per launch: vecadd 12 B
per float (2 reads + 1 write), copy 8 B per float. Records carry the actual grid, SM count,
times (median of CUDA-graph batches, inputs rotated over enough sets that nothing stays in the
50 MB L2 between launches; plus `timing_hot`, the same buffers every launch, where one set fits
in L2) and the SM clock.
"""

from __future__ import annotations

import math
import os
import random

FAMILIES = ("vecadd", "copy")
VARIANTS = ("f32", "f4", "f32_gs", "f4_gs")
THREADS = 256
GS_CTAS_PER_SM = 8
#: bytes moved through device memory per float element (reads + writes)
BYTES_PER_FLOAT = {"vecadd": 12, "copy": 8}
#: floats per array: L2-resident (1M: 4 MiB per array) .. 1G floats (4 GiB per array), and the
#: issue's two float4 grids of 8448 and 67584 CTAs of 256 threads (8448*256*4 floats etc.)
SIZES = (1 << 20, 1 << 22, 8448 * THREADS * 4, 1 << 24, 67584 * THREADS * 4, 1 << 28, 1 << 30)


#: The second held-out set (drawn 2026-11-24, after the first set's comparison, for the model
#: changes made since: launch/CTA-dispatch cost, L2 state between launches): sizes never measured
#: before, from L2-resident (1.5M floats: 6 MiB per array) to 768 MiB per array. Chosen by
#: `HOPSIM_PORTFOLIO_SET=heldout2` (or `portfolio_runs --set heldout2`); records carry `set`.
HELDOUT2_SIZES = (1536 << 10, 3 << 20, 6 << 20, 12 << 20, 48 << 20, 192 << 20)
#: The third held-out set (chosen 2026-11-24 before the freeze of the session's third part):
#: sizes never measured before (none of SIZES, HELDOUT2_SIZES or a development size), from
#: L2-resident (2.5M floats: 10 MiB per array, vecadd's three arrays 30 MiB) through the L2 edge
#: (5M: copy moves 40 MiB) to 960M floats (3.75 GiB per array, near the 4 GiB top of issue 15's
#: range); every size a multiple of 1024 floats. The same set name picks the third row-wise plan
#: (validation/rowwise.py) and TMA copy plan (validation/portfolio_tmacopy.py).
HELDOUT3_SIZES = (2560 << 10, 5 << 20, 24 << 20, 96 << 20, 384 << 20, 960 << 20)
#: The fourth held-out set (drawn 2026-11-24 before the seventh freeze of the day): SEED4, one size
#: per bin of HELDOUT4_BINS (floats per array), each from its own seeded stream (drawn_sizes): three
#: bins below and at the L2 edge (1M..8M floats: where scalar copy was worst in heldout2 and
#: heldout3), then 16M..64M, 96M..384M and 768M..1020M floats (up to ~4 GB per array).
SEED4 = 1920261124
HELDOUT4_BINS = ((1 << 20, 2 << 20), (2 << 20, 4 << 20), (4 << 20, 8 << 20), (16 << 20, 64 << 20),
                 (96 << 20, 384 << 20), (768 << 20, 1020 << 20))


def drawn_sizes(seed: int, bins: tuple, old: frozenset) -> tuple[int, ...]:
    """One size per bin, log-uniform in the bin, a multiple of 1024 floats, never a power of two
    and never one of `old` (a draw that is, is redrawn from the same stream). Deterministic."""
    out = []
    for i, (lo, hi) in enumerate(bins):
        rng = random.Random(f"{seed}:portfolio:{i}")
        while True:
            n = max(lo, min(hi, round(math.exp(rng.uniform(math.log(lo), math.log(hi))) / 1024) * 1024))
            if n & (n - 1) and n not in old:
                out.append(n)
                break
    return tuple(out)


HELDOUT4_SIZES = drawn_sizes(SEED4, HELDOUT4_BINS, frozenset(SIZES + HELDOUT2_SIZES + HELDOUT3_SIZES))
#: The fifth held-out set (drawn 2026-11-25 before the eighth freeze): SEED5, heldout4's bins with a
#: new seed, the two largest capped at 96M..192M and 256M..384M floats (at most 1.5 GiB per array;
#: heldout4 drew 324M and 1013M): simulating heldout4's compared copy_f32 and copy_f32_gs at 324M
#: floats took 41 s and 40 s of one core (2026-11-25), the cost grows with the size and each point
#: is simulated at two clocks, so the caps keep the whole portfolio comparison
#: within ~30 min on two cores (heldout4's took ~45 min).
SEED5 = 2020261125
HELDOUT5_BINS = HELDOUT4_BINS[:4] + ((96 << 20, 192 << 20), (256 << 20, 384 << 20))
HELDOUT5_SIZES = drawn_sizes(SEED5, HELDOUT5_BINS,
                             frozenset(SIZES + HELDOUT2_SIZES + HELDOUT3_SIZES + HELDOUT4_SIZES))
SETS = {"heldout1": SIZES, "heldout2": HELDOUT2_SIZES, "heldout3": HELDOUT3_SIZES, "heldout4": HELDOUT4_SIZES,
        "heldout5": HELDOUT5_SIZES}
SET_ENV = "HOPSIM_PORTFOLIO_SET"


def active_set() -> str:
    """The held-out set a run measures: $HOPSIM_PORTFOLIO_SET, default heldout1 (vecadd/copy sizes;
    the row-wise and TMA copy families run their plan of that name, or their first plan where
    they have none of that name)."""
    name = os.environ.get(SET_ENV, "heldout1")
    if name not in SETS:
        raise ValueError(f"{SET_ENV}={name!r} is not valid; give one of {', '.join(SETS)}")
    return name


def kernel_name(family: str, variant: str) -> str:
    """The extern "C" kernel of kernels/cuda/<family>.cu."""
    return f"{family}_{variant}"


def elements(variant: str, n_floats: int) -> int:
    """The kernel's `n` argument: floats, or float4 vectors for the f4 variants."""
    return n_floats // 4 if variant.startswith("f4") else n_floats


def grid(variant: str, n_floats: int, sms: int = 132) -> int:
    """CTAs of the launch: one element per thread, or GS_CTAS_PER_SM per SM for grid-stride."""
    if variant.endswith("_gs"):
        return GS_CTAS_PER_SM * sms
    return -(-elements(variant, n_floats) // THREADS)


def points(family: str = "all", size_set: str | None = None) -> list[dict]:
    """Every portfolio point of `family` ('vecadd', 'copy' or 'all') in the size set `size_set`
    (default: active_set()), in run order."""
    fams = FAMILIES if family == "all" else (family,)
    size_set = size_set or active_set()
    out = []
    for fam in fams:
        for n in SETS[size_set]:
            for v in VARIANTS:
                out.append({"family": fam, "variant": v, "name": f"{fam}_{v}_n{n}", "kernel": kernel_name(fam, v),
                            "source": f"kernels/cuda/{fam}.cu", "n_floats": n, "n_elements": elements(v, n),
                            "threads_per_cta": THREADS, "grid_132sm": grid(v, n),
                            "bytes_per_array": 4 * n, "bytes_moved": BYTES_PER_FLOAT[fam] * n,
                            "set": size_set})
    return out
