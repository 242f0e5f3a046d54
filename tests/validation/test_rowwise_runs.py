"""The row-wise portfolio's CUDA twins and runner without a GPU (validation/rowwise.py,
portfolio_runs.py --family rowsum|softmax|rowwise, kernels/cuda/rowsum.cu and softmax.cu): the
held-out grid covers the brief (cols 1K..32K, inputs from L2-resident to 1 GiB, both mappings) and
is disjoint from the sizes the simulator's tests and benchmark use; launch shapes follow from the
sizes; the plan fits the budget; the device check (with numpy standing in for cupy) passes a
correct result and rejects a wrong or unwritten one; records pass the schema and print in the
table; and (with nvcc) each twin's PTX has the same static count of every instruction the IR twin
names (loads, stores, shuffles, ex2, rcp, max, barriers; no fma)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from kernels.rowwise import RowParams, kernel_text
from kernels.rowwise.reference import sum_depth
from tests.cli.test_rowwise_cli import SIZES
from tests.timing.test_memo_rowwise import CASES
from tests.validation import no_cupy
from validation import portfolio_runs as runs
from validation import rowwise as rw

NVCC = shutil.which("nvcc")
L2 = 50e6


def test_points_cover_the_grid():
    pts = rw.points()
    assert len({p["name"] for p in pts}) == len(pts) == 2 * 2 * 4 * 3
    assert {p["cols"] for p in pts} == {1024, 4096, 16384, 32768}
    assert {(p["family"], p["mapping"]) for p in pts} == {(f, m) for f in rw.FAMILIES for m in rw.MAPPINGS}
    small = min(p["bytes_moved"] for p in pts)
    assert small < L2 / 2 and max(p["bytes_per_array"] for p in pts) == 1 << 30
    assert [p["family"] for p in runs.family_points("softmax")] == ["softmax"] * 24


@pytest.mark.parametrize("p", rw.points(), ids=lambda p: p["name"])
def test_launch_shape_follows_from_the_size(p):
    rows, cols = p["rows"], p["cols"]
    RowParams(family=p["family"], rows=rows, cols=cols, mapping=p["mapping"])   # the IR twin accepts it
    assert rows % 8 == 0 and cols % 128 == 0
    assert p["grid_132sm"] == (rows // 8 if p["mapping"] == "warp" else rows)
    assert p["grid_132sm"] == RowParams(family=p["family"], rows=rows, cols=cols, mapping=p["mapping"]).grid
    out = rows if p["family"] == "rowsum" else rows * cols
    assert p["bytes_moved"] == 4 * (rows * cols + out)
    assert p["bytes_accessed"] == 4 * ((3 if p["family"] == "softmax" else 1) * rows * cols + out)
    assert rows * (cols // 4) < 2**31                    # float4 index of the last row start fits size_t math


def test_held_out_sizes_are_not_the_development_sizes():
    held = {(p["rows"], p["cols"]) for p in rw.points()}
    dev = {(r, c) for _, r, c in SIZES} | {(r, c) for _, _, r, c, _, _ in CASES} | {(8192, 1024)}  # + the benchmark
    assert not held & dev


def test_plan_fits_the_budget():
    assert runs.planned_seconds(runs.plan("rowwise")) <= 240.0
    assert [p["name"] for p in runs.plan("rowsum")] == [p["name"] for p in rw.points("rowsum")]


class _NumpyAsCupy:
    """The slice of cupy that the device check uses, backed by numpy."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def get_default_memory_pool():
        return type("Pool", (), {"free_all_blocks": staticmethod(lambda: None)})()


def _f32_softmax(x):
    e = np.exp2((x - x.max(axis=1, keepdims=True)) * np.float32(1.4426950408889634)).astype(np.float32)
    return (e * (np.float32(1) / e.sum(axis=1, dtype=np.float32, keepdims=True))).astype(np.float32)


