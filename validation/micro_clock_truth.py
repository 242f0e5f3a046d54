"""Does the SM clock NVML reports under the power cap equal the clock the SMs really run at?
(record microbench__clock_truth)

    python3 -m validation.micro_clock_truth --out DIR        # GPU machine
    python3 -m validation.micro_clock_truth --list           # anywhere

Why: every GEMM record's "measured clock" is NVML's SM clock, sampled every 10 ms and
time-weighted over the steady window of a sustained benchmark loop. The simulator's "time at the
measured clock" diagnostic divides its cycles by that clock. Under the 700 W cap the governor may
move the clock faster than the sampler sees (or report a target clock the SMs do not hold), so
the NVML clock and the clock the SMs count with (clock64 against %globaltimer) may differ. If they
do, the SM model's error "at the measured clock" on capped points mixes a clock error with a
cycle error, and the sustained clock the power model predicts (fitted to NVML clocks of burners)
is not the clock that sets the time.

Method: development GEMM configurations (kernels/cuda/gemm_sm90.cu compiled with
-DGEMM_PROFILE=1: per CTA {smid, clock64, %globaltimer} at entry and after its last store; the
same kernel as validation/cycle_profile.py) run as a sustained benchmark loop exactly like the
GEMM records (harness._sustained: CUDA-graph batches back to back, NVML sampled every 10 ms,
statistics over the steady tail). The profile buffers form a ring of RING slots, so after the
loop they hold the last RING launches (all inside the last batch, i.e. at steady state). Per
configuration the record has:
    nvml_*            NVML SM clock over the steady window (time-weighted mean, median, min, max)
                      and over the last batch alone (nvml_last_tw_mhz)
    eff_clock_mhz_*   per launch, the median over SMs of (cycles / ns) of that SM's busy span,
                      then median / min / max over the RING launches
    eff_clock_mhz_agg per launch, sum over SMs of busy cycles / sum of busy ns (then median)
    kernel_cycles     per launch (max over SMs of the busy span), median over the RING launches
    probe_*           then PROBE_ROUNDS rounds of ~PROBE_S of launches each (every launch profiled):
                      per round the clock64/%globaltimer clock of all its launches and NVML's
                      time-weighted clock over the round; means over the rounds (the steady-state
                      comparison; the ring above is one snapshot at the loop's end)
    cycles_from_event the steady window's median event time per launch x NVML's tw clock: the
                      cycle count a comparison at the "measured clock" implies
Configurations: development configurations only (tags of committed gemm/gemm_cycles records;
never a held-out one). Numbers go to a record with provenance; no model number is read here.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import pathlib
import statistics
import sys
import time

import numpy as np

from kernels.params import GemmParams
from validation import harness as H
from validation.gemm_profile import RING, busy_sums, compile_profile, effective_clocks, ring_loop
from validation.power.nvml_sampler import PowerSampler
from validation.provenance import device_provenance, write_record

RECORDS = pathlib.Path(__file__).resolve().parent / "records" / "h100"
PROBE_ROUNDS, PROBE_S = 25, 0.04
SUSTAIN_S, STEADY_S = 2.0, 1.0

#: development configurations (tags of committed gemm records), heavy (power-capped) to light
TAGS = (
    "8192x8192x8192_f16f32_tn_128x256x64_s4_r128_128B_ws2_cauto_stmatrix_grouped_9a4883",
    "4096x4096x4096_f16f32_tn_128x256x64_s4_r128_128B_ws2_cauto_stmatrix_grouped_88edbf",
    "4096x4096x4096_f16f32_tn_128x128x64_s6_r128_128B_ws1_cauto_stmatrix_grouped_998e08",
    "8192x8192x4096_f16f32_tn_128x128x64_s4_r128_128B_single_cauto_direct_row_29e28a",
    "4096x4096x4096_bf16f32_tn_256x128x64_s3_r128_128B_ws2_cauto_stmatrix_grouped_9dc50d",
    "4096x4096x4096_f16f32_nn_256x64x64_s4_r32_64B_single_cauto_direct_row_480c38",
    "2048x2048x8192_f16f32_tn_128x128x64_s4_r128_128B_single_cauto_direct_row_65683b",
    "4096x4096x4096_bf16f32_tn_128x128x64_s4_r64_32B_single_cauto_direct_row_202369",
    "4096x4096x4096_f16f32_tn_128x128x64_s1_r8_128B_single_cauto_direct_row_10d8c9",
    "1024x1024x1024_f16f32_tn_128x256x64_s4_r128_128B_ws2_cauto_stmatrix_grouped_aec370",
)


def configurations(records: pathlib.Path = RECORDS) -> list[GemmParams]:
    """The TAGS' parameters, read from their committed gemm records."""
    out = []
    for tag in TAGS:
        hits = sorted(records.glob(f"gemm__*__{tag}.json")) or sorted(records.glob(f"gemm_cycles__{tag}.json"))
        if not hits:
            raise SystemExit(f"micro_clock_truth: no committed record with tag {tag}")
        out.append(GemmParams.from_dict(json.loads(hits[0].read_text())["params"]))
    return out


