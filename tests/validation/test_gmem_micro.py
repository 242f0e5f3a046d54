"""The global-memory microbenchmarks without a GPU (validation/gmem_plan.py, micro_gmem.py,
point_runner.py): the plan fits the 300 s budget, its launch shapes and occupancy follow the CUDA
occupancy rules, the coalescing sector counts follow from the 32-B sector geometry, the derived
numbers follow their definitions (bandwidth = bytes / time, Little's law), the record schema, the
child-process runner records exactly one line per point through a crash and a lost context, and
the kernels compile for sm_90a where nvcc exists."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from validation import gmem_plan as gp
from validation import point_runner as pr

CU = gp.__file__.replace("gmem_plan.py", "cuda/micro_gmem.cu")


def test_plan_fits_the_budget_with_margin():
    pts = gp.plan()
    assert gp.planned_seconds(pts) <= 240.0          # 300 s budget, 60 s margin for the estimate
    assert len({p["name"] for p in pts}) == len(pts)  # names are the records' keys


def test_plan_covers_the_brief():
    pts = gp.plan()
    chase = {(p["params"]["footprint_bytes"], p["params"]["cache_op"]) for p in pts if p["family"] == "chase"}
    assert {(16 * gp.KIB, "ca"), (20 * gp.MIB, "ca"), (gp.GIB, "ca")} <= chase
    reads = {(p["params"]["where"], p["params"]["warps_per_sm"], p["params"]["vec_bytes"], p["params"]["unroll"])
             for p in pts if p["family"] == "read"}
    assert len(reads) == 2 * len(gp.WARPS_PER_SM) * 3 * 4
    assert {1, 64} <= {w for _, w, _, _ in reads}
    for fam in ("write", "copy"):
        assert {(p["params"]["where"], p["params"]["vec_bytes"]) for p in pts if p["family"] == fam} == \
            {("hbm", 4), ("hbm", 16), ("l2", 4), ("l2", 16)}
    assert sorted(p["params"]["stride_bytes"] for p in pts if p["family"] == "coalesce") == \
        sorted(2 * [4, 8, 16, 32, 64, 128])


@pytest.mark.parametrize("w", gp.WARPS_PER_SM)
def test_launch_shape_gives_the_warps(w):
    thr, cps = gp.launch_shape(w)
    assert thr % 32 == 0 and thr <= 1024 and thr // 32 * cps == w


def test_resident_ctas_follow_the_occupancy_rules():
    # 64 warps / SM, 32 CTAs / SM, 65536 registers allocated per warp in units of 256
    assert gp.resident_ctas(256, 32) == 8       # 32 x 32 = 1024 regs/warp -> 64 warps
    assert gp.resident_ctas(256, 40) == 6       # 1280 regs/warp -> 51 warps -> 6 CTAs of 8
    assert gp.resident_ctas(32, 20) == 32       # CTA limit
    assert gp.resident_ctas(32, 255) == 8       # 8160 -> 8192 regs/warp -> 8 warps
    assert gp.resident_ctas(1024, 64) == 1      # 2048 regs/warp -> 32 warps -> 1 CTA of 32
    assert gp.resident_ctas(256, None) is None


@pytest.mark.parametrize("stride", gp.STRIDES)
def test_sectors_per_request_from_sector_geometry(stride):
    # 32 lanes reading 4 B at lane * stride touch this many distinct 32-B sectors
    sectors = {(lane * stride) // 32 for lane in range(32)}
    pt = next(p for p in gp.plan() if p["name"] == f"coalesce_hbm_s{stride}")
    assert pt["params"]["sectors_per_request"] == len(sectors)


def test_stream_result_is_bytes_over_median_time():
    params = {"threads_per_cta": 256, "ctas_per_sm": 2}
    r = gp.stream_result(params, 10**9, [0.5, 0.4, 0.6], accesses_per_launch=132 * 512 * 100, nsm=132,
                         sm_clock_mhz=1000.0)
    assert r["ms_median"] == 0.5 and r["bytes_per_s"] == pytest.approx(2e12)
    assert r["bytes_per_s_per_sm"] == pytest.approx(2e12 / 132)
    assert r["ns_per_access"] == pytest.approx(0.5e6 / 100)           # 100 accesses per thread
    assert r["bytes_per_cycle_per_sm"] == pytest.approx(2e12 / 132 / 1e9)
    assert gp.inflight(1e10, 800.0) == pytest.approx(8000.0)          # 10 GB/s x 800 ns = 8 KB


def _rec(**kw):
    r = {"kind": gp.KIND, "group": "read_hbm", "family": "read", "name": "read_hbm_w1_v4_u1", "params": {},
         "error": None, "provenance": {}, "launch": {}, "sm_clock": {}, "power_samples_summary": {},
         "results": {"bytes_per_s": 1.0, "bytes_per_s_per_sm": 1.0, "ns_per_access": 1.0, "ms_median": 1.0}}
    r.update(kw)
    return r


def test_record_schema():
    assert gp.check_record(_rec()) is None
    assert gp.check_record(_rec(results=None, error="skipped: 0 s of budget left")) is None
    assert "'results'" in gp.check_record(_rec(results=None))
    assert "bytes_per_s_per_sm" in gp.check_record(_rec(results={"bytes_per_s": 1.0}))
    bad = _rec()
    del bad["provenance"]
    assert "provenance" in gp.check_record(bad)
    assert "family" in gp.check_record(_rec(family="nope"))


def test_every_planned_kernel_is_defined_in_the_source():
    src = open(CU).read()
    defined = {f"gm_read_v{v}_u{u}" for v, u in re.findall(r"GM_READ\((\d+), (\d+)\)", src)}
    defined |= {f"gm_{f}_v{v}_u4" for v in re.findall(r"GM_WRITE_COPY\((\d+)\)", src) for f in ("write", "copy")}
    defined |= set(re.findall(r'__global__ void (gm_\w+)\(', src))
    used = {p["params"]["kernel"] for p in gp.plan() if "kernel" in p["params"]}
    assert used <= defined, sorted(used - defined)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_kernels_compile_for_sm90a(tmp_path):
    out = tmp_path / "m.cubin"
    subprocess.run(["nvcc", "-std=c++17", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-o", str(out), CU],
                   check=True, capture_output=True)
    blob = out.read_bytes()
    for k in {p["params"].get("kernel") for p in gp.plan()} - {None} | {"gm_chase_ca", "gm_chase_cg"}:
        assert k.encode() in blob


FAKE = textwrap.dedent('''
    import json, os, pathlib, sys
    from validation import point_runner as pr
    PTS = [{"group": "g", "family": "read", "name": f"p{i}", "params": {}, "est_s": 0.0} for i in range(5)]
    def run_point(pt):
        if pt["name"] == "p1":
            os._exit(1)                        # a crash: no record from the child
        if pt["name"] == "p3":
            raise RuntimeError("fault")        # a raised error, then the context is lost
        return {"results": {"x": 1}}
    def health():
        raise RuntimeError("context lost")
    a = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    sys.exit(pr.run_child("k", PTS, run_point, health, int(a["--from"]), float(a["--deadline"]), {},
                          pathlib.Path(a["--jsonl"])))
''')


def test_runner_records_every_point_through_crash_and_lost_context(tmp_path, monkeypatch):
    (tmp_path / "fake_gmem_child.py").write_text(FAKE)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{sys.path[0] if sys.path[0] else '.'}:" + ":".join(sys.path))
    pts = [{"group": "g", "family": "read", "name": f"p{i}", "params": {}, "est_s": 0.0} for i in range(5)]
    jsonl = tmp_path / "out.jsonl"
    pr.run_parent("fake_gmem_child", "k", pts, ["g"], jsonl, tmp_path / "prov.json", {}, time.time(), 60.0)
    recs = [json.loads(x) for x in jsonl.read_text().splitlines()]
    assert [r["name"] for r in recs] == ["p0", "p1", "p2", "p3", "p4"]
    errs = {r["name"]: r["error"] for r in recs}
    assert errs["p0"] is None and errs["p2"] is None and errs["p4"] is None
    assert errs["p1"].startswith("child exited 1") and "fault" in errs["p3"]
