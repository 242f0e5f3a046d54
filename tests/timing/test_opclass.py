"""Per-opcode timing classes (hopsim/timing/opclass.py) through simulate(), and their config fields.

Laws: a dependent chain of one class advances one class latency per step; independent instructions
of one warp issue one class warp gap apart; many warps on one sub-partition are limited by the
class pipe time. The costs are read from the config (whatever calibrate wrote), never copied."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from hopsim.config import load_gpu
from hopsim.config.h100_sxm import H100Timing
from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.timing.opclass import CLASSES, FIELDS, classify
from hopsim.validate.micro_ir.run import gpu_at, run_kernel
from isa.ir.parser import parse

GPU = gpu_at()
T = GPU.timing
DEF = H100Timing()
CAL = pathlib.Path(__file__).resolve().parents[2] / "hopsim" / "config" / "h100_sxm_calibrated.json"


def _v(name: str) -> float:
    return float(getattr(T, name).value)


def _kernel(body: str) -> str:
    return f""".kernel k
.param .u64 out
.reg .u32 %r<16>
.reg .f32 %f<16>
.reg .u64 %rd<8>
    mov.u64 %rd0, %clock64;
{body}
    mov.u64 %rd1, %clock64;
    sub.s64 %rd2, %rd1, %rd0;
    mov.u32 %r15, %tid.x;
    shr.u32 %r15, %r15, 5;
    mul.wide.u32 %rd4, %r15, 8;
    ld.param.u64 %rd3, [out];
    add.u64 %rd3, %rd3, %rd4;
    st.global.u64 [%rd3], %rd2;
    exit;
