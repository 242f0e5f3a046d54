"""Per-opcode issue and latency microbenchmarks of one H100 SM (record microbench__ops; issues 14/15):
shfl.sync (bfly/idx/up/down), ex2/rcp.approx (with and without .ftz), max/min.f32, fma.f32 and
fma.rn.f16x2/bf16x2, cvt f32 <-> f16/bf16 and the packing cvt.rn.{f16,bf16}x2.f32, vote.sync
(any/all/ballot), redux.sync (add/min/max .u32), atom/red on shared and global memory (add .u32/.f32,
distinct and same addresses), named barriers (bar.sync id, count; the bar.arrive/bar.sync hand-off).

    python3 -m validation.micro_ops --out DIR [--only OP ...]   # GPU machine: DIR/microbench__ops.json
    python3 -m validation.micro_ops --gen                        # rewrite validation/cuda/micro_ops.cu
    python3 -m validation.micro_ops --list                       # the ops

Method: the kernels of validation/cuda/micro_ops.cu (generated from validation/micro_ops_src.py; nvcc
-O3 -arch sm_90a) time their loop with clock64 (SM cycles) and %globaltimer (ns). Latency: lat_<op>,
one warp, one dependent chain (each step's result is the next step's input), LAT_ITERS x 32 steps;
latency = cycles / steps (loop control, 3 SASS instructions per 32 steps, included). Throughput:
thr_<op>, one CTA of W = 1, 2, 4, 8, 16, 32 warps on one SM, 8 independent chains per thread,
THR_ITERS x 32 steps per thread; rate = W x steps / (last warp's end - first warp's start) in warp
instructions per SM cycle (x 32 = lane results per cycle). Memory ops in mode distinct (each lane
and chain its own word: conflict-free shared banks, one 128-B line per warp and chain in global) and
same (every lane of every warp on one word); global ones also with one CTA of 32 warps on every SM
(scope all: the L2's atomic rate). Named barriers: bar_sync (all W warps repeat bar.sync 1, 32 W;
cycles per barrier) and bar_pingpong (g warps bar.arrive 1 / bar.sync 2, g warps bar.sync 1 /
bar.arrive 2, count 64 g: cycles per round trip). Each point: 1 warm-up + REPS launches, the median.
The record keeps the SASS opcode counts of every timed loop (cuobjdump -sass of the cubin measured),
the SM clock each run saw (clock64 cycles / %globaltimer ns) and NVML samples over the whole run.
Runs on the GPU machine: numpy, cupy (inside functions), stdlib; nvcc and cuobjdump.
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import time

import numpy as np

from validation.micro_ops_src import (BY_NAME, GLOBAL_WORDS, OPS, Op, const_bits, gen_source, missing_sass,
                                      sass_counts, steps_per_block)
from validation.power.nvml_sampler import PowerSampler
from validation.micro_runner import BUILD, NVCC_O3, nvcc_cubin, spread
from validation.provenance import device_provenance, nvidia_smi_clocks, write_record

HERE = pathlib.Path(__file__).resolve().parent
SRC = HERE / "cuda" / "micro_ops.cu"
WARPS = (1, 2, 4, 8, 16, 32)
REPS = 5
LAT_ITERS = 64          # x 32 steps
THR_ITERS = 64          # x 32 steps (8 chains x 4)
MEM_ITERS = 8           # memory ops (atomics) per launch, both kinds
SLOW_SAME = {"atom_shared_add_f32": 1}  # the CAS loop on one word: 32 lanes x W warps retry
BAR_ITERS = 256
PINGPONG_GROUPS = (1, 2, 4)


class OpsError(ValueError):
    """A kernel's output that cannot be a timing (no cycles elapsed, a warp that never ran)."""


def _modes(op: Op) -> tuple[str, ...]:
    return ("distinct", "same") if op.space else ("reg",)


