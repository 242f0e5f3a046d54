"""Parameter sweeps: knob values, grids, and running a function over every point in parallel.

A *point* is a dict of one kernel family's knobs plus `gpu`. GEMM (the default family): the
`kernels.params.GemmParams` field names (`{"m": 4096, ..., "stages": 3, "box_rows": 64,
"ctas_per_sm": "auto", "gpu": "h100_sxm"}`); the other families (vecadd, copy, rowsum, softmax,
tmacopy, attention: sweep_knobs.py) their parameter fields and `family`. Every point carries every
knob of its family (the defaults fill the rest), so each result row keeps all its parameters.

Knob values (command-line flags and `grid.yaml` share one syntax, checked per knob):

    "1-6"              an inclusive integer range          -> [1, 2, 3, 4, 5, 6]
    "1024-4096:1024"   a range with a step (problem sizes)  -> [1024, 2048, 3072, 4096]
    "8,64,128"         a list                              -> [8, 64, 128]
    "auto,1"           choices and integers mixed          -> ["auto", 1]
    "128x128x64"       a tile BMxBNxBK (sets bm, bn, bk)   -> [(128, 128, 64)]
    4 / [1, 2] (YAML)  native YAML scalars and lists work too

A value outside a knob's domain raises `InputError` naming the knob and what is valid
(`stages=0 is invalid: 1..8`). Combinations (a tile whose stages do not fit shared memory) are
checked per point by whoever runs it (`GemmParams`), not here.

grid.yaml:

    base:  {m: 4096, n: 4096, k: 4096, variant: single}    # fixed knobs
    sweep: {stages: "1-6", tma_box_rows: [8, 64, 128], ctas_per_sm: [auto, 1]}

The grid is the cartesian product of the `sweep` lists (the last knob varies fastest). `loop`
(rotated | same) is a knob of every family that only the points asking for it carry.

Running: `run_sweep(points, fn)` calls a picklable top-level `fn(point) -> dict` on every point
with a local process pool (default), serially, or on an existing Dask cluster
(`executor="dask://HOST:PORT"`, needs the `dask` extra). A point whose `fn` raises becomes a row
with an `error` column; the sweep goes on. Rows come back in the order of the points.
"""

from __future__ import annotations

import concurrent.futures as cf
import csv
import dataclasses
import importlib
import itertools
import json
import contextlib
import math
import multiprocessing
import os
import pathlib
import re
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import yaml

from hopsim.progress import Progress
from hopsim import inputs
from hopsim.sweep_knobs import FAMILIES, KNOBS, MAX_EXTENT, Family, Knob, family, gpu_names  # noqa: F401 (re-exported)
from isa.errors import InputError

# --------------------------------------------------------------------------- knob domains
# Knob, the GEMM knobs (KNOBS) and the other families' knobs live in sweep_knobs.py.

MAX_POINTS = 100_000      # largest grid (product of the swept knobs' value counts), also for --list
_BOOLS = {"true": True, "false": False, "yes": True, "no": False, "1": True, "0": False}
_ALIASES = {"warp-specialized": "ws", "warp_specialized": "ws"}  # variant spelled as in issue 4
_TILE_RE = re.compile(r"^\s*(\d{1,9})\s*[xX]\s*(\d{1,9})\s*[xX]\s*(\d{1,9})\s*$")
_RANGE_RE = re.compile(r"^(-?\d{1,18})\s*-\s*(\d{1,18})(?:\s*:\s*(\d{1,18}))?$")


def knob(name: str, fam: str = "gemm") -> Knob:
    """The knob called `name` (grid name, point key or flag, with - or _) of family `fam`, else
    InputError."""
    key = name.strip().lstrip("-").replace("-", "_").lower()
    knobs = family(fam).knobs
    for kn in knobs:
        if key in (kn.name, kn.flag.replace("-", "_")):
            return _with_gpus(kn)
    raise InputError("knob", name, "one of " + ", ".join(k.flag for k in knobs)
                     + ("" if fam == "gemm" else f" (family {fam})"))


