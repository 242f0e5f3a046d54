"""Simulate one configuration of the TMA + WGMMA GEMM family (the `simulate gemm` job).

    from kernels.params import GemmParams
    from hopsim.gemm_sim import simulate_gemm
    run = simulate_gemm(GemmParams(m=4096, n=4096, k=4096, stages=4))
    run.result.cycles, run.time_ms, run.tflops

Two modes, chosen by `mode=`:

    "fast"   timing only (no data values), per-SM memory partitions and CTA memoisation
             (hopsim/timing/memo.py): cycles equal the full timing-only run's on the test set
             (tests/timing/test_memo.py); what large problems use.
    "full"   data values through simulated shared memory (the real product), one shared L2/HBM
             link for the chip; slow (functional execution of every instruction); for `check=True`.
    "auto"   (default) "full" when check=True, else "fast".

With one CTA per SM, CTAs are memoised (memo.py); with more, SMs of equal history share one
detailed simulation (hopsim/timing/smclass.py); both exact against the same mode without memo. A
kernel the SM-level memo cannot take (an ld.global) is simulated CTA by CTA, noted in `run.notes`.

`simulate_gemm_clocked(params, gpu, clock)` runs at 'sustained' (the power model's clock under
the 700 W limit, hopsim/power/solve.py), 'boost' (1980 MHz) or a clock in MHz, and attaches the
boost and sustained points, predicted power and energy per launch (docs/guide/power-model.md).

`simulate_point(point) -> dict` is the sweep function (`hopsim sweep`, hopsim/sweep.py): a point is
a dict of `GemmParams` fields plus `gpu`, `clock` (default sustained) and optionally
`sm_clock_mhz` (a record's measured SM clock, which then decides) and `loop` (rotated | same,
default rotated); it returns cycles, time_ms,
tflops, ctas_per_sm, waves, the clock/power columns and the stall breakdown as flat columns.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hopsim.config import load_gpu
from hopsim.config.power import tensor_variant
from hopsim.gemm_setup import read_result, reference, setup_gemm
from hopsim.power.model import Events, PowerModel
from hopsim.power.solve import ClockSolution, ClockSolver, parse_clock
from hopsim.timing.runner import simulate
from isa.errors import HopsimError, InputError
from kernels.gemm import build_gemm, build_gemm_nomma
from kernels.params import GemmParams

MODES = ("auto", "fast", "full")
#: --check runs the functional machine on every instruction; above this many MACs it takes minutes.
CHECK_MAX_MACS = 512 * 512 * 512


#: The timing field each GEMM twin's copies stand for in hopsim/timing/sm.py (tma_issue_cycles
#: for a lane-guarded copy, tma_issue_elect_cycles for an elect.sync-guarded one), by (variant,
#: tma_issuer), and the field that holds what the twin's SASS makes of them
#: (hopsim/validate/calibrate_sass.py: the twin's SASS per box x cycles per SASS class).
TWIN_TMA_ISSUE = {
    ("single", "lane"): ("tma_issue_cycles", "gemm_single_lane_tma_issue_cycles"),
    ("single", "elect"): ("tma_issue_elect_cycles", "gemm_single_elect_tma_issue_cycles"),
    ("ws", "lane"): ("tma_issue_cycles", "gemm_ws_lane_tma_issue_cycles"),
    ("ws", "elect"): ("tma_issue_elect_cycles", "gemm_ws_elect_tma_issue_cycles"),
}


def twin_issue_costs(gpu, params: GemmParams):
    """`gpu` with the per-box TMA issue hold of the GEMM's CUDA twin: the IR predicates its copies
    on one lane in every variant, while ptxas issues the twin's copies on different paths (single:
    lane 0 branched around each box + the per-lane ELECT loop; ws: thread 0 alone, unpredicated, in
    the ELECT loop; elect: the uniform path), each with its own SASS per box."""
    target, field = TWIN_TMA_ISSUE[(params.variant, params.tma_issuer)]
    return gpu.with_timing(**{target: gpu.timing.params()[field]})


class CheckFailed(HopsimError):
    """The simulated GEMM result differs from numpy beyond the dtype's tolerance."""