def iters_for(op: Op, kind: str, mode: str) -> int:
    """Loop iterations of one launch (each 32 steps per thread)."""
    if op.space:
        return SLOW_SAME.get(op.name, MEM_ITERS) if mode == "same" else MEM_ITERS
    return LAT_ITERS if kind == "lat" else THR_ITERS


def warp_stamps(out: np.ndarray, warps: int) -> np.ndarray:
    """out (4 x warps int64: t0, t1, g0, g1 per warp) -> a (warps, 4) array; raises OpsError when
    a warp's window is empty (it never wrote its stamps)."""
    a = np.asarray(out, dtype=np.int64)[:4 * warps].reshape(warps, 4)
    if (a[:, 1] <= a[:, 0]).any():
        raise OpsError(f"a warp's clock64 window is empty: {a[:, :2].tolist()}")
    return a


def latency_cycles(out: np.ndarray, steps: int) -> float:
    """Cycles per step of the one-warp dependent chain."""
    a = warp_stamps(out, 1)
    return float(a[0, 1] - a[0, 0]) / steps


def cta_rate(out: np.ndarray, warps: int, steps_per_warp: int) -> dict:
    """One CTA: warp instructions per SM cycle over [first start, last end] of its warps, and the
    SM clock (MHz) warp 0 saw (clock64 cycles per %globaltimer ns)."""
    a = warp_stamps(out, warps)
    cycles = float(a[:, 1].max() - a[:, 0].min())
    ns = float(a[0, 3] - a[0, 2])
    return {"warp_inst_per_cycle": warps * steps_per_warp / cycles, "cycles": cycles,
            "sm_mhz": float(a[0, 1] - a[0, 0]) / ns * 1e3 if ns > 0 else None}


def clock_mhz(out: np.ndarray) -> float | None:
    a = warp_stamps(out, 1)
    ns = float(a[0, 3] - a[0, 2])
    return float(a[0, 1] - a[0, 0]) / ns * 1e3 if ns > 0 else None


def cubin_sass_counts(cubin: pathlib.Path) -> dict:
    """sass_counts of the cubin by `cuobjdump -sass`; {"error": why} when cuobjdump fails or is
    absent (the timings are still recorded; the SASS can be regenerated from the same source)."""
    try:
        r = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"cuobjdump: {exc}"}
    if r.returncode != 0:
        return {"error": f"cuobjdump exit {r.returncode}: {r.stderr.strip()[:200]}"}
    return sass_counts(r.stdout)


# ============================================================================ GPU side
class _Gpu:
    """The loaded cubin, buffers and a launch helper (GPU machine only)."""

    def __init__(self, cubin: pathlib.Path):
        import cupy as cp  # noqa: PLC0415

        self.cp = cp
        self.mod = cp.RawModule(path=str(cubin))
        self.nsm = int(cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["multiProcessorCount"])
        self.gbuf = cp.zeros(GLOBAL_WORDS, dtype=cp.uint32)
        self.sink = cp.zeros(self.nsm * 1024, dtype=cp.uint32)
        self.mhz: list[float] = []

    def launch(self, name: str, grid: int, block: int, args, reps: int) -> list[np.ndarray]:
        """1 warm-up + reps launches of `name` with args(out); each launch's out (grid x 128 int64)."""
        cp = self.cp
        fn = self.mod.get_function(name)
        outs = []
        for r in range(reps + 1):
            out = cp.zeros(grid * 128, dtype=cp.int64)
            fn((grid,), (block,), args(out))
            cp.cuda.Device().synchronize()
            if r:
                outs.append(cp.asnumpy(out))
        return outs

    def op_args(self, op: Op, iters: int, mode: str):
        """The argument builder of lat_/thr_<op>: (iters, c1, c2, mode, gbuf, out, sink)."""
        c1, c2 = const_bits(op)
        return lambda out: (np.int32(iters), np.uint32(c1), np.uint32(c2), np.int32(mode == "same"), self.gbuf,
                            out, self.sink)


