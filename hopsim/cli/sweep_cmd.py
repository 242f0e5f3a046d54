"""`hopsim sweep`: simulate every point of a knob grid in parallel; table, CSV/JSON, plot.

The grid comes from `--grid grid.yaml` (`base:` fixed knobs, `sweep:` lists or ranges) and/or knob
flags with the names of `hopsim simulate <family>` (`--stages 1-6 --tma-box-rows 8,64,128`); a flag
replaces the file's entry for that knob. `--family` picks the kernel family: gemm (default),
vecadd, copy, rowsum, softmax, tmacopy or attention (hopsim/sweep_knobs.py: their knobs; a flag of
another family is an error). Each point runs the family's sweep function (GEMM:
`hopsim.gemm_sim:simulate_point`; the others: `hopsim.cli.family_sweep:simulate_point`, timing only)
or `--fn MODULE:FUNCTION` on a local process pool, serially, or on a Dask cluster. Points whose
combination is invalid (e.g. stages that do not fit shared memory for the tile) are not run: they
get an `error` column, like points whose simulation fails; the sweep goes on.

Exit status: 0 every point ran; 1 some points failed (see their `error`); 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys

from hopsim import sweep
from hopsim import inputs
from hopsim.gemm_sim import ROW_PREFIXES
from hopsim.sweep_knobs import all_flags, family
from hopsim.plots import plot_sweep
from hopsim.power.model import PowerModel
from hopsim.power.solve import parse_clock
from hopsim.validate.run_compare import hardware_points
from isa.errors import InputError
from kernels.params import GemmParams
from validation.provenance import RECORDS_DIR

DEFAULT_FN = "hopsim.gemm_sim:simulate_point"

EXAMPLE = """examples:
  hopsim sweep --m 4096 --n 4096 --k 4096 --stages 1-6 --tma-box-rows 8,64,128 --out r.csv
  hopsim sweep --grid grid.yaml --jobs 8 --out results.json --plot stages.png
  hopsim sweep --grid grid.yaml --stages 2,4 --plot s.png --compare-records   # H100 overlay
  hopsim sweep --grid grid.yaml --executor dask://scheduler-host:8786          # on a cluster
  hopsim sweep --stages 1-8 --tile 128x256x64 --list                           # points only
  hopsim sweep --family softmax --rows 1024 --cols 1024-8192:1024 --mapping warp,cta --plot s.png
  hopsim sweep --family vecadd --n 1048576,8650752 --vec 1,4 --y gb_per_s --out v.csv
  hopsim sweep --stages 1-4 --loop rotated,same        # cold L2 against inputs L2-resident (a loop column)

grid.yaml (keys: the knob flags below, - or _; loop: rotated | same, docs/guide/pipeline-depth.md 7):
  base:  {m: 4096, n: 4096, k: 4096, variant: single, ctas_per_sm: auto}
  sweep: {stages: "1-6", tma_box_rows: [8, 64, 128], ctas_per_sm: [auto, 1], loop: [rotated, same]}

