"""`hopsim swizzle show MODE`: draw where each 16-byte chunk of a 128-byte line goes."""

from __future__ import annotations

import argparse
import json

from isa.errors import InputError
from isa.swizzle import chunk_map, parse_swizzle

EPILOG = """examples:
  hopsim swizzle show 128B
  hopsim swizzle show 64B --rows 4 --base 1152
  hopsim swizzle show 32B --json"""


def _int(text: str) -> int:
    try:
        return int(str(text), 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def register(subparsers) -> None:
    p = subparsers.add_parser("swizzle", help="show TMA/WGMMA swizzle patterns",
                              description="TMA/WGMMA swizzle modes (Swizzle<b,4,3> on absolute smem addresses).",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="swizzle_command", metavar="ACTION", parser_class=type(p))
    sub.required = True
    s = sub.add_parser("show", help="draw which 16-byte chunk goes where, row by row", epilog=EPILOG,
                       description="Row r = 128-byte line r from --base; column = physical 16-B chunk; the cell "
                                   "shows the logical chunk stored there.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("mode", help="none, 32B, 64B or 128B")
    s.add_argument("--rows", type=_int, default=8, help="128-byte lines to draw (default 8)")
    s.add_argument("--base", type=_int, default=0, help="shared-memory address of line 0 (default 0)")
    s.add_argument("--json", action="store_true", help="print the map as JSON")
    s.set_defaults(func=run_show)


def run_show(args) -> int:
    mode = parse_swizzle(args.mode)
    if not 1 <= args.rows <= 1024:
        raise InputError("rows", args.rows, "1..1024")
    if args.base < 0 or args.base % 128:
        raise InputError("base", args.base, "a non-negative multiple of 128 (a 128-byte line)")
    phys = chunk_map(mode, args.rows, args.base)  # phys[r, c] = where logical chunk c goes
    if args.json:
        print(json.dumps({"mode": mode.label, "cute": str(mode.cute), "base": args.base,
                          "physical_chunk": phys.tolist()}))
        return 0
    logical_at = phys.argsort(axis=1)  # logical chunk stored in physical chunk p
    print(f"{mode.label} swizzle = {mode.cute} on byte addresses; repeats every {mode.repeat_bytes} B")
    print("cell = logical 16-B chunk stored at that physical chunk")
    print("line  address | " + " ".join(f"p{p}" for p in range(8)))
    print("-" * 14 + "+" + "-" * 24)
    for r in range(args.rows):
        cells = " ".join(f"c{int(c)}" for c in logical_at[r])
        print(f"{r:4d} {args.base + 128 * r:8d} | {cells}")
    return 0
