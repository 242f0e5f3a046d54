"""Bank conflicts from a layout + swizzle + access (hopsim/functional/bank_layout.py):

- laws: the swizzled tiles of issue 15's seeds (001: sm80 CuTe GEMM, (128,32) f16 with
  Swizzle<3,3,3> / <2,3,3>; 003: CUTLASS sm80 multistage cp.async + ldmatrix; the sm90 128B/64B/32B
  K-major GMMA atoms) are conflict-free for ldmatrix.x4 and cp.async.16 stores (wavefronts == ideal);
- goldens from the bank formula (not from the model): the same tiles unswizzled give the textbook
  conflicts, gcd(row-pitch step, 8) per 8x8 matrix / quarter-warp and gcd(word step, 32) for b32;
- the trace path: generated addresses equal recorded H100 ncu patterns (validation/records/h100/
  bank_conflicts__h100_ncu*.json) address for address, and the counts equal the measured ones.
"""

from __future__ import annotations

import io
import json
import math
import sys

import numpy as np
import pytest

from hopsim.cli import main
from hopsim.functional.bank_layout import Tile, access, count, parse_any_swizzle, parse_layout, warp_addresses
from isa.layout import Layout
from validation.provenance import load_records


def _tile(layout: str, swizzle: str | None, elem: int) -> Tile:
    return Tile(parse_layout(layout), parse_any_swizzle(swizzle), elem)


def _report(layout, swizzle, elem, acc, tv=None):
    return count(_tile(layout, swizzle, elem), access(acc), Layout.parse(tv) if tv else None)


# ------------------------------------------------------------------------------- laws: conflict-free
SWIZZLED = [
    # (layout, swizzle, elem bytes): sm80 seed 001 (128x32 f16, kTileK = 32) and the 64-wide tile
    ("(128,32):(32,1)", "Swizzle<3,3,3>", 2),
    ("(128,32):(32,1)", "Swizzle<2,3,3>", 2),
    ("((8,16),32):((32,256),1)", "Swizzle<3,3,3>", 2),   # tile_to_shape of the (8,32) atom, as CuTe builds it
    ("(128,64):(64,1)", "Swizzle<3,3,3>", 2),
    # sm90 GMMA K-major atoms tiled to 128 rows: Swizzle<b,4,3> on bytes (TMA modes)
    ("(128,64):(64,1)", "128B", 2),
    ("(128,32):(32,1)", "64B", 2),
    ("(128,16):(16,1)", "32B", 2),
    ("((8,16),64):((64,512),1)", "128B", 2),
    ("(64,32):(32,1)", "128B", 4),                       # tf32 K-major, 128B
    ("(64,32):(32,1)", "Swizzle<3,2,3>", 4),             # the same on element offsets
]


ACCS = ["ldmatrix.x4", "ldmatrix.x4.trans", "ldmatrix.x2", "cp.async.16", "ld.shared.v4"]
CASES = [(lay, sw, e, acc) for lay, sw, e in SWIZZLED for acc in ACCS
         if e == 2 or not acc.startswith("ldmatrix")]  # ldmatrix moves b16 matrices


@pytest.mark.parametrize("layout,sw,elem,acc", CASES)
def test_swizzled_seed_tiles_are_conflict_free(layout, sw, elem, acc):
    r = _report(layout, sw, elem, acc)
    assert r.instructions > 0
    assert r.wavefronts == r.ideal_wavefronts and r.bank_conflicts == 0, r
    # ideal = 128 distinct bytes per wavefront: .x4 and 16-B vectors 4 per instruction
    assert r.ideal_wavefronts == r.instructions * (2 if acc == "ldmatrix.x2" else 4)


def test_seed_g2s_thread_layout_128_threads():
    """Seed 001's G2S copy: 128 threads as (32,4):(4,1), 8 halves each, into Swizzle<3,3,3> o (128,32)."""
    r = _report("(128,32):(32,1)", "Swizzle<3,3,3>", 2, "cp.async.16", "(32,4):(4,1)")
    assert r.instructions == 4 * 4 and r.bank_conflicts == 0 and r.wavefronts == 4 * r.instructions


