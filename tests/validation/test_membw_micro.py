"""The memory-bound mechanism microbenchmarks without a GPU (validation/membw_plan.py,
micro_membw.py): the plan fits the 90 s GPU budget and covers the mechanisms of issue 15's brief,
its launch shapes pin the CTAs per SM by the H100's 228 KiB of shared memory and 2048 threads, the
derived numbers follow their definitions, bad input exits 2 with one line, the record schema, and
the kernels compile for sm_90a without spills where nvcc exists."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from validation import membw_plan as mp
from validation import micro_membw as mm

CU = mp.__file__.replace("membw_plan.py", "cuda/micro_membw.cu")
SMEM_PER_SM = 228 * 1024
SMEM_PER_CTA_RESERVED = 1024  # the runtime's 1 KiB per CTA


def test_plan_fits_the_budget_with_margin():
    pts = mm.mp.plan()
    assert mp.planned_seconds(pts) <= 90.0
    assert len({p["name"] for p in pts}) == len(pts)


def test_plan_covers_the_mechanisms():
    pts = mp.plan()
    chain = {(p["params"]["sms"], p["params"]["warps_per_sm"], p["params"]["vec_bytes"]) for p in pts
             if p["family"] == "chain" and p["params"]["cache_op"] == "cg" and p["params"]["layout"] == "warp"}
    assert {(1, 1, 4), (1, 1, 16), (132, 64, 4), (132, 64, 16), (1, 1, 8)} <= chain   # lone warp .. full SM
    assert {p["params"]["layout"] for p in pts if p["family"] == "chain"} == {"warp", "cta"}
    assert all(p["params"]["passes"] >= 2 for p in pts if p["family"] == "chain")   # HBM pass + re-reads
    sms = {(p["params"]["where"], p["params"]["sms"]) for p in pts if p["family"] == "sms"}
    assert {(w, s) for w in ("hbm", "l2") for s in (1, 132)} <= sms
    copyu = {(p["params"]["vec_bytes"], p["params"]["unroll"]) for p in pts if p["family"] == "copyu"}
    assert {(4, 1), (16, 1)} <= copyu
    reuse = {(p["params"]["op"], p["params"]["rounds"]) for p in pts if p["family"] == "reuse"}
    assert reuse == {(o, r) for o in ("read", "copy") for r in (1, 4)}
    fps = sorted(p["params"]["footprint_bytes"] for p in pts if p["family"] == "reuse")
    assert fps[0] < 25 * mp.MIB and fps[-1] > 50 * mp.MIB   # both sides of the 50 MiB L2


@pytest.mark.parametrize("w", (1, 8, 32, 64))
def test_launch_shape_pins_the_ctas_per_sm(w):
    thr, cps = mp.ctas_per_sm(w)
    assert thr % 32 == 0 and thr <= 1024 and thr // 32 * cps == w
    smem = mp.smem_for(cps) + SMEM_PER_CTA_RESERVED
    assert cps * smem <= SMEM_PER_SM < (cps + 1) * smem   # exactly cps CTAs fit by shared memory
    assert cps * thr <= 2048


def test_cold_regions_fit_the_buffer_far_from_l2():
    # every HBM region is read once per launch: (LAUNCHES + 1) regions of the largest point must be
    # far below the buffer, so a region is reused only after ~1 GiB of other reads (L2: 50 MiB)
    pts = mp.plan()
    big = max(p["params"]["footprint_bytes"] for p in pts if p["family"] != "sms" or p["params"]["where"] == "hbm")
    assert big <= mp.BUF_BYTES // 2
    assert mp.BUF_BYTES >= 16 * 50 * mp.MIB


def test_chain_result_follows_its_definition():
    cyc = [[1600, 480, 320], [3200, 800, 320], [1760, 400, 480]]   # 3 warps x 3 passes
    r = mp.chain_result(cyc, 16, 16, [2.0, 1.0, 3.0], 1 << 20)
    assert [q["median_cycles_per_trip"] for q in r["passes"]] == [110.0, 30.0, 20.0]
    assert r["passes"][0]["max_cycles_per_trip"] == 200.0 and r["passes"][0]["min_cycles_per_trip"] == 100.0
    assert r["ms_median"] == 2.0
    assert r["bytes_per_s"] == pytest.approx(3 * (1 << 20) / 2e-3)


def test_stream_result_follows_its_definition():
    r = mp.stream_result(1_000_000, [0.5, 0.1, 0.2], 4, 2000.0)
    assert r["ms_median"] == 0.2
    assert r["bytes_per_s"] == pytest.approx(5e9)
    assert r["bytes_per_s_per_sm"] == pytest.approx(1.25e9)
    assert r["bytes_per_cycle_per_sm"] == pytest.approx(1.25e9 / 2e9)


def test_check_record():
    pt = mp.plan()[0]
    rec = {"kind": mp.KIND, "group": pt["group"], "family": pt["family"], "name": pt["name"],
           "params": pt["params"], "error": None, "provenance": {}}
    assert "results" in mp.check_record(rec)
    rec.update(results={"passes": [], "ms_median": 1.0, "trips": 16}, launch={}, sm_clock={},
               power_samples_summary={})
    assert mp.check_record(rec) is None
    assert "family" in mp.check_record({**rec, "family": "nope"})
    assert mp.check_record({**rec, "results": None, "error": "skipped"}) is None


def test_summary_reads_records(tmp_path):
    pt = next(p for p in mp.plan() if p["family"] == "chain")
    st = next(p for p in mp.plan() if p["family"] == "sms")
    recs = [{"name": pt["name"], "family": "chain", "error": None, "launch": {"sms_used": 1},
             "results": mp.chain_result([[1600, 480, 320]], 16, 16, [1.0], 1024)},
            {"name": st["name"], "family": "sms", "error": None, "launch": {"sms_used": 1},
             "results": mp.stream_result(10 ** 9, [1.0], 1, 2000.0)},
            {"name": "x", "family": "sms", "error": "skipped: 0 s of budget left"}]
    f = tmp_path / "membw.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    s = mm.summary(f)
    assert "3 records, 1 with error/skipped" in s and "100      30      20" in s and "1.000 TB/s" in s


@pytest.mark.parametrize("argv,field", [(["--budget-s", "0", "--out", "x"], "--budget-s"),
                                        (["--only", "nope", "--plan"], "--only"), ([], "--out")])
def test_bad_input_exits_2_with_one_line(argv, field, capsys):
    assert mm.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(field)


def test_plan_prints(capsys):
    assert mm.main(["--plan"]) == 0
    out = capsys.readouterr().out
    for g in ("chain", "sms", "copyu", "reuse"):
        assert re.search(rf"^{g}\s+\d+ points", out, re.M)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_kernels_compile_for_sm90a_without_spills(tmp_path):
    r = subprocess.run(["nvcc", "-std=c++17", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas=-v",
                        "-o", str(tmp_path / "m.cubin"), CU], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "bytes spill" not in r.stderr.replace("0 bytes spill", "")
    names = set(re.findall(r"Compiling entry function '(\w+)'", r.stderr))
    assert {p["params"]["kernel"] for p in mp.plan()} <= names
