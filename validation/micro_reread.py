"""L2 re-read hit share vs footprint on the H100, reads only and with stores to fresh lines
(calibration data for hopsim's L2 re-read rule, timing/dispatch_residency._classify_walk; issue 15):

    python3 -m validation.micro_reread --out DIR      # DIR/reread.jsonl, DIR/summary.txt (~10-25 s)
    python3 -m validation.micro_reread --plan         # the sweep and its planned launch time

Why: membw's reuse family timed 20-us launches (rounds 1 and 4), too short past 48 MiB to tell a
20-50 % hit share from noise. Here every footprint F (4..512 MiB) is re-read for `rounds` passes in
ONE launch of ~4 GiB of reads (rounds = 4 GiB / F, at least 3), at store/read ratios 0, 0.5 and 1
(stores to lines never written before in the launch: the softmax kernels' output rows); kernels in
validation/cuda/micro_reread.cu. All SMs, one CTA of 32 warps per SM, 4 float4 ld.global.cg in
flight per thread (membw's reuse shape).

Method 1 (time): before every timed launch an untimed read of a 512 MiB flush buffer evicts the
footprint (clean lines, nothing to write back). Launches of 1 and of R rounds alternate, REPEATS
each (CUDA events); the per-round time of a re-read is (median t_R - median t_1) / (R - 1) (launch
overhead and the cold first round cancel). With tau(F) = that time / F (s per byte read) at the
same store ratio: hit share h(F) = (tau_hbm - tau(F)) / (tau_hbm - tau_l2), tau_hbm = mean tau of
the 256 and 512 MiB footprints (5-10x L2: every re-read misses), tau_l2 = min tau of 4, 8 and 16
MiB (every re-read hits; the smallest have few loads per thread per round, so the min). Linear in the bytes served from each level, so with stores (whose HBM
write-backs cost the same at every F) it is an approximation; the raw times are all recorded.
Method 2 (probe): after one R-round launch of each point, ONE thread reads PROBE_LINES lines spread
evenly over the footprint (stream order) as a dependent chain and times each load (clock64).
Latencies split at a threshold set by the 8 MiB probe (all hits) and the 512 MiB probe (all
misses); the share below it is the share of the footprint still in L2 after a pass: an upper bound
of the next pass's hit share (equal when the resident set is stable pass to pass, zero-hit LRU
streaming would still show ~L2/F resident here). Clocks are never changed; NVML clocks recorded.
No hopsim or simpy import: runs on the GPU machine with numpy, cupy and the stdlib.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

from validation.micro_runner import compile_cached, cupy, module, sync
from validation.provenance import append_jsonl, device_provenance, nvidia_smi_clocks, record_dict

STEM = "micro_reread"
KIND = "microbench_reread"
MIB, GIB = 1 << 20, 1 << 30
FOOTPRINTS_MIB = (4, 8, 16, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 72, 80, 96, 128, 256, 512)
STORE_EVERY = (0, 2, 1)                # 0: reads only; 2: store/read 0.5; 1: store/read 1.0
HBM_BASE_MIB, L2_BASE_MIB = (256, 512), (4, 8, 16)
PROBE_HIT_MIB, PROBE_MISS_MIB = 8, 512   # the probes that set the hit/miss latency threshold
SMEM_PIN = 120 * 1024                  # dynamic smem per CTA (unused): one CTA per SM (228 KiB per SM)
READ_PER_LAUNCH = 4 * GIB              # bytes read by the long launch (rounds = this / F, >= 3)
MIN_ROUNDS = 3
REPEATS = 7
FLUSH_BYTES = 512 * MIB
PROBE_LINES = 2048
WARPS_PER_SM = 32
EST_BPS = 1.5e12                       # conservative bytes/s (reads + stores) for the planned time


def store_ratio(st_every: int) -> float:
    """Bytes stored per byte read by rr_stream for its st_every argument."""
    return {0: 0.0, 1: 1.0, 2: 0.5}[st_every]


def rounds_for(fp: int) -> int:
    """Rounds of the long launch of footprint `fp` bytes."""
    return max(MIN_ROUNDS, READ_PER_LAUNCH // fp)


def plan() -> list[dict]:
    """Every point in run order (footprint outer, store ratio inner)."""
    return [{"name": f"reread_{f}MiB_st{store_ratio(s):g}", "footprint_bytes": f * MIB, "st_every": s,
             "store_ratio": store_ratio(s), "rounds": rounds_for(f * MIB)}
            for f in FOOTPRINTS_MIB for s in STORE_EVERY]


def planned_seconds(pts: list[dict]) -> float:
    """Launch time of the sweep at EST_BPS plus the flushes (compile and setup not included)."""
    t = 0.0
    for p in pts:
        moved = p["footprint_bytes"] * (1 + p["store_ratio"])
        t += REPEATS * ((1 + p["rounds"]) * moved + 2 * FLUSH_BYTES) / EST_BPS
    return t


# ---------------------------------------------------------------- derivation (pure)
def _med(xs: list[float]) -> float:
    return float(np.median(np.asarray(xs, dtype=float)))


def per_round_s(ms_r1: list[float], ms_rr: list[float], rounds: int) -> float:
    """Seconds per re-read round: (median t_R - median t_1) / (R - 1)."""
    return (_med(ms_rr) - _med(ms_r1)) * 1e-3 / (rounds - 1)


def probe_threshold(hit_lat: list[int], miss_lat: list[int]) -> float:
    """Cycles that split an L2 hit from an HBM miss: halfway between the hit probe's 95th and the
    miss probe's 5th percentile when they are apart, else halfway between the medians."""
    h95, m5 = float(np.percentile(hit_lat, 95)), float(np.percentile(miss_lat, 5))
    if h95 < m5:
        return (h95 + m5) / 2
    return (_med(hit_lat) + _med(miss_lat)) / 2


