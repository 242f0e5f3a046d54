"""The knobs of one attention tile launch (issue 15 item 3), validated; pure Python (isa.errors).

    O = softmax(Q K^T * scale) V     Q: (q_tiles * 64) x d,  K, V: seq x d,  f16 in, f32 out

One CTA per 64-row Q tile (one consumer warpgroup: the M of one wgmma); every CTA reads the whole
K and V (the tiles are independent: one attention head, q_tiles * 64 queries).

  seq        N, the keys/values: a positive multiple of kv_block (no tail masking)
  head_dim   d: 64 or 128 (one or two 128-byte swizzle columns of f16)
  kv_block   keys per loop step: 64 or 128 (the N of the S = Q K^T wgmma, the K of P V)
  stages     K/V shared-memory ring depth 1..4 (227 KB per CTA)
  q_tiles    CTAs (independent 64-row Q tiles), 1..1024
  scale      the softmax scale; None: 1/sqrt(d)
  out        "f32": O stored by st.global.v2.f32 from the accumulators; "f16": O rounded to f16
             (cvt.rn.f16x2.f32), staged in the (dead) Q tile with the 128B swizzle and written by
             a TMA store per 64 columns (FlashAttention-3's epilogue)
  overlap    FlashAttention-3's intra-warpgroup pipelining: the softmax of block j runs while the
             P V wgmma of block j - 1 is in flight (stages >= 2)
  variant    "single": the consumer warpgroup's warp 0 also issues the TMA loads (fills the ring,
             refills a stage after the four warps released it); "ws": a fifth warp (threads
             128..159) is the producer (FlashAttention-3's producer, one warp), the warpgroup
             only computes
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from isa.errors import InputError

TILE_M = 64                     # Q rows of one CTA: one warpgroup's wgmma M
HEAD_DIMS = (64, 128)
KV_BLOCKS = (64, 128)
MAX_STAGES = 4
VARIANTS = ("single", "ws")
MAX_Q_TILES = 1024
MAX_SCALE = 1e6                 # |score| <= d * 65504^2 < 5.5e11 (f16 inputs): 1e6 * 1.45 * 5.5e11 << f32 max
MAX_SEQ = 1 << 16               # keys (the simulation is per element; larger is not useful here)
SMEM_PER_CTA_MAX_BYTES = 227 * 1024   # sm90 opt-in dynamic + static shared memory per CTA
STATIC_SMEM_BYTES = 1024        # mbarriers in static smem (as the GEMM: dynamic base 1024-aligned)
ALIGN_SLACK_BYTES = 1024        # dynamic base rounded up to 1024 B (128B swizzle atoms)
ELEM_BYTES = 2                  # f16


def _need(ok: bool, field: str, value: object, allowed: str) -> None:
    if not ok:
        raise InputError(field, value, allowed)


def _int(field: str, v: object) -> int:
    _need(isinstance(v, numbers.Integral) and not isinstance(v, bool), field, v, "an integer")
    return int(v)


@dataclass(frozen=True)
class AttnParams:
    """One attention-tile launch; invalid combinations raise InputError (one line)."""

    seq: int = 256
    head_dim: int = 64
    kv_block: int = 64
    stages: int = 2
    q_tiles: int = 1
    scale: float | None = None
    variant: str = "single"
    out: str = "f32"
    overlap: bool = False

    def __post_init__(self) -> None:
        for f in ("seq", "head_dim", "kv_block", "stages", "q_tiles"):
            object.__setattr__(self, f, _int(f, getattr(self, f)))
        _need(self.head_dim in HEAD_DIMS, "head_dim", self.head_dim, "64 or 128")
        _need(self.kv_block in KV_BLOCKS, "kv_block", self.kv_block, "64 or 128")
        _need(0 < self.seq <= MAX_SEQ and self.seq % self.kv_block == 0, "seq", self.seq,
              f"a positive multiple of kv_block ({self.kv_block}), at most {MAX_SEQ} (no tail masking)")
        _need(1 <= self.q_tiles <= MAX_Q_TILES, "q_tiles", self.q_tiles, f"1..{MAX_Q_TILES}")
        _need(1 <= self.stages <= MAX_STAGES, "stages", self.stages, f"1..{MAX_STAGES}")
        _need(isinstance(self.overlap, bool), "overlap", self.overlap, "True or False")
        _need(not (self.overlap and self.stages < 2), "stages", self.stages,
              ">= 2 with overlap (the stage of block j - 1 is released after block j's S = Q K^T)")
        _need(self.out in ("f32", "f16"), "out", self.out, "f32 or f16 (the output O)")
        _need(self.variant in VARIANTS, "variant", self.variant, "single or ws (a producer warp)")
        if self.scale is not None:
            ok = isinstance(self.scale, numbers.Real) and not isinstance(self.scale, bool) \
                and math.isfinite(self.scale) and 0 < self.scale <= MAX_SCALE
            _need(ok, "scale", self.scale, f"a number in (0, {MAX_SCALE:g}] (default 1/sqrt(head_dim); a larger "
                  "one can overflow scale * log2(e) * score in f32 and make the softmax NaN)")
            object.__setattr__(self, "scale", float(self.scale))
        need = self.smem_footprint_bytes
        _need(need <= SMEM_PER_CTA_MAX_BYTES, "stages", self.stages,
              f"<= {self.max_stages_that_fit} for d={self.head_dim}, kv_block={self.kv_block}: "
              f"{self.stages} stages need {need} B of shared memory per CTA, more than "
              f"{SMEM_PER_CTA_MAX_BYTES} B (227 KB)")

    # ------------------------------------------------------------------ derived
    @property
    def softmax_scale(self) -> float:
        return self.scale if self.scale is not None else 1.0 / math.sqrt(self.head_dim)

    @property
    def n_blocks(self) -> int:
        return self.seq // self.kv_block

    @property
    def q_rows(self) -> int:
        return self.q_tiles * TILE_M

    @property
    def q_bytes(self) -> int:
        return TILE_M * self.head_dim * ELEM_BYTES

    @property
    def kv_tile_bytes(self) -> int:
        """Bytes of one K (or V) block: kv_block x d f16."""
        return self.kv_block * self.head_dim * ELEM_BYTES

    @property
    def stage_bytes(self) -> int:
        """One ring stage (K block + V block) = the tx-count of its full barrier."""
        return 2 * self.kv_tile_bytes

    def _footprint(self, stages: int) -> int:
        return self.q_bytes + stages * self.stage_bytes + ALIGN_SLACK_BYTES + STATIC_SMEM_BYTES

    @property
    def smem_footprint_bytes(self) -> int:
        return self._footprint(self.stages)

    @property
    def max_stages_that_fit(self) -> int:
        return max([s for s in range(1, MAX_STAGES + 1) if self._footprint(s) <= SMEM_PER_CTA_MAX_BYTES] or [0])

    @property
    def dynamic_smem_bytes(self) -> int:
        return self.smem_footprint_bytes - STATIC_SMEM_BYTES

    @property
    def threads(self) -> int:
        """One consumer warpgroup, plus the producer warp in ws."""
        return 128 + (32 if self.variant == "ws" else 0)

    @property
    def flops(self) -> int:
        """Tensor FLOPs: 2 m N d for S = Q K^T and as many for O = P V."""
        return 4 * self.q_rows * self.seq * self.head_dim

    @property
    def tag(self) -> str:
        s = "" if self.scale is None else f"_sc{self.scale:g}"
        v = ("_ws" if self.variant == "ws" else "") + ("_o16" if self.out == "f16" else "") \
            + ("_ov" if self.overlap else "")
        return f"attn_n{self.seq}_d{self.head_dim}_kv{self.kv_block}_s{self.stages}_t{self.q_tiles}{v}{s}"