knob values: a value (4), a list (8,64,128), a range (1-6), choices (auto,1), tiles (128x128x64).
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="simulate a grid of configurations of a kernel family in parallel",
                       description=__doc__, epilog=EXAMPLE,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--grid", metavar="FILE.yaml", help="grid file with `base:` and `sweep:`")
    p.add_argument("--family", default="gemm", help="gemm (default), vecadd, copy, rowsum, softmax, tmacopy or attention")
    g = p.add_argument_group("knobs (a value, a list 8,64,128 or a range 1-6; as in simulate <family>)")
    for flag, uses in all_flags().items():
        helps = "; ".join(f"{fam}: {kn.help + ', ' if kn.help else ''}"
                          f"{kn.allowed if kn.name != 'gpu' else 'h100_sxm'}" for fam, kn in _merge_uses(uses))
        g.add_argument(f"--{flag}", dest=_dest(flag), metavar="V", help=helps)
    r = p.add_argument_group("running")
    r.add_argument("--executor", default="process",
                   help="process (local pool, default) | serial | dask://HOST:PORT")
    r.add_argument("--jobs", type=int, help="worker processes (default: CPUs + 1)")
    r.add_argument("--dask-timeout", type=float, default=10.0, metavar="S",
                   help="seconds to wait for the Dask scheduler (default 10)")
    r.add_argument("--fn", default=None, metavar="MODULE:FUNCTION",
                   help=f"function run per point, fn(point) -> dict (default: the family's; gemm {DEFAULT_FN})")
    r.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    r.add_argument("--list", action="store_true", help="print the points and exit")
    o = p.add_argument_group("output")
    o.add_argument("--out", metavar="FILE.csv|FILE.json", help="write every row (all parameters)")
    o.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    o.add_argument("--plot", metavar="FILE.png", help="plot y against a swept knob")
    o.add_argument("--plot-knob", metavar="KNOB", help="x axis of --plot (default: first swept knob)")
    o.add_argument("--y", default="time_ms", help="column to plot and tabulate (default time_ms; "
                   "e.g. tflops, tflops_per_w, power_w, clock_mhz)")
    r.add_argument("--clock", default="sustained", metavar="sustained|boost|MHZ",
                   help="SM clock of every point (default sustained: the power model's clock "
                        "under the 700 W limit; boost: 1980 MHz; or MHz)")
    o.add_argument("--compare-records", nargs="?", const="", default=None, metavar="DIR",
                   help="match points with H100 records (default validation/records/h100): adds "
                        "hw_time_ms / hw_error_pct and draws them on --plot")
    p.set_defaults(func=run)


def _dest(flag: str) -> str:
    return "knob_" + flag.replace("-", "_")


def _merge_uses(uses: list) -> list:
    """(family, knob) uses of one flag, families with the same domain and meaning merged."""
    out: dict = {}
    for fam, kn in uses:
        key = (kn.help, kn.allowed)
        out[key] = (f"{out[key][0]}/{fam}" if key in out else fam, kn)
    return list(out.values())


def _overrides(args, fam: str) -> dict:
    """The knob flags given, by knob name; a flag that is not a knob of `fam` is an InputError."""
    mine = {kn.flag: kn for kn in family(fam).knobs}
    out = {}
    for flag in all_flags():
        v = getattr(args, _dest(flag))
        if v is None:
            continue
        if flag not in mine:
            raise InputError(flag, v, f"a knob of family {fam}: " + ", ".join("--" + f for f in mine))
        out[mine[flag].name] = v
    return out


def _grid(args) -> sweep.Grid:
    fam = family(args.family).name
    ov = _overrides(args, fam)
    if args.grid:
        return sweep.load_grid(args.grid, overrides=ov, fam=fam)
    return sweep.make_grid(sweep=ov, fam=fam)


def _check_points(points: list[dict], values: bool = False,
                  fam: str = "gemm") -> tuple[list[int], dict[int, str], InputError | None]:
    """Indices of valid points, errors of the invalid ones (the family's parameter rules; GEMM also
    what hopsim can simulate, with data values when `values`: inputs.gemm_limits), the first error."""
    names = set(GemmParams.__dataclass_fields__)
    check = family(fam).check
    ok, bad, first = [], {}, None
    for i, p in enumerate(points):
        try:
            if fam == "gemm":
                inputs.gemm_limits(GemmParams(**{k: v for k, v in p.items() if k in names}), values)
            else:
                check(p)
            ok.append(i)
        except InputError as exc:
            bad[i] = f"invalid configuration: {exc}"
            first = first or exc
    return ok, bad, first


#: How a sweep row is compared with an H100 record, stated in every comparison's header.
CLOCK_BASIS = ("clock basis: a point with an H100 record is simulated at the SM clock its run "
               "measured (column sm_clock_mhz; clock64 over %globaltimer, else nvidia-smi), as "
               "`hopsim validate compare` does; points without a record at the model clock "
               "(1980 MHz)")
#: Columns where smaller is better (speed-up = first / value) and where larger is (value / first).
LOWER_IS_BETTER = ("time_ms", "cycles", "sim_wall_s")
HIGHER_IS_BETTER = ("tflops", "tflops_per_w", "gb_per_s")