def _lat(g: _Gpu, op: Op, mode: str, reps: int) -> dict:
    it = iters_for(op, "lat", mode)
    outs = g.launch(f"lat_{op.name}", 1, 32, g.op_args(op, it, mode), reps)
    steps = it * steps_per_block("lat")
    vals = [latency_cycles(o, steps) for o in outs]
    g.mhz += [m for m in (clock_mhz(o) for o in outs) if m]
    return {"cycles_per_step": spread(vals), "steps": steps}


def _thr(g: _Gpu, op: Op, mode: str, warps: int, grid: int, reps: int) -> dict:
    it = iters_for(op, "thr", mode)
    outs = g.launch(f"thr_{op.name}", grid, 32 * warps, g.op_args(op, it, mode), reps)
    steps = it * steps_per_block("thr")
    per_launch = []
    for o in outs:
        ctas = [cta_rate(o[128 * b:128 * (b + 1)], warps, steps) for b in range(grid)]
        per_launch.append(float(np.median([c["warp_inst_per_cycle"] for c in ctas])))
        g.mhz += [c["sm_mhz"] for c in ctas[:1] if c["sm_mhz"]]
    return {"warp_inst_per_cycle_per_sm": spread(per_launch),
            "lane_results_per_cycle_per_sm": float(np.median(per_launch)) * 32, "steps_per_warp": steps,
            "ctas": grid}


def _measure_op(g: _Gpu, op: Op, reps: int, lat: dict, thr: dict) -> None:
    """Latency (if the op returns a value) and the rate at every W, per mode; global ops also on
    every SM (one 32-warp CTA each)."""
    for mode in _modes(op):
        if op.latency:
            lat.setdefault(op.name, {})[mode] = _lat(g, op, mode, reps)
        row = {str(w): _thr(g, op, mode, w, 1, reps) for w in WARPS}
        if op.space == "global":
            row["all_sms_32_warps"] = _thr(g, op, mode, 32, g.nsm, reps)
        thr.setdefault(op.name, {})[mode] = row


def _barriers(g: _Gpu, reps: int) -> dict:
    res = {"bar_sync": {}, "bar_pingpong": {}}
    for w in WARPS:
        outs = g.launch("bar_sync", 1, 32 * w, lambda out: (np.int32(BAR_ITERS), out), reps)
        res["bar_sync"][str(w)] = spread([latency_cycles(o, BAR_ITERS * 8) for o in outs])
    for grp in PINGPONG_GROUPS:
        outs = g.launch("bar_pingpong", 1, 64 * grp, lambda out: (np.int32(BAR_ITERS), np.int32(grp), out), reps)
        res["bar_pingpong"][str(grp)] = spread([latency_cycles(o, BAR_ITERS) for o in outs])
    return res


