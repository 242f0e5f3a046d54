"""The memory-bound portfolio's CUDA twins and runner without a GPU (validation/portfolio.py,
portfolio_runs.py, kernels/cuda/vecadd.cu and copy.cu): the points cover the issue's sizes and
grids, launch shapes follow from the sizes, the rotation puts >= 4x L2 between two uses of a set,
the plan fits the budget, the record schema, and (with nvcc) the kernels compile for sm_90a with
exactly the per-thread loads and stores validation/portfolio.py documents for the IR twins."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from tests.validation import no_cupy
from validation import portfolio as pf
from validation import portfolio_runs as runs

NVCC = shutil.which("nvcc")


def test_points_are_unique_and_cover_the_issue():
    pts = pf.points()
    assert len({p["name"] for p in pts}) == len(pts) == 2 * 4 * len(pf.SIZES)
    # the issue's float4 grids: 8448 and 67584 CTAs of 256 threads
    f4 = {p["grid_132sm"] for p in pts if p["variant"] == "f4"}
    assert {8448, 67584} <= f4
    assert min(pf.SIZES) * 12 < 50e6 / 2                  # the smallest vecadd fits in the 50 MB L2
    assert max(pf.SIZES) * 4 == 4 << 30                   # 4 GiB per array
    assert [p["family"] for p in pf.points("copy")] == ["copy"] * 4 * len(pf.SIZES)


@pytest.mark.parametrize("p", pf.points(), ids=lambda p: p["name"])
def test_launch_shape_follows_from_the_size(p):
    n = p["n_floats"]
    assert n % 1024 == 0                                  # no partial CTA, whole float4s
    assert p["n_elements"] == (n // 4 if p["variant"].startswith("f4") else n)
    if p["variant"].endswith("_gs"):
        assert p["grid_132sm"] == pf.GS_CTAS_PER_SM * 132
    else:
        assert p["grid_132sm"] * 256 == p["n_elements"]   # one element per thread
    # 32-bit indices do not overflow: the largest index, and for grid-stride the last i += stride
    assert p["grid_132sm"] * 256 <= 2**31
    if p["variant"].endswith("_gs"):
        assert p["n_elements"] + p["grid_132sm"] * 256 < 2**31
    assert p["bytes_moved"] == (12 if p["family"] == "vecadd" else 8) * n


@pytest.mark.parametrize("set_bytes", [8 << 20, 12 << 20, 48 << 20, 199 << 20, 200 << 20, 12 << 30])
def test_rotation_keeps_l2_cold(set_bytes):
    k = runs.n_sets(set_bytes)
    assert k == 1 if set_bytes >= runs.ROTATE_BYTES else (k >= 2 and (k - 1) * set_bytes >= 4 * 50e6 * 0.95
                                                           or k == 64)
    per, batches = runs.batching(set_bytes / runs.EST_BPS, k)
    assert per % k == 0 and batches >= 5


def test_plan_fits_the_budget():
    assert runs.planned_seconds(runs.plan("all")) <= 240.0


def test_record_schema():
    ok = {"kind": "portfolio", "group": "copy", "family": "copy", "name": "copy_f4_n1048576", "params": {},
          "error": None, "provenance": {}, "check": {"passed": True}, "timing": {}, "launch": {}, "sm_clock": {},
          "power_samples_summary": {}, "results": {"ms_median": 1.0, "bytes_per_s": 1.0, "bytes_moved": 8}}
    assert runs.check_record(ok) is None
    assert runs.check_record({**ok, "error": "skipped", "check": None}) is None
    assert "check.passed" in runs.check_record({**ok, "check": {"passed": False}})
    assert "bytes_per_s" in runs.check_record({**ok, "results": {"ms_median": 1.0}})
    assert "provenance" in runs.check_record({k: v for k, v in ok.items() if k != "provenance"})


def test_portfolio_list_imports_without_cupy():
    assert no_cupy.counts()["portfolio_points"] == 56


def test_bad_family_is_one_line_exit_2(capsys):
    assert runs.main(["--family", "gemm", "--plan"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--family" in err[0] and "vecadd" in err[0]


# per kernel: (ld.global per trip, st.global per trip, the vector suffix the PTX shows)
CONTRACT = {"vecadd_f32": (2, 1, ".f32"), "vecadd_f4": (2, 1, ".v4.f32"), "vecadd_f32_gs": (2, 1, ".f32"),
            "vecadd_f4_gs": (2, 1, ".v4.f32"), "copy_f32": (1, 1, ".f32"), "copy_f4": (1, 1, ".v4.u32"),
            "copy_f32_gs": (1, 1, ".f32"), "copy_f4_gs": (1, 1, ".v4.u32")}


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("family", pf.FAMILIES)
def test_kernels_compile_with_the_documented_accesses(family, tmp_path):
    src = runs.REPO / "kernels" / "cuda" / f"{family}.cu"
    ptx = tmp_path / "k.ptx"
    subprocess.run(["nvcc", "-ptx", "-gencode=arch=compute_90a,code=compute_90a", "-std=c++17", "-O3", "-o", str(ptx),
                    str(src)], check=True, capture_output=True)
    text = ptx.read_text()
    bodies = dict(re.findall(r"\.entry (\w+)\((.*?)\n}", text, re.S))
    assert set(bodies) == {pf.kernel_name(family, v) for v in pf.VARIANTS}
    for name, body in bodies.items():
        nld, nst, suffix = CONTRACT[name]
        lds = re.findall(r"ld\.global(\S*)", body)
        sts = re.findall(r"st\.global(\S*)", body)
        assert lds == [suffix] * nld and sts == [suffix] * nst, (name, lds, sts)   # no .nc, no unrolling
    cub = tmp_path / "k.cubin"
    subprocess.run([*runs.NVCC, "-o", str(cub), str(src)], check=True, capture_output=True)
    assert all(k.encode() in cub.read_bytes() for k in bodies)