"""


def _cycles(body: str, warps: int = 1) -> np.ndarray:
    gm = GlobalMemory()
    o = gm.alloc("out", np.zeros(warps, dtype=np.int64))
    run = run_kernel(parse(_kernel(body)), Launch(grid=1, block=32 * warps, params={"out": o}), gm, GPU)
    return run.out("out", np.int64)[:warps]


def test_dependent_fma_chain_advances_one_latency_per_step():
    n = 32
    lat, gap_alu, gap = _v("op_fp32_latency_cycles"), _v("op_alu_warp_cycles"), _v("op_fp32_warp_cycles")
    assert lat >= gap  # the chain, not the warp gap, binds
    got = _cycles("\n".join("    fma.rn.f32 %f0, %f0, %f1, %f2;" for _ in range(n)))[0]
    # the clock read (integer ALU), then n fmas each waiting for the previous one, then the last gap
    assert got == -(-(gap_alu + (n - 1) * lat + gap) // 1)


def test_dependent_chain_of_each_alu_class_costs_its_latency():
    steps = {"fp16x2": "fma.rn.f16x2 %r0, %r0, %r1, %r2;", "fminmax": "max.f32 %f0, %f0, %f1;",
             "alu": "add.u32 %r0, %r0, %r1;", "vote": "vote.sync.any.pred %p0, %p0, 0xffffffff;"}
    for cls, step in steps.items():
        body = step if cls != "vote" else step
        k = _kernel("\n".join("    " + body for _ in range(16)))
        if cls == "vote":
            k = k.replace(".reg .u64 %rd<8>", ".reg .u64 %rd<8>\n.reg .pred %p<2>")
        gm = GlobalMemory()
        o = gm.alloc("out", np.zeros(1, dtype=np.int64))
        got = run_kernel(parse(k), Launch(grid=1, block=32, params={"out": o}), gm, GPU).out("out", np.int64)[0]
        lat, w0, w = (_v(f) for f in (FIELDS[cls][0], "op_alu_warp_cycles", FIELDS[cls][2]))
        assert got == -(-(w0 + 15 * max(lat, w) + w) // 1), cls


def test_independent_instructions_issue_one_warp_gap_apart():
    n = 32  # 8 independent chains of 4: each step's input is 8 instructions old
    gap_alu, gap, lat = _v("op_alu_warp_cycles"), _v("op_fp32_warp_cycles"), _v("op_fp32_latency_cycles")
    assert 8 * gap >= lat
    body = "\n".join(f"    fma.rn.f32 %f{c}, %f{c}, %f14, %f15;" for _ in range(n // 8) for c in range(8))
    assert _cycles(body)[0] == -(-(gap_alu + n * gap) // 1)


def test_many_warps_are_limited_by_the_class_pipe():
    n, warps = 64, 32  # 8 warps per sub-partition, 64 independent fmas each
    pipe, gap = _v("op_fp32_pipe_cycles"), _v("op_fp32_warp_cycles")
    assert 8 * pipe > gap  # the pipe binds, not one warp's gap
    body = "\n".join(f"    fma.rn.f32 %f{c}, %f{c}, %f14, %f15;" for _ in range(n // 8) for c in range(8))
    per_warp = _cycles(body, warps)
    assert per_warp.max() >= 8 * n * pipe  # the last warp of a sub-partition waits for the other 7
    assert per_warp.max() <= 8 * n * pipe + 8 * 64 + 64  # + each warp's partial ALU batch and latency


def test_classes():
    ins = {"fma.rn.f32 %f0, %f1, %f2, %f3;": "fp32", "add.u32 %r0, %r1, 1;": "alu", "mov.b32 %f0, %r1;": "mov",
           "mov.u32 %r0, 7;": "alu", "max.f32 %f0, %f1, %f2;": "fminmax", "fma.rn.bf16x2 %r0, %r1, %r2, %r3;": "fp16x2",
           "cvt.rn.f16x2.f32 %r0, %f1, %f2;": "cvt_pack", "cvt.rn.bf16.f32 %h0, %f1;": "cvt_bf16",
           "cvt.f32.f16 %f0, %h1;": "cvt_f16", "cvt.rn.f32.u32 %f0, %r1;": "alu",
           "vote.sync.ballot.b32 %r0, %p1, 0xffffffff;": "vote_ballot", "vote.sync.all.pred %p0, %p1, 0xffffffff;": "vote",
           "redux.sync.add.u32 %r0, %r1, 0xffffffff;": "redux", "ex2.approx.ftz.f32 %f0, %f1;": "ex2",
           "ex2.approx.f32 %f0, %f1;": "ex2_full", "rcp.approx.ftz.f32 %f0, %f1;": "rcp", "rcp.approx.f32 %f0, %f1;": "rcp_full",
           "shfl.sync.bfly.b32 %r0, %r1, 1, 31, 0xffffffff;": "shfl", "shfl.sync.idx.b32 %r0, %r1, %r2, 31, 0xffffffff;": "shfl_idx",
           "shfl.sync.idx.b32 %r0, %r1, 3, 31, 0xffffffff;": "shfl"}
    for text, cls in ins.items():
        k = parse(".kernel k\n.reg .u32 %r<4>\n.reg .f32 %f<4>\n.reg .b16 %h<2>\n.reg .pred %p<2>\n    " + text + "\n    exit;\n")
        assert classify(k.body[0]) == cls, text


def test_class_fields_have_type_unit_meaning_source():
    for cls in CLASSES:
        for name, unit in zip(FIELDS[cls], ("cycles", "cycles/instruction", "cycles/instruction")):
            p = getattr(DEF, name)
            assert p.unit == unit and p.meaning and p.source, name
            assert isinstance(p.value, (int, float))
    for name in ("bar_sync_cycles", "bar_sync_per_warp_cycles"):
        p = getattr(DEF, name)
        assert p.meaning and p.source and p.unit.startswith("cycles")


def test_calibrated_class_fields_come_from_the_ops_record():
    cal = json.loads(CAL.read_text())["timing"]
    for cls in CLASSES:
        if cls == "mov":  # not fitted: ptxas renames register moves (assumed, with the SASS evidence)
            assert all(f not in cal for f in FIELDS[cls])
            continue
        for f in FIELDS[cls]:
            assert cal[f]["source"].startswith("measured: microbench__ops.json"), f
            assert cal[f]["unit"] == getattr(DEF, f).unit
    assert cal["bar_sync_cycles"]["source"].startswith("measured: microbench__ops.json")
    g = load_gpu()
    assert float(g.timing.mufu_latency_cycles.value) == cal["mufu_latency_cycles"]["value"]


def test_atomic_unit_serialises_lanes_on_one_word():
    from hopsim.timing.atomics import AtomCost, atomic_timing
    from hopsim.timing.pipes import Pipe
    c = AtomCost(pipe=1.0, lane=2.0, warp=5.0, latency=30.0, conflict_latency=3.0, blocking=False)
    unit = Pipe("u")
    assert atomic_timing(c, 1, unit, 0.0, "a") == (0.0, 30.0)          # distinct words: one pipe time
    assert unit.next_free == 1.0
    start, ready = atomic_timing(c, 32, unit, 0.0, "a")                # queued behind the first
    assert (start, ready, unit.next_free) == (1.0, 1.0 + 30.0 + 31 * 3.0, 1.0 + 1.0 + 31 * 2.0)


def test_atomic_fields_have_unit_meaning_source_and_calibrated_sources():
    from hopsim.timing.atomics import CLASSES as ACLS, FIELDS as AF
    cal = json.loads(CAL.read_text())["timing"]
    for cls in ACLS:
        for q, name in AF[cls].items():
            p = getattr(DEF, name)
            assert p.unit.startswith("cycles") and p.meaning and p.source, name
            assert cal[name]["source"].startswith("measured: microbench__ops.json"), name