def last_batch_nvml(out: dict) -> float | None:
    """Time-weighted NVML SM clock over the last batch of the sustained loop (zero-order hold)."""
    tr, smp = out.get("trajectory") or {}, out.get("samples") or {}
    ends, ms = tr.get("t_end_s") or [], tr.get("ms_per_launch") or []
    ts, mhz = smp.get("t_s") or [], smp.get("sm_mhz") or []
    if not ends or not ts:
        return None
    t1 = ends[-1]
    t0 = t1 - ms[-1] * out["launches_per_batch"] / 1e3
    return _tw([(t, f) for t, f in zip(ts, mhz) if f is not None], t0, t1)


def measure(p: GemmParams, comp) -> dict:
    """One sustained loop of the profile build; NVML and clock64/globaltimer clocks compared."""
    kern = H.GemmKernel(p, comp)
    sets, n = H._kernel_sets(kern, 7)
    out, prof = ring_loop(kern, sets, n, SUSTAIN_S, STEADY_S, RING)
    res = effective_clocks(prof, p.grid)
    res["probe_rounds"] = probe_rounds(kern, sets, n, out.get("time_ms") or 1.0)
    rounds = [r for r in res["probe_rounds"] if r["eff_mhz"] and r["nvml_tw_mhz"]]
    if rounds:
        res["probe_eff_mhz_mean"] = statistics.fmean(r["eff_mhz"] for r in rounds)
        res["probe_nvml_tw_mhz_mean"] = statistics.fmean(r["nvml_tw_mhz"] for r in rounds)
        res["probe_eff_over_nvml"] = res["probe_eff_mhz_mean"] / res["probe_nvml_tw_mhz_mean"]
    res["nvml_last_tw_mhz"] = last_batch_nvml(out)
    for k in ("time_ms", "time_ms_mean", "sm_clock_mhz_tw", "sm_clock_mhz_median", "sm_clock_mhz_min",
              "sm_clock_mhz_max", "power_w_nvml_tw", "power_w_counter", "reasons", "launches_per_batch",
              "drift_pct", "timing_method"):
        res[k] = out.get(k)
    if res.get("sm_clock_mhz_tw") and res.get("time_ms"):
        res["cycles_from_event"] = res["time_ms"] * 1e-3 * res["sm_clock_mhz_tw"] * 1e6
    if res.get("eff_clock_mhz_median") and res.get("sm_clock_mhz_tw"):
        res["eff_over_nvml_tw"] = res["eff_clock_mhz_median"] / res["sm_clock_mhz_tw"]
    del sets
    return res


def round_clock(prof: np.ndarray, grid: int) -> float | None:
    """Sum over launches and SMs of busy cycles / sum of busy ns (MHz) of one probe round."""
    sums = [busy_sums(slot, grid) for slot in prof]
    tot_c, tot_n = sum(c for c, _ in sums), sum(n for _, n in sums)
    return tot_c / tot_n * 1e3 if tot_n else None