@dataclass
class GemmRun:
    """One simulated GEMM: the parameters, the timed result and (with check) the numeric check."""

    params: GemmParams
    result: Any                       # hopsim.result.SimResult
    mode: str
    wall_s: float
    notes: list[str] = field(default_factory=list)
    check: dict | None = None         # {"rel_err", "max_abs_err", "tolerance", "ok"}
    clock: ClockSolution | None = None  # boost and sustained points (simulate_gemm_clocked)
    power_w: float | None = None      # predicted board power at the result's clock
    energy_mj: float | None = None    # predicted energy of one launch at the result's clock
    clock_mhz: float | None = None    # the SM clock NVML reports (result.clock_mhz: the SMs' own)

    @property
    def cycles(self) -> int:
        return self.result.cycles

    @property
    def time_ms(self) -> float:
        return self.result.time_ms

    @property
    def tflops(self) -> float:
        """Useful FLOPs (2 M N K) over the simulated time."""
        s = self.time_ms * 1e-3
        return self.params.flops / s / 1e12 if s > 0 else 0.0

    def to_json(self) -> dict:
        r = self.result.to_json()
        r.update({"cycles": self.cycles, "time_ms": self.time_ms, "tflops": self.tflops,
                  "ctas_per_sm": self.result.ctas_per_sm, "waves": self.result.waves,
                  "mode": self.mode, "sim_wall_s": round(self.wall_s, 3), "notes": self.notes,
                  "params": self.params.to_dict()})
        if self.check is not None:
            r["check"] = self.check
        if self.clock is not None:
            r.update(clock_fields(self))
        return r


def tolerance(params: GemmParams) -> float:
    """Relative (Frobenius) error allowed against the float64 product: output rounding to the
    dtype (f16 2^-11, bf16 2^-8 relative) dominates; f16 accumulation adds about sqrt(K) roundings
    of 2^-11 each. Bounds with a factor 4 of headroom over those estimates."""
    unit = 2.0 ** -8 if params.dtype == "bf16" else 2.0 ** -11
    acc = (params.k ** 0.5) * 2.0 ** -11 if params.accum == "f16" else 0.0
    return 4 * (unit + acc)


def checked_mode(params: GemmParams, mode: str, check: bool, no_mma: bool) -> str:
    """The simulation mode that `mode` ("auto": full with a check, else fast) means, after
    refusing what cannot run: an unknown mode, a check in the fast mode or with no_mma, a check
    above CHECK_MAX_MACS (InputError; before any simulation)."""
    if mode not in MODES:
        raise InputError("mode", mode, "one of " + ", ".join(MODES))
    if mode == "auto":
        mode = "full" if check else "fast"
    if check and mode != "full":
        raise InputError("mode", mode, "'full' (or auto) with --check: the fast mode computes no values")
    macs = params.m * params.n * params.k
    if check and macs > CHECK_MAX_MACS:
        raise InputError("check", f"{params.m}x{params.n}x{params.k}",
                         f"a problem of at most {CHECK_MAX_MACS} multiply-adds (e.g. 512x512x512): "
                         "--check runs every instruction functionally")
    if no_mma and check:
        raise InputError("check", "with no-mma", "no check: the twin without wgmma.mma_async computes no product")
    return mode


def simulate_gemm(params: GemmParams, gpu=None, *, mode: str = "auto", check: bool = False,
                  trace: bool = False, seed: int = 0, max_cycles: int | None = None,
                  plan_cache: dict | None = None, trace_sms: frozenset | None = None,
                  loop: str = "rotated", no_mma: bool = False) -> GemmRun:
    """Build the IR kernel of `params` (kernels/gemm/) and time it on `gpu` (default H100 SXM,
    calibrated). `check=True` runs with values and compares the product with numpy (raises
    `CheckFailed` beyond `tolerance(params)`); it is refused above CHECK_MAX_MACS. `trace_sms`: with
    `trace`, record only those SMs (timing/runner.py simulate; None: every SM). `loop`: "rotated"
    (default: a cold L2, the records' rotated buffers) or "same" (a loop over the same buffers: A
    and B L2-resident at the start when they fit, hopsim/timing/launch.py). `no_mma`: the
    diagnostic twin without wgmma.mma_async (kernels/gemm build_gemm_nomma: the H100's
    `gemm_cycles_nomma` microbenchmark, -DGEMM_NO_MMA=1); timing only (C is wrong)."""
    mode = checked_mode(params, mode, check, no_mma)
    gpu = twin_issue_costs(gpu or load_gpu(), params)
    gk = build_gemm_nomma(params) if no_mma else build_gemm(params)
    values = mode == "full"
    gmem, launch, a, b = setup_gemm(params, gk, seed=seed, values=values)
    notes: list[str] = []
    kw: dict[str, Any] = {}
    if mode == "fast":
        kw.update(memory="partitioned", memo=True)
    t0 = time.perf_counter()
    res = simulate(gk.kernel, launch, gpu, values=values, trace=trace, gmem=gmem,
                   flop_count=params.flops, regs_per_thread=gk.regs_per_thread,
                   max_cycles=max_cycles, plan_cache=plan_cache, trace_sms=trace_sms, loop=loop, **kw)
    wall = time.perf_counter() - t0
    run = GemmRun(params, res, mode, wall, notes)
    if mode == "fast" and str(res.extra.get("sm_memo", "")).startswith("off"):
        notes.append(f"{res.ctas_per_sm} CTAs per SM: SM-level memoisation {res.extra['sm_memo']}")
    if check:
        c = read_result(gmem, params).astype(np.float64)
        ref = reference(a, b, params)
        err = float(np.linalg.norm(c - ref) / max(np.linalg.norm(ref), 1e-30))
        tol = tolerance(params)
        run.check = {"rel_err": err, "max_abs_err": float(np.max(np.abs(c - ref))),
                     "tolerance": tol, "ok": bool(err <= tol)}
        if not err <= tol:
            raise CheckFailed(f"check: simulated C differs from numpy: relative error {err:.3g} > "
                              f"{tol:.3g} allowed for {params.dtype}/{params.accum} (K={params.k})")
    return run