def _with_gpus(kn: Knob) -> Knob:
    return dataclasses.replace(kn, choices=gpu_names()) if kn.name == "gpu" else kn


def default_point(fam: str = "gemm") -> dict:
    """Every knob of family `fam` at its default (GEMM: the GemmParams defaults) and gpu h100_sxm."""
    return family(fam).default()


def _check_one(kn: Knob, raw: Any) -> Any:
    """One value of knob `kn` (a string or a YAML scalar), converted and checked."""
    if kn.kind == "tile":
        if isinstance(raw, (list, tuple)) and len(raw) == 3:
            raw = "x".join(str(v) for v in raw)
        m = _TILE_RE.match(str(raw))
        if not m:
            raise InputError(kn.flag, inputs.short(raw), kn.allowed)
        bm, bn, bk = (int(g) for g in m.groups())
        if bm not in (64, 128, 256) or bn not in (64, 128, 256) or bk != 64:
            raise InputError(kn.flag, str(raw).strip(), kn.allowed)
        return (bm, bn, bk)
    text = str(raw).strip()
    if kn.kind == "bool":
        b = _BOOLS.get(text.lower())
        if b is None:
            raise InputError(kn.flag, inputs.short(raw), kn.allowed)
        return b
    if kn.kind in ("int", "posint"):
        try:
            val = int(text)
        except ValueError:
            raise InputError(kn.flag, inputs.short(raw), kn.allowed) from None
        ok = 0 < val <= kn.maximum if kn.kind == "posint" else val in kn.choices
        if not ok:
            raise InputError(kn.flag, inputs.short(val), kn.allowed)
        return val
    # choice: strings, with integers where the domain has them (ctas_per_sm: auto or 1)
    text = _ALIASES.get(text, text) if kn.name == "variant" else text
    for c in kn.choices:
        if text == str(c) or (isinstance(c, str) and text.lower() == c.lower()):
            return c
    raise InputError(kn.flag, inputs.short(raw), kn.allowed)


def parse_values(name: str, spec: Any, fam: str = "gemm") -> list:
    """All values of knob `name` (of family `fam`) from a spec: "1-6", "8,64,128", "auto,1",
    "128x128x64", "true,false", a YAML scalar or a YAML list. Raises InputError naming the knob
    and its domain."""
    kn = knob(name, fam)
    if kn.kind == "tile" and isinstance(spec, (list, tuple)) and _is_int_triple(spec):
        return [_check_one(kn, spec)]
    if isinstance(spec, (list, tuple)):
        items: list = []
        for s in spec:
            items += parse_values(kn.name, s, fam) if isinstance(s, str) else [_check_one(kn, s)]
        if not items:
            raise InputError(kn.flag, inputs.short(spec), "at least one value: " + kn.allowed)
        return _dedup(items)
    if (isinstance(spec, bool) and kn.kind != "bool") or spec is None:
        raise InputError(kn.flag, inputs.short(spec), kn.allowed)
    text = str(spec).strip()
    if not text:
        raise InputError(kn.flag, inputs.short(spec), kn.allowed)
    out: list = []
    for part in text.split(","):
        part = part.strip()
        m = _RANGE_RE.match(part) if kn.kind in ("int", "posint") else None
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            step = int(m.group(3) or 1)
            if step < 1:
                raise InputError(kn.flag, inputs.short(part), "a range lo-hi:step with a positive step")
            if lo > hi:
                raise InputError(kn.flag, inputs.short(part), f"a rising range lo-hi; valid values: {kn.allowed}")
            if (hi - lo) // step >= 100_000:
                raise InputError(kn.flag, inputs.short(part), "a range of fewer than 100000 values")
            out += [_check_one(kn, v) for v in range(lo, hi + 1, step)]
        else:
            out.append(_check_one(kn, part))
    return _dedup(out)


def _is_int_triple(v) -> bool:
    return len(v) == 3 and all(isinstance(x, int) for x in v)


