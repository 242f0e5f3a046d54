"""The functional runner executes a whole TMA + WGMMA GEMM kernel and gets A @ B^T right; its
lazy completion turns ordering bugs into wrong data or named errors."""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.functional.checks import (
    AccumulatorTouched, Deadlock, ReadBeforeLand, StageOverwrite, WgmmaWithoutFence,
)
from hopsim.functional.effect import Kind
from hopsim.functional.executor import CTAExecutor, Launch
from hopsim.functional.runner import run_kernel

from _func_helpers import kernel
from _gemm_kernel import gemm_text, reference, setup


def _run(n=64, k=256, checks=True, values=True, order="oldest", **mut):
    g, params, a, b = setup(k, n)
    st = run_kernel(kernel(gemm_text(n, **mut)), Launch(block=128, params=params), g, checks=checks, values=values,
                    order=order)
    return g.view("D", np.float32).reshape(64, n), reference(a, b), st


@pytest.mark.parametrize("order", ["oldest", "newest"])
@pytest.mark.parametrize("n,k", [(64, 256), (128, 256), (64, 64), (64, 512)])
def test_gemm_equals_numpy(n, k, order):
    d, ref, st = _run(n, k, order=order)
    # f16 products are exact; f32 accumulation over k16 chunks rounds once per wgmma
    np.testing.assert_allclose(d, ref, rtol=1e-5, atol=1e-4 * np.sqrt(k))
    kt = k // 64
    assert st.by_kind[Kind.WGMMA] == 4 * 4 * kt        # each of the 4 warps issues each wgmma
    assert st.by_kind[Kind.TMA_LOAD] == 4 * 2 * (2 + kt)  # all warps issue it (predicated): prologue + refills
    assert st.async_ops == 4 * kt + 2 * max(kt, 2)     # one wgmma op per warpgroup; 2 boxes per stage load
    #                                                    (the prologue always fills both stages)


def test_gemm_timing_only_mode_same_control_flow():
    _, _, full = _run(64, 256)
    d, _, fast = _run(64, 256, values=False)
    assert fast.by_kind == full.by_kind and fast.instructions == full.instructions
    assert not d.any()  # no data computed


def test_tx_count_never_completes_is_a_deadlock():
    with pytest.raises(Deadlock) as ei:
        _run(extra_tx=16)
    e = ei.value
    bars = 2 * (64 * 64 * 2 + 64 * 64 * 2)
    assert e.barrier == bars and e.phase == 0
    assert "tx-count 16" in str(e) and "mbarrier.try_wait.parity" in e.text


def test_reusing_a_stage_before_wait_group_is_a_stage_overwrite():
    with pytest.raises(StageOverwrite) as ei:
        _run(early_reuse=True)
    assert "cp.async.bulk.tensor" in ei.value.text and "wgmma group" in str(ei.value)


def test_reusing_a_stage_early_gives_a_wrong_result_without_checks():
    # adversarial completion order: the refill lands before the in-flight wgmma reads its stage
    d, ref, _ = _run(early_reuse=True, checks=False, order="newest")
    assert not np.allclose(d, ref, rtol=1e-3, atol=1e-2)


def test_wrong_descriptor_swizzle_gives_a_wrong_result():
    d, ref, _ = _run(swizzle_type=2)  # 64B instead of the 128B the TMA wrote
    assert not np.allclose(d, ref, rtol=1e-3, atol=1e-2)


def test_missing_fence_is_named():
    with pytest.raises(WgmmaWithoutFence) as ei:
        _run(no_fence=True)
    assert "wgmma.mma_async" in ei.value.text and ei.value.warp == 3


def test_reading_before_the_tma_lands_is_named():
    with pytest.raises(ReadBeforeLand) as ei:
        _run(no_wait=True)
    assert "wgmma" in str(ei.value)


def test_reading_before_the_tma_lands_gives_stale_data_without_checks():
    # K = 128: both k-blocks come from the prologue (with refills, the over-arrival on the
    # not-yet-completed phase is reported as ArrivalCountOutOfRange instead)
    d, ref, _ = _run(k=128, no_wait=True, checks=False, order="newest")
    assert not np.allclose(d, ref, rtol=1e-3, atol=1e-2)


def test_touching_an_accumulator_in_flight_is_named():
    with pytest.raises(AccumulatorTouched) as ei:
        _run(touch_acc=True)
    assert "%acc0" in str(ei.value) and ei.value.text.startswith("mov.b32")


