"""The attention tile family (issue 15 item 3): its held-out H100 points and the GPU pieces that run
kernels/cuda/attention.cu (runner: python3 -m validation.portfolio_runs --family attention). The
point list is pure Python (no cupy); cupy is passed in where a point runs.

Kernel contract (the IR twin: kernels/attention/, `hopsim simulate attention --seq N --head-dim D
--kv-block B --stages S --q-tiles T`, variant single, out f32, no overlap): O = softmax(Q K^T scale)
V, Q (T*64 x D), K and V (N x D) f16 row-major, O f32 row-major; one CTA of 128 threads per 64-row
Q tile (grid T), every CTA reads the whole K and V; scale 1/sqrt(D), passed as c = f32(scale log2 e).
Tensor maps (cuTensorMapEncodeTiled): dims {D, rows}, stride {2 D} bytes, box {64, 64 (Q) or
kv_block (K, V)}, 128B swizzle, L2 promotion 256B. Dynamic shared memory: AttnParams.dynamic_smem_bytes
(Q + S stages of K and V + 1024 B of alignment slack). Q, K, V, O are distinct cudaMalloc allocations.

Check: fresh standard-normal Q, K, V rounded to f16 (never zeros), O poisoned with NaN bits, one
launch; every element of O must lie within the bound of kernels/attention/reference.py around the
float64 softmax(Q K^T scale) V of the same f16 values (computed with cupy, in row chunks): the
bound counts P's rounding to f16 (2^-11 relative), ex2.approx's documented 2 ulp, the f32 roundings
of the scores, the rescales and the accumulations (derived there, not fitted); none may keep the
poison. A point that fails is timed anyway and recorded with the failure as its error.

Points: D in {64, 128}, kv_block in {64, 128}, stages 1..4 (every one that fits 227 KB), seq from
512 to 8192 keys (8 to 64 KV blocks), 66 to 1024 CTAs (half a wave to ~7.8 waves of 132 SMs at one
CTA per SM), sized so that simulating each stays under about a minute. Chosen by structure before any simulation of them (held out: measured after the
model is frozen and compared once).

Plans, picked by the held-out set name (`portfolio_runs --set`, $HOPSIM_PORTFOLIO_SET;
validation/portfolio.py): heldout1 POINTS (above; also what a set name without an attention plan
runs), heldout4 heldout4_points() (drawn 2026-11-24 before the seventh freeze, SEED4 1920261124):
13 points, slot j enumerating (head_dim, kv_block) (d128/kv128, heldout1's worst, in 4 slots; the
others in 3) and the stages (1..4, the most that fits where fewer fit), and drawing from its own
seeded stream the CTA count (bins below, at and above one wave of 132 SMs) and seq (512..8192 keys);
a draw over STEPS_MAX CTA x KV-block steps or planned before is redrawn; heldout5
heldout5_points() (drawn 2026-11-25 before the eighth freeze, SEED5 2020261125): the same design with
the new seed, 13 points, none planned before.
"""

from __future__ import annotations

import math
import random

import numpy as np

from kernels.attention import AttnParams
from kernels.attention.reference import error_bound, reference
from validation import portfolio as pf

FAMILY = "attention"
SOURCE = "kernels/cuda/attention.cu"
THREADS = 128
LOG2E = math.log2(math.e)
CHECK_ROWS = 1024             # Q rows per chunk of the float64 check (keeps the check's memory small)

#: (head_dim, kv_block, stages, seq, q_tiles)
POINTS = (
    (64, 64, 1, 512, 66),
    (64, 64, 2, 1024, 132),
    (64, 64, 2, 2048, 528),
    (64, 64, 4, 4096, 132),
    (64, 128, 3, 2048, 264),
    (64, 128, 2, 2048, 1024),
    (128, 64, 2, 1024, 132),
    (128, 64, 4, 512, 1024),
    (128, 64, 2, 2048, 396),
    (128, 128, 1, 2048, 132),
    (128, 128, 2, 2048, 264),
    (128, 128, 3, 4096, 528),
    (128, 128, 2, 8192, 132),
)
"""At most ~17K CTA x KV-block steps per point: `simulate attention --timing-only` costs about 1.3 ms
of one core per step (measured on a non-held-out size), twice per point in the comparison."""

