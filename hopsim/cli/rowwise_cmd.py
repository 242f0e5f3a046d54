"""`hopsim simulate rowsum|softmax ...`: the row-wise portfolio kernels (kernels/rowwise/).

Builds the IR twin of the CUDA kernels rowsum.cu / softmax.cu (GPU side, issue 15) for the flags,
times it on the H100 model (timing-only by default: buffers reserved, no data; `--check` runs
small sizes with data and compares with numpy within the error bounds of
`kernels.rowwise.reference`) and prints the same report as `simulate vecadd`: time, achieved
bandwidth (bytes the kernel must move / time), where warps waited, HBM bytes; `--json`,
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
from kernels.rowwise import FAMILIES, REGS_PER_THREAD, RowParams, build_rowwise
from kernels.rowwise.reference import sum_depth, within_bounds

EXAMPLE = """examples:
  hopsim simulate softmax --rows 8192 --cols 1024 --mapping warp     (1024 CTAs of 8 warps, a row each)
  hopsim simulate rowsum --rows 4096 --cols 16384 --mapping cta --json (one CTA of 256 threads per row)
  hopsim simulate softmax --rows 64 --cols 2048 --mapping cta --check  (data through the simulated memory)

cols must be a multiple of 128 (float4 x 32 lanes) in 128..32768: every lane of a warp makes the
same number of trips (divergent branches are not modelled); --mapping cta needs --threads a power
of two."""

CHECK_LIMIT = 1 << 20
"""Most elements `--check` simulates with data (numpy buffers of 4 x rows x cols bytes)."""


def parser(family: str) -> argparse.ArgumentParser:
    p = _Parser(prog=f"hopsim simulate {family}", description=__doc__, epilog=EXAMPLE,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=RowParams().rows, help="rows (default 8192)")
    p.add_argument("--cols", type=int, default=RowParams().cols, help="f32 elements per row (default 1024)")
    p.add_argument("--mapping", default="warp", help="warp (one warp per row, default) or cta (one CTA per row)")
    p.add_argument("--threads", type=int, default=256, help="threads per CTA (default 256)")
    p.add_argument("--clock", default="sustained", metavar="sustained|boost|MHZ",
                   help="SM clock: sustained (default), boost (1980 MHz) or MHz")
    p.add_argument("--gpu", default="h100_sxm", help="h100_sxm")
    add_loop_argument(p)
    p.add_argument("--check", action="store_true", help=f"with data, compare with numpy (rows x cols <= {CHECK_LIMIT})")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.add_argument("--trace", metavar="FILE.json", help="write the Perfetto / Chrome trace")
    p.add_argument("--plot", metavar="FILE.png", help="timeline picture")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def setup(p: RowParams, values: bool, seed: int = 0):
    """(GlobalMemory, Launch params, x or None): standard-normal x with data, else reserved buffers."""
    gm = GlobalMemory()
    x = None
    if values:
        x = np.random.default_rng(seed).standard_normal((p.rows, p.cols)).astype(np.float32)
        gm.alloc("x", x)
        gm.alloc("y", np.full(p.out_elements, np.nan, dtype=np.float32))
    else:
        gm.reserve("x", 4 * p.rows * p.cols)
        gm.reserve("y", 4 * p.out_elements)
    params = {"x": gm.address("x"), "y": gm.address("y"), "rows": p.rows, "cols": p.cols}
    return gm, params, x


def simulate_rowwise(p: RowParams, gpu=None, *, values: bool = False, trace: bool = False, mhz=None,
                     fast: bool | None = None, loop: str = "rotated"):
    """Time `p` on `gpu` at `mhz` (None: the config's clock); returns (SimResult, gmem, x).
    fast (default: without data): timing-only, partitioned memory and the CTA memo, as
    `simulate_membound`."""
    gpu = (gpu or load_gpu()).at_clock(mhz) if mhz is not None else (gpu or load_gpu())
    fast = (not values) if fast is None else fast
    kernel, grid, block = build_rowwise(p)
    gm, params, x = setup(p, values)
    mode = {"memory": "partitioned", "memo": True} if fast else {}
    res = simulate(kernel, Launch(grid=grid, block=block, params=params), gpu, values=values, gmem=gm,
                   trace=trace, checks=values, regs_per_thread=REGS_PER_THREAD, loop=loop, **mode)
    return res, gm, x


def check_result(p: RowParams, gm: GlobalMemory, x: np.ndarray) -> tuple[bool, str]:
    """(ok, note): the simulated y against numpy within the stated bounds."""
    got = gm.view("y", np.float32)
    got = got if p.family == "rowsum" else got.reshape(p.rows, p.cols)
    ok, worst = within_bounds(p.family, x, got, sum_depth(p.cols, p.mapping, p.warps))
    return ok, (f"check against numpy: {'within bounds' if ok else 'OUTSIDE the bounds'} "
                f"({p.rows} x {p.cols}; worst error / bound {worst:.3g})")


def run(family: str, argv: list[str]) -> int:
    args = parser(family).parse_args(argv)
    p = RowParams(family=family, rows=args.rows, cols=args.cols, mapping=args.mapping, threads=args.threads)
    if args.check and p.rows * p.cols > CHECK_LIMIT:
        raise InputError("rows", p.rows, f"rows x cols at most {CHECK_LIMIT} with --check (data in numpy)")
    check_output_paths(args)
    loop = loop_of(args)
    gpu = load_gpu(args.gpu)
    run_ = clocked_run(args, p.name, lambda mhz, **kw: simulate_rowwise(p, gpu, mhz=mhz, loop=loop, **kw), gpu,
                       values=args.check)
    res, gm, x = (run_.res, *run_.data)
    notes = run_.notes() + loop_notes(res)
    ok = None
    if args.check:
        ok, note = check_result(p, gm, x)
        notes.append(note)
    gbs = bandwidth_gbs(p.bytes_moved, res)
    write_outputs(args, res, p.name)
    if args.json:
        print(json.dumps({**res.to_json(), "family": family, "rows": p.rows, "cols": p.cols, "mapping": p.mapping,
                          "threads": p.threads, "bytes_moved": p.bytes_moved, "gb_per_s": gbs,
                          **run_.clock_fields(), "check": ok}))
    else:
        print(format_summary(res, title=f"{p.name} ({p.rows} x {p.cols})", notes=notes, launch={
            "Grid Size": ("", str(p.grid)), "Block Size": ("", str(p.threads)),
            "Bytes Moved (kernel)": ("byte", p.bytes_moved), "Achieved Bandwidth": ("GB/s", gbs)}))
    if ok is False:
        raise HopsimError(f"{p.name}: the simulated result is outside the error bounds against numpy")
    return 0


__all__ = ["FAMILIES", "run", "simulate_rowwise"]
