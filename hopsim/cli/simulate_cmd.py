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
import re
import sys
import zlib

import numpy as np
import yaml

from hopsim import gemm_sim, sweep
from hopsim.cli import _Parser, _writable, sweep_cmd
from hopsim.config import load_gpu
from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.plots import first_cta_windows, plot_sweep, plot_timeline
from hopsim.power.model import Events, PowerModel
from hopsim.power.solve import ClockSolver, parse_clock
from hopsim.progress import Activity
from hopsim.summary import format_summary
from hopsim.timing.runner import simulate
from isa.dtypes import from_f32
from isa.errors import InputError
from isa.ir import check, parse, verify
from isa.tensormap import TensorMap
from kernels.gemm import build_gemm

GEMM_EXAMPLE = """examples:
  hopsim simulate gemm --m 4096 --n 4096 --k 4096 --dtype f16 --accum f32 --layout tn \\
      --tile 128x128x64 --stages 4 --tma-box-rows 128 --swizzle 128B --variant single \\
      --ctas-per-sm auto --epilogue direct --raster row --gpu h100_sxm
  hopsim simulate gemm --m 4096 --n 4096 --k 4096 --stages 1-6 --plot timeline.png
  hopsim simulate gemm --m 256 --n 256 --k 256 --variant warp-specialized --check
  hopsim simulate gemm --tile 128x256x64 --variant ws --consumers 2 --json
  hopsim simulate gemm --m 256 --n 256 --k 256 --emit-ir > gemm.ptx   (the IR + its launch)

Any knob may be a list (8,64,128) or a range (1-6): each point is simulated and a table of time
and speed-up against the first point is printed; --plot then draws the fastest point's timeline
and --sweep-plot the time against the first swept knob."""

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
    p.add_argument("target", nargs="?", metavar="gemm|FILE.ptx",
                   help="'gemm' for the GEMM family, or an IR kernel file")
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
        domain = kn.allowed if kn.name != "gpu" else "h100_sxm"
        extra = " (also warp-specialized)" if kn.name == "variant" else ""
        g.add_argument(f"--{kn.flag}", dest=f"knob_{kn.name}", metavar="V",
                       help=f"{kn.help}; {domain}{extra}")
    g.add_argument("--clock", default="sustained", metavar="sustained|boost|MHZ",
                   help="SM clock: sustained (default; the highest supported clock within the "
                        "power model's limits, what a benchmark loop sees), boost (1980 MHz, a "
                        "single short launch) or MHz")
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
    o.add_argument("--mode", default="auto", choices=("auto", "fast", "full"),
                   help="fast: timing only + memoisation (default); full: with data values")
    o.add_argument("--jobs", type=int, help="worker processes for a sweep (default: all CPUs)")
    o.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def _activity(args, desc: str):
    """An elapsed-time line on stderr for a run longer than 2 s (hopsim/progress.py)."""
    return Activity(desc, enabled=False if getattr(args, "no_progress", False) else None)


def _png(field: str, path: str | None) -> None:
    if path and not path.lower().endswith(".png"):
        raise InputError(field, path, "a file name ending in .png")


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