def run(out_dir: pathlib.Path, only: list[str] | None = None, reps: int = REPS) -> pathlib.Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    BUILD.mkdir(parents=True, exist_ok=True)
    cubin = BUILD / "micro_ops.cubin"
    t0 = time.time()
    nvcc_cubin(SRC, cubin, NVCC_O3)
    sass = cubin_sass_counts(cubin)
    folded = {} if "error" in sass else {
        f"{k}_{op.name}": missing_sass(op, k, sass.get(f"{k}_{op.name}", {}))
        for op in OPS for k in ("lat", "thr") if k == "thr" or op.latency}
    folded = {k: v for k, v in folded.items() if v}
    smi_before = nvidia_smi_clocks()
    g = _Gpu(cubin)
    ops = [BY_NAME[n] for n in only] if only else list(OPS)
    lat: dict = {}
    thr: dict = {}
    errors: dict = {}
    with PowerSampler() as ps:
        for op in ops:
            t_op = time.time()
            try:
                _measure_op(g, op, reps, lat, thr)
            except Exception as exc:  # noqa: BLE001  (one op's failure must not lose the others' numbers)
                errors[op.name] = f"{type(exc).__name__}: {str(exc)[:300]}"
                print(f"  {op.name}: FAILED {errors[op.name]}", flush=True)
                continue
            shown = {m: round(v["cycles_per_step"]["median"], 1) for m, v in lat.get(op.name, {}).items()}
            peak = {m: round(max(r[str(w)]["warp_inst_per_cycle_per_sm"]["median"] for w in WARPS), 3)
                    for m, r in thr[op.name].items()}
            print(f"  {op.name:22s} latency {shown} peak warp inst/cycle/SM {peak} ({time.time() - t_op:.1f}s)",
                  flush=True)
        bars = _barriers(g, reps) if not only else {}
        print("  barriers " + ", ".join(f"{k}[{w}] {v['median']:.1f}" for k, d in bars.items() for w, v in d.items()),
              flush=True)
    payload = {
        "measures": ["per-opcode dependent-use latency (SM cycles) and issue rate (warp instructions per SM "
                     "cycle at 1..32 warps) of " + ", ".join(op.name for op in ops) + "; named barriers"],
        "results": {"latency": lat, "throughput": thr, "barriers": bars,
                    "sm_clock_mhz_seen": spread(g.mhz) if g.mhz else None, "sm_count": g.nsm,
                    "sass_counts": sass, "sass_folded": folded, "errors": errors,
                    "ops": {op.name: {"ptx_step": op.step, "alt_step": op.alt, "sass_per_step": list(op.sass),
                                      "note": op.note, "c1_bits": const_bits(op)[0], "c2_bits": const_bits(op)[1]}
                            for op in ops}},
        "method": __doc__.split("Method: ", 1)[1].split("Runs on the GPU machine")[0].strip(),
        "units": {"cycles_per_step": "SM cycles (clock64) per dependent step, loop control included",
                  "warp_inst_per_cycle_per_sm": "steps (warp instructions of the op) per SM cycle, one CTA per SM",
                  "lane_results_per_cycle_per_sm": "warp_inst_per_cycle_per_sm x 32",
                  "bar_sync": "SM cycles per bar.sync round, by warps in the block",
                  "bar_pingpong": "SM cycles per arrive/sync round trip, by warps per group",
                  "sm_clock_mhz_seen": "clock64 cycles / %globaltimer ns x 1000 of the timed windows"},
        "seconds": round(time.time() - t0, 1),
        "nvidia_smi_before": smi_before,
        "power_samples_summary": {**ps.summary(), "window": "whole run of the ops benchmarks"},
    }
    return write_record("microbench", "ops", payload, device_provenance(), out_dir)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m validation.micro_ops", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=pathlib.Path, help="directory for microbench__ops.json (GPU machine)")
    ap.add_argument("--only", nargs="*", help="run only these ops (names: --list)")
    ap.add_argument("--reps", type=int, default=REPS, help=f"timed launches per point (default {REPS})")
    ap.add_argument("--gen", action="store_true", help="rewrite validation/cuda/micro_ops.cu")
    ap.add_argument("--list", action="store_true", help="print the op names")
    a = ap.parse_args(argv)
    if a.gen:
        SRC.write_text(gen_source())
        return 0
    if a.list:
        for op in OPS:
            print(f"{op.name:22s} {op.step.splitlines()[-1]}")
        return 0
    bad = [n for n in (a.only or []) if n not in BY_NAME]
    if bad:
        print(f"--only {bad[0]}: not an op; valid: {', '.join(BY_NAME)}", file=sys.stderr)
        return 2
    if a.reps < 1:
        print(f"--reps {a.reps}: must be >= 1", file=sys.stderr)
        return 2
    if not a.out:
        print("--out DIR is required to run the benchmarks", file=sys.stderr)
        return 2
    print(run(a.out, a.only, a.reps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
