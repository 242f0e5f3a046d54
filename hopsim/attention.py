"""The attention tile's operands in the simulator's memory, its numpy reference and error bound.

    from kernels.attention import AttnParams, build_attention
    from hopsim.attention import setup_attention, read_output, reference, error_bound
    ak = build_attention(p)
    gmem, launch, q, k, v = setup_attention(p, ak, seed=0)
    # run ak.kernel: hopsim.functional.runner.run_kernel or hopsim.timing.runner.simulate
    o = read_output(gmem, p);  ok = np.abs(o - reference(q, k, v, p)) <= error_bound(q, k, v, p)

Q ((q_tiles*64) x d), K and V (seq x d) are f16 row-major; O is f32 (or f16 with out="f16"). Tensor
maps tma_q/tma_k/tma_v (boxes 64 columns x 64 / kv_block rows, 128B swizzle) as
kernels/attention/plan.py loads them, and tma_o (64 x 64 boxes) for the f16 output's TMA store.

The reference is float64 softmax(Q K^T scale) V of the exact f16 inputs. The bound (per element,
a bound from the documented error of each step, not a fit; derivation in `error_bound`):

    |O - ref| <= tau * sum_j P_ij |V_jc| + 2^-25 * sum_j |V_jc|

    tau = 2^-11                                  P rounded to f16 for the P V wgmma (unit roundoff)
        + 2 (KT + 1) (e_ex2 + e_arg)              each weight carries one ex2 and <= KT rescales
                                                  (alpha), in the numerator and in the row sum
        + (N/16 + 2 KT + kvb/4 + 8) 2^-23         f32 roundings: the O accumulation (one per
                                                  k16 wgmma step), the O *= alpha, the row sum's
                                                  adds/fma chain, rcp.approx and the final multiply
    e_ex2 = 2^-22                                 ex2.approx.f32: max relative error 2 ulp (PTX ISA,
                                                  ex2); the model computes 2^x exactly rounded
    e_arg = ln 2 * (c dS + 2^-22 * 6 A)           the exponent's error: c = scale log2 e, dS the
                                                  f32 error of a score (d 2^-23 sum_i |q_i k_i|, as
                                                  the GEMM tests bound an f32 wgmma sum), A = max
                                                  |c S_j| of the row (the roundings of c, m c and
                                                  the fma, each <= 2^-24 relative, on |x| <= 2A)

The 2^-25 term: a P below 2^-14 (f16 subnormal) is rounded with absolute error <= 2^-25, and its
final weight is that over l >= 1 (the row's maximum contributes exactly 1 to l). With out="f16" the
f32 O is rounded once more: + 2^-11 (|ref| + the bound above) + 2^-25.
"""

from __future__ import annotations

import math

import numpy as np

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from isa.tensormap import TensorMap
from kernels.attention import AttnKernel, AttnParams, build_attention
from kernels.attention.plan import SWIZZLE, W

U16 = 2.0 ** -11          # f16 unit roundoff (round to nearest)
E_EX2 = 2.0 ** -22        # ex2.approx.f32 max relative error, 2 ulp (PTX ISA, ex2)
U32 = 2.0 ** -23          # an f32 rounding, counted at twice the unit roundoff (truncating adders)


def tensor_maps(p: AttnParams, aq: int, ak: int, av: int) -> dict[str, TensorMap]:
    def tm(addr: int, rows: int, box_rows: int) -> TensorMap:
        return TensorMap(dtype="f16", global_dims=(p.head_dim, rows), global_strides_bytes=(p.head_dim * 2,),
                         box_dims=(W, box_rows), global_address=addr, swizzle=SWIZZLE, l2_promotion="256B")
    return {"tma_q": tm(aq, p.q_rows, 64), "tma_k": tm(ak, p.seq, p.kv_block), "tma_v": tm(av, p.seq, p.kv_block)}


def _out_type(p: AttnParams):
    return np.float16 if p.out == "f16" else np.float32


