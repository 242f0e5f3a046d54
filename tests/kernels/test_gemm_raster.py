"""CTA rasterisation of the IR GEMM means what it means in the CUDA kernel.

Law: running CTA `id` of the IR kernel alone (C poisoned with NaN first) writes exactly the C tile
(tm, tn) that `tile_coords(id, tm, tn)` of kernels/cuda/gemm_sm90.cu gives, transcribed below:

    row:      tm = id / TILES_N;  tn = id % TILES_N
    grouped:  per_group = G * TILES_N;  first_m = (id / per_group) * G
              gsz = min(TILES_M - first_m, G);  r = id % per_group
              tm = first_m + r % gsz;  tn = r / gsz

(The numeric sim == numpy tests only show that the CTAs cover every tile once; the order is what
the raster knob changes, for L2 reuse.)
"""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.gemm_setup import setup_gemm
from kernels.gemm import build_gemm
from kernels.params import GemmParams


def cuda_tile_coords(cta: int, p: GemmParams) -> tuple[int, int]:
    tiles_m, tiles_n = p.m // p.bm, p.n // p.bn
    if p.raster == "row":
        return cta // tiles_n, cta % tiles_n
    g = p.group_m
    per_group = g * tiles_n
    first_m = (cta // per_group) * g
    gsz = min(tiles_m - first_m, g)
    r = cta % per_group
    return first_m + r % gsz, r // gsz


CASES = {
    "row": GemmParams(m=256, n=384, k=128, bm=64, bn=128, stages=2),
    "grouped_even": GemmParams(m=512, n=128, k=128, bm=64, bn=64, stages=2, raster="grouped", group_m=4),
    "grouped_tail": GemmParams(m=320, n=192, k=128, bm=64, bn=64, stages=2, raster="grouped", group_m=2),
    "grouped_g_gt_tiles_m": GemmParams(m=128, n=256, k=128, bm=64, bn=64, stages=2, raster="grouped",
                                       group_m=4),
    "ws2_grouped_tail": GemmParams(m=384, n=128, k=128, bm=128, bn=64, stages=2, variant="ws", consumers=2,
                                   raster="grouped", group_m=2, dtype="bf16"),
}


def test_reference_is_a_bijection_and_groups_walk_n():
    """The transcribed formula itself: every tile once; inside a full group, consecutive CTAs walk M."""
    for p in CASES.values():
        tiles = [cuda_tile_coords(c, p) for c in range(p.grid)]
        assert sorted(tiles) == [(i, j) for i in range(p.m // p.bm) for j in range(p.n // p.bn)]
    p = CASES["grouped_even"]
    assert [cuda_tile_coords(c, p) for c in range(5)] == [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_cta_writes_the_tile_of_the_cuda_formula(name):
    from hopsim.functional.runner import run_kernel

    p = CASES[name]
    gk = build_gemm(p)
    gmem, launch, _, _ = setup_gemm(p, gk, seed=3)
    c_bytes = gmem.buffer("C")
    for cta in range(p.grid):
        c_bytes[:] = 0xFF  # f16 / bf16 0xFFFF is a NaN
        run_kernel(gk.kernel, launch, gmem, ctas=[cta])
        written = ~np.isnan(gmem.view("C", np.float16).reshape(p.m, p.n).astype(np.float32)) \
            if p.dtype == "f16" else gmem.view("C", np.uint16).reshape(p.m, p.n) != 0xFFFF
        tm, tn = cuda_tile_coords(cta, p)
        want = np.zeros((p.m, p.n), bool)
        want[tm * p.bm:(tm + 1) * p.bm, tn * p.bn:(tn + 1) * p.bn] = True
        assert np.array_equal(written, want), (cta, (tm, tn), np.argwhere(written)[:1])
