"""The WGMMA shared-memory matrix descriptor (64 bits, PTX ISA "matrix descriptor", sm_90).

    63 62 | 61 .. 52 | 51 50 49 | 48 47 46 | 45 ........ 32 | 31 30 | 29 ........ 16 | 15 14 | 13 ......... 0
    type  | reserved | base off | reserved | SBO >> 4       | rsvd  | LBO >> 4       | rsvd  | start addr >> 4
    2 bit |  10 bit  |  3 bit   |  3 bit   | 14 bit         |       | 14 bit         |       | 14 bit

    field encoding:  matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4   (16-byte units, 18-bit window)
    layout type:     0 = no swizzle (interleave), 1 = 128B, 2 = 64B, 3 = 32B      [PTX-WGMMA-DESC]
    base offset:     0 when the swizzle pattern starts on its 1024/512/256-B boundary, otherwise
                     (pattern start address >> 7) & 7

Meaning of LBO/SBO in 16-byte units (PTX ISA §9.7.15.5.1.2, canonical layouts; T = 128/bits):
    K-major,  no swizzle: LBO = stride between the two core matrices along K; SBO = between 8-row groups
    K-major,  swizzled:   LBO unused ("assumed 1");                           SBO = between 8-row groups
    MN-major, no swizzle: LBO = between groups of 8 K columns;                SBO = between 8-element MN groups
    MN-major, swizzled:   LBO = between MN atoms of span/16 chunks;           SBO = between groups of 8 K columns

`MatrixDescriptor` holds the fields in bytes, validates them, encodes and decodes. `lint` says which
field is inconsistent with what the descriptor is meant to describe, with what it should be and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from isa.dtypes import DType, parse_dtype
from isa.errors import InputError
from isa.swizzle import SwizzleMode, parse_swizzle

LINT_DTYPES = ("f16", "bf16", "tf32", "e4m3", "e5m2")  # wgmma inputs read from shared memory
ADDRESS_LIMIT = 1 << 18  # the 14-bit fields hold bits [4, 18) of a byte address
FIELD_MASK = 0x3FFF
RESERVED_MASK = (0x3 << 14) | (0x3 << 30) | (0x7 << 46) | (0x3FF << 52)


def _check_bytes(name: str, value, *, allow_zero: bool = True) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(name, value, "an integer number of bytes")
    v = int(value)
    if v < 0 or v >= ADDRESS_LIMIT:
        raise InputError(name, v, f"0 <= bytes < 2^18 = {ADDRESS_LIMIT} (14-bit field of bytes >> 4)")
    if v % 16:
        raise InputError(name, v, "a multiple of 16 bytes (the descriptor drops the 4 low bits)")
    return v


@dataclass(frozen=True)
class MatrixDescriptor:
    """A WGMMA matrix descriptor with its fields in bytes (validated at construction).

    start_address_bytes: shared-memory byte address of the matrix (16-B aligned, < 2^18)
    lbo_bytes / sbo_bytes: leading / stride dimension byte offsets (multiples of 16, < 2^18)
    base_offset: 0..7 (bits 49-51); swizzle: SwizzleMode or 'none'|'32B'|'64B'|'128B'
    """

    start_address_bytes: int
    lbo_bytes: int = 16
    sbo_bytes: int = 0
    base_offset: int = 0
    swizzle: SwizzleMode = SwizzleMode.NONE

    def __post_init__(self) -> None:
        _check_bytes("start_address_bytes", self.start_address_bytes)
        _check_bytes("lbo_bytes", self.lbo_bytes)
        _check_bytes("sbo_bytes", self.sbo_bytes)
        if isinstance(self.base_offset, bool) or not isinstance(self.base_offset, (int, np.integer)) \
                or not 0 <= int(self.base_offset) <= 7:
            raise InputError("base_offset", self.base_offset, "an integer 0..7 (3-bit field, bits 49-51)")
        for name in ("start_address_bytes", "lbo_bytes", "sbo_bytes", "base_offset"):
            object.__setattr__(self, name, int(getattr(self, name)))
        object.__setattr__(self, "swizzle", parse_swizzle(self.swizzle))

    # ---------------------------------------------------------------- encoded field views
    @property
    def start_address_field(self) -> int:
        return self.start_address_bytes >> 4

    @property
    def lbo_field(self) -> int:
        return self.lbo_bytes >> 4

    @property
    def sbo_field(self) -> int:
        return self.sbo_bytes >> 4

    @property
    def layout_type(self) -> int:
        return self.swizzle.desc_code

    # ---------------------------------------------------------------- encode / decode
    def encode(self) -> int:
        """The 64-bit descriptor value."""
        return (self.start_address_field
                | self.lbo_field << 16
                | self.sbo_field << 32
                | self.base_offset << 49
                | self.layout_type << 62)

    def hex(self) -> str:
        return f"0x{self.encode():016x}"

    @classmethod
    def decode(cls, value, *, strict: bool = True) -> "MatrixDescriptor":
        """Fields of a 64-bit descriptor. strict: reserved bits must be 0 (else InputError)."""
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise InputError("descriptor", value, "a 64-bit integer")
        v = int(value)
        if not 0 <= v < 1 << 64:
            raise InputError("descriptor", hex(v) if v >= 0 else v, "0 <= value < 2^64")
        if strict and v & RESERVED_MASK:
            raise InputError("descriptor", f"0x{v:016x}",
                             f"reserved bits 0x{v & RESERVED_MASK:016x} set (bits 14-15, 30-31, 46-48, 52-61 "
                             "must be 0 on sm_90; `hopsim desc lint` / lint() says what they may mean)")
        return cls.from_fields(v & FIELD_MASK, (v >> 16) & FIELD_MASK, (v >> 32) & FIELD_MASK,
                               (v >> 49) & 7, SwizzleMode.from_desc_code((v >> 62) & 3))

    @classmethod
    def from_fields(cls, start_address_field: int, lbo_field: int, sbo_field: int,
                    base_offset: int = 0, swizzle=SwizzleMode.NONE) -> "MatrixDescriptor":
        """From the encoded 14-bit fields (16-byte units)."""
        for name, f in (("start_address_field", start_address_field), ("lbo_field", lbo_field),
                        ("sbo_field", sbo_field)):
            if isinstance(f, bool) or not isinstance(f, (int, np.integer)) or not 0 <= int(f) <= FIELD_MASK:
                raise InputError(name, f, "an integer 0..16383 (14-bit field)")
        return cls(int(start_address_field) << 4, int(lbo_field) << 4, int(sbo_field) << 4, base_offset, swizzle)

    def advanced(self, nbytes: int) -> "MatrixDescriptor":
        """The descriptor with its start address moved by nbytes (CuTe DescriptorIterator + n)."""
        return MatrixDescriptor(self.start_address_bytes + nbytes, self.lbo_bytes, self.sbo_bytes,
                                self.base_offset, self.swizzle)

    def to_dict(self) -> dict:
        """The JSON view (keys as `hopsim desc decode --json`)."""
        return {
            "start_address_bytes": self.start_address_bytes, "lbo_bytes": self.lbo_bytes,
            "sbo_bytes": self.sbo_bytes, "start_address_field": self.start_address_field,
            "lbo_field": self.lbo_field, "sbo_field": self.sbo_field,
            "base_offset": self.base_offset, "swizzle": self.swizzle.label,
        }


def parse_descriptor_value(text, field: str = "descriptor") -> int:
    """A descriptor value from text ('0x' then hex digits, or decimal digits only) -> int in
    [0, 2^64). Text like `1e5` or `4000` with letters is refused, not guessed as hex."""
    if isinstance(text, (int, np.integer)) and not isinstance(text, bool):
        v = int(text)
    else:
        s = str(text).strip().replace("_", "")
        if re.fullmatch(r"0[xX][0-9a-fA-F]{1,64}", s):
            v = int(s, 16)
        elif re.fullmatch(r"\d{1,64}", s):
            v = int(s, 10)
        else:
            shown = s if len(s) <= 40 else s[:40] + "..."
            raise InputError(field, shown, "0x then hex digits (0x4000004000010040) or decimal digits "
                             "only; hex needs the 0x prefix") from None
    if not 0 <= v < 1 << 64:
        raise InputError(field, text, "a value in 0 .. 0xffffffffffffffff (64 bits)")
    return v


# ----------------------------------------------------------------------------- canonical layouts
def instruction_k(dtype) -> int:
    """K of one wgmma for this input type: 32 bytes of K (f16/bf16 16, tf32 8, fp8 32)."""
    return 32 // parse_dtype(dtype).bytes


def linear_offsets(desc: MatrixDescriptor, rows: int, major: str, dtype) -> np.ndarray:
    """int64[rows, K]: the UNSWIZZLED byte address of each element (row, k) the wgmma reads.

    The canonical layouts of PTX ISA §9.7.15.5.1.2 (E = element bytes, T = 16/E, span = swizzle
    row bytes, W = span/16); apply `desc.swizzle.apply(.., desc.base_offset)` to get the physical
    address:
        K-major  none:  start + (r%8)*16   + (r//8)*SBO + (k//T)*LBO + (k%T)*E
        K-major  swz:   start + (r%8)*span + (r//8)*SBO + (k//T)*16  + (k%T)*E
        MN-major none:  start + (r%T)*E + (r//T)*SBO + (k%8)*16 + (k//8)*LBO
        MN-major swz:   start + (r%T)*E + ((r//T)%W)*16 + ((r//T)//W)*LBO + (k%8)*span + (k//8)*SBO
    """
    d = parse_dtype(dtype)
    e, t = d.bytes, 16 // d.bytes
    kk = 32 // e
    r = np.arange(rows, dtype=np.int64)[:, None]
    k = np.arange(kk, dtype=np.int64)[None, :]
    span = desc.swizzle.span_bytes
    s0, lbo, sbo = desc.start_address_bytes, desc.lbo_bytes, desc.sbo_bytes
    swz = desc.swizzle is not SwizzleMode.NONE
    if major == "K":
        row = (r % 8) * (span if swz else 16) + (r // 8) * sbo
        col = (k // t) * (16 if swz else lbo) + (k % t) * e
        return s0 + row + col
    mc = r // t
    if not swz:
        return s0 + (r % t) * e + mc * sbo + (k % 8) * 16 + (k // 8) * lbo
    w = span // 16
    return s0 + (r % t) * e + (mc % w) * 16 + (mc // w) * lbo + (k % 8) * span + (k // 8) * sbo


# ----------------------------------------------------------------------------- lint
@dataclass(frozen=True)
class Finding:
    """One inconsistency: the field, the value seen, what it should be, and why."""

    field: str
    seen: str
    expected: str
    reason: str
    severity: str = "error"  # "error": wrong data or illegal; "warning": ignored by the hardware

    def __str__(self) -> str:
        return f"[{self.severity}] {self.field}: seen {self.seen}, expected {self.expected}: {self.reason}"

    def to_dict(self) -> dict:
        return {"field": self.field, "seen": self.seen, "expected": self.expected,
                "reason": self.reason, "severity": self.severity}


def _parse_choice(name: str, value, choices: tuple[str, ...]) -> str:
    v = str(value).strip()
    for c in choices:
        if v.upper() == c.upper():
            return c
    raise InputError(name, value, "one of " + ", ".join(choices))


def operand_rows(operand: str, n: int | None) -> int:
    """Rows the wgmma reads: A: M = 64; B: N (8..256, step 8)."""
    if operand == "A":
        return 64
    if n is None or isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n % 8 or not 8 <= n <= 256:
        raise InputError("n", n, "N of wgmma m64nNk*: 8..256 in steps of 8")
    return int(n)


def lint(desc, *, operand: str = "A", major: str = "K", dtype="f16", tile=(64, 16), swizzle=None,
         smem_base: int | None = None, n: int | None = None) -> list[Finding]:
    """Check a descriptor (int or MatrixDescriptor) against what it is meant to describe.

    operand 'A' (64 rows) or 'B' (n rows; default: the tile's rows); major 'K' or 'MN';
    dtype of the elements; tile = (rows, k) of the shared-memory tile the data lives in, packed
    canonically (swizzle atoms MN-first, as CUTLASS `tile_to_shape` and TMA boxes lay it out; a
    K-first packing is accepted too); swizzle = the mode the data was written with (default: the
    descriptor's own); smem_base = address where the data's swizzle pattern starts (default: on its
    repeat boundary, as TMA anchors it on absolute address bits).
    Returns findings (empty list = consistent). Raises InputError for invalid arguments.
    """
    operand = _parse_choice("operand", operand, ("A", "B"))
    major = _parse_choice("major", major, ("K", "MN"))
    d = parse_dtype(dtype)
    if d.name not in LINT_DTYPES:
        raise InputError("dtype", d.name, "one of " + ", ".join(LINT_DTYPES) + " (the floating-point inputs a "
                         "wgmma reads from shared memory through a descriptor)")
    if major == "MN" and d.bits != 16:
        raise InputError("major", "MN", f"K for {d.name}: MN-major (transposed) operands exist only for f16/bf16")
    tile_rows, tile_k = _parse_tile(tile)
    if operand == "A" and n is not None:
        raise InputError("n", n, "only for operand B (operand A always has 64 rows: wgmma m64)")
    if operand == "B" and n is None and (tile_rows % 8 or not 8 <= tile_rows <= 256):
        raise InputError("tile", tile, "for operand B without --n, ROWS is the wgmma N: 8..256 in steps of 8")
    if smem_base is not None:
        if isinstance(smem_base, bool) or not isinstance(smem_base, (int, np.integer)) \
                or not 0 <= int(smem_base) < ADDRESS_LIMIT or int(smem_base) % 16:
            raise InputError("smem_base", smem_base, f"a 16-B aligned shared-memory byte address in 0 .. {ADDRESS_LIMIT - 16}")
        smem_base = int(smem_base)
    out: list[Finding] = []

    if isinstance(desc, MatrixDescriptor):
        md = desc
    else:
        raw = parse_descriptor_value(desc)
        if raw & RESERVED_MASK:
            out.append(Finding(
                "reserved bits", f"0x{raw & RESERVED_MASK:016x}", "0",
                "bits 14-15, 30-31, 46-48 and 52-61 are reserved on sm_90 (e.g. a 'leading dimension mode' "
                "in bits 14-15 is not part of the PTX ISA matrix descriptor; LBO is bits 16-29, SBO bits 32-45)"))
        md = MatrixDescriptor.decode(raw, strict=False)
    data_swz = md.swizzle if swizzle is None else parse_swizzle(swizzle)
    if smem_base is not None and data_swz is not SwizzleMode.NONE and smem_base % 128:
        raise InputError("smem_base", smem_base, f"a multiple of 128 B for {data_swz.label}-swizzled data: a swizzle "
                         "pattern starts on a 128-B line (TMA shared-memory boxes are 128-B aligned)")
    rows = operand_rows(operand, n if n is not None else (tile_rows if operand == "B" else None))

    # -- layout type
    if md.swizzle is not data_swz:
        why = (f"layout type {md.layout_type} means {md.swizzle.label} on sm_90 (0 none, 1 128B, 2 64B, 3 32B); "
               f"the data is {data_swz.label}-swizzled, which is code {data_swz.desc_code}")
        if md.layout_type == 3 and data_swz is SwizzleMode.B128:
            why += " (3 is 32B on sm_90, not 128B; 128B is 1)"
        out.append(Finding("layout_type", f"{md.layout_type} ({md.swizzle.label})",
                           f"{data_swz.desc_code} ({data_swz.label})", why))

    # -- base offset
    if data_swz is SwizzleMode.NONE:
        if md.base_offset:
            out.append(Finding("base_offset", str(md.base_offset), "0",
                               "the base offset is not used without swizzle", "warning"))
    else:
        if smem_base is not None and smem_base % data_swz.repeat_bytes:
            want = (smem_base >> 7) & 7
            why = (f"the {data_swz.label} pattern starts at {smem_base} B, not on its {data_swz.repeat_bytes}-B "
                   f"boundary: base offset = (pattern start >> 7) & 7 = {want}")
        else:
            want = 0
            why = (f"the {data_swz.label} pattern starts on its {data_swz.repeat_bytes}-B boundary "
                   "(TMA anchors it on absolute address bits), so the base offset is 0")
        if md.base_offset != want:
            out.append(Finding("base_offset", str(md.base_offset), str(want), why))

    # -- start address inside the tile
    if smem_base is not None and md.start_address_bytes < smem_base:
        out.append(Finding("start_address", f"{md.start_address_bytes} B", f">= {smem_base} B",
                           "the matrix starts before the tile's shared-memory base"))

    # -- LBO / SBO against the canonical packing of the tile
    out.extend(_lint_strides(md, data_swz, major, d, rows, tile_rows, tile_k))

    # -- no two elements at the same address
    addrs = linear_offsets(md, rows, major, d)
    if np.unique(addrs).size != addrs.size:
        out.append(Finding("lbo/sbo", f"LBO {md.lbo_bytes} B, SBO {md.sbo_bytes} B", "non-overlapping core matrices",
                           f"with these offsets two elements of the {rows}x{addrs.shape[1]} operand share an address"))
    return out


def _parse_tile(tile) -> tuple[int, int]:
    given = tile
    if isinstance(tile, str):
        parts = tile.lower().split("x")
        try:
            tile = tuple(int(p) for p in parts)
        except ValueError:
            raise InputError("tile", given, "ROWSxK, e.g. 64x16") from None
    try:
        ok = len(tile) == 2 and all(int(v) == v and int(v) > 0 for v in tile)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InputError("tile", given, "ROWSxK: two positive sizes (rows, k), e.g. 64x16")
    return int(tile[0]), int(tile[1])


def _lint_strides(md: MatrixDescriptor, swz: SwizzleMode, major: str, d: DType, rows: int,
                  tile_rows: int, tile_k: int) -> list[Finding]:
    out: list[Finding] = []
    e = d.bytes
    k_bytes = max(tile_k * e, 32)
    if major == "K":
        if swz is SwizzleMode.NONE:
            # core matrix = 8 rows x 16 B (128 B). MN-first: SBO 128, LBO = rows*16; K-first: LBO 128, SBO = 128*(K/16B)
            mn_first = (128, tile_rows * 16)
            k_first = (k_bytes // 16 * 128, 128)
            if (md.sbo_bytes, md.lbo_bytes) not in (mn_first, k_first):
                if md.sbo_bytes not in (mn_first[0], k_first[0]):
                    out.append(Finding("sbo", f"{md.sbo_bytes} B", f"{mn_first[0]} B",
                                       "K-major without swizzle: SBO is the stride between 8-row core-matrix groups; "
                                       f"8 rows x 16 B packed = 128 B (K-first packing of a {tile_rows}x{tile_k} tile: "
                                       f"{k_first[0]} B)"))
                want_lbo = mn_first[1] if md.sbo_bytes != k_first[0] else k_first[1]
                if md.lbo_bytes != want_lbo:
                    out.append(Finding("lbo", f"{md.lbo_bytes} B", f"{want_lbo} B",
                                       "K-major without swizzle: LBO is the stride between the two core matrices along "
                                       f"K; for a {tile_rows}-row tile packed column of core matrices first = "
                                       f"{tile_rows} x 16 B"))
        else:
            atom = swz.atom_bytes
            katoms = max(1, -(-k_bytes // swz.span_bytes))
            if md.sbo_bytes not in (atom, atom * katoms):
                out.append(Finding("sbo", f"{md.sbo_bytes} B", f"{atom} B",
                                   f"K-major {swz.label}: SBO is the stride between 8-row groups = 8 rows x "
                                   f"{swz.span_bytes} B = {atom} B for {d.name} (one swizzle atom)"))
            if md.lbo_field != 1:
                out.append(Finding("lbo", f"{md.lbo_bytes} B (field {md.lbo_field})", "16 B (field 1)",
                                   f"LBO is unused for swizzled K-major layouts; the PTX ISA says 'assumed 1' "
                                   "(CUTLASS encodes 1)", "warning"))
        return out
    # MN-major
    t = 16 // e
    if swz is SwizzleMode.NONE:
        # SBO: next T MN elements (one 128-B core matrix); LBO: next 8 K = rows/T core matrices (MN-first)
        mn_first = (128, (tile_rows // t) * 128)
        k_first = ((max(tile_k, 16) // 8) * 128, 128)
        if (md.sbo_bytes, md.lbo_bytes) not in (mn_first, k_first):
            if md.sbo_bytes not in (mn_first[0], k_first[0]):
                out.append(Finding("sbo", f"{md.sbo_bytes} B", f"{mn_first[0]} B",
                                   f"MN-major without swizzle: SBO is the stride between groups of {t} MN elements "
                                   "(16-B core-matrix rows); a packed core matrix (8 K x 16 B) is 128 B"))
            want_lbo = mn_first[1] if md.sbo_bytes != k_first[0] else k_first[1]
            if md.lbo_bytes != want_lbo:
                out.append(Finding("lbo", f"{md.lbo_bytes} B", f"{want_lbo} B",
                                   "MN-major without swizzle: LBO is the stride between groups of 8 K columns; for a "
                                   f"{tile_rows}-row tile packed MN-first = {tile_rows // t} core matrices x 128 B"))
        return out
    span_elems = swz.span_bytes // e
    atom = swz.atom_bytes
    mn_atoms = max(1, -(-tile_rows // span_elems))
    if md.sbo_bytes not in (mn_atoms * atom, atom):
        out.append(Finding("sbo", f"{md.sbo_bytes} B", f"{mn_atoms * atom} B",
                           f"MN-major {swz.label}: SBO is the stride between groups of 8 K columns; a {tile_rows}-row "
                           f"tile packed MN-first holds {mn_atoms} atoms of {atom} B per 8 K"))
    if rows > span_elems:
        kgroups = max(2, -(-tile_k // 8))
        if md.lbo_bytes not in (atom, atom * kgroups):
            out.append(Finding("lbo", f"{md.lbo_bytes} B", f"{atom} B",
                               f"MN-major {swz.label}: LBO is the stride between MN atoms of {span_elems} {d.name} "
                               f"elements ({swz.span_bytes} B); the operand has {rows} rows, so it spans "
                               f"{-(-rows // span_elems)} atoms"))
    return out
