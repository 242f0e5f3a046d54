"""`hopsim swizzle show MODE`: draw where each 16-byte chunk of a 128-byte line goes; with
`--layout L --elem-bytes E`, draw the bank of every element of a (swizzled) CuTe layout."""

from __future__ import annotations

import argparse
import json

from hopsim.functional.bank_layout import Tile, parse_any_swizzle, parse_layout
from hopsim.functional.banks import NUM_BANKS
from isa.errors import InputError
from isa.swizzle import chunk_map, parse_swizzle

EPILOG = """examples:
  hopsim swizzle show 128B
  hopsim swizzle show 64B --rows 4 --base 1152
  hopsim swizzle show 32B --json
  hopsim swizzle show 'Swizzle<3,3,3>' --layout '(64,64):(64,1)' --elem-bytes 2     # bank of each element
  hopsim swizzle show 128B --layout '(128,64):(64,1)' --elem-bytes 2 --rows 16"""


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
    s.add_argument("mode", nargs="?", help="none, 32B, 64B or 128B (TMA, on byte addresses); with --layout also "
                   "Swizzle<B,M,S> (CuTe, on element offsets)")
    s.add_argument("--layout", metavar="L", help="draw the bank of each element of this rank-2 CuTe layout "
                   "(e.g. '(64,64):(64,1)'), swizzled by MODE; needs --elem-bytes")
    s.add_argument("--elem-bytes", type=_int, metavar="E", help="bytes per element of --layout: 1, 2, 4, 8 or 16")
    s.add_argument("--rows", type=_int, default=8, help="128-byte lines to draw (default 8)")
    s.add_argument("--base", type=_int, default=0, help="shared-memory address of line 0 (default 0)")
    s.add_argument("--json", action="store_true", help="print the map as JSON")
    s.set_defaults(func=run_show)


def run_show(args) -> int:
    if args.layout is not None:
        return _show_layout(args)
    if args.elem_bytes is not None:
        raise InputError("--elem-bytes", args.elem_bytes, "only with --layout")
    if args.mode is None:
        raise InputError("mode", None, "one of none, 32B, 64B, 128B (or --layout L with a Swizzle<B,M,S>)")
    if str(args.mode).strip().lower().startswith("sw"):
        raise InputError("mode", args.mode, "none, 32B, 64B or 128B; a CuTe Swizzle<B,M,S> needs --layout L "
                         "--elem-bytes E (its offsets are elements)")
    mode = parse_swizzle(args.mode)
    if not 1 <= args.rows <= 1024:
        raise InputError("rows", args.rows, "1..1024")
    if not 0 <= args.base < 1 << 32 or args.base % 128:
        raise InputError("base", args.base if args.base.bit_length() < 80 else f"<{args.base.bit_length()}-bit integer>",
                         "a multiple of 128 (a 128-byte line) in 0 .. 2^32-128")
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


def _show_layout(args) -> int:
    """Bank (0..31) of every 4-byte word's first element, row by row (cols = the contiguous mode)."""
    if args.elem_bytes is None:
        raise InputError("--elem-bytes", None, "required with --layout: 1, 2, 4, 8 or 16 (bytes per element)")
    if args.rows is not None and not 1 <= args.rows <= 1024:
        raise InputError("rows", args.rows, "1..1024")
    tile = Tile(parse_layout(args.layout), parse_any_swizzle(args.mode), args.elem_bytes, args.base)
    addr = tile.byte_addresses()
    rows = min(args.rows if args.rows is not None else 8, addr.shape[0])
    bank = (addr[:rows] >> 2) % NUM_BANKS
    if args.json:
        print(json.dumps({"layout": str(tile.layout), "swizzle": str(tile.swizzle), "elem_bytes": tile.elem_bytes,
                          "base": tile.base, "contiguous_mode": tile.vec_mode, "bank": bank.tolist()}))
        return 0
    step = max(1, 4 // tile.elem_bytes)
    cols = list(range(0, addr.shape[1], step))
    print(f"{tile.describe()}")
    print(f"cell = bank (0..31) of element (row, col); one cell per 4-byte word (every {step}. column); "
          f"cols = mode {tile.vec_mode} (contiguous)")
    print("row | " + " ".join(f"{c:>2d}" if c < 100 else f"{c % 100:02d}" for c in cols))
    print("----+" + "-" * (3 * len(cols)))
    for r in range(rows):
        print(f"{r:3d} | " + " ".join(f"{int(bank[r, c]):2d}" for c in cols))
    return 0
