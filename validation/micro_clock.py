"""Which clock do L2 and HBM follow when the H100 lowers its SM clock? (record microbench__clock_domain)

    python3 -m validation.micro_clock --out DIR        # GPU machine

Why: under heavy tensor load the H100 lowers its SM clock (power management; the GEMM records run
at 1370-1980 MHz). The timing model counts SM cycles; whether an L2 or HBM number is a constant
per SM cycle or a constant per nanosecond at a lower SM clock decides how a bandwidth or latency
measured at 1980 MHz (every other microbenchmark ran there) carries over to a throttled run.

Method: each measurement runs idle (0.3 s after any other work; SM clock near 1980 MHz) and right
after a "burner" kernel (the wgmma microbenchmark kernel, m64n256k16 f16 SS, 2 warpgroups, one CTA
on every SM, random data, ~45 ms), while the SM clock is still lowered by it (the clock recovers
over tens of ms). The measurement then runs alone on the GPU: nothing shares its SMs. (A first
version launched the measurement beside the burner on a second stream; the burner's registers leave
no room on an SM, so it ran after the burner anyway.) Before each timed run the buffer is read once
by a quick kernel so the L2-resident data is back in L2 (the burner writes 17 MB). Measurements:
- TMA stream of 128-B x 128-row boxes, every SM its own boxes (microbench__tma_width's kernel and
  pattern), from an L2-resident 8 MB tensor and from a 1 GB tensor (HBM): bytes per SM cycle
  and bytes per ns;
- one-thread pointer chase (microbench__global_latency's kernel): 16 MiB footprint (L2 hits) and
  2 GiB (HBM): cycles and ns per dependent load.
If L2 runs in the SM's clock domain, its bytes/cycle and latency cycles stay put when the SM clock
falls; if it keeps its own clock, its bytes/ns and latency ns stay put. Every run records the
effective SM clock (clock64 / globaltimer) of the measurement itself; `fit` gives, over all runs
of a measurement: for a chase, cycles = a + b x (SM clock in GHz) (a: an SM-clock part in cycles,
b: a fixed-time part in ns) and the elasticity of ns on the clock (-1: fixed cycles, 0: fixed ns);
for a stream, the elasticity of bytes/ns on the clock (0: own clock, 1: SM clock domain).
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

from validation import micro_tma_width
from validation.harness import _as_param, encode_tensor_map
from validation.micro_runner import compile_cached, module, rand_f16_bits
from validation.micro_wgmma import wgmma_kernel_name
from validation.provenance import device_provenance, write_record

COLS = 4096
STREAM_BOX = (64, 128)        # box {64 f16, 128 rows} = 16 KB
STREAM_BOXES_PER_ROUND = 3
STREAM_BYTES_PER_CTA = {"L2": 4e6, "HBM": 2e6}


def stream_boxes_per_cta(where: str) -> int:
    """Boxes each CTA streams in the TMA measurement (whole rounds); micro_sim replays the same."""
    box_bytes = 2 * STREAM_BOX[0] * STREAM_BOX[1]
    rounds = int(STREAM_BYTES_PER_CTA[where] / (STREAM_BOXES_PER_ROUND * box_bytes))
    return rounds * STREAM_BOXES_PER_ROUND


def record_runs(rec: dict):
    """Every run of a microbench__clock_domain record as (kind, where, label, run): kind 'chase'
    or a stream, where 'L2' or 'HBM', label naming the configuration, condition, run number and
    the run's measured SM clock (what the unit replays and the IR twins both compare)."""
    for cfg, v in rec["results"].items():
        if cfg == "fit":
            continue
        kind, where = cfg.split(",")[:2]
        cond = cfg.rsplit(",", 1)[1]
        for i, r in enumerate(v["runs"]):
            yield kind, where, f"{kind} {where} {cond} #{i + 1} at {r['sm_clock_mhz']:.0f} MHz", r


