"""Swizzles: CuTe `Swizzle<B,M,S>` on integer offsets, and the TMA/WGMMA modes on byte addresses.

CuTe `Swizzle<B, M, S>` (here `Swizzle(B, M, S)`, S >= B > 0 shown) XORs the B bits that start at
bit M+S ("YYY") into the B bits that start at bit M ("ZZZ"); bits below M pass through:

    bit:      ... | M+S+B-1 .. M+S | ... | M+B-1 .. M | M-1 .. 0
    x         ... |      YYY       | ... |    ZZZ     |  offset
    sw(x)     ... |      YYY       | ... | ZZZ ^ YYY  |  offset

    sw(x) = x ^ ((x & (((1 << B) - 1) << (M + S))) >> S)

The hardware modes of TMA (`CU_TENSOR_MAP_SWIZZLE_*`) and of the WGMMA matrix descriptor are
`Swizzle<b, 4, 3>` applied to the ABSOLUTE shared-memory byte address (16-byte granule, the XOR
takes address bits [7, 7+b) into bits [4, 4+b)):

    byte address bits:  ... 9 8 7 | 6 5 4 | 3 2 1 0
                            r r r | c c c | byte within a 16-B chunk
    128B (b=3): chunk c of 128-B line r lands in chunk c ^ (r & 7); pattern repeats every 1024 B
     64B (b=2): c ^ (r & 3) on bits [4,6); repeats every 512 B
     32B (b=1): c ^ (r & 1) on bit 4;      repeats every 256 B
    none (b=0): identity

Sources: CuTe `swizzle.hpp` [CUTE-SWZ]; PTX ISA tensor-copy swizzle modes [PTX-TENSOR] §5.5.7;
CUDA guide TMA swizzle table (repeats after 256/512/1024 B) [CPG-SWZ]; descriptor layout-type codes
(0 none, 1 128B, 2 64B, 3 32B) [PTX-WGMMA-DESC]. See docs/hopper-facts.md §4.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

import numpy as np

from isa.errors import InputError


@dataclass(frozen=True)
class Swizzle:
    """CuTe `Swizzle<B, M, S>`: XOR of B bits at M+max(S,0) into B bits at M-min(S,0).

    Call it on a Python int or a numpy integer array (vectorised): `Swizzle(3, 4, 3)(addrs)`.
    """

    B: int
    M: int
    S: int

    def __post_init__(self) -> None:
        if not isinstance(self.B, int) or self.B < 0:
            raise InputError("B", self.B, "a number of bits >= 0")
        if not isinstance(self.M, int) or self.M < 0:
            raise InputError("M", self.M, "a base bit >= 0")
        if not isinstance(self.S, int) or abs(self.S) < self.B:
            raise InputError("S", self.S, f"a shift with |S| >= B={self.B} (CuTe: YYY and ZZZ must not overlap)")

    @property
    def yyy_mask(self) -> int:
        """The source bits (XORed into ZZZ)."""
        return ((1 << self.B) - 1) << (self.M + max(0, self.S))

    @property
    def zzz_mask(self) -> int:
        """The destination bits."""
        return ((1 << self.B) - 1) << (self.M - min(0, self.S))

    def __call__(self, x):
        if isinstance(x, np.ndarray):
            x = x.astype(np.int64, copy=False)
            y = x & self.yyy_mask
            return x ^ ((y >> self.S) if self.S >= 0 else (y << -self.S))
        x = int(x)
        y = x & self.yyy_mask
        return x ^ ((y >> self.S) if self.S >= 0 else (y << -self.S))

    def __str__(self) -> str:
        return f"Swizzle<{self.B},{self.M},{self.S}>"

    @classmethod
    def parse(cls, text: str, field: str = "swizzle") -> "Swizzle":
        """'Swizzle<3,4,3>' (CuTe's spelling; 'Sw<3,4,3>' too, spaces allowed) -> Swizzle(3, 4, 3)."""
        m = re.fullmatch(r"\s*(?:Swizzle|Sw)\s*<\s*(\d{1,2})\s*,\s*(\d{1,2})\s*,\s*(-?\d{1,2})\s*>\s*", str(text))
        if not m:
            raise InputError(field, text, "Swizzle<B,M,S> with small integers, e.g. Swizzle<3,3,3>")
        try:
            return cls(*(int(g) for g in m.groups()))
        except InputError as exc:
            raise InputError(field, text, f"a valid CuTe swizzle ({exc.allowed})") from None


class SwizzleMode(enum.Enum):
    """The swizzle modes of TMA and of the WGMMA descriptor on sm_90 (value = XOR bit count b).

    | mode | CuTe          | span (row) | atom = repeat | descriptor code | TMA enum                    |
    |------|---------------|------------|---------------|-----------------|-----------------------------|
    | none | Swizzle<0,4,3>| 16 B       | 128 B (8x16B) | 0               | CU_TENSOR_MAP_SWIZZLE_NONE  |
    | 32B  | Swizzle<1,4,3>| 32 B       | 256 B         | 3               | CU_TENSOR_MAP_SWIZZLE_32B   |
    | 64B  | Swizzle<2,4,3>| 64 B       | 512 B         | 2               | CU_TENSOR_MAP_SWIZZLE_64B   |
    | 128B | Swizzle<3,4,3>| 128 B      | 1024 B        | 1               | CU_TENSOR_MAP_SWIZZLE_128B  |

    "span" is the width of one row of the swizzle atom (for none, the 16-byte core-matrix row);
    an atom is 8 such rows. A swizzled pattern starts on a multiple of `repeat_bytes`.
    """

    NONE = 0
    B32 = 1
    B64 = 2
    B128 = 3

    @property
    def bits(self) -> int:
        """b of `Swizzle<b,4,3>`."""
        return self.value

    @property
    def label(self) -> str:
        """'none', '32B', '64B' or '128B' (what the CLI and JSON use)."""
        return "none" if self is SwizzleMode.NONE else f"{16 << self.value}B"

    @property
    def span_bytes(self) -> int:
        """Row width of the swizzle atom: 16 (none: one 16-B granule), 32, 64, 128."""
        return 16 << self.value

    @property
    def atom_bytes(self) -> int:
        """8 rows of `span_bytes`: 128, 256, 512, 1024."""
        return 8 * self.span_bytes

    @property
    def repeat_bytes(self) -> int:
        """The pattern repeats every 256/512/1024 B (none: every 16-B granule; reported as 16)."""
        return 16 if self is SwizzleMode.NONE else self.atom_bytes

    @property
    def chunks_per_row(self) -> int:
        """16-byte chunks per atom row: 1, 2, 4, 8."""
        return self.span_bytes // 16

    @property
    def cute(self) -> Swizzle:
        return Swizzle(self.value, 4, 3)

    @property
    def desc_code(self) -> int:
        """Layout-type code in bits 62-63 of the WGMMA descriptor: 0 none, 1 128B, 2 64B, 3 32B."""
        return _DESC_CODE[self]

    @classmethod
    def from_desc_code(cls, code: int) -> "SwizzleMode":
        for mode, c in _DESC_CODE.items():
            if c == code:
                return mode
        raise InputError("layout_type", code, "0 (none), 1 (128B), 2 (64B) or 3 (32B)")

    @property
    def tma_name(self) -> str:
        return "CU_TENSOR_MAP_SWIZZLE_" + ("NONE" if self is SwizzleMode.NONE else self.label)

    def apply(self, byte_addr, base_offset: int = 0):
        """Physical byte address of the absolute shared-memory byte address `byte_addr`.

        XORs ((addr >> 7) - base_offset) & (2^b - 1) into bits [4, 4+b). base_offset = 0 anchors the
        pattern on absolute address bits, as TMA writes and as WGMMA reads with base offset 0.
        A non-zero base offset (descriptor bits 49-51, "(pattern start addr >> 7) & 7") shifts the
        row phase so that the pattern starts at a 128-B line that is not on the repeat boundary:
        this reading of the PTX ISA text is [inferred], not measured. Works on ints and arrays.
        """
        b = self.value
        if b == 0:
            return byte_addr if isinstance(byte_addr, np.ndarray) else int(byte_addr)
        mask = (1 << b) - 1
        if isinstance(byte_addr, np.ndarray):
            a = byte_addr.astype(np.int64, copy=False)
            return a ^ ((((a >> 7) - base_offset) & mask) << 4)
        a = int(byte_addr)
        return a ^ ((((a >> 7) - base_offset) & mask) << 4)

    def __str__(self) -> str:
        return self.label


_DESC_CODE = {SwizzleMode.NONE: 0, SwizzleMode.B128: 1, SwizzleMode.B64: 2, SwizzleMode.B32: 3}
_NAMES = {"none": SwizzleMode.NONE, "32b": SwizzleMode.B32, "64b": SwizzleMode.B64, "128b": SwizzleMode.B128}


def parse_swizzle(text, field: str = "swizzle") -> SwizzleMode:
    """'none' | '32B' | '64B' | '128B' (case-insensitive; a SwizzleMode passes through)."""
    if isinstance(text, SwizzleMode):
        return text
    key = str(text).strip().lower()
    if key in _NAMES:
        return _NAMES[key]
    raise InputError(field, text, "one of none, 32B, 64B, 128B")


def swizzle_address(byte_addr, mode, base_offset: int = 0):
    """`parse_swizzle(mode).apply(byte_addr, base_offset)` (ints or numpy arrays)."""
    return parse_swizzle(mode).apply(byte_addr, base_offset)


def chunk_map(mode, rows: int = 8, base_addr: int = 0) -> np.ndarray:
    """int[rows, 8]: for each 128-B line r (from base_addr) the physical 16-B chunk of logical chunk c.

    For 128B mode at a 1024-aligned base this is c ^ (r & 7).
    """
    m = parse_swizzle(mode)
    logical = base_addr + 128 * np.arange(rows)[:, None] + 16 * np.arange(8)[None, :]
    return ((m.apply(logical) - base_addr) % 128) // 16
