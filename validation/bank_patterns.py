"""Named warp shared-memory access patterns: the truth set measured on the H100.

    python3 -m validation.bank_patterns            # JSON Lines on stdout (warp-access-trace format)
    python3 -m validation.bank_patterns --count    # how many patterns, per op

Every pattern is `{"name", "op", "addrs"}` with 32 byte offsets (None = inactive lane), in the
format of docs/warp-access-trace.md. `patterns()` lists them in measuring priority
(the ones the issue asks for first, then wider sweeps and model-discriminating probes).

Covers: word strides 1..32 and byte strides for every width, broadcasts and multicasts for every
width, partial warps / inactive lanes, random addresses (fixed seed), the four swizzle modes on row
and column walks of a 128-B-pitch tile, ldmatrix/stmatrix x1/x2/x4 with/without .trans and
with/without swizzle, the seed GEMM epilogue (seed 002, the sm90 TMA+WGMMA GEMM the project
started from: stmatrix into an XOR-swizzled tile, then 16-byte copy-out loads) and
thread-pair-uniform LDS.64/LDS.128 cases.

Swizzles (byte address a, b = 0/1/2/3 bits for none/32B/64B/128B), CuTe Swizzle<b,4,3>:

      a:  ... | row bits [7,10) | chunk bits [4,7) | byte in chunk [0,4)
      swz(a) = a ^ (((a >> 7) & ((1 << b) - 1)) << 4)

Pure stdlib + numpy-free: runs on the GPU machine.
"""

from __future__ import annotations

import json
import random
import sys
from isa.swizzle import swizzle_address

SMEM_BYTES = 232448

LDST_WIDTH = {"u8": 1, "u16": 2, "b32": 4, "v2.b32": 8, "v4.b32": 16}
SWIZZLE_BITS = {"none": 0, "32B": 1, "64B": 2, "128B": 3}


def swizzle(addr: int, mode: str) -> int:
    """TMA/GMMA swizzle of a byte address (absolute bits [7,10) XORed into bits [4,7))."""
    try:
        return int(swizzle_address(addr, mode))
    except Exception:
        b = SWIZZLE_BITS[mode]
        return addr ^ (((addr >> 7) & ((1 << b) - 1)) << 4)


def _p(name: str, op: str, addrs, tier: int = 0, **extra) -> dict:
    addrs = [None if a is None else int(a) for a in addrs]
    assert len(addrs) == 32, name
    d = {"name": name, "op": op, "addrs": addrs, "tier": tier}
    d.update(extra)
    return d


def _lanes(f, active=None):
    return [f(l) if (active is None or active(l)) else None for l in range(32)]