@pytest.mark.parametrize("family", rw.FAMILIES)
@pytest.mark.parametrize("fault", [None, "wrong", "unwritten"])
def test_device_check_with_numpy(family, fault):
    rows, cols = 16, 256
    p = {"family": family, "mapping": "warp", "rows": rows, "cols": cols, "n_floats": rows * cols,
         "threads_per_cta": 256, "name": "t"}
    x = np.random.default_rng(5).standard_normal(rows * cols).astype(np.float32)
    y = np.empty(rows if family == "rowsum" else rows * cols, np.float32)

    def kernel(grid, block, args):
        xx, yy, r, c = args
        m = xx.reshape(int(r), int(c))
        yy[:] = (m.sum(axis=1, dtype=np.float32) if family == "rowsum" else _f32_softmax(m).ravel())
        if fault == "wrong":
            yy[3] *= np.float32(1 + 2.0 ** -12)
        elif fault == "unwritten":
            yy.view(np.uint32)[7] = 0xFFFFFFFF

    s = ([x], y)
    launch = rw.launcher(kernel, p, rw.grid("warp", rows), s)
    res = rw.check(p, launch, s, _NumpyAsCupy(), lambda what: None)
    assert res["passed"] == (fault is None) and res["sum_depth"] == sum_depth(cols, "warp", 8)
    assert res["unwritten"] == (fault == "unwritten") and (res["worst_error_over_bound"] > 1) == (fault is not None)


def test_record_schema_and_table(tmp_path):
    p = rw.points("softmax")[0]
    rec = {"kind": "portfolio", "group": "softmax", "family": "softmax", "name": p["name"], "params": p, "error": None,
           "provenance": {}, "check": {"passed": True}, "timing": {}, "sm_clock": {"nvml_median_mhz": 1755.0},
           "power_samples_summary": {}, "launch": {"grid": p["grid_132sm"], "block": 256, "rows_arg": p["rows"]},
           "results": {"ms_median": 0.01, "bytes_per_s": p["bytes_moved"] / 1e-5, "bytes_moved": p["bytes_moved"],
                       "bytes_accessed": p["bytes_accessed"], "ms_hot_median": None}}
    assert runs.check_record(rec) is None
    f = tmp_path / "portfolio.jsonl"
    f.write_text(json.dumps(rec) + "\n")
    assert p["name"] in runs.table(f) and "1755" in runs.table(f)


def test_runner_imports_without_cupy():
    assert no_cupy.counts()["rowwise_plan"] == 48


def test_bad_family_is_one_line_exit_2(capsys):
    assert runs.main(["--family", "layernorm", "--plan"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--family" in err[0] and "rowwise" in err[0]


# what to count, as a regex over PTX (nvcc) and over the IR text (kernels/rowwise)
OPS = {"ld.global": r"\bld\.global(?:\.nc)?\.(\S+)", "st.global": r"\bst\.global\.(\S+)",
       "shfl": r"\bshfl\.sync\.bfly\.b32\b", "ex2": r"\bex2\.approx\.f32\b", "rcp": r"\brcp\.approx\.f32\b",
       "max": r"\bmax\.f32\b", "bar": r"\bbar\.sync\b", "st.shared": r"\bst\.shared\.f32\b",
       "ld.shared": r"\bld\.shared\.f32\b", "fma": r"\bfma\.", "sub": r"\bsub\.f32\b", "mulf": r"\bmul\.f32\b"}


def _counts(text: str) -> dict:
    return {k: (sorted(re.findall(rx, text)) if "(" in rx else len(re.findall(rx, text))) for k, rx in OPS.items()}


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("family", rw.FAMILIES)
def test_twins_have_the_same_instructions(family, tmp_path):
    src = runs.REPO / "kernels" / "cuda" / f"{family}.cu"
    ptx = tmp_path / "k.ptx"
    subprocess.run(["nvcc", "-ptx", "-gencode=arch=compute_90a,code=compute_90a", "-std=c++17", "-O3", "-o", str(ptx),
                    str(src)], check=True, capture_output=True)
    bodies = dict(re.findall(r"\.entry (\w+)\((.*?)\n}", ptx.read_text(), re.S))
    assert set(bodies) == {rw.kernel_name(family, m) for m in rw.MAPPINGS}
    for mapping in rw.MAPPINGS:
        ir = kernel_text(RowParams(family=family, rows=8, cols=1024, mapping=mapping))
        assert _counts(bodies[rw.kernel_name(family, mapping)]) == _counts(ir), mapping
    cub = tmp_path / "k.cubin"
    subprocess.run([*runs.NVCC, "-o", str(cub), str(src)], check=True, capture_output=True)
