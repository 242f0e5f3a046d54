"""Shared-memory bank model: wavefronts and bank conflicts of one warp instruction (H100, sm_90).

Counts what Nsight Compute reports for one warp executing the instruction once:
`smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_{ld,st,ldsm,stsm}.sum` (wavefronts) and
`l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum` (bank conflicts). Checked against the H100
record validation/records/h100/bank_conflicts__h100_ncu.json (tests/validation/test_bank_truth.py).

Banks: 32 banks x 4 B; bank(addr) = (addr >> 2) & 31. A W-byte access (W = 4, 8, 16; sub-word
accesses count as their 32-bit word) covers W/4 consecutive banks, a "slot" of the 128-B bank row:

    byte address  a = | ... row ... | slot (log2(128/W) bits) | byte in unit (log2 W bits) |
    unit  = a // W          (two lanes with the same unit share data: broadcast / multicast)
    slot  = unit % (128/W)  (units in the same slot but different rows conflict)

Rule (per op): documented model (docs/hopper-facts.md §3.3/3.4) + what the H100 showed (records
validation/records/h100/bank_conflicts__h100_ncu*.json, 622 patterns, all matched):

    lanes -> groups ("phases"):   8/16/32-bit: the whole warp  (32 lanes)
                                  64-bit     : half-warps      (lanes 0-15, 16-31)
                                  128-bit    : quarter-warps   (lanes 0-7, 8-15, ...)
                                  ldmatrix/stmatrix .xN: one group per 8x8 matrix
                                                 (lanes 8j..8j+7 give its 8 16-B rows; lanes
                                                  >= 8N are ignored)
    cost(group) = max over slots of #distinct units of the group's active lanes in that slot
    wavefronts  = sum over groups of cost(group)

  H100 surprise (ld.shared.v2/.v4 only; stores, ldmatrix, stmatrix never merge): when the lanes
  are pair-uniform -- lane n has the address of lane n^1 for every n, or of lane n^2 for every n
  (inactive lanes match anything) -- two neighbouring groups merge into one of twice the lanes
  (LDS.64: the whole warp; LDS.128: half-warps). Hence a broadcast LDS.64 is 1 wavefront (not 2)
  and a broadcast LDS.128 is 2 (not 4). Nsight's two counters disagree on merged groups that
  still conflict:
    - SASS wavefronts (smsp__sass_..._wavefronts_...): merge a pair-uniform group only if the
      merged group costs 1 (LDS.128: each half-warp decided on its own)
    - hardware (l1tex__data_pipe_lsu_wavefronts / bank_conflicts): merge whenever the whole warp
      is pair-uniform (LDS.128 with one pair-uniform half: SASS 3 wavefronts, hardware 4)
  bank_conflicts = hardware wavefronts - number of (hardware) groups with an active lane.
  Example: LDS.64 with lanes alternating 0/128 (n^2-uniform): SASS 4 wavefronts, hardware 2,
  bank_conflicts 1.

Everything is numpy: `wavefronts_batch` counts millions of warp accesses per second.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from isa.errors import InputError

SMEM_BYTES = 232448  # 227 KB: largest dynamic shared memory of one CTA on the H100
NUM_BANKS = 32
BANK_BYTES = 4


@dataclass(frozen=True)
class OpSpec:
    """How one op touches the banks: access unit, lanes per conflict group, lanes that matter."""

    name: str
    cls: str  # "ld" | "st" | "ldsm" | "stsm": which Nsight wavefront counter it feeds
    width: int  # bytes per lane as the instruction reads/writes it (ldmatrix/stmatrix rows: 16)
    unit: int  # bytes of one bank-conflict unit (sub-word widths use the 32-bit word)
    group: int  # lanes per conflict group
    lanes: int  # lanes whose address is used (ldmatrix .x1 -> 8, .x2 -> 16, else 32)

    @property
    def slots(self) -> int:
        return 128 // self.unit


def _make_ops() -> dict[str, OpSpec]:
    ops: dict[str, OpSpec] = {}
    for kind in ("ld", "st"):
        for t, w in (("u8", 1), ("u16", 2), ("b32", 4), ("v2.b32", 8), ("v4.b32", 16)):
            unit = max(w, 4)
            ops[f"{kind}.shared.{t}"] = OpSpec(f"{kind}.shared.{t}", kind, w, unit, 32 * 4 // unit, 32)
    for kind, cls in (("ldmatrix", "ldsm"), ("stmatrix", "stsm")):
        for n in (1, 2, 4):
            for tr in ("", ".trans"):
                name = f"{kind}.x{n}{tr}"
                ops[name] = OpSpec(name, cls, 16, 16, 8, 8 * n)
    return ops


OPS: dict[str, OpSpec] = _make_ops()


@dataclass(frozen=True)
class BankResult:
    """Wavefronts and Nsight's bank-conflict count of one warp instruction."""

    wavefronts: int  # SASS counter smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_*
    bank_conflicts: int  # l1tex__data_bank_conflicts_pipe_lsu_mem_shared = hw_wavefronts - groups
    hw_wavefronts: int  # hardware l1tex wavefronts (differs only for conflicting pair-uniform LDS.64/128)
    groups: int  # conflict groups with an active lane, as the hardware forms them


