"""Special-function (MUFU: ex2, rcp) and warp-shuffle throughput per SM sub-partition.

Hopper delivers 16 MUFU results and 32 shuffle results per clock per SM ([CPG-ARITH], compute
capability 9.0), over 4 sub-partitions: a warp's MUFU instruction holds its sub-partition's pipe
32 / (16 / 4) = 8 cycles, a shuffle 32 / (32 / 4) = 4.

Laws (differences of two runs cancel launch and exit costs):
- one warp issuing N independent ex2 back to back takes >= 8 N cycles (rcp alike);
- 4 warps (one per sub-partition) take the time of one: the sub-partitions' pipes work in parallel;
  8 warps (two per sub-partition) take >= 16 N;
- one warp's N independent shfl.sync take >= 4 N cycles and less than N MUFU instructions;
- a dependent chain of ex2 pays the MUFU latency per link (the result is scoreboarded).
"""

from __future__ import annotations

import pytest

from hopsim.config import load_gpu
from hopsim.functional.executor import Launch
from hopsim.timing.runner import simulate
from isa.ir import parse

SPEC = load_gpu().spec
MUFU = 32 / (float(SPEC.mufu_results_per_clock_per_sm.value) / float(SPEC.num_subpartitions.value))
SHFL = 32 / (float(SPEC.shfl_results_per_clock_per_sm.value) / float(SPEC.num_subpartitions.value))


def _kernel(op: str, n: int, chain: bool = False) -> str:
    lines = []
    for i in range(1, n + 1):
        src = f"%f{i - 1}" if chain else "%f0"
        if op == "shfl":
            lines.append(f"    shfl.sync.bfly.b32 %f{i}, {src}, 1, 31, 0xffffffff;")
        else:
            lines.append(f"    {op}.approx.f32 %f{i}, {src};")
    body = "\n".join(lines)
    return f"""
.kernel pipes
.reg .f32 %f<{n + 2}>
.reg .u32 %r<2>
    mov.u32 %r0, %tid.x;
    cvt.rn.f32.u32 %f0, %r0;
{body}
    exit;
"""


def _cycles(op: str, n: int, warps: int, chain: bool = False) -> int:
    res = simulate(parse(_kernel(op, n, chain)), Launch(grid=1, block=32 * warps), values=True, loop="single")
    return res.cycles


@pytest.mark.parametrize("op", ["ex2", "rcp"])
def test_one_warp_mufu_rate(op):
    d = _cycles(op, 24, 1) - _cycles(op, 8, 1)
    assert d >= MUFU * 16 == 8 * 16


@pytest.mark.parametrize("op, per", [("ex2", MUFU), ("shfl", SHFL)])
def test_four_sub_partitions_in_parallel(op, per):
    one = _cycles(op, 24, 1) - _cycles(op, 8, 1)
    four = _cycles(op, 24, 4) - _cycles(op, 8, 4)
    assert four == one                      # one warp per sub-partition: no sharing
    eight = _cycles(op, 24, 8) - _cycles(op, 8, 8)
    assert eight >= 2 * per * 16            # two warps share each sub-partition's pipe


def test_shuffle_rate():
    d = _cycles("shfl", 24, 1) - _cycles("shfl", 8, 1)
    assert d >= SHFL * 16 == 4 * 16
    assert d < _cycles("ex2", 24, 1) - _cycles("ex2", 8, 1)  # twice the MUFU rate


def test_dependent_chain_pays_the_latency():
    lat = float(load_gpu().timing.mufu_latency_cycles.value)
    d = _cycles("ex2", 24, 1, chain=True) - _cycles("ex2", 8, 1, chain=True)
    assert d >= lat * 16