def probe_rounds(kern, sets, n: int, time_ms: float) -> list[dict]:
    """Right after the sustained loop (the chip at its steady clock): PROBE_ROUNDS rounds of about
    PROBE_S of launches each, every launch profiled into its own slot; per round the clock64 /
    %globaltimer clock of all its launches and NVML's time-weighted SM clock over the round."""
    import cupy as cp  # noqa: PLC0415  (GPU only)

    p = kern.p
    per = max(4, min(512, int(PROBE_S / (time_ms * 1e-3)) + 1))
    prof = cp.zeros((per, p.grid * 5), dtype=cp.uint64)
    rounds = []
    with PowerSampler(period_s=0.01) as ps:
        for _ in range(PROBE_ROUNDS):
            t_a = time.perf_counter()
            for j in range(per):
                maps, c = sets[j % n][0], sets[j % n][1]
                kern.fn((p.grid,), (p.threads,), (maps[0], maps[1], c, prof[j]), shared_mem=kern.smem)
            cp.cuda.Device().synchronize()
            t_b = time.perf_counter()
            rounds.append({"t_a": t_a, "t_b": t_b, "eff_mhz": round_clock(cp.asnumpy(prof), p.grid),
                           "launches": per})
        samples = list(ps.samples)
    for r in rounds:
        r["nvml_tw_mhz"] = tw_clock(samples, r.pop("t_a"), r.pop("t_b"))
    return rounds


def tw_clock(samples: list[dict], t0: float, t1: float) -> float | None:
    """Time-weighted NVML SM clock over [t0, t1] (host clock; zero-order hold of the samples)."""
    return _tw([(s["t"], s["sm_mhz"]) for s in samples if s.get("sm_mhz") is not None], t0, t1)


def _tw(pts: list[tuple[float, float]], t0: float, t1: float) -> float | None:
    """Time-weighted mean over [t0, t1] of (time, value) samples held until the next one."""
    before = [f for t, f in pts if t <= t0]
    seg = ([(t0, before[-1])] if before else []) + [(t, f) for t, f in pts if t0 < t < t1]
    if not seg:
        return None
    nxt = [t for t, _ in seg[1:]] + [t1]
    w = [b - a for (a, _), b in zip(seg, nxt)]
    return sum(wi * f for wi, (_, f) in zip(w, seg)) / sum(w) if sum(w) > 0 else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m validation.micro_clock_truth", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=pathlib.Path, help="directory for the record")
    ap.add_argument("--list", action="store_true", help="print the configurations and exit")
    ap.add_argument("--budget", type=float, default=200.0, help="seconds; stops cleanly after")
    args = ap.parse_args(argv)
    confs = configurations()
    if args.list:
        for p in confs:
            print(p.tag)
        return 0
    if not args.out:
        print("micro_clock_truth: --out DIR is required to run", file=sys.stderr)
        return 2
    t0 = time.time()
    with cf.ProcessPoolExecutor(max_workers=os.cpu_count() or 8) as ex:
        compiled = list(ex.map(compile_profile, confs))
    print(f"compiled {len(confs)} in {time.time() - t0:.0f} s", flush=True)
    results = {}
    for p, comp in zip(confs, compiled):
        if isinstance(comp, Exception):
            results[p.tag] = {"params": p.to_dict(), "error": f"compile: {comp}"}
            continue
        if time.time() - t0 > args.budget:
            print("budget reached", flush=True)
            break
        try:
            r = measure(p, comp)
        except Exception as e:  # noqa: BLE001
            r = {"error": f"{type(e).__name__}: {e}"}
        results[p.tag] = {"params": p.to_dict(), **r}
        print(f"{p.tag}: NVML tw {r.get('sm_clock_mhz_tw') or 0:.0f} (last batch "
              f"{r.get('nvml_last_tw_mhz') or 0:.0f}) vs clock64/globaltimer {r.get('eff_clock_mhz_median') or 0:.0f} "
              f"[{r.get('eff_clock_mhz_min') or 0:.0f}-{r.get('eff_clock_mhz_max') or 0:.0f}] MHz; "
              f"{r.get('time_ms') or 0:.4f} ms; cycles {r.get('kernel_cycles_median')} vs event x NVML "
              f"{r.get('cycles_from_event') or 0:.0f}; {r.get('power_w_nvml_tw') or 0:.0f} W", flush=True)
    payload = {"measures": ["NVML SM clock vs the clock64/%globaltimer clock of the same sustained GEMM loops"],
               "method": __doc__.split("Method:")[1].split("Configurations:")[0].strip(),
               "ring": RING, "sustain_s": SUSTAIN_S, "steady_s": STEADY_S, "results": results,
               "units": {"*_mhz": "MHz", "time_ms": "ms per launch (median over steady batches)",
                         "kernel_cycles_median": "SM cycles per launch (clock64)",
                         "cycles_from_event": "time_ms x NVML tw clock (cycles)"}}
    write_record("microbench", "clock_truth", payload, device_provenance(), args.out)
    print(f"done {len(results)} in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
