"""The TMA copy family in the IR (issue 15 item 3): out = in for a row-major R x C tensor of f16 or
f32, tile by tile through shared memory, by the TMA unit both ways.

    build_tmacopy(TmaCopyParams(rows=..., cols=..., dtype="f16", box_rows=64, box_cols=64,
                                swizzle="128B", stages=4, ctas=None)) -> (Kernel, grid, block)
    tensor_maps(p, in_addr, out_addr) -> (TensorMap in, TensorMap out)

The CUDA twin is kernels/cuda/tmacopy.cu (GPU side: validation/portfolio_tmacopy.py). One warp
(32 threads) per CTA; lane 0 issues every TMA; all lanes wait on the mbarriers and run the
(warp-uniform) loop. Tiles are box_rows x box_cols boxes, numbered row-major over the tile grid
(tile t: tile row t / tiles_c, tile column t % tiles_c; box coordinates {tc*box_cols, tr*box_rows},
innermost first). A CTA copies tiles b, b + G, ... (< tiles), b = ctaid.y * nctaid.x + ctaid.x,
G = nctaid.x * nctaid.y: with `ctas` None the grid is (tiles_c, tiles_r), one CTA per tile (CTA
(x, y) copies tile row y, column x; x-fastest rasterisation is the linear tile order), else
(`ctas`, 1) persistent CTAs walk the tiles. The 2-D grid keeps each CTA's box coordinates affine
in %ctaid, which the simulator's CTA memo uses to predict every CTA's tiles without running it.

Per CTA, S = stages shared-memory stages (each a box, 1024-B aligned) with one mbarrier each:

    prologue:  loads j = 0 .. S-1 (tile ctaid + j*nctaid, where < tiles): arrive.expect_tx(box bytes)
               + cp.async.bulk.tensor load into stage j, complete_tx on full[j]
    tile k:    wait full[k % S] at parity (k / S) & 1;  fence.proxy.async.shared::cta;
               TMA store of stage k % S (bulk_group);
               commit_group;  refill: load j = k + D into stage j % S when that tile exists and
               k >= L, after cp.async.bulk.wait_group.read L (the store that read stage j % S
               has finished reading it);  L = 1, D = S - 1 for S >= 2 (one store in flight while
               S - 1 loads are);  L = 0, D = 1 for S = 1
    end:       cp.async.bulk.wait_group 0 (every store done before the CTA exits)

Proxies [PTX ISA, memory consistency model: proxies; cp.async.bulk.tensor]: the generic
mbarrier.init is published to the async proxy by fence.mbarrier_init; before each TMA store every
thread issues fence.proxy.async.shared::cta, as CUTLASS's tma_store_fence() does before a TMA store
of shared data: the mbarrier wait makes the loaded box visible to the waiting threads, and the PTX
text does not say that this also orders it for a later async-proxy read, so the twins take the
fence (one per tile) rather than rely on it. The refill after wait_group.read needs none (the
store's read and the next load's write are both async-proxy accesses ordered by the wait). Shared memory: full[S] (static, padded to 1024 B by the
alignment of the stages, as ptxas pads the .cu's static segment before its __align__(1024)
dynamic array), then S stages of the box's shared footprint.

TMA rules (isa/tensormap.py, the driver's cuTensorMapEncodeTiled): box dims 1..256, inner box
bytes a multiple of 16 and <= the swizzle span when swizzled. This family also asks rows and cols
to be multiples of the box (no partial tile), which makes the row pitch (cols x element bytes) a
multiple of 16 as globalStrides requires.
Imports only isa and kernels (the kernels layer).
"""

from __future__ import annotations

from dataclasses import dataclass

from isa.errors import InputError
from isa.ir import parse
from isa.swizzle import SwizzleMode, parse_swizzle
from isa.tensormap import TensorMap

