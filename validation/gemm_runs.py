"""Run named sweeps of the CUDA GEMM family on the GPU and write one record per configuration.

    python3 -m validation.gemm_runs --sweep smoke --out DIR      # on the GPU machine
    python3 -m validation.gemm_runs --sweep validation --list    # anywhere: print the configs
    python3 -m validation.gemm_runs --sweep best --compile-only  # anywhere with nvcc: warm cache

Each configuration: compile (parallel, cached), check on fresh random data with a NaN-poisoned
output against cupy.matmul, time with CUDA events (rotated inputs), time cupy.matmul (cuBLAS) on
the same shape/layout/dtype in the same run, then `write_record("gemm", ...)`. A summary table is
printed last. Sweeps:
  smoke       a handful of variants at 1024^3 and 4096^3
  best        candidates for the fastest variant at 4096^3 and 8192^3 (f16, f32 accumulate)
  shapes      the stages x box rows x CTAs/SM grid at 2048x2048x8192 and 8192x8192x4096
  elect       tma_issuer elect (elect.sync-guarded TMA copies): both variants, box rows 8/64/128
  validation  issue 5's workload set (>= 60 configurations): stages 1..6 x box rows {8,64,128}
              x CTAs/SM {auto,1} at 4096^3 for both variants, 2048x2048x8192 and 8192x8192x4096
              points, a swizzle sweep and a layout sweep.
  heldout13   issue 13's held-out set (validation/heldout13.py: 48 seeded configurations), timed
              in sustained mode only; never simulate it while developing the power model.
  heldout14   issue 14's held-out set (validation/heldout14.py: 18 seeded one-dimensional sweeps
              + 14 single points, 88 configurations), sustained mode only (2 s, steady 1 s), no
              cuBLAS loops; records carry their sweep (heldout_sweep, sweep_dim, sweep_value).
  heldout15   the same design drawn with a new seed (validation/heldout15.py, 88 configurations,
              none recorded before), run like heldout14; records carry "heldout": "issue14-15".
  heldout16   the same design with a fourth seed (validation/heldout16.py, 85 configurations, none
              recorded before), run like heldout14; records carry "heldout": "issue14-16".
  heldout17   the same design with a fifth seed (validation/heldout17.py, 87 configurations, none
              recorded before), run like heldout14 plus the SM-clock probe (SWEEP_PROBE);
              records carry "heldout": "issue14-17".
  heldout18   the same design with a sixth seed (validation/heldout18.py, none recorded before),
              run like heldout17 (with the SM-clock probe); records carry "heldout": "issue14-18".
  heldout19   the same design with a seventh seed (validation/heldout19.py, 89 configurations, none
              recorded before), run like heldout17; records carry "heldout": "issue14-19".
  heldout20   the same design with an eighth seed (validation/heldout20.py, 88 configurations, none
              recorded before), run like heldout17; records carry "heldout": "issue14-20".

Sustained mode (--sustain-s S, always for heldout13..20): each configuration runs back to back
for S seconds (harness.time_gemm_sustained; statistics over the last --steady-s), and (heldout13
only among the held-out sets) the 6 largest distinct shapes also get a sustained cuBLAS loop.
SM-clock probe (sweeps in SWEEP_PROBE: heldout17 .. heldout20): right after a configuration's timing
(unchanged: the plain kernel's time is the record's), its profile build (-DGEMM_PROFILE=1, compiled
in the same pool as the plain builds) runs a short sustained loop whose launches fill a ring of
profile slots (validation/gemm_profile.py); the record adds sm_clock_eff_mhz (median over the
ring's launches in the loop's steady window of the per-SM clock64/%globaltimer clock), sm_clock_eff_min/max,
probe_kernel_cycles (median), probe_nvml_clock_mhz_tw and probe_time_ms of that loop, or
probe_error when the probe failed.
Records (kind gemm_sustained) go to one JSONL, the raw NVML samples to another (few files come back
from the GPU machine); `--split FILE --out DIR` writes the JSONL's records as one file each.
Code here runs on the GPU machine: no simpy/pydantic; cupy only inside functions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
import traceback

from isa.errors import InputError
from kernels.params import GemmParams
from validation import (gemm_profile, harness, heldout13, heldout14, heldout15, heldout16, heldout17, heldout18,
                        heldout19, heldout20)
from validation.power.nvml_sampler import power_limits
from validation.provenance import (append_jsonl, device_provenance, record_dict, split_jsonl,
                                   write_record)

# Base configurations of the two variants.
SINGLE = dict(bm=128, bn=128, stages=4, box_rows=128, swizzle="128B", variant="single",
              epilogue="direct", raster="row")
WS2 = dict(bm=128, bn=256, stages=4, box_rows=128, swizzle="128B", variant="ws", consumers=2,
           epilogue="stmatrix", raster="grouped")
WS1 = dict(bm=128, bn=128, stages=4, box_rows=128, swizzle="128B", variant="ws", consumers=1,
           epilogue="stmatrix", raster="grouped")


def _cube(n: int) -> dict:
    return dict(m=n, n=n, k=n)


def sweep_smoke() -> list[GemmParams]:
    out = []
    for size in (1024, 4096):
        s = _cube(size)
        out += [
            GemmParams(**s, **SINGLE),
            # the seed's shape: nn layout, f16 accumulators, 8-row boxes, 3 stages, stmatrix
            GemmParams(**s, **{**SINGLE, "layout": "nn", "accum": "f16", "box_rows": 8,
                               "stages": 3, "epilogue": "stmatrix", "raster": "grouped"}),
            GemmParams(**s, **WS2),
            GemmParams(**s, **{**WS2, "layout": "nn"}),
            GemmParams(**s, **{**WS1, "swizzle": "64B", "epilogue": "direct", "ctas_per_sm": 1}),
            GemmParams(**s, **{**SINGLE, "dtype": "bf16", "swizzle": "32B", "box_rows": 64}),
            GemmParams(**s, **{**SINGLE, "bm": 256, "bn": 64, "stages": 4, "layout": "nn",
                               "swizzle": "64B", "box_rows": 32}),
            GemmParams(**s, **{**WS2, "bm": 256, "bn": 128, "stages": 3, "dtype": "bf16"}),
        ]
    return out


def sweep_best() -> list[GemmParams]:
    out = []
    for size in (4096, 8192):
        s = _cube(size)
        out += [
            GemmParams(**s, **WS2),
            GemmParams(**s, **{**WS2, "stages": 3}),
            GemmParams(**s, **{**WS2, "raster": "row"}),
            GemmParams(**s, **{**WS2, "epilogue": "direct"}),
            GemmParams(**s, **{**WS2, "layout": "nn"}),
            GemmParams(**s, **{**WS2, "bm": 256, "bn": 128}),
            GemmParams(**s, **{**WS2, "bn": 128, "stages": 6}),
            GemmParams(**s, **{**WS1, "stages": 6}),
            GemmParams(**s, **{**SINGLE, "stages": 4, "epilogue": "stmatrix", "raster": "grouped"}),
            GemmParams(**s, **{**WS2, "accum": "f16"}),
        ]
    return out


def sweep_validation() -> list[GemmParams]:
    out: list[GemmParams] = []
    s4096 = _cube(4096)
    ws = WS1  # 128x128 so that stages 1..6 fit for both variants
    for base in (SINGLE, ws):
        for stages in range(1, 7):
            for rows in (8, 64, 128):
                for cta in ("auto", 1):
                    out.append(GemmParams(**s4096, **{**base, "stages": stages, "box_rows": rows,
                                                      "ctas_per_sm": cta}))
    for shape in (dict(m=2048, n=2048, k=8192), dict(m=8192, n=8192, k=4096)):
        for base in (SINGLE, ws):
            for stages in (2, 4):
                for rows in (8, 128):
                    out.append(GemmParams(**shape, **{**base, "stages": stages, "box_rows": rows}))
    for base in (SINGLE, ws):  # swizzle sweep (box width follows the span)
        for sw in ("32B", "64B", "128B"):
            out.append(GemmParams(**s4096, **{**base, "swizzle": sw}))
    for base in (SINGLE, ws):  # layout sweep
        for layout in ("tn", "nn"):
            for stages in (2, 4):
                out.append(GemmParams(**s4096, **{**base, "layout": layout, "stages": stages}))
    # de-duplicate, keep order
    seen, uniq = set(), []
    for p in out:
        if p not in seen:
            seen.add(p)
            uniq.append(p)
    return uniq


def sweep_shapes() -> list[GemmParams]:
    """Issue 5's pipeline grid at the two non-cubic shapes too: stages 1..6 x box rows {8, 64, 128}
    x CTAs/SM {auto, 1} x {single, ws1} at 2048x2048x8192 and 8192x8192x4096 (144 configurations;
    the `validation` sweep has the same grid at 4096^3)."""
    out = []
    for shape in (dict(m=2048, n=2048, k=8192), dict(m=8192, n=8192, k=4096)):
        for base in (SINGLE, WS1):
            for stages in range(1, 7):
                for rows in (8, 64, 128):
                    for cta in ("auto", 1):
                        out.append(GemmParams(**shape, **{**base, "stages": stages, "box_rows": rows,
                                                          "ctas_per_sm": cta}))
    return out


def sweep_elect() -> list[GemmParams]:
    """tma_issuer elect (elect.sync-guarded copies) for both variants and box rows 8/64/128 at
    4096^3, 4 stages, and the best ws2 shape: simulated before they were measured (the model's
    elect cost comes from microbench__tma_issue only)."""
    s = _cube(4096)
    out = [GemmParams(**s, **{**base, "box_rows": r, "tma_issuer": "elect"})
           for base in (SINGLE, WS1) for r in (8, 64, 128)]
    out += [GemmParams(**s, **{**SINGLE, "box_rows": 8, "stages": st, "tma_issuer": "elect"}) for st in (2, 6)]
    out += [GemmParams(**s, **{**WS2, "tma_issuer": "elect"}), GemmParams(**s, **{**WS2, "box_rows": 8, "tma_issuer": "elect"})]
    return out


SWEEPS = {"smoke": sweep_smoke, "best": sweep_best, "validation": sweep_validation,
          "shapes": sweep_shapes, "elect": sweep_elect, heldout13.SWEEP_NAME: heldout13.sweep,
          heldout14.SWEEP_NAME: heldout14.sweep, heldout15.SWEEP_NAME: heldout15.sweep,
          heldout16.SWEEP_NAME: heldout16.sweep, heldout17.SWEEP_NAME: heldout17.sweep,
          heldout18.SWEEP_NAME: heldout18.sweep, heldout19.SWEEP_NAME: heldout19.sweep,
          heldout20.SWEEP_NAME: heldout20.sweep}
#: sweeps that run only in sustained mode -> their default (--sustain-s, --steady-s) (s)
SUSTAINED_ONLY = {heldout13.SWEEP_NAME: (3.0, 1.5),
                  heldout14.SWEEP_NAME: (heldout14.SUSTAIN_S, heldout14.STEADY_S),
                  heldout15.SWEEP_NAME: (heldout15.SUSTAIN_S, heldout15.STEADY_S),
                  heldout16.SWEEP_NAME: (heldout16.SUSTAIN_S, heldout16.STEADY_S),
                  heldout17.SWEEP_NAME: (heldout17.SUSTAIN_S, heldout17.STEADY_S),
                  heldout18.SWEEP_NAME: (heldout18.SUSTAIN_S, heldout18.STEADY_S),
                  heldout19.SWEEP_NAME: (heldout19.SUSTAIN_S, heldout19.STEADY_S),
                  heldout20.SWEEP_NAME: (heldout20.SUSTAIN_S, heldout20.STEADY_S)}
DEFAULT_STEADY_S = 1.5
#: record fields of a sweep's records beyond the common ones (the held-out marker, the sweep)
SWEEP_FIELDS = {heldout13.SWEEP_NAME: lambda p: {"heldout": heldout13.HELDOUT_TAG},
                heldout14.SWEEP_NAME: heldout14.record_fields,
                heldout15.SWEEP_NAME: heldout15.record_fields,
                heldout16.SWEEP_NAME: heldout16.record_fields,
                heldout17.SWEEP_NAME: heldout17.record_fields,
                heldout18.SWEEP_NAME: heldout18.record_fields,
                heldout19.SWEEP_NAME: heldout19.record_fields,
                heldout20.SWEEP_NAME: heldout20.record_fields}
#: which configurations of a sustained sweep also get a cuBLAS loop (default: heldout13's rule)
CUBLAS_PICKS = {heldout14.SWEEP_NAME: lambda params: set(), heldout15.SWEEP_NAME: lambda params: set(),
                heldout16.SWEEP_NAME: lambda params: set(), heldout17.SWEEP_NAME: lambda params: set(),
                heldout18.SWEEP_NAME: lambda params: set(), heldout19.SWEEP_NAME: lambda params: set(),
                heldout20.SWEEP_NAME: lambda params: set()}
#: sustained sweeps whose configurations also get the SM-clock probe -> the probe loop's
#: (seconds, steady seconds); the other sweeps run as before (no profile builds, no probe)
SWEEP_PROBE = {heldout17.SWEEP_NAME: (heldout17.PROBE_SUSTAIN_S, heldout17.PROBE_STEADY_S),
               heldout18.SWEEP_NAME: (heldout18.PROBE_SUSTAIN_S, heldout18.PROBE_STEADY_S),
               heldout19.SWEEP_NAME: (heldout19.PROBE_SUSTAIN_S, heldout19.PROBE_STEADY_S),
               heldout20.SWEEP_NAME: (heldout20.PROBE_SUSTAIN_S, heldout20.PROBE_STEADY_S)}
#: a sustained sweep's planned wall seconds (params, sustain_s, cuBLAS loops) on the 16-core GPU
#: machine (default heldout13.plan_seconds)
PLAN_SECONDS = {heldout17.SWEEP_NAME: lambda params, sustain_s, n_cublas: heldout17.plan_seconds(params, sustain_s),
                heldout18.SWEEP_NAME: lambda params, sustain_s, n_cublas: heldout18.plan_seconds(params, sustain_s),
                heldout19.SWEEP_NAME: lambda params, sustain_s, n_cublas: heldout19.plan_seconds(params, sustain_s),
                heldout20.SWEEP_NAME: lambda params, sustain_s, n_cublas: heldout20.plan_seconds(params, sustain_s)}
SUSTAINED_KIND = "gemm_sustained"


def sass_counts(cubin: pathlib.Path) -> dict | None:
    """Counts of the instructions that matter in the SASS (needs cuobjdump)."""
    exe = shutil.which("cuobjdump")
    if not exe:
        return None
    r = subprocess.run([exe, "-sass", str(cubin)], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    keys = ["HGMMA", "UTMALDG", "STSM", "SYNCS", "USETMAXREG", "WARPGROUP", "LDL", "STL", "BAR"]
    counts = {k: 0 for k in keys}
    for line in r.stdout.splitlines():
        for k in keys:
            if f" {k}" in line or f"{k}." in line:
                counts[k] += 1
    return counts


def _fmt(x, f="{:.3f}"):
    return "-" if x is None else f.format(x)


def base_record(name: str, p: GemmParams) -> dict:
    """The fields every GEMM record of sweep `name` starts with."""
    fields = SWEEP_FIELDS[name](p) if name in SWEEP_FIELDS else {}
    return {"sweep": name, **fields, "params": p.to_dict(), "tag": p.tag,
            "cuda_defines": p.cuda_defines(), "dynamic_smem_bytes": p.dynamic_smem_bytes,
            "threads": p.threads, "grid": p.grid, "boxes_per_stage": p.boxes_per_stage,
            "stage_bytes": p.stage_bytes, "flops": p.flops}


def run_sweep(name: str, out_dir: pathlib.Path, only: int | None = None,
              budget_s: float | None = None) -> int:
    params = SWEEPS[name]()
    if only:
        params = params[:only]
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    compiled = harness.compile_many(params)
    print(f"[{name}] compiled {len(params)} configurations in {time.time() - t0:.1f} s "
          f"({sum(1 for c in compiled if getattr(c, 'cached', False))} cached)", flush=True)
    prov = device_provenance()
    cublas_cache: dict = {}
    rows = []
    for i, (p, comp) in enumerate(zip(params, compiled)):
        if budget_s is not None and time.time() - t0 > budget_s:
            print(f"[{name}] budget of {budget_s:.0f} s reached after {i} configurations", flush=True)
            break
        rec = base_record(name, p)
        status = "ok"
        try:
            if isinstance(comp, Exception):
                raise comp
            rec["ptxas"] = comp.resources()
            rec["sass"] = sass_counts(comp.cubin)
            kern = harness.GemmKernel(p, comp)
            rec["occupancy_ctas_per_sm"] = kern.occupancy()
            chk = harness.check_gemm(kern, seed=1000 + i)
            rec.update(chk)
            if not chk["correct"]:
                status = "WRONG"
            tm = harness.time_gemm(kern)
            rec.update(tm)
            key = (p.m, p.n, p.k, p.dtype, p.layout)
            if key not in cublas_cache:
                cublas_cache[key] = harness.time_cublas(p)
            cb = cublas_cache[key]
            rec["cublas"] = cb
            rec["cublas_time_ms"] = cb["time_ms"] if cb else None
            rec["cublas_tflops"] = cb["tflops"] if cb else None
            rec["pct_of_cublas"] = 100.0 * cb["time_ms"] / tm["time_ms"] if cb else None
        except Exception as e:  # noqa: BLE001  (one bad config must not stop the sweep)
            status = "ERROR"
            rec["error"] = f"{type(e).__name__}: {e}"
            rec["traceback"] = traceback.format_exc()[-3000:]
            print(rec["traceback"], file=sys.stderr, flush=True)
            try:
                import cupy  # noqa: PLC0415

                cupy.cuda.Device().synchronize()
            except Exception:  # noqa: BLE001  (a sticky fault: the context is gone)
                print("CUDA context unusable after this error; stopping the sweep", flush=True)
                rec["status"] = status
                write_record("gemm", f"{name}__{p.tag}", rec, prov, out_dir=out_dir)
                rows.append((p, rec, status))
                break
        rec["status"] = status
        write_record("gemm", f"{name}__{p.tag}", rec, prov, out_dir=out_dir)
        rows.append((p, rec, status))
        print(f"[{i + 1}/{len(params)}] {status:5s} {p.tag} t={_fmt(rec.get('time_ms'))} ms "
              f"{_fmt(rec.get('tflops'), '{:.0f}')} TF/s cuBLAS%={_fmt(rec.get('pct_of_cublas'), '{:.1f}')} "
              f"rel={_fmt(rec.get('rel_err'), '{:.1e}')} regs={rec.get('ptxas', {}).get('registers')}",
              flush=True)
    print_table(name, rows, prov)
    (out_dir / f"summary_{name}.json").write_text(json.dumps(
        [{"tag": p.tag, "status": s, **{k: r.get(k) for k in ("time_ms", "tflops", "cublas_time_ms",
                                                              "pct_of_cublas", "rel_err", "unwritten",
                                                              "occupancy_ctas_per_sm")}}
         for p, r, s in rows], indent=1))
    return 0 if all(s == "ok" for _, _, s in rows) else 1


def _kernel_checked(p: GemmParams, comp, rec: dict, seed: int):
    """Load the compiled kernel, record resources and occupancy, check it: (kernel, status)."""
    if isinstance(comp, Exception):
        raise comp
    rec["ptxas"] = comp.resources()
    rec["sass"] = sass_counts(comp.cubin)
    kern = harness.GemmKernel(p, comp)
    rec["occupancy_ctas_per_sm"] = kern.occupancy()
    chk = harness.check_gemm(kern, seed=seed)
    rec.update(chk)
    return kern, "ok" if chk["correct"] else "WRONG"


def _context_alive() -> bool:
    """After an error: is the CUDA context still usable (no sticky fault)?"""
    try:
        import cupy  # noqa: PLC0415

        cupy.cuda.Device().synchronize()
        return True
    except Exception:  # noqa: BLE001
        return False


def _sustained_timings(kern, p: GemmParams, with_cublas: bool, sustain_s: float,
                       steady_s: float, samples: dict) -> dict:
    """The kernel's (and maybe cuBLAS's) sustained timing; raw samples moved into `samples`."""
    tm = harness.time_gemm_sustained(kern, sustain_s, steady_s)
    samples["kernel"] = tm.pop("samples")
    out = dict(tm)
    if with_cublas:
        cb = harness.time_cublas_sustained(p, sustain_s, steady_s)
        if cb is not None:
            samples["cublas"] = cb.pop("samples")
        out["cublas"] = cb
        out["cublas_time_ms"] = cb["time_ms"] if cb else None
        out["cublas_tflops"] = cb.get("tflops") if cb else None
        out["pct_of_cublas"] = 100.0 * cb["time_ms"] / tm["time_ms"] if cb else None
    return out


def run_sustained_sweep(name: str, out_dir: pathlib.Path, sustain_s: float, steady_s: float,
                        only: int | None = None, budget_s: float | None = None) -> int:
    """Every configuration of the sweep in sustained mode; records to
    <out>/gemm_sustained_<name>.jsonl, raw NVML samples to <out>/samples_<name>.jsonl, a
    summary to <out>/summary_<name>.json. Returns 0 when every configuration was ok."""
    params = SWEEPS[name]()[:only] if only else SWEEPS[name]()
    picks = CUBLAS_PICKS.get(name, heldout13.cublas_picks)(params)
    out_dir.mkdir(parents=True, exist_ok=True)
    rec_path, smp_path = out_dir / f"{SUSTAINED_KIND}_{name}.jsonl", out_dir / f"samples_{name}.jsonl"
    for f in (rec_path, smp_path):
        f.unlink(missing_ok=True)
    t0 = time.time()
    probe = SWEEP_PROBE.get(name)
    compiled, profiled = _compile_builds(params, probe is not None)
    print(f"[{name}] compiled {len(params)} configurations{' (+ their profile builds)' if probe else ''} "
          f"in {time.time() - t0:.1f} s; sustained {sustain_s:g} s each (steady last {steady_s:g} s), "
          f"cuBLAS on {len(picks)}" + (f", SM-clock probe {probe[0]:g} s (steady {probe[1]:g} s)" if probe else ""),
          flush=True)
    prov = {**device_provenance(), "power": power_limits()}
    rows = []
    for i, (p, comp, prof_comp) in enumerate(zip(params, compiled, profiled)):
        if budget_s is not None and time.time() - t0 > budget_s:
            print(f"[{name}] budget of {budget_s:.0f} s reached after {i} configurations", flush=True)
            break
        rec = {**base_record(name, p), "timing_mode": "sustained", "cublas_pick": i in picks}
        samples: dict = {}
        try:
            kern, status = _kernel_checked(p, comp, rec, seed=1000 + i)
            rec.update(_sustained_timings(kern, p, i in picks, sustain_s, steady_s, samples))
        except Exception as e:  # noqa: BLE001  (one bad config must not stop the sweep)
            status = "ERROR"
            rec["error"] = f"{type(e).__name__}: {e}"
            rec["traceback"] = traceback.format_exc()[-3000:]
            print(rec["traceback"], file=sys.stderr, flush=True)
        if probe and status != "ERROR":
            rec.update(probe_record(p, prof_comp, probe))
        rec["status"] = status
        append_jsonl(rec_path, record_dict(SUSTAINED_KIND, f"{name}__{p.tag}", rec, prov))
        append_jsonl(smp_path, {"name": f"{name}__{p.tag}", **samples})
        rows.append((p, rec, status))
        print(f"[{i + 1}/{len(params)}] {status:5s} {p.tag} t={_fmt(rec.get('time_ms'))} ms "
              f"{_fmt(rec.get('tflops'), '{:.0f}')} TF/s {_fmt(rec.get('sm_clock_mhz_tw'), '{:.0f}')} MHz "
              f"{_fmt(rec.get('power_w_counter'), '{:.0f}')} W drift={_fmt(rec.get('drift_pct'), '{:+.1f}')}% "
              f"cuBLAS%={_fmt(rec.get('pct_of_cublas'), '{:.1f}')}"
              + (f" SMs {_fmt(rec.get('sm_clock_eff_mhz'), '{:.0f}')} MHz" if probe else "")
              + f" [{time.time() - t0:.0f} s]", flush=True)
        if (status == "ERROR" or "probe_error" in rec) and not _context_alive():
            print("CUDA context unusable after this error; stopping the sweep", flush=True)
            break
    keys = SUSTAINED_SUMMARY_KEYS + (PROBE_SUMMARY_KEYS if probe else ())
    (out_dir / f"summary_{name}.json").write_text(json.dumps(
        [{"tag": p.tag, "status": s, **{k: r.get(k) for k in keys}} for p, r, s in rows], indent=1))
    print_sustained_table(name, rows, prov)
    return 0 if rows and all(s == "ok" for _, _, s in rows) else 1


SUSTAINED_SUMMARY_KEYS = ("time_ms", "time_ms_mean", "tflops", "drift_pct", "sm_clock_mhz_tw",
                          "power_w_nvml_tw", "power_w_counter", "energy_per_launch_mj", "reasons",
                          "cublas_time_ms", "pct_of_cublas", "rel_err", "unwritten")
PROBE_SUMMARY_KEYS = ("sm_clock_eff_mhz", "sm_clock_eff_min", "sm_clock_eff_max", "probe_kernel_cycles",
                      "probe_nvml_clock_mhz_tw", "probe_time_ms", "probe_error")


def _compile_builds(params: list[GemmParams], with_profile: bool) -> tuple[list, list]:
    """(the plain builds, the profile builds or Nones): one process pool for both."""
    n = len(params)
    if not with_profile:
        return harness.compile_many(params), [None] * n
    both = harness.compile_many(params + params, extra_flags=[()] * n + [gemm_profile.PROFILE_FLAGS] * n)
    return both[:n], both[n:]


def probe_record(p: GemmParams, prof_comp, probe: tuple[float, float]) -> dict:
    """The SM-clock probe's record fields (gemm_profile.sm_clock_probe: the profile build in a
    sustained loop of probe = (seconds, steady seconds)), or {"probe_error": ...}: a failed
    probe never touches the configuration's timing or status."""
    try:
        return gemm_profile.sm_clock_probe(p, prof_comp, *probe)
    except Exception as e:  # noqa: BLE001  (the probe is an extra; the timing stands)
        print(f"probe failed for {p.tag}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return {"probe_error": f"{type(e).__name__}: {e}"}


def print_sustained_table(name: str, rows, prov: dict) -> None:
    print(f"\n== {name} (sustained): {prov.get('device_name')} commit {prov.get('git_commit')} "
          f"power limit {prov.get('power', {}).get('power_limit_enforced_w')} W")
    print(f"{'status':6s} {'size':17s} {'cfg':6s} {'types':7s} {'tag':6s} {'ms':>8s} {'TF/s':>5s} {'MHz':>5s} {'W':>4s} "
          f"{'Wavg':>4s} {'mJ':>7s} {'drift%':>6s} {'%cuB':>6s} reasons")
    for p, r, s in rows:
        v = ("ws" + str(p.consumers) if p.variant == "ws" else "single")
        reasons = ",".join(f"{k}:{v_:.2f}" for k, v_ in (r.get("reasons") or {}).items())
        cols = [(r.get("time_ms"), "{:.4f}", 8), (r.get("tflops"), "{:.0f}", 5),
                (r.get("sm_clock_mhz_tw"), "{:.0f}", 5), (r.get("power_w_counter"), "{:.0f}", 4),
                (r.get("power_w_nvml_tw"), "{:.0f}", 4), (r.get("energy_per_launch_mj"), "{:.1f}", 7),
                (r.get("drift_pct"), "{:+.1f}", 6), (r.get("pct_of_cublas"), "{:.1f}", 6)]
        nums = " ".join(_fmt(x, f).rjust(w) for x, f, w in cols)
        size = f"{p.m}x{p.n}x{p.k}"
        print(f"{s:6s} {size:17s} {v:6s} {p.dtype + p.accum:7s} {p.tag[-6:]} {nums} {reasons}")


def print_table(name: str, rows, prov: dict) -> None:
    smi = prov.get("nvidia_smi", {})
    print(f"\n== {name}: {prov.get('device_name')} driver {smi.get('driver')} commit {prov.get('git_commit')}")
    hdr = f"{'status':6s} {'size':16s} {'variant':7s} {'lay':3s} {'acc':3s} {'tile':10s} {'st':>2s} {'box':>3s} {'swz':4s} {'cta':4s} {'epi':8s} {'ras':7s} {'ms':>8s} {'TF/s':>6s} {'cuBLAS':>8s} {'%cuB':>6s} {'rel_err':>8s} {'occ':>3s} {'MHz':>9s}"
    print(hdr)
    for p, r, s in rows:
        v = "ws" + str(p.consumers) if p.variant == "ws" else "single"
        clk = f"{r.get('sm_clock_mhz_before', '-')}/{r.get('sm_clock_mhz_after', '-')}"
        print(f"{s:6s} {p.m}x{p.n}x{p.k:<6} {v:7s} {p.layout:3s} {p.accum:3s} {p.bm}x{p.bn}x{p.bk:<3} "
              f"{p.stages:2d} {p.box_rows:3d} {p.swizzle:4s} {str(p.ctas_per_sm):4s} {p.epilogue:8s} "
              f"{p.raster:7s} {_fmt(r.get('time_ms'), '{:8.4f}')} {_fmt(r.get('tflops'), '{:6.0f}')} "
              f"{_fmt(r.get('cublas_time_ms'), '{:8.4f}')} {_fmt(r.get('pct_of_cublas'), '{:6.1f}')} "
              f"{_fmt(r.get('rel_err'), '{:8.1e}')} {str(r.get('occupancy_ctas_per_sm', '-')):>3s} {clk:>9s}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="example: python3 -m validation.gemm_runs --sweep smoke --out /tmp/gemm")
    ap.add_argument("--sweep", choices=sorted(SWEEPS), help="which sweep (required unless --split)")
    ap.add_argument("--out", type=pathlib.Path, help="directory for the records (default: a temp dir)")
    ap.add_argument("--list", action="store_true", help="print the configurations and exit")
    ap.add_argument("--compile-only", action="store_true", help="compile (fill the cubin cache) and exit")
    ap.add_argument("--only", type=int, help="run only the first N configurations")
    ap.add_argument("--budget", type=float, help="seconds: stop starting configurations after this")
    defaults = "; ".join(f"{k}: {v[0]:g} s" for k, v in SUSTAINED_ONLY.items())
    ap.add_argument("--sustain-s", type=float,
                    help="sustained mode: run each configuration back to back for this many seconds "
                         f"(default {defaults})")
    steady = "; ".join(f"{k}: {v[1]:g}" for k, v in SUSTAINED_ONLY.items())
    ap.add_argument("--steady-s", type=float,
                    help="sustained mode: statistics over the last this many seconds "
                         f"(default {DEFAULT_STEADY_S:g}; {steady})")
    ap.add_argument("--split", type=pathlib.Path, metavar="JSONL",
                    help="write each record of a sustained run's JSONL as its own file under --out, exit")
    args = ap.parse_args(argv)
    if args.split:
        return _split(args.split, args.out)
    if args.sweep is None:
        print(f"error: --sweep is required (one of {', '.join(sorted(SWEEPS))})", file=sys.stderr)
        return 2
    sustain, steady = _sustain_options(args)
    bad = _check_sustain(sustain, steady, args.budget)
    if bad:
        print(f"error: {bad}", file=sys.stderr)
        return 2
    try:
        params = SWEEPS[args.sweep]()
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.list:
        return _list(args.sweep, params, sustain)
    if args.compile_only:
        t0 = time.time()
        res = harness.compile_many(params)
        bad = 0
        for p, c in zip(params, res):
            if isinstance(c, Exception):
                bad += 1
                print(f"FAIL {p.tag}: {c}")
            else:
                print(f"{p.tag} regs={c.registers} spills={c.spill_stores}/{c.spill_loads} "
                      f"stack={c.stack_bytes} warn={len(c.warnings)} {'cached' if c.cached else ''}")
        print(f"{len(params) - bad}/{len(params)} compiled in {time.time() - t0:.1f} s")
        return 1 if bad else 0
    out = args.out or pathlib.Path(os.environ.get("OUT", "/tmp")) / f"gemm_{args.sweep}"
    if sustain:
        return run_sustained_sweep(args.sweep, out, sustain, steady, args.only, args.budget)
    return run_sweep(args.sweep, out, args.only, args.budget)


def _sustain_options(args) -> tuple[float | None, float]:
    """(--sustain-s, --steady-s) with the sweep's defaults filled in."""
    sustain_d, steady_d = SUSTAINED_ONLY.get(args.sweep, (None, DEFAULT_STEADY_S))
    sustain = args.sustain_s if args.sustain_s is not None else sustain_d
    return sustain, args.steady_s if args.steady_s is not None else steady_d


def _list(name: str, params: list[GemmParams], sustain: float | None) -> int:
    """--list: one line per configuration (tag, smem, boxes/stage, its held-out sweep, cuBLAS),
    the count and, in sustained mode, the planned wall time on the 16-core GPU machine."""
    picks = CUBLAS_PICKS.get(name, heldout13.cublas_picks)(params) if sustain else set()
    for i, p in enumerate(params):
        where = base_record(name, p).get("heldout_sweep")
        print(p.tag, p.smem_footprint_bytes, p.boxes_per_stage, *([where] if where else []),
              *(["cublas"] if i in picks else []))
    digest = hashlib.sha256("\n".join(p.tag for p in params).encode()).hexdigest()
    plan = PLAN_SECONDS.get(name, heldout13.plan_seconds)
    print(f"{len(params)} configurations (sha256 of the tags {digest[:16]})"
          + (f"; plan about {plan(params, sustain, len(picks)):.0f} s on 16 cores" if sustain else ""))
    return 0


def _check_sustain(sustain: float | None, steady: float, budget: float | None) -> str | None:
    """One line naming the bad option, or None."""
    if budget is not None and not budget > 0:
        return f"--budget {budget}: must be > 0 seconds"
    if sustain is None:
        return None
    if not (sustain > 0 and sustain <= 600):
        return f"--sustain-s {sustain}: must be > 0 and <= 600 seconds"
    if not 0 < steady < sustain:
        return f"--steady-s {steady}: must be > 0 and < --sustain-s ({sustain})"
    return None


def _split(jsonl: pathlib.Path, out: pathlib.Path | None) -> int:
    """--split: one record file per JSONL line under --out."""
    if out is None:
        print("error: --split needs --out DIR (where the record files go)", file=sys.stderr)
        return 2
    if not jsonl.is_file():
        print(f"error: --split {jsonl}: no such file", file=sys.stderr)
        return 2
    try:
        paths = split_jsonl(jsonl, out)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{len(paths)} records written under {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
