"""The TMA copy family of the memory-bound portfolio (issue 15 item 3): its held-out H100 points and
the GPU pieces that run kernels/cuda/tmacopy.cu (runner: python3 -m validation.portfolio_runs
--family tmacopy). The point list is pure Python (no cupy); cupy is imported only when a point runs.

Kernel contract (the IR twin: kernels/membound/tmacopy.py): out = in, a row-major rows x cols
f16/f32 tensor, box_rows x box_cols TMA boxes with the given swizzle, `stages` shared-memory stages
of the box footprint rounded up to 1024 B, one warp per CTA; grid = (tile columns, tile rows), one
CTA per tile (`ctas_per_sm` None), or (ctas_per_sm x SMs, 1) persistent CTAs. Tensor maps: cuTensorMapEncodeTiled, dims {cols, rows},
stride {cols x element bytes}, box {box_cols, box_rows}, element strides 1, no interleave, L2
promotion 256B, OOB fill none; in and out are distinct cudaMalloc allocations. Bytes moved per
launch: 2 x the tensor (read once, written once).

Plans, picked by the held-out set name (`portfolio_runs --set`, $HOPSIM_PORTFOLIO_SET;
validation/portfolio.py):
  heldout1  POINTS (measured 2026-11-24 after the freeze at 6172b92): an L2-resident tensor (8 MB,
            16 MB moved) to 1 GB, f16 and f32, boxes from 8 to 256 rows and 16 B to 256 B inner,
            every swizzle, 1..6 stages, one CTA per tile and 1..3 persistent CTAs per SM. Also what a
            set name without a TMA copy plan (heldout2) runs.
  heldout3  HELDOUT3_POINTS (chosen 2026-11-24 before the third freeze): 24 points, every one a
            (dtype, shape, box, swizzle, stages, CTAs) never measured; mostly boxes heldout1 never
            used (8..256 rows including 48, 96 and 192; inner bytes below the swizzle span), tensors
            of non-power-of-two shapes from 9 MB (L2-resident) to 1.25 GB, 1..8 stages, one CTA per
            tile and 1..4 persistent CTAs per SM.
  heldout4  heldout4_points() (drawn 2026-11-24 before the seventh freeze, SEED4 1920261124): 24
            points, slot j enumerating dtype, swizzle, stages 1..8 and the CTA mode (one CTA per tile
            or 1..4 persistent CTAs per SM, 12 each) and drawing from its own seeded stream the box
            (persistent slots: small boxes, 8..64 rows of 16..64 B, the class heldout3 missed most),
            the tensor bytes (three bins from L2-resident to 1.25 GB) and the shape; a draw that is
            not a valid launch (TmaCopyParams), has more than TILES_MAX4 tiles, or whose point was
            planned before, is redrawn.
  heldout5  heldout5_points() (drawn 2026-11-25 before the eighth freeze, SEED5 2020261125): heldout4's
            design with the new seed and the top tensor-bytes bin capped at 256..512 MB (BYTE_BINS5);
            24 points, none planned before.
They are held out: measured after the model is frozen, never simulated before.
"""

from __future__ import annotations

import math
import random

import numpy as np

from isa.errors import InputError
from kernels.membound.tmacopy import TmaCopyParams
from validation import portfolio as pf

FAMILY = "tmacopy"
KERNEL = "tmacopy"
SOURCE = "kernels/cuda/tmacopy.cu"
THREADS = 32
ESIZE = {"f16": 2, "f32": 4}
SPAN = {"32B": 32, "64B": 64, "128B": 128}

