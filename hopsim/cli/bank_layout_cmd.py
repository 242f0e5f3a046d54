"""`hopsim bank-conflicts --layout L --access A`: bank conflicts of a swizzled tile, addresses generated.

The warp addresses come from the tile's layout, its swizzle, the element size and the access's
thread layout (hopsim/functional/bank_layout.py documents the mapping and the defaults); the counts
come from the same bank model as `--trace`. Prints a table per access (or `--json`, or with
`--emit-trace` the generated accesses as a warp-access trace, which `--trace -` counts the same).
"""

from __future__ import annotations

import argparse
import json
import sys

from hopsim.functional.bank_layout import (ACCESS_NAMES, Tile, access, count, parse_any_swizzle, parse_layout,
                                           warp_addresses)
from isa.errors import InputError

LAYOUT_FLAGS = ("access", "swizzle", "elem_bytes", "tv", "base", "json", "emit_trace")

EXAMPLE = """
  # generated addresses: a layout, a swizzle, the element size and an access
  hopsim bank-conflicts --layout '(64,64):(64,1)' --swizzle 'Swizzle<3,3,3>' --elem-bytes 2 --access ldmatrix.x4
  hopsim bank-conflicts --layout '(128,32):(32,1)' --elem-bytes 2 --access ldmatrix.x4,cp.async.16   # 4-way
  hopsim bank-conflicts --layout '(128,64):(64,1)' --swizzle 128B --elem-bytes 2 --access ld.shared.v4 --json
  hopsim bank-conflicts --layout '(8,32):(64,1)' --elem-bytes 2 --access ldmatrix.x4 --tv '(8,4):(1,8)' \\
      --emit-trace | hopsim bank-conflicts --trace -      # the same counts through the trace path
"""


def _int(text: str) -> int:
    try:
        v = int(str(text), 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if abs(v) >= 1 << 40:
        raise argparse.ArgumentTypeError(f"{str(text)[:20]!r} is out of range")
    return v


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("generated addresses (instead of --trace)")
    g.add_argument("--layout", metavar="L", help="the tile as a CuTe layout in elements, rank 2, e.g. "
                   "'(64,64):(64,1)' or '((8,16),(8,4)):((8,64),(1,1024))'")
    g.add_argument("--access", metavar="A[,A...]", help="one or more of: " + ", ".join(ACCESS_NAMES))
    g.add_argument("--swizzle", metavar="S", help="none (default), 32B, 64B, 128B (TMA modes, on byte addresses) "
                   "or 'Swizzle<B,M,S>' (CuTe, on element offsets)")
    g.add_argument("--elem-bytes", type=_int, metavar="E", help="bytes per element: 1, 2, 4, 8 or 16 (required)")
    g.add_argument("--tv", metavar="T", help="thread layout (rows, vectors):(strides) -> thread index, CuTe's "
                   "make_tiled_copy thread layout (default: row-major, one warp; ldmatrix.x4 (16,2):(1,16))")
    g.add_argument("--base", type=_int, default=0, metavar="BYTES",
                   help="shared-memory byte address of element offset 0 (default 0)")
    g.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    g.add_argument("--emit-trace", action="store_true",
                   help="print the generated warp accesses as a warp-access trace (JSON Lines) instead")


def refuse_layout_flags(args) -> None:
    """With --trace, the generation flags have no meaning: refuse them (one line)."""
    for k in LAYOUT_FLAGS:
        v = getattr(args, k, None)
        if v not in (None, False, 0):
            raise InputError("--" + k.replace("_", "-"), v, "only with --layout (not with --trace)")


def _accesses(text: str | None):
    if not text:
        raise InputError("--access", text, "required with --layout: one or more of " + ", ".join(ACCESS_NAMES))
    names = [t.strip() for t in str(text).split(",")]
    if len(names) > len(ACCESS_NAMES):
        raise InputError("--access", text[:40], f"at most {len(ACCESS_NAMES)} accesses")
    return [access(n) for n in names]


def run(args) -> int:
    layout = parse_layout(args.layout)
    if args.elem_bytes is None:
        raise InputError("--elem-bytes", None, "required with --layout: 1, 2, 4, 8 or 16 (bytes per element)")
    if args.json and args.emit_trace:
        raise InputError("--json/--emit-trace", True, "one of them")
    tile = Tile(layout, parse_any_swizzle(args.swizzle), args.elem_bytes, args.base)
    accs = _accesses(args.access)
    tv = parse_layout(args.tv, field="--tv") if args.tv is not None else None
    if args.emit_trace:
        lines = []
        for acc in accs:
            addrs, used = warp_addresses(tile, acc, tv)
            lines += [json.dumps({"name": f"{acc.name}#{i}", "op": acc.op, "addrs": [None if x < 0 else int(x)
                                                                                 for x in row]})
                      for i, row in enumerate(addrs)]
        sys.stdout.write("\n".join(lines) + "\n")
        return 0
    reports = [count(tile, acc, tv) for acc in accs]  # every access counted before anything is printed
    if args.json:
        print(json.dumps({"layout": str(layout), "swizzle": str(tile.swizzle), "elem_bytes": tile.elem_bytes,
                          "base": tile.base, "accesses": [r.to_json() for r in reports]}))
        return 0
    print(f"tile: {tile.describe()}")
    print(f"{'access':18s} {'thread layout':16s} {'instr':>6s} {'wavefronts':>11s} {'ideal':>6s} {'excess':>7s} "
          f"{'ncu conflicts':>14s} {'worst instr':>12s}")
    for r in reports:
        worst = f"{r.worst_wavefronts}/{r.worst_ideal}"
        print(f"{r.access:18s} {r.tv:16s} {r.instructions:6d} {r.wavefronts:11d} {r.ideal_wavefronts:6d} "
              f"{r.excess:7d} {r.bank_conflicts:14d} {worst:>12s}")
    print("wavefronts per warp instruction summed over the tile; ideal = distinct bytes / 128 per instruction; "
          "worst instr = wavefronts/ideal of the worst one")
    return 0