def run(out: pathlib.Path, reps: int = 3) -> pathlib.Path:
    import cupy as cp


    out.mkdir(parents=True, exist_ok=True)
    for stem in ("micro_wgmma", "micro_mem"):
        print(compile_cached(stem), flush=True)
    nsm = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    burner = module("micro_wgmma").get_function(wgmma_kernel_name(256, 0, False, 1))
    b_smem = 1024 + 8192 + 256 * 128
    burner.max_dynamic_shared_size_bytes = b_smem
    b_src = rand_f16_bits((8192 + 256 * 128) // 2, seed=11)
    b_out = cp.empty(nsm * 256 * 128, dtype=cp.uint32)
    b_iters = 20000  # ~4096 cycles a round per warpgroup: ~45 ms at 1.8 GHz
    chase = module("micro_mem").get_function("gchase")
    stream_fn = micro_tma_width._compile(out)
    flag = cp.zeros(1, dtype=cp.int32)

    def with_burner(loaded: bool, launch, warm=None):
        """Run `launch()` idle or right after the burner; returns the burner's times (None when idle)."""
        bt = None
        if loaded:
            bt = cp.zeros(4 * nsm * 2, dtype=cp.int64)
            burner((nsm,), (256,), (b_src, b_out, bt, np.int32(16), np.int32(b_iters), np.int32(2)),
                   shared_mem=b_smem)
        else:
            cp.cuda.Device().synchronize()
            time.sleep(0.3)
        if warm is not None:
            warm()
        launch()
        cp.cuda.Device().synchronize()
        return None if bt is None else cp.asnumpy(bt).reshape(nsm * 2, 4)

    def burner_clock(bt):
        return None if bt is None else float(np.median((bt[:, 1] - bt[:, 0]) / np.maximum(bt[:, 3] - bt[:, 2], 1) * 1e3))

    results: dict = {}
    # ---- TMA streams (L2-resident 8 MB tensor; 1 GB tensor from HBM)
    for where, rows_total in (("L2", 1024), ("HBM", 131072)):
        buf = cp.random.randint(0, 2 ** 15, size=rows_total * COLS, dtype=cp.int32).astype(cp.uint16)
        w, r = STREAM_BOX
        tmap = _as_param(encode_tensor_map("f16", buf.data.ptr, [COLS, rows_total], [COLS * 2], [w, r], "128B"))
        box_bytes = 2 * w * r
        k = STREAM_BOXES_PER_ROUND
        per_cta = stream_boxes_per_cta(where)
        rounds = per_cta // k
        ncol, nrow = COLS // w, rows_total // r
        times = cp.zeros(4 * nsm, dtype=cp.int64)
        args = (tmap, np.int32(ncol), np.int32(ncol.bit_length() - 1), np.int32(nrow), np.int32(w), np.int32(r),
                np.int32(rounds), np.int32(k), times, flag, np.int32(1))
        smem = 1024 + 2 * k * box_bytes
        stream_fn((nsm,), (32,), args, shared_mem=smem)  # warm
        cp.cuda.Device().synchronize()
        for loaded in (False, True) * reps:
            def launch():
                stream_fn((nsm,), (32,), args, shared_mem=smem)
            bt = with_burner(loaded, launch, warm=lambda: buf.sum() if where == "L2" else None)
            if int(flag.get()[0]):
                raise RuntimeError(f"tma stream timed out ({where})")
            t = cp.asnumpy(times).reshape(nsm, 4)
            span = (t[:, 1] - t[:, 0]).astype(float)
            ns = np.maximum(t[:, 3] - t[:, 2], 1).astype(float)
            row = results.setdefault(f"tma_stream,{where},w128B,r128,sms{nsm},{'loaded' if loaded else 'idle'}",
                                     {"runs": []})
            row["runs"].append({
                "bytes_per_cycle_per_sm": per_cta * box_bytes / float(np.median(span)),
                "bytes_per_ns_per_sm": per_cta * box_bytes / float(np.median(ns)),
                "sm_clock_mhz": float(np.median(span / ns * 1e3)),
                "burner_sm_clock_mhz": burner_clock(bt),
                "ns_after_burner_end": None if bt is None else float(t[:, 2].min() - bt[:, 3].max()),
            })
            print(f"  tma {where} {'loaded' if loaded else 'idle  '}: {row['runs'][-1]}", flush=True)
        del buf
    # ---- pointer chase latency (L2 hits, HBM)
    for fp in (16 << 20, 2 << 30):
        nlines = fp // 128
        buf = cp.zeros(fp // 8, dtype=cp.uint64)
        perm = cp.random.RandomState(fp % 1000 + 7).permutation(nlines).astype(cp.uint64)
        buf[(perm * 16).astype(cp.int64)] = cp.uint64(buf.data.ptr) + cp.roll(perm, -1) * cp.uint64(128)
        first = int(buf.data.ptr) + int(perm[0]) * 128
        del perm
        steps = 4096 if fp < (1 << 30) else 2048
        where = "L2" if fp < (1 << 30) else "HBM"
        o = cp.zeros(3, dtype=cp.int64)
        f0 = cp.asarray([first], dtype=cp.uint64)
        chase((1,), (32,), (f0, np.int32(1), np.int32(nlines if fp < (1 << 30) else 2000), np.int32(steps), o))
        cp.cuda.Device().synchronize()
        for loaded in (False, True) * reps:
            f0 = cp.asarray([int(o.get()[2])], dtype=cp.uint64)

            def launch():
                chase((1,), (32,), (f0, np.int32(1), np.int32(256), np.int32(steps), o))
            t0 = time.perf_counter()
            bt = with_burner(loaded, launch, warm=(lambda: buf.sum()) if where == "L2" else None)
            oo = cp.asnumpy(o)
            row = results.setdefault(f"chase,{where},{fp >> 20}MiB,{'loaded' if loaded else 'idle'}", {"runs": []})
            row["runs"].append({
                "cycles": float(oo[0] / steps), "ns": float(oo[1] / steps),
                "sm_clock_mhz": float(oo[0] / max(oo[1], 1) * 1e3),
                "burner_sm_clock_mhz": burner_clock(bt),
                "host_s": time.perf_counter() - t0,
            })
            print(f"  chase {where} {'loaded' if loaded else 'idle  '}: {row['runs'][-1]}", flush=True)
        del buf
        cp.get_default_memory_pool().free_all_blocks()
    for row in results.values():
        for key in list(row["runs"][0]):
            vals = [x[key] for x in row["runs"] if isinstance(x[key], (int, float)) and not isinstance(x[key], bool)]
            if vals:
                row[key] = statistics.median(vals)
    fits = {}
    for key in sorted({k.rsplit(",", 1)[0] for k in results}):
        runs = results[key + ",idle"]["runs"] + results[key + ",loaded"]["runs"]
        ghz = np.array([x["sm_clock_mhz"] for x in runs]) / 1e3
        if key.startswith("chase"):
            cyc = np.array([x["cycles"] for x in runs])
            b, a = np.polyfit(ghz, cyc, 1)
            fits[key] = {"cycles_part": float(a), "ns_part": float(b),
                         "elasticity_ns_vs_clock": float(np.polyfit(np.log(ghz), np.log(cyc / ghz), 1)[0]),
                         "model": "cycles = cycles_part + ns_part x GHz; elasticity -1: fixed cycles, 0: fixed ns"}
        else:
            bpn = np.array([x["bytes_per_ns_per_sm"] for x in runs])
            fits[key] = {"elasticity_bytes_per_ns_vs_clock": float(np.polyfit(np.log(ghz), np.log(bpn), 1)[0]),
                         "model": "elasticity 0: fixed bytes per ns (own clock), 1: fixed bytes per SM cycle"}
        fits[key]["clock_range_mhz"] = [float(ghz.min() * 1e3), float(ghz.max() * 1e3)]
        print(f"  fit {key}: {fits[key]}", flush=True)
    payload = {
        "measures": ["clock domain of L2 bandwidth and latency, and of HBM, relative to the SM clock"],
        "results": {**results, "fit": fits},
        "method": __doc__.split("Method: ", 1)[1].strip(),
        "units": {"bytes_per_cycle_per_sm": "B per SM cycle (median CTA)", "bytes_per_ns_per_sm": "B per ns",
                  "sm_clock_mhz": "MHz (clock64 / globaltimer of the measurement)", "cycles": "SM cycles per load",
                  "ns": "ns per load"},
    }
    return write_record("microbench", "clock_domain", payload, device_provenance(), out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=pathlib.Path, required=True)
    args = ap.parse_args(argv)
    print(run(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
