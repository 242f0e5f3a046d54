"""Typed parameters of the sm90 TMA + WGMMA GEMM family, shared by the IR kernel and the CUDA one.

`GemmParams` is a frozen dataclass: constructing one validates every knob and every combination,
raising `isa.errors.InputError` that names the field, the value and what is allowed (and why).
Derived quantities (shared-memory footprint, TMA boxes per stage, accumulator registers, grid) are
properties, and `cuda_defines()` gives the `-D` macros of `kernels/cuda/gemm_sm90.cu`, whose
header comment documents the same knobs. Pure Python (imports `isa.errors` only) so that it runs
on the GPU machine.

Knobs (same meaning in the IR kernel and the CUDA kernel):

  m, n, k        problem size; multiples of bm, bn, bk (no tail handling: rejected otherwise)
  dtype          "f16" | "bf16" (inputs and output C)
  accum          "f32" | "f16" (f16 accumulators exist in wgmma only for f16 inputs)
  layout         "tn": A MxK, B NxK, both K-major (C = A B^T)
                 "nn": A MxK K-major, B KxN N-major (C = A B; MN-major descriptor, trans-b = 1)
  bm, bn, bk     CTA tile; bm, bn in {64, 128, 256}; bk = 64; one wgmma is m64 x bn x k16
  stages         shared-memory pipeline depth 1..8, limited by 227 KB per CTA
  box_rows       TMA box rows R (box = swizzle-span wide x R rows); R = 8 is many small boxes,
                 R >= tile extent clamps to one box per swizzle column per operand per stage
  swizzle        "32B" | "64B" | "128B" (TMA swizzle = wgmma layout type; box width 16/32/64)
  variant        "single": one warpgroup loads (one elected thread) and computes;
                 "ws" (or "warp-specialized"): warp-specialized, producer warpgroup + `consumers` consumer warpgroups
  consumers      1 | 2 consumer warpgroups (ws only; 2 split bm in halves)
  ctas_per_sm    "auto" (occupancy from resources) | 1 (extra dynamic smem forces one CTA/SM)
  epilogue       "direct" (registers -> global) | "stmatrix" (swizzled smem slab, 16-B stores)
  raster         "row" | "grouped" (group_m M-tiles walk N together, for L2 reuse)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import numbers
from dataclasses import dataclass

from isa.errors import InputError

SMEM_PER_CTA_MAX_BYTES = 227 * 1024  # sm90 opt-in dynamic + static shared memory per CTA
SMEM_PER_SM_BYTES = 228 * 1024  # unified L1/shared carve-out maximum per SM
SMEM_RESERVED_PER_CTA_BYTES = 1024  # the driver reserves 1 KB of each CTA's shared memory
STATIC_SMEM_BYTES = 1024  # mbarriers in static smem; ptxas reports 1024 (dynamic base aligned)
ALIGN_SLACK_BYTES = 1024  # dynamic base is rounded up to 1024 B in the kernel (128B atoms)
EPI_SLAB_BYTES = 16 * 64 * 2  # stmatrix epilogue: one warp stages 16 rows x 64 columns of C
MAX_ACC_REGS = 128  # accumulator registers per thread we allow (255 max; the rest for addresses)
SWIZZLE_BYTES = {"32B": 32, "64B": 64, "128B": 128}
BOX_ROWS = (8, 16, 32, 64, 128, 256)
INT_FIELDS = ("m", "n", "k", "bm", "bn", "bk", "stages", "box_rows", "consumers", "group_m")
VARIANT_ALIASES = {"warp-specialized": "ws", "warp_specialized": "ws"}  # issue 4 calls ws so
ELEM_BYTES = 2


def _need(ok: bool, field: str, value: object, allowed: str) -> None:
    if not ok:
        raise InputError(field, value, allowed)


#: Fields added after H100 records existed -> their default (left out of to_dict() at the default).
LATER_FIELDS = {"tma_issuer": "lane"}


@dataclass(frozen=True)
class GemmParams:
    """One configuration of the GEMM family; invalid combinations raise InputError."""

    m: int = 4096
    n: int = 4096
    k: int = 4096
    dtype: str = "f16"
    accum: str = "f32"
    layout: str = "tn"
    bm: int = 128
    bn: int = 128
    bk: int = 64
    stages: int = 4
    box_rows: int = 128
    swizzle: str = "128B"
    variant: str = "single"
    consumers: int = 1
    ctas_per_sm: str | int = "auto"
    epilogue: str = "direct"
    raster: str = "row"
    group_m: int = 8
    #: who issues the TMA copies: "lane" (lane 0 by a lane predicate, or thread 0 alone in the ws
    #: producer, as the records up to this field) or "elect" (the lane elect.sync elects, as
    #: CUTLASS's elect_one_sync(); ptxas then issues on the uniform path, microbench__tma_issue)
    tma_issuer: str = "lane"

    # ------------------------------------------------------------------ validation
    def __post_init__(self) -> None:
        for f in INT_FIELDS:
            v = getattr(self, f)
            _need(isinstance(v, numbers.Integral) and not isinstance(v, bool), f, v, "an integer")
            object.__setattr__(self, f, int(v))  # numpy integers become plain ints (hash, JSON)
        # the spellings: variant "warp-specialized", ctas_per_sm "1" (as on the command line)
        object.__setattr__(self, "variant", VARIANT_ALIASES.get(self.variant, self.variant))
        if self.ctas_per_sm == "1":
            object.__setattr__(self, "ctas_per_sm", 1)
        _need(self.dtype in ("f16", "bf16"), "dtype", self.dtype, "one of f16, bf16")
        _need(self.accum in ("f32", "f16"), "accum", self.accum, "one of f32, f16")
        _need(not (self.accum == "f16" and self.dtype != "f16"), "accum", self.accum,
              "f16 accumulators exist only for f16 inputs (wgmma .f16.f16.f16); use f32 for bf16")
        _need(self.layout in ("tn", "nn"), "layout", self.layout, "one of tn, nn")
        _need(self.bm in (64, 128, 256), "bm", self.bm, "one of 64, 128, 256")
        _need(self.bn in (64, 128, 256), "bn", self.bn, "one of 64, 128, 256 (wgmma n)")
        _need(self.bk == 64, "bk", self.bk, "64 (one 128-byte row of 16-bit elements)")
        for f, tile in (("m", self.bm), ("n", self.bn), ("k", self.bk)):
            v = getattr(self, f)
            _need(isinstance(v, int) and v > 0 and v % tile == 0, f, v,
                  f"a positive multiple of the tile ({tile}): the kernels have no tail "
                  "predication; pad the problem")
        _need(self.swizzle in SWIZZLE_BYTES, "swizzle", self.swizzle, "one of 32B, 64B, 128B")
        _need(self.box_rows in BOX_ROWS, "box_rows", self.box_rows,
              "one of 8, 16, 32, 64, 128, 256 (a multiple of the 8-row swizzle atom, <= 256 "
              "TMA box limit; values above a tile extent are clamped to it)")
        _need(self.variant in ("single", "ws"), "variant", self.variant,
              "one of single, ws (warp-specialized)")
        _need(self.consumers in (1, 2), "consumers", self.consumers, "1 or 2")
        _need(not (self.variant == "single" and self.consumers != 1), "consumers", self.consumers,
              "1 for variant single (one warpgroup does everything)")
        _need(self.bm // 64 >= self.consumers, "bm", self.bm,
              f">= {64 * self.consumers} with {self.consumers} consumer warpgroups (64 rows each)")
        _need(self.ctas_per_sm in ("auto", 1), "ctas_per_sm", self.ctas_per_sm, "'auto' or 1")
        _need(self.epilogue in ("direct", "stmatrix"), "epilogue", self.epilogue,
              "one of direct, stmatrix")
        _need(self.raster in ("row", "grouped"), "raster", self.raster, "one of row, grouped")
        _need(self.tma_issuer in ("lane", "elect"), "tma_issuer", self.tma_issuer, "one of lane, elect")
        _need(self.group_m in (1, 2, 4, 8, 16), "group_m", self.group_m, "one of 1, 2, 4, 8, 16")
        _need(1 <= self.stages <= 8, "stages", self.stages, "1..8")
        _need(self.acc_regs <= MAX_ACC_REGS, "tile", f"{self.bm}x{self.bn}x{self.bk}",
              f"a tile whose accumulators fit {MAX_ACC_REGS} registers/thread; this one needs "
              f"{self.acc_regs} ({self.m64_per_consumer} x m64n{self.bn} {self.accum}); "
              f"{self._acc_remedies()}")
        need = self.smem_footprint_bytes
        if need > SMEM_PER_CTA_MAX_BYTES:
            fit = self.max_stages_that_fit
            raise InputError("stages", self.stages,
                             f"<= {fit} for this tile: {self.stages} stages need {need} B of shared "
                             f"memory per CTA, more than the {SMEM_PER_CTA_MAX_BYTES} B (227 KB) "
                             "an sm90 CTA can have")

    def _acc_remedies(self) -> str:
        """The changes that would make the accumulators fit (only those that do)."""
        def regs(consumers: int, accum: str, bm: int, bn: int) -> int:
            return bm // 64 // consumers * (bn // 2 if accum == "f32" else bn // 4)
        out = []
        if self.num_consumer_warpgroups == 1 and self.bm >= 128 and regs(2, self.accum, self.bm, self.bn) <= MAX_ACC_REGS:
            out.append("2 consumer warpgroups (variant ws, consumers 2)")
        if self.accum == "f32" and self.dtype == "f16" \
                and regs(self.num_consumer_warpgroups, "f16", self.bm, self.bn) <= MAX_ACC_REGS:
            out.append("f16 accumulators")
        if self.accum == "f32" and self.dtype == "f16" and self.num_consumer_warpgroups == 1 and self.bm >= 128 \
                and not out and regs(2, "f16", self.bm, self.bn) <= MAX_ACC_REGS:
            out.append("2 consumer warpgroups with f16 accumulators")
        out.append("a smaller tile")
        return "use " + ", or ".join(out)

    # ------------------------------------------------------------------ derived
    @property
    def span_bytes(self) -> int:
        """Swizzle span in bytes = TMA box inner extent in bytes."""
        return SWIZZLE_BYTES[self.swizzle]

    @property
    def box_width(self) -> int:
        """TMA box inner extent in elements (16 / 32 / 64 for 32B / 64B / 128B)."""
        return self.span_bytes // ELEM_BYTES

    @property
    def box_rows_a(self) -> int:
        return min(self.box_rows, self.bm)

    @property
    def box_rows_b(self) -> int:
        """B box rows run along N (tn) or along K (nn, where the B stage has bk rows)."""
        return min(self.box_rows, self.bn if self.layout == "tn" else self.bk)

    @property
    def boxes_per_stage(self) -> int:
        a = (self.bk // self.box_width) * (self.bm // self.box_rows_a)
        if self.layout == "tn":
            b = (self.bk // self.box_width) * (self.bn // self.box_rows_b)
        else:
            b = (self.bn // self.box_width) * (self.bk // self.box_rows_b)
        return a + b

    @property
    def stage_bytes(self) -> int:
        """Bytes of one pipeline stage (A + B tile) = the mbarrier tx-count of a stage."""
        return (self.bm + self.bn) * self.bk * ELEM_BYTES

    @property
    def num_consumer_warpgroups(self) -> int:
        return self.consumers if self.variant == "ws" else 1

    @property
    def threads(self) -> int:
        return 128 * (self.num_consumer_warpgroups + (1 if self.variant == "ws" else 0))

    @property
    def m64_per_consumer(self) -> int:
        return self.bm // 64 // self.num_consumer_warpgroups

    @property
    def acc_regs(self) -> int:
        """Accumulator registers per consumer thread: N/2 f32 or N/4 f16x2 per m64nN wgmma."""
        per = self.bn // 2 if self.accum == "f32" else self.bn // 4
        return self.m64_per_consumer * per

    def _footprint(self, stages: int) -> int:
        epi = EPI_SLAB_BYTES * 4 * self.num_consumer_warpgroups if self.epilogue == "stmatrix" else 0
        return stages * self.stage_bytes + epi + ALIGN_SLACK_BYTES + STATIC_SMEM_BYTES

    @property
    def smem_footprint_bytes(self) -> int:
        """Shared memory a CTA needs (stages + epilogue slabs + alignment slack + static)."""
        return self._footprint(self.stages)

    @property
    def max_stages_that_fit(self) -> int:
        return max([s for s in range(1, 9) if self._footprint(s) <= SMEM_PER_CTA_MAX_BYTES] or [0])

    @property
    def dynamic_smem_bytes(self) -> int:
        """Dynamic shared memory to request at launch. ctas_per_sm=1 pads it so that two CTAs
        cannot share an SM: 2 * (dyn + static + 1 KB reserved) > 228 KB."""
        dyn = self.smem_footprint_bytes - STATIC_SMEM_BYTES
        if self.ctas_per_sm == 1:
            half = SMEM_PER_SM_BYTES // 2 - STATIC_SMEM_BYTES - SMEM_RESERVED_PER_CTA_BYTES
            dyn = max(dyn, half + 1024)
        return dyn

    @property
    def smem_limited_ctas_per_sm(self) -> int:
        per_cta = self.dynamic_smem_bytes + STATIC_SMEM_BYTES + SMEM_RESERVED_PER_CTA_BYTES
        return SMEM_PER_SM_BYTES // per_cta

    @property
    def grid(self) -> int:
        return (self.m // self.bm) * (self.n // self.bn)

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    # ------------------------------------------------------------------ CUDA side
    def cuda_defines(self) -> dict[str, int]:
        """-D macros of kernels/cuda/gemm_sm90.cu (ctas_per_sm is host side: launch smem)."""
        return {
            "GEMM_M": self.m, "GEMM_N": self.n, "GEMM_K": self.k,
            "GEMM_DTYPE": 0 if self.dtype == "f16" else 1,
            "GEMM_ACCUM": 0 if self.accum == "f32" else 1,
            "GEMM_LAYOUT": 0 if self.layout == "tn" else 1,
            "GEMM_BM": self.bm, "GEMM_BN": self.bn, "GEMM_BK": self.bk,
            "GEMM_STAGES": self.stages,
            "GEMM_SWIZZLE": self.span_bytes,
            "GEMM_BOX_ROWS_A": self.box_rows_a, "GEMM_BOX_ROWS_B": self.box_rows_b,
            "GEMM_WS": 1 if self.variant == "ws" else 0,
            "GEMM_CONSUMERS": self.num_consumer_warpgroups,
            "GEMM_EPILOGUE": 0 if self.epilogue == "direct" else 1,
            "GEMM_RASTER": 0 if self.raster == "row" else 1,
            "GEMM_GROUP": self.group_m,
            "GEMM_ELECT": 1 if self.tma_issuer == "elect" else 0,
        }

    def nvcc_flags(self) -> list[str]:
        return [f"-D{k}={v}" for k, v in self.cuda_defines().items()]

    # ------------------------------------------------------------------ naming / IO
    def to_dict(self) -> dict:
        """The fields; those added after the first records (LATER_FIELDS) only when they differ
        from their default, so earlier records' params and tags stay what they were."""
        d = dataclasses.asdict(self)
        for f, default in LATER_FIELDS.items():
            if d.get(f) == default:
                del d[f]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "GemmParams":
        names = {f.name for f in dataclasses.fields(cls)}
        extra = sorted(set(d) - names)
        if extra:
            raise InputError("params", extra, f"known fields: {', '.join(sorted(names))}")
        return cls(**d)

    def replace(self, **changes) -> "GemmParams":
        return dataclasses.replace(self, **changes)

    @property
    def tag(self) -> str:
        """Short human-readable name, unique per configuration (a hash suffix covers the rest)."""
        v = "ws" + str(self.consumers) if self.variant == "ws" else "single"
        cta = "c1" if self.ctas_per_sm == 1 else "cauto"
        base = (f"{self.m}x{self.n}x{self.k}_{self.dtype}{self.accum}_{self.layout}_"
                f"{self.bm}x{self.bn}x{self.bk}_s{self.stages}_r{self.box_rows}_{self.swizzle}_{v}_"
                f"{cta}_{self.epilogue}_{self.raster}" + ("_elect" if self.tma_issuer == "elect" else ""))
        h = hashlib.sha1(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:6]
        return f"{base}_{h}"
