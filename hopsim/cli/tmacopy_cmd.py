"""`hopsim simulate tmacopy ...`: the TMA copy family (kernels/membound/tmacopy.py).

Builds the IR twin of kernels/cuda/tmacopy.cu for the flags (a row-major rows x cols f16/f32
tensor copied box by box: TMA load into a shared-memory stage, TMA store out of it), times it on
the H100 model (timing-only by default: buffers reserved, no data; `--check` runs small sizes with
data through the simulated shared memory, swizzled and unswizzled by the TMA unit, and compares
the output with the input) and prints the report of `simulate vecadd`: time, achieved bandwidth
(2 x the tensor bytes / time), where warps waited, HBM read and written-back bytes; `--json`,
`--clock`, `--trace`, `--plot` as there.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from hopsim.cli import _Parser
from hopsim.cli.family_run import (add_loop_argument, bandwidth_gbs, check_output_paths, clocked_run, loop_notes, loop_of,
                                    write_outputs)
from hopsim.config import load_gpu
from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.summary import format_summary
from hopsim.timing.runner import simulate
from isa.errors import HopsimError, InputError
from kernels.membound.tmacopy import REGS_PER_THREAD, THREADS, TmaCopyParams, build_tmacopy, tensor_maps

FAMILY = "tmacopy"
EXAMPLE = """examples:
  hopsim simulate tmacopy --rows 8192 --cols 8192 --dtype f16          (64x64 boxes, 128B swizzle, 4 stages)
  hopsim simulate tmacopy --rows 4096 --cols 4096 --dtype f32 --box-rows 32 --box-cols 32 --swizzle 128B \\
      --stages 2 --ctas 264 --json                                          (264 persistent CTAs)
  hopsim simulate tmacopy --rows 256 --cols 256 --swizzle 64B --box-cols 32 --check"""

CHECK_LIMIT = 1 << 24
"""Largest tensor (bytes) `--check` simulates with data."""
NP_DTYPE = {"f16": np.float16, "f32": np.float32}


def parser() -> argparse.ArgumentParser:
    d = TmaCopyParams()
    p = _Parser(prog=f"hopsim simulate {FAMILY}", description=__doc__, epilog=EXAMPLE,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=d.rows, help=f"tensor rows (default {d.rows})")
    p.add_argument("--cols", type=int, default=d.cols, help=f"tensor columns, contiguous (default {d.cols})")
    p.add_argument("--dtype", default=d.dtype, help="f16 (default) or f32")
    p.add_argument("--box-rows", type=int, default=d.box_rows, help=f"TMA box rows, 1..256 (default {d.box_rows})")
    p.add_argument("--box-cols", type=int, default=d.box_cols,
                   help=f"TMA box columns, 1..256, x element bytes a multiple of 16 and <= the swizzle span "
                        f"(default {d.box_cols})")
    p.add_argument("--swizzle", default=d.swizzle, help=f"none, 32B, 64B or 128B (default {d.swizzle})")
    p.add_argument("--stages", type=int, default=d.stages, help=f"shared-memory stages per CTA (default {d.stages})")
    p.add_argument("--ctas", type=int, help="persistent CTAs walking the tiles (default: one CTA per tile)")
    p.add_argument("--clock", default="sustained", metavar="sustained|boost|MHZ",
                   help="SM clock: sustained (default), boost (1980 MHz) or MHz")
    p.add_argument("--gpu", default="h100_sxm", help="h100_sxm")
    add_loop_argument(p)
    p.add_argument("--check", action="store_true", help=f"with data, compare out with in (tensor <= {CHECK_LIMIT} B)")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.add_argument("--trace", metavar="FILE.json", help="write the Perfetto / Chrome trace")
    p.add_argument("--plot", metavar="FILE.png", help="timeline picture")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def setup(p: TmaCopyParams, values: bool, seed: int = 0):
    """(GlobalMemory, Launch params, input array or None): `in` random (standard normal) and `out`
    NaN-poisoned with data, else both reserved; the two tensor maps registered."""
    gm = GlobalMemory()
    nbytes = p.rows * p.cols * p.esize
    a = None
    if values:
        dt = NP_DTYPE[p.dtype]
        a = np.random.default_rng(seed).standard_normal((p.rows, p.cols)).astype(dt)
        ia, io = gm.alloc("in", a), gm.alloc("out", np.full((p.rows, p.cols), np.nan, dtype=dt))
    else:
        ia, io = gm.reserve("in", nbytes), gm.reserve("out", nbytes)
    ti, to = tensor_maps(p, ia, io)
    params = {"tmap_in": gm.register_tensor_map("tmap_in", ti), "tmap_out": gm.register_tensor_map("tmap_out", to),
              "tiles": p.tiles}
    return gm, params, a


def read_output(gm, p: TmaCopyParams) -> np.ndarray:
    return gm.view("out", NP_DTYPE[p.dtype], (p.rows, p.cols))


def simulate_tmacopy(p: TmaCopyParams, gpu=None, *, values: bool = False, trace: bool = False, mhz=None,
                     fast: bool | None = None, loop: str = "rotated"):
    """Time `p` on `gpu` at `mhz` (None: the config's clock); returns (SimResult, gmem, input).
    fast (default: without data): timing-only, partitioned memory and the CTA memo (as vecadd)."""
    gpu = (gpu or load_gpu()).at_clock(mhz) if mhz is not None else (gpu or load_gpu())
    fast = (not values) if fast is None else fast
    kernel, grid, block = build_tmacopy(p)
    gm, params, a = setup(p, values)
    mode = {"memory": "partitioned", "memo": True} if fast else {}
    res = simulate(kernel, Launch(grid=grid, block=block, params=params), gpu, values=values, gmem=gm,
                   trace=trace, checks=values, regs_per_thread=REGS_PER_THREAD, loop=loop, **mode)
    return res, gm, a


def _params(args) -> TmaCopyParams:
    return TmaCopyParams(rows=args.rows, cols=args.cols, dtype=args.dtype, box_rows=args.box_rows,
                         box_cols=args.box_cols, swizzle=args.swizzle, stages=args.stages, ctas=args.ctas)


def run(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    p = _params(args)
    if args.check and p.rows * p.cols * p.esize > CHECK_LIMIT:
        raise InputError("rows x cols", f"{p.rows}x{p.cols}", f"at most {CHECK_LIMIT} bytes with --check (data in numpy)")
    check_output_paths(args)
    loop = loop_of(args)
    gpu = load_gpu(args.gpu)
    run_ = clocked_run(args, p.name, lambda mhz, **kw: simulate_tmacopy(p, gpu, mhz=mhz, loop=loop, **kw), gpu,
                       values=args.check)
    res, gm, a = (run_.res, *run_.data)
    notes = run_.notes() + loop_notes(res)
    ok = None
    if args.check:
        ok = bool(np.array_equal(read_output(gm, p).view(np.uint8), a.view(np.uint8)))
        notes.append(f"check out == in: {'equal' if ok else 'DIFFERENT'} ({p.rows}x{p.cols} {p.dtype})")
    gbs = bandwidth_gbs(p.bytes_moved, res)
    write_outputs(args, res, p.name)
    if args.json:
        print(json.dumps({**res.to_json(), "family": FAMILY, "rows": p.rows, "cols": p.cols, "dtype": p.dtype,
                          "box_rows": p.box_rows, "box_cols": p.box_cols, "swizzle": p.swizzle, "stages": p.stages,
                          "persistent_ctas": p.ctas, "tiles": p.tiles, "grid": list(p.grid), "num_ctas": p.num_ctas,
                          "smem_per_cta": p.smem_bytes,
                          "bytes_moved": p.bytes_moved, "gb_per_s": gbs,
                          **run_.clock_fields(), "check": ok}))
    else:
        print(format_summary(res, title=f"{p.name} ({p.rows}x{p.cols} {p.dtype})", notes=notes, launch={
            "Grid Size": ("", "x".join(map(str, p.grid[:2]))), "Block Size": ("", str(THREADS)),
            "Static Shared Memory Per Block": ("byte", p.smem_bytes),
            "Bytes Moved (kernel)": ("byte", p.bytes_moved), "Achieved Bandwidth": ("GB/s", gbs)}))
    if ok is False:
        raise HopsimError(f"{p.name}: the simulated output differs from the input")
    return 0


__all__ = ["FAMILY", "run", "simulate_tmacopy"]
