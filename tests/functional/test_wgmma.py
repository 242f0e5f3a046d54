"""Laws of the WGMMA math: the fragment layouts are bijections, the MMA equals numpy matmul."""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.functional import wgmma as W

NS = [8, 16, 24, 64, 128, 256]


@pytest.mark.parametrize("n", NS)
def test_accumulator_layout_is_a_bijection(n):
    rows, cols = W.accumulator_coords(n)
    idx = (rows * n + cols).ravel()
    assert sorted(idx.tolist()) == list(range(64 * n))


def test_accumulator_layout_golden_points():
    # CLayout_64xN = ((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512)) evaluated by hand (index m + 64*n)
    rows, cols = W.accumulator_coords(64)
    def cute(t, v):
        t0, t1, t2 = t % 4, (t // 4) % 8, t // 32
        v0, v1, v2 = v % 2, (v // 2) % 2, v // 4
        idx = 128 * t0 + 1 * t1 + 16 * t2 + 64 * v0 + 8 * v1 + 512 * v2
        return idx % 64, idx // 64
    for t in (0, 1, 5, 31, 32, 77, 127):
        for v in (0, 1, 2, 3, 4, 17, 31):
            assert (rows[t, v], cols[t, v]) == cute(t, v)


@pytest.mark.parametrize("n", NS)
def test_scatter_gather_roundtrip(n):
    m = np.arange(64 * n, dtype=np.float32).reshape(64, n)
    assert np.array_equal(W.gather(W.scatter(m)), m)


@pytest.mark.parametrize("n,dt", [(64, "f32"), (128, "f32"), (64, "f16"), (16, "f16")])
def test_register_pack_roundtrip(n, dt):
    rng = np.random.default_rng(0)
    d = rng.standard_normal((64, n)).astype(np.float32 if dt == "f32" else np.float16)
    bits = W.pack_accumulator(d, dt)
    assert bits.shape == (W.accum_regs(n, dt), 128)
    assert np.array_equal(W.unpack_accumulator(bits, n, dt), d)


def test_a_register_pack_roundtrip():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 16)).astype(np.float16)
    regs = W.pack_a_registers(a.view(np.uint16))
    assert regs.shape == (4, 128)
    assert np.array_equal(W.unpack_a_registers(regs, "f16"), a.astype(np.float32))


def _rand16(rng, shape, dtype):
    x = rng.standard_normal(shape).astype(np.float32)
    if dtype == "f16":
        return x.astype(np.float16).view(np.uint16)
    return W.f32_to_bf16_bits(x)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("n", [8, 64, 256])
def test_mma_f32_equals_numpy(dtype, n):
    rng = np.random.default_rng(n)
    a = W.to_f32(_rand16(rng, (64, 16), dtype), dtype)
    b = W.to_f32(_rand16(rng, (16, n), dtype), dtype)
    d = rng.standard_normal((64, n)).astype(np.float32)
    got = W.mma(a, b, d)
    ref = np.asarray(a, np.float64) @ np.asarray(b, np.float64) + d
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=2 ** -23, atol=1e-6)  # one f32 rounding
    # f32 numpy matmul agrees within f32 summation error of 16 terms
    np.testing.assert_allclose(got, a @ b + d, rtol=1e-5, atol=1e-5)


def test_mma_scales():
    rng = np.random.default_rng(2)
    a = W.to_f32(_rand16(rng, (64, 16), "f16"), "f16")
    b = W.to_f32(_rand16(rng, (16, 32), "f16"), "f16")
    d = rng.standard_normal((64, 32)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(W.mma(a, b, d, scale_d=False), ref.astype(np.float32))
    np.testing.assert_allclose(W.mma(a, b, d, scale_d=False, scale_a=-1), (-ref).astype(np.float32))
    np.testing.assert_allclose(W.mma(a, b, d, scale_d=False, scale_a=-1, scale_b=-1), ref.astype(np.float32))


def test_f16_accumulate_rounds_once_per_k16_chunk():
    """K=64 as 4 chained m64n64k16: after each chunk the accumulator is float16 (numpy rounding)."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((64, 64)).astype(np.float16)
    B = rng.standard_normal((64, 64)).astype(np.float16)
    d = None
    ref = np.zeros((64, 64), np.float16)
    for k in range(0, 64, 16):
        a, b = A[:, k:k + 16].astype(np.float32), B[k:k + 16].astype(np.float32)
        d = W.mma(a, b, d, dtype_d="f16", scale_d=k > 0)
        chunk = a.astype(np.float64) @ b.astype(np.float64)
        ref = (chunk + ref.astype(np.float64)).astype(np.float16)
        assert d.dtype == np.float16
        assert np.array_equal(d, ref)
    # and it differs from an f32 accumulation rounded once at the end (the rounding is real)
    assert not np.array_equal(d, (A.astype(np.float32) @ B.astype(np.float32)).astype(np.float16))


def test_bf16_conversion_rne():
    x = np.array([1.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -9, -2.5, 3.0e38], np.float32)
    bits = W.f32_to_bf16_bits(x)
    back = W.bf16_bits_to_f32(bits)
    assert back[0] == 1.0
    assert back[1] == 1.0  # tie -> even
    assert back[2] == 1.0 + 2 ** -7
    assert back[3] == -2.5
