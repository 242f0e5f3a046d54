"""The TMA + WGMMA GEMM family in the hopsim IR: the same kernel as `kernels/cuda/gemm_sm90.cu`.

    from kernels.params import GemmParams
    from kernels.gemm import build_gemm
    gk = build_gemm(GemmParams(m=256, n=256, k=256))        # GemmKernel (cached per params)

Its operands, global memory and launch (`setup_gemm`, `read_result`, `reference`) live in
hopsim/gemm_setup.py: they build the simulator's GlobalMemory, and kernels/ imports nothing of
the simulator.

`build_gemm(params)` generates IR text that mirrors the CUDA kernel line by line (the problem
size, tile, stages, ... are compile-time constants there as they are macros in the .cu):

  shared memory   static: full_bar[S], empty_bar[S] (.b64 mbarriers) padded to the 1024 B that
                  ptxas reports for the .cu (its dynamic array is __align__(1024)); dynamic:
                  base = (end of static + 1023) & ~1023, then
                  [A stage 0..S-1: BM x 64][B stage 0..S-1: BN x 64][epilogue slabs 2 KB/warp]
                  K-major stage: column chunk c (W = span/2 elements) at c*ROWS*SP, row r at r*SP;
                  N-major B (nn): N chunk j at j*64*SP, K row k at k*SP.
  TMA             boxes W x box_rows_a / box_rows_b, in the .cu's order and coordinates
                  (A: {kt*64 + c*W, tm*BM + i*RA}; B tn: {kt*64 + c*W, tn*BN + i*RB};
                  B nn: {tn*BN + j*W, kt*64 + i*RB}); one arrive.expect_tx(stage bytes) each.
  mbarriers       full[s] count 1 (arrive.expect_tx), empty[s] count 4*NC (lane 0 of every
                  consumer warp arrives).
  single          warp 0 (lane 0 predicated) issues the prologue stages; per k-tile: wait
                  full[s], fence, BK/16 x MI wgmma m64n{BN}k16, commit, wait_group 1 (0 when
                  S = 1); lane 0 of each warp arrives on empty[rel % S] (rel = kt-1, or kt when
                  S = 1) and warp 0 waits for it and refills that stage with k-tile rel + S.
  ws              warpgroup 0: setmaxnreg.dec 40, warp 0 waits empty[s] (parity starts at 1)
                  and loads every k-tile; consumers: setmaxnreg.inc 240 (1 consumer) / 232 (2),
                  the mainloop of `single` on rows (cw*MI + mi)*64, arrive on empty[(kt-1) % S]
                  after wait_group 1.
  descriptors     K-major: start | LBO 16 | SBO 8*SP | layout (1 = 128B, 2 = 64B, 3 = 32B) << 62;
                  nn B (MN-major, trans-b = 1): LBO 64*SP, SBO 8*SP, start + kk*16*SP.
  epilogue        direct: cvt.rn.{f16,bf16}x2.f32 (or the f16x2 accumulator itself) and one
                  4-byte st.global per pair; stmatrix: 4 x stmatrix.x4 per 64 columns into the
                  warp's 16 x 128 B slab (16-B chunk ch of row r at ch ^ (r % 8)), then 4 x
                  (ld.shared.v4 + st.global.v4) per lane.
  raster          row: tm = id / TILES_N, tn = id % TILES_N; grouped: group_m M-tiles walk N.

Where the IR differs from the CUDA kernel (it cannot express, or the difference is ptxas'):
  * Branches are warp-uniform in hopsim. The .cu's `if (threadIdx.x == 0)` (barrier init; the
    ws producer loop) becomes the same code run by the whole warp with the lanes predicated
    (`@%p` on the mbarrier/TMA instructions): the warp issues the same instructions, lanes 1-31
    are masked instead of parked at the reconvergence point.
  * `prefetch.tensormap`, `__syncwarp()` (stmatrix epilogue) and the compiler-only
    `fence_operand` have no IR instruction and are left out; a hopsim warp runs in lockstep, so
    the __syncwarp ordering holds anyway.
  * Division by a constant (kt / S, kt % S, CTA rasterisation) is the mul.hi + shr sequence
    ptxas emits (shr/and for powers of two). The grouped raster's division by the run-time group
    size (the last group can be smaller) is two constant divisions + selp instead of ptxas'
    generic integer-division sequence (a few ALU instructions once per CTA).
  * scale-d is the immediate 1 (the .cu passes a predicate set from the constant 1; accumulators
    are zeroed with mov first in both). The C++ loops marked `#pragma unroll` are unrolled here
    too; the k-tile loops stay loops. Register allocation is not modelled: the IR names its
    values itself; `regs_per_thread` (for occupancy) is what ptxas reported for the .cu
    (see `estimate_regs`), not a count of the IR's registers.
  * bf16 results: numpy has no bf16, so hopsim/gemm_setup.py gives bf16 data as float32
    arrays holding exactly the bf16 values (global memory holds the bf16 bit patterns).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from isa.errors import InputError
from isa.ir import parse
from isa.tensormap import TensorMap
from kernels.params import STATIC_SMEM_BYTES, GemmParams

KERNEL_NAME = "gemm_sm90"
LAYOUT_TYPE = {128: 1, 64: 2, 32: 3}  # wgmma descriptor bits 63..62 per swizzle span (bytes)


@dataclass(frozen=True)
class GemmKernel:
    """The IR kernel of one GemmParams and how to launch it."""

    params: GemmParams
    kernel: object            # isa.ir Kernel (parse(text) == kernel)
    text: str                 # IR text
    grid: tuple
    block: tuple
    dynamic_smem: int
    regs_per_thread: int


# --------------------------------------------------------------------------- register estimate
def estimate_regs(p: GemmParams) -> int:
    """Registers per thread ptxas gives the .cu (for occupancy), from `ptxas -v` of the H100 runs
    in validation/records/h100 (`ptxas.registers`):

      ws, 2 consumers   168  = __launch_bounds__(384, 1) cap, 65536/384 rounded down to 8
      ws, 1 consumer    240  = the consumers' setmaxnreg.inc value
      single            154  with 128 accumulator registers (f32 128x128 and 256x64)
                         96  with 64 (f16 accumulators, 128x128)
    Single-warpgroup tiles with fewer accumulators (64x64, 128x64, ...) are not measured; they
    get 96 like the 64-register one (an estimate: ptxas keeps ~32 registers of addresses and
    indices besides the accumulators, and the epilogue temporaries)."""
    if p.variant == "ws":
        return 168 if p.num_consumer_warpgroups == 2 else 240
    return 154 if p.acc_regs >= 128 else 96


# --------------------------------------------------------------------------- small helpers
def _magic(d: int, max_n: int) -> tuple[int, int]:
    """(m, s) with n // d == (n * m) >> (32 + s) for 0 <= n < max_n (d not a power of two):
    the unsigned division by a constant that ptxas emits (mul.hi.u32 then shr.u32)."""
    for s in range(0, 32):
        m = -(-(1 << (32 + s)) // d)
        if m >= 1 << 32:
            break
        n = np.arange(max(max_n, 1), dtype=np.uint64)
        if np.array_equal((n * np.uint64(m)) >> np.uint64(32 + s), n // np.uint64(d)):
            return m, s
    raise AssertionError(f"no 32-bit magic number for n / {d}, n < {max_n}")  # pragma: no cover


def _pow2(d: int) -> bool:
    return d & (d - 1) == 0


class _Regs:
    """Names the IR's values: one register per purpose (declared at the end)."""

    PREFIX = {"u32": "%r", "u64": "%rd", "pred": "%p", "b32": "%h"}

    def __init__(self):
        self.names: dict[tuple[str, str], str] = {}
        self.count: dict[str, int] = {}

    def __call__(self, type_: str, purpose: str) -> str:
        key = (type_, purpose)
        if key not in self.names:
            i = self.count.get(type_, 0)
            self.count[type_] = i + 1
            self.names[key] = f"{self.PREFIX[type_]}{i}"
        return self.names[key]