def _dedup(vals: list) -> list:
    seen, out = set(), []
    for v in vals:
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def _apply(point: dict, kn: Knob, value: Any) -> None:
    if kn.kind == "tile":
        point["bm"], point["bn"], point["bk"] = value
    else:
        point[kn.name] = value


# --------------------------------------------------------------------------- grids


@dataclass(frozen=True)
class Grid:
    """A cartesian product of knob values over a base point.

    `swept` lists the knobs (canonical names) that take more than one value, in product order;
    `knobs` maps every knob given (swept or fixed) to its parsed values.
    """

    base: dict
    knobs: dict  # name -> list of values
    family: str = "gemm"

    @property
    def swept(self) -> list[str]:
        return [n for n, v in self.knobs.items() if len(v) > 1]

    def __len__(self) -> int:
        return math.prod(len(v) for v in self.knobs.values()) if self.knobs else 1

    def points(self) -> list[dict]:
        """Every point of the grid: the base with one value of each knob (last varies fastest)."""
        names = list(self.knobs)
        out = []
        for combo in itertools.product(*(self.knobs[n] for n in names)):
            p = dict(self.base)
            for n, v in zip(names, combo):
                _apply(p, knob(n, self.family), v)
            out.append(p)
        return out


def make_grid(sweep: dict | None = None, base: dict | None = None, fam: str = "gemm") -> Grid:
    """A grid from `{knob: spec}` (swept or single values) over the defaults of family `fam`
    updated by `base`."""
    point = default_point(fam)
    for name, spec in (base or {}).items():
        kn = knob(name, fam)
        vals = parse_values(kn.name, spec, fam)
        if len(vals) != 1:
            raise InputError(kn.flag, inputs.short(spec), "a single value in `base` (put lists under `sweep`)",
                             where="grid")
        _apply(point, kn, vals[0])
    knobs: dict = {}
    for name, spec in (sweep or {}).items():
        kn = knob(name, fam)
        knobs[kn.name] = parse_values(kn.name, spec, fam)
    grid = Grid(base=point, knobs=knobs, family=family(fam).name)
    if len(grid) > MAX_POINTS:
        sizes = " x ".join(f"{len(v)} {n}" for n, v in knobs.items() if len(v) > 1)
        raise InputError("sweep", f"{sizes} = {len(grid)} points", f"a grid of at most {MAX_POINTS} points")
    return grid


def load_grid(path: str | os.PathLike, overrides: dict | None = None, fam: str = "gemm") -> Grid:
    """A grid from a YAML file `{base: {...}, sweep: {...}}` of family `fam`; `overrides` (knob ->
    spec, e.g. from command-line flags) replace the file's entries for those knobs."""
    p = pathlib.Path(path)
    doc = inputs.load_yaml_text("grid", str(path), inputs.read_text("grid", path, "YAML file with `base:` and `sweep:`"))
    doc = {} if doc is None else doc
    if not isinstance(doc, dict) or set(doc) - {"base", "sweep"}:
        extra = sorted(set(doc) - {"base", "sweep"}) if isinstance(doc, dict) else doc
        raise InputError(f"{p.name}", inputs.short(extra), "a mapping with only the keys `base` and `sweep`",
                         where="grid")
    base, sweep = doc.get("base") or {}, doc.get("sweep") or {}
    for sect, val in (("base", base), ("sweep", sweep)):
        if not isinstance(val, dict):
            raise InputError(f"{p.name}: {sect}", inputs.short(val), "a mapping knob: value(s)", where="grid")
    ov = {knob(n, fam).name: spec for n, spec in (overrides or {}).items()}
    base = {k: v for k, v in base.items() if knob(k, fam).name not in ov}
    merged = {}  # an overridden knob keeps its place in the file's order
    for k, v in sweep.items():
        name = knob(k, fam).name
        merged[name] = ov.pop(name, v)
    merged.update(ov)
    return make_grid(merged, base, fam)


# --------------------------------------------------------------------------- running


