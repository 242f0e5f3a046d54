"""Microbenchmarks through simulate() (hopsim/validate/micro_ir): the IR twins of the CUDA kernels
on the SM runner, timed by their own clock64 reads.

Fast subset: a few rows whose simulated value meets the issue-14 target (within 10% of the H100
measurement); golden = the hardware value of the committed record (validation/records/h100/,
quoted here and checked against the file), tolerance = the target. Rows that miss the target
are not asserted here (they are reported by `hopsim validate micro`). The whole set runs under
`-m slow` (its fit is reported, not asserted: the target is not met today)."""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.validate.micro_ir import FAMILIES, fit, records, simulate_micro_ir, summary
from hopsim.validate.micro_ir.mem import smem_kway_cycles
from hopsim.validate.micro_ir.run import gpu_at, run_kernel
from hopsim.validate.micro_ir.sync import fanout_wakes
from hopsim.validate.micro_ir.tma import issue_run, latency_run
from hopsim.validate.micro_ir.stream import stream_cycles_per_box
from hopsim.validate.micro_ir.wgmma import chip_cycles, queue_cycles, round_cycles, swizzle_cycles
from isa.ir.parser import parse

TARGET = 0.10  # issue 14: microbenchmarks through simulate() within 10% of the H100
GPU = gpu_at()
REC = records()


def _close(sim: float, hw: float) -> None:
    assert abs(sim - hw) <= TARGET * hw, f"simulated {sim:.1f} vs H100 {hw:.1f}"


def test_goldens_are_the_records():
    assert REC["smem"]["results"]["k_way_conflict_cycles"]["8"] == 37.0341796875
    assert REC["mbarrier"]["results"]["fanout_4_warps"]["wake_cycles_all"]["median"] == 96.0
    assert REC["tma_latency"]["results"]["tensor_2d"]["HBM,64x8"]["by_k"]["8"]["round_trip_cycles"]["median"] == 1513.0
    assert REC["tma_issue"]["results"]["R8,warp_lane0"]["by_k"]["4"]["issue_cycles"] == 335.0
    assert REC["wgmma"]["results"]["by_config"]["m64n256k16,f16,f32,SS,C1,WG1"]["round_cycles_by_L"]["16"] == 2126.890625
    assert REC["wgmma_queue"]["results"]["by_config"]["m64n128k16,L8,C1,wait0"]["round_cycles"] == 566.0
    assert REC["wgmma_swizzle"]["results"]["n128_sp64_nn_wg2"] == 511.9825
    assert REC["tma_width"]["results"]["HBM,w32B,r128,sms1"]["cycles_per_box"] == 128.18570696721312
    chip = REC["wgmma_chip"]["results"]["by_config"]["m64n256k16,f16,f32,SS,WG2"]
    assert (chip["sm_cycles_per_wgmma"], chip["effective_sm_clock_mhz"]) == (127.98823322233606, 1656.717085980292)


def test_smem_8way_conflict_chase():
    _close(smem_kway_cycles(8, GPU), 37.0341796875)


def test_mbarrier_fanout_wake():
    _close(float(np.median(fanout_wakes(GPU))), 96.0)


def test_tma_round_trip_hbm_8_boxes_of_8_rows():
    _close(latency_run("HBM", 8, 8, GPU, iters=20)[0], 1513.0)


def test_tma_issue_4_boxes_lane0_predicated():
    _close(issue_run(8, "warp_lane0", 4, GPU, iters=16)[0], 335.0)


def test_wgmma_chain_n256_16_deep():
    _close(round_cycles(256, 0, False, 1, 16, 1, GPU), 2126.890625)


def test_wgmma_queue_round_of_8_on_an_empty_pipe():
    _close(queue_cycles(128, 8, 1, 0, GPU, iters=16)[1], 566.0)


def test_wgmma_ktile_two_warpgroups_64b_swizzle_mn_major_b():
    _close(swizzle_cycles(128, 64, True, 2, GPU, iters=100, warm=10), 511.9825)


def test_tma_stream_one_sm_hbm_4kb_boxes():
    """8 boxes of 32-B x 128 rows per round, two rounds in flight, 3904 boxes from HBM."""
    _close(stream_cycles_per_box("HBM", 16, 128, 8, 3904, 1, gpu_at(1980.0780260825525)), 128.18570696721312)


def test_wgmma_all_sms_two_warpgroups_n256():
    _close(chip_cycles(256, 0, False, 2, gpu_at(1656.717085980292)), 127.98823322233606)


CLOCKS = r"""
.kernel clocks
.param .u64 out
.reg .u32 %r<4>
.reg .u64 %rd<8>
    mov.u64 %rd0, %clock64;
    add.u32 %r0, %r0, 1;
    add.u32 %r1, %r1, 1;
    add.u32 %r2, %r2, 1;
    mov.u64 %rd1, %clock64;
    sub.s64 %rd2, %rd1, %rd0;
    ld.param.u64 %rd3, [out];
    st.global.u64 [%rd3], %rd2;
    exit;
"""


def test_clock64_reads_the_sm_cycle():
    """Law: a clock read starts its ALU batch, so the second read sees the first batch (the first
    read + 3 independent adds: 4 integer-ALU instructions, each one warp gap `op_alu_warp_cycles`
    apart; their results in flight do not hold the warp, the second read does not use them)."""
    gm = GlobalMemory()
    o = gm.alloc("out", np.zeros(1, dtype=np.int64))
    run = run_kernel(parse(CLOCKS), Launch(grid=1, block=32, params={"out": o}), gm, GPU)
    t = GPU.timing
    gap = max(float(t.issue_cycles.value), float(t.op_alu_warp_cycles.value))
    assert run.out("out", np.int64)[0] == -(-(4 * gap) // 1)


#: families whose replay takes tens of CPU-minutes (membw: 101 launches of up to all SMs streaming
#: from HBM): run by the `exhaustive` marker, not by `-m slow` (which CI runs after the tests)
LONG_FAMILIES = ("membw",)


def _check_families(names):
    rows = simulate_micro_ir(names)
    assert set(rows) == {f for f in names if f in REC}
    for name, rs in rows.items():
        assert rs and all(np.isfinite(r.simulated) and r.simulated > 0 for r in rs), name
        f = fit(rs)
        assert 0 <= f["within_checks"] <= f["checks"] <= f["rows"]
    print(summary(rows))


@pytest.mark.slow
def test_every_family_through_simulate():
    """Every microbenchmark family but the long ones through simulate() (about 9 CPU-minutes)."""
    _check_families([f for f in FAMILIES if f not in LONG_FAMILIES])


@pytest.mark.exhaustive
def test_long_families_through_simulate():
    _check_families([f for f in FAMILIES if f in LONG_FAMILIES])
