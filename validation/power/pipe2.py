"""The GEMM-like pipe taken apart (issue 13 phase 3; kernel `pipe2` in
validation/cuda/power_light.cu, same sampler, runner and provenance as validation/power/light.py).

Why: light_pipe_req8192_s2 (one producer lane streaming 40 KB stages by TMA, one consumer
warpgroup running wgmma on them) draws ~130 W more than the model's sum of its parts (tensor at
43% duty + 7.3 TB/s of TMA, each measured alone); its _fixsrc variant showed that data toggling is
not the cause. These points remove one ingredient at a time at the SAME stage rate, so the extra
can be attributed to (a) TMA fills and wgmma operand reads meeting in shared memory, (b) the
mbarrier handshakes, or (c) tensor work fed through the pipeline:

  full      as pipe (TMA stream + handshakes + wgmma)
  notma     handshakes + wgmma on stages filled once (no TMA in the loop)
  nowgmma   TMA stream + handshakes; the consumer releases stages without wgmma
  nobar     wgmma on fixed stages + an independent TMA stream into other stages (no coupling)
  baronly   handshakes only

Pacing: `period` SM cycles per stage (clock64; the producer, and in nobar the consumer too,
starts at most one stage per period), chosen so that 132 SMs stay below the 700 W cap at 1980 MHz
(the unpaced pipe is capped). `reuse` 2 issues 8 wgmma per 40 KB stage instead of 4: at twice the
period it keeps the wgmma rate and halves the byte and stage rates (per-wgmma vs per-byte terms).
Unpaced `full` points on 66 SMs measure the pipe as a GEMM runs it, below the cap; one unpaced
on every SM repeats light_pipe_req8192_s2 (capped) with this kernel.

Family "light_pipe2" (light_pipe2.jsonl); `event` names wgmma; `rates_per_s` (and
`steady_rates_per_s`) has every counter: wgmma, bytes (TMA bytes of the loop), requests,
mbar_arrives (arrive instructions), mbar_waits (completed waits, per waiting warp), stages
(consumer iterations). cupy is imported lazily (GPU machine only).
"""

from __future__ import annotations

import numpy as np

from validation.power import benches, light

MODES = {"full": 0, "notma": 1, "nowgmma": 2, "nobar": 3, "baronly": 4}
COUNTERS = ("wgmma", "bytes", "requests", "mbar_arrives", "mbar_waits", "stages")
MAX_STAGES = 4                  # PIPE_MAX_STAGES in power_light.cu
SMEM_LIMIT = 227 * 1024         # H100 dynamic shared memory per CTA (opt-in maximum)
THREADS = 160                   # one consumer warpgroup + the producer warp
POINT_S = light.POINT_S
#: CTA b starts reading the 8 MB source at b x SPREAD x 40 KB (mod its size): every SM on its own data
#: (every run before the seventh session); 0 = every SM reads the same addresses (SHARED_POINTS)
SPREAD = 7919
#: the source's size, MiB: light.L2_BUF_BYTES (L2-resident) unless a point says otherwise (SOURCE_POINTS)
SRC_MB = 8
PERIOD = 2400                   # SM cycles per stage: 4 wgmma (~512 cycles) = ~21% tensor duty,
                                # 40 KB / 2400 cycles = 4.5 TB/s on 132 SMs at 1980 MHz


def smem_bytes(mode: str, stages: int) -> int:
    """Dynamic shared memory of one CTA: S stages (2 S in nobar: the stream's own) + alignment,
    at least light.RESIDENT_SMEM (over half an SM: one CTA per SM in every mode)."""
    return max(stages * light.PIPE_STAGE * (2 if mode == "nobar" else 1) + 1024, light.RESIDENT_SMEM)


