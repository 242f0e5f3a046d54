"""The `single` variant's per-k-tile cost taken apart on ONE SM (issue 14 item 3), ws1 as the control.

    python3 -m validation.micro_single_loop --out DIR      # on the GPU machine (about 20-40 s)
    python3 -m validation.micro_single_loop --list         # anywhere: the variants and their builds

Why: on the H100 the single variant (one warpgroup: warp 0 issues the TMA refills after
wgmma.wait_group 1, all 4 warps run the wgmmas; no producer warp) costs about 178 cycles per
k-tile more than ws1 at the same tile (one-SM gemm_cycles records; ws1 128x128 r128 128B: 555.6
cycles per k-tile), while the model charges about 36. This script replays the k-tile loop of
kernels/cuda/gemm_sm90.cu with pieces switched off one at a time by compile-time defines (the
GEMM twin itself, so the loop is the measured one; every switch defaults to 0, which leaves the
default build byte-identical):

    full          the profile build as the gemm_cycles records ran it (4 stages, lane issuer)
    nomma         GEMM_NO_MMA: no wgmma.mma_async (TMA, barriers, fence/commit/wait alone)
    notma         GEMM_DIAG_NO_TMA: the first S k-tiles are loaded, later ones reuse those stages
                  (operands already in shared memory: no refill TMA, no full-barrier wait)
    notma_nomma   both: the loop's barriers, fence, commit and wait alone
    nofullwait    GEMM_DIAG_NO_FULL_WAIT: the full-barrier wait moves after the k-tile's wgmmas
                  are issued (a race tolerated for timing only; phases stay valid)
    nowaitgroup   GEMM_DIAG_NO_WAIT_GROUP: no wgmma.wait_group inside the loop (race, timing only)
    (GEMM_DIAG_NO_FENCE, no wgmma.fence, is not run: ptxas re-injects the warpgroup.arrive (C7519)
    and the cubin is byte-identical to `full`'s, checked with nvcc 13.0 on all four bases)
    elect         tma_issuer elect (elect.sync picks the issuing lane) instead of lane 0
    s1, s2        1 and 2 pipeline stages instead of 4

each for four bases: single and ws1 (1 consumer warpgroup) at 128x128 (f16 in, f32 accumulators)
and at 128x256 (f16 accumulators: a 128x256 f32 tile needs 256 registers per thread in one
warpgroup). Every base is tn, 128B swizzle, 128-row boxes; M = BM, N = BN (one CTA on one SM).

Measurement: the GEMM_PROFILE=1 build (validation/gemm_profile.py) writes clock64 at the CTA's
entry and after its epilogue; each variant runs at K_SHORT and K_LONG, and the per-k-tile cost is
(median cycles at K_LONG - median cycles at K_SHORT) / (k-tiles difference): prologue, pipeline
fill and epilogue cancel. Timings: WARM launches, then REPS launches each read back; one input set
(L2-warm after the first launch). The diagnostic builds compute a wrong C (never checked here).
Records: kind `micro_single_loop`, one per (base, piece), with the per-k-tile cost, both Ks'
cycles, the clock (clock64 / %globaltimer), ptxas registers, warnings and its (C75xx) notes
(nvcc 13.0 says C7517 "warpgroup.wait is injected ... to allow use of registers defined by GMMA"
for every single-variant build with 2 or more stages, never for ws1: look at the SASS of the
loop), and provenance. Runs on the GPU machine (numpy, cupy inside functions, stdlib,
kernels.params, validation.harness / gemm_profile / provenance).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import pathlib
import statistics
import sys
import time
from dataclasses import dataclass

from kernels.params import GemmParams
from validation import harness as H
from validation.gemm_profile import NO_MMA_FLAGS, compile_profile, profile_launcher
from validation.gemm_runs import SINGLE, WS1
from validation.provenance import device_provenance, write_record

#: the two problem depths whose difference gives the per-k-tile cost (64 and 192 k-tiles of 64)
K_SHORT, K_LONG = 4096, 12288
#: launches before the measured ones, and measured launches per (variant, K)
WARM, REPS = 20, 7
KIND = "micro_single_loop"

#: the bases: (name, GemmParams fields); one CTA (m = bm, n = bn)
BASES = (
    ("single_128x128", {**SINGLE}),
    ("ws1_128x128", {**WS1}),
    ("single_128x256", {**SINGLE, "bn": 256, "accum": "f16"}),
    ("ws1_128x256", {**WS1, "bn": 256, "accum": "f16"}),
)
NO_TMA = ("-DGEMM_DIAG_NO_TMA=1",)
#: the pieces: (name, GemmParams changes, extra nvcc flags)
PIECES = (
    ("full", {}, ()),
    ("nomma", {}, NO_MMA_FLAGS),
    ("notma", {}, NO_TMA),
    ("notma_nomma", {}, NO_TMA + NO_MMA_FLAGS),
    ("nofullwait", {}, ("-DGEMM_DIAG_NO_FULL_WAIT=1",)),
    ("nowaitgroup", {}, ("-DGEMM_DIAG_NO_WAIT_GROUP=1",)),
    ("elect", {"tma_issuer": "elect"}, ()),
    ("s1", {"stages": 1}, ()),
    ("s2", {"stages": 2}, ()),
)


@dataclass(frozen=True)
class Variant:
    """One (base, piece): its build flags and the configuration at both depths."""

    name: str
    base: str
    piece: str
    short: GemmParams
    long: GemmParams
    flags: tuple


def variants() -> list[Variant]:
    """Every (base, piece) in a stable order (bases outer)."""
    out = []
    for bname, fields in BASES:
        for piece, changes, flags in PIECES:
            d = {**fields, **changes}
            short = GemmParams(m=d["bm"], n=d["bn"], k=K_SHORT, **d)
            out.append(Variant(f"{bname}__{piece}", bname, piece, short, short.replace(k=K_LONG), tuple(flags)))
    return out


def per_ktile(cycles_short: float, cycles_long: float, k_short: int = K_SHORT, k_long: int = K_LONG,
              bk: int = 64) -> float:
    """Cycles per k-tile from the CTA's cycles at two depths (what does not scale with K cancels)."""
    return (cycles_long - cycles_short) / ((k_long - k_short) // bk)


def stamps(prof) -> tuple[int, float | None]:
    """One CTA's {smid, c0, c1, g0, g1}: (cycles c1 - c0, MHz = cycles / ns of the same span)."""
    c = int(prof[2]) - int(prof[1])
    ns = int(prof[4]) - int(prof[3])
    return c, (c / ns * 1e3 if ns > 0 else None)


def time_build(p: GemmParams, compiled, warm: int = WARM, reps: int = REPS) -> dict:
    """`warm` launches, then `reps` launches each read back: the CTA's cycles and clock per launch."""
    import cupy as cp

    launch, prof = profile_launcher(p, compiled)
    for _ in range(warm):
        launch()
    cp.cuda.Device().synchronize()
    H.check_last_error(f"warm {p.tag}")
    cycles, mhz = [], []
    for _ in range(reps):
        launch()
        cyc, clk = stamps(cp.asnumpy(prof))
        cycles.append(cyc)
        mhz.append(clk)
    H.check_last_error(f"reps {p.tag}")
    return {"cycles": cycles, "cycles_median": statistics.median(cycles),
            "clock_mhz": statistics.median([m for m in mhz if m]) if any(mhz) else None}


def summarise(v: Variant, short: dict, long: dict) -> dict:
    """The record payload of one variant from its two depths' timings."""
    return {"base": v.base, "piece": v.piece, "extra_nvcc_flags": list(v.flags),
            "params_short": v.short.to_dict(), "params_long": v.long.to_dict(),
            "k_tiles_short": v.short.k // 64, "k_tiles_long": v.long.k // 64,
            "short": short, "long": long,
            "cycles_per_ktile": per_ktile(short["cycles_median"], long["cycles_median"], v.short.k, v.long.k),
            "method": "GEMM_PROFILE=1 clock64 per CTA (1 CTA, 1 SM), median of reps at two K; "
                      "difference / k-tiles difference"}


def ptxas_notes(compiled) -> list[str]:
    """ptxas's (C75xx) lines of a build's log (e.g. an injected warpgroup.wait), [] without a log."""
    cubin = getattr(compiled, "cubin", None)
    if cubin is None:
        return []
    log = pathlib.Path(cubin).with_suffix(".log")
    if not log.is_file():
        return []
    return [ln.strip() for ln in log.read_text().splitlines() if "(C75" in ln]


def _compile(job):
    p, flags = job
    return compile_profile(p, None, flags)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m validation.micro_single_loop", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=pathlib.Path, help="directory for the micro_single_loop records")
    ap.add_argument("--list", action="store_true", help="print the variants and their builds, run nothing")
    ap.add_argument("--only", help="comma-separated base or piece names to run (default all)")
    ap.add_argument("--budget", type=float, default=50.0, help="seconds; stops cleanly after")
    args = ap.parse_args(argv)
    vs = variants()
    if args.only:
        want = set(args.only.split(","))
        known = {v.base for v in vs} | {v.piece for v in vs}
        bad = sorted(want - known)
        if bad:
            print(f"--only: unknown name(s) {', '.join(bad)}; valid: {', '.join(sorted(known))}", file=sys.stderr)
            return 2
        vs = [v for v in vs if v.base in want or v.piece in want]
    if args.list:
        for v in vs:
            print(f"{v.name}: {v.short.tag} / k={v.long.k} {' '.join(v.flags)}")
        print(f"{len(vs)} variants, {2 * len(vs)} builds", file=sys.stderr)
        return 0
    if not args.out:
        ap.error("--out DIR is required to run")
    t0 = time.time()
    jobs = [(p, v.flags) for v in vs for p in (v.short, v.long)]
    with cf.ProcessPoolExecutor(max_workers=os.cpu_count() or 8) as ex:
        built = list(ex.map(_compile, jobs))
    print(f"compiled {len(jobs)} in {time.time() - t0:.0f} s", flush=True)
    prov = device_provenance()
    args.out.mkdir(parents=True, exist_ok=True)
    done = 0
    for i, v in enumerate(vs):
        if time.time() - t0 > args.budget:
            print(f"budget reached after {done} variants", flush=True)
            break
        cs, cl = built[2 * i], built[2 * i + 1]
        payload = {"registers": getattr(cs, "registers", None), "ptxas_warnings": getattr(cs, "warnings", []),
                   "ptxas_notes": ptxas_notes(cs)}
        try:
            for comp in (cs, cl):
                if isinstance(comp, Exception):
                    raise comp
            payload.update(summarise(v, time_build(v.short, cs), time_build(v.long, cl)))
            payload["status"] = "ok"
        except Exception as e:  # noqa: BLE001  (reported per variant)
            payload.update({"base": v.base, "piece": v.piece, "status": "error",
                            "error": f"{type(e).__name__}: {e}"[-2000:]})
        write_record(KIND, v.name, payload, prov, args.out)
        done += 1
        cpk = payload.get("cycles_per_ktile")
        print(f"{v.name}: {cpk:.1f} cycles/k-tile" if cpk is not None else f"{v.name}: {payload['error'][:200]}",
              flush=True)
    print(f"done {done} of {len(vs)} in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
