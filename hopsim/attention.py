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

The reference and its error bound (derivation there): kernels/attention/reference.py.
"""

from __future__ import annotations

import numpy as np

from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from isa.tensormap import TensorMap
from kernels.attention import AttnKernel, AttnParams, build_attention
from kernels.attention.plan import SWIZZLE, W
from kernels.attention.reference import error_bound, reference



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


__all__ = ["error_bound", "read_output", "reference", "random_inputs", "setup_attention", "tensor_maps"]