# --------------------------------------------------------------------------------------- validation
def op_spec(op: str, where: str | None = None) -> OpSpec:
    try:
        return OPS[op]
    except (KeyError, TypeError):
        raise InputError("op", op, "one of " + ", ".join(OPS), where=where) from None


def _check_batch(spec: OpSpec, a: np.ndarray, where: str | None, row_names: Sequence[str] | None = None) -> None:
    """Raise InputError for the first misaligned / out-of-range address (inactive = -1)."""
    used = a[:, : spec.lanes]
    bad_range = ((used < -1) | (used >= SMEM_BYTES))
    bad_align = (used & (spec.width - 1)).astype(bool) & (used >= 0)
    act = used != -1
    if spec.cls in ("ld", "st") and not (bad_range.any() or bad_align.any()):
        return
    for bad, allowed in ((bad_range, f"a byte address in 0..{SMEM_BYTES - 1} or null (inactive lane)"),
                         (bad_align, f"a multiple of {spec.width} (the access width of {spec.name})")):
        if bad.any():
            r, lane = map(int, np.argwhere(bad)[0])
            w = row_names[r] if row_names is not None else where
            raise InputError(f"addrs[{lane}]", int(used[r, lane]), allowed, where=w)
    if spec.cls in ("ldsm", "stsm") and not act.all():
        r, lane = map(int, np.argwhere(~act)[0])
        w = row_names[r] if row_names is not None else where
        raise InputError(f"addrs[{lane}]", None,
                         f"{spec.name} is .sync.aligned: lanes 0..{spec.lanes - 1} must all give a row address",
                         where=w)


def to_lane_array(addrs: Sequence[int | None], op: str | OpSpec, where: str | None = None) -> np.ndarray:
    """32 addresses (None = inactive) -> int64 (32,) with -1 for inactive; validates length/types."""
    spec = op if isinstance(op, OpSpec) else op_spec(op, where)
    if isinstance(addrs, (str, bytes)) or not isinstance(addrs, Iterable):
        raise InputError("addrs", addrs, "a list of 32 byte addresses (null for an inactive lane)", where=where)
    addrs = list(addrs)
    if len(addrs) != 32:
        raise InputError("addrs", f"<{len(addrs)} addresses>", "exactly 32 addresses, one per lane", where=where)
    out = np.empty(32, dtype=np.int64)
    for i, x in enumerate(addrs):
        if x is None or i >= spec.lanes:
            out[i] = -1
        elif isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise InputError(f"addrs[{i}]", x, "an integer byte address or null", where=where)
        else:
            out[i] = int(x) if 0 <= int(x) < 2**62 else -2
            if out[i] == -2:
                raise InputError(f"addrs[{i}]", x, f"a byte address in 0..{SMEM_BYTES - 1} or null (inactive lane)",
                                 where=where)
    return out