def check(mode: str, req_bytes: int, stages: int, reuse: int, period: int, sms: int | None) -> None:
    """ValueError naming the parameter, its value and what is valid."""
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r} is not valid; valid: {', '.join(MODES)}")
    if req_bytes <= 0 or req_bytes % 16 or light.PIPE_STAGE % req_bytes:
        raise ValueError(f"req_bytes: {req_bytes} is not valid; give a multiple of 16 dividing {light.PIPE_STAGE}")
    if not 1 <= stages <= MAX_STAGES:
        raise ValueError(f"stages: {stages} is not valid; give 1..{MAX_STAGES}")
    if smem_bytes(mode, stages) > SMEM_LIMIT:
        raise ValueError(f"stages: {stages} is not valid for mode {mode}; "
                         f"{smem_bytes(mode, stages)} B of shared memory > {SMEM_LIMIT} B")
    if reuse not in (1, 2):
        raise ValueError(f"reuse: {reuse} is not valid; give 1 or 2")
    if period < 0:
        raise ValueError(f"period: {period} is not valid; give SM cycles >= 0 (0: unpaced)")
    if mode == "nobar" and period == 0:
        raise ValueError("period: 0 is not valid for mode nobar; its two halves need a pace")
    if sms is not None and sms <= 0:
        raise ValueError(f"sms: {sms} is not valid; give CTAs >= 1 (one per SM)")


def stage_cycles(res: dict, ctas: int) -> dict:
    """SM cycles per consumer stage and per 40 KB TMA stage of one CTA (one per SM) over the steady
    tail (steady median SM clock x CTAs / the chip's steady rate): compare with `period` to see
    whether the pace held (None: no rate). (The records of the first pipe2 run and of the ladder
    carry this field without the x CTAs: per chip, 132 or 66 times too small.)"""
    mhz = ((res.get("power_steady_summary") or {}).get("sm_mhz") or {}).get("median")
    rates = res.get("steady_rates_per_s") or {}

    def per(rate):
        return mhz * 1e6 * ctas / rate if mhz and rate else None

    return {"consumer": per(rates.get("stages")),
            "tma": per((rates.get("bytes") or 0) / light.PIPE_STAGE), "sm_mhz": mhz}


def pipe2_point(mode: str, req_bytes: int, stages: int, duration_s: float, reuse: int = 1, period: int = 0,
                sms: int | None = None, launch_s: float = 0.2, spread: int = SPREAD,
                src_mb: int = SRC_MB, group: int = 1) -> dict:
    """`sms` CTAs (default: every SM, one each) of the pipe in `mode` (see the module docstring);
    `spread` SPREAD: every CTA reads its own data, 0: every CTA reads the same addresses; `src_mb`:
    the source's size in MiB (8: L2-resident, as every earlier run; beyond the 50 MB L2: from HBM)."""
    import cupy as cp  # noqa: PLC0415

    check(mode, req_bytes, stages, reuse, period, sms)
    n = sms or benches.sm_count()
    buf = light._random_f16_buffer(src_mb << 20)
    smem = smem_bytes(mode, stages)
    fn = benches.kernel(light.STEM, "pipe2", smem)
    counts = cp.zeros(len(COUNTERS), dtype=cp.uint64)
    smids = cp.zeros(n, dtype=cp.uint32)
    sink = cp.zeros(256, dtype=cp.float32)
    args = (buf, np.uint64(buf.size), counts, smids, sink, np.uint64(int(launch_s * 1e9)), np.uint32(req_bytes),
            np.int32(stages), np.int32(MODES[mode]), np.int32(reuse), np.int64(period), np.uint32(spread), np.uint32(group))
    call = lambda: fn((n,), (THREADS,), args, shared_mem=smem)  # noqa: E731
    res = benches.measured(duration_s, lambda ps: light._chained(call, counts, COUNTERS, duration_s, launch_s, ps))
    src = "" if spread else ", every SM on the same source addresses"
    res.update(light._smids(smids, n), event=f"wgmma m64n256k16 f16->f32 (pipe2 mode {mode}, {4 * reuse} per 40 KB stage{src})")
    res["stage_cycles"] = stage_cycles(res, n)
    return res


def point_name(mode: str, req_bytes: int, stages: int, reuse: int = 1, period: int = 0,
               sms: int | None = None) -> str:
    """pipe2_<mode>[_req<B>]_s<S>[_r<reuse>]_p<period>|_unpaced[_sm<N>]; the duty ladder's points
    are named pipe2ladder_... (selected apart from the first run's with --only pipe2ladder_), the
    high-rate points (HIGH_POINTS) pipe2hi_... (--only pipe2hi_)."""
    req = f"_req{req_bytes}" if mode in ("full", "nowgmma", "nobar") else ""
    r = f"_r{reuse}" if reuse != 1 else ""
    p = f"_p{period}" if period else "_unpaced"
    ladder = (mode, req_bytes, stages, reuse) == ("full", 8192, 2, 1) and period in LADDER_PERIODS
    high = (mode, req_bytes, stages, reuse, period, sms) in HIGH_POINTS
    stem = "pipe2hi" if high else "pipe2ladder" if ladder else "pipe2"
    return f"{stem}_{mode}{req}_s{stages}{r}{p}" + (f"_sm{sms}" if sms else "")