# --------------------------------------------------------------------------- clocks


def clock_fields(run: GemmRun) -> dict:
    """The clock/power columns of a clocked run (JSON and sweep rows)."""
    sol = run.clock
    tf_w = run.tflops / run.power_w if run.power_w else None
    return {"clock_mhz": run.clock_mhz, "sm_clock_mhz": run.result.clock_mhz, "time_ms_boost": sol.boost.time_ms,
            "time_ms_sustained": sol.sustained.time_ms, "sustained_clock_mhz": sol.sustained.mhz,
            "power_w": run.power_w, "energy_mj": run.energy_mj, "tflops_per_w": tf_w,
            "power_w_boost": sol.boost.power_w, "power_w_sustained": sol.sustained.power_w,
            "power": {"boost": sol.boost.to_json(), "sustained": sol.sustained.to_json(),
                      "limit": sol.limit, "simulations": sol.simulations,
                      "single_launch_boost": sol.single_launch_boost,
                      "governor_reaction_s": sol.reaction_s}}


#: Warp waits on SM-clock work (cycles that do not shrink as the SM clock falls): ALU latency, the
#: issuing thread's TMA and wgmma holds, wgmma sync and wait_group (the tensor cores), try_wait
#: round trips, bar.sync (hopsim/timing/sm.py wait names). The rest (mbarrier waits for TMA data,
#: gmem) waits on L2/HBM, whose latency and bandwidth are fixed in ns and bytes/s.
SM_CLOCK_WAITS = ("alu_latency", "tma_issue", "wgmma_issue", "wgmma_sync", "mbarrier_try_wait",
                  "wgmma.wait_group")


def sm_share(res) -> float:
    """The clock solve's prior (hopsim/power/solve.py): the share of a GEMM's cycles at the boost
    clock that are SM-clock work: the larger of the tensor pipe's busy share (the wgmma work is a
    fixed number of SM cycles) and, for the busiest warp role, its issue cycles plus its waits on
    SM-clock work (`SM_CLOCK_WAITS`, bar.sync) over its lifetime (a launch bound by the TMA issue
    hold of its producer warp is SM-bound even with idle tensor cores)."""
    best = float(res.busy.get("tensor", 1.0))
    for role in (res.roles or {}).values():
        life = role.get("lifetime", 0)
        if life > 0:
            waits = role.get("wait", {})
            sm = role.get("issue", 0) + sum(v for k, v in waits.items()
                                            if k in SM_CLOCK_WAITS or k.startswith("bar.sync"))
            best = max(best, sm / life)
    return min(1.0, best)