def _timeline(run, path: str, window: int | None) -> None:
    res = run.result
    p = run.params
    per_ktile = res.cycles / max(1, res.waves) / max(1, p.k // p.bk)
    if window is not None:
        plot_timeline(res.trace, path, title=_title(p), max_cycles=window, clock_mhz=res.clock_mhz,
                      total_cycles=res.cycles)
        return
    # the first CTA: prologue + about 6 k-tiles, then its last 3 k-tiles and the epilogue
    head = int(min(res.cycles, 3000 + 6 * per_ktile))
    wins = first_cta_windows(res.trace, head, tail_cycles=1500 + 3 * per_ktile, clock_mhz=res.clock_mhz)
    plot_timeline(res.trace, path, title=_title(p), windows=wins, clock_mhz=res.clock_mhz,
                  total_cycles=res.cycles)


def clock_notes(run) -> list[str]:
    """The boost and sustained times, the chosen clock's power and energy (issue 13)."""
    sol = run.clock
    r = run.result
    lines = [sol.summary(),
             f"at {r.clock_mhz:.0f} MHz: {run.power_w:.0f} W, {run.energy_mj:.4g} mJ per launch, "
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
    for f in ("plot", "sweep_plot"):
        _png(f.replace("_", "-"), getattr(args, f))
    for f in ("trace", "plot", "sweep_plot"):
        _writable(f.replace("_", "-"), getattr(args, f))
    if args.jobs is not None and args.jobs < 1:
        raise InputError("jobs", args.jobs, "a positive number of worker processes")
    overrides = {kn.name: getattr(args, f"knob_{kn.name}") for kn in sweep.KNOBS
                 if getattr(args, f"knob_{kn.name}") is not None}
    grid = sweep.make_grid(sweep=overrides)
    points = [{**p, "clock": clock} for p in grid.points()]
    if args.emit_ir:
        return _emit_ir(grid, points, overrides)
    if len(points) == 1:
        params = gemm_sim.params_of(points[0])
        gpu = load_gpu(points[0].get("gpu") or "h100_sxm")
        with _activity(args, f"simulating gemm {params.m}x{params.n}x{params.k}"):
            run = gemm_sim.simulate_gemm_clocked(params, gpu, clock, mode=args.mode, check=args.check,
                                                 trace=bool(args.trace or args.plot))
            if args.trace:
                run.result.trace.write(args.trace)
            if args.plot:
                _timeline(run, args.plot, args.plot_cycles)
        if args.json:
            print(json.dumps(run.to_json()))
        else:
            notes = clock_notes(run) + list(run.notes) + [
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
    ok_idx, bad, first_err = sweep_cmd._check_points(points)
    if not ok_idx:
        raise first_err
    if bad:
        print(f"hopsim simulate gemm: {len(bad)} of {len(points)} points are invalid and skipped "
              f"(first: {first_err})", file=sys.stderr)
    got = sweep.run_sweep([points[i] for i in ok_idx], gemm_sim.simulate_point,
                          executor="process" if len(ok_idx) > 1 else "serial", jobs=args.jobs,
                          progress=not args.no_progress)
    rows = [None] * len(points)
    for i, r in zip(ok_idx, got):
        rows[i] = r
    for i, msg in bad.items():
        rows[i] = {**points[i], "error": msg}
    if args.json:
        print(json.dumps(rows))
    else:
        sweep_cmd.print_table(rows, grid, "time_ms")
    if args.sweep_plot:
        plot_sweep([r for r in rows if not r.get("error")], grid.swept[0], args.sweep_plot)
        print(f"sweep plot written to {args.sweep_plot}", file=sys.stderr)
    good = [r for r in rows if isinstance(r.get("time_ms"), (int, float))]
    if args.plot and good:
        best = min(good, key=lambda r: r["time_ms"])
        pt = {k: best[k] for k in points[0]}
        with _activity(args, "timeline of the fastest point"):
            run = gemm_sim.simulate_gemm(gemm_sim.params_of(pt), load_gpu(pt.get("gpu") or "h100_sxm")
                                         .at_clock(best.get("clock_mhz")), trace=True)
            _timeline(run, args.plot, args.plot_cycles)
        knobs = ", ".join(f"{k}={pt[k]}" for k in grid.swept if k in pt)
        print(f"timeline of the fastest point ({knobs}) written to {args.plot}", file=sys.stderr)
    return 1 if any(r.get("error") for r in rows) else 0


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
                   help="write a buffer after the run")
    p.add_argument("--timing-only", action="store_true", help="skip data values (faster)")
    p.add_argument("--gpu", default="h100_sxm")
    p.add_argument("--clock", default="sustained", metavar="sustained|boost|MHZ",
                   help="SM clock (default sustained: the power model's clock under the limit; "
                        "tensor energy taken as f16 x f16 -> f32, random data)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--trace", metavar="FILE.json")
    p.add_argument("--plot", metavar="FILE.png")
    p.add_argument("--max-cycles", type=int, metavar="N", help="stop a livelock after N cycles")
    p.add_argument("--no-progress", action="store_true", help="no elapsed-time line on stderr")
    return p


_DT = {"f16": "float16", "f32": "float32", "f64": "float64", "u8": "uint8", "u16": "uint16",
       "u32": "uint32", "u64": "uint64", "s32": "int32", "s64": "int64", "bf16": "bf16"}


def _dim3(field: str, v) -> tuple:
    if isinstance(v, int):
        v = [v]
    if isinstance(v, str):
        v = [x for x in re.split(r"[,x ]+", v.strip()) if x]
    try:
        vals = [int(x) for x in v]
    except (TypeError, ValueError):
        raise InputError(field, v, "1 to 3 positive integers, e.g. 132 or 16,8") from None
    if not 1 <= len(vals) <= 3 or any(x < 1 for x in vals):
        raise InputError(field, v, "1 to 3 positive integers, e.g. 132 or 16,8")
    return tuple(vals + [1] * (3 - len(vals)))


def _shape(field: str, s: str) -> tuple:
    try:
        dims = tuple(int(x) for x in s.lower().split("x"))
    except ValueError:
        raise InputError(field, s, "a shape like 64x256") from None
    if not dims or any(d < 1 for d in dims):
        raise InputError(field, s, "a shape like 64x256 (positive extents)")
    return dims


def _make_buffer(name: str, spec: str, base: pathlib.Path):
    field = f"buffer {name}"
    s = str(spec)
    if s.endswith(".npy"):
        path = pathlib.Path(s) if os.path.isabs(s) else base / s
        if not path.exists():
            raise InputError(field, s, "an existing .npy file")
        return np.load(path), None
    parts = s.split(":")
    if len(parts) < 3 or parts[0] not in ("zeros", "random", "arange"):
        raise InputError(field, s, "FILE.npy, zeros:DTYPE:SHAPE, random:DTYPE:SHAPE[:SEED] or "
                         "arange:DTYPE:SHAPE")
    kind, dt, shape = parts[0], parts[1], _shape(field, parts[2])
    if dt not in _DT:
        raise InputError(f"{field} dtype", dt, "one of " + ", ".join(_DT))
    # default seed: the buffer's name (CRC-32), so that two random buffers differ (A == B would
    # make A.B^T symmetric and hide a transposition bug)
    seed = int(parts[3]) if len(parts) > 3 and parts[3].isdigit() else zlib.crc32(name.encode())
    n = int(np.prod(shape))
    if kind == "zeros":
        x = np.zeros(shape, np.float32)
    elif kind == "arange":
        x = np.arange(n, dtype=np.float64).reshape(shape)
    else:
        x = np.random.default_rng(seed).standard_normal(shape)
    if dt == "bf16":
        return from_f32(x.astype(np.float32), "bf16"), "bf16"
    if dt in ("f16", "f32", "f64"):
        return x.astype(_DT[dt]), dt
    return (x if kind != "random" else np.abs(x) * 100).astype(_DT[dt]), dt


def _kv(field: str, item: str) -> tuple[str, str]:
    if "=" not in item:
        raise InputError(field, item, "NAME=VALUE")
    k, v = item.split("=", 1)
    return k.strip(), v.strip()


def run_ptx(path_arg: str, argv: list[str]) -> int:
    args = ptx_parser().parse_args(argv)
    pm = PowerModel.load()
    clock = parse_clock(args.clock, pm)
    _png("plot", args.plot)
    for f in ("trace", "plot"):
        _writable(f, getattr(args, f))
    path = pathlib.Path(path_arg)
    if not path.is_file():
        raise InputError("FILE", path_arg, "an existing IR kernel file (or 'gemm')")
    kernel = parse(path.read_text(), filename=str(path))
    check(kernel)  # VerifyError (file:line, rule, instruction) before anything runs
    for d in verify(kernel):
        if d.severity != "error":
            print(f"hopsim: {d.format(str(path))}", file=sys.stderr)
    spec: dict = {}
    base = path.parent
    if args.launch:
        lp = pathlib.Path(args.launch)
        if not lp.is_file():
            raise InputError("launch", args.launch, "an existing YAML file")
        try:
            spec = yaml.safe_load(lp.read_text()) or {}
        except yaml.YAMLError as exc:
            raise InputError("launch", args.launch, f"valid YAML ({str(exc).splitlines()[0]})") from None
        if not isinstance(spec, dict):
            raise InputError("launch", args.launch, "a mapping with grid, block, smem, params, ...")
        unknown = set(spec) - {"grid", "block", "smem", "params", "buffers", "tensor_maps", "save"}
        if unknown:
            raise InputError("launch", sorted(unknown), "keys grid, block, smem, params, buffers, "
                             "tensor_maps, save")
        base = lp.parent
    grid = _dim3("grid", args.grid or spec.get("grid", 1))
    block = _dim3("block", args.block or spec.get("block", 128))
    smem = args.smem if args.smem is not None else int(spec.get("smem", 0))
    buffers = dict((spec.get("buffers") or {}))
    buffers.update(dict(_kv("buffer", b) for b in args.buffer))
    tmaps = dict((spec.get("tensor_maps") or {}))
    tmaps.update(dict(_kv("tensor-map", t) for t in args.tensor_map))
    params = dict((spec.get("params") or {}))
    params.update(dict(_kv("param", p) for p in args.param))
    save = dict((spec.get("save") or {}))
    save.update(dict(_kv("save", s) for s in args.save))

    gmem = GlobalMemory()
    arrays, dtypes = {}, {}
    for name, bspec in buffers.items():
        arr, dt = _make_buffer(name, bspec, base)
        arrays[name], dtypes[name] = arr, dt
        gmem.alloc(name, arr)
    handles = {}
    for name, tspec in tmaps.items():
        parts = str(tspec).split(":")
        if len(parts) not in (2, 3) or parts[0] not in arrays:
            raise InputError(f"tensor-map {name}", tspec, "BUFFER:BOXCOLSxBOXROWS[:SWIZZLE] over a "
                             f"2-D buffer; buffers: {', '.join(arrays) or 'none'}")
        arr = arrays[parts[0]]
        if arr.ndim != 2:
            raise InputError(f"tensor-map {name}", tspec, "a 2-D buffer (rows x cols)")
        bc, br = _shape(f"tensor-map {name}", parts[1]) + (1,) * (2 - len(parts[1].split("x")))
        dt = dtypes[parts[0]] or {"float16": "f16", "float32": "f32"}.get(str(arr.dtype), "u8")
        tm = TensorMap(dtype=dt, global_dims=(arr.shape[1], arr.shape[0]),
                       global_strides_bytes=(arr.shape[1] * arr.itemsize,), box_dims=(bc, br),
                       global_address=gmem.address(parts[0]),
                       swizzle=parts[2] if len(parts) == 3 else "128B")
        handles[name] = gmem.register_tensor_map(name, tm)
    values = {}
    for prm in kernel.params:
        if prm.name in params:
            raw = params[prm.name]
            try:
                values[prm.name] = float(raw) if prm.type.startswith("f") else int(str(raw), 0)
            except ValueError:
                raise InputError(f"param {prm.name}", raw, f"a number for .param .{prm.type}") from None
        elif prm.name in handles:
            values[prm.name] = handles[prm.name]
        elif prm.name in arrays:
            values[prm.name] = gmem.address(prm.name)
        else:
            raise InputError(f"param {prm.name}", "missing", "--param NAME=VALUE, a --buffer or a "
                             "--tensor-map of that name")
    extra = set(params) - {p.name for p in kernel.params}
    if extra:
        raise InputError("param", sorted(extra), "the kernel's .params: " +
                         ", ".join(p.name for p in kernel.params))
    for name in save:
        if name not in arrays:
            raise InputError("save", name, "a buffer name: " + (", ".join(arrays) or "none"))
    launch = Launch(grid=grid, block=block, dynamic_smem=smem, params=values)
    gpu = load_gpu(args.gpu)
    with _activity(args, f"simulating {kernel.name}"):
        def at(mhz: float):  # the clock solve's runs, each on a copy of the inputs
            return simulate(kernel, launch, gpu.at_clock(mhz), values=not args.timing_only,
                            gmem=copy.deepcopy(gmem), max_cycles=args.max_cycles)

        solver = ClockSolver(at, lambda r: Events.from_result(r, "f16f32", int(gpu.spec.num_sms.value)), pm)
        sol = solver.solve()
        mhz = {"sustained": sol.sustained.mhz, "boost": sol.boost.mhz}.get(clock, clock)
        pt = solver.point(mhz)
        res = simulate(kernel, launch, gpu.at_clock(mhz), values=not args.timing_only, gmem=gmem,
                       trace=bool(args.trace or args.plot), max_cycles=args.max_cycles)
    for name, out in save.items():
        arr = arrays[name]
        np.save(out, gmem.view(name, arr.dtype, arr.shape))
    if args.trace:
        res.trace.write(args.trace)
    if args.plot:
        plot_timeline(res.trace, args.plot, title=kernel.name, clock_mhz=res.clock_mhz,
                      total_cycles=res.cycles)
    power = {"time_ms_boost": sol.boost.time_ms, "time_ms_sustained": sol.sustained.time_ms,
             "sustained_clock_mhz": sol.sustained.mhz, "power_w": pt.power_w, "energy_mj": pt.energy_mj,
             "power": {"boost": sol.boost.to_json(), "sustained": sol.sustained.to_json(),
                       "limit": sol.limit, "single_launch_boost": sol.single_launch_boost}}
    if args.json:
        print(json.dumps({**res.to_json(), **power}))
    else:
        notes = [sol.summary(), f"at {mhz:.0f} MHz: {pt.power_w:.0f} W, {pt.energy_mj:.4g} mJ per "
                 "launch (power model: tensor energy of f16 -> f32, random data)"]
        notes += [f"saved {n} to {f}" for n, f in save.items()]
        print(format_summary(res, title=f"{kernel.name} ({path.name})", notes=notes,
                             launch={"Grid Size": ("", "x".join(map(str, grid))),
                                     "Block Size": ("", "x".join(map(str, block))),
                                     "Static Shared Memory Per Block":
                                         ("byte", int(getattr(kernel, "static_smem_bytes", 0) or 0)),
                                     "Dynamic Shared Memory Per Block": ("byte", smem)}))
    return 0


def run(args) -> int:
    if args.target is None or (args.help and args.target is None):
        args._simulate_parser.print_help()
        return 0 if args.help else 2
    rest = list(args.rest) + (["--help"] if args.help else [])
    if args.target == "gemm":
        return run_gemm(rest)
    return run_ptx(args.target, rest)
