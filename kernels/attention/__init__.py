"""One attention tile in the hopsim IR (issue 15 item 3): the stepping stone to FlashAttention-3.

    from kernels.attention import AttnParams, build_attention
    ak = build_attention(AttnParams(seq=256, head_dim=64, kv_block=64))   # AttnKernel (cached)
    print(ak.text)

O = softmax(Q K^T * scale) V for one 64-row Q tile per CTA (one consumer warpgroup): Q, K, V
loaded by TMA (128B swizzle) into shared memory, S = Q K^T with wgmma (K-major descriptors), the
online softmax in registers (quad shuffles, ex2.approx with log2(e) folded into the scale), P
packed to f16x2 and fed to the second wgmma as A from registers, O = P V with V MN-major
(transposed descriptor), a K/V ring of `stages` stages with full/empty mbarriers, O / rowsum
stored as f32 by direct stores or (out="f16") as f16 through the swizzled Q tile and a TMA store. Its operands, launch and numpy reference live in hopsim/attention.py.

  params.py   the knobs (AttnParams) and what they need (shared memory, FLOPs)
  plan.py     shared-memory layouts (isa.layout), TMA boxes, descriptor fields
  softmax.py  the online softmax, the P packing and the final normalisation
  kernel.py   setup, TMA prologue, the KV loop (two wgmma chains), the epilogue

variant "ws" gives the TMA loads to a producer warp (a fifth warp); `overlap` runs the softmax of
block j during the P V wgmma of block j - 1 (FlashAttention-3's intra-warpgroup pipelining; in the
model it pays with >= 3 stages: with 2, the stage of block j - 1 is released one block later and the
TMA latency shows). Not FlashAttention-3 yet: no producer warpgroup with setmaxnreg, no ping-pong of
two consumer warpgroups (named barriers), separate K and V barriers, causal mask; one head (every
CTA reads the whole K and V).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from isa.errors import InputError
from isa.ir import Kernel, parse, to_text
from kernels.attention.kernel import KERNEL_NAME, build_kernel
from kernels.attention.params import AttnParams

#: registers per thread for occupancy: S (kvb/2) + O (d/2) + P (kvb/4) accumulators + ~40 of
#: addresses, statistics and temporaries, rounded up to 8 (an estimate; ptxas gives the CUDA twin kernels/cuda/attention.cu 92-154)
def estimate_regs(p: AttnParams) -> int:
    n = p.kv_block // 2 + p.head_dim // 2 + p.kv_block // 4 + 40
    return min(255, -(-n // 8) * 8)


@dataclass(frozen=True)
class AttnKernel:
    """The IR kernel of one AttnParams and how to launch it."""

    params: AttnParams
    kernel: Kernel
    text: str
    grid: tuple
    block: tuple
    dynamic_smem: int
    regs_per_thread: int


@functools.lru_cache(maxsize=64)
def build_attention(params: AttnParams) -> AttnKernel:
    """The IR kernel of `params` (cached); `kernel` is parsed back from `text` so that diagnostics
    point into the text."""
    if not isinstance(params, AttnParams):
        raise InputError("params", type(params).__name__, "a kernels.attention.AttnParams")
    text = to_text(build_kernel(params))
    kernel = parse(text, filename=f"{params.tag}.ptx")
    return AttnKernel(params=params, kernel=kernel, text=text, grid=(params.q_tiles, 1, 1),
                      block=(params.threads, 1, 1), dynamic_smem=params.dynamic_smem_bytes,
                      regs_per_thread=estimate_regs(params))


__all__ = ["AttnKernel", "AttnParams", "KERNEL_NAME", "build_attention", "estimate_regs"]