def test_wgmma_effect_fields():
    g, params, a, b = setup(128, 64)
    ex = CTAExecutor(kernel(gemm_text(64)), Launch(block=128, params=params), g)
    effs = []
    pending = []
    # drive warps 0..3 by hand: round-robin, completing async ops only when all are blocked
    while not ex.all_done:
        progressed = False
        for w in range(4):
            if ex.warp_done(w) or (ex.blocked(w) and not ex.is_ready(ex.blocked(w))):
                continue
            e = ex.issue(w, batch=16)
            effs.append(e)
            if e.complete:
                pending.append(e)
            progressed = progressed or e.blocked_on is None
        if not progressed and pending:
            pending.pop(0).complete()
    mma = [e for e in effs if e.kind == Kind.WGMMA and e.complete]
    assert len(mma) == 8 and all(e.wgmma.n == 64 and e.wgmma.dtype_d == "f32" for e in mma)
    assert mma[0].wgmma.operand_bytes == 64 * 16 * 2 + 16 * 64 * 2 and mma[0].warpgroup == 0
    assert [e.group for e in mma] == [0] * 4 + [1] * 4
    tma = [e for e in effs if e.kind == Kind.TMA_LOAD]
    assert tma[0].tx_bytes == 8192 and tma[0].smem_range == (0, 8192) and tma[0].mbarrier == 32768
    assert tma[0].gmem_bytes == 8192 and len(tma[0].gmem_ranges) == 64
    waits = [e for e in effs if e.kind == Kind.WGMMA_WAIT and e.blocked_on and e.blocked_on[0] == "wgmma"]
    assert waits and waits[0].blocked_on == ("wgmma", 0, 0)
    d = g.view("D", np.float32).reshape(64, 64)
    np.testing.assert_allclose(d, reference(a, b), rtol=1e-5, atol=2e-3)


@pytest.mark.parametrize("order", ["oldest", "newest"])
def test_warp_specialised_gemm_equals_numpy(order):
    from _gemm_kernel import ws_gemm_text, ws_setup
    g, params, a, b = ws_setup(512)
    st = run_kernel(kernel(ws_gemm_text(4)), Launch(block=384, params=params), g, order=order)
    d = g.view("D", np.float32).reshape(128, 128)
    np.testing.assert_allclose(d, reference(a, b), rtol=1e-5, atol=1e-4 * np.sqrt(512))
    assert st.by_kind[Kind.MBAR_WAIT] > 0


def _effect_trace(values: bool):
    g, params, a, b = setup(256, 64)
    ex = CTAExecutor(kernel(gemm_text(64)), Launch(block=128, params=params), g, values=values)
    out, pending = [], []
    while not ex.all_done:
        progressed = False
        for w in range(4):
            if ex.warp_done(w) or (ex.blocked(w) and not ex.is_ready(ex.blocked(w))):
                continue
            e = ex.issue(w, batch=8)
            out.append((e.kind, e.warp, e.index, e.count, e.lanes, e.blocked_on, e.fired, e.mbarrier, e.phase,
                        e.tx_bytes, e.group, e.smem_range, e.gmem_ranges, e.gmem_bytes, e.smem_bytes,
                        None if e.smem_addrs is None else e.smem_addrs.tolist(), e.wgmma, e.tile_key))
            if e.complete:
                pending.append(e)
            progressed = progressed or e.blocked_on is None
        if not progressed and pending:
            out.append(("complete",) + pending[0].complete())
            pending.pop(0)
    return out


def test_timing_only_mode_gives_identical_effects():
    """values=False skips data but every Effect field and event is the same (the timing layer may use
    either)."""
    assert _effect_trace(True) == _effect_trace(False)


def test_ld_shared_before_the_tma_lands_is_named():
    g, params, a, b = setup(128, 64)
    src = gemm_text(64).replace("{wait}", "")
    # read the A stage with ld.shared right after the prologue, before waiting on full[0]
    src = src.replace("    mov.u32 %r9, 0;                                   // kb: k-block being consumed",
                      "    ld.shared.u32 %r30, [smem+64];\n    mov.u32 %r9, 0;")
    with pytest.raises(ReadBeforeLand) as ei:
        run_kernel(kernel(src), Launch(block=128, params=params), g)
    assert ei.value.text.startswith("ld.shared") and ei.value.barrier == 2 * (8192 + 8192)


def test_tensor_maps_may_be_given_directly_as_params():
    from _gemm_kernel import tensor_map
    g, params, a, b = setup(128, 64)
    params = dict(params, tmA=tensor_map(g.address("A"), 64, 128), tmB=tensor_map(g.address("B"), 64, 128))
    run_kernel(kernel(gemm_text(64)), Launch(block=128, params=params), g)
    np.testing.assert_allclose(g.view("D", np.float32).reshape(64, 64), reference(a, b), rtol=1e-5, atol=2e-3)
