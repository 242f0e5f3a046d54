"""The launch of `hopsim simulate FILE.ptx`: the `--launch` YAML (typed), flags, buffers, tensor
maps, parameter values and `--save` outputs, all checked before anything is simulated.

launch.yaml (every key optional; a flag overrides the file's value):

    grid: [x, y, z]            # or 132, or "16,8"; CUDA limits: x <= 2^31-1, y, z <= 65535
    block: [x, y, z]           # x, y <= 1024, z <= 64, at most 1024 threads
    smem: 0                    # dynamic shared memory in bytes (static + dynamic <= 227 KB)
    params: {KT: 4}            # kernel .param values: integers, floats or strings like "0x10"
    buffers: {A: "random:f16:64x256"}   # FILE.npy | zeros|random|arange:DTYPE:SHAPE[:SEED]
    tensor_maps: {tmA: "A:64x64:128B"}  # BUFFER:BOXCOLSxBOXROWS[:SWIZZLE]
    save: {D: d.npy}           # buffer -> .npy file written after the run

Buffers together must fit the memory budget (HOPSIM_MEM_BUDGET, hopsim/inputs.py).
"""

from __future__ import annotations

import math
import os
import pathlib
import re
import zlib
from typing import Any, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt, StrictStr, ValidationError

from hopsim import inputs
from hopsim.functional.gmem import GlobalMemory
from isa.dtypes import from_f32
from isa.errors import InputError
from isa.tensormap import TensorMap

SMEM_MAX = 232448  # bytes one CTA may use on sm_90 (227 KB; CUDA programming guide, cc 9.0)
MAX_DIMS = 4
_DT = {"f16": "float16", "f32": "float32", "f64": "float64", "u8": "uint8", "u16": "uint16",
       "u32": "uint32", "u64": "uint64", "s32": "int32", "s64": "int64", "bf16": "bf16"}
_ITEMSIZE = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "u8": 1, "u16": 2, "u32": 4, "u64": 8, "s32": 4, "s64": 8}
# .param types -> the integer range of the value (PTX ISA 5.2: fundamental types)
_INT_RANGE = {"u8": (0, 2**8 - 1), "u16": (0, 2**16 - 1), "u32": (0, 2**32 - 1), "u64": (0, 2**64 - 1),
              "s8": (-2**7, 2**7 - 1), "s16": (-2**15, 2**15 - 1), "s32": (-2**31, 2**31 - 1),
              "s64": (-2**63, 2**63 - 1), "b8": (0, 2**8 - 1), "b16": (0, 2**16 - 1), "b32": (0, 2**32 - 1),
              "b64": (0, 2**64 - 1), "pred": (0, 1)}

Dim3 = Union[StrictInt, StrictStr, list[StrictInt]]
Scalar = Union[StrictInt, StrictFloat, StrictStr]