DTYPES = {"f16": 2, "f32": 4}
THREADS = 32
MAX_STAGES = 8
MAX_CTAS = 1 << 24
"""Most persistent CTAs (keeps t + (stages - 1) x CTAs below 2^31 in the kernel's 32-bit arithmetic)."""
MAX_GRID_Y = 65535
"""gridDim.y limit (CUDA C Programming Guide, compute capability 9.0 table)."""
MAX_BYTES = 1 << 32
"""Largest tensor (4 GiB; the portfolio's largest is 1 GiB)."""
SMEM_PER_CTA = 232448
"""Shared memory one CTA may use on the H100 (227 KB; CUDA C Programming Guide, compute capability
9.0 table: maximum shared memory per thread block)."""
STATIC_BYTES = 1024
"""The static segment (mbarriers) padded to the stages' 1024-B alignment."""
REGS_PER_THREAD = 32
"""Registers per thread for occupancy: an upper bound (ptxas reports 10 for kernels/cuda/tmacopy.cu,
nvcc 13.0, sm_90a); any value up to 64 gives the same occupancy, which shared memory and the 32-CTA
limit set for this one-warp CTA."""


@dataclass(frozen=True)
class TmaCopyParams:
    """One TMA copy launch: tensor rows x cols of dtype, box, swizzle, stages, CTAs (None: one
    CTA per tile, else persistent CTAs walking the tiles)."""

    rows: int = 8192
    cols: int = 8192
    dtype: str = "f16"
    box_rows: int = 64
    box_cols: int = 64
    swizzle: str = "128B"
    stages: int = 4
    ctas: int | None = None

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise InputError("dtype", self.dtype, "f16 or f32")
        object.__setattr__(self, "swizzle", parse_swizzle(self.swizzle).label)
        for k in ("rows", "cols", "box_rows", "box_cols", "stages"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(k, v, "a positive integer")
        self._check_box()
        if self.rows % self.box_rows or self.cols % self.box_cols:
            raise InputError("rows x cols", f"{self.rows}x{self.cols}",
                             f"multiples of the box {self.box_rows}x{self.box_cols} (no partial tiles)")
        if self.rows * self.cols * self.esize > MAX_BYTES:
            raise InputError("rows x cols", f"{self.rows}x{self.cols}", f"at most {MAX_BYTES} bytes of {self.dtype}")
        if not 1 <= self.stages <= MAX_STAGES:
            raise InputError("stages", self.stages, f"1..{MAX_STAGES}")
        if self.smem_bytes > SMEM_PER_CTA:
            raise InputError("stages", self.stages, f"at most {(SMEM_PER_CTA - STATIC_BYTES) // self.stage_bytes} "
                             f"stages of {self.stage_bytes} B (227 KB of shared memory per CTA)")
        if self.ctas is not None and (isinstance(self.ctas, bool) or not isinstance(self.ctas, int)
                                      or not 1 <= self.ctas <= MAX_CTAS):
            raise InputError("ctas", self.ctas, f"1..{MAX_CTAS} persistent CTAs (omit: one CTA per tile)")
        if self.ctas is None and self.tiles_r > MAX_GRID_Y:
            raise InputError("rows", self.rows, f"at most {MAX_GRID_Y} tile rows (rows / box_rows, gridDim.y) "
                             "with one CTA per tile; give --ctas for persistent CTAs")

    def _check_box(self) -> None:
        """The box rules of cuTensorMapEncodeTiled (isa/tensormap.py), named by this family's flags."""
        for k in ("box_rows", "box_cols"):
            if not 1 <= getattr(self, k) <= 256:
                raise InputError(k, getattr(self, k), "1..256 (rule: boxDim)")
        inner = self.box_cols * self.esize
        if inner % 16:
            raise InputError("box_cols", self.box_cols, f"box_cols x {self.esize} B a multiple of 16 B; it is "
                             f"{inner} B (rule: inner box bytes)")
        sw = parse_swizzle(self.swizzle)
        if sw is not SwizzleMode.NONE and inner > sw.span_bytes:
            raise InputError("box_cols", self.box_cols, f"box_cols x {self.esize} B <= the {sw.label} swizzle span "
                             f"({sw.span_bytes} B: at most {sw.span_bytes // self.esize} {self.dtype} columns); "
                             f"it is {inner} B (rule: inner box bytes <= swizzle span)")

    @property
    def esize(self) -> int:
        return DTYPES[self.dtype]

    @property
    def tiles_r(self) -> int:
        return self.rows // self.box_rows

    @property
    def tiles_c(self) -> int:
        return self.cols // self.box_cols

    @property
    def tiles(self) -> int:
        return self.tiles_r * self.tiles_c

    @property
    def box_bytes(self) -> int:
        """Bytes one box moves (the load's tx-count)."""
        return self.box_rows * self.box_cols * self.esize

    @property
    def stage_bytes(self) -> int:
        """Shared bytes of one stage: the box footprint (rows x pitch, pitch >= the swizzle span),
        rounded up to 1024 B so every stage starts a 128B-swizzle atom."""
        return -(-self.tensor_map(0).smem_footprint // 1024) * 1024

    @property
    def smem_bytes(self) -> int:
        return STATIC_BYTES + self.stages * self.stage_bytes

    @property
    def grid(self) -> tuple[int, int, int]:
        """(x, y, z) CTAs: (tiles_c, tiles_r, 1) one per tile, or (ctas, 1, 1) persistent."""
        return (self.tiles_c, self.tiles_r, 1) if self.ctas is None else (self.ctas, 1, 1)

    @property
    def num_ctas(self) -> int:
        return self.tiles if self.ctas is None else self.ctas

    @property
    def bytes_moved(self) -> int:
        """Bytes the kernel must read and write (the roofline numerator): 2 x the tensor."""
        return 2 * self.rows * self.cols * self.esize

    @property
    def name(self) -> str:
        mode = "1t" if self.ctas is None else f"p{self.ctas}"
        return f"tmacopy_{self.dtype}_b{self.box_rows}x{self.box_cols}_sw{self.swizzle}_s{self.stages}_{mode}"

    def tensor_map(self, address: int) -> TensorMap:
        """The tensor map of a row-major rows x cols buffer at `address` with this box and swizzle."""
        return TensorMap(dtype=self.dtype, global_dims=(self.cols, self.rows),
                         global_strides_bytes=(self.cols * self.esize,), box_dims=(self.box_cols, self.box_rows),
                         global_address=address, swizzle=self.swizzle, l2_promotion="256B")


def tensor_maps(p: TmaCopyParams, in_addr: int, out_addr: int) -> tuple[TensorMap, TensorMap]:
    """(input map, output map): the same box and swizzle on both (the twin encodes the same)."""
    return p.tensor_map(in_addr), p.tensor_map(out_addr)


def div_magic(d: int, max_n: int) -> tuple[int, int]:
    """(m, s) with n // d == (n * m) >> (32 + s) for every 0 <= n < max_n, m < 2^32 (d >= 2).

    With m = ceil(2^(32+s) / d) and e = m d - 2^(32+s) (0 <= e < d): n m / 2^(32+s) = n/d + n e /
    (d 2^(32+s)), which keeps floor(n/d) iff n e < 2^(32+s); checked for the largest n."""
    for s in range(32):
        m = -(-(1 << (32 + s)) // d)
        if m >= 1 << 32:
            break
        if (max_n - 1) * (m * d - (1 << (32 + s))) < 1 << (32 + s):
            return m, s
    raise InputError("tiles_c", d, f"a divisor with a 32-bit magic number for n < {max_n}")  # pragma: no cover


def _coords(p: TmaCopyParams, t: str, out: str) -> list[str]:
    """IR: %{out}0 = (t % tiles_c) * box_cols, %{out}1 = (t / tiles_c) * box_rows."""
    d = p.tiles_c
    r, c = f"%{out}1", f"%{out}0"
    if d == 1:
        lines = [f"    mov.u32 {r}, {t};"]
    elif d & (d - 1) == 0:
        lines = [f"    shr.u32 {r}, {t}, {d.bit_length() - 1};"]
    else:
        m, s = div_magic(d, p.tiles)
        lines = [f"    mul.hi.u32 {r}, {t}, {m};"] + ([f"    shr.u32 {r}, {r}, {s};"] if s else [])
    lines += [f"    mul.lo.u32 {c}, {r}, {d};", f"    sub.u32 {c}, {t}, {c};",
              f"    mul.lo.u32 {c}, {c}, {p.box_cols};", f"    mul.lo.u32 {r}, {r}, {p.box_rows};"]
    return lines


def _load(p: TmaCopyParams, t: str, stage: str) -> list[str]:
    """IR: lane 0 arms full[stage] with the box bytes and loads tile `t` into the stage."""
    return _coords(p, t, "ld") + [
        f"    mad.lo.u32 %r20, {stage}, {p.stage_bytes}, %r10;",
        f"    mad.lo.u32 %r21, {stage}, 8, %r11;",
        f"@%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r21], {p.box_bytes};",
        "@%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
        "[%r20], [tmap_in, {%ld0, %ld1}], [%r21];"]


def _prologue(p: TmaCopyParams) -> list[str]:
    """Loads j = 0 .. S-1 where the tile exists (warp-uniform branches)."""
    out = []
    for j in range(p.stages):
        out += [f"    mad.lo.u32 %r13, %r2, {j}, %r1;", "    setp.ge.u32 %p2, %r13, %r3;", f"@%p2 bra PRO_END;",
                f"    mov.u32 %r14, {j};", *_load(p, "%r13", "%r14")]
    return out + ["PRO_END:"]


def kernel_text(p: TmaCopyParams) -> str:
    """The IR of `p` (docs/ir.md). Registers: r1 tile t_k, r2 CTAs in the grid, r3 tiles, r4 stage k % S,
    r5 parity, r6 k, r7 the stage of tile k-1 (the refill stage), r10 stages base, r11 full."""
    S = p.stages
    lag, dist = (1, S - 1) if S >= 2 else (0, 1)
    bars = "\n".join(f"@%p0 mbarrier.init.shared::cta.b64 [full+{8 * s}], 1;" for s in range(S))
    refill_stage = "%r7" if lag else "%r4"
    loop = [
        "LOOP:",
        "    mad.lo.u32 %r21, %r4, 8, %r11;",
        "WAIT:",
        "    mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r21], %r5;",
        "@!%p3 bra WAIT;",
        "    fence.proxy.async.shared::cta;",
        *_coords(p, "%r1", "st"),
        f"    mad.lo.u32 %r20, %r4, {p.stage_bytes}, %r10;",
        "@%p0 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [tmap_out, {%st0, %st1}], [%r20];",
        "    cp.async.bulk.commit_group;",
        f"    mad.lo.u32 %r15, %r2, {dist}, %r1;",
        "    setp.ge.u32 %p4, %r15, %r3;",
        "@%p4 bra NEXT;",
    ]
    if lag:
        loop += ["    setp.eq.u32 %p5, %r6, 0;", "@%p5 bra NEXT;"]
    loop += [f"    cp.async.bulk.wait_group.read {lag};", *_load(p, "%r15", refill_stage),
             "NEXT:",
             "    mov.u32 %r7, %r4;",
             "    add.u32 %r4, %r4, 1;",
             f"    setp.eq.u32 %p6, %r4, {S};",
             "@%p6 mov.u32 %r4, 0;",
             "@%p6 xor.b32 %r5, %r5, 1;",
             "    add.u32 %r6, %r6, 1;",
             "    add.u32 %r1, %r1, %r2;",
             "    setp.lt.u32 %p7, %r1, %r3;",
             "@%p7 bra LOOP;",
             "    cp.async.bulk.wait_group 0;",
             "DONE:",
             "    exit;"]
    head = f"""
.kernel {p.name}
.param .tmap tmap_in, tmap_out
.param .u32 tiles
.shared .align 8 .b64 full[{S}]
.shared .align 1024 .b8 smem[{S * p.stage_bytes}]
.reg .u32 %r<24>
.reg .u32 %ld<2>
.reg .u32 %st<2>
.reg .pred %p<8>
    mov.u32 %r0, %tid.x;
    setp.eq.u32 %p0, %r0, 0;
{bars}
@%p0 fence.mbarrier_init.release.cluster;
    bar.sync 0;
    mov.u32 %r1, %ctaid.y;
    mov.u32 %r8, %nctaid.x;
    mov.u32 %r9, %ctaid.x;
    mad.lo.u32 %r1, %r1, %r8, %r9;
    mov.u32 %r9, %nctaid.y;
    mul.lo.u32 %r2, %r8, %r9;
    ld.param.u32 %r3, [tiles];
    mov.u32 %r10, smem;
    mov.u32 %r11, full;
    mov.u32 %r4, 0;
    mov.u32 %r5, 0;
    mov.u32 %r6, 0;
    mov.u32 %r7, 0;
    setp.ge.u32 %p1, %r1, %r3;
@%p1 bra DONE;
"""
    return head + "\n".join(_prologue(p) + loop) + "\n"


def build_tmacopy(p: TmaCopyParams):
    """(Kernel, grid, block) of `p`."""
    return parse(kernel_text(p)), p.grid, THREADS
