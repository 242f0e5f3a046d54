"""The CUDA GEMM family on a real sm90 GPU: every variant correct against cupy.matmul on fresh
random data with a NaN-poisoned output (skipped without a GPU). The compile test needs only nvcc."""

from __future__ import annotations

import shutil

import pytest

from kernels.params import GemmParams

SMALL = dict(m=256, n=512, k=384)
VARIANTS = [
    dict(variant="single", bm=128, bn=128, stages=2, box_rows=128, swizzle="128B"),
    dict(variant="single", bm=64, bn=64, stages=1, box_rows=8, swizzle="32B", layout="nn"),
    dict(variant="single", bm=256, bn=64, stages=3, box_rows=64, swizzle="64B", epilogue="stmatrix"),
    dict(variant="single", bm=128, bn=128, stages=3, box_rows=8, layout="nn", accum="f16",
         epilogue="stmatrix", raster="grouped"),
    dict(variant="ws", consumers=2, bm=128, bn=256, stages=4, epilogue="stmatrix", raster="grouped"),
    dict(variant="ws", consumers=2, bm=256, bn=128, stages=3, layout="nn", dtype="bf16"),
    dict(variant="ws", consumers=1, bm=128, bn=64, stages=6, swizzle="64B", ctas_per_sm=1),
]


def _p(v: dict) -> GemmParams:
    shape = dict(SMALL)
    shape["n"] = max(shape["n"], v.get("bn", 128))
    shape["m"] = max(shape["m"], v.get("bm", 128))
    return GemmParams(**shape, **v)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_variants_compile_without_spills(tmp_path, monkeypatch):
    from validation import harness

    monkeypatch.setenv("HOPSIM_CUBIN_CACHE", str(tmp_path))
    res = harness.compile_many([_p(v) for v in VARIANTS[:3]], workers=2)
    for c in res:
        assert not isinstance(c, Exception), c
        assert c.spill_stores == 0 and c.spill_loads == 0 and c.registers <= 255


@pytest.mark.gpu
@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: "-".join(f"{k}{x}" for k, x in v.items()))
def test_variant_matches_cupy(v):
    from validation import harness

    p = _p(v)
    kern = harness.GemmKernel(p, harness.compile_gemm(p))
    for seed in (1, 2):  # fresh random data each time
        r = harness.check_gemm(kern, seed=seed)
        assert r["unwritten"] == 0
        assert r["rel_err"] < harness.tolerance(p), r
