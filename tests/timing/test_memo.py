"""CTA memoisation: memo=True gives exactly the cycles and counters of memo=False (same
partitioned memory mode) on a multi-wave grid; the affine tile plan predicts every CTA's tiles."""

from __future__ import annotations

import pytest

from hopsim.config import load_gpu
from hopsim.config.base import P
from hopsim.functional.executor import Launch
from hopsim.timing.memo import TilePlan, capture_tiles
from hopsim.timing.runner import simulate
from tests.timing.scripted import ScriptedExecutor, scripted_wavefronts
from types import SimpleNamespace

GPU = load_gpu("h100_sxm")
# 8 SMs and a 64 KB L2: several waves on a small grid, and L2 evictions (so hit vectors vary)
SMALL = GPU.model_copy(update={"spec": GPU.spec.with_values({
    "num_sms": P(8, "SMs", "test", "assumed: test"), "l2_bytes": P(65536, "bytes", "test", "assumed: test")})})


def gemm_scripts(c, gx, kblocks=6, stages=2):
    bx, by = c % gx, c // gx
    prod, cons = [], []
    for k in range(kblocks):
        s, ph = k % stages, k // stages
        if k >= stages:
            prod.append(("wait", ("mbar", 100 + s, ph - 1)))
        prod += [("alu", 2), ("tma", 4096, ("A", (by, k)), ("mbar", s, ph), 2),
                 ("tma", 4096, ("B", (bx, k)), ("mbar", s, ph), 2), ("alu", 3)]
        cons += [("wait", ("mbar", s, ph))] + [("wgmma", 128, ("wgmma", 0, k), 4)] * 4 + [
            ("wait", ("wgmma", 0, k)), ("arrive", ("mbar", 100 + s, ph), 1), ("alu", 3)]
    return [prod + [("exit",)], [("exit",)], [("exit",)], [("exit",)], cons + [("exit",)]]


def _sim(gx, gy, perm=None, **kw):
    kernel = SimpleNamespace(name="scripted_gemm", static_smem_bytes=150 * 1024, regs=())  # 1 CTA/SM
    launch = Launch(grid=(gx, gy, 1), block=(160, 1, 1))
    return simulate(kernel, launch, SMALL, values=False, bank_model=scripted_wavefronts, regs_per_thread=64,
                    executor_factory=lambda c: ScriptedExecutor(gemm_scripts(perm[c] if perm else c, gx), c), **kw)


def test_tile_plan_predicts_every_cta():
    gx, gy = 5, 4
    launch = Launch(grid=(gx, gy, 1), block=(160, 1, 1))
    plan = TilePlan.build(launch, lambda c: ScriptedExecutor(gemm_scripts(c, gx), c))
    assert plan is not None
    for c in range(gx * gy):
        got = capture_tiles(ScriptedExecutor(gemm_scripts(c, gx), c))
        assert [[(h, co, nb) for (h, co), nb in row] for row in got] == plan.tiles(c)


def test_non_affine_raster_gets_a_translation_plan():
    gx, gy = 4, 3
    perm = [5, 0, 2, 1, 11, 3, 4, 7, 6, 9, 8, 10]  # a permuted raster order is not affine in ctaid
    launch = Launch(grid=(gx, gy, 1), block=(160, 1, 1))
    make = lambda c: ScriptedExecutor(gemm_scripts(perm[c], gx), c)  # noqa: E731
    plan = TilePlan.build(launch, make)
    assert plan is not None and plan.mode == "translate"
    for c in range(gx * gy):
        got = capture_tiles(make(c))
        assert [[(h, co, nb) for (h, co), nb in row] for row in got] == plan.tiles(c)


def test_tiles_that_are_not_a_translation_give_no_plan():
    gx = 4

    def scripts(c):  # CTA c loads c+1 k-blocks: not the same stream
        return gemm_scripts(c, gx, kblocks=2 + c)
    plan = TilePlan.build(Launch(grid=(gx, 1, 1), block=(160, 1, 1)), lambda c: ScriptedExecutor(scripts(c), c))
    assert plan is None


@pytest.mark.parametrize("gx,gy", [(4, 6), (6, 5)])
def test_memo_equals_full_simulation(gx, gy):
    full = _sim(gx, gy, memory="partitioned", memo=False)
    fast = _sim(gx, gy, memory="partitioned", memo=True)
    assert fast.extra["memo_hits"] > 0  # the memo was used
    assert fast.waves == full.waves >= 3
    assert fast.cycles == full.cycles
    for f in ("bytes_l2", "bytes_hbm", "flops", "smem_wavefronts"):
        assert getattr(fast, f) == getattr(full, f), f
    assert fast.roles == full.roles
    assert fast.busy == pytest.approx(full.busy)


def test_memo_equals_full_simulation_with_permuted_raster():
    gx, gy = 4, 6
    perm = [(c * 7) % (gx * gy) for c in range(gx * gy)]  # 7 is coprime with 24: a permutation
    full = _sim(gx, gy, perm, memory="partitioned", memo=False)
    fast = _sim(gx, gy, perm, memory="partitioned", memo=True)
    assert fast.extra["memo_hits"] > 0
    assert fast.cycles == full.cycles and fast.bytes_hbm == full.bytes_hbm and fast.roles == full.roles


def test_memo_refused_outside_its_conditions():
    from isa.errors import InputError
    with pytest.raises(InputError):
        _sim(2, 2, memory="shared", memo=True)


def test_merged_fetches_move_each_tile_once():
    gx, gy, kb = 4, 6, 6
    big = GPU.model_copy(update={"spec": GPU.spec.with_values({"num_sms": P(8, "SMs", "test", "assumed: test")})})
    kernel = SimpleNamespace(name="scripted_gemm", static_smem_bytes=150 * 1024, regs=())
    r = simulate(kernel, Launch(grid=(gx, gy, 1), block=(160, 1, 1)), big, values=False,
                 bank_model=scripted_wavefronts, regs_per_thread=64, memory="partitioned", memo=True,
                 executor_factory=lambda c: ScriptedExecutor(gemm_scripts(c, gx, kblocks=kb), c))
    # 50 MB L2 holds everything: each A row tile and B column tile comes from HBM exactly once
    # (its readers in one wave share the fetch), every other read hits
    unique = (gy + gx) * kb * 4096
    assert r.bytes_hbm == unique
    assert r.bytes_l2 < gx * gy * 2 * kb * 4096  # the merged readers' reads were misses, not hits
