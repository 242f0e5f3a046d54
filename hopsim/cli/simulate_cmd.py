"""`hopsim simulate gemm ...` and `hopsim simulate FILE.ptx ...`.

`simulate gemm` builds the IR GEMM of the knobs (kernels/gemm/) and times it (hopsim/gemm_sim.py).
Any knob given as a list (8,64,128) or range (1-6) makes a sweep: every point is simulated (local
process pool) and a table of time and speed-up against the first point is printed.

`simulate FILE.ptx` runs an IR kernel from text: launch shape, parameters, input buffers and tensor
maps from flags or a `--launch spec.yaml`; outputs can be saved as .npy.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import pathlib
import sys
import tempfile

import numpy as np

from hopsim import gemm_sim, inputs, sweep
from hopsim.cli import _Parser, attention_cmd, launch, membound_cmd, missing_command, rowwise_cmd, sweep_cmd, tmacopy_cmd
from hopsim.cli.family_run import add_loop_argument, loop_notes, loop_of
from hopsim.config import load_gpu
from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.plots import TIMELINE_SMS, first_cta_windows, plot_sweep, plot_timeline, pyplot, timeline_boxes
from hopsim.power.model import Events, PowerModel
from hopsim.power.solve import ClockSolver, parse_clock
from hopsim.progress import Activity
from hopsim.summary import format_summary
from hopsim.timing.runner import SimulationLimit, rare_full_collections, simulate
from isa.errors import HopsimError, InputError
from isa.ir import check, parse, verify
from isa.ir.program import LabelDef
from kernels.gemm import build_gemm

GEMM_EXAMPLE = """examples:
  hopsim simulate gemm --m 4096 --n 4096 --k 4096 --dtype f16 --accum f32 --layout tn \\
      --tile 128x128x64 --stages 4 --tma-box-rows 128 --swizzle 128B --variant single \\
      --ctas-per-sm auto --epilogue direct --raster row --gpu h100_sxm
  hopsim simulate gemm --m 4096 --n 4096 --k 4096 --stages 1-6 --plot timeline.png
  hopsim simulate gemm --m 256 --n 256 --k 256 --variant warp-specialized --check
  hopsim simulate gemm --tile 128x256x64 --variant ws --consumers 2 --json
  hopsim simulate gemm --m 256 --n 256 --k 256 --emit-ir > gemm.ptx   (the IR + its launch)
  hopsim simulate gemm --m 512 --n 512 --k 4096 --stages 1-4 --loop rotated,same   (cold / warm L2)

Any knob may be a list (8,64,128) or a range (1-6): each point is simulated and a table of time
and speed-up against the first point is printed; --plot then draws the fastest point's timeline
and --sweep-plot the time against the first swept knob. --loop too: one value runs every point in
that loop (a `loop: ...` header line), a list rotated,same sweeps both (a `loop` column)."""

PTX_EXAMPLE = """examples:
  hopsim simulate kernel.ptx --grid 1 --block 128 --param KT=4 \\
      --buffer A=random:f16:64x256 --buffer B=random:f16:64x256 --buffer D=zeros:f32:64x64 \\
      --tensor-map tmA=A:64x64:128B --tensor-map tmB=B:64x64:128B --save D=d.npy
  hopsim simulate kernel.ptx --launch launch.yaml --json --trace kernel.trace.json

buffers:      NAME=FILE.npy | NAME=zeros:DTYPE:SHAPE | NAME=random:DTYPE:SHAPE[:SEED]
              (default SEED: from NAME, so two random buffers differ)
              | NAME=arange:DTYPE:SHAPE   (DTYPE f16 bf16 f32 f64 u8 u16 u32 u64 s32 s64;
              SHAPE like 64x256, row-major)
tensor maps:  NAME=BUFFER:BOXCOLSxBOXROWS[:SWIZZLE]  (a 2-D row-major tiled map over a 2-D
              buffer; SWIZZLE none 32B 64B 128B, default 128B)
parameters:   a kernel .param named like a buffer gets its address, one named like a tensor map
              its handle; others from --param NAME=VALUE.