def random_inputs(p: AttnParams, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seeded standard-normal Q, K, V rounded to f16."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((p.q_rows, p.head_dim)).astype(np.float16)
    k = rng.standard_normal((p.seq, p.head_dim)).astype(np.float16)
    v = rng.standard_normal((p.seq, p.head_dim)).astype(np.float16)
    return q, k, v


def setup_attention(p: AttnParams, ak: AttnKernel | None = None, seed: int = 0, values: bool = True,
                    qkv: tuple | None = None):
    """(gmem, launch, q, k, v): Q, K, V (f16: random with `seed`, or `qkv`), O zeros (f32), the
    tensor maps; without `values` the buffers are only reserved (timing-only)."""
    ak = ak if ak is not None else build_attention(p)
    g = GlobalMemory()
    shapes = {"Q": (p.q_rows, p.head_dim), "K": (p.seq, p.head_dim), "V": (p.seq, p.head_dim)}
    if values:
        arrays = qkv if qkv is not None else random_inputs(p, seed)
        arrays = tuple(np.ascontiguousarray(a, dtype=np.float16) for a in arrays)
        for (name, shape), a in zip(shapes.items(), arrays):
            if a.shape != shape:
                raise ValueError(f"{name} has shape {a.shape}, the params need {shape}")
        addrs = [g.alloc(n, a) for n, a in zip(shapes, arrays)]
        ao = g.alloc("O", np.zeros((p.q_rows, p.head_dim), _out_type(p)))
    else:
        arrays = tuple(np.broadcast_to(np.float16(0), s) for s in shapes.values())
        addrs = [g.reserve(n, s[0] * s[1] * 2) for n, s in shapes.items()]
        ao = g.reserve("O", p.q_rows * p.head_dim * np.dtype(_out_type(p)).itemsize)
    tmaps = tensor_maps(p, *addrs)
    if p.out == "f16":
        tmaps["tma_o"] = TensorMap(dtype="f16", global_dims=(p.head_dim, p.q_rows),
                                   global_strides_bytes=(p.head_dim * 2,), box_dims=(W, 64), global_address=ao,
                                   swizzle=SWIZZLE)
    params = {name: g.register_tensor_map(name, t) for name, t in tmaps.items()}
    if p.out != "f16":
        params["O"] = ao
    launch = Launch(grid=ak.grid, block=ak.block, dynamic_smem=ak.dynamic_smem, params=params)
    return (g, launch) + arrays


def read_output(gmem: GlobalMemory, p: AttnParams) -> np.ndarray:
    """O as float32 (the f16 output's values exactly)."""
    return gmem.view("O", _out_type(p)).reshape(p.q_rows, p.head_dim).astype(np.float32)


def _weights(q, k, p: AttnParams) -> tuple[np.ndarray, np.ndarray]:
    """(P = softmax(Q K^T scale) in float64, S = Q K^T in float64)."""
    s = np.asarray(q, np.float64) @ np.asarray(k, np.float64).T
    x = s * p.softmax_scale
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True), s


def reference(q, k, v, p: AttnParams) -> np.ndarray:
    """float64 softmax(Q K^T * scale) V of the f16 values."""
    w, _ = _weights(q, k, p)
    return w @ np.asarray(v, np.float64)


def error_bound(q, k, v, p: AttnParams) -> np.ndarray:
    """Per-element bound on |O_kernel - reference| (module docstring)."""
    w, s = _weights(q, k, p)
    c = p.softmax_scale * math.log2(math.e)
    ds = p.head_dim * U32 * (np.abs(np.asarray(q, np.float64)) @ np.abs(np.asarray(k, np.float64)).T)
    a = np.abs(c * s).max(axis=1, keepdims=True)
    e_arg = math.log(2) * (c * ds.max(axis=1, keepdims=True) + 2.0 ** -22 * 6 * a)
    kt = p.n_blocks
    tau = U16 + 2 * (kt + 1) * (E_EX2 + e_arg) + (p.seq / 16 + 2 * kt + p.kv_block / 4 + 8) * U32
    av = np.abs(np.asarray(v, np.float64))
    bound = tau * (w @ av) + 2.0 ** -25 * av.sum(axis=0, keepdims=True)
    if p.out == "f16":
        bound = bound + U16 * (np.abs(w @ np.asarray(v, np.float64)) + bound) + 2.0 ** -25
    return bound
