"""The persistent tmacopy loop timed per tile and phase on the H100 (validation/cuda/micro_tma_loop.cu;
issue 15, tmacopy): which part of a tile's time is the load, the fence, the store and its `.read`.

    python3 -m validation.micro_tma_loop --out DIR    # DIR/tma_loop.jsonl, summary.txt, provenance.json (~30 s)
    python3 -m validation.micro_tma_loop --plan       # the sweep and its planned time, runs nothing

Why: with the TMA-store mechanism of microbench__tma_store (a store's `.read` completes when its data
has left the SM at 32 B/cycle + 47 cycles, whatever loads are in flight) the persistent small-box
tmacopy points flip from too slow to too fast (-36..-49 %): about one load latency per tile per CTA
is missing. That record could not say where: its HBM rows re-read the same addresses every launch
(L2 hits), it had no fence.proxy.async, no wait_group.read loop and one CTA per SM.

What: kernels/cuda/tmacopy.cu's persistent loop (load box -> mbarrier wait -> fence.proxy.async ->
TMA store -> commit -> wait_group.read before refilling the stage; lag 1 and S - 1 loads ahead for
S >= 2 stages, lag 0 and one ahead for S = 1), NTILES tiles per CTA, thread 0 stamping clock64 per
tile: load issued, load landed (mbarrier wait returned), store + commit issued, wait_group.read
returned. Modes: full (tmacopy), load_only (no fence/store/commit/wait: the refill follows the
landing), no_fence (store right after the landing). Sweep: the held-out set heldout4's persistent
box shapes (8x8 f32 .. 64x24 f16, the worst points' shapes) and a 16 KiB box; stages 1, 2, 4; 1, 2,
4 CTAs per SM (pinned by the dynamic shared memory each CTA asks for, checked from %smid); the
source L2-resident (an 8 MiB tensor, walked again and again after a warm-up launch), cold in HBM
in tmacopy's row-major tile order (a >= 512 MiB tensor, L2 flushed by reading FLUSH_MIB before
every launch: neighbouring tiles still share lines and 256-B promotions, as in the real kernel), or
cold and spread (consecutive tiles mapped by an odd multiplier over the whole tensor: every load
fresh lines; the miss shows as the first load's latency against the L2 rows'); grid: the CTAs of
SM 0 alone (every SM gets the same CTAs, the others return at once) or all SMs.
No hopsim or simpy import: numpy, cupy and the stdlib (runs on the GPU machine). Clocks are never
changed; nvidia-smi clocks recorded before and after.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
import time

import numpy as np

from validation.harness import _as_param, encode_tensor_map
from validation.micro_runner import compile_cached, cupy, module
from validation.provenance import append_jsonl, device_provenance, nvidia_smi_clocks, record_dict

STEM = "micro_tma_loop"
KIND = "microbench_tma_loop"
ESIZE = {"f16": 2, "f32": 4}
SPAN = {"32B": 32, "64B": 64, "128B": 128}
#: (dtype, box rows, box cols, swizzle): heldout4's persistent shapes (the worst points' boxes) + 16 KiB
BOXES = (("f32", 8, 8, "none"), ("f32", 32, 4, "128B"), ("f32", 24, 8, "128B"), ("f16", 64, 8, "32B"),
         ("f16", 64, 16, "32B"), ("f16", 64, 24, "64B"), ("f16", 128, 64, "128B"))
STAGES = (1, 2, 4)
CTAS_PER_SM = (1, 2, 4)
WHERE = ("l2", "hbm", "hbm_spread")
GRIDS = ("1sm", "all")
MODES = {"full": 0, "load_only": 1, "no_fence": 2}
NTILES = 96                 # tiles per CTA (stamps: 4 x int64 each in shared memory)
TILES_C = 256               # tile columns of every tensor (a power of two: the spread walk)
HBM_BYTES, L2_BYTES = 1 << 30, 8 << 20   # largest tensor (cold) and the L2-resident one
SPREAD_MULT = 0x9E3779B1    # odd: i -> i * mult mod tiles is a bijection of the tile grid
FLUSH_MIB = 384             # read before every launch of a cold (hbm*) point: 7.7x the 50 MiB L2
SMEM_PER_SM = 228 * 1024    # shared memory of one SM (docs/hopper-facts.md: 228 KB, 227 KB per CTA)
CTA_RESERVED = 1024         # the driver's per-CTA reservation
STATIC_SMEM = 1024          # tma_loop's static segment (ptxas: 1024 bytes smem: the mbarriers, padded)
REPS, WARM = 3, 1           # timed and untimed launches per point
HDR = 8                     # int64 header per worker in out
EST_S_PER_LAUNCH = 0.004    # planned seconds per launch (launch, sync, copy back; flush included)


# ---------------------------------------------------------------- the sweep (pure)
def stage_bytes(dtype: str, box_rows: int, box_cols: int, swizzle: str) -> int:
    """One stage: box rows x row pitch (inner bytes, at least the swizzle span when swizzled) rounded
    up to 1024 B: stage_bytes of validation/portfolio_tmacopy.py (tmacopy's stages)."""
    inner = box_cols * ESIZE[dtype]
    pitch = inner if swizzle == "none" else max(inner, SPAN[swizzle])
    return -(-box_rows * pitch // 1024) * 1024


def dynamic_smem(cps: int) -> int:
    """Dynamic shared memory per CTA that lets exactly `cps` CTAs share one SM (cps + 1 do not fit)."""
    return SMEM_PER_SM // cps - CTA_RESERVED - STATIC_SMEM - 1024


def tensor_shape(dtype: str, box_rows: int, box_cols: int, where: str) -> tuple[int, int]:
    """(rows, cols): TILES_C tile columns and the most power-of-two tile rows within the byte budget
    (HBM_BYTES cold, L2_BYTES resident)."""
    budget = L2_BYTES if where == "l2" else HBM_BYTES
    cols = TILES_C * box_cols
    tile_row = cols * ESIZE[dtype] * box_rows
    return box_rows * (1 << int(math.log2(budget // tile_row))), cols


def box_name(box: tuple) -> str:
    dt, br, bc, sw = box
    return f"{dt}_b{br}x{bc}_sw{sw}"


def point_name(p: dict) -> str:
    return f"{box_name(p['box'])},s{p['stages']},c{p['cps']},{p['where']},{p['grid']},{p['mode']}"


def feasible(box: tuple, stages: int, cps: int) -> bool:
    """The stages and the stamps fit the shared memory that pins `cps` CTAs per SM."""
    return stages * stage_bytes(*box) + 32 * NTILES <= dynamic_smem(cps)


def plan() -> list[dict]:
    """Every point in run order (box, where outermost: one tensor map pair per box and residency)."""
    pts = []
    for box in BOXES:
        for where in WHERE:
            rows, cols = tensor_shape(box[0], box[1], box[2], where)
            for stages in STAGES:
                for cps in CTAS_PER_SM:
                    if not feasible(box, stages, cps):
                        continue
                    for grid in GRIDS:
                        for mode in MODES:
                            p = {"box": box, "dtype": box[0], "box_rows": box[1], "box_cols": box[2],
                                 "swizzle": box[3], "where": where, "rows": rows, "cols": cols,
                                 "stages": stages, "cps": cps, "grid": grid, "mode": mode,
                                 "stage_bytes": stage_bytes(*box), "box_bytes": box[1] * box[2] * ESIZE[box[0]]}
                            p["name"] = point_name(p)
                            pts.append(p)
    return pts


def planned_seconds(pts: list[dict]) -> float:
    return len(pts) * (REPS + WARM) * EST_S_PER_LAUNCH


# ---------------------------------------------------------------- derivation (pure)
def lag_dist(stages: int) -> tuple[int, int]:
    """tmacopy's refill rule: (lag, distance) = (1, S - 1) for S >= 2 stages, (0, 1) for S = 1."""
    return (1, stages - 1) if stages >= 2 else (0, 1)


def _med(x) -> float:
    x = np.asarray(x, dtype=float).ravel()
    return float(np.median(x)) if x.size else float("nan")


def stamps(arr: np.ndarray, ntiles: int) -> tuple[np.ndarray, np.ndarray]:
    """(header (workers, HDR), stamps (workers, ntiles, 4)) of one launch's out rows."""
    arr = np.asarray(arr, dtype=np.int64).reshape(-1, HDR + 4 * ntiles)
    return arr[:, :HDR], arr[:, HDR:].reshape(-1, ntiles, 4)


def phases(runs: list[np.ndarray], ntiles: int, stages: int) -> dict:
    """Per-tile phase medians (SM cycles) over workers and launches (runs: out rows of each launch).
    Steady tiles k >= stages (the prologue excluded); the wait and refill only where they happen."""
    lag, dist = lag_dist(stages)
    k0 = min(stages, ntiles - 2)
    hd = np.concatenate([stamps(a, ntiles)[0] for a in runs])
    st = np.concatenate([stamps(a, ntiles)[1] for a in runs]).astype(float)
    ld_i, ld_l, st_i, rd = st[:, :, 0], st[:, :, 1], st[:, :, 2], st[:, :, 3]
    ks = np.arange(k0, ntiles)
    kw = np.arange(max(k0, lag), ntiles - dist)  # iterations that wait_group.read and refill
    period = (ld_l[:, -1] - ld_l[:, k0]) / (ntiles - 1 - k0)
    wall = (hd[:, 2] - hd[:, 1]) / ntiles
    ns = (hd[:, 4] - hd[:, 3]).astype(float)
    return {
        "tile_cycles": _med(period),
        "tile_cycles_p10": float(np.percentile(period, 10)), "tile_cycles_p90": float(np.percentile(period, 90)),
        "wall_cycles_per_tile": _med(wall),
        "load_latency_first": _med(ld_l[:, 0] - ld_i[:, 0]),
        "load_latency": _med(ld_l[:, ks] - ld_i[:, ks]),
        "load_latency_p90": float(np.percentile(ld_l[:, ks] - ld_i[:, ks], 90)),
        "mbar_stall": _med(ld_l[:, ks] - rd[:, ks - 1]),
        "store_issue": _med(st_i[:, ks] - ld_l[:, ks]),
        "read_wait": _med(rd[:, kw] - st_i[:, kw]),
        "refill_issue": _med(ld_i[:, kw + dist] - rd[:, kw]),
        "sm_mhz": _med((hd[:, 2] - hd[:, 1]) / np.where(ns > 0, ns, np.nan) * 1e3),
        "lag": lag, "loads_ahead": dist,
    }


def placement(hdr: np.ndarray, cps: int, grid: str) -> dict:
    """Where the workers ran: SMs used, most workers on one SM (must be cps), SM 0's workers."""
    sm = hdr[:, 0].astype(int)
    counts = np.bincount(sm)
    return {"workers": int(hdr.shape[0]), "sms_used": int(np.count_nonzero(counts)),
            "max_workers_per_sm": int(counts.max()), "sm0_workers": int(counts[0]) if counts.size else 0,
            "pinned_ok": bool(counts.max() == cps and (grid != "1sm" or np.all(sm == 0)))}


def attribute(results: dict) -> list[dict]:
    """Per (box, stages, CTAs per SM, grid, residency): the store's cost (full - load_only), the
    fence's (full - no_fence), the latency-bound share and the miss check (first-load latency over
    the L2 point's). `results`: point name -> {params, results} as the run records them."""
    by = {}
    for r in results.values():
        p = r["params"]
        by[(box_name(tuple(p["box"])), p["stages"], p["cps"], p["grid"], p["where"], p["mode"])] = r["results"]
    rows = []
    for (box, s, c, g, where, mode), res in sorted(by.items()):
        if mode != "full":
            continue
        lo, nf, l2 = by.get((box, s, c, g, where, "load_only")), by.get((box, s, c, g, where, "no_fence")), \
            by.get((box, s, c, g, "l2", "full"))
        t = res["tile_cycles"]
        rows.append({
            "box": box, "stages": s, "cps": c, "grid": g, "where": where,
            "tile_cycles": t, "sm_cycles_per_tile": t / c,
            "store_cost": None if lo is None else t - lo["tile_cycles"],
            "fence_cost": None if nf is None else t - nf["tile_cycles"],
            "period_over_latency": t * res["loads_ahead"] / res["load_latency"] if res["load_latency"] > 0 else None,
            "first_latency_over_l2": None if l2 is None else res["load_latency_first"] - l2["load_latency_first"],
            "tile_cycles_over_l2": None if l2 is None else t - l2["tile_cycles"],
        })
    return rows


def summary(rows: list[dict]) -> str:
    """One line per full-loop point: per-tile cycles and what they split into."""
    f = lambda v: "-" if v is None else f"{v:.0f}"  # noqa: E731
    lines = ["per CTA, SM cycles per tile (medians); store = full - load_only, fence = full - no_fence, "
             "lat+ = first-load latency - the L2 point's",
             f"{'box':<20} {'S':>1} {'c':>1} {'grid':>4} {'where':>10} {'tile':>6} {'/SM':>6} {'store':>6} "
             f"{'fence':>6} {'T*D/lat':>7} {'lat+':>6} {'vs l2':>6}"]
    for r in rows:
        pol = "-" if r["period_over_latency"] is None else f"{r['period_over_latency']:.2f}"
        lines.append(f"{r['box']:<20} {r['stages']:>1} {r['cps']:>1} {r['grid']:>4} {r['where']:>10} "
                     f"{f(r['tile_cycles']):>6} {f(r['sm_cycles_per_tile']):>6} {f(r['store_cost']):>6} "
                     f"{f(r['fence_cost']):>6} {pol:>7} {f(r['first_latency_over_l2']):>6} "
                     f"{f(r['tile_cycles_over_l2']):>6}")
    return "\n".join(lines)


# ---------------------------------------------------------------- GPU side
class _Bench:
    """Buffers, the kernel and the tensor maps of one run."""

    def __init__(self):
        cp = self.cp = cupy()
        print(f"compile {STEM}: {compile_cached(STEM)[1]}", flush=True)
        self.nsm = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
        self.fn = module(STEM).get_function("tma_loop")
        self.fn.max_dynamic_shared_size_bytes = dynamic_smem(1)
        try:
            self.fn.preferred_shared_memory_carveout = 100  # all of the unified L1 as shared memory
            self.carveout = 100
        except (AttributeError, TypeError, ValueError):
            self.carveout = None
        self.src = cp.arange(HBM_BYTES // 4, dtype=cp.uint32)
        self.dst = cp.zeros(HBM_BYTES // 4, dtype=cp.uint32)
        self.flush_buf = cp.ones(FLUSH_MIB * (1 << 20) // 4, dtype=cp.uint32)
        self.ticket = cp.zeros(1, dtype=cp.uint32)
        self.out = cp.zeros(max(CTAS_PER_SM) * self.nsm * (HDR + 4 * NTILES), dtype=cp.int64)
        self.maps = {}

    def flush(self) -> None:
        self.flush_buf.sum(dtype=self.cp.uint64)  # a 384 MiB read evicts the L2 (50 MiB)

    def tmaps(self, p: dict):
        key = (p["box"], p["where"])
        if key not in self.maps:  # one pair at a time (points run box by box, residency by residency)
            dims, stride, box = [p["cols"], p["rows"]], [p["cols"] * ESIZE[p["dtype"]]], [p["box_cols"], p["box_rows"]]
            self.maps = {key: (_as_param(encode_tensor_map(p["dtype"], self.src.data.ptr, dims, stride, box, p["swizzle"])),
                               _as_param(encode_tensor_map(p["dtype"], self.dst.data.ptr, dims, stride, box, p["swizzle"])))}
        return self.maps[key]

    def launch(self, p: dict) -> tuple[float, np.ndarray, int]:
        """One launch: (ms by CUDA events, the workers' out rows, tickets taken)."""
        cp = self.cp
        workers = p["cps"] * (1 if p["grid"] == "1sm" else self.nsm)
        tiles_r = p["rows"] // p["box_rows"]
        lmap, smap = self.tmaps(p)
        args = (lmap, smap, np.int32(MODES[p["mode"]]), np.int32(NTILES), np.int32(workers),
                np.int32(p["grid"] == "1sm"), np.int32(TILES_C), np.int32(TILES_C * tiles_r - 1),
                np.uint32(SPREAD_MULT if p["where"] == "hbm_spread" else 1), np.int32(p["box_rows"]),
                np.int32(p["box_cols"]), np.int32(p["stages"]), np.int32(p["stage_bytes"]),
                np.int32(p["box_bytes"]), self.ticket, self.out)
        if p["where"] != "l2":
            self.flush()
        self.ticket.fill(0)
        self.out.fill(0)
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        self.fn((p["cps"] * self.nsm,), (32,), args, shared_mem=dynamic_smem(p["cps"]))
        e1.record()
        e1.synchronize()
        tickets = int(self.ticket.get()[0])  # CTAs that took a ticket (1-SM grids: the ones on SM 0)
        rows = cp.asnumpy(self.out[:min(tickets, workers) * (HDR + 4 * NTILES)])
        return float(cp.cuda.get_elapsed_time(e0, e1)), rows, tickets


def run_point(b: _Bench, p: dict) -> dict:
    """WARM untimed and REPS timed launches of one point; phases, placement and (1-SM grids) the
    first timed launch's stamps relative to each worker's start."""
    runs, ms, tickets = [], [], []
    for i in range(WARM + REPS):
        t, rows, tk = b.launch(p)
        if tk == 0:
            raise RuntimeError(f"{p['name']}: no CTA took a ticket (none ran on SM 0?)")
        if i >= WARM:
            runs.append(rows)
            ms.append(t)
            tickets.append(tk)
    hdr, st = stamps(runs[0], NTILES)
    res = {**phases(runs, NTILES, p["stages"]), **placement(hdr, p["cps"], p["grid"]), "ms": ms, "tickets": tickets}
    moved = hdr.shape[0] * NTILES * p["box_bytes"] * (1 if p["mode"] == "load_only" else 2)
    res["gbytes_per_s"] = moved / (_med(ms) * 1e-3) / 1e9
    if p["grid"] == "1sm":
        res["stamps_rel"] = (st - hdr[:, 1][:, None, None]).tolist()
    params = {k: v for k, v in p.items() if k != "name"}
    params.update(ntiles=NTILES, threads=32, dynamic_smem=dynamic_smem(p["cps"]), flush_mib=FLUSH_MIB,
                  spread_mult=SPREAD_MULT if p["where"] == "hbm_spread" else 1, carveout=b.carveout,
                  kernel="tma_loop")
    return {"params": params, "results": res}


def execute(out: pathlib.Path) -> int:
    t0 = time.time()
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "tma_loop.jsonl"
    if jsonl.exists():
        jsonl.unlink()
    b = _Bench()
    prov = device_provenance()
    prov["clocks_before"] = nvidia_smi_clocks()
    (out / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    results = {}
    for p in plan():
        rec = run_point(b, p)
        results[p["name"]] = rec
        append_jsonl(jsonl, record_dict(KIND, p["name"], rec, prov))
        r = rec["results"]
        print(f"{p['name']:<44} tile {r['tile_cycles']:7.0f} lat {r['load_latency']:6.0f} "
              f"read_wait {r['read_wait']:6.0f} pinned {r['pinned_ok']} ({time.time() - t0:5.1f} s)", flush=True)
    rows = attribute(results)
    append_jsonl(jsonl, record_dict(KIND, "tma_loop_derived", {"params": {"ntiles": NTILES},
                                                                "results": {"rows": rows,
                                                                            "clocks_after": nvidia_smi_clocks()}}, prov))
    text = summary(rows)
    (out / "summary.txt").write_text(text + "\n")
    print(text)
    print(f"done in {time.time() - t0:.1f} s -> {jsonl}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python3 -m validation.{STEM}", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=pathlib.Path, help="directory for tma_loop.jsonl, summary.txt, provenance.json")
    ap.add_argument("--plan", action="store_true", help="print the sweep and its planned time, run nothing")
    a = ap.parse_args(argv)
    pts = plan()
    if a.plan:
        for p in pts:
            print(p["name"])
        print(f"{len(pts)} points, planned launch time {planned_seconds(pts):.1f} s (+ compile, setup)")
        return 0
    if a.out is None:
        print("--out: missing; give the directory for the records (e.g. $OUT/tma_loop)", file=sys.stderr)
        return 2
    return execute(a.out)


if __name__ == "__main__":
    raise SystemExit(main())