def load_function(spec: str) -> Callable[[dict], dict]:
    """`"package.module:function"` -> the function (must be a picklable top-level callable)."""
    mod_name, _, attr = spec.partition(":")
    ident = r"[A-Za-z_]\w*"
    if not re.fullmatch(rf"{ident}(\.{ident})*", mod_name) or not re.fullmatch(ident, attr):
        raise InputError("fn", spec, "MODULE:FUNCTION, e.g. hopsim.gemm_sim:simulate_point")
    try:
        mod = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        if exc.name and mod_name.startswith(exc.name):
            raise InputError("fn", spec, f"an importable module ({exc.name} is not installed or "
                             "not written yet)") from None
        raise
    fn = getattr(mod, attr, None)
    if not callable(fn):
        raise InputError("fn", spec, f"a function defined in {mod_name}")
    return fn


def _merge(point: dict, result: Any) -> dict:
    """Row = the point, then the result; a result key equal to a knob is kept as `<key>_result`
    (e.g. ctas_per_sm="auto" asked, ctas_per_sm_result=2 achieved)."""
    row = dict(point)
    if not isinstance(result, dict):
        result = {"result": result}
    for k, v in result.items():
        row[f"{k}_result" if k in point else k] = v
    return row


def run_point(fn: Callable[[dict], dict], point: dict) -> dict:
    """`fn(point)` merged into the point; an exception becomes `error` (+ `traceback`)."""
    try:
        return _merge(point, fn(dict(point)))
    except Exception as exc:  # noqa: BLE001  (one bad point must not stop the sweep)
        row = dict(point)
        row["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        if not isinstance(exc, InputError):
            row["traceback"] = traceback.format_exc(limit=-4)[-2000:]
        return row


def run_chunk(fn: Callable[[dict], dict], points: Sequence[dict]) -> list[dict]:
    """Run `fn` on a chunk of points in one task (what each worker receives)."""
    return [run_point(fn, p) for p in points]


def chunk_size(n_points: int, workers: int) -> int:
    """Points per task: about 8 tasks per worker (load balance) and at most 64 points per task
    (steady progress), never below 1."""
    return max(1, min(64, math.ceil(n_points / max(1, workers * 8))))


def _chunks(points: Sequence[dict], size: int) -> list[tuple[int, list[dict]]]:
    return [(i, list(points[i:i + size])) for i in range(0, len(points), size)]


def _failed_rows(chunk: list[dict], exc: BaseException) -> list[dict]:
    msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:500] or type(exc).__name__
    return [{**p, "error": f"worker failed: {msg}"} for p in chunk]


def parse_executor(spec: str | None) -> tuple[str, str | None]:
    """`process` | `serial` | `dask://HOST:PORT` -> (kind, scheduler address or None)."""
    spec = (spec or "process").strip()
    if spec in ("process", "serial"):
        return spec, None
    if spec.startswith("dask://"):
        hostport = spec[len("dask://"):]
        if re.match(r"^[\w.\-\[\]:]+:\d+$", hostport):
            return "dask", "tcp://" + hostport
    raise InputError("executor", spec, "process, serial or dask://HOST:PORT (e.g. "
                     "dask://127.0.0.1:8786)")


