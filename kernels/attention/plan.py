"""The compile-time plan of one attention tile: shared-memory layouts, TMA boxes, descriptors.

Shared memory of a CTA (byte offsets from sQ, the dynamic base rounded up to 1024 B):

    [Q: 64 x d][K stage 0..S-1: kv_block x d each][V stage 0..S-1: kv_block x d each]

Every tile is f16 with d contiguous in global memory, loaded by TMA in boxes of 64 columns
(one 128-byte swizzle span) with the 128B swizzle; in shared memory (isa.layout, bytes):

    Q (row, k)      (64,(64,d/64)):(128,(2,64*128))             K-major A of S = Q K^T
    K (key, k)      (kvb,(64,d/64)):(128,(2,kvb*128))           K-major B of S = Q K^T (B^T[n,k])
    V (key, col)    the same layout as K                        MN-major B of O = P V (trans-b 1):
                                                                the wgmma's K is the key, N the column

Descriptors (PTX ISA, matrix descriptor; the GEMM's tn A/B and nn B, kernels/gemm/plan.py):
K-major: LBO 16 (unused with swizzle), SBO = 8 rows x 128 B; MN-major V: LBO = between 64-column
chunks (kvb x 128 B), SBO = 8 key rows x 128 B. Every stage base is a multiple of 1024 B, so the
hardware swizzle of the absolute address equals that of the offset inside the tile.
"""

from __future__ import annotations

from dataclasses import dataclass

from isa.descriptor import MatrixDescriptor
from isa.layout import Layout
from isa.swizzle import parse_swizzle
from kernels.attention.params import ELEM_BYTES, STATIC_SMEM_BYTES, TILE_M, AttnParams

SWIZZLE = "128B"
SPAN = 128                      # bytes of one swizzle row = TMA box inner extent
W = SPAN // ELEM_BYTES          # 64 f16 columns per box
WGMMA_K = 16                    # k of one wgmma with f16 inputs


def tile_layout(rows: int, d: int) -> Layout:
    """(row, col) -> byte offset of a rows x d f16 tile stored as d/64 column chunks of 128-B rows."""
    return Layout((rows, (W, d // W)), (SPAN, (ELEM_BYTES, rows * SPAN)))


@dataclass(frozen=True)
class Box:
    """One TMA box: tensor map, destination offset in its tile, column origin (the row origin is
    the tile's: the Q tile's first row or the KV block's first key)."""

    tmap: str
    smem_offset: int
    col: int


class Plan:
    """The constants of one AttnParams (names used by the emitter)."""

    def __init__(self, p: AttnParams):
        self.p = p
        self.S, self.KT = p.stages, p.n_blocks          # ring depth, loop trip count (KV blocks)
        self.D, self.KVB = p.head_dim, p.kv_block
        self.q_smem = tile_layout(TILE_M, self.D)
        self.kv_smem = tile_layout(self.KVB, self.D)
        self.Q_BYTES, self.KV_BYTES = p.q_bytes, p.kv_tile_bytes
        self.TX = p.stage_bytes
        self.K_OFF = self.Q_BYTES                        # sK - sQ
        self.V_OFF = self.Q_BYTES + self.S * self.KV_BYTES
        self.pad = STATIC_SMEM_BYTES - 8 * (2 * self.S + 1)
        self.swizzle = parse_swizzle(SWIZZLE)
        self.S_REGS = self.KVB // 2                      # f32 accumulator of S = Q K^T (m64 n kvb)
        self.O_REGS = self.D // 2                        # f32 accumulator of O (m64 n d)
        self.P_REGS = self.KVB // 4                      # f16x2 A fragments: 4 per k16 step
        assert self.Q_BYTES % 1024 == 0 and self.KV_BYTES % 1024 == 0

    def desc_const(self, lbo: int, sbo: int) -> int:
        """Descriptor bits besides the start address (LBO, SBO, layout type)."""
        return MatrixDescriptor(0, lbo, sbo, swizzle=self.swizzle).encode()

    @property
    def q_desc(self) -> tuple[int, int]:
        return 16, 8 * self.q_smem.stride[0]

    @property
    def k_desc(self) -> tuple[int, int]:
        return 16, 8 * self.kv_smem.stride[0]

    @property
    def v_desc(self) -> tuple[int, int]:
        """MN-major: LBO = between 64-column chunks, SBO = 8 key rows."""
        return self.kv_smem.stride[1][1], 8 * self.kv_smem.stride[0]

    def q_step(self, kk: int) -> int:
        """Byte offset of Q (row 0, k = 16 kk): the start of k-step kk of S = Q K^T."""
        return self.q_smem(0, kk * WGMMA_K)

    def k_step(self, kk: int) -> int:
        return self.kv_smem(0, kk * WGMMA_K)

    def v_step(self, kk: int) -> int:
        """Byte offset of V (key 16 kk, column 0): the start of k-step kk of O = P V."""
        return self.kv_smem(kk * WGMMA_K, 0)

    def q_boxes(self) -> list[Box]:
        return [Box("tma_q", self.q_smem(0, c * W), c * W) for c in range(self.D // W)]

    def kv_boxes(self, tmap: str) -> list[Box]:
        return [Box(tmap, self.kv_smem(0, c * W), c * W) for c in range(self.D // W)]