def derive(recs: list[dict]) -> list[dict]:
    """Per store ratio and footprint: tau (ns per KiB read), hit share from time (method 1) and
    resident share from the latency probe (method 2). `recs` are the point records of a run."""
    out = []
    for ratio in sorted({r["params"]["store_ratio"] for r in recs}):
        rows = {r["params"]["footprint_bytes"] // MIB: r for r in recs if r["params"]["store_ratio"] == ratio}
        tau = {f: r["results"]["per_round_s"] / (f * MIB) for f, r in rows.items()}
        hbm = [tau[f] for f in HBM_BASE_MIB if f in tau]
        l2 = [tau[f] for f in L2_BASE_MIB if f in tau]
        t_hbm = sum(hbm) / len(hbm) if hbm else None
        t_l2 = min(l2) if l2 else None
        lo, hi = PROBE_HIT_MIB, PROBE_MISS_MIB
        thr = (probe_threshold(rows[lo]["results"]["probe_cycles"], rows[hi]["results"]["probe_cycles"])
               if lo in rows and hi in rows else None)
        for f in sorted(rows):
            lat = np.asarray(rows[f]["results"]["probe_cycles"], dtype=float)
            h = (t_hbm - tau[f]) / (t_hbm - t_l2) if t_hbm is not None and t_l2 is not None and t_hbm > t_l2 else None
            out.append({"store_ratio": ratio, "footprint_mib": f, "ns_per_kib": tau[f] * 1024 * 1e9,
                        "hit_share_time": h, "resident_share_probe": float((lat < thr).mean()) if thr else None,
                        "probe_threshold_cycles": thr})
    return out


def summary(recs: list[dict], derived: list[dict]) -> str:
    """The table: one line per (store ratio, footprint)."""
    lines = [f"{len(recs)} points; hit share from time (method 1), resident share from the probe (method 2)",
             f"{'st/rd':>5} {'MiB':>5} {'ns/KiB':>8} {'hit(time)':>9} {'resident(probe)':>15}"]
    for d in derived:
        h = "-" if d["hit_share_time"] is None else f"{d['hit_share_time']:.3f}"
        p = "-" if d["resident_share_probe"] is None else f"{d['resident_share_probe']:.3f}"
        lines.append(f"{d['store_ratio']:>5g} {d['footprint_mib']:>5} {d['ns_per_kib']:>8.3f} {h:>9} {p:>15}")
    return "\n".join(lines)


# ---------------------------------------------------------------- GPU side
class _Bench:
    """The buffers and kernels of one run (allocated once)."""

    def __init__(self):
        cp = cupy()
        props = cp.cuda.runtime.getDeviceProperties(0)
        self.grid, self.block = props["multiProcessorCount"], 32 * WARPS_PER_SM
        big = max(FOOTPRINTS_MIB) * MIB
        self.src = cp.random.RandomState(7).standard_normal(big // 4, dtype=cp.float32).view(cp.uint32)
        self.flush = cp.random.RandomState(8).standard_normal(FLUSH_BYTES // 4, dtype=cp.float32).view(cp.uint32)
        dst_bytes = max(rounds_for(f * MIB) * f * MIB for f in FOOTPRINTS_MIB)
        self.dst = cp.zeros(dst_bytes // 4, dtype=cp.uint32)
        self.sink = cp.zeros(self.grid * self.block, dtype=cp.uint32)
        self.lat = cp.zeros(PROBE_LINES, dtype=cp.int64)
        self.stream = module(STEM).get_function("rr_stream")
        self.stream.max_dynamic_shared_size_bytes = SMEM_PIN
        self.probe_fn = module(STEM).get_function("rr_probe")

    def _stream(self, buf, nbytes: int, rounds: int, st_every: int) -> None:
        self.stream((self.grid,), (self.block,), (buf, np.int64(nbytes // 16), np.int32(rounds), np.int32(st_every),
                                                  self.dst, self.sink), shared_mem=SMEM_PIN)

    def do_flush(self) -> None:
        self._stream(self.flush, FLUSH_BYTES, 1, 0)

    def timed(self, fp: int, rounds: int, st_every: int) -> float:
        """ms of one launch after a flush (CUDA events)."""
        cp = cupy()
        self.do_flush()
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        self._stream(self.src, fp, rounds, st_every)
        e1.record()
        e1.synchronize()
        return float(cp.cuda.get_elapsed_time(e0, e1))

    def probe(self, fp: int, rounds: int, st_every: int) -> list[int]:
        """Per-line load latencies (cycles) after a flush and one R-round launch."""
        self.do_flush()
        self._stream(self.src, fp, rounds, st_every)
        self.probe_fn((1,), (32,), (self.src, np.int32(PROBE_LINES), np.int64(fp // 4 // PROBE_LINES), self.lat,
                                    self.sink))
        sync("probe")
        return [int(v) for v in cupy().asnumpy(self.lat)]


def run_point(b: _Bench, p: dict) -> dict:
    """One point: REPEATS alternating 1-round and R-round launches, then the probe."""
    fp, r, s = p["footprint_bytes"], p["rounds"], p["st_every"]
    b.timed(fp, r, s)  # warm-up (module load, clocks)
    ms1, msr = [], []
    for _ in range(REPEATS):
        ms1.append(b.timed(fp, 1, s))
        msr.append(b.timed(fp, r, s))
    sync(p["name"])
    lat = b.probe(fp, r, s)
    return {"params": {**p, "grid": b.grid, "block": b.block, "vec_bytes": 16, "loads_in_flight_per_thread": 4,
                       "flush_bytes": FLUSH_BYTES, "smem_pin_bytes": SMEM_PIN, "probe_lines": PROBE_LINES, "kernel": "rr_stream"},
            "results": {"ms_r1": ms1, "ms_rR": msr, "per_round_s": per_round_s(ms1, msr, r),
                        "probe_cycles": lat}}


def execute(out: pathlib.Path) -> int:
    t0 = time.time()
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "reread.jsonl"
    if jsonl.exists():
        jsonl.unlink()
    print(f"compile {STEM}: {compile_cached(STEM)[1]}", flush=True)
    prov = device_provenance()
    prov["clocks_before"] = nvidia_smi_clocks()
    (out / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    b = _Bench()
    recs = []
    for p in plan():
        rec = record_dict(KIND, p["name"], run_point(b, p), prov)
        recs.append(rec)
        append_jsonl(jsonl, rec)
        res = rec["results"]
        print(f"{p['name']:<24} R={p['rounds']:<4} per round {res['per_round_s'] * 1e6:9.2f} us "
              f"({time.time() - t0:5.1f} s)", flush=True)
    derived = derive(recs)
    clocks_after = nvidia_smi_clocks()
    append_jsonl(jsonl, record_dict(KIND, "reread_derived", {"params": {"hbm_base_mib": list(HBM_BASE_MIB),
                                                                        "l2_base_mib": list(L2_BASE_MIB)},
                                                             "results": {"rows": derived,
                                                                         "clocks_after": clocks_after}}, prov))
    text = summary(recs, derived)
    (out / "summary.txt").write_text(text + "\n")
    print(text)
    print(f"done in {time.time() - t0:.1f} s -> {jsonl}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python3 -m validation.{STEM}", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=pathlib.Path, help="directory for reread.jsonl, summary.txt, provenance.json")
    ap.add_argument("--plan", action="store_true", help="print the sweep and its planned launch time, run nothing")
    a = ap.parse_args(argv)
    pts = plan()
    if a.plan:
        for p in pts:
            print(f"{p['name']:<24} rounds {p['rounds']}")
        print(f"{len(pts)} points, planned launch time {planned_seconds(pts):.1f} s (+ compile, setup)")
        return 0
    if a.out is None:
        print("--out: missing; give the directory for the records (e.g. $OUT/reread)", file=sys.stderr)
        return 2
    return execute(a.out)


if __name__ == "__main__":
    raise SystemExit(main())
