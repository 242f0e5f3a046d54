"""SM-level memoisation (smclass.py) for grids with 2 and 3 CTAs per SM: memo=True gives exactly
the cycles, bytes, role statistics and busy fractions of memo=False (same partitioned mode) on
multi-wave grids, including L2 evictions (varied hit vectors), a partial last wave, TMA stores and
a permuted raster."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hopsim.config import load_gpu
from hopsim.config.base import P
from hopsim.functional.executor import Launch
from hopsim.timing.runner import simulate
from tests.timing.scripted import ScriptedExecutor, scripted_wavefronts

GPU = load_gpu("h100_sxm")


def _gpu(sms, l2):
    return GPU.model_copy(update={"spec": GPU.spec.with_values({
        "num_sms": P(sms, "SMs", "test", "assumed: test"), "l2_bytes": P(l2, "bytes", "test", "assumed: test")})})


def gemm_scripts(c, gx, kblocks=6, stages=2, store=True):
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
    if store:
        cons += [("lds", 2, 1), ("store", 8192, ("C", (by, bx)), ("st", 0)), ("wait", ("st", 0))]
    return [prod + [("exit",)], [("exit",)], [("exit",)], [("exit",)], cons + [("exit",)]]


SMEM = {2: 100 * 1024, 3: 70 * 1024}  # static shared memory giving 2 or 3 CTAs per SM


def _sim(gx, gy, per_sm, gpu, perm=None, **kw):
    kernel = SimpleNamespace(name="scripted_gemm", static_smem_bytes=SMEM[per_sm], regs=())
    launch = Launch(grid=(gx, gy, 1), block=(160, 1, 1))
    return simulate(kernel, launch, gpu, values=False, bank_model=scripted_wavefronts, regs_per_thread=64,
                    executor_factory=lambda c: ScriptedExecutor(gemm_scripts(perm[c] if perm else c, gx), c),
                    memory="partitioned", **kw)


def _same(fast, full):
    assert fast.ctas_per_sm == full.ctas_per_sm
    assert fast.cycles == full.cycles
    for f in ("bytes_l2", "bytes_hbm", "bytes_stored", "flops", "smem_wavefronts", "smem_ideal_wavefronts"):
        assert getattr(fast, f) == getattr(full, f), f
    assert fast.extra["tma_boxes"] == full.extra["tma_boxes"]
    assert fast.roles == full.roles
    assert fast.busy == pytest.approx(full.busy, rel=1e-12)


CASES = [  # (gx, gy, CTAs/SM, SMs, L2 bytes): several waves, partial last wave, L2 evictions
    (4, 6, 2, 4, 65536),
    (6, 5, 2, 4, 1 << 20),
    (5, 7, 3, 4, 65536),
    (8, 8, 3, 5, 98304),
    (7, 9, 2, 6, 131072),
]


@pytest.mark.parametrize("gx,gy,per_sm,sms,l2", CASES)
def test_sm_classes_equal_full_simulation(gx, gy, per_sm, sms, l2):
    gpu = _gpu(sms, l2)
    full = _sim(gx, gy, per_sm, gpu, memo=False)
    fast = _sim(gx, gy, per_sm, gpu, memo=True)
    assert fast.ctas_per_sm == per_sm and fast.waves >= 3
    assert fast.extra["sm_classes"] >= 1 and fast.extra["memo_hits"] > 0
    _same(fast, full)


def test_sm_classes_with_permuted_raster():
    gx, gy = 6, 6
    perm = [(c * 7) % (gx * gy) for c in range(gx * gy)]
    gpu = _gpu(4, 65536)
    full = _sim(gx, gy, 2, gpu, perm, memo=False)
    fast = _sim(gx, gy, 2, gpu, perm, memo=True)
    _same(fast, full)
