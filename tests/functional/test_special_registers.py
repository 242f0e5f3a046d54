"""Special registers FA3-style kernels read (PTX ISA, special registers): every per-lane value
against its definition for a 2-D block and grid, %lanemask_* bit patterns, shared sizes, and the
functional clocks (%clock, %clock64, %globaltimer: strictly increasing per read, not cycles)."""

from __future__ import annotations

import numpy as np
import pytest

from isa.ir import parse, verify
from isa.ir.operands import SPECIAL_REGISTERS, SReg

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.functional.runner import run_kernel

from _func_helpers import run

U32_REGS = ["%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z", "%ctaid.x", "%ctaid.y", "%ctaid.z",
            "%nctaid.x", "%nctaid.y", "%nctaid.z", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid",
            "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt",
            "%dynamic_smem_size", "%total_smem_size", "%cluster_ctarank", "%cluster_nctarank"]
BLOCK, GRID, DYN = (16, 4, 2), (3, 2, 1), 256


def _want(name: str, cta: tuple, t: int) -> int:
    bx, by, _ = BLOCK
    lane, warp = t % 32, t // 32
    x = {"%tid.x": t % bx, "%tid.y": (t // bx) % by, "%tid.z": t // (bx * by),
         "%ntid.x": BLOCK[0], "%ntid.y": BLOCK[1], "%ntid.z": BLOCK[2],
         "%ctaid.x": cta[0], "%ctaid.y": cta[1], "%ctaid.z": cta[2],
         "%nctaid.x": GRID[0], "%nctaid.y": GRID[1], "%nctaid.z": GRID[2],
         "%laneid": lane, "%warpid": warp, "%nwarpid": 4, "%smid": 0, "%nsmid": 1,
         "%lanemask_eq": 1 << lane, "%lanemask_le": (2 << lane) - 1, "%lanemask_lt": (1 << lane) - 1,
         "%lanemask_ge": 0xFFFFFFFF ^ ((1 << lane) - 1), "%lanemask_gt": 0xFFFFFFFF ^ ((2 << lane) - 1),
         "%dynamic_smem_size": DYN, "%total_smem_size": 64 + DYN, "%cluster_ctarank": 0, "%cluster_nctarank": 1}
    return x[name] & 0xFFFFFFFF


def test_every_u32_special_register_per_lane():
    n = len(U32_REGS)
    body = "".join(f"    mov.u32 %r1, {name};\n    st.global.u32 [%rd1+{4 * i}], %r1;\n" for i, name in enumerate(U32_REGS))
    src = f""".kernel k
.param .u64 OUT
.shared .align 16 .b8 buf[64]
.reg .u32 %r<4>
.reg .u64 %rd<4>
    mov.u32 %r0, %tid.x;
    mov.u32 %r2, %tid.y;
    mad.lo.u32 %r0, %r2, {BLOCK[0]}, %r0;
    mov.u32 %r2, %tid.z;
    mad.lo.u32 %r0, %r2, {BLOCK[0] * BLOCK[1]}, %r0;
    mov.u32 %r2, %ctaid.y;
    mov.u32 %r3, %ctaid.x;
    mad.lo.u32 %r2, %r2, {GRID[0]}, %r3;
    mad.lo.u32 %r0, %r2, 128, %r0;
    mul.wide.u32 %rd0, %r0, {4 * n};
    ld.param.u64 %rd1, [OUT];
    add.u64 %rd1, %rd1, %rd0;
{body}    exit;
"""
    g = GlobalMemory()
    out = g.alloc("OUT", 4 * n * 128 * GRID[0] * GRID[1])
    run_kernel(parse(src), Launch(grid=GRID, block=BLOCK, dynamic_smem=DYN, params={"OUT": out}), g)
    got = g.view("OUT", np.uint32).reshape(GRID[0] * GRID[1], 128, n)
    for c in range(GRID[0] * GRID[1]):
        cta = (c % GRID[0], c // GRID[0], 0)
        for t in range(128):
            assert got[c, t].tolist() == [_want(name, cta, t) for name in U32_REGS], (c, t)


@pytest.mark.parametrize("name, t", [("%clock", "u32"), ("%clock64", "u64"), ("%globaltimer", "u64")])
def test_clocks_increase_strictly_per_read(name, t):
    w = 64 if t == "u64" else 32
    r = "%rd" if w == 64 else "%r"
    src = f""".kernel k
.param .u64 OUT
.reg .u32 %r<8>
.reg .u64 %rd<8>
    mov.{t} {r}2, {name};
    mov.{t} {r}3, {name};
    add.u32 %r0, %r0, 1;
    mov.{t} {r}4, {name};
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd0, %r0, {3 * w // 8};
    ld.param.u64 %rd1, [OUT];
    add.u64 %rd1, %rd1, %rd0;
    st.global.{t} [%rd1], {r}2;
    st.global.{t} [%rd1+{w // 8}], {r}3;
    st.global.{t} [%rd1+{2 * w // 8}], {r}4;
    exit;
"""
    g = GlobalMemory()
    out = g.alloc("OUT", 3 * (w // 8) * 64)
    run(src, block=64, gmem=g, params={"OUT": out})
    v = g.view("OUT", np.uint64 if w == 64 else np.uint32).reshape(64, 3).astype(np.int64)
    assert (np.diff(v, axis=1) > 0).all()       # each warp's reads strictly increase


def test_declared_widths_and_verifier():
    assert SReg("%globaltimer").bits == 64 and SReg("%clock64").bits == 64 and SReg("%lanemask_lt").bits == 32
    assert set(U32_REGS) | {"%clock", "%clock64", "%globaltimer"} == set(SPECIAL_REGISTERS)
    k = parse(".kernel k\n.reg .u32 %r<2>\n    mov.u32 %r0, %globaltimer;\n    exit;\n")
    (d,) = verify(k)
    assert d.line == 3 and "%globaltimer is 64-bit" in d.message