#: (dtype, rows, cols, box_rows, box_cols, swizzle, stages, ctas_per_sm or None = one CTA per tile)
POINTS = (
    ("f16", 2048, 2048, 64, 64, "128B", 4, None),
    ("f16", 2048, 2048, 64, 64, "128B", 4, 1),
    ("f16", 4096, 4096, 64, 64, "128B", 4, None),
    ("f16", 4096, 4096, 32, 32, "64B", 2, None),
    ("f16", 4096, 4096, 128, 64, "128B", 3, 2),
    ("f16", 8192, 8192, 64, 64, "128B", 4, None),
    ("f16", 8192, 8192, 64, 64, "128B", 4, 1),
    ("f16", 8192, 8192, 256, 64, "128B", 2, 1),
    ("f16", 8192, 8192, 64, 16, "32B", 4, None),
    ("f16", 8192, 8192, 16, 128, "none", 1, None),
    ("f16", 8192, 8192, 128, 128, "none", 2, 2),
    ("f16", 16384, 16384, 64, 64, "128B", 4, None),
    ("f16", 16384, 16384, 128, 64, "128B", 6, 1),
    ("f16", 16384, 32768, 64, 64, "128B", 4, None),
    ("f16", 16384, 32768, 256, 64, "128B", 3, 1),
    ("f32", 2048, 2048, 32, 32, "128B", 4, None),
    ("f32", 4096, 4096, 32, 32, "128B", 4, None),
    ("f32", 4096, 4096, 64, 16, "64B", 2, 2),
    ("f32", 8192, 8192, 32, 32, "128B", 4, None),
    ("f32", 8192, 8192, 64, 8, "32B", 4, None),
    ("f32", 8192, 8192, 128, 32, "128B", 2, 1),
    ("f32", 8192, 8192, 32, 64, "none", 3, 3),
    ("f32", 16384, 16384, 32, 32, "128B", 4, None),
    ("f32", 16384, 16384, 256, 32, "128B", 2, 1),
)
HELDOUT3_POINTS = (
    ("f16", 3072, 3072, 32, 64, "128B", 4, None),
    ("f16", 1536, 8192, 48, 64, "128B", 4, None),
    ("f16", 6144, 4096, 128, 32, "64B", 3, None),
    ("f16", 5120, 5120, 256, 16, "32B", 2, None),
    ("f16", 6144, 6144, 64, 64, "128B", 2, 4),
    ("f16", 19968, 3072, 96, 32, "64B", 4, 3),
    ("f16", 12288, 6144, 8, 64, "128B", 8, None),
    ("f16", 10240, 10240, 16, 32, "64B", 6, 2),
    ("f16", 16384, 8192, 128, 64, "128B", 5, 1),
    ("f16", 12288, 12288, 64, 32, "128B", 7, None),
    ("f16", 24576, 12288, 256, 128, "none", 1, 1),
    ("f16", 24576, 24576, 192, 64, "128B", 3, None),
    ("f32", 1536, 1536, 32, 16, "128B", 4, None),
    ("f32", 2048, 3072, 64, 32, "128B", 4, None),
    ("f32", 4096, 2560, 64, 32, "128B", 2, 4),
    ("f32", 3072, 6144, 128, 16, "64B", 3, None),
    ("f32", 6144, 6144, 8, 32, "128B", 8, None),
    ("f32", 12288, 4096, 16, 16, "64B", 6, None),
    ("f32", 5120, 10240, 256, 8, "32B", 2, 2),
    ("f32", 9216, 9216, 96, 32, "128B", 3, None),
    ("f32", 8192, 12288, 256, 32, "128B", 1, None),
    ("f32", 12288, 12288, 64, 64, "none", 2, 1),
    ("f32", 16384, 12288, 128, 8, "32B", 4, None),
    ("f32", 20480, 16384, 32, 32, "128B", 4, 3),
)
SEED4 = 1920261124
#: heldout4's enumerated slot fields (slot j): CTA mode, swizzle, dtype, stages, tensor-bytes bin
CTAS4 = (None, 1, None, 2, None, 3, None, 4)
SWIZZLES4 = ("none", "32B", "64B", "128B")
BYTE_BINS4 = ((6 << 20, 12 << 20), (48 << 20, 384 << 20), (512 << 20, 1280 << 20))
BOX_ROWS4 = {"tile": (8, 16, 32, 48, 64, 96, 128, 160, 192, 256), "persistent": (8, 16, 24, 32, 48, 64)}
#: largest inner box bytes (TMA: a multiple of 16 B, at most the swizzle span; persistent slots: <= 64 B)
INNER_MAX4 = {"none": 256, "32B": 32, "64B": 64, "128B": 128}
TILES_MAX4 = 262144
"""Most tiles of a heldout4 point: heldout1's largest (f32 16384^2 in 32x32 boxes), so that simulating
a point in the comparison costs no more than points compared before."""