def _ldst_patterns() -> list[dict]:
    out: list[dict] = []
    for kind in ("ld", "st"):
        for t, w in LDST_WIDTH.items():
            op = f"{kind}.shared.{t}"
            tag = f"{kind}{w * 8}"
            # --- strides in 32-bit words (address must stay aligned for the width)
            if w <= 4:
                words = range(1, 33) if (kind == "ld" and w == 4) else (1, 2, 3, 4, 8, 16, 17, 32)
                for k in words:
                    out.append(_p(f"{tag}_stride{k}w", op, _lanes(lambda l: l * 4 * k), 0 if k in (1, 2, 4, 32) else 1))
            else:
                ks = (1, 2, 3, 4, 5, 8, 9, 16, 17, 32) if kind == "ld" else (1, 2, 4, 8, 32)
                for k in ks:  # stride k elements of w bytes
                    out.append(_p(f"{tag}_stride{k}e", op, _lanes(lambda l: l * w * k), 0 if k in (1, 2, 32) else 1))
            # --- byte strides that keep alignment
            for s in {1: (1, 2, 3, 5, 128), 2: (2, 6, 10, 64), 4: (12, 20, 132), 8: (24, 40, 136), 16: (48, 80, 144, 272)}[w]:
                out.append(_p(f"{tag}_bstride{s}", op, _lanes(lambda l: l * s), 0 if s in (1, 2, 12, 24, 48, 272) else 1))
            # --- broadcast and multicasts
            out.append(_p(f"{tag}_broadcast", op, _lanes(lambda l: 64), 0))
            out.append(_p(f"{tag}_mcast_pairs", op, _lanes(lambda l: (l // 2) * w), 0))
            out.append(_p(f"{tag}_mcast_mod8", op, _lanes(lambda l: (l % 8) * w), 0))
            out.append(_p(f"{tag}_mcast_mod8_pitch128", op, _lanes(lambda l: (l % 8) * 128), 0))
            out.append(_p(f"{tag}_mcast_quads_pitch128", op, _lanes(lambda l: (l // 4) * 128), 1))
            out.append(_p(f"{tag}_two_words_same_bank", op, _lanes(lambda l: (l % 2) * 128), 1))
            # --- partial warps
            out.append(_p(f"{tag}_half_warp_lo", op, _lanes(lambda l: l * w, lambda l: l < 16), 0))
            out.append(_p(f"{tag}_odd_lanes", op, _lanes(lambda l: l * w, lambda l: l % 2 == 1), 1))
            out.append(_p(f"{tag}_one_lane", op, _lanes(lambda l: 4096, lambda l: l == 5), 0))
            out.append(_p(f"{tag}_stride32w_half_active", op, _lanes(lambda l: l * 128, lambda l: l % 2 == 0), 0))
            # --- random (fixed seed): anywhere, and inside 1 KB
            rng = random.Random(1000 + 17 * w + (0 if kind == "ld" else 1))
            out.append(_p(f"{tag}_random_any", op, [rng.randrange(0, SMEM_BYTES // w) * w for _ in range(32)], 0))
            out.append(_p(f"{tag}_random_1k", op, [rng.randrange(0, 1024 // w) * w for _ in range(32)], 0))
            out.append(_p(f"{tag}_random_1k_holes", op,
                          [rng.randrange(0, 1024 // w) * w if rng.random() < 0.6 else None for _ in range(32)], 1))
            out.append(_p(f"{tag}_top_of_smem", op, _lanes(lambda l: SMEM_BYTES - w * (32 - l)), 1))
    return out


def _ldst_swizzle_patterns() -> list[dict]:
    """Row and column walks of a 128-B-pitch tile (32 rows x 128 B, 1024-B aligned) per mode."""
    out = []
    for mode in SWIZZLE_BITS:
        for kind in ("ld", "st"):
            # v4: row walk (lane l -> row l//8, chunk l%8) and column walk (lane l -> row l, chunk 0)
            out.append(_p(f"{kind}128_row_walk_sw{mode}", f"{kind}.shared.v4.b32",
                          _lanes(lambda l: swizzle((l // 8) * 128 + (l % 8) * 16, mode)), 0))
            out.append(_p(f"{kind}128_col_walk_sw{mode}", f"{kind}.shared.v4.b32",
                          _lanes(lambda l: swizzle(l * 128 + 16, mode)), 0))
        # v2 and b32 column walks (loads), v2 row walk
        out.append(_p(f"ld64_col_walk_sw{mode}", "ld.shared.v2.b32", _lanes(lambda l: swizzle(l * 128 + 8, mode)), 0))
        out.append(_p(f"ld64_row_walk_sw{mode}", "ld.shared.v2.b32",
                      _lanes(lambda l: swizzle((l // 16) * 128 + (l % 16) * 8, mode)), 1))
        out.append(_p(f"ld32_col_walk_sw{mode}", "ld.shared.b32", _lanes(lambda l: swizzle(l * 128 + 4, mode)), 0))
        out.append(_p(f"ld16_col_walk_sw{mode}", "ld.shared.u16", _lanes(lambda l: swizzle(l * 128 + 2, mode)), 1))
    return out


MATRIX_OPS = [f"{k}.x{n}{t}" for k in ("ldmatrix", "stmatrix") for n in (1, 2, 4) for t in ("", ".trans")]


def _matrix_rows(n_mat: int, row_addr) -> list[int | None]:
    """Lane 8j+r gives row r of matrix j; lanes past the matrices repeat lane%8N (ignored by hw)."""
    return [row_addr(l % (8 * n_mat) // 8, l % 8) for l in range(32)]


def _matrix_patterns() -> list[dict]:
    out = []
    for op in MATRIX_OPS:
        n = int(op.split(".x")[1][0])
        tag = op.replace(".", "_")
        core = op.endswith(("x4", "x1", "x2")) or op.endswith(".trans")
        # contiguous 8x16B matrices, matrices 128 B apart
        out.append(_p(f"{tag}_contig", op, _matrix_rows(n, lambda j, r: j * 128 + r * 16), 0))
        # 128-B pitch tile (matrix j = 16-B column j), every swizzle mode
        for mode in SWIZZLE_BITS:
            out.append(_p(f"{tag}_pitch128_sw{mode}", op,
                          _matrix_rows(n, lambda j, r: swizzle(r * 128 + j * 16, mode)),
                          0 if mode in ("none", "128B") or op.endswith("x4") else 1))
        # matrices stacked in rows (matrix j = rows 8j..8j+7 of the tile, chunk 0)
        out.append(_p(f"{tag}_pitch128_rows_sw128B", op,
                      _matrix_rows(n, lambda j, r: swizzle((8 * j + r) * 128, "128B")), 0 if core else 1))
        if op.endswith("x4") or op.endswith("x4.trans"):
            out.append(_p(f"{tag}_pitch32", op, _matrix_rows(n, lambda j, r: j * 512 + r * 32), 0))
            out.append(_p(f"{tag}_pitch64", op, _matrix_rows(n, lambda j, r: j * 1024 + r * 64), 0))
            out.append(_p(f"{tag}_pitch144_pad", op, _matrix_rows(n, lambda j, r: r * 144 + j * 16), 0))
            out.append(_p(f"{tag}_broadcast", op, _matrix_rows(n, lambda j, r: 256), 0))
            out.append(_p(f"{tag}_same_matrix_x4", op, _matrix_rows(n, lambda j, r: r * 16), 0))
            out.append(_p(f"{tag}_rows_pairs_same", op, _matrix_rows(n, lambda j, r: j * 64 + (r // 2) * 16), 0))
            out.append(_p(f"{tag}_two_rows_same_bankgroup", op,
                          _matrix_rows(n, lambda j, r: j * 2048 + (r % 2) * 128 + (r // 2) * 16 + (r // 2) * 128 * 0), 1))
            rng = random.Random(77 + len(op))
            out.append(_p(f"{tag}_random_rows", op, [rng.randrange(0, 2048 // 16) * 16 for _ in range(32)], 0))
        if op.startswith("ldmatrix.x1") or op.startswith("stmatrix.x1"):
            # lanes 8..31 give conflicting addresses: hardware should ignore them
            out.append(_p(f"{tag}_upper_lanes_conflicting", op,
                          [r * 16 if l < 8 else l * 128 for l, r in ((l, l % 8) for l in range(32))], 0))
        if op.startswith("ldmatrix.x2") or op.startswith("stmatrix.x2"):
            out.append(_p(f"{tag}_upper_lanes_conflicting", op,
                          [((l // 8) * 128 + (l % 8) * 16) if l < 16 else l * 128 for l in range(32)], 0))
            # two half-matrices (4 distinct rows each, 64 B) that together fill 128 B
            out.append(_p(f"{tag}_half_rows_share_wavefront", op,
                          _matrix_rows(n, lambda j, r: j * 64 + (r % 4) * 16), 0))
    return out


def _pair_uniform_patterns() -> list[dict]:
    """Thread-pair / quad uniform addresses and cross-group merges for 64/128-bit accesses."""
    out = []
    for kind in ("ld", "st"):
        for t, w in (("v2.b32", 8), ("v4.b32", 16)):
            op = f"{kind}.shared.{t}"
            tag = f"{kind}{w * 8}"
            out.append(_p(f"{tag}_pair_uniform_xor1", op, _lanes(lambda l: (l // 2) * w), 0))
            out.append(_p(f"{tag}_pair_uniform_xor2", op, _lanes(lambda l: ((l & ~2) - (l & ~3) // 2) * w), 0))
            out.append(_p(f"{tag}_pair_uniform_xor4", op, _lanes(lambda l: ((l & ~4) - (l & ~7) // 2) * w), 0))
            out.append(_p(f"{tag}_pair_uniform_xor8", op, _lanes(lambda l: ((l & 7) + (l // 16) * 8) * w), 0))
            out.append(_p(f"{tag}_pair_uniform_xor16", op, _lanes(lambda l: (l % 16) * w), 0))
            out.append(_p(f"{tag}_quad_uniform", op, _lanes(lambda l: (l // 4) * w), 0))
            out.append(_p(f"{tag}_pair_uniform_xor1_pitch128", op, _lanes(lambda l: (l // 2) * 128), 0))
            # groups whose active lanes together fit one 128-B wavefront
            out.append(_p(f"{tag}_first_lane_of_each_group", op,
                          _lanes(lambda l: (l // (128 // w)) * w, lambda l: l % (128 // w) == 0), 0))
            out.append(_p(f"{tag}_groups_split_128B", op,
                          _lanes(lambda l: (l // (128 // w)) * 32 + (l % (128 // w)) * w,
                                 lambda l: (l % (128 // w)) * w < 32), 0))
            out.append(_p(f"{tag}_only_first_group", op, _lanes(lambda l: l * w, lambda l: l < 128 // w), 0))
            out.append(_p(f"{tag}_all_groups_same_128B", op, _lanes(lambda l: (l % (128 // w)) * w), 0))
            out.append(_p(f"{tag}_reverse_lanes", op, _lanes(lambda l: (31 - l) * w), 1))
            out.append(_p(f"{tag}_lane_permuted_within_group", op,
                          _lanes(lambda l: (l ^ 5) * w), 1))
            out.append(_p(f"{tag}_lanes_permuted_across_groups", op,
                          _lanes(lambda l: ((l * 7) % 32) * w), 0))
    return out


def _epilogue_patterns() -> list[dict]:
    """Seed GEMM epilogue (seed 002, the project's first TMA+WGMMA GEMM): bN = 128 halves, row pitch
    256 B, 128 threads.

    stmatrix.x4 (stmatrix_copy): lane l of warp w: row = l % 16, col = l / 16;
      byte = 2 * (row*128 + ((col + 2i) ^ (row % 8)) * 8 + w*16*128)  (+ 8192 halves for a4..a7)
    copy-out (float4 loads): tid = 32w + l; row_base = tid / 16, col = tid % 16;
      byte = (row_base + 8i) * 256 + (row_base ^ col) * 16
    """
    out = []
    for w in (0, 1):
        for i in range(8):
            for hi in (0, 1):
                if w == 1 and (hi or i % 2):
                    continue
                out.append(_p(f"epi_stmatrix_x4_warp{w}_i{i}{'_hi' if hi else ''}", "stmatrix.x4",
                              [2 * ((l % 16) * 128 + (((l // 16) + 2 * i) ^ ((l % 16) % 8)) * 8 + w * 16 * 128
                                    + hi * 8192) for l in range(32)], 0 if (w == 0 and hi == 0) else 1))
        # the same without the XOR (what the swizzle avoids)
        if w == 0:
            out.append(_p("epi_stmatrix_x4_warp0_i0_noswizzle", "stmatrix.x4",
                          [2 * ((l % 16) * 128 + (l // 16) * 8) for l in range(32)], 0))
    for w in range(4):
        for i in (0, 1, 15):
            out.append(_p(f"epi_copyout_ld128_warp{w}_i{i}", "ld.shared.v4.b32",
                          [((32 * w + l) // 16 + 8 * i) * 256 + (((32 * w + l) // 16) ^ ((32 * w + l) % 16)) * 16
                           for l in range(32)], 0 if w < 2 else 1))
    out.append(_p("epi_copyout_ld128_warp0_i0_noswizzle", "ld.shared.v4.b32",
                  [((l // 16) * 256 + (l % 16) * 16) for l in range(32)], 0))
    return out


def _probe_patterns() -> list[dict]:
    """Second H100 run: tell apart readings of the 64/128-bit load merge seen in the first run.

    Quad = lanes 4k..4k+3. A .v2/.v4 load's groups (half-/quarter-warps) merge in pairs when every
    quad needs at most two units; these probe: per-half vs whole-warp merging (.v4), cost per unit
    vs per 2-unit block, aligned vs unaligned blocks, (n, n^3) pairs, random quads.
    """
    out = []
    for t, w in (("v2.b32", 8), ("v4.b32", 16)):
        op = f"ld.shared.{t}"
        tag = f"ld{w * 8}"

        def quads(f, active=None):
            return _lanes(lambda l: f(l // 4, l % 4) * w, active)
        out.append(_p(f"{tag}_q_abba_pitch128", op, quads(lambda k, i: (128 // w) * (i in (1, 2))), 2))
        out.append(_p(f"{tag}_q_abba_in_block", op, quads(lambda k, i: 2 * k + (i in (1, 2))), 2))
        out.append(_p(f"{tag}_q_unaligned_block", op, quads(lambda k, i: 2 * k + 1 + (i % 2)), 2))
        out.append(_p(f"{tag}_q_uniform_two_rows", op, quads(lambda k, i: 0 if k % 4 < 2 else 2 * (128 // w) + 1), 2))
        out.append(_p(f"{tag}_q_uniform_lo_hi_slot", op, quads(lambda k, i: (k % 2) + (k // 2) * (256 // w)), 2))
        out.append(_p(f"{tag}_q7_breaks_merge", op, quads(lambda k, i: 2 * k + (i // 2) if k < 7 else 2 * k + i), 2))
        out.append(_p(f"{tag}_q0_breaks_merge", op, quads(lambda k, i: 2 * k + (i // 2) if k > 0 else i), 2))
        out.append(_p(f"{tag}_half0_pairs_half1_stride1", op,
                      _lanes(lambda l: ((l // 2) if l < 16 else 32 + l) * w), 2))
        out.append(_p(f"{tag}_half0_stride1_half1_pairs", op,
                      _lanes(lambda l: (l if l < 16 else 32 + (l // 2)) * w), 2))
        out.append(_p(f"{tag}_q_three_lanes_two_units", op, quads(lambda k, i: 2 * k + (i == 2), lambda l: l % 4 != 3), 2))
        out.append(_p(f"{tag}_q_two_units_far_pitch256", op, quads(lambda k, i: k + (i % 2) * (256 // w)), 2))
        rng = random.Random(4242 + w)
        for r in range(4):  # quads inside one aligned 2-unit block, some lanes off
            blocks = [rng.randrange(0, 2048 // (2 * w)) for _ in range(8)]
            out.append(_p(f"{tag}_rand_q_in_block_{r}", op,
                          [(2 * blocks[l // 4] + rng.randrange(2)) * w if rng.random() < 0.85 else None
                           for l in range(32)], 2))
        for r in range(4):  # quads using two arbitrary units
            pairs = [(rng.randrange(0, 2048 // w), rng.randrange(0, 2048 // w)) for _ in range(8)]
            out.append(_p(f"{tag}_rand_q_two_units_{r}", op,
                          [pairs[l // 4][rng.randrange(2)] * w for l in range(32)], 2))
    # more random addresses for every op (new seeds)
    for op in [f"{k}.shared.{t}" for k in ("ld", "st") for t in LDST_WIDTH] + MATRIX_OPS:
        w = LDST_WIDTH.get(op.split("shared.")[-1], 16)
        rng = random.Random(sum(map(ord, op)))
        for r in range(3):
            span = (512, 2048, SMEM_BYTES)[r]
            out.append(_p(f"{op.replace('.', '_')}_rand{r}_span{span}", op,
                          [rng.randrange(0, span // w) * w if (op.startswith(("ldm", "stm")) or rng.random() < 0.9)
                           else None for _ in range(32)], 2))
    return out


def patterns(max_tier: int = 2) -> list[dict]:
    """All patterns up to `max_tier`, tier 0 first (stable order), names unique."""
    allp = (_ldst_patterns() + _ldst_swizzle_patterns() + _matrix_patterns() + _pair_uniform_patterns()
            + _epilogue_patterns() + _probe_patterns())
    names = [p["name"] for p in allp]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, dup
    for p in allp:
        for a in p["addrs"]:
            assert a is None or 0 <= a < SMEM_BYTES, (p["name"], a)
    return [p for t in range(max_tier + 1) for p in allp if p["tier"] == t]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ps = patterns()
    if "--count" in argv:
        per: dict[str, int] = {}
        for p in ps:
            per[p["op"]] = per.get(p["op"], 0) + 1
        print(json.dumps({"total": len(ps), "tier0": sum(p["tier"] == 0 for p in ps), "per_op": per}, indent=1))
        return 0
    for p in ps:
        print(json.dumps(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
