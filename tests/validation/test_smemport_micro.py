"""The shared-memory port contention microbenchmark without a GPU (validation/micro_smemport.py):
the configurations cover the brief (each stream alone, every pair the issue names), role masks
follow the kernel's bit layout, the rate arithmetic recovers constructed slot counts, the kernel's
shared memory fits one CTA per SM, bad configurations and command lines are refused, and the
kernel compiles for sm_90a without wgmma serialisation where nvcc exists."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from validation import micro_smemport as ms

SMEM_PER_SM = 233472  # 228 KB per H100 SM
SMEM_PER_CTA_MAX = 232448  # 227 KB opt-in per CTA


def test_configs_cover_the_brief():
    alone = {"wgmma2", "tma", "ld", "st", "stmatrix"}
    pairs = {"wgmma2+tma", "wgmma2+ld", "tma+ld", "wgmma2+stmatrix"}
    assert alone | pairs <= set(ms.CONFIGS)
    assert len(set(ms.CONFIGS)) == len(ms.CONFIGS)
    for cfg in ms.CONFIGS:  # every stream of a pair is also measured alone
        for s in cfg.split("+"):
            assert s in ms.CONFIGS


def test_role_masks_follow_the_kernel_bits():
    src = ms.SRC.read_text()
    assert ms.roles_of("wgmma2") == 3 and ms.roles_of("wgmma1") == 1
    assert ms.roles_of("wgmma2+tma+ld") == 1 | 2 | 4 | 8
    for name, bit in (("tma", 4), ("ld", 8), ("st", 16), ("stmatrix", 32)):
        assert ms.roles_of(name) == bit
        assert f"roles & {bit}" in src  # the kernel tests the same bit


@pytest.mark.parametrize("bad", ["ld+st", "wgmma1+wgmma2", "tma+tma", "hgmma", ""])
def test_bad_configs_are_refused(bad):
    with pytest.raises(ms.ConfigError):
        ms.roles_of(bad)


def test_rates_recover_constructed_counts():
    slots = [0] * ms.SLOTS
    slots[0:2] = [1000, 128_000]   # wg0: 1000 wgmmas in 128k cycles
    slots[2:4] = [1000, 130_000]   # wg1: the slower one sets the span
    slots[4:6] = [640, 100_000]    # tma: 640 boxes
    for w in range(3):             # 3 LSU warps
        slots[6 + 2 * w:8 + 2 * w] = [8000, 100_000]
    r = ms.cta_rates(slots, "wgmma2+tma+ld")
    assert r["wgmma_cycles_per_op"] == pytest.approx(130_000 / 2000)
    assert r["wgmma_bytes_per_cycle"] == pytest.approx(2000 * 10240 / 130_000)
    assert r["tma_bytes_per_cycle"] == pytest.approx(640 * 16384 / 100_000)
    assert r["ld_bytes_per_cycle"] == pytest.approx(24000 * 512 / 100_000)
    assert r["ld_wavefronts_per_cycle"] == pytest.approx(r["ld_bytes_per_cycle"] / 128)


def test_a_silent_stream_is_an_error():
    with pytest.raises(RuntimeError, match="TMA"):
        ms.cta_rates([0] * ms.SLOTS, "tma")


def test_launch_rates_take_the_median_and_slowest_cta():
    times = np.zeros(3 * ms.SLOTS, dtype=np.int64)
    for b, boxes in enumerate((600, 700, 650)):
        times[ms.SLOTS * b + 4:ms.SLOTS * b + 6] = [boxes, 100_000]
    r = ms.launch_rates(times, "tma", 3)
    assert r["tma_bytes_per_cycle"] == pytest.approx(650 * 16384 / 100_000)
    assert r["tma_bytes_per_cycle_min_cta"] == pytest.approx(600 * 16384 / 100_000)


def test_slowdown_is_alone_over_paired():
    by = {"tma|1sm": {"tma_bytes_per_cycle": 100.0}, "ld|1sm": {"ld_bytes_per_cycle": 128.0},
          "tma+ld|1sm": {"tma_bytes_per_cycle": 50.0, "ld_bytes_per_cycle": 64.0}}
    assert ms.slowdowns(by, "1sm") == {"tma+ld|tma": 2.0, "tma+ld|ld": 2.0}


def test_wgmma_bytes_are_the_operand_tiles():
    assert ms.WGMMA_BYTES == 64 * 16 * 2 + 256 * 16 * 2  # A m64k16 + B n256k16, f16


def test_shared_memory_fits_one_cta_per_sm_only():
    assert ms.SMEM_BYTES <= SMEM_PER_CTA_MAX
    assert 2 * (ms.SMEM_BYTES + 1024) > SMEM_PER_SM  # one CTA per SM: the grid is the SM count
    src = ms.SRC.read_text()
    ring = int(re.search(r"#define SP_RING (\d+)", src).group(1))
    assert ms.SMEM_BYTES == 1024 + 2 * 8192 + 32768 + ring * ms.BOX_BYTES + 3 * 4096


def test_bad_reps_exit_2(capsys):
    assert ms.main(["--out", "/tmp/unused_smemport", "--reps", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--reps" in err[0]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_kernel_compiles_for_sm90a_without_wgmma_serialisation(tmp_path):
    r = subprocess.run([*ms.NVCC, "-o", str(tmp_path / "k.cubin"), str(ms.SRC)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout + r.stderr
    assert "C751" not in out
    assert "0 bytes spill stores" in out
