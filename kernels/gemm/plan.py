"""The compile-time plan of one GemmParams: tile constants, shared-memory layouts, TMA boxes.

Everything here is a number or a layout object the generator bakes into the IR (as the .cu's
macros); nothing emits instructions. Shared memory of a CTA (byte offsets from `sA`, the dynamic
base rounded up to 1024 B):

    [A stage 0..S-1][B stage 0..S-1][epilogue slabs: 2 KB per consumer warp (stmatrix only)]

A stage as TMA writes it (and wgmma reads it) is `swizzle o (stage base + smem layout)`, with the
hardware swizzle `Swizzle<b,4,3>` of the mode on the absolute address (isa/swizzle.py) and the
layouts (isa/layout.py, bytes; W = span/2 elements per swizzle row, SP = span bytes):

    A (row, k)             (BM,(W,BK/W)):(SP,(2,BM*SP))   K-major: k-chunk c of W at c*BM*SP
    B tn (n, k)            (BN,(W,BK/W)):(SP,(2,BN*SP))
    B nn (k, n)            (BK,(W,BN/W)):(SP,(2,BK*SP))   N-major: n-chunk j of W at j*BK*SP
    epilogue slab (r, c)   Swizzle<3,4,3> o (16,64):(128,2)   16 rows x 64 columns of C (f16/bf16)

Every stage base is a multiple of 1024 B (stage sizes are multiples of 1024), so the swizzle of
the absolute address equals the swizzle of the offset inside the stage.
"""

from __future__ import annotations

from dataclasses import dataclass

from isa.descriptor import MatrixDescriptor
from isa.layout import Layout
from isa.swizzle import Swizzle, parse_swizzle
from kernels.params import EPI_SLAB_BYTES, STATIC_SMEM_BYTES, GemmParams

#: the stmatrix epilogue slab of one warp: 16 rows x 64 columns of 2-byte C, 128-B rows with the
#: 128B swizzle (16-B chunk ch of row r at ch ^ (r % 8)), so that both the stmatrix writes (8 rows
#: x 16 B per matrix) and the row-wise 16-B reads are free of bank conflicts
EPI_SLAB = Layout((16, 64), (128, 2)).swizzled(Swizzle(3, 4, 3))


@dataclass(frozen=True)
class Box:
    """One TMA box of a stage: tensor map, destination offset in the operand's stage, and the
    box origin as (base value name, added constant) per tensor dimension (dim 0 innermost)."""

    tmap: str
    smem_offset: int
    coord0: tuple[str, int]
    coord1: tuple[str, int]


def k_major(rows: int, p: GemmParams) -> Layout:
    """(row, k) -> byte offset of a K-major stage of `rows` rows and bk columns."""
    sp, w = p.span_bytes, p.box_width
    return Layout((rows, (w, p.bk // w)), (sp, (2, rows * sp)))


def n_major(p: GemmParams) -> Layout:
    """(k, n) -> byte offset of the N-major B stage (layout nn): bk rows of bn columns."""
    sp, w = p.span_bytes, p.box_width
    return Layout((p.bk, (w, p.bn // w)), (sp, (2, p.bk * sp)))


class Plan:
    """The constants of one GemmParams (names as in kernels/cuda/gemm_sm90.cu)."""

    def __init__(self, p: GemmParams):
        self.p = p
        self.S, self.SP, self.W = p.stages, p.span_bytes, p.box_width
        self.BM, self.BN, self.BK = p.bm, p.bn, p.bk
        self.RA, self.RB = p.box_rows_a, p.box_rows_b
        self.NN = p.layout == "nn"
        self.WS = p.variant == "ws"
        self.NC = p.num_consumer_warpgroups
        self.MI = p.m64_per_consumer
        self.ACC = p.bn // 2 if p.accum == "f32" else p.bn // 4
        self.KT = p.k // p.bk
        self.TILES_M, self.TILES_N = p.m // p.bm, p.n // p.bn
        self.A_STAGE, self.B_STAGE = p.bm * p.bk * 2, p.bn * p.bk * 2
        self.TX = self.A_STAGE + self.B_STAGE
        self.EPI_OFF = self.S * self.TX
        self.pad = STATIC_SMEM_BYTES - 16 * self.S
        self.swizzle = parse_swizzle(p.swizzle)
        self.a_smem = k_major(p.bm, p)
        self.b_smem = n_major(p) if self.NN else k_major(p.bn, p)
        assert EPI_SLAB.layout.size * 2 == EPI_SLAB_BYTES

    # ---------------------------------------------------------------- wgmma descriptors
    def desc_const(self, lbo: int, sbo: int) -> int:
        """The descriptor bits besides the start address (LBO, SBO, layout type)."""
        return MatrixDescriptor(0, lbo, sbo, swizzle=self.swizzle).encode()

    @property
    def a_desc(self) -> tuple[int, int]:
        """(LBO, SBO) of A: K-major swizzled (LBO unused, 16), SBO = 8 rows."""
        return 16, 8 * self.a_smem.stride[0]

    @property
    def b_desc(self) -> tuple[int, int]:
        """(LBO, SBO) of B: tn as A; nn (MN-major) LBO = between n-chunks, SBO = 8 k rows."""
        if self.NN:
            return self.b_smem.stride[1][1], 8 * self.b_smem.stride[0]
        return 16, 8 * self.b_smem.stride[0]

    def a_offset(self, row: int, k: int) -> int:
        return self.a_smem(row, k)

    def b_offset(self, n: int, k: int) -> int:
        """Byte offset of B element (n, k) in its stage, whatever the layout."""
        return self.b_smem(k, n) if self.NN else self.b_smem(n, k)

    # ---------------------------------------------------------------- TMA boxes
    def boxes(self) -> list[list[Box]]:
        """The TMA boxes of one stage in the .cu's order, grouped by the outer loop (one box
        column per group: its coord0 is computed once). A: {k, row}; B tn: {k, n}; B nn: {n, k}."""
        W, out = self.W, []
        for c in range(self.BK // W):
            out.append([Box("tma_a", self.a_offset(i * self.RA, c * W), ("k0", c * W), ("tmBM", i * self.RA))
                        for i in range(self.BM // self.RA)])
        if not self.NN:
            for c in range(self.BK // W):
                out.append([Box("tma_b", self.b_offset(i * self.RB, c * W), ("k0", c * W),
                                ("tnBN", i * self.RB)) for i in range(self.BN // self.RB)])
        else:
            for j in range(self.BN // W):
                out.append([Box("tma_b", self.b_offset(j * W, i * self.RB), ("tnBN", j * W),
                                ("k0", i * self.RB)) for i in range(self.BK // self.RB)])
        return out
