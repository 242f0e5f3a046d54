"""A TMA store still writing to global memory when the last warp exits lands all the same, and the
kernel ends no earlier: a kernel's completion includes its memory writes being performed
(`cp.async.bulk.wait_group.read 0` before exit is enough on hardware: it only protects the shared
source; PTX ISA, cp.async.bulk.wait_group).

Laws: with `.read` only, the timed runner's output equals the functional runner's and the
expected values (numpy); the simulated end is >= the cycle the last store's global write lands
(as the TMA unit gives it; loop="single": the CTAs' cycles alone), in both memory modes and with
memoisation."""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.functional.runner import run_kernel
from hopsim.timing import units
from hopsim.timing.runner import simulate
from isa.ir import parse
from isa.tensormap import TensorMap

ROWS, COLS = 8, 8          # one 8 x 8 u32 box per CTA: 256 B, 8 B per lane of one warp
KERNEL = """
.kernel store_drain
.param .tmap tmap_out
.shared .align 1024 .b8 smem[256]
.reg .u32 %r<8>
.reg .pred %p<2>
    mov.u32 %r0, %tid.x;
    mov.u32 %r6, %ctaid.x;
    setp.eq.u32 %p0, %r0, 0;
    mov.u32 %r1, smem;
    shl.b32 %r2, %r0, 3;
    add.u32 %r3, %r1, %r2;
    mad.lo.u32 %r5, %r6, 100, %r0;
    add.u32 %r5, %r5, 1;
    st.shared.v2.u32 [%r3], {%r5, %r5};
    fence.proxy.async.shared::cta;
    bar.sync 0;
    shl.b32 %r7, %r6, 3;
@%p0 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [tmap_out, {0, %r7}], [smem];
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group.read 0;
    exit;
"""


def _setup(ctas: int):
    gm = GlobalMemory()
    addr = gm.alloc("out", np.zeros((ctas * ROWS, COLS), dtype=np.uint32))
    tm = TensorMap(dtype="f32", global_dims=(COLS, ctas * ROWS), global_strides_bytes=(COLS * 4,),
                   box_dims=(COLS, ROWS), global_address=addr)
    params = {"tmap_out": gm.register_tensor_map("tmap_out", tm)}
    return gm, Launch(grid=ctas, block=32, params=params)


def _expected(ctas: int) -> np.ndarray:
    lanes = np.arange(32, dtype=np.uint32)
    out = [np.repeat(c * 100 + lanes + 1, 2).reshape(ROWS, COLS) for c in range(ctas)]
    return np.concatenate(out).astype(np.uint32)


@pytest.fixture
def write_times(monkeypatch):
    """Every global write completion the TMA units hand out (cycle)."""
    got: list[float] = []
    real = units.TmaUnit.store

    def store(self, *a, **kw):
        read_done, write_done = real(self, *a, **kw)
        got.append(write_done)
        return read_done, write_done
    monkeypatch.setattr(units.TmaUnit, "store", store)
    return got


@pytest.mark.parametrize("ctas", [1, 3])
def test_read_wait_only_lands_the_store(ctas, write_times):
    gm, launch = _setup(ctas)
    res = simulate(parse(KERNEL), launch, values=True, gmem=gm, loop="single")
    timed = gm.view("out", np.uint32).reshape(ctas * ROWS, COLS).copy()
    gf, lf = _setup(ctas)
    run_kernel(parse(KERNEL), lf, gf)
    functional = gf.view("out", np.uint32).reshape(ctas * ROWS, COLS)
    assert np.array_equal(functional, _expected(ctas))
    assert np.array_equal(timed, functional)
    assert len(write_times) == ctas
    assert res.cycles >= max(write_times)


@pytest.mark.parametrize("memo", [False, True])
def test_end_includes_the_last_write_timing_only(memo, write_times):
    """Timing-only, partitioned memory, with and without memoisation (replayed CTAs included)."""
    ctas = 264
    gm, launch = _setup(ctas)
    res = simulate(parse(KERNEL), launch, values=False, gmem=gm, memory="partitioned", memo=memo, loop="single")
    assert write_times
    assert res.cycles >= max(write_times)
