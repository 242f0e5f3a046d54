"""WGMMA matrix descriptor: golden CUTLASS dumps (seed 000), round-trip law, validation, lint.

Seed 000 prints CuTe `GmmaDescriptor` dumps (hex plus decoded fields) for a 128x64 half tile in
K-major and MN-major with every swizzle. Where its prose disagrees with the PTX ISA, the ISA wins:
  - the prose calls start/LBO/SBO "16-bit" and base_offset/layout_type "8-bit" fields: the ISA fields
    are 14 bits (bits 0-13, 16-29, 32-45), base offset 3 bits (49-51), layout type 2 bits (62-63);
  - the CuTe comment says base_offset is "valid only for SWIZZLE_128B and SWIZZLE_64B": the ISA gives a
    pattern start boundary for 32B too (256 B), so base offset applies to every swizzled mode.
The hex dumps themselves agree with the ISA bit layout, so they are golden values.

Seed 004 builds descriptors with a different bit layout (a "leading dimension mode" in bits 14-15,
stride offset in bytes at 16-29, leading offset in bytes at 32-45, and layout type 3 called 128B).
On sm_90 (PTX ISA) bits 14-15 are reserved, 16-29 is LBO >> 4, 32-45 is SBO >> 4 and 3 is 32B, so
lint must flag each of those descriptors.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from isa.descriptor import MatrixDescriptor, lint, parse_descriptor_value
from isa.errors import InputError
from isa.swizzle import SwizzleMode

CUTE_NAMES = {"INTERLEAVE": SwizzleMode.NONE, "B32": SwizzleMode.B32, "B64": SwizzleMode.B64, "B128": SwizzleMode.B128}
SEED000 = pathlib.Path(__file__).resolve().parents[1] / "data" / "seed000_gmma_descriptors.json"


def seed000_dumps() -> list[dict]:
    """The 64 GmmaDescriptor dumps of seed 000 (hex word + printed fields), tests/data/ (origin noted there)."""
    return json.loads(SEED000.read_text(encoding="utf-8"))["dumps"]


def test_seed000_has_every_dump():
    dumps = seed000_dumps()
    assert len(dumps) == 64  # 8 cases (K/MN x 4 swizzles) x 8 descriptors, none missed
    assert {d["layout_name"] for d in dumps} == set(CUTE_NAMES)
    assert {(d["major"], d["layout_name"]) for d in dumps} == {(m, n) for m in ("K", "MN") for n in CUTE_NAMES}


def test_seed000_decodes_to_printed_fields_and_reencodes():
    for d in seed000_dumps():
        value = int(d["hex"], 16)
        md = MatrixDescriptor.decode(value)
        assert md.start_address_field == int(d["start_addr"], 16)
        assert md.lbo_field == int(d["leading_off"], 16) == d["leading_off_dec"]
        assert md.sbo_field == int(d["stride_off"], 16) == d["stride_off_dec"]
        assert md.base_offset == int(d["base_offset"], 16)
        assert md.layout_type == d["layout_type"]
        assert md.swizzle is CUTE_NAMES[d["layout_name"]]
        assert md.start_address_bytes == 16 * int(d["start_addr"], 16)
        assert md.encode() == value


# A few dumps as literals (seed 000): (hex, start field, LBO field, SBO field, swizzle)
LITERALS = [
    (0x0000000800800040, 0x40, 128, 8, SwizzleMode.NONE),   # K-major, no swizzle
    (0xC0000010000100C0, 0xC0, 1, 16, SwizzleMode.B32),     # K-major 32B, second M block
    (0x8000002000010342, 0x342, 1, 32, SwizzleMode.B64),    # K-major 64B, last k-block
    (0x4000004000010046, 0x46, 1, 64, SwizzleMode.B128),    # K-major 128B, k-block 3 (+3 x 32 B)
    (0x4000008000000380, 0x380, 0, 128, SwizzleMode.B128),  # MN-major 128B: LBO unused (0)
]


@pytest.mark.parametrize("value,start,lbo,sbo,mode", LITERALS)
def test_literal_dumps(value, start, lbo, sbo, mode):
    md = MatrixDescriptor.decode(value)
    assert (md.start_address_field, md.lbo_field, md.sbo_field, md.base_offset, md.swizzle) == (start, lbo, sbo, 0, mode)
    assert MatrixDescriptor.from_fields(start, lbo, sbo, 0, mode).encode() == value


def test_issue_example():
    md = MatrixDescriptor.decode(0x4000004000010040)
    assert md.to_dict() == {"start_address_bytes": 1024, "lbo_bytes": 16, "sbo_bytes": 1024,
                            "start_address_field": 64, "lbo_field": 1, "sbo_field": 64,
                            "base_offset": 0, "swizzle": "128B"}
    assert MatrixDescriptor(1024, 16, 1024, 0, "128B").hex() == "0x4000004000010040"


field14 = st.integers(0, (1 << 14) - 1)


@given(a=field14, l=field14, s=field14, b=st.integers(0, 7), m=st.sampled_from(list(SwizzleMode)))
def test_decode_encode_roundtrip(a, l, s, b, m):
    d = MatrixDescriptor(16 * a, 16 * l, 16 * s, b, m)
    assert MatrixDescriptor.decode(d.encode()) == d


@given(v=st.integers(0, (1 << 64) - 1))
def test_encode_decode_roundtrip_on_valid_values(v):
    v &= ~((0x3 << 14) | (0x3 << 30) | (0x7 << 46) | (0x3FF << 52))  # clear reserved bits
    assert MatrixDescriptor.decode(v).encode() == v


@pytest.mark.parametrize("kwargs,field", [
    (dict(start_address_bytes=1032), "start_address_bytes"),      # not 16-B aligned
    (dict(start_address_bytes=1 << 18), "start_address_bytes"),   # beyond the 18-bit window
    (dict(start_address_bytes=0, lbo_bytes=8), "lbo_bytes"),
    (dict(start_address_bytes=0, sbo_bytes=-16), "sbo_bytes"),
    (dict(start_address_bytes=0, base_offset=8), "base_offset"),
    (dict(start_address_bytes=0, swizzle="96B"), "swizzle"),
])
def test_validation_names_the_field(kwargs, field):
    with pytest.raises(InputError) as ei:
        MatrixDescriptor(**kwargs)
    assert ei.value.field == field


def test_decode_rejects_reserved_bits_and_range():
    with pytest.raises(InputError, match="reserved"):
        MatrixDescriptor.decode(0x4000004000010040 | 1 << 14)
    assert MatrixDescriptor.decode(0x4000004000010040 | 1 << 14, strict=False).encode() == 0x4000004000010040
    with pytest.raises(InputError):
        MatrixDescriptor.decode(1 << 64)
    with pytest.raises(InputError):
        MatrixDescriptor.from_fields(1 << 14, 0, 0)


def test_parse_value():
    assert parse_descriptor_value("0x4000004000010040") == 0x4000004000010040
    for bad in ("0xZZ", "hello", "0x1" + "0" * 16):
        with pytest.raises(InputError):
            parse_descriptor_value(bad)


# ------------------------------------------------------------------------------------------ lint
def fields(findings):
    return {f.field for f in findings if f.severity == "error"}


def test_lint_clean_canonical_descriptors():
    # K-major SW128 f16 64x64 tile at 1024: SBO = 8 rows x 128 B = 1024, LBO field 1
    assert lint(0x4000004000010040, operand="A", major="K", dtype="f16", tile=(64, 64), swizzle="128B") == []
    # the k-block advance inside the atom (+32 B) stays clean
    assert lint(MatrixDescriptor(1024 + 96, 16, 1024, 0, "128B"), tile=(64, 64), swizzle="128B") == []
    # seed 000 dumps are clean against their own 128x64 half tile
    assert lint(0x0000000800800040, major="K", tile=(128, 64), swizzle="none") == []
    assert lint(0x8000002000010040, major="K", tile=(128, 64), swizzle="64B") == []
    assert lint(0x4000008000000040, major="MN", tile=(128, 64), swizzle="128B") == []
    assert lint(0xC000008000100040, major="MN", tile=(128, 64), swizzle="32B") == []


def test_lint_layout_type_3_is_32B_not_128B():
    out = lint(0xC000004000010040, tile=(64, 64), swizzle="128B")
    (f,) = [f for f in out if f.field == "layout_type"]
    assert f.seen.startswith("3") and f.expected.startswith("1") and "3 is 32B on sm_90, not 128B" in f.reason


def test_lint_sbo_for_k_major_sw128():
    out = lint(MatrixDescriptor(1024, 16, 512, 0, "128B"), tile=(64, 64), swizzle="128B", dtype="bf16")
    (f,) = [f for f in out if f.field == "sbo"]
    assert f.expected == "1024 B" and "8 rows x 128 B" in f.reason


def test_lint_lbo_unused_for_swizzled_k_major_is_a_warning():
    out = lint(MatrixDescriptor(1024, 0, 1024, 0, "128B"), tile=(64, 64), swizzle="128B")
    assert [(f.field, f.severity) for f in out] == [("lbo", "warning")]


def test_lint_base_offset():
    # the data's pattern starts at 1024 + 3*128 (not on the 1024-B boundary): base offset must be 3
    d = MatrixDescriptor(1024 + 384, 16, 1024, 0, "128B")
    (f,) = lint(d, tile=(64, 64), swizzle="128B", smem_base=1024 + 384)
    assert (f.field, f.expected) == ("base_offset", "3")
    assert lint(MatrixDescriptor(1024 + 384, 16, 1024, 3, "128B"), tile=(64, 64), swizzle="128B",
                smem_base=1024 + 384) == []
    assert fields(lint(MatrixDescriptor(1024, 16, 1024, 2, "128B"), tile=(64, 64), swizzle="128B")) == {"base_offset"}


def test_lint_overlap_is_caught():
    out = lint(MatrixDescriptor(0, 16, 16, 0, "none"), tile=(64, 16), swizzle="none")
    assert "lbo/sbo" in fields(out)


def test_lint_mn_major_lbo_needed_when_operand_spans_atoms():
    # B operand N=128 MN-major 128B f16: two 64-element atoms along N, LBO must be the atom stride
    d = MatrixDescriptor(1024, 0, 2048, 0, "128B")  # SBO = 2 atoms x 1024 B per 8 K: right; LBO 0: wrong
    out = lint(d, operand="B", major="MN", tile=(128, 64), swizzle="128B", n=128)
    assert fields(out) == {"lbo", "lbo/sbo"}
    assert lint(MatrixDescriptor(1024, 1024, 2048, 0, "128B"), operand="B", major="MN", tile=(128, 64),
                swizzle="128B", n=128) == []


def test_lint_rejects_bad_arguments():
    with pytest.raises(InputError):
        lint(0x4000004000010040, operand="C")
    with pytest.raises(InputError):
        lint(0x4000004000010040, tile="64by16")
    with pytest.raises(InputError):
        lint("0xnothex")


@pytest.mark.parametrize("kwargs,field", [
    (dict(dtype="f64"), "dtype"),                       # not a wgmma shared-memory input type
    (dict(dtype="u16"), "dtype"),
    (dict(major="MN", dtype="tf32"), "major"),          # transpose only for 16-bit types
    (dict(major="MN", dtype="e4m3"), "major"),
    (dict(tile="64"), "tile"),
    (dict(tile=(0, 16)), "tile"),
    (dict(tile=(64, 16, 2)), "tile"),
    (dict(operand="A", n=64), "n"),                     # A is always m64
    (dict(operand="B", tile=(12, 16)), "tile"),         # B rows = N must be 8..256 step 8
    (dict(operand="B", tile=(512, 16)), "tile"),
    (dict(smem_base=-128), "smem_base"),
    (dict(smem_base=1000), "smem_base"),                # not 16-B aligned
    (dict(smem_base=1 << 18), "smem_base"),             # beyond the 18-bit shared window
    (dict(smem_base=1024 + 16, swizzle="128B"), "smem_base"),  # a swizzle pattern starts on a 128-B line
])
def test_lint_bad_arguments_name_the_field(kwargs, field):
    with pytest.raises(InputError) as ei:
        lint(0x4000004000010040, **kwargs)
    assert ei.value.field == field


def test_lint_tile_error_shows_the_value_given():
    with pytest.raises(InputError) as ei:
        lint(0x4000004000010040, tile="64")
    assert ei.value.value == "64"


# -------------------------------------------------------------- seed 004 (different bit layout)
def seed004_b128(addr: int) -> int:
    """Seed 004 `make_gmma_desc_b128`: address >> 4 in bits 0-13 and '3 = B128' in bits 62-63."""
    return ((addr >> 4) & 0x3FFF) | 3 << 62


def seed004_strided(addr: int, leading_dim_bytes: int, stride_offset_bytes: int) -> int:
    """Seed 004 `make_gmma_desc_strided`: 'ld mode' in 14-15, stride BYTES at 16-29, leading BYTES at 32-45."""
    ld_mode = {16: 1, 32: 2, 64: 3}.get(leading_dim_bytes, 0)
    return (((addr >> 4) & 0x3FFF) | ld_mode << 14 | (stride_offset_bytes & 0x3FFF) << 16
            | (leading_dim_bytes & 0x3FFF) << 32 | 3 << 62)


def seed004_descriptors() -> list[tuple[str, int, str]]:
    """(what, value, operand) for the descriptors the seed's code builds: 64x64 bf16 A, 256x64 bf16 B."""
    a_base, b_base = 0x0400, 0x8400  # 1024-B aligned tiles
    out = [("b128 A", seed004_b128(a_base), "A"), ("b128 B", seed004_b128(b_base), "B")]
    out += [(f"make_desc_A k={k}", seed004_b128(a_base + k * 16 * 2), "A") for k in range(4)]
    out += [(f"make_desc_B k={k}", seed004_b128(b_base + k * 16 * 2), "B") for k in range(4)]
    out += [(f"mainloop k={k}", seed004_b128(a_base) + k * 16 * 2 // 16, "A") for k in range(4)]
    out += [(f"strided ld={ld} so={so}", seed004_strided(a_base, ld, so), "A")
            for ld in (16, 32, 64, 128) for so in (0, 1024)]
    return out


@pytest.mark.parametrize("what,value,operand", seed004_descriptors())
def test_lint_flags_seed004(what, value, operand):
    out = lint(value, operand=operand, major="K", dtype="bf16", tile=(64 if operand == "A" else 256, 64),
               swizzle="128B")
    by = {f.field: f for f in out}
    # layout type: the seed's "3 = 128B" is 32B on sm_90
    assert "layout_type" in by and "3 is 32B on sm_90, not 128B" in by["layout_type"].reason, what
    # SBO (bits 32-45, 16-B units) must be 64 (1024 B); the seed leaves it 0 or puts a byte count
    # there -- leading_dim_bytes = 64 happens to land on the right value, every other one is flagged
    if (value >> 32) & 0x3FFF != 64:
        assert "sbo" in by and by["sbo"].expected == "1024 B", what
    else:
        assert "sbo" not in by
    if (value >> 14) & 3:
        assert "reserved bits" in by and "bits 14-15" in by["reserved bits"].reason, what
