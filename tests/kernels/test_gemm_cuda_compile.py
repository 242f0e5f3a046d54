"""The CUDA twin of every covered IR GEMM configuration compiles for sm_90a (needs nvcc, no GPU).

CI (`.ci/build-cuda`) compiles kernels/cuda/gemm_sm90.cu with its default macros only; the knobs
select code paths by `#if` / `if constexpr` and `static_assert`s, so a knob value that the IR
kernel accepts could still fail to compile. Here every configuration of the IR test cover
(tests/kernels/test_gemm_ir.py COVER: every knob value at least once) is compiled with the
`-D` macros that `GemmParams.cuda_defines()` gives, as the validation harness does.
"""

from __future__ import annotations

import concurrent.futures as cf
import pathlib
import shutil
import subprocess

import pytest

from tests.kernels.test_gemm_ir import COVER

CU = pathlib.Path(__file__).resolve().parents[2] / "kernels" / "cuda" / "gemm_sm90.cu"
NVCC = ["nvcc", "-std=c++17", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas=-w"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_every_covered_configuration_compiles_for_sm90a(tmp_path):
    def build(item):
        name, p = item
        r = subprocess.run([*NVCC, *p.nvcc_flags(), "-o", str(tmp_path / f"{name}.cubin"), str(CU)],
                           capture_output=True, text=True, timeout=300)
        return name, r.returncode, (r.stdout + r.stderr)[-2000:]

    with cf.ThreadPoolExecutor(2) as ex:
        results = list(ex.map(build, sorted(COVER.items())))
    failed = {name: out for name, rc, out in results if rc != 0}
    assert not failed, failed
    for name, _, _ in results:
        assert (tmp_path / f"{name}.cubin").stat().st_size > 0, name