def run_sweep(points: Sequence[dict], fn: Callable[[dict], dict], executor: str = "process",
              jobs: int | None = None, progress: bool | None = True, *,
              dask_timeout_s: float = 10.0, desc: str = "sweep",
              while_waiting: Callable[[list, int], object] | None = None) -> list[dict]:
    """Run `fn(point) -> dict` on every point; one row per point, in order.

    executor: "process" (local ProcessPoolExecutor, `jobs` workers, default `default_jobs()`), "serial"
    (this process), or "dask://HOST:PORT" (an existing Dask scheduler; needs `distributed`).
    Points are sent in chunks (`chunk_size`), so thousands of points need no change. A point whose
    `fn` raises gets an `error` column; a worker that dies marks its chunk's rows the same way.
    `progress`: True draws a bar on stderr when it is a terminal (or HOPSIM_PROGRESS=1),
    "force" always, False/None never. `while_waiting(rows, pending)`: work of this process for
    after the points (e.g. a picture's matplotlib, or its simulation), done while the local
    workers run (the process executor; it would otherwise wait idle): called once they have
    started and again after each chunk of points that comes in while others are still pending,
    with the rows so far (None where not in yet) and the number of chunks pending. An exception
    in it is left to the caller's own later call of that work to raise.
    """
    kind, address = parse_executor(executor)
    if jobs is not None and jobs < 1:
        raise InputError("jobs", jobs, "a positive number of workers")
    points = list(points)
    enabled = {True: None, "force": True}.get(progress, False)
    bar = Progress(len(points), desc=desc, enabled=enabled)
    rows: list[dict | None] = [None] * len(points)
    try:
        if kind == "serial" or not points:
            for i, p in enumerate(points):
                rows[i] = run_point(fn, p)
                bar.update(1, errors=int("error" in rows[i]))
        elif kind == "process":
            _run_pool(points, fn, jobs or default_jobs(), rows, bar, while_waiting)
        else:
            _run_dask(points, fn, address, jobs, rows, bar, dask_timeout_s)
    finally:
        bar.close()
    return rows  # type: ignore[return-value]


def default_jobs() -> int:
    """Local worker processes when none are asked for: one more than the CPUs. With exactly one
    per CPU, points of unequal cost leave CPUs idle at the end (the README's main job on 2 CPUs:
    one worker ran the stages 2, 3 and 6 points while the other, done with 1, 4 and 5, waited;
    9.1-9.7 s wall against 8.7-8.9 s with 3 workers, the same CPU time, measured at 209004a); one
    worker more keeps every CPU busy until the last point ends (the OS shares them), for one
    more worker's memory."""
    return (os.cpu_count() or 1) + 1


#: Niceness the local workers get while their sweep's own process does work the sweep's end waits
#: for (`workers_yield`): >= 3, so that on 2 CPUs the scheduler gives that process a CPU of its own
#: and the two workers left share the other (nice 5: weight 335 each against 1024).
WORKER_NICE = 5


@contextlib.contextmanager
def workers_yield(step: int = WORKER_NICE):
    """While in the block, this process's live child processes (the local pool's workers) run
    `step` nicer: the block's work (e.g. the main job's timeline picture, simulate_cmd
    `_EarlyPicture`, ~2 CPU-s started once no chunk waits for a CPU) gets a CPU of its own instead
    of 2/3 of one, so it ends no later than the points that run beside it instead of after them
    (the README's main job on 2 CPUs: one CPU idle for ~1 s at the end otherwise). Work-conserving:
    an idle CPU is never left idle by it. Their niceness is put back after the block; where the
    system does not let a process lower a niceness (unprivileged, RLIMIT_NICE) they stay nicer
    until they end, with the last chunks of this sweep. Any OS refusal is ignored."""
    changed = []
    for child in multiprocessing.active_children():
        try:
            old = os.getpriority(os.PRIO_PROCESS, child.pid)
            os.setpriority(os.PRIO_PROCESS, child.pid, min(19, old + step))
            changed.append((child.pid, old))
        except (OSError, AttributeError):  # gone already, or no priorities on this OS
            pass
    try:
        yield
    finally:
        for pid, old in changed:
            try:
                os.setpriority(os.PRIO_PROCESS, pid, old)
            except OSError:
                pass


def _run_pool(points, fn, workers, rows, bar, while_waiting=None) -> None:
    workers = min(workers, len(points))
    size = chunk_size(len(points), workers)
    with cf.ProcessPoolExecutor(max_workers=workers) as pool:
        futs = {pool.submit(run_chunk, fn, chunk): (start, chunk)
                for start, chunk in _chunks(points, size)}
        pending = len(futs)
        _waiting(while_waiting, rows, pending)  # the workers exist by now (the first submit starts them all)
        for fut in cf.as_completed(futs):
            start, chunk = futs[fut]
            try:
                got = fut.result()
            except Exception as exc:  # noqa: BLE001  (a pickling error or a dead worker)
                got = _failed_rows(chunk, exc)
            rows[start:start + len(got)] = got
            bar.update(len(got), errors=sum("error" in r for r in got))
            pending -= 1
            if pending:
                _waiting(while_waiting, rows, pending)