def _records(dir_arg: str) -> list:
    """The H100 GEMM points of a records directory, merged as `validate compare` merges them
    (hopsim/validate/run_compare.py `hardware_points`: median time and clock per configuration)."""
    d = pathlib.Path(dir_arg) if dir_arg else RECORDS_DIR
    if not d.is_dir():
        raise InputError("compare-records", str(d), "a directory of H100 records (*.json)")
    return hardware_points(d)


def _config_key(params: dict) -> str | None:
    """A configuration's identity: its GemmParams with every default filled in."""
    try:
        return json.dumps(GemmParams.from_dict(
            {k: v for k, v in params.items() if k in GemmParams.__dataclass_fields__}).to_dict(),
            sort_keys=True)
    except InputError:
        return None


def _at_record_clocks(points: list[dict], hw: list) -> dict[int, object]:
    """Match points with hardware points (same configuration, gpu h100_sxm, loop rotated: the
    records' loops rotate their buffers); a matched point gets
    `sm_clock_mhz` = the clock its record measured (the basis of `validate compare`).
    Returns {point index: HwPoint}."""
    index = {}
    for hp in hw:
        key = _config_key(hp.params)
        if key is not None:
            index.setdefault(key, hp)
    matched = {}
    for i, pt in enumerate(points):
        # the records' benchmark loops rotate their buffers: a loop=same point has no record
        same_setup = (pt.get("gpu") or "h100_sxm") == "h100_sxm" and (pt.get("loop") or "rotated") == "rotated"
        hp = index.get(_config_key(pt)) if same_setup else None
        if hp is not None:
            matched[i] = hp
            if hp.sim_clock_mhz:
                pt["sm_clock_mhz"] = hp.sim_clock_mhz
    return matched


def _hw_value(hp, y: str, row: dict) -> float | None:
    """The measured counterpart of column `y`: time (CUDA events, median), cycles (clock64 span)
    or TFLOP/s (2MNK over the measured time); None for other columns."""
    if y == "time_ms":
        return hp.measured_ms
    if y == "cycles":
        return hp.measured_cycles
    if y == "tflops" and hp.measured_ms:
        return 2.0 * row["m"] * row["n"] * row["k"] / (hp.measured_ms * 1e-3) / 1e12
    return None


def _match(rows: list[dict], matched: dict, y: str) -> list[dict]:
    """Adds hw_<y>, hw_error_pct (signed, % of the measurement), hw_tag and, when the record has
    a clock64 profile, hw_cycles and hw_cycles_error_pct to each matched row; returns the
    hardware rows (parameters + y) for the plot."""
    hw_rows = []
    for i, hp in matched.items():
        row = rows[i]
        hv = _hw_value(hp, y, row)
        if row.get("error") or hv is None:
            continue
        row[f"hw_{y}"] = hv
        if isinstance(row.get(y), (int, float)) and hv:
            row["hw_error_pct"] = 100.0 * (row[y] - hv) / hv
        row["hw_tag"] = hp.label
        if y != "cycles" and hp.measured_cycles and isinstance(row.get("cycles"), (int, float)):
            # validate compare's primary basis too: clock64 cycles against simulated cycles
            row["hw_cycles"] = hp.measured_cycles
            row["hw_cycles_error_pct"] = 100.0 * (row["cycles"] - hp.measured_cycles) / hp.measured_cycles
        hw_rows.append({**{k: v for k, v in row.items() if not k.startswith("hw_")}, y: hv})
    return hw_rows


def _nearest_hint(rows: list[dict], records: list[dict], y: str) -> str:
    """For points without a record: the knobs in which the nearest record differs (so that a
    sweep that matched nothing says which flags to set, e.g. --epilogue stmatrix)."""
    missing = [r for r in rows if f"hw_{y}" not in r and not r.get("error")]
    if not missing or not records:
        return ""
    diffs: dict = {}
    for row in missing:
        best = min(records, key=lambda hp: sum(row.get(k) != v for k, v in hp.params.items()))
        for k, v in best.params.items():
            if row.get(k) != v:
                diffs.setdefault(k, set()).add(str(v))
    if not diffs:
        return ""
    flags = ", ".join(f"--{sweep.knob(k).flag if _is_knob(k) else k} {'/'.join(sorted(v))}"
                      for k, v in sorted(diffs.items()))
    return f"; the nearest records of the others differ in {flags}"


