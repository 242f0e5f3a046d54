"""A report never contradicts itself (issue 11, "Numbers that disagree", items 1-4).

Laws checked on small GEMMs (every count below follows from the GEMM's shape, not from the model):
- bytes: the fast (partitioned, memoised) and the full (shared L2, values) mode count the same
  loads, L2 hits and DRAM bytes; bytes_l2 + bytes_hbm = bytes loaded by TMA; bytes_l2 = l2_hits x
  box bytes (all boxes of these GEMMs have one size).
- the timeline's title gives the report's Elapsed Cycles.
- warp roles follow what each warp executes, per variant.
- the shared-memory port counts the wgmma SS operand reads and the TMA fills (bytes from the
  shape), and its busy fraction is their port time over the run.
"""

from __future__ import annotations

import json

import pytest
from PIL import Image

from hopsim.cli import main
from hopsim.summary import format_summary
from hopsim.gemm_sim import simulate_gemm
from kernels.params import GemmParams

SMALL = dict(m=512, n=512, k=512)


def _gemm_json(capsys, *args: str) -> dict:
    assert main(["simulate", "gemm", *args, "--json", "--no-progress"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("extra", [("--variant", "single", "--stages", "4"),
                                   ("--variant", "ws", "--consumers", "2", "--stages", "2")],
                         ids=["single", "ws2"])
def test_byte_counters_equal_in_fast_and_full_mode(capsys, extra):
    dims = ("--m", "512", "--n", "512", "--k", "512")
    fast = _gemm_json(capsys, *dims, *extra, "--mode", "fast")
    full = _gemm_json(capsys, *dims, *extra, "--mode", "full")
    for key in ("bytes_l2", "bytes_hbm", "bytes_stored"):
        assert fast[key] == full[key], key
    for key in ("l2_hits", "l2_misses", "tma_boxes"):
        assert fast["extra"][key] == full["extra"][key], key
    for r in (fast, full):
        loaded = r["smem_port"]["tma_fill_bytes"]
        boxes = r["extra"]["l2_hits"] + r["extra"]["l2_misses"]
        assert r["bytes_l2"] + r["bytes_hbm"] == loaded
        assert r["bytes_l2"] == r["extra"]["l2_hits"] * (loaded // boxes)
        assert r["bytes_l2"] > 0  # 4x4 CTAs re-read each A row / B column tile


def test_one_wave_grid_reports_its_l2_hits(capsys):
    """The issue's example: 1024x1024x2048 in one wave, every CTA's reads merged with the first
    reader's DRAM fetch. Each A and B tile is fetched once (8 row tiles x 8 column tiles x 32
    k-tiles of 16 KB = 512 boxes from DRAM) and read 8 times (4096 boxes)."""
    r = _gemm_json(capsys, "--m", "1024", "--n", "1024", "--k", "2048", "--stages", "4")
    box = 128 * 64 * 2
    assert r["bytes_hbm"] == 512 * box
    assert r["bytes_l2"] == (4096 - 512) * box == r["extra"]["l2_hits"] * box


def test_timeline_title_gives_the_reports_cycles(capsys, tmp_path):
    png = tmp_path / "t.png"
    r = _gemm_json(capsys, "--m", "1024", "--n", "1024", "--k", "2048", "--stages", "4",
                   "--plot", str(png))
    title = Image.open(png).info["Title"]
    assert f"of {r['cycles']:,} cycles" in title, title


def _roles(**kw) -> dict:
    run = simulate_gemm(GemmParams(**SMALL, **kw))
    return {role: d["warps"] for role, d in run.result.roles.items()}, run.result.ctas


def test_roles_single_variant():
    """`single`: one warpgroup; warp 0 issues the TMA loads and all 4 warps execute the wgmmas."""
    roles, ctas = _roles(variant="single", stages=3)
    assert roles == {"producer+consumer": ctas, "consumer": 3 * ctas}


@pytest.mark.parametrize("consumers", [1, 2])
def test_roles_warp_specialised_variant(consumers):
    """`ws`: warpgroup 0's first warp issues TMA loads, its 3 other warps idle; each consumer
    warpgroup's 4 warps execute the wgmmas."""
    roles, ctas = _roles(variant="ws", consumers=consumers, stages=3)
    assert roles == {"producer": ctas, "other": 3 * ctas, "consumer": 4 * consumers * ctas}


def test_role_legend_names_every_role():
    run = simulate_gemm(GemmParams(**SMALL, variant="ws", consumers=1, stages=2))
    text = format_summary(run.result)
    for role in run.result.roles:
        assert f"{role} =" in text


@pytest.mark.parametrize("bn,variant", [(128, "single"), (256, "ws")])
def test_smem_port_counts_operand_reads_and_fills(bn, variant):
    """SS wgmma m64nNk16 reads A (64x16x2 B) and B (16xNx2 B) from shared memory; TMA writes each
    CTA's A (bm x K) and B (bn x K) tiles. Port time at 128 B/clk (32 banks x 4 B)."""
    p = GemmParams(m=512, n=512, k=512, bn=bn, variant=variant, stages=2,
                   consumers=2 if variant == "ws" else 1)
    res = simulate_gemm(p).result
    port = res.smem_port
    wgmmas = (p.m // 64) * (p.n // bn) * (p.k // 16)
    assert port["wgmma_operand_bytes"] == wgmmas * (64 * 16 * 2 + 16 * bn * 2)
    ctas = (p.m // p.bm) * (p.n // bn)
    assert port["tma_fill_bytes"] == ctas * (p.bm + bn) * p.k * 2
    assert port["bytes_per_cycle"] == 128
    async_bytes = port["wgmma_operand_bytes"] + port["tma_fill_bytes"] + port["tma_store_read_bytes"]
    assert port["port_cycles"] == pytest.approx(port["lsu_cycles"] + async_bytes / 128)
    assert res.busy["smem"] == pytest.approx(port["port_cycles"] / res.sms_used / res.cycles)
    assert res.busy["smem"] > 0.1


def test_sweep_timeline_title_gives_the_fastest_rows_cycles(capsys, tmp_path):
    """The main job's form (a list of stages + --plot): the picture's total is the table's."""
    png = tmp_path / "t.png"
    assert main(["simulate", "gemm", "--m", "512", "--n", "512", "--k", "1024", "--stages", "1,4",
                 "--plot", str(png), "--json", "--no-progress", "--jobs", "1"]) == 0
    rows = json.loads(capsys.readouterr().out)
    best = min(rows, key=lambda r: r["time_ms"])
    assert f"of {best['cycles']:,} cycles" in Image.open(png).info["Title"]
