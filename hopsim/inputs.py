"""Input checks of the command line: bounded integers, output paths, guarded file loading, and
atomic outputs.

Every check raises `InputError` (one line: the field, the value, what is valid; the CLI exits 2)
*before* anything is simulated. The limits:

- CUDA launch limits (CUDA C++ programming guide, Table "Technical specifications per compute
  capability", cc 9.0): grid x <= 2^31-1, grid y, z <= 65535; block x, y <= 1024, block z <= 64,
  threads per block <= 1024.
- The memory budget: data hopsim would allocate (buffers of `simulate FILE.ptx`, operands of
  `simulate gemm --mode full`) must fit in `HOPSIM_MEM_BUDGET` bytes (default 4 GiB; suffixes K, M,
  G, T accepted, e.g. `HOPSIM_MEM_BUDGET=16G`).
- Text inputs (YAML, JSON, IR files) must be UTF-8, at most 64 MiB, nested at most 64 deep, with
  integers of at most 4300 digits (Python's own limit).
- Output paths: not empty, not a directory, not under /proc, /sys or /dev, a name of at most
  NAME_MAX (255) bytes in an existing, writable directory; two outputs may not name one file.

`Outputs` writes every output of a command to a temporary file in the destination's directory and
renames them all into place only when every one was written: a failure leaves no output behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import tempfile
from typing import Any, Iterator

import yaml

from isa.errors import InputError

GRID_X_MAX = 2**31 - 1   # CUDA: maxGridSize[0] for cc >= 3.0
GRID_YZ_MAX = 65535      # CUDA: maxGridSize[1], [2]
BLOCK_XY_MAX = 1024      # CUDA: maxThreadsDim[0], [1]
BLOCK_Z_MAX = 64         # CUDA: maxThreadsDim[2]
THREADS_PER_BLOCK_MAX = 1024
DEFAULT_MEM_BUDGET = 4 << 30
TEXT_MAX_BYTES = 64 << 20
NEST_MAX = 64
EXPANDED_MAX = 1_000_000
NAME_MAX = 255
PATH_MAX = 4096
_FORBIDDEN_ROOTS = ("/proc", "/sys", "/dev")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


# ----------------------------------------------------------------------------- numbers


def mem_budget() -> int:
    """Bytes of data hopsim may allocate: HOPSIM_MEM_BUDGET (e.g. 4G, 512M, 1000000), default 4 GiB."""
    raw = os.environ.get("HOPSIM_MEM_BUDGET", "").strip()
    if not raw:
        return DEFAULT_MEM_BUDGET
    m = re.fullmatch(r"(\d{1,15})\s*(K|M|G|T|)i?B?", raw, re.I)
    if not m or int(m.group(1)) < 1:
        raise InputError("HOPSIM_MEM_BUDGET", raw, "a positive number of bytes, e.g. 4G or 512M")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def gib(n: int) -> str:
    return f"{n / (1 << 30):.3g} GiB"


def within_budget(field: str, value: object, nbytes: int, what: str) -> None:
    """Refuse data of `nbytes` over the memory budget, before allocating it."""
    budget = mem_budget()
    if nbytes > budget:
        raise InputError(field, value, f"{what} needs {gib(nbytes)}, over the memory budget of "
                         f"{gib(budget)} (HOPSIM_MEM_BUDGET)")


def bounded_int(field: str, value: Any, lo: int, hi: int, what: str = "an integer") -> int:
    """An int (not a bool, not a float) in lo..hi."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InputError(field, value, f"{what} in {lo}..{hi}")
    return value


def bounded_float(field: str, value: Any, lo: float, hi: float, what: str = "a number") -> float:
    """A finite float (from a number or its text) in lo..hi."""
    try:
        x = float(str(value).strip())
    except ValueError:
        raise InputError(field, value, f"{what} from {lo:g} to {hi:g}") from None
    if not (x == x and lo <= x <= hi):
        raise InputError(field, value, f"{what} from {lo:g} to {hi:g}")
    return x


def int_text(text: str) -> int:
    """An integer written in decimal digits or 0x/0o/0b (Python's int(text, 0)), at most 40 chars.

    `1e5` is refused: it is neither decimal (it has an 'e') nor hex without the 0x prefix."""
    s = str(text).strip()
    if len(s) > 40 or not re.fullmatch(r"[+-]?(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|\d[\d_]*)", s):
        raise ValueError(s)
    return int(s, 0)