def _is_knob(name: str, fam: str = "gemm") -> bool:
    try:
        sweep.knob(name, fam)
        return True
    except InputError:
        return False


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return "-" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def _ratio(first, t, y: str) -> float | None:
    """The speed-up of a row over the first one for column `y` (see LOWER/HIGHER_IS_BETTER),
    else the plain ratio value / first."""
    if not (isinstance(t, (int, float)) and t and first):
        return None
    return first / t if y in LOWER_IS_BETTER else t / first


LOOP_MEANING = {"rotated": "inputs rotated over sets larger than the L2: a cold L2 at each launch's start",
                "same": "a loop over the same buffers: inputs L2-resident at the start when they fit"}
"""The header line's gloss of each --loop value (hopsim/timing/launch.py)."""


def loop_header(rows: list[dict], swept: list[str]) -> str:
    """'loop: same (...)' when every row that has a `loop` has the same one and loop is not a
    swept column (a sweep that asked for no loop has no `loop` in its rows: no line)."""
    loops = {r["loop"] for r in rows if "loop" in r}
    if "loop" in swept or len(loops) != 1:
        return ""
    (loop,) = loops
    return f"loop: {loop} (every point; {LOOP_MEANING.get(loop, '')})\n"


def print_table(rows: list[dict], grid: sweep.Grid, y: str, out=None, header: str = "") -> None:
    """Swept knobs, y, its speed-up against the first point (or ratio, for a column that is not a
    time or a rate), TFLOP/s, hardware columns, errors; `header` lines first."""
    out = out or sys.stdout
    knobs = grid.swept or []
    cols = ["tile" if k == "tile" else k for k in knobs]
    first = next((r.get(y) for r in rows if isinstance(r.get(y), (int, float))), None)
    extra = [c for c in ("tflops", "gb_per_s", "clock_mhz", "power_w", "tflops_per_w", "time_ms_boost",
                         "ctas_per_sm_result", "waves", "cycles", "sm_clock_mhz",
                         f"hw_{y}", "hw_error_pct", "hw_cycles", "hw_cycles_error_pct")
             if c != y and any(c in r for r in rows)]
    has_err = any(r.get("error") for r in rows)
    ratio_name = "speedup" if y in LOWER_IS_BETTER + HIGHER_IS_BETTER else f"{y}/first"
    head = cols + [y, ratio_name] + extra + (["error"] if has_err else [])
    table = []
    for r in rows:
        vals = [f"{r['bm']}x{r['bn']}x{r['bk']}" if c == "tile" else _fmt(r.get(c)) for c in cols]
        t = r.get(y)
        sp = _ratio(first, t, y)
        vals += [_fmt(t), f"{sp:.3f}" if sp else "-"] + [_fmt(r.get(c)) for c in extra]
        if has_err:
            vals.append((r.get("error") or "")[:90])
        table.append(vals)
    widths = [max(len(h), *(len(v[i]) for v in table)) if table else len(h)
              for i, h in enumerate(head)]
    for line in (loop_header(rows, knobs) + header).splitlines():
        print(line, file=out)
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(), file=out)
    for v in table:
        print("  ".join(c.ljust(w) for c, w in zip(v, widths)).rstrip(), file=out)


def _check_y_before(y: str, fn_spec: str | None, fam: str = "gemm") -> None:
    """--y must name a column: for the family's own function the columns are known before running
    (knobs and the family's columns, sweep_knobs.py, plus busy_* and wait_* columns)."""
    if fn_spec is not None:
        return
    cols = family(fam).columns
    if y in cols or any(y.startswith(p) for p in ROW_PREFIXES) or _is_knob(y, fam):
        return
    raise InputError("y", y, "a result column: " + ", ".join(cols) + ", busy_<unit>, wait_<role>_<reason>")


def _check_y_after(y: str, rows: list[dict]) -> None:
    """After a run with another --fn: some row must have a number in column y."""
    if any(isinstance(r.get(y), (int, float)) for r in rows if not r.get("error")):
        return
    cols = sorted({k for r in rows if not r.get("error") for k, v in r.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)})
    if cols:
        raise InputError("y", y, "a numeric column of the rows: " + ", ".join(cols))


