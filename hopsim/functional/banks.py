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

Rule (per op): documented model (hopper-facts §3.3/3.4) + what the H100 showed (records
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
_INACTIVE_KEY = np.int32(127 << 17)  # slot field 127 (no real slot): an inactive lane


def _group_costs(unit: np.ndarray, slots: int, lanes: int) -> np.ndarray:
    """(n, L) units (-1 inactive) -> (n, L // lanes) cost: max over slots of distinct units.

    One sort per warp on a packed int32 key, then a segmented count of first occurrences:

        key = | group (lane // lanes) : 6 bits | slot : 7 bits | unit : 17 bits |
              (an inactive lane: slot = 127, so it sorts last inside its own group)
        sorted keys  g0s0u5 g0s0u5 g0s0u9 | g0s3u3 | g1s0u1 ...   (| = new (group, slot) run)
        distinct     1      .      2      | 1      | 1
        cost(g)      = max distinct count over the runs of group g
    """
    n, L = unit.shape
    ng = L // lanes
    gid = ((np.arange(L, dtype=np.int32) // lanes) << 24)[None, :]
    u = unit.astype(np.int32, copy=False)
    key = ((u & (slots - 1)) << 17) | u
    key[u < 0] = _INACTIVE_KEY  # slot field 127: sorts after the group's active lanes
    key |= gid
    k = np.ascontiguousarray(np.sort(key, axis=1).T)  # (L, n): per-lane steps vectorise over n
    valid = (k & _INACTIVE_KEY) != _INACTIVE_KEY
    first = np.empty(k.shape, dtype=bool)
    first[0] = valid[0]
    np.logical_and(k[1:] != k[:-1], valid[1:], out=first[1:])
    seg = k >> 17
    start = np.empty(k.shape, dtype=bool)
    start[0] = True
    np.not_equal(seg[1:], seg[:-1], out=start[1:])
    # segmented count of first occurrences; explicit loops over the (<= 32) lanes are vector ops
    # over the n accesses (numpy's cumsum / accumulate along axis 0 are much slower here)
    cnt = first.astype(np.int8)
    for i in range(1, k.shape[0]):
        np.add(cnt[i], cnt[i - 1] * ~start[i], out=cnt[i])
    # the group field keeps every group's lanes in its own block of rows after the sort
    return cnt.reshape(ng, lanes, n).max(axis=1).T.astype(np.int64)


def _pair_uniform(a: np.ndarray, lanes_per_group: int) -> np.ndarray:
    """(n, 32) addresses -> (n, 32 // lanes_per_group) bool: inside each group, every lane n has
    the address of lane n^1 (for all n), or every lane n has the address of lane n^2 (for all n);
    an inactive lane matches anything.

        lanes   0 1 2 3 | 4 5 6 7 | ...      n^1 pairs: (0,1) (2,3) ...   n^2 pairs: (0,2) (1,3) ...
    """
    n = a.shape[0]
    t = np.ascontiguousarray(a.T)  # (32, n): each step below is one vector op over the n accesses
    ng = 32 // lanes_per_group
    out = np.empty((n, ng), dtype=bool)
    for g in range(ng):
        ok = []
        for x in (1, 2):
            acc = np.ones(n, dtype=bool)
            for lane in range(g * lanes_per_group, (g + 1) * lanes_per_group):
                if lane & x:
                    continue
                lo, hi = t[lane], t[lane ^ x]
                acc &= (lo == hi) | (np.minimum(lo, hi) < 0)
            ok.append(acc)
        out[:, g] = ok[0] | ok[1]
    return out


def _count(spec: OpSpec, a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(wavefronts, hardware wavefronts, hardware groups) for a validated (n, 32) batch.

    `wavefronts` is the SASS counter; bank conflicts = hardware wavefronts - hardware groups.
    The two wavefront counts differ only for pair-uniform 64/128-bit loads that still conflict.
    """
    n = a.shape[0]
    a = a[:, : spec.lanes].astype(np.int32, copy=False)
    unit = a >> (spec.unit.bit_length() - 1)  # -1 stays -1 (inactive)
    g = spec.group
    base = _group_costs(unit, spec.slots, g)  # (n, ng)
    if not (spec.cls == "ld" and spec.width >= 8):
        wf = base.sum(axis=1)
        groups = (base > 0).sum(axis=1)
        return wf, wf, groups
    # 64/128-bit loads: neighbouring groups (half-warps of .v2, quarter pairs of .v4) merge into
    # one group of 2g lanes when the lanes are pair-uniform (n^1 or n^2).
    pair_sum = base.reshape(n, -1, 2).sum(axis=2)
    pair_groups = (base > 0).reshape(n, -1, 2).sum(axis=2)
    ok_half = _pair_uniform(a, 2 * g)  # per merged group (LDS.128: per half-warp)
    merged = pair_sum.copy()  # only evaluated (and only used) where the lanes are pair-uniform
    rows = np.flatnonzero(ok_half.any(axis=1))
    if rows.size:
        merged[rows] = _group_costs(unit[rows], spec.slots, 2 * g)
    ok_sass = ok_half & (merged <= 1)  # the SASS counter merges a conflict-free pair-uniform group
    ok_hw = np.broadcast_to(ok_half.all(axis=1, keepdims=True), ok_half.shape)  # hw: whole warp
    wf = np.where(ok_sass, merged, pair_sum).sum(axis=1)
    hw = np.where(ok_hw, merged, pair_sum).sum(axis=1)
    groups = np.where(ok_hw, (merged > 0).astype(np.int64), pair_groups).sum(axis=1)
    return wf, hw, groups


def wavefronts_batch(op: str, addrs, *, validate: bool = True, chunk: int = 1 << 14) -> tuple[np.ndarray, np.ndarray]:
    """Wavefronts and bank conflicts of `n` warp accesses of one op.

    addrs: int array (n, 32) of byte addresses, -1 for an inactive lane (lanes >= 8N of
    ldmatrix/stmatrix .xN are ignored). Returns (wavefronts, bank_conflicts), int64 arrays (n,).
    """
    spec = op_spec(op)
    a = np.asarray(addrs)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] != 32:
        raise InputError("addrs", f"<array of shape {a.shape}>", "an int array of shape (n, 32)")
    if not np.issubdtype(a.dtype, np.integer):
        raise InputError("addrs", f"<array of dtype {a.dtype}>", "an integer array (-1 = inactive lane)")
    if spec.lanes < 32:
        a = a.copy()
        a[:, spec.lanes:] = -1
    if validate and a.size and (a.min() < -1 or a.max() >= SMEM_BYTES):
        _check_batch(spec, a.astype(np.int64), None)
    a = a.astype(np.int32, copy=False)
    if validate and a.size and (spec.cls in ("ldsm", "stsm") or (
            spec.width > 1 and np.count_nonzero(a & (spec.width - 1)) != np.count_nonzero(a == -1))):
        _check_batch(spec, a.astype(np.int64), None)
    n = a.shape[0]
    wf = np.empty(n, dtype=np.int64)
    cf = np.empty(n, dtype=np.int64)
    for i in range(0, n, chunk):
        w, hw, groups = _count(spec, a[i:i + chunk])
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