class LaunchFile(BaseModel):
    """The `--launch` YAML document (types only; values are checked where they are used)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    grid: Dim3 | None = None
    block: Dim3 | None = None
    smem: StrictInt | None = None
    params: dict[StrictStr, Scalar] = {}
    buffers: dict[StrictStr, StrictStr] = {}
    tensor_maps: dict[StrictStr, StrictStr] = {}
    save: dict[StrictStr, StrictStr] = {}


_ALLOWED = {
    "grid": "an integer, a string \"X,Y,Z\" or a list of 1 to 3 integers",
    "block": "an integer, a string \"X,Y,Z\" or a list of 1 to 3 integers",
    "smem": f"an integer number of bytes 0..{SMEM_MAX}",
    "params": "a mapping NAME: value (an integer, a float or a string like \"0x10\")",
    "buffers": "a mapping NAME: \"FILE.npy\" or \"zeros|random|arange:DTYPE:SHAPE[:SEED]\"",
    "tensor_maps": "a mapping NAME: \"BUFFER:BOXCOLSxBOXROWS[:SWIZZLE]\"",
    "save": "a mapping NAME: \"FILE.npy\"",
}


def load_launch(path: str) -> tuple[LaunchFile, pathlib.Path]:
    """The launch file as a typed model and its directory (relative file names are resolved there)."""
    text = inputs.read_text("launch", path, "YAML file")
    doc = inputs.load_yaml_text("launch", path, text)
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise InputError("launch", path, "a mapping with keys " + ", ".join(_ALLOWED))
    try:
        return LaunchFile.model_validate(doc), pathlib.Path(path).parent
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(x) for x in err["loc"]][:2]
        top = loc[0] if loc else "launch"
        if err["type"] == "extra_forbidden":
            raise InputError(f"launch {top}", inputs.short(err.get("input")), "keys " + ", ".join(_ALLOWED),
                             where=path) from None
        value = doc.get(top) if len(loc) < 2 or not isinstance(doc.get(top), dict) else doc[top].get(loc[1])
        raise InputError(f"launch {'.'.join(loc)}", inputs.short(value), _ALLOWED.get(top, err["msg"]),
                         where=path) from None


def kv(field: str, item: str) -> tuple[str, str]:
    if "=" not in item:
        raise InputError(field, inputs.short(item), "NAME=VALUE")
    k, v = item.split("=", 1)
    if not k.strip():
        raise InputError(field, inputs.short(item), "NAME=VALUE with a name")
    return k.strip(), v.strip()


def shape(field: str, s: str) -> tuple[int, ...]:
    """A row-major shape like 64x256: 1 to 4 extents, each 1..2^31-1."""
    parts = s.lower().split("x")
    if not 1 <= len(parts) <= MAX_DIMS or not all(re.fullmatch(r"\d{1,10}", p) for p in parts):
        raise InputError(field, inputs.short(s), f"a shape like 64x256 (1 to {MAX_DIMS} positive extents)")
    dims = tuple(int(p) for p in parts)
    if any(not 1 <= d < 2**31 for d in dims):
        raise InputError(field, inputs.short(s), "a shape like 64x256 with extents 1..2^31-1")
    return dims


def buffer_bytes(name: str, spec: str, base: pathlib.Path) -> int:
    """Bytes buffer `name` will take, from its spec alone (checked before anything is allocated)."""
    field = f"buffer {name}"
    if spec.endswith(".npy"):
        path = _npy_path(field, spec, base)
        return path.stat().st_size
    parts = spec.split(":")
    if not 3 <= len(parts) <= 4 or parts[0] not in ("zeros", "random", "arange"):
        raise InputError(field, inputs.short(spec), "FILE.npy, zeros:DTYPE:SHAPE, random:DTYPE:SHAPE[:SEED] or "
                         "arange:DTYPE:SHAPE")
    if parts[1] not in _DT:
        raise InputError(f"{field} dtype", inputs.short(parts[1]), "one of " + ", ".join(_DT))
    if len(parts) == 4 and (parts[0] != "random" or not re.fullmatch(r"\d{1,10}", parts[3])):
        raise InputError(f"{field} seed", inputs.short(parts[3]), "a SEED 0..9999999999 after random:DTYPE:SHAPE")
    return math.prod(shape(field, parts[2])) * _ITEMSIZE[parts[1]]


def _npy_path(field: str, spec: str, base: pathlib.Path) -> pathlib.Path:
    path = pathlib.Path(spec) if os.path.isabs(spec) else base / spec
    if not path.is_file():
        raise InputError(field, inputs.short(spec), "an existing .npy file")
    return path


def make_buffer(name: str, spec: str, base: pathlib.Path):
    """(array, dtype name or None) of a buffer spec (see `buffer_bytes`, called first)."""
    field = f"buffer {name}"
    if spec.endswith(".npy"):
        try:
            arr = np.load(_npy_path(field, spec, base), allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise InputError(field, inputs.short(spec), f"a readable .npy file ({inputs.reason(exc)})") from None
        if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biuf" or arr.size == 0 or arr.ndim > MAX_DIMS:
            raise InputError(field, inputs.short(spec), f"a non-empty numeric array of 1 to {MAX_DIMS} dimensions")
        return arr, None
    kind, dt, *rest = spec.split(":")
    dims = shape(field, rest[0])
    # default seed: the buffer's name (CRC-32), so that two random buffers differ (A == B would
    # make A.B^T symmetric and hide a transposition bug)
    seed = int(rest[1]) if len(rest) > 1 else zlib.crc32(name.encode())
    n = math.prod(dims)
    if kind == "zeros":
        x = np.zeros(dims, np.float32)
    elif kind == "arange":
        x = np.arange(n, dtype=np.float64).reshape(dims)
    else:
        x = np.random.default_rng(seed).standard_normal(dims)
    if dt == "bf16":
        return from_f32(x.astype(np.float32), "bf16"), "bf16"
    if dt in ("f16", "f32", "f64"):
        return x.astype(_DT[dt]), dt
    return (x if kind != "random" else np.abs(x) * 100).astype(_DT[dt]), dt


def param_value(prm, raw: Any):
    """The value of kernel .param `prm` from a flag string or a YAML scalar, in the type's range."""
    field = f"param {prm.name}"
    if prm.type.startswith("f"):
        try:
            if isinstance(raw, str) and len(raw) > 60:
                raise ValueError
            return float(raw)
        except (TypeError, ValueError):
            raise InputError(field, inputs.short(raw), f"a number for .param .{prm.type}") from None
    lo, hi = _INT_RANGE.get(prm.type, (-2**63, 2**64 - 1))
    try:
        val = raw if isinstance(raw, int) and not isinstance(raw, bool) else inputs.int_text(raw)
    except (TypeError, ValueError):
        raise InputError(field, inputs.short(raw), f"a number for .param .{prm.type} (an integer, decimal or 0x hex)") from None
    if not lo <= val <= hi:
        raise InputError(field, inputs.short(val), f"a number for .param .{prm.type} in {lo}..{hi}")
    return val


def tensor_map(name: str, tspec: str, arrays: dict, dtypes: dict, gmem: GlobalMemory) -> int:
    """Register tensor map `name` (BUFFER:BOXCOLSxBOXROWS[:SWIZZLE]); returns its handle."""
    field = f"tensor-map {name}"
    parts = tspec.split(":")
    if len(parts) not in (2, 3) or parts[0] not in arrays:
        raise InputError(field, inputs.short(tspec), "BUFFER:BOXCOLSxBOXROWS[:SWIZZLE] over a "
                         f"2-D buffer; buffers: {', '.join(arrays) or 'none'}")
    arr = arrays[parts[0]]
    if arr.ndim != 2:
        raise InputError(field, inputs.short(tspec), "a 2-D buffer (rows x cols)")
    box = shape(field, parts[1])
    if len(box) > 2:
        raise InputError(field, inputs.short(tspec), "a box BOXCOLSxBOXROWS (2 extents)")
    bc, br = box + (1,) * (2 - len(box))
    dt = dtypes[parts[0]] or {"float16": "f16", "float32": "f32"}.get(str(arr.dtype), "u8")
    try:
        tm = TensorMap(dtype=dt, global_dims=(arr.shape[1], arr.shape[0]),
                       global_strides_bytes=(arr.shape[1] * arr.itemsize,), box_dims=(bc, br),
                       global_address=gmem.address(parts[0]), swizzle=parts[2] if len(parts) == 3 else "128B")
    except InputError as exc:
        raise InputError(field, inputs.short(tspec), f"a valid tensor map ({exc})") from None
    return gmem.register_tensor_map(name, tm)