SEED4 = 1920261124
STEPS_MAX = 17000
"""Most CTA x KV-block steps of a heldout4 point (POINTS' bound above)."""
#: heldout4's enumerated (head_dim, kv_block) per slot (j % 4) and CTA-count bins (j % 3)
COMBOS4 = ((128, 128), (64, 64), (64, 128), (128, 64))
Q_TILE_BINS4 = ((66, 131), (132, 396), (397, 1024))


def _draw4(rng: random.Random, j: int, old: set) -> tuple | None:
    """One candidate (head_dim, kv_block, stages, seq, q_tiles) of slot j, or None."""
    d, kvb = COMBOS4[j % 4]
    st = 1 + (j // 4 + j) % 4
    lo, hi = Q_TILE_BINS4[j % 3]
    t = round(math.exp(rng.uniform(math.log(lo), math.log(hi))))
    seq = max(kvb, round(math.exp(rng.uniform(math.log(512), math.log(8192))) / kvb) * kvb)
    fit = AttnParams(seq=seq, head_dim=d, kv_block=kvb, stages=1, q_tiles=t).max_stages_that_fit
    pt = (d, kvb, min(st, fit), seq, t)
    return None if t * seq // kvb > STEPS_MAX or pt in old else pt


def heldout4_points(seed: int = SEED4, old: frozenset = frozenset(POINTS)) -> tuple:
    """heldout4's 13 points, slot j from its own seeded stream; never one of `old` (POINTS).
    Deterministic. heldout5_points draws the same design."""
    out = []
    for j in range(13):
        rng = random.Random(f"{seed}:attention:{j}")
        while True:
            pt = _draw4(rng, j, old)
            if pt is not None:
                out.append(pt)
                break
    return tuple(out)


SEED5 = 2020261125


def heldout5_points() -> tuple:
    """heldout5's 13 points: heldout4's design with SEED5; never one of POINTS or heldout4's."""
    return heldout4_points(SEED5, frozenset(POINTS + heldout4_points()))


PLANS = {"heldout1": POINTS, "heldout4": heldout4_points(), "heldout5": heldout5_points()}


def plan_name(size_set: str | None = None) -> str:
    """The plan a held-out set name runs: its own, or heldout1 where it has none."""
    name = size_set or pf.active_set()
    return name if name in PLANS else "heldout1"


def params(p: dict) -> AttnParams:
    """The IR twin's AttnParams of a point (validates the sizes: raises InputError if unsupported)."""
    return AttnParams(seq=p["seq"], head_dim=p["head_dim"], kv_block=p["kv_block"], stages=p["stages"],
                      q_tiles=p["q_tiles"])


def kernel_name(head_dim: int, kv_block: int) -> str:
    """The extern "C" kernel of kernels/cuda/attention.cu."""
    return f"attention_d{head_dim}_kv{kv_block}"


def point_name(d: int, kvb: int, st: int, seq: int, t: int) -> str:
    return f"attention_d{d}_kv{kvb}_s{st}_n{seq}_t{t}"


def point(d: int, kvb: int, st: int, seq: int, t: int, plan: str = "heldout1") -> dict:
    """One point dict (the same keys as the other portfolio families' points, plus the sizes) of
    the plan `plan`."""
    ap = AttnParams(seq=seq, head_dim=d, kv_block=kvb, stages=st, q_tiles=t)
    q_bytes, kv_bytes = 2 * ap.q_rows * d, 2 * 2 * seq * d
    o_bytes = 4 * ap.q_rows * d
    return {"family": FAMILY, "variant": f"d{d}_kv{kvb}_s{st}", "name": point_name(d, kvb, st, seq, t),
            "kernel": kernel_name(d, kvb), "source": SOURCE, "seq": seq, "head_dim": d, "kv_block": kvb,
            "stages": st, "q_tiles": t, "ir_variant": ap.variant, "out": ap.out, "overlap": ap.overlap,
            "threads_per_cta": THREADS, "grid_132sm": t, "dynamic_smem": ap.dynamic_smem_bytes,
            "scale": ap.softmax_scale, "c": float(np.float32(ap.softmax_scale * LOG2E)), "flops": ap.flops,
            "bytes_moved": q_bytes + kv_bytes + o_bytes,
            "bytes_accessed": q_bytes + t * kv_bytes + o_bytes, "set": plan}


def points(size_set: str | None = None) -> list[dict]:
    """Every attention point of the plan of held-out set `size_set` (default: the active set's;
    plan_name), in run order."""
    plan = plan_name(size_set)
    return [point(*x, plan=plan) for x in PLANS[plan]]


def est_launch_s(p: dict, flops_per_s: float = 100e12) -> float:
    """A deliberately low-throughput estimate of one launch (plan and batch sizes only)."""
    return max(p["flops"] / flops_per_s, 5e-6)


# ---------------------------------------------------------------- GPU pieces (cupy passed in)
def make_set(p: dict, rs, cp) -> tuple:
    """([q, k, v], o): fresh standard-normal f16 Q, K, V and an f32 output buffer."""
    rows = p["q_tiles"] * 64
    ins = [rs.standard_normal((n, p["head_dim"]), dtype=cp.float32).astype(cp.float16)
           for n in (rows, p["seq"], p["seq"])]
    return ins, cp.empty((rows, p["head_dim"]), dtype=cp.float32)


def tensor_map(p: dict, a, box_rows: int, encode) -> np.ndarray:
    """The tensor map of f16 matrix `a` (rows x head_dim) as a by-value kernel argument; `encode`
    is validation.harness.encode_tensor_map (cuTensorMapEncodeTiled, L2 promotion 256B)."""
    tm = encode("f16", a.data.ptr, [p["head_dim"], a.shape[0]], [2 * p["head_dim"]], [64, box_rows], "128B")
    arr = np.zeros(1, dtype=[("opaque", "<u8", (16,))])
    arr["opaque"][0] = np.frombuffer(tm, dtype="<u8")
    return arr


def launcher(fn, p: dict, s, encode):
    """A no-argument callable launching the kernel once on set `s` (tensor maps encoded once)."""
    (q, k, v), o = s
    args = (tensor_map(p, q, 64, encode), tensor_map(p, k, p["kv_block"], encode),
            tensor_map(p, v, p["kv_block"], encode), o, np.int32(p["seq"]), np.int32(p["stages"]),
            np.float32(p["c"]))
    g, smem = p["q_tiles"], p["dynamic_smem"]
    return lambda: fn((g,), (THREADS,), args, shared_mem=smem)


def check(p: dict, launch, s, cp, sync) -> dict:
    """Poison O, launch once; passed when every element is within the bound (kernels/attention/
    reference.py) around the float64 reference and none is unwritten."""
    (q, k, v), o = s
    o.view(cp.uint32).fill(0xFFFFFFFF)
    launch()
    sync(p["name"] + " check launch")
    ap = params(p)
    worst, outside, max_err = 0.0, 0, 0.0
    for r0 in range(0, q.shape[0], CHECK_ROWS):
        qc = q[r0:r0 + CHECK_ROWS]
        err = cp.abs(o[r0:r0 + CHECK_ROWS].astype(cp.float64) - reference(qc, k, v, ap, xp=cp))
        tol = error_bound(qc, k, v, ap, xp=cp)
        outside += int(cp.count_nonzero(~(err <= tol)))
        worst = max(worst, float(cp.nanmax(err / tol)))
        max_err = max(max_err, float(cp.nanmax(err)))
        del err, tol
    unwritten = int(cp.count_nonzero(o.view(cp.uint32) == 0xFFFFFFFF))
    return {"passed": outside == 0 and unwritten == 0, "elements": int(o.size), "outside_bound": outside,
            "worst_error_over_bound": worst, "max_abs_error": max_err, "unwritten": unwritten,
            "reference": "cupy float64 softmax(Q K^T scale) V of the f16 inputs; bound: "
                         "kernels/attention/reference.py (P rounded to f16, ex2.approx 2 ulp, f32 roundings)",
            "inputs": "standard normal, rounded to f16, fresh per point", "poison": "0xFFFFFFFF (NaN)"}