def _waiting(fn, rows: list, pending: int) -> None:
    """run_sweep's `while_waiting(rows so far, chunks pending)`, if any; its exceptions are the
    caller's to raise later (when it does that work itself)."""
    if fn is None:
        return
    try:
        fn(list(rows), pending)
    except Exception:  # noqa: BLE001
        pass


def _dask_client(address: str, timeout_s: float):
    try:
        import distributed  # noqa: PLC0415
    except ImportError:
        raise InputError("executor", "dask://" + address.removeprefix("tcp://"),
                         "installed Dask: pip install -e '.[dask]' (or use --executor process)") from None
    try:
        return distributed.Client(address, timeout=timeout_s, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise InputError("executor", "dask://" + address.removeprefix("tcp://"),
                         f"no Dask scheduler answered at {address} within {timeout_s:g} s: start one "
                         "with `dask scheduler` (and `dask worker ADDRESS`) or use --executor "
                         f"process ({type(exc).__name__})") from None


def _run_dask(points, fn, address, jobs, rows, bar, timeout_s) -> None:
    import distributed  # noqa: PLC0415

    client = _dask_client(address, timeout_s)
    try:
        workers = jobs or max(1, sum(client.nthreads().values()))
        size = chunk_size(len(points), workers)
        futs = {client.submit(run_chunk, fn, chunk, pure=False): (start, chunk)
                for start, chunk in _chunks(points, size)}
        with client.as_current():
            for fut in distributed.as_completed(list(futs)):
                start, chunk = futs[fut]
                try:
                    got = fut.result()
                except Exception as exc:  # noqa: BLE001
                    got = _failed_rows(chunk, exc)
                rows[start:start + len(got)] = got
                bar.update(len(got), errors=sum("error" in r for r in got))
    finally:
        client.close()


# --------------------------------------------------------------------------- output


def _cell(v: Any) -> Any:
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v)
    return v


def columns(rows: Iterable[dict]) -> list[str]:
    """Union of the rows' keys in first-seen order (`traceback` last)."""
    cols: dict = {}
    for r in rows:
        for k in r:
            cols.setdefault(k, None)
    out = [c for c in cols if c != "traceback"]
    return out + (["traceback"] if "traceback" in cols else [])


def write_rows(rows: Sequence[dict], path: str | os.PathLike) -> pathlib.Path:
    """Rows to `.csv` (one column per key, union over rows) or `.json` (a list of objects)."""
    p = pathlib.Path(path)
    ext = p.suffix.lower()
    if ext not in (".csv", ".json"):
        raise InputError("out", str(path), "a file name ending in .csv or .json")
    if not p.parent.is_dir():  # never create directories (a typo would make one at the root)
        raise InputError("out", str(path), f"a file in an existing directory ({p.parent} is not)")
    if ext == ".json":
        p.write_text(json.dumps(list(rows), indent=1, default=str) + "\n")
        return p
    cols = columns(rows)
    with p.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: _cell(r.get(k)) for k in cols})
    return p


def _parse_cell(text: str) -> Any:
    if text == "":
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    if text in ("True", "False"):
        return text == "True"
    return text


def read_rows(path: str | os.PathLike) -> list[dict]:
    """Rows back from `write_rows` output (CSV numbers become int/float, empty cells None)."""
    p = pathlib.Path(path)
    if not p.is_file():
        raise InputError("rows", str(path), "an existing .csv or .json file")
    if p.suffix.lower() == ".json":
        return json.loads(p.read_text())
    with p.open(newline="") as fh:
        return [{k: _parse_cell(v) for k, v in r.items()} for r in csv.DictReader(fh)]
