"""The per-opcode microbenchmark (validation/micro_ops.py, micro_ops_src.py): the committed CUDA
source is the generator's, every timed loop keeps one SASS instruction per PTX step (nothing
folded away by ptxas), the timing arithmetic on synthetic clock stamps, bad input."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from validation import micro_ops
from validation.micro_ops_src import (BY_NAME, LAT_UNROLL, OPS, THR_CHAINS, THR_UNROLL, asm_ptx, gen_source,
                                      missing_sass, sass_counts)


def test_committed_source_is_generated():
    assert micro_ops.SRC.read_text() == gen_source()


def test_every_op_has_both_kernels_and_names_are_unique():
    src = gen_source()
    assert len(BY_NAME) == len(OPS)
    for op in OPS:
        assert f"thr_{op.name}(" in src
        assert (f"lat_{op.name}(" in src) == op.latency


def test_chain_steps_feed_each_other():
    """A latency block is LAT_UNROLL steps each reading the state the previous step wrote (%0)."""
    ptx = asm_ptx(BY_NAME["fma_f32"], 1, LAT_UNROLL)
    assert ptx.count("fma.rn.f32 %0, %0, %1, %2;") == LAT_UNROLL
    thr = asm_ptx(BY_NAME["shfl_bfly"], THR_CHAINS, THR_UNROLL)
    for c in range(THR_CHAINS):
        assert thr.count(f"shfl.sync.bfly.b32 %{c}, %{c}, 1, 31, -1;") == THR_UNROLL


def test_scratch_registers_are_per_chain():
    ptx = asm_ptx(BY_NAME["vote_any"], 2, 2)
    assert ".reg .pred s0;" in ptx and ".reg .pred s1;" in ptx
    assert ptx.count("vote.sync.any.pred s1, !s1, -1;") == 2


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("cuobjdump")), reason="needs nvcc and cuobjdump")
def test_sass_keeps_every_step(tmp_path):
    """ptxas folds chains it can see through (rcp(rcp(x)), shfl.idx of a uniform lane, add chains):
    each timed loop must keep one SASS instruction of the op per PTX step."""
    cubin = tmp_path / "ops.cubin"
    subprocess.run([*micro_ops.NVCC_O3, "-o", str(cubin), str(micro_ops.SRC)], check=True, capture_output=True)
    counts = sass_counts(subprocess.run(["cuobjdump", "-sass", str(cubin)], check=True, capture_output=True,
                                        text=True).stdout)
    bad = {f"{k}_{op.name}": missing_sass(op, k, counts[f"{k}_{op.name}"])
           for op in OPS for k in ("lat", "thr") if k == "thr" or op.latency}
    assert {k: v for k, v in bad.items() if v} == {}
    assert counts["bar_sync"].get("BAR.SYNC.DEFER_BLOCKING") == 8
    assert counts["bar_pingpong"].get("BAR.ARV") == 2


def test_missing_sass_reports_a_folded_chain():
    assert missing_sass(BY_NAME["rcp_ftz"], "lat", {"FADD.FTZ": 16, "MUFU.RCP": 2}) == \
        [f"FADD.FTZ: 16 < {LAT_UNROLL}", f"MUFU.RCP: 2 < {LAT_UNROLL}"]


def _stamps(windows, g=(0, 1000)):
    out = np.zeros(128, dtype=np.int64)
    for w, (t0, t1) in enumerate(windows):
        out[4 * w:4 * w + 4] = (t0, t1, g[0], g[1])
    return out


def test_latency_and_rate_arithmetic():
    assert micro_ops.latency_cycles(_stamps([(100, 100 + 23 * 2048)]), 2048) == 23.0
    # 4 warps of 2048 steps each over [100, 4196]: 8192 / 4096 = 2 warp instructions per cycle
    r = micro_ops.cta_rate(_stamps([(100, 4000), (150, 4196), (120, 4100), (110, 3900)], g=(0, 1950)), 4, 2048)
    assert r["warp_inst_per_cycle"] == 2.0 and r["cycles"] == 4096.0
    assert r["sm_mhz"] == pytest.approx(3900 / 1950 * 1e3)


def test_a_warp_that_never_ran_is_an_error():
    with pytest.raises(micro_ops.OpsError):
        micro_ops.cta_rate(_stamps([(100, 200), (0, 0)]), 2, 10)


@pytest.mark.parametrize("argv", [["--only", "nope", "--out", "x"], ["--reps", "0", "--out", "x"], []])
def test_bad_input_exits_2(argv, capsys):
    assert micro_ops.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1


def test_no_cuobjdump_is_recorded_not_fatal(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert set(micro_ops.cubin_sass_counts(tmp_path / "x.cubin")) == {"error"}
