"""cp.async.bulk.wait_group.read: a TMA store's shared-memory source may be reused once the store
has read it (PTX ISA, cp.async.bulk.wait_group: `.read` waits only until the reads of the source
are done), before its writes to global memory complete.

Laws: the global result of a store is its source as it was when read, even when the source is
overwritten right after `wait_group.read 0` (and the overwrite is what a second store writes);
the simulated time of two back-to-back stores separated by `wait_group.read 0` is shorter than
with `wait_group 0` (the first store's write to L2 overlaps the second store)."""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.timing.runner import simulate
from isa.ir import parse
from isa.tensormap import TensorMap

ROWS, COLS = 8, 8          # one 8 x 8 f32 box: 256 B, 8 B per lane of one warp


def _kernel(wait: str) -> str:
    return f"""
.kernel store_read
.param .tmap tmap_out
.shared .align 1024 .b8 smem[256]
.reg .u32 %r<8>
.reg .pred %p<2>
    mov.u32 %r0, %tid.x;
    setp.eq.u32 %p0, %r0, 0;
    mov.u32 %r1, smem;
    shl.b32 %r2, %r0, 3;
    add.u32 %r3, %r1, %r2;
    add.u32 %r5, %r0, 1;
    st.shared.v2.u32 [%r3], {{%r5, %r5}};
    fence.proxy.async.shared::cta;
    bar.sync 0;
@%p0 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [tmap_out, {{0, 0}}], [smem];
    cp.async.bulk.commit_group;
    {wait};
    mov.u32 %r4, 7777;
    st.shared.v2.u32 [%r3], {{%r4, %r4}};
    fence.proxy.async.shared::cta;
    bar.sync 0;
@%p0 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [tmap_out, {{0, 8}}], [smem];
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
    exit;
"""


def _run(wait: str):
    gm = GlobalMemory()
    addr = gm.alloc("out", np.zeros((2 * ROWS, COLS), dtype=np.uint32))
    tm = TensorMap(dtype="f32", global_dims=(COLS, 2 * ROWS), global_strides_bytes=(COLS * 4,),
                   box_dims=(COLS, ROWS), global_address=addr)
    params = {"tmap_out": gm.register_tensor_map("tmap_out", tm)}
    res = simulate(parse(_kernel(wait)), Launch(grid=1, block=32, params=params), values=True, gmem=gm)
    return res, gm.view("out", np.uint32).reshape(2 * ROWS, COLS)


@pytest.mark.parametrize("wait", ["cp.async.bulk.wait_group.read 0", "cp.async.bulk.wait_group 0"])
def test_store_writes_its_source_as_read(wait):
    _, out = _run(wait)
    lanes = np.repeat(np.arange(1, 33, dtype=np.uint32), 2).reshape(ROWS, COLS)
    assert np.array_equal(out[:ROWS], lanes)              # not the 7777 written after the read
    assert np.array_equal(out[ROWS:], np.full((ROWS, COLS), 7777, dtype=np.uint32))


def test_read_wait_returns_before_the_write_completes():
    fast, _ = _run("cp.async.bulk.wait_group.read 0")
    slow, _ = _run("cp.async.bulk.wait_group 0")
    assert fast.cycles < slow.cycles
