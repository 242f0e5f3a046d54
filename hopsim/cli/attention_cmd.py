"""`hopsim simulate attention ...`: one attention tile per CTA (kernels/attention/), issue 15 item 3.

Builds the IR kernel of the flags, runs it with data through the simulated shared memory (TMA,
wgmma, the online softmax in registers) and compares O with numpy's float64
softmax(Q K^T scale) V within the bound of kernels/attention/reference.py (f16 rounding of P,
ex2.approx's documented 2-ulp error, f32 roundings) and bit for bit with the numpy replay of the
kernel's roundings (kernels/attention/emulate.py); then prints the report of `simulate gemm` (time, TFLOP/s,
where warps waited, bytes). `--timing-only` skips the data (no check). The time is the model's
estimate, not validated yet: the CUDA twin is kernels/cuda/attention.cu (variant single, out f32, no
overlap; H100 records by `python3 -m validation.portfolio_runs --family attention`).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from hopsim import inputs
from hopsim.attention import error_bound, read_output, reference, setup_attention
from hopsim.cli import _Parser
from hopsim.cli.family_run import add_loop_argument, loop_notes, loop_of
from hopsim.config import load_gpu
from hopsim.plots import plot_timeline
from hopsim.power.model import Events, PowerModel
from hopsim.power.solve import ClockSolver, parse_clock
from hopsim.progress import Activity
from hopsim.summary import format_summary
from kernels.attention.emulate import emulate
from hopsim.timing.runner import simulate
from isa.errors import HopsimError, InputError
from kernels.attention import AttnParams, build_attention

FAMILY = "attention"
EXAMPLE = """examples:
  hopsim simulate attention --seq 256 --head-dim 64                 (one CTA, checked against numpy)
  hopsim simulate attention --seq 1024 --head-dim 128 --kv-block 128 --stages 2 --q-tiles 4 --json
  hopsim simulate attention --seq 1024 --head-dim 128 --stages 3 --variant ws     (a producer warp)
  hopsim simulate attention --seq 1024 --head-dim 128 --stages 3 --variant ws --overlap --out f16
  hopsim simulate attention --seq 4096 --head-dim 128 --q-tiles 132 --timing-only --plot attn.png
  hopsim simulate attention --seq 128 --emit-ir > attn.ptx"""

CHECK_LIMIT = 2048
"""Most CTA x KV-block steps simulated with data (about 0.03 s each on one core)."""


def parser() -> argparse.ArgumentParser:
    d = AttnParams()
    p = _Parser(prog=f"hopsim simulate {FAMILY}", description=__doc__, epilog=EXAMPLE,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seq", type=int, default=d.seq, help=f"keys/values N, a multiple of --kv-block (default {d.seq})")
    p.add_argument("--head-dim", type=int, default=d.head_dim, help="d: 64 or 128 (default 64)")
    p.add_argument("--kv-block", type=int, default=d.kv_block, help="keys per loop step: 64 or 128 (default 64)")
    p.add_argument("--stages", type=int, default=d.stages, help="K/V ring stages 1..4 (default 2)")
    p.add_argument("--q-tiles", type=int, default=d.q_tiles, help="independent 64-row Q tiles = CTAs (default 1)")
    p.add_argument("--variant", default=d.variant, help="single (warp 0 also loads) or ws (a producer warp)")
    p.add_argument("--out", default=d.out, help="f32 (direct stores) or f16 (swizzled smem tile + TMA store)")
    p.add_argument("--overlap", action="store_true",
                   help="softmax of block j during the P V wgmma of block j-1 (FlashAttention-3; stages >= 2)")
    p.add_argument("--scale", type=float, help="softmax scale (default 1/sqrt(head-dim))")
    p.add_argument("--seed", type=int, default=0, help="seed of the random f16 Q, K, V (default 0)")
    p.add_argument("--timing-only", action="store_true", help="no data: time only, no check against numpy")
    p.add_argument("--clock", default="sustained", metavar="sustained|boost|MHZ",
                   help="SM clock: sustained (default), boost (1980 MHz) or MHz")
    p.add_argument("--gpu", default="h100_sxm", help="h100_sxm")
    add_loop_argument(p)
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.add_argument("--trace", metavar="FILE.json", help="write the Perfetto / Chrome trace")
    p.add_argument("--plot", metavar="FILE.png", help="timeline picture")
    p.add_argument("--emit-ir", action="store_true", help="print the IR kernel and exit")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def params_of(args) -> AttnParams:
    p = AttnParams(seq=args.seq, head_dim=args.head_dim, kv_block=args.kv_block, stages=args.stages,
                   q_tiles=args.q_tiles, scale=args.scale, variant=args.variant,
                   out=args.out, overlap=args.overlap)
    if not args.timing_only and p.q_tiles * p.n_blocks > CHECK_LIMIT:
        raise InputError("q-tiles x seq/kv-block", p.q_tiles * p.n_blocks,
                         f"at most {CHECK_LIMIT} CTA x KV-block steps with data; use --timing-only for larger")
    if not 0 <= args.seed < 2**63:
        raise InputError("seed", args.seed, "0..2^63-1")
    return p


def simulate_attention(p: AttnParams, gpu=None, *, values: bool = True, trace: bool = False, mhz=None,
                       seed: int = 0, loop: str = "rotated"):
    """Time `p` (at `mhz`; None: the config's clock); returns (SimResult, gmem, (q, k, v)).
    Without values: timing-only, partitioned memory and the CTA memo (alike CTAs simulated once)."""
    gpu = gpu or load_gpu()
    gpu = gpu.at_clock(mhz) if mhz is not None else gpu
    ak = build_attention(p)
    gm, launch, q, k, v = setup_attention(p, ak, seed=seed, values=values)
    mode = {} if values else {"memory": "partitioned", "memo": True}
    res = simulate(ak.kernel, launch, gpu, values=values, gmem=gm, trace=trace, checks=values,
                   regs_per_thread=ak.regs_per_thread, flop_count=p.flops, loop=loop, **mode)
    return res, gm, (q, k, v)


def check(p: AttnParams, gm, qkv) -> dict:
    """Compare O with the float64 reference within the bound; a dict for the report."""
    o, ref = read_output(gm, p).astype(np.float64), reference(*qkv, p)
    tol = error_bound(*qkv, p)
    err = np.abs(o - ref)
    bad = int(np.count_nonzero(~(err <= tol)))
    replay = emulate(*qkv, p).astype(np.float64)
    differ = int(np.count_nonzero(o.view(np.uint64) != replay.view(np.uint64)))
    return {"ok": bad == 0 and differ == 0, "elements": int(o.size), "outside_bound": bad,
            "max_abs_error": float(err.max()), "max_error_over_bound": float((err / tol).max()),
            "differ_from_replay": differ}


def run(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    p = params_of(args)
    if args.emit_ir:
        print(build_attention(p).text, end="")
        return 0
    inputs.output_paths([("trace", args.trace, (".json",)), ("plot", args.plot, (".png",))])
    pm = PowerModel.load()
    clock = parse_clock(args.clock, pm)
    gpu = load_gpu(args.gpu)
    loop = loop_of(args)
    nsms = int(gpu.spec.num_sms.value)
    with Activity(f"simulating {p.tag}", enabled=False if args.no_progress else None):
        solver = ClockSolver(lambda mhz: simulate_attention(p, gpu, values=False, mhz=mhz, loop=loop)[0],
                             lambda r: Events.from_result(r, "f16f32", nsms), pm,
                             clock_ratio=pm.sm_clock_ratio(tensor_cores=True))
        sol = solver.solve()
        mhz = {"sustained": sol.sustained.mhz, "boost": sol.boost.mhz}.get(clock, clock)
        pt = solver.point(mhz)
        res, gm, qkv = simulate_attention(p, gpu, values=not args.timing_only, mhz=solver.sm_mhz(mhz), seed=args.seed,
                                          trace=bool(args.trace or args.plot), loop=loop)
    chk = None if args.timing_only else check(p, gm, qkv)
    with inputs.Outputs() as outs:
        if args.trace:
            res.trace.write(outs.stage(args.trace))
        if args.plot:
            plot_timeline(res.trace, outs.stage(args.plot), title=p.tag, clock_mhz=res.clock_mhz,
                          total_cycles=res.cycles)
    if args.json:
        print(json.dumps({**res.to_json(), "family": FAMILY, "seq": p.seq, "head_dim": p.head_dim,
                          "kv_block": p.kv_block, "stages": p.stages, "q_tiles": p.q_tiles, "variant": p.variant,
                          "out": p.out, "overlap": p.overlap,
                          "scale": p.softmax_scale, "time_ms_boost": sol.boost.time_ms,
                          "time_ms_sustained": sol.sustained.time_ms, "sustained_clock_mhz": sol.sustained.mhz,
                          "power_w": pt.power_w, "energy_mj": pt.energy_mj, "check": chk,
                          "clock_mhz": float(mhz), "sm_clock_mhz": res.clock_mhz,
                          "timing_validated": False}))
    else:
        notes = [sol.summary(), f"at {mhz:.0f} MHz (SMs at {res.clock_mhz:.0f}): {pt.power_w:.0f} W, {pt.energy_mj:.4g} mJ per launch",
                 "time: the model's estimate, not validated yet (no H100 record of this kernel compared)"]
        notes += loop_notes(res)
        if chk is not None:
            notes.append(f"check against numpy (float64 reference, bound of kernels/attention/reference.py): "
                         f"{'within the bound' if chk['ok'] else 'OUTSIDE THE BOUND'} "
                         f"({chk['elements']} elements, max |error| {chk['max_abs_error']:.3g}, "
                         f"max error / bound {chk['max_error_over_bound']:.3g}); "
                         f"{'bit for bit equal to' if chk['differ_from_replay'] == 0 else 'DIFFERENT FROM'} the numpy "
                         f"replay of the kernel's roundings ({chk['differ_from_replay']} elements differ)")
        print(format_summary(res, title=f"{p.tag}: O = softmax(Q K^T {p.softmax_scale:.4g}) V", notes=notes, launch={
            "Grid Size": ("", str(p.q_tiles)), "Block Size": ("", str(p.threads)),
            "Dynamic Shared Memory Per Block": ("byte", p.dynamic_smem_bytes)}))
    if chk is not None and not chk["ok"]:
        raise HopsimError(f"{p.tag}: {chk['outside_bound']} of {chk['elements']} output elements differ from "
                          f"numpy by more than the bound, {chk['differ_from_replay']} differ from the numpy replay")
    return 0


__all__ = ["FAMILY", "check", "run", "simulate_attention"]
