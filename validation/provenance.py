"""Provenance of every hardware record: which device, clocks, driver, CUDA, tools, git commit, when.

Imports cupy lazily (only `device_provenance` needs a GPU), so records stay readable anywhere.
The git commit is taken from `HOPSIM_GIT_COMMIT` when set (the device machine receives a copy of
the working tree without `.git`), else from `git rev-parse HEAD`.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import platform
import shutil
import subprocess

from isa.errors import InputError

RECORDS_DIR = pathlib.Path(__file__).resolve().parent / "records" / "h100"


def _run(cmd: list[str]) -> str | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except Exception:
        return None


def git_commit() -> str:
    env = os.environ.get("HOPSIM_GIT_COMMIT")
    if env:
        return env
    return _run(["git", "rev-parse", "HEAD"]) or "unknown"


def nvidia_smi_clocks() -> dict:
    """SM / memory clocks and power as nvidia-smi reports them right now (read only)."""
    q = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,temperature.gpu,pstate"
    out = _run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits"])
    if not out:
        return {}
    vals = [v.strip() for v in out.splitlines()[0].split(",")]
    keys = ["name", "driver", "sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz", "mem_clock_max_mhz",
            "power_w", "temperature_c", "pstate"]
    return dict(zip(keys, vals))


def device_provenance() -> dict:
    """Everything a record needs to be traceable. Call on the GPU machine."""
    import cupy  # noqa: PLC0415  (validation is the only package that imports cupy)

    dev = cupy.cuda.Device(0)
    props = cupy.cuda.runtime.getDeviceProperties(0)
    ncu = _run(["ncu", "--version"])
    nvcc = _run(["nvcc", "--version"])
    rec = {
        "device_name": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
        "compute_capability": dev.compute_capability,
        "sm_count": props["multiProcessorCount"],
        "l2_bytes": props["l2CacheSize"],
        "smem_per_block_optin_bytes": props.get("sharedMemPerBlockOptin"),
        "smem_per_sm_bytes": props.get("sharedMemPerMultiprocessor"),
        "clock_rate_khz_attr": props.get("clockRate"),
        "memory_clock_khz_attr": props.get("memoryClockRate"),
        "memory_bus_width_bits": props.get("memoryBusWidth"),
        "driver_version": cupy.cuda.runtime.driverGetVersion(),
        "runtime_version": cupy.cuda.runtime.runtimeGetVersion(),
        "cupy_version": cupy.__version__,
        "ncu_version": ncu.splitlines()[-1] if ncu else None,
        "nvcc_version": nvcc.splitlines()[-1] if nvcc else None,
        "nvidia_smi": nvidia_smi_clocks(),
        "host": platform.node(),
        "git_commit": git_commit(),
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "clock_control": "none (clocks left as found; never changed)",
    }
    try:
        import cuda.bindings  # noqa: PLC0415

        rec["cuda_bindings_version"] = getattr(cuda.bindings, "__version__", None)
    except Exception:
        rec["cuda_bindings_version"] = None
    return rec


def write_record(kind: str, name: str, payload: dict, provenance: dict, out_dir: pathlib.Path | None = None) -> pathlib.Path:
    """Write one record `{kind, name, provenance, ...payload}` as JSON; returns its path."""
    out_dir = pathlib.Path(out_dir) if out_dir else RECORDS_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{kind}__{name}.json"
    rec = record_dict(kind, name, payload, provenance)
    path.write_text(json.dumps(rec, indent=1, sort_keys=False) + "\n")
    return path


def record_dict(kind: str, name: str, payload: dict, provenance: dict) -> dict:
    """The record write_record writes: `{kind, name, provenance, ...payload}`."""
    return {"kind": kind, "name": name, "provenance": provenance, **payload}


def append_jsonl(path: pathlib.Path, rec: dict) -> None:
    """Append one record as one JSON line (flushed: a run cut short keeps what it finished)."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(rec, sort_keys=False) + "\n")
        f.flush()


def split_jsonl(path: pathlib.Path, out_dir: pathlib.Path) -> list[pathlib.Path]:
    """Write each line of a records JSONL (records as record_dict makes them) as its own record
    file, as write_record names it. A line that is not such a record raises ValueError naming
    the line."""
    recs = []
    for i, line in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            recs.append((rec.pop("kind"), rec.pop("name"), rec.pop("provenance"), rec))
        except (json.JSONDecodeError, KeyError, AttributeError, TypeError) as e:
            raise ValueError(f"{path}:{i}: not a record line with kind, name and provenance ({e})") from None
    return [write_record(kind, name, rec, prov, out_dir=out_dir) for kind, name, prov, rec in recs]


def _read_record(p: pathlib.Path) -> dict:
    """One record file, or an InputError naming it (corrupt JSON, not UTF-8, not an object, a
    `params` that is not an object)."""
    try:
        rec = json.loads(p.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputError("records", str(p), f"a JSON record file ({str(exc).splitlines()[0][:80]})") from None
    if not isinstance(rec, dict) or not isinstance(rec.get("params", {}), dict) \
            or not isinstance(rec.get("kind", ""), str):
        raise InputError("records", str(p), "a JSON object with a string `kind` and an object `params`")
    return rec


def load_records(kind: str | None = None, records_dir: pathlib.Path | None = None) -> list[dict]:
    """All committed records (optionally of one kind), readable without a GPU."""
    d = pathlib.Path(records_dir) if records_dir else RECORDS_DIR
    out = []
    for p in sorted(d.glob("*.json")):
        rec = _read_record(p)
        if kind is None or rec.get("kind") == kind:
            rec["_path"] = str(p)
            out.append(rec)
    return out
