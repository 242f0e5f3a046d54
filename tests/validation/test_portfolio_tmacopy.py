"""The TMA copy family's GPU side without a GPU (validation/portfolio_tmacopy.py, its hooks in
validation/portfolio_runs.py, kernels/cuda/tmacopy.cu).

Laws: the held-out points are unique, legal for the TMA (the IR twin's parameter checks accept
each) and laid out exactly as the IR twin lays them out (stage bytes, dynamic smem, tiles, box
bytes); they span L2-resident to 1 GB, both dtypes, every swizzle, both grid modes; the kernel's
32-bit tile arithmetic cannot overflow; the tensor map arguments are innermost first; the
on-device check passes a copy and names unwritten or wrong elements; the list imports without
cupy; the plan fits the budget; with nvcc the twin compiles for sm_90a with the documented PTX
(TMA load with complete_tx, fence.proxy.async.shared::cta, TMA store bulk_group, commit, wait_group.read)
and ptxas' 1024-B static segment that the IR twin assumes. No point is simulated here (held out).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from kernels.membound.tmacopy import STATIC_BYTES, TmaCopyParams, kernel_text
from tests.validation import no_cupy
from validation import portfolio_runs as runs
from validation import portfolio_tmacopy as ptc

NVCC = shutil.which("nvcc")
L2 = 50 * 1024 * 1024


def _ir(p: dict) -> TmaCopyParams:
    return TmaCopyParams(rows=p["rows"], cols=p["cols"], dtype=p["dtype"], box_rows=p["box_rows"],
                         box_cols=p["box_cols"], swizzle=p["swizzle"], stages=p["stages"],
                         ctas=None if p["ctas_per_sm"] is None else p["ctas_per_sm"] * 132)


def test_points_are_unique_and_span_the_family():
    pts = ptc.points()
    assert len({p["name"] for p in pts}) == len(pts) == 24
    assert min(p["bytes_moved"] for p in pts) < L2 / 2                 # L2-resident
    assert max(p["bytes_per_array"] for p in pts) == 1 << 30           # 1 GiB tensors
    assert {p["dtype"] for p in pts} == {"f16", "f32"}
    assert {p["swizzle"] for p in pts} == {"none", "32B", "64B", "128B"}
    assert {p["ctas_per_sm"] is None for p in pts} == {True, False}
    assert {p["stages"] for p in pts} >= {1, 2, 3, 4, 6}
    assert runs.family_points("tmacopy") == pts and runs.family_points("all")[-len(pts):] == pts


@pytest.mark.parametrize("p", ptc.points(), ids=lambda p: p["name"])
def test_point_is_legal_and_laid_out_as_the_ir_twin(p):
    ir = _ir(p)
    assert (p["stage_bytes"], p["dynamic_smem"], p["tiles"], p["box_bytes"]) == (
        ir.stage_bytes, ir.smem_bytes - STATIC_BYTES, ir.tiles, ir.box_bytes)
    assert p["grid_132sm"] == ir.num_ctas and (*ptc.launch_grid(p), 1) == ir.grid and p["bytes_moved"] == ir.bytes_moved
    # int arithmetic of the .cu: t + (stages - 1) * stride and tile coordinates stay below 2^31
    stride = p["grid_132sm"]
    assert p["tiles"] + max(1, p["stages"] - 1) * stride < 2**31
    assert max(p["rows"], p["cols"]) < 2**31


def test_tensor_map_arguments_are_innermost_first():
    p = next(q for q in ptc.points() if q["rows"] != q["cols"] or q["box_rows"] != q["box_cols"])
    seen = []
    arr = ptc.tensor_map(p, 4096, lambda *a: seen.append(a) or bytes(range(128)))
    assert seen == [(p["dtype"], 4096, [p["cols"], p["rows"]], [p["cols"] * ptc.ESIZE[p["dtype"]]],
                     [p["box_cols"], p["box_rows"]], p["swizzle"])]
    assert arr.dtype.itemsize == 128 and bytes(arr.tobytes()) == bytes(range(128))


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_check_passes_a_copy_and_names_what_is_wrong(dtype):
    p = {"dtype": dtype, "rows": 8, "cols": 16, "name": "t"}
    rs = np.random.default_rng(0)
    a = rs.standard_normal((8, 16)).astype(np.float16 if dtype == "f16" else np.float32)
    out = np.empty_like(a)

    def copy():
        out[...] = a

    assert ptc.check(p, copy, (a, out), np, lambda what: None)["passed"]

    def partial():
        out[:7] = a[:7]

    with pytest.raises(RuntimeError, match="16 unwritten"):
        ptc.check(p, partial, (a, out), np, lambda what: None)

    def wrong():
        out[...] = a
        out[0, 0] = -a[0, 0]

    with pytest.raises(RuntimeError, match="1 of 128 elements differ"):
        ptc.check(p, wrong, (a, out), np, lambda what: None)


def test_imports_without_cupy():
    assert no_cupy.counts()["tmacopy_points"] == 24


def test_plan_fits_the_budget_and_family_is_listed(capsys):
    assert runs.planned_seconds(runs.plan("tmacopy")) <= 120.0
    assert runs.main(["--family", "tma", "--plan"]) == 2
    assert "tmacopy" in capsys.readouterr().err


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_twin_compiles_with_the_documented_ptx(tmp_path):
    src = runs.REPO / "kernels" / "cuda" / "tmacopy.cu"
    ptx = tmp_path / "k.ptx"
    subprocess.run(["nvcc", "-ptx", "-gencode=arch=compute_90a,code=compute_90a", "-std=c++17", "-O3", "-o", str(ptx),
                    str(src)], check=True, capture_output=True)
    text = ptx.read_text()
    assert re.findall(r"\.entry (\w+)\(", text) == ["tmacopy"]
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" in text
    assert "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group" in text
    assert "cp.async.bulk.commit_group" in text and "cp.async.bulk.wait_group.read 1" in text
    assert "cp.async.bulk.wait_group.read 0" in text and "cp.async.bulk.wait_group 0" in text
    assert "fence.mbarrier_init.release.cluster" in text and text.count("fence.proxy.async.shared::cta") == 1
    assert not re.search(r"\b(ld|st)\.global", text)                # every byte moves by TMA
    ops = re.compile(r"\b(cp\.async\.bulk[\w.:]*|mbarrier\.[\w.:]*|fence\.[\w.:]*)")
    ir = kernel_text(_ir(ptc.points()[0]))
    assert set(ops.findall(text)) == set(ops.findall(ir))           # the same async / barrier / fence ops
    cub = tmp_path / "k.cubin"
    r = subprocess.run([*runs.NVCC, "-Xptxas=-v", "-o", str(cub), str(src)], check=True, capture_output=True, text=True)
    m = re.search(r"Used (\d+) registers.*?(\d+) bytes smem", r.stderr)
    assert m and int(m.group(2)) == STATIC_BYTES                    # the IR twin's static segment