def dim3(field: str, value: Any, kind: str) -> tuple[int, int, int]:
    """A grid or block shape from 132, "16,8", "16x8" or [16, 8]: 1 to 3 extents within CUDA's
    limits (kind "grid" or "block")."""
    v = [value] if isinstance(value, int) and not isinstance(value, bool) else value
    if isinstance(v, str):
        v = [x for x in re.split(r"[,x ]+", v.strip()) if x]
    allowed = ("1 to 3 positive integers within CUDA's limits (x <= 2^31-1, y, z <= 65535), e.g. 132 or 16,8"
               if kind == "grid" else "1 to 3 positive integers with x, y <= 1024, z <= 64 and at most "
               "1024 threads, e.g. 128 or 32,4")
    try:
        if not isinstance(v, (list, tuple)) or not 1 <= len(v) <= 3:
            raise ValueError
        vals = [x if isinstance(x, int) and not isinstance(x, bool) else int_text(x) if isinstance(x, str)
                else _not_int() for x in v]
    except ValueError:
        raise InputError(field, short(value), allowed) from None
    vals += [1] * (3 - len(vals))
    his = (GRID_X_MAX, GRID_YZ_MAX, GRID_YZ_MAX) if kind == "grid" else (BLOCK_XY_MAX, BLOCK_XY_MAX, BLOCK_Z_MAX)
    if any(not 1 <= x <= hi for x, hi in zip(vals, his)):
        raise InputError(field, short(value), allowed)
    if kind == "block" and vals[0] * vals[1] * vals[2] > THREADS_PER_BLOCK_MAX:
        raise InputError(field, short(value), allowed)
    return tuple(vals)  # type: ignore[return-value]


def _not_int() -> int:
    raise ValueError


def short(value: Any, n: int = 60) -> Any:
    """A value shortened for an error line (long strings and containers are cut)."""
    if isinstance(value, (str, bytes)) and len(value) > n:
        return value[:n] + ("..." if isinstance(value, str) else b"...")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"<an integer of {len(str(value)) if value.bit_length() < 14000 else 'over 4300'} digits>"
    if isinstance(value, (list, tuple, dict, set)):
        text = repr(value) if len(value) < 50 else f"<a {type(value).__name__} of {len(value)} items>"
        return text if len(text) <= n else text[:n] + "..."
    return value


# ----------------------------------------------------------------------------- text files


def read_text(field: str, path: str | os.PathLike, what: str) -> str:
    """A UTF-8 text file of at most 64 MiB, or one line saying why not."""
    p = pathlib.Path(path)
    try:
        if not p.is_file():
            raise InputError(field, str(path), f"an existing {what}")
        if p.stat().st_size > TEXT_MAX_BYTES:
            raise InputError(field, str(path), f"a {what} of at most {TEXT_MAX_BYTES >> 20} MiB")
        return p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(field, str(path), f"a UTF-8 {what} (byte {exc.start} is not UTF-8)") from None
    except OSError as exc:
        raise InputError(field, str(path), f"a readable {what} ({exc.strerror})") from None


def depth_ok(text: str) -> bool:
    """Brackets nested at most NEST_MAX deep (checked before a recursive parser sees the text)."""
    depth = best = 0
    for ch in re.findall(r"[\[\]{}]", text):
        depth += 1 if ch in "[{" else -1
        best = max(best, depth)
        if best > NEST_MAX:
            return False
    return True


def _check_tree(field: str, where: str, obj: Any, depth: int = 0, sizes: dict | None = None) -> int:
    """Depth, key types and size of a loaded document: mappings keyed by strings, at most NEST_MAX
    deep, at most EXPANDED_MAX values once YAML aliases are expanded (a "billion laughs" file is
    small but expands to 10^9 values). Returns the expanded size; each shared node is sized once."""
    sizes = {} if sizes is None else sizes
    if depth > NEST_MAX:
        raise InputError(field, where, f"a document nested at most {NEST_MAX} deep")
    if not isinstance(obj, (dict, list)):
        return 1
    if id(obj) in sizes:
        return sizes[id(obj)]
    sizes[id(obj)] = EXPANDED_MAX + 1  # a node met again inside itself (a recursive alias)
    total = 1
    for k, v in (obj.items() if isinstance(obj, dict) else enumerate(obj)):
        if isinstance(obj, dict) and not isinstance(k, str):
            raise InputError(field, where, f"mappings with string keys (key {short(k)!r} is a "
                             f"{type(k).__name__})")
        total += _check_tree(field, where, v, depth + 1, sizes)
        if total > EXPANDED_MAX:
            raise InputError(field, where, f"a document of at most {EXPANDED_MAX} values once YAML "
                             "aliases (*name) are expanded")
    sizes[id(obj)] = total
    return total


def load_yaml_text(field: str, where: str, text: str) -> Any:
    """yaml.safe_load, with every failure (syntax, depth, huge numbers) as one InputError line."""
    if not depth_ok(text):
        raise InputError(field, where, f"YAML nested at most {NEST_MAX} deep")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(field, where, f"valid YAML{at}: {problem}") from None
    except (ValueError, RecursionError, OverflowError, TypeError) as exc:
        raise InputError(field, where, f"valid YAML of plain values ({reason(exc)})") from None
    _check_tree(field, where, doc)
    return doc


def load_json_text(field: str, where: str, text: str) -> Any:
    """json.loads, with every failure (syntax, depth, huge numbers) as one InputError line."""
    if not depth_ok(text):
        raise InputError(field, where, f"JSON nested at most {NEST_MAX} deep")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(field, where, f"valid JSON ({exc.msg} at line {exc.lineno})") from None
    except (ValueError, RecursionError) as exc:
        raise InputError(field, where, f"valid JSON of plain values ({reason(exc)})") from None
    _check_tree(field, where, doc)
    return doc


def reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:100]


# ----------------------------------------------------------------------------- outputs


def _shown_path(path: str) -> str:
    """A path as an error line shows it: whole up to 300 characters (a user must recognise it)."""
    return short(path, 300)


def output_path(field: str, path: Any, suffixes: tuple[str, ...] = ()) -> pathlib.Path:
    """An output file that can be created: checked before anything is simulated."""
    if not isinstance(path, str) or not path.strip():
        raise InputError(field, path, "a file name (not empty)")
    if "\x00" in path or len(path.encode("utf-8", "surrogateescape")) > PATH_MAX:
        raise InputError(field, _shown_path(path), f"a path of at most {PATH_MAX} bytes without NUL")
    p = pathlib.Path(path)
    name = p.name
    if len(name.encode("utf-8", "surrogateescape")) > NAME_MAX:
        raise InputError(field, _shown_path(path), f"a file name of at most {NAME_MAX} bytes")
    try:
        full = p.absolute()
        real = pathlib.Path(os.path.realpath(full))
    except (OSError, ValueError):
        raise InputError(field, _shown_path(path), "a file path that can be resolved") from None
    if any(str(real) == r or str(real).startswith(r + "/") for r in _FORBIDDEN_ROOTS):
        raise InputError(field, _shown_path(path), "a regular file, not under /proc, /sys or /dev")
    if real.is_dir():
        raise InputError(field, _shown_path(path), "a file name, not a directory")
    if suffixes and not name.lower().endswith(suffixes):
        raise InputError(field, _shown_path(path), "a file name ending in " + " or ".join(suffixes))
    if real.exists() and (not real.is_file() or not os.access(real, os.W_OK)):
        raise InputError(field, _shown_path(path), "a writable regular file")
    parent = real.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(field, _shown_path(path), f"a file in an existing, writable directory ({parent} is not)")
    return real


def output_paths(items: list[tuple[str, Any, tuple[str, ...]]]) -> dict[str, pathlib.Path]:
    """Check several outputs [(field, path, suffixes)] (None = not asked for); no two may coincide."""
    seen: dict[pathlib.Path, str] = {}
    out = {}
    for field, path, suffixes in items:
        if path is None:
            continue
        real = output_path(field, path, suffixes)
        if real in seen:
            raise InputError(field, short(path), f"a different file than {seen[real]}")
        seen[real] = field
        out[field] = real
    return out


class Outputs:
    """Stage every output in a temporary file next to its destination; `commit` renames them all.

        with Outputs() as outs:
            fig.savefig(outs.stage("plot.png"))
            np.save(outs.stage("d.npy"), arr)
        # both exist now, or neither (an exception inside the block removes every temporary)
    """

    def __init__(self) -> None:
        self._staged: list[tuple[str, pathlib.Path]] = []

    def stage(self, path: str | os.PathLike) -> str:
        dest = pathlib.Path(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name[:80]}.", suffix=".tmp" + "".join(dest.suffixes[-1:]),
                                   dir=dest.parent if str(dest.parent) else ".")
        os.close(fd)
        self._staged.append((tmp, dest))
        return tmp

    def commit(self) -> None:
        for tmp, dest in self._staged:
            os.replace(tmp, dest)
        self._staged.clear()

    def discard(self) -> None:
        for tmp, _ in self._staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self._staged.clear()

    def __enter__(self) -> "Outputs":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            try:
                self.commit()
            except OSError as e:
                self.discard()
                raise InputError("output", str(getattr(e, "filename", "")), f"a writable file ({e.strerror})") from None
        else:
            self.discard()


@contextlib.contextmanager
def one_output(path: str | os.PathLike | None) -> Iterator[str | None]:
    """A single atomic output (None passes through)."""
    if path is None:
        yield None
        return
    with Outputs() as outs:
        yield outs.stage(path)


# ----------------------------------------------------------------------------- GEMM points

MAX_CTAS = 1 << 20  # CTAs one simulation runs (each is simulated or memoised one by one)


def gemm_limits(params, values: bool) -> None:
    """A GEMM point hopsim can simulate: at most MAX_CTAS CTAs, and with data values (--mode full,
    --check) operands and result within the memory budget. Timing-only runs allocate no data."""
    ctas = -(-params.m // params.bm) * -(-params.n // params.bn)
    if ctas > MAX_CTAS:
        raise InputError("m x n", f"{params.m}x{params.n}", f"at most {MAX_CTAS} CTAs of {params.bm}x{params.bn} "
                         f"({ctas} asked): a larger problem cannot be simulated in reasonable time")
    if values:
        nbytes = 2 * (params.m * params.k + params.n * params.k + params.m * params.n)
        within_budget("mode", "full", nbytes, f"gemm {params.m}x{params.n}x{params.k} with data values")
