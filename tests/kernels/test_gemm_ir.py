"""The IR GEMM family (kernels/gemm/): sim == numpy on the functional and the timed machine,
printer law and verifier on every covered configuration, timing-only cycles == full cycles.

Tolerance (a bound, not a fit). The operands are exact f16/bf16 values and the reference is their
float64 product, so the only errors are the kernel's roundings:
  * f32 accumulators: C = round_out(sum + d) with |d| <= K * 2^-23 * sum|a||b| (the classical
    gamma_K bound of an f32 sum, with the 2^-23 of a truncating adder rather than RNE's 2^-24)
    and round_out to f16 (unit roundoff 2^-11) or bf16 (2^-8): elementwise
    |C - ref| <= u_out * |ref| + 2 |d| + 2^-24 (the f16 subnormal spacing near 0).
  * f16 accumulators: every accumulation step rounds to f16; a random-walk model of K roundings
    of partial sums gives a relative (Frobenius) error u_out + 2^-11 * sqrt(K / 2), checked on the
    whole matrix (one element can be unlucky).
A missing tile, a wrong stage or swizzle gives O(1) errors, far above these bounds.

Covering set: every knob value at least once (see COVER; `test_cover_is_complete` checks it),
problems 256x256x256 and 128x384x192 where the tile divides; a stage count >= 5 needs more
k-tiles than stages to wrap, so that one runs K = 512.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from hopsim.gemm_setup import read_result, reference, setup_gemm
from isa.ir import parse, to_text, verify
from kernels.gemm import _magic, build_gemm, estimate_regs
from kernels.params import GemmParams

SQ = dict(m=256, n=256, k=256)
RECT = dict(m=128, n=384, k=192)

COVER = {
    "single_default": GemmParams(**SQ),
    "ws1_stmatrix": GemmParams(**SQ, variant="ws", epilogue="stmatrix"),
    "ws2_best": GemmParams(**SQ, bn=256, variant="ws", consumers=2, epilogue="stmatrix",
                           raster="grouped"),
    "nn_f16acc_box8": GemmParams(**SQ, layout="nn", accum="f16", box_rows=8, stages=3,
                                 epilogue="stmatrix"),
    "bf16_32B_box64_s2": GemmParams(**RECT, dtype="bf16", swizzle="32B", box_rows=64, stages=2),
    "ws1_nn_64B_s1_c1": GemmParams(**SQ, variant="ws", layout="nn", swizzle="64B", stages=1,
                                   ctas_per_sm=1),
    "single_64x64_s6": GemmParams(m=256, n=256, k=512, bm=64, bn=64, stages=6, swizzle="64B",
                                  box_rows=16, raster="grouped", group_m=2),
    "single_256x64_nn": GemmParams(**SQ, bm=256, bn=64, layout="nn", swizzle="32B", box_rows=32,
                                   epilogue="stmatrix", stages=2),
    "ws2_bf16_grouped_tail": GemmParams(m=384, n=256, k=256, bm=128, bn=64, variant="ws",
                                                consumers=2, dtype="bf16", raster="grouped",
                                                group_m=2, stages=3, box_rows=8),
    "ws2_rect_f16acc": GemmParams(**RECT, bm=128, bn=128, variant="ws", consumers=2, accum="f16",
                                   box_rows=64, stages=4, ctas_per_sm=1),
    "ws2_256_rows": GemmParams(**SQ, bm=256, bn=128, variant="ws", consumers=2, stages=2,
                               epilogue="stmatrix"),
    "single_elect_box8": GemmParams(**SQ, box_rows=8, tma_issuer="elect"),
    "ws1_elect_box64": GemmParams(**SQ, variant="ws", epilogue="stmatrix", box_rows=64, tma_issuer="elect"),
}

#: every covered configuration also runs on the timed machine with values (the same test, cost
#: ~0.3 s each): issue 4 asks for the functional tests to be re-run on the timed runner
TIMED = tuple(sorted(COVER))
#: timing-only cycles == full cycles on these
TIMING_ONLY = ("single_default", "ws2_best", "nn_f16acc_box8")


def check_product(c: np.ndarray, a, b, p: GemmParams) -> None:
    ref = reference(a, b, p)
    c = c.astype(np.float64)
    u_out = 2.0 ** -8 if p.dtype == "bf16" else 2.0 ** -11
    if p.accum == "f32":
        mag = np.abs(np.asarray(a, np.float64)) @ np.abs(np.asarray(b, np.float64).T if p.layout == "tn"
                                                         else np.asarray(b, np.float64))
        bound = u_out * np.abs(ref) + 2 * p.k * 2.0 ** -23 * mag + 2.0 ** -24
        bad = np.abs(c - ref) > bound
        assert not bad.any(), (f"{bad.sum()} elements off, first at {np.argwhere(bad)[0]}: "
                               f"{c[bad][0]} vs {ref[bad][0]}")
    else:
        err = np.linalg.norm(c - ref) / np.linalg.norm(ref)
        assert err <= u_out + 2.0 ** -11 * np.sqrt(p.k / 2), err


def test_cover_is_complete():
    want = {"variant": {"single", "ws"}, "consumers": {1, 2}, "layout": {"tn", "nn"},
            "dtype": {"f16", "bf16"}, "accum": {"f32", "f16"}, "bm": {64, 128, 256},
            "bn": {64, 128, 256}, "swizzle": {"32B", "64B", "128B"}, "box_rows": {8, 64, 128},
            "stages": {1, 2, 3, 4}, "epilogue": {"direct", "stmatrix"}, "raster": {"row", "grouped"},
            "ctas_per_sm": {"auto", 1}}
    for field, values in want.items():
        got = {getattr(p, field) for p in COVER.values()}
        assert values <= got, (field, values - got)
    assert any(p.stages >= 5 and p.k // p.bk > p.stages for p in COVER.values())
    assert any(p.variant == "ws" and p.consumers == 1 for p in COVER.values())
    assert any(p.raster == "grouped" and (p.m // p.bm) % p.group_m for p in COVER.values())


@pytest.mark.parametrize("name", sorted(COVER))
def test_printer_law_and_verifier(name):
    gk = build_gemm(COVER[name])
    assert parse(gk.text) == gk.kernel
    assert parse(to_text(gk.kernel)) == gk.kernel
    assert [d for d in verify(gk.kernel) if d.severity == "error"] == []
    p = COVER[name]
    assert gk.grid == (p.grid, 1, 1) and gk.block == (p.threads, 1, 1)
    assert gk.dynamic_smem == p.dynamic_smem_bytes
    # the static segment is the 1024 B ptxas reports; the data fits the dynamic one
    assert gk.kernel.static_smem_bytes == 1024
    epi = 2048 * 4 * p.num_consumer_warpgroups if p.epilogue == "stmatrix" else 0
    assert p.stages * p.stage_bytes + epi <= gk.dynamic_smem


def test_build_is_cached():
    p = COVER["single_default"]
    assert build_gemm(p) is build_gemm(GemmParams(**SQ))


def test_tma_boxes_and_wgmmas_per_stage():
    """The kernel issues boxes_per_stage TMA loads per k-tile and BK/16 * bm/64 wgmmas, as the .cu."""
    from isa.ir.instructions import CpAsyncBulkTensorLoad, WgmmaMmaAsync
    for p in COVER.values():
        body = build_gemm(p).kernel.body
        loads = sum(isinstance(x, CpAsyncBulkTensorLoad) for x in body)
        per_load_stage = 1 if p.variant == "ws" else 2  # single: prologue + refill copies
        assert loads == per_load_stage * p.boxes_per_stage
        wg = [x for x in body if isinstance(x, WgmmaMmaAsync)]
        assert len(wg) == p.bk // 16 * p.m64_per_consumer
        assert {x.shape_n for x in wg} == {p.bn}
        assert {x.imm_trans_b for x in wg} == {1 if p.layout == "nn" else 0}


@pytest.mark.parametrize("name", sorted(COVER))
def test_functional_equals_numpy(name):
    from hopsim.functional.runner import run_kernel
    p = COVER[name]
    gk = build_gemm(p)
    gmem, launch, a, b = setup_gemm(p, gk, seed=1)
    run_kernel(gk.kernel, launch, gmem)
    check_product(read_result(gmem, p), a, b, p)


@functools.lru_cache(maxsize=None)
def _timed(name: str, values: bool):
    from hopsim.config import load_gpu
    from hopsim.timing.runner import simulate
    p = COVER[name]
    gk = build_gemm(p)
    gmem, launch, a, b = setup_gemm(p, gk, seed=2, values=values)
    res = simulate(gk.kernel, launch, load_gpu(), values=values, gmem=gmem,
                   regs_per_thread=gk.regs_per_thread)
    return res, (read_result(gmem, p), a, b) if values else None


@pytest.mark.parametrize("name", TIMED)
def test_timed_equals_numpy(name):
    res, (c, a, b) = _timed(name, True)
    check_product(c, a, b, COVER[name])
    assert res.cycles > 0


@pytest.mark.parametrize("name", TIMING_ONLY)
def test_timing_only_cycles_equal_full(name):
    full, _ = _timed(name, True)
    fast, _ = _timed(name, False)
    assert fast.cycles == full.cycles
    assert fast.bytes_l2 == full.bytes_l2 and fast.bytes_hbm == full.bytes_hbm


def test_timing_only_allocates_zeros():
    p = COVER["single_default"]
    gmem, launch, a, b = setup_gemm(p, values=False)
    assert not a.any() and not b.any()
    assert gmem.buffer("A").nbytes == p.m * p.k * 2 and gmem.buffer("C").nbytes == p.m * p.n * 2
    assert launch.params.keys() == {"tma_a", "tma_b", "C"}


@pytest.mark.parametrize("d", [3, 5, 6, 7, 12, 24, 48, 96, 127])
def test_magic_division_is_floor_division(d):
    max_n = 1 << 16
    m, s = _magic(d, max_n)
    n = np.arange(max_n, dtype=np.uint64)
    assert np.array_equal((n * np.uint64(m)) >> np.uint64(32 + s), n // np.uint64(d))
    assert m < 1 << 32


def test_register_estimate_matches_ptxas_records():
    """estimate_regs equals `ptxas -v` of the .cu on the H100 for every recorded configuration."""
    import glob
    import json
    import os
    root = os.path.join(os.path.dirname(__file__), "..", "..", "validation", "records", "h100")
    seen = 0
    for f in glob.glob(os.path.join(root, "gemm*.json")):
        with open(f) as fh:
            d = json.load(fh)
        regs = (d.get("ptxas") or {}).get("registers")
        if not regs or "params" not in d:
            continue
        p = GemmParams.from_dict(d["params"])
        assert estimate_regs(p) == regs, (os.path.basename(f), estimate_regs(p), regs)
        seen += 1
    if seen == 0:
        pytest.skip("no H100 GEMM records with ptxas registers")


# 8 SMs and a 256 KB L2: several waves of a small grid, so the memo has CTAs to replay
MEMO_CASES = {
    "single": GemmParams(m=512, n=512, k=256),
    "ws2_grouped": GemmParams(m=512, n=1024, k=256, bn=256, variant="ws", consumers=2,
                              epilogue="stmatrix", raster="grouped", group_m=2),
    "nn_s3_c1_grouped": GemmParams(m=768, n=512, k=512, stages=3, layout="nn", box_rows=64,
                                   raster="grouped", group_m=4, ctas_per_sm=1),
}


@pytest.mark.parametrize("name", sorted(MEMO_CASES))
def test_memo_is_exact(name):
    """Fast mode (memo=True) gives the cycles, bytes and role times of memo=False (both timing
    only, partitioned memory) on multi-wave grids of the IR GEMM (one CTA per SM)."""
    from hopsim.config import load_gpu
    from hopsim.config.base import P
    from hopsim.timing.runner import simulate
    gpu = load_gpu("h100_sxm")
    small = gpu.model_copy(update={"spec": gpu.spec.with_values({
        "num_sms": P(8, "SMs", "test", "assumed: test"),
        "l2_bytes": P(262144, "bytes", "test", "assumed: test")})})
    p = MEMO_CASES[name]
    gk = build_gemm(p)
    out = []
    for memo in (False, True):
        gmem, launch, _, _ = setup_gemm(p, gk, values=False)
        out.append(simulate(gk.kernel, launch, small, values=False, gmem=gmem, memory="partitioned",
                            memo=memo, regs_per_thread=gk.regs_per_thread))
    full, fast = out
    assert fast.ctas_per_sm == 1 and fast.extra["memo_hits"] > 0
    assert (fast.cycles, fast.bytes_l2, fast.bytes_hbm) == (full.cycles, full.bytes_l2, full.bytes_hbm)
    assert fast.roles == full.roles


@pytest.mark.parametrize("name", ["bf16_32B_box64_s2", "ws1_nn_64B_s1_c1", "ws2_bf16_grouped_tail"])
def test_protocol_survives_adversarial_completion_order(name):
    """order="newest" lands each TMA box / wgmma group as late as the protocol allows: a stage
    refilled too early or read before it landed gives a ProtocolError or a wrong product."""
    from hopsim.functional.runner import run_kernel
    p = COVER[name]
    gk = build_gemm(p)
    gmem, launch, a, b = setup_gemm(p, gk, seed=3)
    run_kernel(gk.kernel, launch, gmem, order="newest")
    check_product(read_result(gmem, p), a, b, p)
