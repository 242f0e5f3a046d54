"""`hopsim desc decode|encode|lint`: WGMMA shared-memory matrix descriptors."""

from __future__ import annotations

import argparse
import json

from isa.descriptor import FIELD_MASK, MatrixDescriptor, lint, parse_descriptor_value
from isa.errors import InputError

EPILOG = """examples:
  hopsim desc decode 0x4000004000010040
  hopsim desc decode 0x4000004000010040 --json
  hopsim desc encode --start-address-bytes 1024 --lbo-bytes 16 --sbo-bytes 1024 --swizzle 128B
  hopsim desc encode --start-address-field 64 --lbo-field 1 --sbo-field 64 --swizzle 128B   # same, in 16-B units
  hopsim desc lint 0x4000004000010040 --operand A --major K --dtype f16 --tile 64x64 --swizzle 128B
exit status: 0 ok / clean lint, 1 lint findings, 2 bad input"""


def _int(text: str) -> int:
    try:
        return int(str(text), 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer (decimal or 0x hex)") from None


def register(subparsers) -> None:
    p = subparsers.add_parser("desc", help="decode, encode and lint WGMMA matrix descriptors",
                              description="WGMMA shared-memory matrix descriptors (64-bit, PTX ISA sm_90 layout).",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="desc_command", metavar="ACTION", parser_class=type(p))
    sub.required = True

    d = sub.add_parser("decode", help="print the fields of a descriptor", epilog=EPILOG,
                       description="Print the fields of a 64-bit descriptor (hex).",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("value", help="descriptor value: 0x then hex digits, or decimal digits only, e.g. 0x4000004000010040")
    d.add_argument("--json", action="store_true", help="print a JSON object")
    d.set_defaults(func=run_decode)

    e = sub.add_parser("encode", help="build a descriptor from fields in bytes (or encoded units)", epilog=EPILOG,
                       description="Encode a descriptor from byte values (--X-bytes) or encoded 14-bit fields "
                                   "(--X-field = bytes >> 4); prints the hex.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, what, default in (("start-address", "shared-memory byte address (16-B aligned)", None),
                                ("lbo", "leading dimension byte offset (default 16 B)", 16),
                                ("sbo", "stride dimension byte offset", None)):
        g = e.add_mutually_exclusive_group(required=default is None)
        g.add_argument(f"--{name}-bytes", type=_int, default=None, help=what)
        g.add_argument(f"--{name}-field", type=_int, default=None,
                       help="the same as the encoded 14-bit field (bytes >> 4)")
    e.add_argument("--swizzle", default="none", help="none, 32B, 64B or 128B (default none)")
    e.add_argument("--base-offset", type=_int, default=0, help="base offset 0..7 (default 0)")
    e.add_argument("--json", action="store_true", help="print a JSON object with the hex and the fields")
    e.set_defaults(func=run_encode)

    lt = sub.add_parser("lint", help="check a descriptor against what it should describe", epilog=EPILOG,
                        description="Say which field is inconsistent with the operand, majorness, dtype, tile "
                                    "and data swizzle, what it should be and why.",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    lt.add_argument("value", help="descriptor value (hex)")
    lt.add_argument("--operand", default="A", help="A (64 rows) or B (N rows)")
    lt.add_argument("--major", default="K", help="K or MN")
    lt.add_argument("--dtype", default="f16", help="f16, bf16, tf32, e4m3, e5m2")
    lt.add_argument("--tile", default="64x16", help="ROWSxK of the shared-memory tile (default 64x16)")
    lt.add_argument("--swizzle", default=None, help="swizzle the data was written with (default: the descriptor's)")
    lt.add_argument("--smem-base", type=_int, default=None, help="address where the data's swizzle pattern starts")
    lt.add_argument("--n", type=_int, default=None, help="N of the wgmma for operand B (default: tile rows)")
    lt.add_argument("--json", action="store_true", help="print a JSON list of findings")
    lt.set_defaults(func=run_lint)


def _table(md: MatrixDescriptor, value: int) -> str:
    rows = [
        ("descriptor", f"0x{value:016x}", ""),
        ("start address", f"{md.start_address_bytes} B (0x{md.start_address_bytes:x})", f"field {md.start_address_field} (bits 0-13)"),
        ("LBO", f"{md.lbo_bytes} B", f"field {md.lbo_field} (bits 16-29)"),
        ("SBO", f"{md.sbo_bytes} B", f"field {md.sbo_field} (bits 32-45)"),
        ("base offset", str(md.base_offset), "(bits 49-51)"),
        ("swizzle", md.swizzle.label, f"layout type {md.layout_type} (bits 62-63)"),
    ]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    return "\n".join(f"{a:<{w0}}  {b:<{w1}}  {c}".rstrip() for a, b, c in rows)


def run_decode(args) -> int:
    value = parse_descriptor_value(args.value)
    md = MatrixDescriptor.decode(value)
    print(json.dumps(md.to_dict()) if args.json else _table(md, value))
    return 0


def _bytes_or_field(args, name: str, default: int | None) -> int:
    """The byte value of --NAME-bytes, or of --NAME-field (checked as a 14-bit field, then << 4)."""
    b, f = getattr(args, f"{name}_bytes"), getattr(args, f"{name}_field")
    if f is None:
        return default if b is None else b
    if not 0 <= f <= FIELD_MASK:
        raise InputError(f"{name}_field", f, f"an integer 0..{FIELD_MASK} (14-bit field, bytes >> 4)")
    return f << 4


def run_encode(args) -> int:
    md = MatrixDescriptor(_bytes_or_field(args, "start_address", None), _bytes_or_field(args, "lbo", 16),
                          _bytes_or_field(args, "sbo", None), args.base_offset, args.swizzle)
    print(json.dumps({"hex": md.hex(), **md.to_dict()}) if args.json else md.hex())
    return 0


def run_lint(args) -> int:
    findings = lint(parse_descriptor_value(args.value), operand=args.operand, major=args.major, dtype=args.dtype,
                    tile=args.tile, swizzle=args.swizzle, smem_base=args.smem_base, n=args.n)
    if args.json:
        print(json.dumps([f.to_dict() for f in findings]))
    elif not findings:
        print("ok: no findings")
    else:
        for f in findings:
            print(f)
    return 1 if findings else 0
