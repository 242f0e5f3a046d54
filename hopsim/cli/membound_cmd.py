"""`hopsim simulate vecadd|copy ...`: the memory-bound portfolio kernels (kernels/membound/).

Builds the IR twin of the CUDA kernels vecadd.cu / copy.cu (GPU side, issue 15) for the flags, times it on the H100 model
(timing-only by default: buffers reserved, no data; `--check` runs small sizes with data and
compares with numpy) and prints the same report as `simulate gemm`: time, achieved bandwidth
(bytes the kernel must move / time), where warps waited, HBM read and written-back bytes;
`--json`, `--clock`, `--trace`, `--plot` as there.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from hopsim.cli import _Parser
from hopsim.cli.family_run import add_loop_argument, bandwidth_gbs, check_output_paths, clocked_run, loop_notes, loop_of, write_outputs
from hopsim.config import load_gpu
from hopsim.functional.executor import Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.summary import format_summary
from hopsim.timing.runner import simulate
from isa.errors import HopsimError, InputError
from kernels.membound import FAMILIES, REGS_PER_THREAD, MemParams, build_membound

EXAMPLE = """examples:
  hopsim simulate vecadd --n 8650752 --vec 4              (8448 CTAs of 256 threads, float4)
  hopsim simulate copy --n 69206016 --vec 4 --json         (67584 CTAs)
  hopsim simulate vecadd --n 1048576 --vec 1 --grid-stride --ctas 1056
  hopsim simulate copy --n 65536 --check                   (data through the simulated memory)"""

CHECK_LIMIT = 1 << 22
"""Largest n `--check` simulates with data (numpy buffers of 4 n bytes each)."""


def parser(family: str) -> argparse.ArgumentParser:
    p = _Parser(prog=f"hopsim simulate {family}", description=__doc__, epilog=EXAMPLE,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=MemParams().n, help="f32 elements (default 8448 x 256 x 4)")
    p.add_argument("--vec", type=int, default=4, help="elements per thread access: 1 (scalar), 2, 4 (float4)")
    p.add_argument("--grid-stride", action="store_true", help="grid-stride loop over n with --ctas CTAs")
    p.add_argument("--ctas", type=int, help="CTAs of the grid-stride form (default min(needed, 132 x 8))")
    p.add_argument("--threads", type=int, default=256, help="threads per CTA (default 256)")
    p.add_argument("--clock", default="sustained", metavar="sustained|boost|MHZ",
                   help="SM clock: sustained (default), boost (1980 MHz) or MHz")
    p.add_argument("--gpu", default="h100_sxm", help="h100_sxm")
    add_loop_argument(p)
    p.add_argument("--check", action="store_true", help=f"with data, compare with numpy (n <= {CHECK_LIMIT})")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.add_argument("--trace", metavar="FILE.json", help="write the Perfetto / Chrome trace")
    p.add_argument("--plot", metavar="FILE.png", help="timeline picture")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def setup(p: MemParams, values: bool, seed: int = 0):
    """(GlobalMemory, Launch params, input arrays) of `p`: random inputs with data, else reserved."""
    gm = GlobalMemory()
    rng = np.random.default_rng(seed)
    arrays = {}
    for name in p.buffers:
        if values:
            arrays[name] = (rng.standard_normal(p.n).astype(np.float32) if name != "c"
                            else np.zeros(p.n, dtype=np.float32))
            gm.alloc(name, arrays[name])
        else:
            gm.reserve(name, 4 * p.n)
    params = {name: gm.address(name) for name in p.buffers}
    params["n"] = p.n
    return gm, params, arrays


def expected(p: MemParams, arrays: dict) -> np.ndarray:
    """What c must hold (numpy)."""
    return arrays["a"] + arrays["b"] if p.family == "vecadd" else arrays["a"]


def simulate_membound(p: MemParams, gpu=None, *, values: bool = False, trace: bool = False, mhz=None,
                      fast: bool | None = None, loop: str = "rotated"):
    """Time `p` on `gpu` at `mhz` (None: the config's clock); returns (SimResult, gmem, arrays).
    fast (default: without data): timing-only, partitioned memory and the CTA memo (runner.py:
    alike CTAs simulated once; tests/timing/test_memo_gmem.py: equal to memo=False). `loop`:
    rotated (default) or same (hopsim/timing/launch.py)."""
    gpu = (gpu or load_gpu()).at_clock(mhz) if mhz is not None else (gpu or load_gpu())
    fast = (not values) if fast is None else fast
    kernel, grid, block = build_membound(p)
    gm, params, arrays = setup(p, values)
    mode = {"memory": "partitioned", "memo": True} if fast else {}
    res = simulate(kernel, Launch(grid=grid, block=block, params=params), gpu, values=values, gmem=gm,
                   trace=trace, checks=values, regs_per_thread=REGS_PER_THREAD, loop=loop, **mode)
    return res, gm, arrays


def run(family: str, argv: list[str]) -> int:
    args = parser(family).parse_args(argv)
    p = MemParams(family=family, n=args.n, vec=args.vec, grid_stride=args.grid_stride, ctas=args.ctas,
                  threads=args.threads)
    if args.check and p.n > CHECK_LIMIT:
        raise InputError("n", p.n, f"at most {CHECK_LIMIT} with --check (data in numpy)")
    check_output_paths(args)
    loop = loop_of(args)
    gpu = load_gpu(args.gpu)
    run_ = clocked_run(args, p.name, lambda mhz, **kw: simulate_membound(p, gpu, mhz=mhz, loop=loop, **kw), gpu,
                       values=args.check)
    res, gm, arrays = (run_.res, *run_.data)
    notes = run_.notes() + loop_notes(res)
    ok = None
    if args.check:
        got = gm.view("c", np.float32)
        ok = bool(np.array_equal(got, expected(p, arrays)))
        notes.append(f"check against numpy: {'equal' if ok else 'DIFFERENT'} ({p.n} elements)")
    gbs = bandwidth_gbs(p.bytes_moved, res)
    write_outputs(args, res, p.name)
    if args.json:
        print(json.dumps({**res.to_json(), "family": family, "n": p.n, "vec": p.vec,
                          "grid_stride": p.grid_stride, "bytes_moved": p.bytes_moved, "gb_per_s": gbs,
                          **run_.clock_fields(), "check": ok}))
    else:
        print(format_summary(res, title=f"{p.name} (n = {p.n})", notes=notes, launch={
            "Grid Size": ("", str(p.grid)), "Block Size": ("", str(p.threads)),
            "Bytes Moved (kernel)": ("byte", p.bytes_moved), "Achieved Bandwidth": ("GB/s", gbs)}))
    if ok is False:
        raise HopsimError(f"{p.name}: the simulated result differs from numpy")
    return 0


__all__ = ["FAMILIES", "run", "simulate_membound"]