#: the high-rate points (sixth session; named pipe2hi_..., `--only pipe2hi_,idle_after`): the pipe
#: with 8 wgmma per 40 KB stage (reuse 2), unpaced, on 33..132 SMs: per-SM tensor rates as a GEMM
#: runs them (4-7 TFLOP/s per SM; the first run and the ladder reached 3), below the cap on part of
#: the chip and at the cap on all of it, to settle the form of the pipe's excess over the model's parts
HIGH_POINTS = tuple(("full", 8192, st, 2, 0, sms) for st, sms in ((2, 33), (2, 66), (2, 99), (2, None),
                                                                  (4, 66), (4, None))) + (
    ("notma", 8192, 2, 2, 0, 66),)
#: the duty ladder's periods (its points are named pipe2ladder_..., so that `--only` picks them alone)
LADDER_PERIODS = (2000, 1700, 1450, 1250, 1600, 1200)
#: (mode, req_bytes, stages, reuse, period, sms): what each point isolates is in the report of
#: the run (docs/guide/power-model.md); the paced ones share PERIOD (same stage rate) unless noted
POINTS = (
    ("full", 8192, 2, 1, PERIOD, None),         # the pipe at the common rate
    ("full", 2048, 2, 1, PERIOD, None),         # x4 requests, same bytes: per-request term
    ("full", 8192, 4, 1, PERIOD, None),         # deeper pipe, same rates: in-flight/waiting
    ("full", 8192, 2, 1, 2 * PERIOD, None),     # half of every rate: step vs slope
    ("full", 8192, 2, 2, 2 * PERIOD, None),     # full's wgmma rate, half its bytes and stages
    ("notma", 8192, 2, 1, PERIOD, None),        # handshakes + wgmma, no TMA
    ("notma", 8192, 2, 2, 2 * PERIOD, None),    # the same wgmma rate, half the handshakes
    ("nowgmma", 8192, 2, 1, PERIOD, None),      # TMA + handshakes, no wgmma
    ("nowgmma", 2048, 2, 1, PERIOD, None),      # ... x4 requests
    ("nobar", 8192, 2, 1, PERIOD, None),        # TMA and wgmma side by side, uncoupled
    ("baronly", 8192, 2, 1, PERIOD, None),      # handshakes alone at the common rate
    ("baronly", 8192, 2, 1, 0, None),           # handshakes as fast as they go
    ("full", 8192, 2, 1, 0, None),              # = light_pipe_req8192_s2 (capped): ties to that record
    ("full", 8192, 2, 1, 0, 66),                # the unpaced pipe on half the SMs: below the cap
    ("full", 8192, 4, 1, 0, 66),                # ... 4 stages (more in flight: higher rates)
    ("full", 2048, 2, 1, 0, 66),                # ... 2 KB requests
) + tuple(
    # the duty ladder (fifth session, after the first run): the excess over the model's parts was
    # ~+13 W at PERIOD on 132 SMs, +41 W unpaced on 66 SMs, +132 W unpaced on 132 SMs (capped);
    # which quantity does it follow between? `--only pipe2ladder_,idle_after`
    ("full", 8192, 2, 1, per, sms) for per, sms in ((2000, None), (1700, None), (1450, None), (1250, None),
                                                    (1600, 66), (1200, 66))
) + HIGH_POINTS


#: the shared-source points (seventh session; `--only pipe2sh_,idle_after`): does the L2's part of the
#: pipe's power follow the bytes the L2 delivers to the SMs or the distinct bytes it reads? Each
#: (mode, req_bytes, stages, reuse, period, sms) runs twice back to back, spread (every SM its own
#: data, as every earlier pipe run) and same (every SM the same addresses in the same order: the same
#: delivered bytes, 1/CTAs of the distinct lines at a time): the unpaced high-rate pipe on 66 SMs
#: (below the cap) and on every SM (at the cap), the paced pipe at PERIOD on every SM (below the cap),
#: and its TMA stream alone (nowgmma, no tensor work)
SHARED_POINTS = (("full", 8192, 2, 2, 0, 66), ("full", 8192, 2, 2, 0, None), ("full", 8192, 2, 1, PERIOD, None),
                 ("nowgmma", 8192, 2, 1, PERIOD, None))


