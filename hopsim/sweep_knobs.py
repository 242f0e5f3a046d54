"""The sweepable knobs of every kernel family (`hopsim sweep --family F`): their command-line
flags (those of `hopsim simulate F`), domains and defaults, how a point becomes the family's
parameters (checked: an invalid combination raises InputError, one line) and which function
simulates a point.

    FAMILIES["softmax"].knobs        (Knob("rows", "rows", "posint", ...), Knob("cols", ...), ...)
    FAMILIES["softmax"].default()    {"family": "softmax", "rows": 8192, ..., "gpu": "h100_sxm"}
    FAMILIES["softmax"].check(pt)    RowParams(...) of the point, or InputError
    FAMILIES["softmax"].fn           "hopsim.cli.family_sweep:simulate_point"

The GEMM family (KNOBS, issue 4) keeps its points without a `family` key (its rows and files
are as before); the others carry `family` (vecadd or copy, rowsum or softmax share a kernel
builder). A knob's `kind`: "int" (one of `choices`), "posint" (1..`maximum`), "choice" (one of
`choices`), "bool" (true/false), "tile" (BMxBNxBK, GEMM only). Every family also has `loop`
(LOOP: rotated | same, the benchmark loop of hopsim/timing/launch.py), which is in a point only
when asked for (a default point and its row have no `loop`: rotated).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from hopsim import inputs
from hopsim.config import GPUS
from hopsim.gemm_sim import ROW_COLUMNS as GEMM_COLUMNS
from hopsim.timing.launch import CLI_LOOPS
from isa.errors import InputError
from kernels.attention.params import HEAD_DIMS, KV_BLOCKS, MAX_Q_TILES, MAX_SEQ, VARIANTS, AttnParams
from kernels.attention.params import MAX_STAGES as ATTN_STAGES
from kernels.membound import MAX_N, MemParams
from kernels.membound.tmacopy import MAX_CTAS as TMA_MAX_CTAS
from kernels.membound.tmacopy import MAX_STAGES as TMA_STAGES
from kernels.membound.tmacopy import TmaCopyParams
from kernels.params import GemmParams
from kernels.rowwise import MAPPINGS, MAX_COLS, MAX_ELEMENTS, RowParams

MAX_EXTENT = 1 << 24      # largest problem extent M, N, K (the grid of CTAs is bounded per point)


@dataclass(frozen=True)
class Knob:
    """One sweepable knob: its point key(s), command-line flag, domain and meaning."""

    name: str                      # canonical name in grid.yaml (and the point key, except tile)
    flag: str                      # command-line flag without dashes, as in `simulate <family>`
    kind: str                      # "int" | "choice" | "tile" | "posint" | "bool"
    choices: tuple = ()            # allowed values ("int": allowed integers; "choice": strings/ints)
    help: str = ""
    maximum: int = MAX_EXTENT      # "posint": the largest value

    @property
    def allowed(self) -> str:
        if self.kind == "posint":
            return f"a positive integer up to {self.maximum}"
        if self.kind == "bool":
            return "true or false"
        if self.kind == "tile":
            return "BMxBNxBK with BM, BN in {64, 128, 256} and BK = 64, e.g. 128x128x64"
        if self.kind == "int" and _is_contiguous(self.choices):
            return f"{self.choices[0]}..{self.choices[-1]}"
        return "one of " + ", ".join(str(c) for c in self.choices)


def _is_contiguous(vals: tuple) -> bool:
    return bool(vals) and all(isinstance(v, int) for v in vals) and list(vals) == list(
        range(vals[0], vals[-1] + 1))


def gpu_names() -> tuple:
    return tuple(sorted(GPUS))


GPU = Knob("gpu", "gpu", "choice", (), "GPU configuration")
LOOP = Knob("loop", "loop", "choice", CLI_LOOPS,
            "benchmark loop (hopsim/timing/launch.py): rotated (a cold L2) or same (the inputs L2-resident "
            "when they fit)")
"""The benchmark-loop knob of every family. Unlike the others it is not in a family's default point:
a point without `loop` runs rotated and its row has no `loop` column (the rows of a sweep that does
not ask for a loop stay as they were); a point given one carries it into its row."""

#: The knobs of the GEMM family (issue 4's `simulate gemm` flags), in command-line order.
KNOBS: tuple[Knob, ...] = (
    Knob("m", "m", "posint", help="problem M (a multiple of BM)"),
    Knob("n", "n", "posint", help="problem N (a multiple of BN)"),
    Knob("k", "k", "posint", help="problem K (a multiple of BK)"),
    Knob("dtype", "dtype", "choice", ("f16", "bf16"), "input and output type"),
    Knob("accum", "accum", "choice", ("f32", "f16"), "accumulator type"),
    Knob("layout", "layout", "choice", ("tn", "nn"), "operand layouts (tn: both K-major)"),
    Knob("tile", "tile", "tile", help="CTA tile BMxBNxBK"),
    Knob("stages", "stages", "int", tuple(range(1, 9)), "shared-memory pipeline depth"),
    Knob("box_rows", "tma-box-rows", "int", (8, 16, 32, 64, 128, 256), "TMA box rows R"),
    Knob("swizzle", "swizzle", "choice", ("32B", "64B", "128B"), "TMA / wgmma swizzle"),
    Knob("variant", "variant", "choice", ("single", "ws"), "single warpgroup or warp-specialized"),
    Knob("consumers", "consumers", "int", (1, 2), "consumer warpgroups (ws)"),
    Knob("ctas_per_sm", "ctas-per-sm", "choice", ("auto", 1), "occupancy: from resources or 1"),
    Knob("epilogue", "epilogue", "choice", ("direct", "stmatrix"), "C store path"),
    Knob("raster", "raster", "choice", ("row", "grouped"), "CTA rasterisation"),
    Knob("group_m", "group-m", "int", (1, 2, 4, 8, 16), "M-tiles per group (raster grouped)"),
    Knob("tma_issuer", "tma-issuer", "choice", ("lane", "elect"),
         "TMA copies issued by lane 0 (lane predicate / one thread) or by the elect.sync lane"),
    LOOP, GPU,
)

_THREADS = Knob("threads", "threads", "int", tuple(range(32, 1025, 32)), "threads per CTA")
MEMBOUND_KNOBS = (
    Knob("n", "n", "posint", help="f32 elements", maximum=MAX_N),
    Knob("vec", "vec", "int", (1, 2, 4), "elements per thread access (4: float4)"),
    Knob("grid_stride", "grid-stride", "bool", help="grid-stride loop over n with --ctas CTAs"),
    Knob("ctas", "ctas", "posint", help="CTAs (grid-stride form; tmacopy: persistent CTAs)", maximum=2**31 - 1),
    _THREADS, LOOP, GPU)
ROWWISE_KNOBS = (
    Knob("rows", "rows", "posint", help="rows (tmacopy: tensor rows)", maximum=MAX_ELEMENTS),
    Knob("cols", "cols", "posint", help="f32 elements per row (tmacopy: tensor columns)", maximum=MAX_COLS),
    Knob("mapping", "mapping", "choice", MAPPINGS, "warp (one warp per row) or cta (one CTA per row)"),
    _THREADS, LOOP, GPU)
TMACOPY_KNOBS = (
    Knob("rows", "rows", "posint", help="tensor rows", maximum=MAX_ELEMENTS),
    Knob("cols", "cols", "posint", help="tensor columns, contiguous", maximum=MAX_ELEMENTS),
    Knob("dtype", "dtype", "choice", ("f16", "f32"), "element type (tmacopy: f16 or f32)"),
    Knob("box_rows", "box-rows", "int", tuple(range(1, 257)), "TMA box rows (tmacopy)"),
    Knob("box_cols", "box-cols", "posint", help="TMA box columns (tmacopy)", maximum=256),
    Knob("swizzle", "swizzle", "choice", ("none", "32B", "64B", "128B"), "TMA swizzle (tmacopy also none)"),
    Knob("stages", "stages", "int", tuple(range(1, TMA_STAGES + 1)), "shared-memory stages per CTA"),
    Knob("ctas", "ctas", "posint", help="persistent CTAs walking the tiles", maximum=TMA_MAX_CTAS),
    LOOP, GPU)
ATTENTION_KNOBS = (
    Knob("seq", "seq", "posint", help="keys/values N, a multiple of --kv-block", maximum=MAX_SEQ),
    Knob("head_dim", "head-dim", "int", HEAD_DIMS, "d"),
    Knob("kv_block", "kv-block", "int", KV_BLOCKS, "keys per loop step"),
    Knob("stages", "stages", "int", tuple(range(1, ATTN_STAGES + 1)), "K/V ring stages"),
    Knob("q_tiles", "q-tiles", "posint", help="independent 64-row Q tiles = CTAs", maximum=MAX_Q_TILES),
    Knob("variant", "variant", "choice", VARIANTS, "single (warp 0 also loads) or ws (a producer warp)"),
    Knob("out", "out-type", "choice", ("f32", "f16"), "output O: f32 (direct stores) or f16 (TMA store)"),
    Knob("overlap", "overlap", "bool", help="softmax of block j overlaps the P V of block j - 1"),
    LOOP, GPU)

FAMILY_COLUMNS = ("cycles", "time_ms", "ctas_per_sm", "waves", "limiting", "bytes_hbm", "bytes_l2",
                  "bytes_stored", "bytes_hbm_written", "sim_wall_s", "clock_mhz", "time_ms_boost",
                  "time_ms_sustained", "sustained_clock_mhz", "power_w", "energy_mj")
"""The columns every non-GEMM sweep row has (hopsim/cli/family_sweep.py); busy_<unit> and
wait_<role>_<reason> follow the run."""
BANDWIDTH_COLUMNS = FAMILY_COLUMNS + ("bytes_moved", "gb_per_s")


def _gemm_check(point: dict) -> object:
    names = set(GemmParams.__dataclass_fields__)
    p = GemmParams(**{k: v for k, v in point.items() if k in names})
    inputs.gemm_limits(p, False)
    return p


def _fields(point: dict, cls) -> dict:
    return {k: v for k, v in point.items() if k in cls.__dataclass_fields__}


@dataclass(frozen=True)
class Family:
    """One kernel family of `hopsim sweep`: knobs, default point, point check, sweep function,
    result columns (the `--y` choices besides busy_*/wait_* and the knobs)."""

    name: str
    knobs: tuple[Knob, ...]
    base: Callable[[], dict]
    check: Callable[[dict], object]
    fn: str
    columns: tuple[str, ...]

    def default(self) -> dict:
        """Every knob at its default, and `gpu` h100_sxm."""
        return {**self.base(), "gpu": "h100_sxm"}


def _membound(name: str) -> Family:
    return Family(name, MEMBOUND_KNOBS, lambda: {"family": name, **_dict(MemParams(family=name))},
                  lambda pt: MemParams(**_fields(pt, MemParams)), "hopsim.cli.family_sweep:simulate_point",
                  BANDWIDTH_COLUMNS)


def _rowwise(name: str) -> Family:
    return Family(name, ROWWISE_KNOBS, lambda: {"family": name, **_dict(RowParams(family=name))},
                  lambda pt: RowParams(**_fields(pt, RowParams)), "hopsim.cli.family_sweep:simulate_point",
                  BANDWIDTH_COLUMNS)


def _dict(params) -> dict:
    return {k: getattr(params, k) for k in params.__dataclass_fields__ if k != "family"}


def _attention_base() -> dict:
    d = _dict(AttnParams())
    d.pop("scale")
    return {"family": "attention", **d}


FAMILIES: dict[str, Family] = {
    "gemm": Family("gemm", KNOBS, lambda: GemmParams().to_dict(), _gemm_check, "hopsim.gemm_sim:simulate_point",
                   GEMM_COLUMNS),
    "vecadd": _membound("vecadd"), "copy": _membound("copy"),
    "rowsum": _rowwise("rowsum"), "softmax": _rowwise("softmax"),
    "tmacopy": Family("tmacopy", TMACOPY_KNOBS, lambda: {"family": "tmacopy", **_dict(TmaCopyParams())},
                      lambda pt: TmaCopyParams(**_fields(pt, TmaCopyParams)),
                      "hopsim.cli.family_sweep:simulate_point", BANDWIDTH_COLUMNS),
    "attention": Family("attention", ATTENTION_KNOBS, _attention_base,
                        lambda pt: AttnParams(**_fields(pt, AttnParams)),
                        "hopsim.cli.family_sweep:simulate_point", FAMILY_COLUMNS + ("tflops",)),
}


def family(name: str) -> Family:
    """The family called `name`, else InputError naming the valid ones."""
    fam = FAMILIES.get(str(name).strip().lower())
    if fam is None:
        raise InputError("family", name, "one of " + ", ".join(FAMILIES))
    return fam


def all_flags() -> dict[str, list[tuple[str, Knob]]]:
    """Every knob flag of every family: flag -> [(family, knob)] (one flag may serve several)."""
    out: dict[str, list] = {}
    for fam in FAMILIES.values():
        for kn in fam.knobs:
            out.setdefault(kn.flag, []).append((fam.name, kn))
    return out
