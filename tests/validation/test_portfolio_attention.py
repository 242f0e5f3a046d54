"""The attention family's GPU side without a GPU (validation/portfolio_attention.py, its hooks in
validation/portfolio_runs.py and hopsim/validate/portfolio_compare.py, kernels/cuda/attention.cu).

Laws: the held-out points are unique, legal for the IR twin (AttnParams accepts each) and launched
as the IR twin launches them (grid, block, dynamic shared memory, the f32 constant c = scale log2 e
that the IR carries); they cover both head dims, both KV blocks, every stage count 1..4, fewer and
more CTAs than SMs; the tensor map arguments are innermost first; the check passes the float64
reference and names unwritten and wrong elements (run here with numpy in place of cupy); the list
imports without cupy; the plan fits 60 s; every record maps to a `simulate attention` command whose
parameters are the point's (through the CLI's own parser, nothing simulated: held out); with nvcc
the twin compiles for sm_90a with the IR's instructions (the wgmma shapes, ex2/rcp.approx, quad
shuffles, f16x2 packing, the TMA/mbarrier ops) and ptxas' 1024-B static segment the IR assumes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from hopsim.cli import attention_cmd, build_parser
from hopsim.validate import portfolio_compare as pc
from kernels.attention import build_attention
from kernels.attention.params import STATIC_SMEM_BYTES
from kernels.attention.reference import reference
from kernels.attention.softmax import LOG2E, f32
from tests.validation import no_cupy
from validation import portfolio_attention as pat
from validation import portfolio_runs as runs

NVCC = shutil.which("nvcc")


def test_points_are_unique_and_cover_the_knobs():
    pts = pat.points()
    assert len({p["name"] for p in pts}) == len(pts)
    assert {p["head_dim"] for p in pts} == {64, 128} and {p["kv_block"] for p in pts} == {64, 128}
    assert {p["stages"] for p in pts} == {1, 2, 3, 4}
    assert min(p["q_tiles"] for p in pts) < 132 < max(p["q_tiles"] for p in pts)


@pytest.mark.parametrize("p", pat.points(), ids=lambda p: p["name"])
def test_point_is_launched_as_the_ir_twin(p):
    ak = build_attention(pat.params(p))
    assert ak.grid == (p["q_tiles"], 1, 1) and ak.block == (pat.THREADS, 1, 1)
    assert ak.dynamic_smem == p["dynamic_smem"]
    assert p["c"] == f32(ak.params.softmax_scale * LOG2E)
    assert p["flops"] == ak.params.flops and p["kernel"] == f"attention_d{p['head_dim']}_kv{p['kv_block']}"


def test_tensor_map_arguments_are_innermost_first():
    p = pat.point(128, 64, 2, 256, 2)
    seen = []
    k = np.zeros((256, 128), np.float16)

    class Dev:        # a device array: shape and data.ptr
        shape = k.shape

        class data:
            ptr = 8192

    arr = pat.tensor_map(p, Dev, 64, lambda *a: seen.append(a) or bytes(range(128)))
    assert seen == [("f16", 8192, [128, 256], [256], [64, 64], "128B")]
    assert arr.dtype.itemsize == 128 and bytes(arr.tobytes()) == bytes(range(128))


def test_check_passes_the_reference_and_names_what_is_wrong():
    p = pat.point(64, 64, 1, 128, 2)
    rs = np.random.default_rng(0)
    (q, k, v), o = [rs.standard_normal((n, 64)).astype(np.float16) for n in (128, 128, 128)], np.empty((128, 64), np.float32)
    ref = reference(q, k, v, pat.params(p)).astype(np.float32)

    def good():
        o[...] = ref

    def partial():
        o[:127] = ref[:127]

    def wrong():
        o[...] = ref
        o[3, 5] += 0.01      # 0.01 absolute: far above the bound (f32 and f16-P roundings of O(1) values)

    r = pat.check(p, good, ((q, k, v), o), np, lambda what: None)
    assert r["passed"] and r["outside_bound"] == 0 and r["unwritten"] == 0
    r = pat.check(p, partial, ((q, k, v), o), np, lambda what: None)
    assert not r["passed"] and r["unwritten"] == 64
    r = pat.check(p, wrong, ((q, k, v), o), np, lambda what: None)
    assert not r["passed"] and r["outside_bound"] == 1 and r["unwritten"] == 0


def test_imports_without_cupy():
    assert no_cupy.counts()["attention_points"] == len(pat.POINTS)


def test_plan_fits_60_s_and_family_is_listed(capsys):
    assert runs.planned_seconds(runs.plan("attention")) <= 60.0
    assert runs.main(["--family", "attn", "--plan"]) == 2
    assert "attention" in capsys.readouterr().err


def test_every_record_maps_to_its_simulate_command():
    for p in pat.points():
        rec = {"kind": "portfolio", "params": p, "launch": {"grid": p["q_tiles"]}, "error": None,
               "results": {"ms_median": 1.0, "bytes_per_s": 1.0}, "check": {"passed": True},
               "sm_clock": {"nvml_median_mhz": 1755.0}}
        argv = pc.cli_args(rec)
        assert argv[0] == "attention" and "--timing-only" in argv
        build_parser().parse_args(["simulate", *argv, "--json"])
        assert attention_cmd.params_of(attention_cmd.parser().parse_args(argv[1:])) == pat.params(p)


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_twin_compiles_with_the_ir_instructions(tmp_path):
    src = runs.REPO / "kernels" / "cuda" / "attention.cu"
    ptx = tmp_path / "k.ptx"
    subprocess.run(["nvcc", "-ptx", "-gencode=arch=compute_90a,code=compute_90a", "-std=c++17", "-O3", "-o", str(ptx),
                    str(src)], check=True, capture_output=True)
    text = ptx.read_text()
    assert sorted(re.findall(r"\.entry (\w+)\(", text)) == sorted(
        pat.kernel_name(d, b) for d in (64, 128) for b in (64, 128))
    for op in ("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16",
               "ex2.approx.f32", "rcp.approx.f32", "cvt.rn.f16x2.f32", "shfl.sync.bfly.b32", "st.global.v2.f32",
               "wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned 0"):
        assert op in text, op
    ops = re.compile(r"\b(cp\.async\.bulk[\w.:]*|mbarrier\.(?:init|arrive|try_wait)[\w.:]*|fence\.mbarrier[\w.:]*)")
    ir = build_attention(pat.params(pat.points()[0])).text
    assert set(ops.findall(text)) == set(ops.findall(ir))         # the same async / barrier ops
    cub = tmp_path / "k.cubin"
    r = subprocess.run([*runs.NVCC, "-Xptxas=-v", "-o", str(cub), str(src)], check=True, capture_output=True, text=True)
    smem = [int(x) for x in re.findall(r"Used \d+ registers.*?(\d+) bytes smem", r.stderr)]
    assert smem == [STATIC_SMEM_BYTES] * 4                          # the IR's static segment
    assert "spill" not in r.stderr or all(x == "0" for x in re.findall(r"(\d+) bytes spill", r.stderr))