launch.yaml:  (docs/ir.md, "Running a kernel file"; smem = dynamic shared bytes)
              {grid: [x, y, z], block: [x, y, z], smem: BYTES, params: {KT: 4},
               buffers: {A: "random:f16:64x256"}, tensor_maps: {tmA: "A:64x64:128B"},
               save: {D: d.npy}}"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="time a GEMM configuration (simulate gemm) or an IR kernel file",
                       description=__doc__, epilog=GEMM_EXAMPLE + "\n\n" + PTX_EXAMPLE,
                       formatter_class=argparse.RawDescriptionHelpFormatter, add_help=False)
    p.add_argument("target", nargs="?", metavar="gemm|vecadd|copy|tmacopy|rowsum|softmax|attention|FILE.ptx",
                   help="'gemm' for the GEMM family, 'vecadd', 'copy' or 'tmacopy' for the memory-bound kernels, "
                        "'rowsum' or 'softmax' for the row-wise kernels, 'attention' for one attention tile "
                        "per CTA, or an IR kernel file")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="options of that form (see --help of each)")
    p.add_argument("-h", "--help", action="store_true", help="show this help")
    p.set_defaults(func=run, _simulate_parser=p)


# ----------------------------------------------------------------------------- gemm


def gemm_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="hopsim simulate gemm", description="Simulate the TMA + WGMMA GEMM family "
                "on the H100 model: cycles, time, TFLOP/s, where warps waited, unit utilisation, "
                "bank conflicts.", epilog=GEMM_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("knobs (a value, a list 8,64,128 or a range 1-6)")
    for kn in sweep.KNOBS:
        if kn.name == "loop":  # the knobs group's --loop, with the same text as the other families'
            add_loop_argument(g, dest="knob_loop", more_help="; a list rotated,same sweeps both (a `loop` column)")
            continue
        domain = kn.allowed if kn.name != "gpu" else "h100_sxm"
        extra = " (also warp-specialized)" if kn.name == "variant" else ""
        g.add_argument(f"--{kn.flag}", dest=f"knob_{kn.name}", metavar="V",
                       help=f"{kn.help}; {domain}{extra}")
    g.add_argument("--clock", default="sustained", metavar="sustained|boost|MHZ",
                   help="SM clock: sustained (default; the highest supported clock within the "
                        "power model's limits, what a benchmark loop sees), boost (1980 MHz, a "
                        "single short launch) or MHz, the clock NVML reports (a tensor kernel's SMs "
                        "run at tensor_sm_clock_ratio x it, `hopsim config show`)")
    g.add_argument("--sm-clock", metavar="MHZ", type=str, default=None,
                   help="simulate with the SMs at exactly MHZ (a measured clock64 / %%globaltimer clock, "
                        "100..1980); replaces --clock; the reported clock is MHZ / tensor_sm_clock_ratio")
    o = p.add_argument_group("output")
    o.add_argument("--json", action="store_true", help="one JSON object (a list for a sweep)")
    o.add_argument("--trace", metavar="FILE.json", help="write the Perfetto / Chrome trace")
    o.add_argument("--plot", metavar="FILE.png", help="timeline picture (the fastest point of a sweep)")
    o.add_argument("--plot-cycles", type=int, metavar="N",
                   help="timeline of the first N cycles (default: the first CTA's prologue and "
                        "first k-tiles, then its last k-tiles and epilogue, on a broken axis)")
    o.add_argument("--sweep-plot", metavar="FILE.png", help="time against the first swept knob")
    o.add_argument("--emit-ir", action="store_true",
                   help="print the IR kernel the knobs build, its launch as `// launch:` comment "
                        "lines (a --launch YAML for `simulate FILE.ptx`), and exit without simulating")
    o.add_argument("--check", action="store_true",
                   help="compute the real product through simulated shared memory and compare with "
                        "numpy (small problems only)")
    o.add_argument("--no-mma", action="store_true",
                   help="diagnostic: the twin without wgmma.mma_async (the H100's -DGEMM_NO_MMA=1 build: the TMA "
                        "issue, mbarrier handshakes and epilogue alone; validation/records/h100/nomma); one "
                        "point, no --check")
    o.add_argument("--mode", default="auto", choices=("auto", "fast", "full"),
                   help="fast: timing only + memoisation (default); full: with data values")
    o.add_argument("--jobs", type=int, help="worker processes for a sweep (default: CPUs + 1)")
    o.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def _activity(args, desc: str):
    """An elapsed-time line on stderr for a run longer than 2 s (hopsim/progress.py)."""
    return Activity(desc, enabled=False if getattr(args, "no_progress", False) else None)