def shared_name(mode: str, req_bytes: int, stages: int, reuse: int, period: int, sms: int | None,
                spread: int) -> str:
    """pipe2sh_<spread|same>_<the point_name without its stem>."""
    tail = point_name(mode, req_bytes, stages, reuse, period, sms).split("_", 1)[1]
    return f"pipe2sh_{'spread' if spread else 'same'}_{tail}"


#: the source-size points (seventh session; `--only pipe2src_,idle_after`): the paced pipe (half the
#: common stage rate, 1.9 TB/s on 132 SMs, within HBM's bandwidth) with its source in L2 (8 MiB),
#: spanning most of it (32 MiB) and far beyond it (256 MiB: every byte from HBM), with and without
#: tensor work: what a byte costs on its way from HBM through L2 to the SM, as a GEMM's inputs
#: travel, against the L2-resident byte every other pipe point measures
SOURCE_POINTS = tuple((mode, mb) for mode in ("nowgmma", "full") for mb in (8, 32, 256))


#: the share-group points (seventh session; `--only pipe2grp_,idle_after`): the paced pipe (PERIOD,
#: 3.8 TB/s) and its TMA stream alone (nowgmma) on every SM, with groups of g consecutive CTAs reading
#: the same addresses together (g = 1: every SM its own data; 132: every SM the same, as the `same`
#: shared-source points): does the saving of shared reads grow as (g - 1) / g of the bytes, as the
#: model's shared bytes (delivered - distinct) would have it, for the 2-16 SMs of a GEMM's shared tile?
GROUP_POINTS = tuple((mode, g) for mode in ("nowgmma", "full") for g in (1, 2, 4, 16, 132))
#: ... and unpaced on every SM (`--only pipe2grpu_,idle_after`): with sharing the L2 delivers beyond its
#: ~7 TB/s of distinct reads, as 128x128-tile GEMMs are simulated to (8-9 TB/s); the full pipe is at
#: the cap there, so its clock tests the fed-L2 term's variable and form at GEMM-like delivered rates
GROUP_UNPACED = (("full", 1), ("full", 16), ("full", 132), ("nowgmma", 1), ("nowgmma", 16))


def _point(name: str, mode: str, req: int, stages: int, reuse: int, period: int, sms: int | None,
           **extra) -> dict:
    """One checked point of family light_pipe2 (POINT_S of load); `extra`: pipe2_point's other
    keywords (spread, src_mb, group) where the point sets them."""
    check(mode, req, stages, reuse, period, sms)
    return {"family": "light_pipe2", "name": name, "seconds": POINT_S, "fn": pipe2_point,
            "kw": {"mode": mode, "req_bytes": req, "stages": stages, "reuse": reuse, "period": period,
                   "sms": sms, "duration_s": POINT_S, **extra}}


def plan() -> list[dict]:
    """The pipe2 points (family 'light_pipe2'), POINT_S of load each."""
    pts = []
    for (mode, g), period in [*((x, PERIOD) for x in GROUP_POINTS), *((x, 0) for x in GROUP_UNPACED)]:
        stem, pace = ("pipe2grp", f"p{PERIOD}") if period else ("pipe2grpu", "unpaced")
        pts.append(_point(f"{stem}_{mode}_req8192_s2_{pace}_g{g}", mode, 8192, 2, 1, period, None, group=g))
    for mode, mb in SOURCE_POINTS:
        pts.append(_point(f"pipe2src_{mode}_req8192_s2_p{2 * PERIOD}_src{mb}mb", mode, 8192, 2, 1, 2 * PERIOD, None,
                          src_mb=mb))
    for key in SHARED_POINTS:
        pts += [_point(shared_name(*key, spread), *key, spread=spread) for spread in (SPREAD, 0)]
    pts += [_point(point_name(*key), *key) for key in POINTS]
    return pts