class _Gen:
    """Emits the IR text of one GemmParams (see the module docstring)."""

    def __init__(self, p: GemmParams):
        self.p = p
        self.lines: list[str] = []
        self.R = _Regs()
        self.nlabel = 0
        S, SP = p.stages, p.span_bytes
        self.S, self.SP, self.W = S, SP, p.box_width
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
        self.EPI_SLAB = 16 * 64 * 2
        self.EPI_OFF = S * self.TX
        self.pad = STATIC_SMEM_BYTES - 16 * S

    # ---------------------------------------------------------------- emission
    def e(self, line: str, comment: str = "") -> None:
        self.lines.append(f"    {line}" + (f"  // {comment}" if comment else ""))

    def g(self, guard: str, line: str, comment: str = "") -> None:
        self.lines.append(f"{guard} {line}" + (f"  // {comment}" if comment else ""))

    def label(self, base: str) -> str:
        self.nlabel += 1
        return f"{base}_{self.nlabel}"

    def place(self, name: str) -> None:
        self.lines.append(f"{name}:")

    def c(self, text: str) -> None:
        self.lines.append(f"    // {text}")

    def u(self, purpose: str) -> str:
        return self.R("u32", purpose)

    def d(self, purpose: str) -> str:
        return self.R("u64", purpose)

    def pr(self, purpose: str) -> str:
        return self.R("pred", purpose)

    # ---------------------------------------------------------------- arithmetic
    def div_const(self, q: str, n: str, d: int, max_n: int) -> None:
        """q = n / d (unsigned, constant d)."""
        if d == 1:
            self.e(f"mov.u32 {q}, {n};")
        elif _pow2(d):
            self.e(f"shr.u32 {q}, {n}, {d.bit_length() - 1};")
        else:
            m, s = _magic(d, max_n)
            self.e(f"mul.hi.u32 {q}, {n}, {m};", f"/ {d}")
            if s:
                self.e(f"shr.u32 {q}, {q}, {s};")

    def mod_const(self, r: str, n: str, d: int, max_n: int, q: str | None = None) -> None:
        """r = n % d; reuses q = n / d when given (else computes it into a scratch register)."""
        if d == 1:
            self.e(f"mov.u32 {r}, 0;")
        elif _pow2(d):
            self.e(f"and.b32 {r}, {n}, {d - 1};")
        else:
            if q is None:
                q = self.u("mod_q")
                self.div_const(q, n, d, max_n)
            t = self.u("mod_t")
            self.e(f"mul.lo.u32 {t}, {q}, {d};")
            self.e(f"sub.u32 {r}, {n}, {t};")

    def stage_phase(self, s: str, ph: str, kt: str, flip: bool = False) -> None:
        """s = kt % S, ph = ((kt / S) & 1) (^ 1 with flip)."""
        S, max_n = self.S, self.KT + self.S
        q = self.u("sp_q")
        self.div_const(q, kt, S, max_n)
        self.mod_const(s, kt, S, max_n, q=q)
        self.e(f"and.b32 {ph}, {q}, 1;")
        if flip:
            self.e(f"xor.b32 {ph}, {ph}, 1;")

    def wait(self, bar: str, parity: str) -> None:
        p = self.pr("wait")
        top = self.label("WAIT")
        self.place(top)
        self.e(f"mbarrier.try_wait.parity.shared::cta.b64 {p}, [{bar}], {parity};")
        self.g(f"@!{p}", f"bra {top};")

    # ---------------------------------------------------------------- pieces of the .cu
    def tile_coords(self) -> None:
        """tile_coords(blockIdx.x, tm, tn) -> tmBM = tm*BM, tnBN = tn*BN."""
        p = self.p
        cta, tm, tn = self.u("cta"), self.u("tm"), self.u("tn")
        grid = self.TILES_M * self.TILES_N
        self.e(f"mov.u32 {cta}, %ctaid.x;")
        if p.raster == "row":
            self.c("row raster: tm = id / TILES_N, tn = id % TILES_N")
            self.div_const(tm, cta, self.TILES_N, grid)
            self.mod_const(tn, cta, self.TILES_N, grid, q=tm)
        else:
            G = p.group_m
            per = G * self.TILES_N
            self.c(f"grouped raster: {G} M-tiles per group walk the N tiles together")
            grp, fm, r = self.u("grp"), self.u("first_m"), self.u("grp_r")
            self.div_const(grp, cta, per, grid)
            self.e(f"mul.lo.u32 {fm}, {grp}, {G};", "first_m")
            self.mod_const(r, cta, per, grid, q=grp)
            tail = self.TILES_M % G
            if tail == 0 or self.TILES_M < G:
                gsz = min(G, self.TILES_M)  # every group has this size
                q = self.u("grp_q")
                self.div_const(q, r, gsz, per)
                self.mod_const(tm, r, gsz, per, q=q)
                self.e(f"add.u32 {tm}, {tm}, {fm};")
                self.e(f"mov.u32 {tn}, {q};")
            else:
                # gsz = min(TILES_M - first_m, G): G, or the tail size for the last group
                pfull = self.pr("grp_full")
                left = self.u("grp_left")
                self.e(f"sub.u32 {left}, {self.TILES_M}, {fm};")
                self.e(f"setp.ge.u32 {pfull}, {left}, {G};")
                q1, r1, q2, r2 = self.u("grp_q1"), self.u("grp_r1"), self.u("grp_q2"), self.u("grp_r2")
                self.div_const(q1, r, G, per)
                self.mod_const(r1, r, G, per, q=q1)
                self.div_const(q2, r, tail, per)
                self.mod_const(r2, r, tail, per, q=q2)
                self.e(f"selp.u32 {tn}, {q1}, {q2}, {pfull};")
                self.e(f"selp.u32 {tm}, {r1}, {r2}, {pfull};")
                self.e(f"add.u32 {tm}, {tm}, {fm};")
        self.e(f"mul.lo.u32 {self.u('tmBM')}, {tm}, {self.BM};", "tm * BM")
        self.e(f"mul.lo.u32 {self.u('tnBN')}, {tn}, {self.BN};", "tn * BN")

    def load_stage(self, sa: str, sb: str, bar: str, kt: str, pred: str) -> None:
        """load_stage(): arrive.expect_tx(stage bytes) + every TMA box of k-tile kt."""
        BM, BN, BK, SP, W, RA, RB = self.BM, self.BN, self.BK, self.SP, self.W, self.RA, self.RB
        g = f"@{pred}"
        self.g(g, f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [{bar}], {self.TX};")
        k0, kc, row = self.u("ld_k0"), self.u("ld_kc"), self.u("ld_row")
        tmBM, tnBN = self.u("tmBM"), self.u("tnBN")
        self.e(f"shl.b32 {k0}, {kt}, 6;", "kt * BK")
        load = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"

        def box(dst: str, off: int, tmap: str, c0: str, c1: str) -> None:
            o = f"+{off}" if off else ""
            self.g(g, f"{load} [{dst}{o}], [{tmap}, {{{c0}, {c1}}}], [{bar}];")

        def coord(dst: str, base: str, add: int) -> str:
            if add == 0:
                return base
            self.e(f"add.u32 {dst}, {base}, {add};")
            return dst

        for c in range(BK // W):
            kcc = coord(kc, k0, c * W)
            for i in range(BM // RA):
                box(sa, c * BM * SP + i * RA * SP, "tma_a", kcc, coord(row, tmBM, i * RA))
        if not self.NN:
            for c in range(BK // W):
                kcc = coord(kc, k0, c * W)
                for i in range(BN // RB):
                    box(sb, c * BN * SP + i * RB * SP, "tma_b", kcc, coord(row, tnBN, i * RB))
        else:
            for j in range(BN // W):
                col = coord(kc, tnBN, j * W)
                for i in range(BK // RB):
                    box(sb, j * BK * SP + i * RB * SP, "tma_b", col, coord(row, k0, i * RB))

    def stage_addrs(self, s: str, sa: str, sb: str, bar: str | None, which: str = "full_bar") -> None:
        self.e(f"mad.lo.u32 {sa}, {s}, {self.A_STAGE}, {self.u('sA')};")
        self.e(f"mad.lo.u32 {sb}, {s}, {self.B_STAGE}, {self.u('sB')};")
        if bar is not None:
            self.bar_addr(bar, s, which)

    def bar_addr(self, bar: str, s: str, which: str) -> None:
        self.e(f"shl.b32 {bar}, {s}, 3;")
        self.e(f"add.u32 {bar}, {bar}, {self.u(which)};")

    def desc_base(self, dst: str, addr: str, lbo: int, sbo: int) -> None:
        """make_desc(addr, lbo, sbo, layout) with the start address of `addr`."""
        t = self.u("desc_t")
        const = ((lbo & 0x3FFFF) >> 4) << 16 | ((sbo & 0x3FFFF) >> 4) << 32 | LAYOUT_TYPE[self.SP] << 62
        self.e(f"and.b32 {t}, {addr}, 262143;")
        self.e(f"shr.u32 {t}, {t}, 4;")
        self.e(f"cvt.u64.u32 {dst}, {t};")
        self.e(f"or.b64 {dst}, {dst}, {const:#x};", f"LBO {lbo}, SBO {sbo}, layout {LAYOUT_TYPE[self.SP]}")

    def acc(self, mi: int) -> list[str]:
        return [f"%acc{mi * self.ACC + i}" for i in range(self.ACC)]

    def accvec(self, mi: int) -> str:
        a = self.acc(mi)
        return f"{{{a[0]}..{a[-1]}}}"

    def mma_stage(self, sa: str, sb: str, cw: str | None) -> None:
        """mma_stage(): BK/16 x MI wgmma m64nBNk16 (descriptors advance as in the .cu)."""
        p, SP, BM, BN, MI = self.p, self.SP, self.BM, self.BN, self.MI
        dA, dB, da, db = self.d("descA"), self.d("descB"), self.d("da"), self.d("db")
        a_base = sa
        if cw is not None and self.NC > 1:
            a_base = self.u("sa_cw")
            self.e(f"mad.lo.u32 {a_base}, {cw}, {MI * 64 * SP}, {sa};", "rows of this consumer")
        self.desc_base(dA, a_base, 16, 8 * SP)
        if not self.NN:
            self.desc_base(dB, sb, 16, 8 * SP)
        else:
            self.desc_base(dB, sb, 64 * SP, 8 * SP)
        self.e("wgmma.fence.sync.aligned;")
        shape = f"m64n{BN}k16.{p.accum}.{p.dtype}.{p.dtype}"
        tb = 1 if self.NN else 0
        for kk in range(self.BK // 16):
            kbyte = kk * 32
            a_k = (kbyte // SP) * BM * SP + kbyte % SP
            boff = ((kbyte // SP) * BN * SP + kbyte % SP) if not self.NN else kk * 16 * SP
            bdesc = dB
            if boff:
                self.e(f"add.u64 {db}, {dB}, {boff >> 4};")
                bdesc = db
            for mi in range(MI):
                aoff = a_k + mi * 64 * SP
                adesc = dA
                if aoff:
                    self.e(f"add.u64 {da}, {dA}, {aoff >> 4};")
                    adesc = da
                self.e(f"wgmma.mma_async.sync.aligned.{shape} {self.accvec(mi)}, {adesc}, {bdesc}, "
                       f"1, 1, 1, 0, {tb};")
        self.e("wgmma.commit_group.sync.aligned;")

    def zero_acc(self) -> None:
        t = "f32" if self.p.accum == "f32" else "b32"
        for mi in range(self.MI):
            for r in self.acc(mi):
                self.e(f"mov.{t} {r}, 0;")

    def frag(self, mi: int, v1: int, v2: int, dst: str) -> str:
        """The packed (v0 = 0, 1) pair of row half v1, column group v2 (a b32 register)."""
        a = self.acc(mi)
        if self.p.accum == "f16":
            return a[2 * v2 + v1]
        lo, hi = a[4 * v2 + 2 * v1], a[4 * v2 + 2 * v1 + 1]
        self.e(f"cvt.rn.{self.p.dtype}x2.f32 {dst}, {hi}, {lo};")
        return dst

    def epilogue(self, cw: str | None) -> None:
        """epilogue(): direct stores or the stmatrix slab + 16-B stores (see the .cu)."""
        p, N, BN, MI = self.p, self.p.n, self.BN, self.MI
        tid, lane, w = self.u("tid"), self.u("lane"), self.u("wq")  # lane = tid & 31 (set above)
        self.e(f"shr.u32 {w}, {tid}, 5;")
        self.e(f"and.b32 {w}, {w}, 3;", "warp in the warpgroup")
        row0 = self.u("row0")
        self.e(f"shl.b32 {row0}, {w}, 4;")
        self.e(f"add.u32 {row0}, {row0}, {self.u('tmBM')};", "tm*BM + 16*w")
        if cw is not None and self.NC > 1:
            self.e(f"mad.lo.u32 {row0}, {cw}, {MI * 64}, {row0};", "+ cw*MI*64")
        cptr, gp, t, rd = self.d("C"), self.d("gptr"), self.u("epi_t"), self.d("epi_rd")
        self.e(f"ld.param.u64 {cptr}, [C];")
        if p.epilogue == "direct":
            # lane: row r = row0 + lane/4 (+8 v1), column tn*BN + 8 v2 + 2 (lane%4)
            col = self.u("col")
            self.e(f"shr.u32 {t}, {lane}, 2;")
            self.e(f"add.u32 {t}, {t}, {row0};")
            self.e(f"and.b32 {col}, {lane}, 3;")
            self.e(f"shl.b32 {col}, {col}, 1;")
            self.e(f"add.u32 {col}, {col}, {self.u('tnBN')};")
            self.e(f"mul.wide.u32 {gp}, {t}, {2 * N};")
            self.e(f"mul.wide.u32 {rd}, {col}, 2;")
            self.e(f"add.u64 {gp}, {gp}, {rd};")
            self.e(f"add.u64 {gp}, {gp}, {cptr};", "&C[row][col] of (mi 0, v1 0, v2 0)")
            h = self.R("b32", "pack0")
            gmi = self.d("gptr_mi")
            for mi in range(MI):
                base = gp
                if mi:
                    self.e(f"add.u64 {gmi}, {gp}, {mi * 64 * N * 2};")
                    base = gmi
                for v2 in range(BN // 8):
                    for v1 in range(2):
                        v = self.frag(mi, v1, v2, h)
                        off = (8 * v1 * N + 8 * v2) * 2
                        o = f"+{off}" if off else ""
                        self.e(f"st.global.b32 [{base}{o}], {v};")
            return
        # stmatrix epilogue: slab = EPI_OFF + warp * 2 KB
        slab, r16, x, sta = self.u("slab"), self.u("st_r"), self.u("st_x"), self.u("st_a")
        warp = self.u("warp")
        self.e(f"shr.u32 {warp}, {tid}, 5;")
        if self.WS:
            self.e(f"sub.u32 {warp}, {warp}, 4;", "consumer warp (0 .. 4*NC-1)")
        self.e(f"mad.lo.u32 {slab}, {warp}, {self.EPI_SLAB}, {self.u('sA')};")
        self.e(f"add.u32 {slab}, {slab}, {self.EPI_OFF};", "this warp's slab")
        # stmatrix rows: r = lane % 16, chunk 2*jj + lane/16 stored at chunk ^ (r % 8)
        self.e(f"and.b32 {r16}, {lane}, 15;")
        self.e(f"shr.u32 {x}, {lane}, 4;")
        self.e(f"and.b32 {t}, {lane}, 7;")
        self.e(f"xor.b32 {x}, {x}, {t};", "(lane/16) ^ (r % 8)")
        self.e(f"shl.b32 {r16}, {r16}, 7;")
        self.e(f"add.u32 {r16}, {r16}, {slab};", "slab + r*128")
        st_addr = []
        for jj in range(4):
            a = self.u(f"st_addr{jj}")
            self.e(f"xor.b32 {t}, {x}, {2 * jj};")
            self.e(f"shl.b32 {t}, {t}, 4;")
            self.e(f"add.u32 {a}, {r16}, {t};")
            st_addr.append(a)
        # row-wise reads: idx = it*32 + lane, r = it*4 + lane/8, ch = lane%8 at ch ^ (r % 8)
        r8, ch = self.u("ld_r8"), self.u("ld_ch")
        lde, ldo = self.u("ld_even"), self.u("ld_odd")
        self.e(f"shr.u32 {r8}, {lane}, 3;")
        self.e(f"and.b32 {ch}, {lane}, 7;")
        self.e(f"shl.b32 {t}, {r8}, 7;")
        self.e(f"add.u32 {sta}, {slab}, {t};", "slab + (lane/8)*128")
        self.e(f"xor.b32 {t}, {ch}, {r8};")
        self.e(f"shl.b32 {t}, {t}, 4;")
        self.e(f"add.u32 {lde}, {sta}, {t};", "it = 0, 2: r % 8 = lane/8")
        self.e(f"xor.b32 {t}, {r8}, 4;")
        self.e(f"xor.b32 {t}, {t}, {ch};")
        self.e(f"shl.b32 {t}, {t}, 4;")
        self.e(f"add.u32 {ldo}, {sta}, {t};", "it = 1, 3: r % 8 = 4 + lane/8")
        # global: C + ((row0 + lane/8) * N + tn*BN + ch*8) * 2
        self.e(f"add.u32 {t}, {row0}, {r8};")
        self.e(f"mul.wide.u32 {gp}, {t}, {2 * N};")
        self.e(f"shl.b32 {t}, {ch}, 3;")
        self.e(f"add.u32 {t}, {t}, {self.u('tnBN')};")
        self.e(f"mul.wide.u32 {rd}, {t}, 2;")
        self.e(f"add.u64 {gp}, {gp}, {rd};")
        self.e(f"add.u64 {gp}, {gp}, {cptr};")
        hs = [self.R("b32", f"pack{i}") for i in range(4)]
        vs = [self.R("b32", f"vec{i}") for i in range(4)]
        gmi = self.d("gptr_mi")
        for mi in range(MI):
            base = gp
            if mi:
                self.e(f"add.u64 {gmi}, {gp}, {mi * 64 * N * 2};")
                base = gmi
            for nc in range(BN // 64):
                for jj in range(4):
                    v2 = nc * 8 + 2 * jj
                    regs = [self.frag(mi, 0, v2, hs[0]), self.frag(mi, 1, v2, hs[1]),
                            self.frag(mi, 0, v2 + 1, hs[2]), self.frag(mi, 1, v2 + 1, hs[3])]
                    self.e(f"stmatrix.sync.aligned.m8n8.x4.shared.b16 [{st_addr[jj]}], "
                           f"{{{', '.join(regs)}}};")
                for it in range(4):
                    src = lde if it % 2 == 0 else ldo
                    so = it * 4 * 128
                    self.e(f"ld.shared.v4.b32 {{{', '.join(vs)}}}, [{src}{'+' + str(so) if so else ''}];")
                    go = (it * 4 * N + nc * 64) * 2
                    self.e(f"st.global.v4.b32 [{base}{'+' + str(go) if go else ''}], {{{', '.join(vs)}}};")

    # ---------------------------------------------------------------- the kernel
    def mainloop(self, cw: str | None, single: bool, issuer: str | None = None) -> None:
        """The consumer k-loop (single: with warp 0's refill of the freed stage)."""
        S, KT = self.S, self.KT
        kt, s, ph = self.u("kt"), self.u("s"), self.u("ph")
        bar, sa, sb = self.u("bar"), self.u("sa"), self.u("sb")
        self.zero_acc()
        self.e(f"mov.u32 {kt}, 0;")
        top = self.label("KLOOP")
        nxt = self.label("KNEXT")
        self.place(top)
        self.stage_phase(s, ph, kt)
        self.bar_addr(bar, s, "full_bar")
        self.wait(bar, ph)
        self.stage_addrs(s, sa, sb, None)
        self.mma_stage(sa, sb, cw)
        self.e(f"wgmma.wait_group.sync.aligned {0 if S == 1 else 1};")
        lane0 = self.pr("lane0")
        if single:
            rel, rs, rph = self.u("rel"), self.u("rs"), self.u("rph")
            if S == 1:
                self.e(f"mov.u32 {rel}, {kt};", "rel = kt (one stage: wait_group 0)")
            else:
                p0 = self.pr("first")
                self.e(f"setp.eq.u32 {p0}, {kt}, 0;")
                self.g(f"@{p0}", f"bra {nxt};", "rel = kt - 1 < 0")
                self.e(f"sub.u32 {rel}, {kt}, 1;")
            self.stage_phase(rs, rph, rel)
            ebar = self.u("ebar")
            self.bar_addr(ebar, rs, "empty_bar")
            self.g(f"@{lane0}", f"mbarrier.arrive.shared::cta.b64 _, [{ebar}];", "lane 0 of each warp")
            prf = self.pr("refill")
            self.e(f"setp.lt.s32 {prf}, {rel}, {KT - S};", "rel + S < KT")
            self.e(f"and.pred {prf}, {prf}, {self.pr('warp0')};")
            self.g(f"@!{prf}", f"bra {nxt};")
            self.wait(ebar, rph)
            kl = self.u("kload")
            self.e(f"add.u32 {kl}, {rel}, {S};")
            self.stage_addrs(rs, sa, sb, bar, "full_bar")
            self.load_stage(sa, sb, bar, kl, issuer or lane0)
        else:
            sig = self.pr("signal")
            ebar = self.u("ebar")
            if S == 1:
                self.bar_addr(ebar, s, "empty_bar")
                self.g(f"@{lane0}", f"mbarrier.arrive.shared::cta.b64 _, [{ebar}];")
            else:
                self.e(f"setp.ne.u32 {sig}, {kt}, 0;")
                self.e(f"and.pred {sig}, {sig}, {lane0};", "signaller && kt >= 1")
                rel, rs = self.u("rel"), self.u("rs")
                self.e(f"sub.u32 {rel}, {kt}, 1;")
                self.mod_const(rs, rel, S, KT + S)
                self.bar_addr(ebar, rs, "empty_bar")
                self.g(f"@{sig}", f"mbarrier.arrive.shared::cta.b64 _, [{ebar}];", "empty[(kt-1) % S]")
        self.place(nxt)
        pl = self.pr("loop")
        self.e(f"add.u32 {kt}, {kt}, 1;")
        self.e(f"setp.lt.u32 {pl}, {kt}, {KT};")
        self.g(f"@{pl}", f"bra {top};")
        self.e("wgmma.wait_group.sync.aligned 0;")
        self.epilogue(cw)

    def build(self) -> str:
        p, S = self.p, self.S
        tid = self.u("tid")
        self.e(f"mov.u32 {tid}, %tid.x;")
        self.c("dynamic shared memory: base = (smem_raw + 1023) & ~1023")
        base = self.u("sA")
        self.e(f"mov.u32 {base}, static_pad;")
        self.e(f"add.u32 {base}, {base}, {self.pad + 1023};")
        self.e(f"and.b32 {base}, {base}, 0xfffffc00;", "sA")
        self.e(f"add.u32 {self.u('sB')}, {base}, {S * self.A_STAGE};", "sB")
        self.e(f"mov.u32 {self.u('full_bar')}, full_bar;")
        self.e(f"mov.u32 {self.u('empty_bar')}, empty_bar;")
        self.tile_coords()
        t0 = self.pr("t0")
        self.e(f"setp.eq.u32 {t0}, {tid}, 0;", "thread 0 initialises the barriers")
        for s in range(S):
            self.g(f"@{t0}", f"mbarrier.init.shared::cta.b64 [full_bar+{8 * s}], 1;")
            self.g(f"@{t0}", f"mbarrier.init.shared::cta.b64 [empty_bar+{8 * s}], {4 * self.NC};")
        self.g(f"@{t0}", "fence.mbarrier_init.release.cluster;")
        self.e("bar.sync 0;")
        lane, lane0 = self.u("lane"), self.pr("lane0")
        self.e(f"and.b32 {lane}, {tid}, 31;")
        self.e(f"setp.eq.u32 {lane0}, {lane}, 0;")
        issuer = lane0
        if p.tma_issuer == "elect":  # the copies' guard: the lane elect.sync elects (all lanes here)
            issuer = self.pr("issuer")
            self.e(f"elect.sync _|{issuer}, 0xffffffff;", "tma_issuer elect")
        done = "DONE"
        if not self.WS:
            w0 = self.pr("warp0")
            self.e(f"setp.lt.u32 {w0}, {tid}, 32;", "warp 0 runs the load path (lane 0 issues)")
            skip = self.label("PROLOGUE_END")
            self.g(f"@!{w0}", f"bra {skip};")
            s, sa, sb, bar = self.u("s"), self.u("sa"), self.u("sb"), self.u("bar")
            self.e(f"mov.u32 {s}, 0;")
            top = self.label("PROLOGUE")
            self.place(top)
            self.stage_addrs(s, sa, sb, bar)
            self.load_stage(sa, sb, bar, s, issuer)
            pl = self.pr("loop")
            self.e(f"add.u32 {s}, {s}, 1;")
            self.e(f"setp.lt.u32 {pl}, {s}, {min(S, self.KT)};")
            self.g(f"@{pl}", f"bra {top};")
            self.place(skip)
            self.mainloop(None, single=True, issuer=issuer)
        else:
            wg, pc = self.u("wg"), self.pr("consumer")
            consumer = "CONSUMER"
            self.e(f"shr.u32 {wg}, {tid}, 7;")
            self.e(f"setp.ne.u32 {pc}, {wg}, 0;")
            self.g(f"@{pc}", f"bra {consumer};")
            self.c("producer warpgroup: warp 0 (lane 0 issues) loads every k-tile")
            self.e("setmaxnreg.dec.sync.aligned.u32 40;")
            pw = self.pr("not_warp0")
            self.e(f"setp.ge.u32 {pw}, {tid}, 32;")
            self.g(f"@{pw}", f"bra {done};")
            kt, s, ph, bar, sa, sb = (self.u(x) for x in ("kt", "s", "ph", "bar", "sa", "sb"))
            ebar = self.u("ebar")
            self.e(f"mov.u32 {kt}, 0;")
            top = self.label("PLOOP")
            self.place(top)
            self.stage_phase(s, ph, kt, flip=True)
            self.bar_addr(ebar, s, "empty_bar")
            self.wait(ebar, ph)
            self.stage_addrs(s, sa, sb, bar)
            self.load_stage(sa, sb, bar, kt, issuer if p.tma_issuer == "elect" else t0)
            pl = self.pr("loop")
            self.e(f"add.u32 {kt}, {kt}, 1;")
            self.e(f"setp.lt.u32 {pl}, {kt}, {self.KT};")
            self.g(f"@{pl}", f"bra {top};")
            self.e(f"bra.uni {done};")
            self.place(consumer)
            self.e(f"setmaxnreg.inc.sync.aligned.u32 {232 if self.NC == 2 else 240};")
            cw = self.u("cw")
            self.e(f"sub.u32 {cw}, {wg}, 1;", "consumer warpgroup")
            self.mainloop(cw, single=False)
        self.place(done)
        self.e("exit;")
        return self.header() + "\n".join(self.lines) + "\n"

    def header(self) -> str:
        p = self.p
        acc_t = "f32" if p.accum == "f32" else "f16x2"
        out = [f"// {p.tag}: the IR twin of kernels/cuda/gemm_sm90.cu (kernels/gemm.py)",
               f".kernel {KERNEL_NAME}",
               ".param .tmap tma_a, tma_b",
               ".param .u64 C",
               f".shared .align 8 .b64 full_bar[{self.S}]",
               f".shared .align 8 .b64 empty_bar[{self.S}]",
               f".shared .align 8 .b8 static_pad[{self.pad}]  // static segment = 1024 B as ptxas "
               "reports (dynamic smem is __align__(1024))"]
        for t, pre in (("u32", "%r"), ("u64", "%rd"), ("pred", "%p"), ("b32", "%h")):
            n = self.R.count.get(t, 0)
            if n:
                out.append(f".reg .{t} {pre}<{n}>")
        out.append(f".reg .{acc_t} %acc<{self.MI * self.ACC}>")
        return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- public API
@functools.lru_cache(maxsize=256)
def build_gemm(params: GemmParams) -> GemmKernel:
    """The IR kernel of `params` (cached)."""
    if not isinstance(params, GemmParams):
        raise InputError("params", type(params).__name__, "a kernels.params.GemmParams")
    text = _Gen(params).build()
    kernel = parse(text, filename=f"{params.tag}.ptx")
    return GemmKernel(params=params, kernel=kernel, text=text, grid=(params.grid, 1, 1),
                      block=(params.threads, 1, 1), dynamic_smem=params.dynamic_smem_bytes,
                      regs_per_thread=estimate_regs(params))


def tensor_maps(params: GemmParams, a_addr: int, b_addr: int):
    """The A and B tensor maps, as validation/harness.py's gemm_tensor_maps encodes them for the
    .cu (dims innermost first; L2 promotion 256B; no interleave; zero OOB fill)."""
    p, w = params, params.box_width
    ta = TensorMap(dtype=p.dtype, global_dims=(p.k, p.m), global_strides_bytes=(p.k * 2,),
                   box_dims=(w, p.box_rows_a), global_address=a_addr, swizzle=p.swizzle,
                   l2_promotion="256B")
    if p.layout == "tn":
        tb = TensorMap(dtype=p.dtype, global_dims=(p.k, p.n), global_strides_bytes=(p.k * 2,),
                       box_dims=(w, p.box_rows_b), global_address=b_addr, swizzle=p.swizzle,
                       l2_promotion="256B")
    else:
        tb = TensorMap(dtype=p.dtype, global_dims=(p.n, p.k), global_strides_bytes=(p.n * 2,),
                       box_dims=(w, p.box_rows_b), global_address=b_addr, swizzle=p.swizzle,
                       l2_promotion="256B")
    return ta, tb