# --------------------------------------------------------------------------------------- the model
# Sort key of one lane (int32, non-negative) for one sort per warp access:
#
#     bit  26..24   23..17   16   15..0
#        | group  | slot   | 0  | unit  |      group = lane // lanes per group, slot = unit % slots
#
# Units are < 2^16 (232448 B / 4 B), so unit 0xFFFF never occurs: an inactive lane (-1) gets
# slot = slots - 1 and unit 0xFFFF, sorts after the active lanes of its group, and is never counted.
_UNIT_MASK = 0xFFFF
_SLOT_SHIFT = 17
_GROUP_SHIFT = 7  # inside the field above _SLOT_SHIFT: slot (<= 32) fits below bit 7


def _group_costs(unit: np.ndarray, slots: int, lanes: int) -> np.ndarray:
    """(n, L) int32 units (-1 inactive) -> (L // lanes, n) cost: max over slots of distinct units.

    One sort per warp on the packed key above, then a segmented count of first occurrences:

        sorted keys  g0s0u5 g0s0u5 g0s0u9 | g0s3u3 | g1s0u1 ...   (| = new (group, slot) run)
        distinct     1      .      2      | 1      | 1
        cost(g)      = max distinct count over the runs of group g
    """
    n, L = unit.shape
    key = unit & (slots - 1)
    if L > lanes:
        key |= ((np.arange(L, dtype=np.int32) // lanes) << _GROUP_SHIFT)[None, :]
    key <<= _SLOT_SHIFT
    key |= unit & _UNIT_MASK
    key.sort(axis=1)
    k = np.ascontiguousarray(key.T)  # (L, n): per-lane steps below vectorise over the n accesses
    cnt = np.empty(k.shape, dtype=np.int8)  # first occurrence of an active unit in its run
    f = cnt.view(bool)
    f[0] = True
    np.not_equal(k[1:], k[:-1], out=f[1:])
    f &= (k & _UNIT_MASK) != _UNIT_MASK
    seg = k >> _SLOT_SHIFT
    same = np.empty(k.shape, dtype=np.int8)  # 1 where a lane continues the previous lane's run
    same[0] = 0
    np.equal(seg[1:], seg[:-1], out=same[1:].view(bool))
    # segmented running count; explicit loops over the (<= 32) lanes are vector ops over the n
    # accesses (numpy's cumsum / accumulate along the lane axis are much slower here)
    for i in range(1, L):
        cnt[i] += cnt[i - 1] * same[i]
    # the group field keeps every group's lanes in its own block of rows after the sort
    return cnt.reshape(L // lanes, lanes, n).max(axis=1).astype(np.int64)


_ONES = {1: np.uint8(1), 2: np.uint16(0x0101), 4: np.uint32(0x01010101), 8: np.uint64(0x0101010101010101)}


def _all_runs(ok: np.ndarray, run: int) -> np.ndarray:
    """(n, m) bool -> (n, m // run) bool: all of each run of `run` neighbours (read as one word)."""
    n, m = ok.shape
    if run == 16:
        w = _all_runs(ok, 8)
        return w[:, 0::2] & w[:, 1::2]
    return np.ascontiguousarray(ok).view(f"u{run}") == _ONES[run]


def _pair_verdicts(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, 32) int32 (-1 inactive) -> per lane pair, "equal or one of them inactive":
    n^1 pairs (2k, 2k+1) as (n, 16), n^2 pairs as (n, 8) per block of 4 lanes (4j,4j+2 and 4j+1,4j+3).

    The n^2 test reads two lanes at once as one uint64 (lanes 4j, 4j+1 | lanes 4j+2, 4j+3):

        x = lo ^ hi                          a 32-bit half is 0 where the two lanes are equal
        m = ((lo | hi) >> 31 & 1..1) * 2^32-1  a half is all ones where either lane is inactive
        ok = (x & ~m) == 0
    """
    lo, hi = a[:, 0::2], a[:, 1::2]
    ok1 = (lo == hi) | ((lo | hi) < 0)
    v = np.ascontiguousarray(a).view(np.uint64)  # (n, 16): lanes (2k, 2k+1)
    lo, hi = v[:, 0::2], v[:, 1::2]
    sign = ((lo | hi) >> np.uint64(31)) & np.uint64(0x0000000100000001)
    ok2 = ((lo ^ hi) & ~(sign * np.uint64(0xFFFFFFFF))) == 0
    return ok1, ok2


def _pair_uniform(a: np.ndarray, lanes_per_group: int) -> np.ndarray:
    """(n, 32) addresses -> (n, 32 // lanes_per_group) bool: inside each group, every lane n has
    the address of lane n^1 (for all n), or every lane n has the address of lane n^2 (for all n);
    an inactive lane (-1) matches anything. lanes_per_group: 4, 8, 16 or 32.

        lanes   0 1 2 3 | 4 5 6 7 | ...      n^1 pairs: (0,1) (2,3) ...   n^2 pairs: (0,2) (1,3) ...
    """
    if lanes_per_group not in (4, 8, 16, 32):
        raise ValueError(f"lanes_per_group {lanes_per_group}: 4, 8, 16 or 32")
    ok1, ok2 = _pair_verdicts(np.asarray(a).astype(np.int32, copy=False))
    return _all_runs(ok1, lanes_per_group // 2) | _all_runs(ok2, lanes_per_group // 4)


def _count(spec: OpSpec, a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(wavefronts, hardware wavefronts, hardware groups) for a validated (n, 32) batch.

    `wavefronts` is the SASS counter; bank conflicts = hardware wavefronts - hardware groups.
    The two wavefront counts differ only for pair-uniform 64/128-bit loads that still conflict.
    Per-group arrays are (groups, n): reductions over groups are vector ops over the n accesses.
    """
    a = a[:, : spec.lanes].astype(np.int32, copy=False)
    unit = a >> (spec.unit.bit_length() - 1)  # -1 stays -1 (inactive)
    g = spec.group
    base = _group_costs(unit, spec.slots, g)  # (ng, n)
    if not (spec.cls == "ld" and spec.width >= 8):
        wf = base.sum(axis=0)
        groups = np.count_nonzero(base, axis=0)
        return wf, wf, groups
    # 64/128-bit loads: neighbouring groups (half-warps of .v2, quarter pairs of .v4) merge into
    # one group of 2g lanes when the lanes are pair-uniform (n^1 or n^2).
    n = a.shape[0]
    pair_sum = base[0::2] + base[1::2]  # (merge groups, n)
    pair_groups = (base[0::2] > 0).astype(np.int64) + (base[1::2] > 0)
    ok1, ok2 = _pair_verdicts(a)
    by1 = _all_runs(ok1, g)  # (n, merge groups): n^1-uniform (LDS.128: per half-warp)
    ok_half_n = by1 | _all_runs(ok2, g // 2)
    ok_half = np.ascontiguousarray(ok_half_n.T)
    merged = pair_sum.copy()  # only evaluated (and only used) where the lanes are pair-uniform
    any_ok = ok_half.any(axis=0)
    n_ok = int(np.count_nonzero(any_ok))
    if n_ok:
        # A pair-uniform group has the distinct units of one lane per pair: rep = lo & hi, since
        # the two lanes are equal or one is -1 (all ones). n^1 pairs: lanes 2k, 2k+1; n^2 pairs:
        # 64-bit words (4j, 4j+1) & (4j+2, 4j+3). Reps G*g .. G*g+g-1 stand for merged group G.
        rows = None if n_ok == n else np.flatnonzero(any_ok)
        u = unit if rows is None else unit[rows]
        rep = u[:, 0::2] & u[:, 1::2]  # n^1 reps
        b1 = by1 if rows is None else by1[rows]
        if not b1.all():
            v = u.view(np.int64)
            rep2 = (v[:, 0::2] & v[:, 1::2]).view(np.int32)
            rep = np.where(np.repeat(b1, g, axis=1), rep, rep2)
        m = _group_costs(np.ascontiguousarray(rep), spec.slots, g)
        if rows is None:
            merged = m
        else:
            merged[:, rows] = m
    ok_sass = ok_half & (merged <= 1)  # the SASS counter merges a conflict-free pair-uniform group
    ok_hw = ok_half.all(axis=0)  # hardware: only when the whole warp is pair-uniform
    wf = np.where(ok_sass, merged, pair_sum).sum(axis=0)
    hw = np.where(ok_hw, merged, pair_sum).sum(axis=0)
    groups = np.where(ok_hw, np.count_nonzero(merged, axis=0), pair_groups.sum(axis=0))
    return wf, hw, groups


def wavefronts_batch(op: str, addrs, *, validate: bool = True, chunk: int = 1 << 13) -> tuple[np.ndarray, np.ndarray]:
    """Wavefronts and bank conflicts of `n` warp accesses of one op.

    addrs: int array (n, 32) of byte addresses, -1 for an inactive lane (lanes >= 8N of
    ldmatrix/stmatrix .xN are ignored). Returns (wavefronts, bank_conflicts), int64 arrays (n,).
    validate=False skips the address checks: the caller guarantees aligned addresses in
    0..SMEM_BYTES-1 or -1 (other input gives unspecified counts).
    """
    spec = op_spec(op)
    a = np.asarray(addrs)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] != 32:
        raise InputError("addrs", f"<array of shape {a.shape}>", "an int array of shape (n, 32)")
    if not np.issubdtype(a.dtype, np.integer):
        raise InputError("addrs", f"<array of dtype {a.dtype}>", "an integer array (-1 = inactive lane)")
    n = a.shape[0]
    wf = np.empty(n, dtype=np.int64)
    cf = np.empty(n, dtype=np.int64)
    for i in range(0, n, chunk):  # validate and count chunk by chunk: every pass stays in cache
        c = a[i:i + chunk]
        if spec.lanes < 32:
            c = c.copy()
            c[:, spec.lanes:] = -1
        if validate and (c.min() < -1 or c.max() >= SMEM_BYTES):
            _check_batch(spec, c.astype(np.int64), None)
        c = c.astype(np.int32, copy=False)
        if validate and spec.width > 1:
            low = np.count_nonzero(c[:, : spec.lanes] & (spec.width - 1))  # -1 (inactive) counts too
            # ld/st: only the inactive lanes; ldmatrix/stmatrix (.sync.aligned): none, all used lanes active
            if low != (np.count_nonzero(c == -1) if spec.cls in ("ld", "st") else 0):
                _check_batch(spec, c.astype(np.int64), None)
        w, hw, groups = _count(spec, c)
        wf[i:i + chunk] = w
        cf[i:i + chunk] = hw - groups
    return wf, cf


def wavefronts(op: str, addrs: Sequence[int | None], *, where: str | None = None) -> BankResult:
    """Wavefronts and bank conflicts of one warp instruction (addrs: 32 byte addresses, None = inactive)."""
    spec = op_spec(op, where)
    a = to_lane_array(addrs, spec, where)[None, :]
    _check_batch(spec, a, where)
    w, hw, groups = _count(spec, a)
    return BankResult(int(w[0]), int(hw[0] - groups[0]), int(hw[0]), int(groups[0]))


def bank_of(addr: int) -> int:
    """Bank of a byte address: (addr >> 2) & 31."""
    return (int(addr) >> 2) & (NUM_BANKS - 1)
