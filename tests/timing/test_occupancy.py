"""Occupancy laws of cc 9.0 (CUDA occupancy calculator rules)."""

import pytest

from hopsim.config import load_gpu
from hopsim.timing.occupancy import occupancy
from isa.errors import InputError

GPU = load_gpu("h100_sxm")
S = GPU.spec
KB = 1024


def test_two_100kb_ctas_fit_three_do_not():
    occ = occupancy(GPU, threads_per_cta=128, smem_bytes_per_cta=100 * KB, regs_per_thread=32)
    assert occ.ctas_per_sm == 2 and occ.limiting == "shared_memory"
    assert 2 * (100 * KB + int(S.smem_reserved_per_cta_bytes.value)) <= int(S.smem_per_sm_bytes.value)
    assert 3 * (100 * KB + int(S.smem_reserved_per_cta_bytes.value)) > int(S.smem_per_sm_bytes.value)


def test_reserved_kilobyte_counts():
    # 114 KB fits twice in 228 KB only without the 1 KB reservation: with it, one CTA
    occ = occupancy(GPU, threads_per_cta=128, smem_bytes_per_cta=114 * KB, regs_per_thread=32)
    assert occ.ctas_per_sm == 1
    occ = occupancy(GPU, threads_per_cta=128, smem_bytes_per_cta=113 * KB, regs_per_thread=32)
    assert occ.ctas_per_sm == 2


def test_max_smem_cta_fits_once():
    occ = occupancy(GPU, threads_per_cta=384, smem_bytes_per_cta=int(S.smem_per_cta_bytes.value), regs_per_thread=168)
    assert occ.ctas_per_sm == 1


def test_registers_limit_with_granularity():
    # 168 regs/thread: per warp ceil(168*32/256)*256 = 5376 registers; 65536 // 5376 = 12 warps;
    # 384-thread CTAs (12 warps) -> 1 CTA, limited by registers
    occ = occupancy(GPU, threads_per_cta=384, smem_bytes_per_cta=0, regs_per_thread=168)
    per_warp = -(-168 * 32 // int(S.reg_alloc_unit.value)) * int(S.reg_alloc_unit.value)
    assert occ.ctas_per_sm == (int(S.regs_per_sm.value) // per_warp) // 12 == 1
    assert occ.limiting == "registers"
    # 33 regs rounds up like 40: 40*32 = 1280 per warp -> 51 warps -> 12 CTAs of 4 warps
    occ = occupancy(GPU, threads_per_cta=128, smem_bytes_per_cta=0, regs_per_thread=33)
    assert occ.ctas_per_sm == (65536 // (40 * 32)) // 4


def test_threads_and_slots_limits():
    assert occupancy(GPU, threads_per_cta=1024, smem_bytes_per_cta=0, regs_per_thread=16).limiting == "threads"
    occ = occupancy(GPU, threads_per_cta=32, smem_bytes_per_cta=0, regs_per_thread=16)
    assert occ.ctas_per_sm == int(S.max_ctas_per_sm.value) and occ.limiting == "cta_slots"


def test_bad_launch_is_an_input_error():
    with pytest.raises(InputError):
        occupancy(GPU, threads_per_cta=128, smem_bytes_per_cta=300 * KB, regs_per_thread=32)
    with pytest.raises(InputError):
        occupancy(GPU, threads_per_cta=2048, smem_bytes_per_cta=0, regs_per_thread=32)
