"""The IR twins of the per-opcode microbenchmarks (kernels/micro/ops.py) match the CUDA op table
(validation/micro_ops_src.py) and run through simulate() (hopsim/validate/micro_ir/ops.py)."""

from __future__ import annotations

import re

import pytest

from hopsim.validate.micro_ir import FAMILIES
from hopsim.validate.micro_ir.ops import ops as ops_rows
from hopsim.validate.micro_ir.ops import sim_rate
from hopsim.validate.micro_ir.run import gpu_at
from kernels.micro import ops as ir
from validation import micro_ops_src as cu


def test_same_ops_geometry_and_buffers_as_the_cuda_kernels():
    assert [o.name for o in ir.IR_OPS] == [o.name for o in cu.OPS]
    assert (ir.LAT_UNROLL, ir.THR_CHAINS, ir.THR_UNROLL) == (cu.LAT_UNROLL, cu.THR_CHAINS, cu.THR_UNROLL)
    assert (ir.SHARED_WORDS, ir.GLOBAL_WORDS) == (cu.SHARED_WORDS, cu.GLOBAL_WORDS)
    for a, b in zip(ir.IR_OPS, cu.OPS):
        assert (a.space, a.latency, a.lane_c1) == (b.space, b.latency, b.lane_c1), a.name


def _mnemonics(ptx: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^\s*(?:@!?%p\d+\s+)?([a-z][\w.:]*)", ptx, re.M)]


@pytest.mark.parametrize("name", [o.name for o in cu.OPS])
def test_each_step_has_the_cuda_steps_instruction(name):
    """The IR block issues the CUDA step's PTX instruction once per step (same mnemonic, e.g.
    shfl.sync.bfly.b32), THR_CHAINS x THR_UNROLL times per loop iteration."""
    c, i = cu.BY_NAME[name], ir.IR_BY_NAME[name]
    want = [m for m in _mnemonics(c.step) if not m.startswith(("add.", "setp."))]
    got = _mnemonics(ir.block(i, ir.THR_CHAINS, ir.THR_UNROLL))
    for m in want:
        assert got.count(m) == ir.THR_CHAINS * ir.THR_UNROLL, (m, got)


def test_every_twin_parses():
    for o in ir.IR_OPS:
        ir.ops_kernel(o.name, "thr", 1)
        if o.latency:
            ir.ops_kernel(o.name, "lat", 1)


def _rec():
    def sp(v):
        return {"median": v}
    thr = {"fma_f32": {"reg": {"1": {"warp_inst_per_cycle_per_sm": sp(0.9)}, "4": {"warp_inst_per_cycle_per_sm": sp(3.5)}}},
           "red_shared_add_u32": {"same": {"1": {"warp_inst_per_cycle_per_sm": sp(0.05)},
                                           "all_sms_32_warps": {"warp_inst_per_cycle_per_sm": sp(0.01)}}}}
    lat = {"fma_f32": {"reg": {"cycles_per_step": sp(4.1)}}}
    return {"results": {"latency": lat, "throughput": thr,
                        "ops": {"fma_f32": {"c1_bits": 0x3F7FBE77, "c2_bits": 0x3A83126F}}}}


def test_family_rows_carry_the_record_and_run_through_simulate():
    assert FAMILIES["ops"] is ops_rows
    rows = ops_rows(_rec())
    assert [(r.name.split(" [")[0], r.measured) for r in rows] == [
        ("fma_f32", 4.1), ("fma_f32", 0.9), ("fma_f32", 3.5), ("red_shared_add_u32", 0.05)]
    assert all(r.simulated > 0 for r in rows)


def test_more_warps_never_lower_the_simulated_rate():
    gpu = gpu_at()
    rates = [sim_rate("shfl_bfly", {"results": {}}, "reg", w, gpu) for w in (1, 2, 4, 8)]
    assert all(b >= a * 0.999 for a, b in zip(rates, rates[1:])), rates
