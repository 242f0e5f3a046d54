"""Every CTA's translate-mode tile offsets from one traced partial run (hopsim/timing/tile_offsets.py).

Law: where the batch applies, it gives every CTA exactly the offsets of that CTA's own partial
zero-time run (`TilePlan._offsets`, what the plan used before); where %ctaid steers the run (a
branch, a shared-memory store, a global load) it does not apply (None) and the plan falls back to
each CTA's own run, with the same coordinates."""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.functional.executor import CTAExecutor
from hopsim.gemm_setup import setup_gemm
from hopsim.timing.tile_offsets import batch_offsets, trace_partial
from hopsim.timing.tile_plan import TilePlan, capture_tiles
from isa.ir.parser import parse
from isa.ir.printer import to_text
from kernels.gemm import build_gemm
from kernels.params import GemmParams


def _plan(p: GemmParams, edit=None):
    gk = build_gemm(p)
    kernel = gk.kernel
    if edit is not None:
        text = to_text(kernel, abbreviate=False)
        kernel = parse(edit(text))
    gmem, launch, _a, _b = setup_gemm(p, gk, values=False)
    plan = TilePlan.build(launch, lambda c: CTAExecutor(kernel, launch, gmem, c, values=False, checks=False))
    assert plan is not None and plan.mode == "translate"
    return plan, launch.num_ctas


def _own(plan: TilePlan, n: int) -> np.ndarray:
    """Each CTA's offsets from its own partial run."""
    groups = list(plan.first)
    dims = max(len(co) for co in plan.first.values())
    out = np.zeros((n, len(groups), dims), dtype=np.int64)
    for cta in range(1, n):
        for g, d in plan._offsets(cta).items():
            out[cta, groups.index(g), :len(d)] = d
    return out


@pytest.mark.parametrize("params", [
    dict(m=1536, n=512, k=256),                                        # row raster
    dict(m=1536, n=1024, k=256, raster="grouped"),                     # grouped, a smaller last group (selp)
    dict(m=1024, n=1024, k=256, raster="grouped", group_m=4, box_rows=8, stages=2),
    dict(m=1024, n=768, k=256, variant="ws", consumers=2, raster="grouped"),
    dict(m=1024, n=768, k=256, raster="grouped", tma_issuer="elect"),
])
def test_batch_equals_each_ctas_own_partial_run(params):
    plan, n = _plan(GemmParams(**params))
    dims = max(len(co) for co in plan.first.values())
    assert trace_partial(plan, capture_tiles).unsafe is None
    got = batch_offsets(plan, n, dims, capture_tiles)
    own = _own(plan, n)
    assert own.any()  # the CTAs do move
    assert got is not None and np.array_equal(got, own)
    _coords_are_the_tiles(plan, n)


def _coords_are_the_tiles(plan: TilePlan, n: int) -> None:
    """coords_array (batched or not) holds each CTA's tiles (plan.tiles: each CTA's own partial run)."""
    coords = plan.coords_array(n)
    for cta in range(n):
        flat = [co for row in plan.tiles(cta) for _h, co, _nb in row]
        assert [tuple(c[:len(f)]) for c, f in zip(coords[cta].tolist(), flat)] == flat


def _after_ctaid(extra: str):
    def edit(text: str) -> str:
        anchor = "mov.u32 %r5, %ctaid.x;\n"
        assert anchor in text
        return text.replace(anchor, anchor + extra, 1)
    return edit


@pytest.mark.parametrize("why,extra", [
    ("a guard depends on %ctaid", "    setp.lt.u32 %p6, %r5, 3;\n    @%p6 bra AROUND;\n    add.u32 %r30, %r5, 1;\nAROUND:\n"),
    ("%ctaid-derived values reach a st_shared", "    st.shared.u32 [static_pad], %r5;\n"),
    ("ld_global in the partial run", "    ld.global.u32 %r30, [C];\n"),
])
def test_ctaid_that_steers_the_run_falls_back_to_each_cta(why, extra):
    plan, n = _plan(GemmParams(m=1536, n=512, k=256), _after_ctaid(extra))
    assert why in (trace_partial(plan, capture_tiles).unsafe or "")
    dims = max(len(co) for co in plan.first.values())
    assert batch_offsets(plan, n, dims, capture_tiles) is None
    assert _own(plan, n).any()
    _coords_are_the_tiles(plan, n)  # the fallback: each CTA's own run