def simulate_gemm_clocked(params: GemmParams, gpu=None, clock: Any = "sustained", *, mode: str = "auto",
                          check: bool = False, trace: bool = False, seed: int = 0,
                          power: PowerModel | None = None, sm_clock_mhz: float | None = None,
                          trace_sms: frozenset | None = None, loop: str = "rotated",
                          no_mma: bool = False) -> GemmRun:
    """`simulate_gemm` at the clock `clock` ('sustained': the highest supported clock within the
    power model's limits, hopsim/power/solve.py; 'boost': the maximum; or MHz), with the boost
    and sustained points and the predicted power/energy attached (run.clock, run.power_w).
    The clock solve re-times the launch at candidate clocks (cached by clock); check/trace
    runs once more at the chosen clock when they are asked for. Clocks are the SM clock NVML
    reports; the launch's cycles run at `tensor_sm_clock_ratio` x it (the GEMM uses the tensor
    cores; hopsim/config/power.py). `sm_clock_mhz` (a run's measured SM clock, clock64 /
    %globaltimer): the result is simulated at exactly that SM clock instead of `clock`, its
    reported clock being sm_clock_mhz / the ratio. `trace_sms`: the SMs a trace records (None: all).
    `loop`, `no_mma`: as in `simulate_gemm`, for every simulation of the solve."""
    checked_mode(params, mode, check, no_mma)  # refuse a bad request before the clock solve simulates
    gpu = gpu or load_gpu()
    pm = power or PowerModel.load(gpu.name)
    choice = parse_clock(clock, pm)
    variant = tensor_variant(params.dtype, params.accum)
    runs: dict[float, GemmRun] = {}
    solve_mode = "fast" if mode == "auto" else mode
    plans: dict = {}  # the tile plan does not depend on the clock (timing/runner.py plan_cache)

    def at(mhz: float):
        runs[mhz] = simulate_gemm(params, gpu.at_clock(mhz), mode=solve_mode, seed=seed, plan_cache=plans, loop=loop,
                                  no_mma=no_mma)
        return runs[mhz].result

    solver = ClockSolver(at, lambda res: Events.from_result(res, variant, int(gpu.spec.num_sms.value)), pm,
                         sm_share=sm_share, clock_ratio=pm.sm_clock_ratio(tensor_cores=True))
    sol = solver.solve()
    mhz = {"sustained": sol.sustained.mhz, "boost": sol.boost.mhz}.get(choice, choice)
    sm = solver.sm_mhz(mhz)
    if sm_clock_mhz is not None:                   # a measured SM clock: no supported-clock rounding
        sm = float(sm_clock_mhz)
        mhz = sm / solver.clock_ratio
        if sm not in runs:
            at(sm)
    pt = solver.point(mhz) if sm_clock_mhz is None else solver.point_of(mhz, runs[sm].result)
    wall = sum(r.wall_s for r in runs.values())
    if check or trace:  # a traced run's tile plan is the solve's (the same fast mode; not --check's values)
        run = simulate_gemm(params, gpu.at_clock(sm), mode=mode, check=check, trace=trace, seed=seed,
                            trace_sms=trace_sms, loop=loop, no_mma=no_mma, plan_cache=None if check else plans)
        wall += run.wall_s
    else:
        run = runs[sm]
    run.wall_s = wall
    run.clock, run.power_w, run.energy_mj, run.clock_mhz = sol, pt.power_w, pt.energy_mj, float(mhz)
    return run


# --------------------------------------------------------------------------- sweeps

_POINT_KEYS = {f.name for f in dataclasses.fields(GemmParams)}


def params_of(point: dict) -> GemmParams:
    """GemmParams from a sweep point (unknown keys other than `gpu` are an error)."""
    d = {k: v for k, v in point.items() if k not in ("gpu", "sm_clock_mhz", "clock", "loop")}
    return GemmParams.from_dict(d)


#: The columns every sweep row of `simulate_point` has (besides its knobs); busy_<unit> and
#: wait_<role>_<reason> columns follow the run (ROW_PREFIXES).
ROW_COLUMNS = ("cycles", "time_ms", "tflops", "ctas_per_sm", "waves", "limiting", "bytes_hbm",
               "bytes_l2", "bank_conflicts", "sim_wall_s", "clock_mhz", "time_ms_boost",
               "time_ms_sustained", "sustained_clock_mhz", "power_w", "energy_mj", "tflops_per_w")
ROW_PREFIXES = ("busy_", "wait_")


def flat_row(run: GemmRun) -> dict:
    """The columns a sweep row gets: the contract keys plus utilisation and stall cycles."""
    r = run.result
    row = {"cycles": run.cycles, "time_ms": run.time_ms, "tflops": run.tflops,
           "ctas_per_sm": r.ctas_per_sm, "waves": r.waves, "limiting": r.limiting,
           "bytes_hbm": r.bytes_hbm, "bytes_l2": r.bytes_l2, "bank_conflicts": r.bank_conflicts,
           "sim_wall_s": round(run.wall_s, 3)}
    if run.clock is not None:
        row.update({k: v for k, v in clock_fields(run).items() if k != "power"})
    for unit, v in r.busy.items():
        row[f"busy_{unit}"] = round(float(v), 4)
    for role, d in r.roles.items():
        for what, cyc in d.get("wait", {}).items():
            row[f"wait_{role}_{what}"] = cyc
    return row


def simulate_point(point: dict) -> dict:
    """Sweep function: simulate the GEMM configuration `point` (fast mode) -> flat result row,
    at the point's `clock` (sustained | boost | MHz reported; default sustained), or at the SM clock
    `sm_clock_mhz` when the point has one (a record's measured SM clock: the `--compare-records`
    and `validate compare` basis; simulated at exactly that clock, no ratio)."""
    gpu = load_gpu(point.get("gpu") or "h100_sxm")
    loop = point.get("loop") or "rotated"
    if point.get("sm_clock_mhz"):
        return flat_row(simulate_gemm_clocked(params_of(point), gpu, "boost", sm_clock_mhz=point["sm_clock_mhz"],
                                              loop=loop))
    return flat_row(simulate_gemm_clocked(params_of(point), gpu, point.get("clock") or "sustained", loop=loop))