def _slot4(j: int, byte_bins: tuple = BYTE_BINS4) -> tuple:
    """heldout4's enumerated fields of slot j: (dtype, swizzle, stages, ctas_per_sm, bytes bin)."""
    return (("f16", "f32")[(j // 2) % 2], SWIZZLES4[(j + j // 4) % 4], 1 + (j + j // 8) % 8,
            CTAS4[j % 8], byte_bins[j % 3])


def _draw4(rng: random.Random, j: int, old: set, byte_bins: tuple = BYTE_BINS4) -> tuple | None:
    """One candidate point of slot j (a POINTS-style tuple), or None when it is not a valid launch
    (TmaCopyParams; persistent CTAs that do not fit one SM's 228 KB; more than TILES_MAX4 tiles)
    or was planned before."""
    dt, sw, st, cps, (blo, bhi) = _slot4(j, byte_bins)
    esize = ESIZE[dt]
    br = rng.choice(BOX_ROWS4["tile" if cps is None else "persistent"])
    inner = 16 * rng.randint(1, min(INNER_MAX4[sw], 256 if cps is None else 64) // 16)
    bc = inner // esize
    nbytes = math.exp(rng.uniform(math.log(blo), math.log(bhi)))
    cols = max(bc, round(math.exp(rng.uniform(math.log(1024), math.log(32768))) / bc) * bc)
    rows = max(br, round(nbytes / (esize * cols) / br) * br)
    pt = (dt, rows, cols, br, bc, sw, st, cps)
    if (rows // br) * (cols // bc) > TILES_MAX4 or pt in old:
        return None  # TmaCopyParams.tiles without building the tensor maps (most candidates end here)
    try:
        t = TmaCopyParams(rows=rows, cols=cols, dtype=dt, box_rows=br, box_cols=bc, swizzle=sw, stages=st,
                          ctas=None if cps is None else cps * 132)
    except InputError:
        return None
    if (cps is not None and cps * t.smem_bytes > 228 << 10) or t.tiles > TILES_MAX4 or pt in old:
        return None
    return pt


def heldout4_points(seed: int = SEED4, old: frozenset = frozenset(POINTS + HELDOUT3_POINTS),
                    byte_bins: tuple = BYTE_BINS4) -> tuple:
    """heldout4's 24 points (POINTS-style tuples), slot j from its own seeded stream; never one of
    `old` (POINTS or HELDOUT3_POINTS). Deterministic. heldout5_points draws the same design."""
    out = []
    for j in range(24):
        rng = random.Random(f"{seed}:tmacopy:{j}")
        while True:
            pt = _draw4(rng, j, old, byte_bins)
            if pt is not None:
                out.append(pt)
                break
    return tuple(out)


SEED5 = 2020261125
BYTE_BINS5 = BYTE_BINS4[:2] + ((256 << 20, 512 << 20),)
"""heldout5's tensor-bytes bins: heldout4's with the top one capped at 256..512 MB (heldout4 drew up to 1.25 GB),
so that the simulated comparison stays within ~30 min."""


def heldout5_points() -> tuple:
    """heldout5's 24 points: heldout4's design (slots, persistent small boxes) with SEED5 and
    BYTE_BINS5; never one of POINTS, HELDOUT3_POINTS or heldout4's. Deterministic."""
    return heldout4_points(SEED5, frozenset(POINTS + HELDOUT3_POINTS + heldout4_points()), BYTE_BINS5)


PLANS = {"heldout1": POINTS, "heldout3": HELDOUT3_POINTS, "heldout4": heldout4_points(), "heldout5": heldout5_points()}


def plan_name(size_set: str | None = None) -> str:
    """The plan a held-out set name runs: its own, or heldout1 where it has none."""
    name = size_set or pf.active_set()
    return name if name in PLANS else "heldout1"


def stage_bytes(p: dict) -> int:
    """Shared bytes of one stage: box rows x row pitch (the inner box bytes, at least the swizzle
    span when swizzled), rounded up to 1024 B (as kernels/membound/tmacopy.py)."""
    inner = p["box_cols"] * ESIZE[p["dtype"]]
    pitch = inner if p["swizzle"] == "none" else max(inner, SPAN[p["swizzle"]])
    return -(-p["box_rows"] * pitch // 1024) * 1024


def tiles(p: dict) -> tuple[int, int]:
    """(tile rows, tile columns)."""
    return p["rows"] // p["box_rows"], p["cols"] // p["box_cols"]


def launch_grid(p: dict, sms: int = 132) -> tuple[int, int]:
    """(gridDim.x, gridDim.y): (tile columns, tile rows) or (ctas_per_sm x SMs, 1)."""
    tr, tc = tiles(p)
    return (tc, tr) if p["ctas_per_sm"] is None else (p["ctas_per_sm"] * sms, 1)


def grid(p: dict, sms: int = 132) -> int:
    """CTAs of the launch."""
    x, y = launch_grid(p, sms)
    return x * y


def point_name(p: dict) -> str:
    mode = "1t" if p["ctas_per_sm"] is None else f"p{p['ctas_per_sm']}xsm"
    return (f"tmacopy_{p['dtype']}_{p['rows']}x{p['cols']}_b{p['box_rows']}x{p['box_cols']}_sw{p['swizzle']}"
            f"_s{p['stages']}_{mode}")


def points(size_set: str | None = None) -> list[dict]:
    """Every tmacopy point of the plan of held-out set `size_set` (default: the active set's;
    plan_name), in run order (the same keys as validation/portfolio.py's points)."""
    out = []
    plan = plan_name(size_set)
    for dt, r, c, br, bc, sw, st, cps in PLANS[plan]:
        p = {"family": FAMILY, "set": plan, "variant": f"b{br}x{bc}_sw{sw}_s{st}_{'1t' if cps is None else f'p{cps}'}",
             "kernel": KERNEL, "source": SOURCE, "dtype": dt, "rows": r, "cols": c, "box_rows": br, "box_cols": bc,
             "swizzle": sw, "stages": st, "ctas_per_sm": cps, "threads_per_cta": THREADS}
        p["name"] = point_name(p)
        p.update(stage_bytes=stage_bytes(p), dynamic_smem=st * stage_bytes(p), box_bytes=br * bc * ESIZE[dt],
                 tiles=tiles(p)[0] * tiles(p)[1], grid_132sm=grid(p), bytes_per_array=r * c * ESIZE[dt],
                 bytes_moved=2 * r * c * ESIZE[dt])
        out.append(p)
    return out


# ---------------------------------------------------------------- GPU pieces (cupy, lazily)
def make_set(p: dict, rs, cp):
    """(in, out) on the device: in standard normal in the dtype (never NaN), out uninitialised."""
    dt = cp.float16 if p["dtype"] == "f16" else cp.float32
    a = rs.standard_normal((p["rows"], p["cols"]), dtype=cp.float32).astype(dt)
    return a, cp.empty_like(a)


def tensor_map(p: dict, ptr: int, encode) -> np.ndarray:
    """The kernel's tensor map of a buffer at `ptr` as a by-value kernel argument; `encode` is
    validation.harness.encode_tensor_map (cuTensorMapEncodeTiled)."""
    tm = encode(p["dtype"], ptr, [p["cols"], p["rows"]], [p["cols"] * ESIZE[p["dtype"]]],
                [p["box_cols"], p["box_rows"]], p["swizzle"])
    arr = np.zeros(1, dtype=[("opaque", "<u8", (16,))])
    arr["opaque"][0] = np.frombuffer(tm, dtype="<u8")
    return arr


def launcher(fn, p: dict, g: tuple[int, int], s, encode):
    """A no-argument callable launching the copy of set `s` (tensor maps encoded once)."""
    tr, tc = tiles(p)
    args = (tensor_map(p, s[0].data.ptr, encode), tensor_map(p, s[1].data.ptr, encode), np.int32(tr * tc),
            np.int32(tc), np.int32(p["box_rows"]), np.int32(p["box_cols"]), np.int32(p["stages"]),
            np.int32(p["stage_bytes"]), np.int32(p["box_bytes"]))
    smem = p["dynamic_smem"]

    def launch():
        fn((g[0], g[1]), (THREADS,), args, shared_mem=smem)
    return launch


def check(p: dict, launch, s, cp, sync) -> dict:
    """Poison out with all-ones bits (NaN in f16 and f32), launch once, compare bit for bit."""
    a, out = s
    u = cp.uint16 if p["dtype"] == "f16" else cp.uint32
    ones = 0xFFFF if p["dtype"] == "f16" else 0xFFFFFFFF
    out.view(u).fill(ones)
    launch()
    sync(p["name"] + " check launch")
    bad = int(cp.count_nonzero(out.view(u) != a.view(u)))
    unwritten = int(cp.count_nonzero(out.view(u) == ones))
    res = {"passed": bad == 0 and unwritten == 0, "elements": p["rows"] * p["cols"], "mismatched": bad,
           "unwritten": unwritten, "reference": "in (bit for bit)", "inputs": f"standard normal {p['dtype']}, fresh per point",
           "poison": f"0x{ones:X} (NaN)"}
    if not res["passed"]:
        raise RuntimeError(f"check failed: {bad} of {res['elements']} elements differ, {unwritten} unwritten")
    return res