# ------------------------------------------------------------------------------- goldens: textbook
def _matrix_way(pitch_bytes: int) -> int:
    """8 rows of 16 B at `pitch_bytes`: row r sits in 16-B slot (r * pitch/16) mod 8 of the 128-B bank
    row; the rows share gcd(pitch/16 mod 8, 8) slots each, so one 8x8 matrix costs that many wavefronts."""
    return math.gcd((pitch_bytes // 16) % 8, 8)


@pytest.mark.parametrize("layout,pitch", [("(64,64):(64,1)", 128), ("(128,32):(32,1)", 64), ("(64,16):(16,1)", 32),
                                          ("(64,64):(72,1)", 144), ("(128,128):(128,1)", 256)])
@pytest.mark.parametrize("acc,n", [("ldmatrix.x4", 4), ("ldmatrix.x4.trans", 4), ("ldmatrix.x1", 1)])
def test_unswizzled_ldmatrix_textbook_conflicts(layout, pitch, acc, n):
    r = _report(layout, None, 2, acc)
    way = _matrix_way(pitch)  # 128 B -> 8-way, 64 B -> 4-way, 32 B -> 2-way, 144 B (padded) -> 1
    assert r.worst_wavefronts == n * way and r.wavefronts == r.instructions * n * way
    assert r.ideal_wavefronts == r.instructions * n
    assert r.bank_conflicts == r.instructions * n * (way - 1)


@pytest.mark.parametrize("sw,way", [("none", 8), ("32B", 4), ("64B", 2), ("128B", 1)])
def test_column_of_vectors_per_swizzle_mode(sw, way):
    """cp.async.16 / ld.shared.v4 down one column of a 128-B-pitch f16 tile (lane l -> row l): a
    quarter-warp's 8 rows share 8 / 2^b slots (b XOR bits), so each costs 8 / 2^b = `way` wavefronts."""
    for acc in ("cp.async.16", "ld.shared.v4"):
        r = _report("(32,64):(64,1)", sw, 2, acc, "(32,1):(1,0)")
        assert r.worst_wavefronts == 4 * way and r.wavefronts == r.instructions * 4 * way


@pytest.mark.parametrize("pitch_words", [32, 16, 8, 33, 36])
def test_b32_column_access_is_gcd_way(pitch_words):
    """ld.shared.b32, lane l reads row l of one column: word l * pitch; 32 lanes hit
    32 / gcd(pitch mod 32, 32) distinct banks, gcd(...) lanes per bank."""
    r = _report(f"(32,{pitch_words}):({pitch_words},1)", None, 4, "ld.shared.b32", "(32,1):(1,0)")
    way = math.gcd(pitch_words % 32, 32)
    assert r.worst_wavefronts == way and r.wavefronts == r.instructions * way


def test_trans_has_the_addresses_of_non_trans():
    t = _tile("(64,64):(64,1)", "Swizzle<2,3,3>", 2)
    a, _ = warp_addresses(t, access("ldmatrix.x4"))
    b, _ = warp_addresses(t, access("ldmatrix.x4.trans"))
    assert np.array_equal(a, b)


def test_every_element_is_moved_once():
    """The generated accesses cover the tile exactly once (a copy, not a sample)."""
    for layout, sw, acc in [("(128,32):(32,1)", "Swizzle<3,3,3>", "ldmatrix.x4"), ("(64,64):(64,1)", "128B", "cp.async.8"),
                            ("((8,8),(8,8)):((8,64),(1,512))", None, "ld.shared.v2")]:
        t = _tile(layout, sw, 2)
        a, _ = warp_addresses(t, access(acc))
        w = access(acc).width
        used = a[:, : access(acc).lanes].ravel()
        moved = np.sort((used[:, None] + np.arange(0, w, 2)[None, :]).ravel())
        assert np.array_equal(moved, np.sort(t.byte_addresses().ravel()))


# ------------------------------------------------------------------------------- the trace path
RECORDED = {p["name"]: p for r in load_records("bank_conflicts") for p in r["patterns"]}

# pattern name -> (layout, swizzle, elem bytes, access, tv, instruction index); the generators of
# validation/bank_patterns.py written as layouts
GENERATED = {}
for _m in ("none", "32B", "64B", "128B"):
    GENERATED[f"ldmatrix_x4_pitch128_sw{_m}"] = ("(8,32):(64,1)", _m, 2, "ldmatrix.x4", "(8,4):(1,8)", 0)
    GENERATED[f"stmatrix_x4_pitch128_sw{_m}"] = ("(8,32):(64,1)", _m, 2, "stmatrix.x4", "(8,4):(1,8)", 0)
    GENERATED[f"ld128_row_walk_sw{_m}"] = ("(4,64):(64,1)", _m, 2, "ld.shared.v4", None, 0)
    GENERATED[f"st128_row_walk_sw{_m}"] = ("(4,64):(64,1)", _m, 2, "st.shared.v4", None, 0)
    GENERATED[f"ld128_col_walk_sw{_m}"] = ("(32,64):(64,1)", _m, 2, "ld.shared.v4", "(32,1):(1,0)", 1)
    GENERATED[f"st128_col_walk_sw{_m}"] = ("(32,64):(64,1)", _m, 2, "st.shared.v4", "(32,1):(1,0)", 1)
    GENERATED[f"ld64_col_walk_sw{_m}"] = ("(32,32):(32,1)", _m, 4, "ld.shared.v2", "(32,1):(1,0)", 1)
    GENERATED[f"ld32_col_walk_sw{_m}"] = ("(32,32):(32,1)", _m, 4, "ld.shared.b32", "(32,1):(1,0)", 1)
for _tr in ("", "_trans"):
    _acc = "ldmatrix.x4" + _tr.replace("_", ".")
    GENERATED[f"ldmatrix_x4{_tr}_pitch128_swnone"] = ("(8,32):(64,1)", "none", 2, _acc, "(8,4):(1,8)", 0)
    GENERATED[f"ldmatrix_x4{_tr}_pitch128_rows_sw128B"] = ("(32,8):(64,1)", "128B", 2, _acc, "(32,1):(1,0)", 0)
    GENERATED[f"ldmatrix_x4{_tr}_pitch144_pad"] = ("(8,32):(72,1)", "none", 2, _acc, "(8,4):(1,8)", 0)
    GENERATED[f"ldmatrix_x4{_tr}_pitch64"] = ("(8,(8,4)):(32,(1,512))", "none", 2, _acc, "(8,4):(1,8)", 0)
    GENERATED[f"ldmatrix_x4{_tr}_pitch32"] = ("(8,(8,4)):(16,(1,256))", "none", 2, _acc, "(8,4):(1,8)", 0)
# seed 002's GEMM epilogue copy-out: 128 threads (8,16):(16,1) over a 256-B-pitch f16 tile whose 16-B
# chunk c of row r is stored at chunk c ^ (r % 8): Swizzle<3,3,4> on half offsets; instruction 4 i + warp
for _w in range(4):
    for _i in (0, 1, 15):
        GENERATED[f"epi_copyout_ld128_warp{_w}_i{_i}"] = ("(128,128):(128,1)", "Swizzle<3,3,4>", 2, "ld.shared.v4",
                                                         "(8,16):(16,1)", 4 * _i + _w)
GENERATED["epi_copyout_ld128_warp0_i0_noswizzle"] = ("(128,128):(128,1)", "none", 2, "ld.shared.v4",
                                                    "(8,16):(16,1)", 0)


def test_generated_patterns_are_recorded():
    missing = sorted(set(GENERATED) - set(RECORDED))
    assert not missing and len(GENERATED) >= 40


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_addresses_equal_the_recorded_pattern_and_its_counts(name):
    layout, sw, elem, acc, tv, idx = GENERATED[name]
    p = RECORDED[name]
    a, _ = warp_addresses(_tile(layout, sw, elem), access(acc), Layout.parse(tv) if tv else None)
    lanes = access(acc).lanes
    assert a[idx, :lanes].tolist() == p["addrs"][:lanes]
    assert p["op"] == access(acc).op
    # the counts of the generated instruction through the trace path equal what the H100 measured
    line = json.dumps({"name": name, "op": p["op"], "addrs": [int(x) for x in a[idx]][:lanes] +
                       [None] * (32 - lanes)})
    got = _trace_cli(line)
    assert (got["wavefronts"], got["bank_conflicts"]) == (p["wavefronts"], p["bank_conflicts"])


def _trace_cli(text: str) -> dict:
    old_in, old_out = sys.stdin, sys.stdout
    sys.stdin, sys.stdout = io.StringIO(text), io.StringIO()
    try:
        assert main(["bank-conflicts", "--trace", "-"]) == 0
        return json.loads(sys.stdout.getvalue().splitlines()[0])
    finally:
        sys.stdin, sys.stdout = old_in, old_out