def run(args) -> int:
    kind, _ = sweep.parse_executor(args.executor)
    if args.jobs is not None:
        inputs.bounded_int("jobs", args.jobs, 1, 4096, "a number of workers")
    if not 0 < args.dask_timeout <= 3600:
        raise InputError("dask-timeout", args.dask_timeout, "seconds in (0, 3600]")
    fam = family(args.family).name
    if args.compare_records is not None and fam != "gemm":
        raise InputError("compare-records", args.compare_records or "(default)",
                         "only with --family gemm (the H100 records matched per configuration are GEMM records)")
    inputs.output_paths([("out", args.out, (".csv", ".json")), ("plot", args.plot, (".png",))])
    _check_y_before(args.y, args.fn, fam)
    clock = parse_clock(args.clock, PowerModel.load())
    grid = _grid(args)
    plot_knob = None
    if args.plot:
        plot_knob = sweep.knob(args.plot_knob, fam).name if args.plot_knob else (
            grid.swept[0] if grid.swept else None)
        if plot_knob is None:
            raise InputError("plot", args.plot, "a sweep with at least one knob taking several "
                             "values (e.g. --stages 1-6), or --plot-knob")
    points = [{**p, "clock": clock} for p in grid.points()]
    ok_idx, bad, first_err = _check_points(points, fam=fam)
    if args.list:
        for i, p in enumerate(points):
            print(json.dumps({**p, "error": bad[i]} if i in bad else p))
        print(f"{len(points)} points ({len(bad)} invalid); swept: {', '.join(grid.swept) or 'nothing'}",
              file=sys.stderr)
        return 0
    if not ok_idx:
        raise first_err  # every point is invalid: one line, exit 2
    records = _records(args.compare_records) if args.compare_records is not None else None
    matched = _at_record_clocks(points, records) if records is not None else {}
    fn = sweep.load_function(args.fn or family(fam).fn)
    if bad:
        print(f"hopsim sweep: {len(bad)} of {len(points)} points are invalid and skipped "
              f"(first: {first_err})", file=sys.stderr)
    got = sweep.run_sweep([points[i] for i in ok_idx], fn, executor=args.executor, jobs=args.jobs,
                          progress=not args.no_progress, dask_timeout_s=args.dask_timeout)
    rows: list[dict] = [None] * len(points)  # type: ignore[list-item]
    for i, r in zip(ok_idx, got):
        rows[i] = r
    for i, msg in bad.items():
        rows[i] = {**points[i], "error": msg}
    _check_y_after(args.y, rows)
    hw_rows = _match(rows, matched, args.y) if records is not None else []
    if records is not None:
        print(f"hopsim sweep: {len(hw_rows)} of {len(rows)} points have an H100 record"
              + _nearest_hint(rows, records, args.y), file=sys.stderr)
        for pt, r in zip(points, rows):    # the point, not the row: every row reports its SM clock
            r["clock_basis"] = "record" if "sm_clock_mhz" in pt else "model"
    with inputs.Outputs() as outs:
        if args.out:
            sweep.write_rows(rows, outs.stage(args.out))
        if args.plot:
            plot_sweep(rows, plot_knob, outs.stage(args.plot), y=args.y, compare=hw_rows or None,
                       title=f"{args.y} against {plot_knob}" + (
                           " (sim solid, H100 dashed)\nsim at each record's measured SM clock "
                           "(as validate compare)" if hw_rows else ""))
    if args.json:
        print(json.dumps(rows, indent=1, default=str))
    else:
        print_table(rows, grid, args.y, header=CLOCK_BASIS if records is not None else "")
        n_err = sum(1 for r in rows if r.get("error"))
        tail = [f"{len(rows)} points", f"{n_err} failed" if n_err else "all ran",
                f"executor {kind}"]
        if args.out:
            tail.append(f"rows -> {args.out}")
        if args.plot:
            tail.append(f"plot -> {args.plot}")
        print("; ".join(tail))
    return 1 if any(r.get("error") for r in rows) else 0