def _launch_rows(run) -> dict:
    gk = build_gemm(run.params)
    p = run.params
    return {"Grid Size": ("", "x".join(str(g) for g in gk.grid)),
            "Block Size": ("", "x".join(str(b) for b in gk.block)),
            "Dynamic Shared Memory Per Block": ("byte", int(gk.dynamic_smem)),
            "Registers Per Thread (estimate)": ("", int(gk.regs_per_thread)),
            "Pipeline": ("", f"{p.stages} stages x {p.stage_bytes // 1024} KB, "
                             f"{p.boxes_per_stage} TMA boxes/stage")}


def _title(p) -> str:
    v = f"ws x{p.consumers}" if p.variant == "ws" else "single"
    return (f"gemm {p.m}x{p.n}x{p.k} {p.dtype}/{p.accum} {p.layout} tile {p.bm}x{p.bn}x{p.bk} "
            f"{p.stages} stages, box rows {p.box_rows}, {p.swizzle}, {v}, ctas/SM {p.ctas_per_sm}, "
            f"{p.epilogue}, {p.raster}")


@rare_full_collections  # the boxes would start a full collection over the traced run
def _timeline(run, path: str, window: int | None) -> None:
    res = run.result
    p = run.params
    per_ktile = res.cycles / max(1, res.waves) / max(1, p.k // p.bk)
    boxes = timeline_boxes(res.trace, res.clock_mhz)  # read once for the windows and the drawing
    if window is not None:
        plot_timeline(boxes, path, title=_title(p), max_cycles=window, clock_mhz=res.clock_mhz,
                      total_cycles=res.cycles)
        return
    # the first CTA: prologue + about 6 k-tiles, then its last 3 k-tiles and the epilogue
    head = int(min(res.cycles, 3000 + 6 * per_ktile))
    wins = first_cta_windows(boxes, head, tail_cycles=1500 + 3 * per_ktile, clock_mhz=res.clock_mhz)
    plot_timeline(boxes, path, title=_title(p), windows=wins, clock_mhz=res.clock_mhz,
                  total_cycles=res.cycles)


def uses_tensor_cores(kernel) -> bool:
    """Whether an IR kernel issues wgmma (its SMs then run at tensor_sm_clock_ratio x the reported
    clock, hopsim/config/power.py)."""
    return any(ins.mnemonic.startswith("wgmma.mma_async") for _, ins in kernel.instructions())


def clock_notes(run) -> list[str]:
    """The boost and sustained times, the chosen clock's power and energy (issue 13)."""
    sol = run.clock
    r = run.result
    lines = [sol.summary(),
             f"at {run.clock_mhz:.0f} MHz (SMs at {r.clock_mhz:.0f}): {run.power_w:.0f} W, {run.energy_mj:.4g} mJ per launch, "
             f"{run.tflops / run.power_w:.3g} TFLOP/s per W (power model, random data)"]
    if sol.single_launch_boost:
        lines.append(f"a single launch ({sol.boost.time_ms:.3g} ms) ends before the clock governor "
                     f"reacts (~{sol.reaction_s * 1e3:.0f} ms): it runs at boost; a loop settles "
                     "at the sustained clock")
    return lines


def _emit_ir(grid, points: list, overrides: dict) -> int:
    """--emit-ir: the IR listing of one configuration (kernels/gemm/host.py), no simulation."""
    if len(points) > 1:
        kn = sweep.knob(grid.swept[0])
        raise InputError(kn.flag, overrides.get(kn.name), "one value with --emit-ir (it prints the "
                         "kernel of one configuration)")
    sys.stdout.write(build_gemm(gemm_sim.params_of(points[0])).listing)
    return 0


def run_gemm(argv: list[str]) -> int:
    args = gemm_parser().parse_args(argv)
    clock = parse_clock(args.clock, PowerModel.load())
    inputs.output_paths([("trace", args.trace, (".json",)), ("plot", args.plot, (".png",)),
                         ("sweep-plot", args.sweep_plot, (".png",))])
    if args.jobs is not None:
        inputs.bounded_int("jobs", args.jobs, 1, 4096, "a number of worker processes")
    if args.plot_cycles is not None:
        inputs.bounded_int("plot-cycles", args.plot_cycles, 1, 2**53, "a positive number of cycles")
    overrides = {kn.name: getattr(args, f"knob_{kn.name}") for kn in sweep.KNOBS
                 if getattr(args, f"knob_{kn.name}") is not None}
    grid = sweep.make_grid(sweep=overrides)
    sm_clock = None if args.sm_clock is None else inputs.bounded_float(
        "sm-clock", args.sm_clock, 100.0, 1980.0, "an SM clock in MHz")
    points = [{**p, "clock": clock, **({"sm_clock_mhz": sm_clock} if sm_clock else {})} for p in grid.points()]
    if args.emit_ir:
        return _emit_ir(grid, points, overrides)
    if args.no_mma and (len(points) != 1 or args.check):
        raise InputError("no-mma", f"{len(points)} points" + (" with --check" if args.check else ""),
                         "one configuration without --check (a diagnostic twin: its C is wrong)")
    if len(points) == 1:
        params = gemm_sim.params_of(points[0])
        loop = points[0].get("loop") or "rotated"  # --loop, checked as a knob (sweep_knobs.LOOP)
        inputs.gemm_limits(params, values=args.mode == "full" or args.check)
        gpu = load_gpu(points[0].get("gpu") or "h100_sxm")
        with _activity(args, f"simulating gemm {params.m}x{params.n}x{params.k}"):
            run = gemm_sim.simulate_gemm_clocked(params, gpu, clock, mode=args.mode, check=args.check,
                                                 trace=bool(args.trace or args.plot), sm_clock_mhz=sm_clock,
                                                 trace_sms=None if args.trace else TIMELINE_SMS, loop=loop,
                                                 no_mma=args.no_mma)
            with inputs.Outputs() as outs:
                if args.trace:
                    run.result.trace.write(outs.stage(args.trace))
                if args.plot:
                    _timeline(run, outs.stage(args.plot), args.plot_cycles)
        if args.json:
            print(json.dumps(run.to_json()))
        else:
            notes = clock_notes(run) + list(run.notes) + loop_notes(run.result) + [
                f"simulated in {run.wall_s:.1f} s ({run.mode} mode, {run.clock.simulations} clocks)"]
            if run.check:
                notes.append(f"check: relative error {run.check['rel_err']:.2e} against numpy "
                             f"(allowed {run.check['tolerance']:.1e}): OK")
            if args.trace:
                notes.append(f"trace written to {args.trace} (open in https://ui.perfetto.dev)")
            if args.plot:
                notes.append(f"timeline written to {args.plot}")
            print(format_summary(run.result, title=_title(params), launch=_launch_rows(run), notes=notes))
        return 0
    # ---- a sweep
    if args.check or args.trace:
        raise InputError("check" if args.check else "trace", True,
                         "a single configuration (no knob lists or ranges) with --check / --trace")
    ok_idx, bad, first_err = sweep_cmd._check_points(points, values=args.mode == "full")
    if not ok_idx:
        raise first_err
    if bad:
        print(f"hopsim simulate gemm: {len(bad)} of {len(points)} points are invalid and skipped "
              f"(first: {first_err})", file=sys.stderr)
    early = _EarlyPicture(args, list(points[0]), workers=min(args.jobs or sweep.default_jobs(), len(ok_idx)))
    got = sweep.run_sweep([points[i] for i in ok_idx], gemm_sim.simulate_point,
                          executor="process" if len(ok_idx) > 1 else "serial", jobs=args.jobs,
                          progress=not args.no_progress,
                          while_waiting=early if args.plot or args.sweep_plot else None)
    rows = [None] * len(points)
    for i, r in zip(ok_idx, got):
        rows[i] = r
    for i, msg in bad.items():
        rows[i] = {**points[i], "error": msg}
    if args.json:
        print(json.dumps(rows))
    else:
        sweep_cmd.print_table(rows, grid, "time_ms")
    with inputs.Outputs() as outs:
        _sweep_outputs(args, rows, grid, points, outs, early)
    return 1 if any(r.get("error") for r in rows) else 0


class _EarlyPicture:
    """A sweep's picture work done while its points run (sweep.run_sweep `while_waiting`): matplotlib
    is loaded once the workers have started, and the --plot timeline of the fastest point so far is
    made (its traced re-simulation, then the drawing, kept as the PNG's bytes) once no chunk is
    queued (no more pending than `workers`: every one left is running) while the workers run nicer
    (sweep.workers_yield): this work, which the sweep's end waits for, gets a CPU of its own and the
    last points share the others, so that it ends with them instead of after them (the README's main
    job since f6c6fb1: stages 1-3 end together, then 4-6 run on the 3 workers; waiting for no more
    than CPUs pending left the picture ~2 s alone at the end). `_sweep_outputs` uses
    that picture only when the fastest row of the whole sweep is that same row (else it simulates
    and draws its own): the picture is the one the finished sweep picks, byte for byte."""

    def __init__(self, args, keys: list, workers: int | None = None):
        self.args, self.keys = args, keys
        self.workers = workers or os.cpu_count() or 1  # the sweep's local workers
        self.loaded = False
        self.row = self.run = self.png = None

    def __call__(self, rows: list, pending: int) -> None:
        if not self.loaded:
            self.loaded = True
            pyplot()
            return
        if not self.args.plot or self.row is not None or pending > self.workers:
            return
        good = [r for r in rows if r is not None and isinstance(r.get("time_ms"), (int, float))]
        if good:
            self.row = min(good, key=lambda r: r["time_ms"])
            with sweep.workers_yield():  # the sweep's end waits for the picture: a CPU of its own
                self.run = _traced_run(self.row, self.keys)
                self.png = _drawn(self.run, self.args.plot_cycles)

    def run_of(self, row):
        """The early run when it is `row`'s, else None."""
        return self.run if row is self.row else None

    def png_of(self, row) -> bytes | None:
        """The early picture's PNG bytes when it is `row`'s, else None."""
        return self.png if row is self.row else None


def _drawn(run, window) -> bytes:
    """`_timeline`'s PNG of `run`, as bytes (drawn into a scratch file: the same bytes as at the
    destination, the PNG holds no file name)."""
    fd, tmp = tempfile.mkstemp(prefix="hopsim-timeline.", suffix=".png")
    os.close(fd)
    try:
        _timeline(run, tmp, window)
        return pathlib.Path(tmp).read_bytes()
    finally:
        os.unlink(tmp)


def _traced_run(row: dict, keys: list):
    """The --plot timeline's run of a sweep row's point: traced (TIMELINE_SMS), at the row's clock."""
    pt = {k: row[k] for k in keys}
    return gemm_sim.simulate_gemm(gemm_sim.params_of(pt), load_gpu(pt.get("gpu") or "h100_sxm")
                                  .at_clock(row.get("sm_clock_mhz") or row.get("clock_mhz")), trace=True,
                                  trace_sms=TIMELINE_SMS, loop=pt.get("loop") or "rotated")


def _sweep_outputs(args, rows, grid, points, outs, early=None) -> None:
    """--sweep-plot and --plot (the fastest point's timeline) of a sweep, staged in `outs`; `early`:
    an `_EarlyPicture` whose picture (or else run) is used when it is the fastest row's."""
    if args.sweep_plot:
        plot_sweep([r for r in rows if not r.get("error")], grid.swept[0], outs.stage(args.sweep_plot))
        print(f"sweep plot written to {args.sweep_plot}", file=sys.stderr)
    good = [r for r in rows if isinstance(r.get("time_ms"), (int, float))]
    if args.plot and good:
        best = min(good, key=lambda r: r["time_ms"])
        pt = {k: best[k] for k in points[0]}
        with _activity(args, "timeline of the fastest point"):
            png = early.png_of(best) if early is not None else None
            if png is not None:  # drawn while the last points ran
                pathlib.Path(outs.stage(args.plot)).write_bytes(png)
            else:
                run = (early.run_of(best) if early is not None else None) or _traced_run(best, list(points[0]))
                _timeline(run, outs.stage(args.plot), args.plot_cycles)
        knobs = ", ".join(f"{k}={pt[k]}" for k in grid.swept if k in pt)
        print(f"timeline of the fastest point ({knobs}) written to {args.plot}", file=sys.stderr)


# ----------------------------------------------------------------------------- FILE.ptx


def ptx_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="hopsim simulate FILE.ptx", description="Time an IR kernel from text on the "
                "H100 model (functional values through simulated memory, then the timing).",
                epilog=PTX_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--launch", metavar="FILE.yaml", help="launch spec (grid, block, smem, params, "
                   "buffers, tensor_maps, save); flags override it")
    p.add_argument("--grid", metavar="X[,Y[,Z]]", help="grid shape (default 1)")
    p.add_argument("--block", metavar="X[,Y[,Z]]", help="block shape (default 128)")
    p.add_argument("--smem", type=int, metavar="BYTES", help="dynamic shared memory (default 0)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--buffer", action="append", default=[], metavar="NAME=SPEC")
    p.add_argument("--tensor-map", action="append", default=[], metavar="NAME=BUF:BOX[:SWIZZLE]")
    p.add_argument("--save", action="append", default=[], metavar="NAME=FILE.npy",
                   help="write a buffer after the run (every output is written only if all succeed)")
    p.add_argument("--timing-only", action="store_true", help="skip data values (faster)")
    p.add_argument("--gpu", default="h100_sxm")
    p.add_argument("--clock", default="sustained", metavar="sustained|boost|MHZ",
                   help="SM clock (default sustained: the power model's clock under the limit; "
                        "tensor energy taken as f16 x f16 -> f32, random data)")
    add_loop_argument(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--trace", metavar="FILE.json")
    p.add_argument("--plot", metavar="FILE.png")
    p.add_argument("--max-cycles", type=int, metavar="N",
                   help="report a livelock when the launch is not done after N cycles. Default: a "
                        "livelock when one CTA runs longer than 100000 + 1000 x S x P cycles (S = the "
                        "kernel's static instructions, P = the largest integer --param, 1..65536). "
                        "A deadlock is reported as a deadlock either way")
    p.add_argument("--no-progress", action="store_true", help="no elapsed-time line on stderr")
    return p


CAP_BASE = 100_000      # cycles of the default per-CTA cap (prologue, memory latency, epilogue)
CAP_PER_INSTR = 1_000   # cycles per static instruction and unit of the largest integer --param
CAP_PARAM_MAX = 65_536  # the --param factor is clipped here (an address is not a trip count)
MAX_CTAS = 1 << 20      # CTAs hopsim simulates one by one in reasonable time


def default_cta_cap(kernel, params: dict) -> int:
    """The default livelock bound of one CTA: 100000 + 1000 x S x P cycles, S = the kernel's
    static instructions, P = the largest integer --param (1..65536: loop trip counts come from
    parameters). Per CTA, so it does not grow with the number of waves."""
    ints = [abs(v) for v in params.values() if isinstance(v, int)]
    p = min(CAP_PARAM_MAX, max([1] + ints))
    static = sum(1 for x in kernel.body if not isinstance(x, LabelDef))
    return CAP_BASE + CAP_PER_INSTR * max(1, static) * p


def _ptx_outputs(args, save: dict) -> dict:
    """Every output path of `simulate FILE.ptx`, checked (and distinct) before anything runs."""
    items = [("trace", args.trace, (".json",)), ("plot", args.plot, (".png",))]
    items += [(f"save {n}", f, (".npy",)) for n, f in save.items()]
    return inputs.output_paths(items)


def _parse_kernel(path_arg: str):
    text = inputs.read_text("FILE", path_arg, "IR kernel file (or 'gemm')")
    try:
        kernel = parse(text, filename=path_arg)
    except RecursionError:
        raise InputError("FILE", path_arg, "an IR kernel file nested less deeply") from None
    check(kernel)  # VerifyError (file:line, rule, instruction) before anything runs
    for d in verify(kernel):
        if d.severity != "error":
            print(f"hopsim: {d.format(path_arg)}", file=sys.stderr)
    return kernel


def _launch_inputs(args, kernel):
    """(grid, block, smem, buffers, tensor maps, params, save, base dir) from --launch and flags."""
    spec, base = launch.load_launch(args.launch) if args.launch else (launch.LaunchFile(),
                                                                      pathlib.Path(args.target_file).parent)
    grid = inputs.dim3("grid", args.grid if args.grid is not None else (spec.grid if spec.grid is not None else 1), "grid")
    block = inputs.dim3("block", args.block if args.block is not None else
                        (spec.block if spec.block is not None else 128), "block")
    static = int(getattr(kernel, "static_smem_bytes", 0) or 0)
    smem = args.smem if args.smem is not None else (spec.smem or 0)
    inputs.bounded_int("smem", smem, 0, max(0, launch.SMEM_MAX - static),
                       f"dynamic shared memory bytes (static {static} + dynamic <= {launch.SMEM_MAX})")
    if grid[0] * grid[1] * grid[2] > MAX_CTAS:
        raise InputError("grid", "x".join(map(str, grid)), f"at most {MAX_CTAS} CTAs: hopsim simulates every CTA "
                         "(a larger grid cannot be simulated in reasonable time)")
    merged = []
    for key, flags, field in (("buffers", args.buffer, "buffer"), ("tensor_maps", args.tensor_map, "tensor-map"),
                              ("params", args.param, "param"), ("save", args.save, "save")):
        d = dict(getattr(spec, key))
        d.update(dict(launch.kv(field, x) for x in flags))
        merged.append(d)
    return (grid, block, smem, *merged, base)


def run_ptx(path_arg: str, argv: list[str]) -> int:
    args = ptx_parser().parse_args(argv)
    args.target_file = path_arg
    pm = PowerModel.load()
    clock = parse_clock(args.clock, pm)
    loop = loop_of(args)
    if args.max_cycles is not None:
        inputs.bounded_int("max-cycles", args.max_cycles, 1, 2**53, "a positive number of cycles")
    inputs.output_paths([("trace", args.trace, (".json",)), ("plot", args.plot, (".png",))])
    kernel = _parse_kernel(path_arg)
    grid, block, smem, buffers, tmaps, params, save, base = _launch_inputs(args, kernel)
    for name in save:
        if name not in buffers:
            raise InputError("save", name, "a buffer name: " + (", ".join(buffers) or "none"))
    _ptx_outputs(args, save)
    total = sum(launch.buffer_bytes(n, s, base) for n, s in buffers.items())
    inputs.within_budget("buffer", ",".join(buffers)[:60], total, "the buffers")
    extra = set(params) - {p.name for p in kernel.params}
    if extra:
        raise InputError("param", sorted(extra)[:8], "the kernel's .params: " +
                         (", ".join(p.name for p in kernel.params) or "none"))
    gpu = load_gpu(args.gpu)
    gmem = GlobalMemory()
    arrays, dtypes = {}, {}
    for name, bspec in buffers.items():
        arr, dt = launch.make_buffer(name, bspec, base)
        arrays[name], dtypes[name] = arr, dt
        gmem.alloc(name, arr)
    handles = {name: launch.tensor_map(name, t, arrays, dtypes, gmem) for name, t in tmaps.items()}
    values = {}
    for prm in kernel.params:
        if prm.name in params:
            values[prm.name] = launch.param_value(prm, params[prm.name])
        elif prm.name in handles:
            values[prm.name] = handles[prm.name]
        elif prm.name in arrays:
            values[prm.name] = gmem.address(prm.name)
        else:
            raise InputError(f"param {prm.name}", "missing", "--param NAME=VALUE, a --buffer or a "
                             "--tensor-map of that name")
    cta_cap = None if args.max_cycles else default_cta_cap(
        kernel, {p.name: values[p.name] for p in kernel.params if p.name in params})
    lch = Launch(grid=grid, block=block, dynamic_smem=smem, params=values)
    caps = {"max_cycles": args.max_cycles, "max_cta_cycles": cta_cap, "loop": loop}
    with _activity(args, f"simulating {kernel.name}"):
        try:
            def at(mhz: float):  # the clock solve's runs, each on a copy of the inputs
                return simulate(kernel, lch, gpu.at_clock(mhz), values=not args.timing_only,
                                gmem=copy.deepcopy(gmem), **caps)

            solver = ClockSolver(at, lambda r: Events.from_result(r, "f16f32", int(gpu.spec.num_sms.value)), pm,
                                 clock_ratio=pm.sm_clock_ratio(uses_tensor_cores(kernel)))
            sol = solver.solve()
            mhz = {"sustained": sol.sustained.mhz, "boost": sol.boost.mhz}.get(clock, clock)
            pt = solver.point(mhz)
            res = simulate(kernel, lch, gpu.at_clock(solver.sm_mhz(mhz)), values=not args.timing_only, gmem=gmem,
                           trace=bool(args.trace or args.plot), **caps)
        except SimulationLimit as exc:
            how = ("the launch, --max-cycles" if args.max_cycles else
                   "one CTA, the default cap 100000 + 1000 x S x P, see --help")
            raise HopsimError(f"livelock: {kernel.name} exceeded {exc.max_cycles} cycles ({how}) with warps "
                              f"still running: {'; '.join(exc.running[:6])}") from None
    with inputs.Outputs() as outs:
        for name, out in save.items():
            arr = arrays[name]
            with open(outs.stage(out), "wb") as fh:
                np.save(fh, gmem.view(name, arr.dtype, arr.shape))
        if args.trace:
            res.trace.write(outs.stage(args.trace))
        if args.plot:
            plot_timeline(res.trace, outs.stage(args.plot), title=kernel.name, clock_mhz=res.clock_mhz,
                          total_cycles=res.cycles)
    power = {"clock_mhz": float(mhz), "sm_clock_mhz": res.clock_mhz,
             "time_ms_boost": sol.boost.time_ms, "time_ms_sustained": sol.sustained.time_ms,
             "sustained_clock_mhz": sol.sustained.mhz, "power_w": pt.power_w, "energy_mj": pt.energy_mj,
             "power": {"boost": sol.boost.to_json(), "sustained": sol.sustained.to_json(),
                       "limit": sol.limit, "single_launch_boost": sol.single_launch_boost}}
    if args.json:
        print(json.dumps({**res.to_json(), **power}))
    else:
        notes = [sol.summary(), f"at {mhz:.0f} MHz (SMs at {res.clock_mhz:.0f}): {pt.power_w:.0f} W, {pt.energy_mj:.4g} mJ per "
                 "launch (power model: tensor energy of f16 -> f32, random data)"]
        notes += loop_notes(res) + [f"saved {n} to {f}" for n, f in save.items()]
        print(format_summary(res, title=f"{kernel.name} ({pathlib.Path(path_arg).name})", notes=notes,
                             launch={"Grid Size": ("", "x".join(map(str, grid))),
                                     "Block Size": ("", "x".join(map(str, block))),
                                     "Static Shared Memory Per Block":
                                         ("byte", int(getattr(kernel, "static_smem_bytes", 0) or 0)),
                                     "Dynamic Shared Memory Per Block": ("byte", smem)}))
    return 0


def run(args) -> int:
    if args.target is None:
        if args.help:
            args._simulate_parser.print_help()
            return 0
        return missing_command(args._simulate_parser)
    rest = list(args.rest) + (["--help"] if args.help else [])
    if args.target == "gemm":
        return run_gemm(rest)
    if args.target in membound_cmd.FAMILIES:
        return membound_cmd.run(args.target, rest)
    if args.target == tmacopy_cmd.FAMILY:
        return tmacopy_cmd.run(rest)
    if args.target in rowwise_cmd.FAMILIES:
        return rowwise_cmd.run(args.target, rest)
    if args.target == attention_cmd.FAMILY:
        return attention_cmd.run(rest)
    return run_ptx(args.target, rest)
