"""Warp shared-memory addresses generated from a CuTe layout, a swizzle and an access's thread map,
counted by the bank model (hopsim/functional/banks.py, the rules checked against the H100's ncu).

A tile is a rank-2 CuTe layout in elements, `(rows, cols):(row stride, col stride)` (nested modes
allowed, e.g. `((8,16),(8,4)):((8,64),(1,1024))`), optionally swizzled:

    byte address of element (r, c) = base + E * sw(L(r, c))        sw = Swizzle<B,M,S> on element offsets
                                   = mode(base + E * L(r, c))      mode = TMA none/32B/64B/128B on bytes

Every lane moves one W-byte vector (W = 4/8/16 for ld/st.shared.b32/.v2/.v4 and cp.async.4/8/16;
16 = one 8x8 b16 matrix row for ldmatrix/stmatrix): V = W/E consecutive elements along the tile's
contiguous mode (the mode whose first leaf has stride 1; mode 1 if neither), which must land on W
contiguous, W-aligned bytes. The tile is cut into a grid of vectors (rows x cols/V).

A thread layout T (`--tv`, CuTe's `make_tiled_copy` thread layout) maps a vector coordinate (m, k)
of one block of T's shape to a thread index t; thread t is lane t % lanes of warp t // lanes (lanes
= 8N address-giving lanes for ldmatrix/stmatrix .xN: lane 8j+i gives row i of matrix j; 32
otherwise). The block tiles the vector grid; each (block, warp) is one warp instruction. Defaults:

    ld/st.shared, cp.async:  row-major, one warp: (32/K, K):(K, 1), K = min(vectors per row, 32)
    ldmatrix/stmatrix .x4:   (16,2):(1,16)  lane l -> row l % 16, 16-B column l / 16 (the mma
                             m16n8k16 A fragment: matrices (rows 0-7, k 0-7), (8-15, 0-7), (0-7, 8-15), ...)
            .x2: (16,1):(1,0)   .x1: (8,1):(1,0)

`.trans` changes only what lands in which register, not the addresses: same bank counts.
cp.async.W's shared-memory write is counted as st.shared of width W ([inferred]: LDGSTS writes the
same 4/8/16-byte units through the same shared-memory data path; not separately measured).

Ideal wavefronts of one instruction: ceil(distinct bytes / 128) (one 128-B bank row per wavefront),
at least 1. Conflicts: the ncu counter (l1tex__data_bank_conflicts_pipe_lsu_mem_shared) from the
model, and the excess wavefronts over the ideal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hopsim.functional.banks import SMEM_BYTES, op_spec, wavefronts_batch
from isa.errors import InputError
from isa.layout import Layout
from isa.swizzle import Swizzle, SwizzleMode, parse_swizzle

MAX_ELEMENTS = 1 << 20  # a tile of at most 2^20 elements (shared memory holds at most 232448 bytes)
ELEM_BYTES = (1, 2, 4, 8, 16)


@dataclass(frozen=True)
class Access:
    """One access kind of `--access`: the bank-model op, bytes per lane, address-giving lanes."""

    name: str
    op: str  # key of hopsim.functional.banks.OPS
    width: int  # bytes per lane (ldmatrix/stmatrix: one 16-B matrix row)
    lanes: int  # lanes that give an address (8N for ldmatrix .xN)
    matrix: bool  # ldmatrix/stmatrix (default thread layout, row addresses)


def _make_accesses() -> dict[str, Access]:
    acc: dict[str, Access] = {}
    for kind in ("ld", "st"):
        for suffix, full, w in (("b32", "b32", 4), ("v2", "v2.b32", 8), ("v4", "v4.b32", 16)):
            op = f"{kind}.shared.{full}"
            acc[f"{kind}.shared.{suffix}"] = Access(f"{kind}.shared.{suffix}", op, w, 32, False)
            acc[op] = Access(op, op, w, 32, False)
    for w, full in ((4, "b32"), (8, "v2.b32"), (16, "v4.b32")):
        acc[f"cp.async.{w}"] = Access(f"cp.async.{w}", f"st.shared.{full}", w, 32, False)
    for kind in ("ldmatrix", "stmatrix"):
        for n in (1, 2, 4):
            for tr in ("", ".trans"):
                name = f"{kind}.x{n}{tr}"
                acc[name] = Access(name, name, 16, 8 * n, True)
    return acc


ACCESSES: dict[str, Access] = _make_accesses()
ACCESS_NAMES = [n for n in ACCESSES if not n.endswith("b32") or n.endswith(".shared.b32")]  # the short spellings


def access(name: str) -> Access:
    try:
        return ACCESSES[str(name).strip()]
    except KeyError:
        raise InputError("--access", name, "one of " + ", ".join(ACCESS_NAMES)) from None


def parse_any_swizzle(text: str | None) -> Swizzle | SwizzleMode:
    """'none', '32B', '64B', '128B' (TMA modes on byte addresses) or 'Swizzle<B,M,S>' (on element offsets)."""
    if text is None:
        return SwizzleMode.NONE
    t = str(text).strip()
    if t.lower().startswith("sw"):
        return Swizzle.parse(t, field="--swizzle")
    try:
        return parse_swizzle(t, field="--swizzle")
    except InputError:
        raise InputError("--swizzle", text, "none, 32B, 64B, 128B (TMA, on byte addresses) or "
                         "Swizzle<B,M,S> (CuTe, on element offsets)") from None


def parse_layout(text: str, field: str = "--layout") -> Layout:
    """A rank-2 CuTe layout of at most MAX_ELEMENTS elements."""
    if len(str(text)) > 400:
        raise InputError(field, str(text)[:40] + "...", "a CuTe layout of at most 400 characters")
    try:
        lay = Layout.parse(str(text))
    except InputError as exc:
        raise InputError(field, text, exc.allowed) from None
    if lay.rank != 2:
        raise InputError(field, text, "a rank-2 layout (rows, cols):(row stride, col stride), modes may nest")
    if lay.size > MAX_ELEMENTS:
        raise InputError(field, text, f"at most {MAX_ELEMENTS} elements (it has {lay.size})")
    if any(d < 0 for _, d in lay.flat()):
        raise InputError(field, text, "non-negative strides")
    return lay


@dataclass(frozen=True)
class Tile:
    """A swizzled tile in shared memory: element (r, c) -> byte address (module docstring)."""

    layout: Layout
    swizzle: Swizzle | SwizzleMode
    elem_bytes: int
    base: int = 0

    def __post_init__(self) -> None:
        if self.elem_bytes not in ELEM_BYTES:
            raise InputError("--elem-bytes", self.elem_bytes, "1, 2, 4, 8 or 16 (bytes per element)")
        if not 0 <= self.base < SMEM_BYTES or self.base % 16:
            raise InputError("--base", self.base, f"a multiple of 16 in 0..{SMEM_BYTES - 16}")
        top = self.base + self.elem_bytes * self._offsets_cosize()
        if top > SMEM_BYTES:
            raise InputError("--layout", str(self.layout), f"a tile inside shared memory: base + elem-bytes x "
                             f"cosize = {top} bytes, at most {SMEM_BYTES} (227 KB)")

    def _offsets_cosize(self) -> int:
        cos = self.layout.cosize
        if isinstance(self.swizzle, Swizzle) and self.swizzle.B:
            atom = 1 << (self.swizzle.M + max(self.swizzle.S, 0) + self.swizzle.B)
            cos = -(-cos // atom) * atom  # a swizzle moves offsets inside their atom
        return cos

    @property
    def vec_mode(self) -> int:
        """The contiguous mode (first leaf stride 1), 1 when neither or both."""
        m0 = self.layout.mode(0).flat()[0][1] == 1
        m1 = self.layout.mode(1).flat()[0][1] == 1
        return 0 if (m0 and not m1) else 1

    def shape2(self) -> tuple[int, int]:
        """(rows, cols) with cols the contiguous mode."""
        s0, s1 = self.layout.mode(0).size, self.layout.mode(1).size
        return (s1, s0) if self.vec_mode == 0 else (s0, s1)

    def byte_addresses(self) -> np.ndarray:
        """int64 (rows, cols): byte address of each element, cols along the contiguous mode."""
        lay = self.layout
        n0, n1 = lay.mode(0).size, lay.mode(1).size
        o0 = np.array([lay.mode(0)(i) for i in range(n0)], dtype=np.int64)
        o1 = np.array([lay.mode(1)(i) for i in range(n1)], dtype=np.int64)
        off = o0[:, None] + o1[None, :]
        if self.vec_mode == 0:
            off = off.T
        if isinstance(self.swizzle, Swizzle):
            return self.base + self.elem_bytes * self.swizzle(off)
        return self.swizzle.apply(self.base + self.elem_bytes * off)

    def describe(self) -> str:
        sw = self.swizzle if isinstance(self.swizzle, Swizzle) else f"{self.swizzle.label} ({self.swizzle.cute} on bytes)"
        return f"{sw} o {self.layout}, {self.elem_bytes}-byte elements, base {self.base}"


def default_tv(acc: Access, vec_cols: int) -> Layout:
    """The documented default thread layout (module docstring)."""
    if acc.matrix:
        n = acc.lanes // 8
        return Layout((16, 2), (1, 16)) if n == 4 else Layout((8 * n, 1), (1, 0))
    k = min(vec_cols, 32)
    if 32 % k:
        raise InputError("--tv", None, f"given explicitly: the tile has {vec_cols} vectors per row, which does not "
                         "divide 32 lanes (e.g. --tv '(4,8):(8,1)')")
    return Layout((32 // k, k), (k, 1))


def _check_tv(tv: Layout, acc: Access, rows: int, vcols: int) -> tuple[int, int]:
    if tv.rank != 2:
        raise InputError("--tv", str(tv), "a rank-2 thread layout (rows, vectors):(strides) -> thread index")
    tm, tk = tv.mode(0).size, tv.mode(1).size
    n = tv.size
    if n > 1024:
        raise InputError("--tv", str(tv), f"a thread layout of at most 1024 threads (one CTA; it has {n})")
    if n % acc.lanes:
        raise InputError("--tv", str(tv), f"a thread layout of a multiple of {acc.lanes} threads for {acc.name} "
                         f"(it has {n})")
    if sorted(tv(i) for i in range(n)) != list(range(n)):
        raise InputError("--tv", str(tv), f"a bijection onto thread indices 0..{n - 1}")
    if rows % tm or vcols % tk:
        raise InputError("--tv", str(tv), f"a block of ({tm} rows, {tk} vectors) that tiles the tile's "
                         f"{rows} rows x {vcols} vectors of {acc.width} B")
    return tm, tk


def warp_addresses(tile: Tile, acc: Access, tv: Layout | None = None) -> tuple[np.ndarray, Layout]:
    """(n, 32) int64 byte addresses of every warp instruction (lanes past acc.lanes = -1), and the
    thread layout used. Raises InputError for a layout/access mismatch."""
    e, w = tile.elem_bytes, acc.width
    if e > w:
        raise InputError("--elem-bytes", e, f"at most the {w}-byte access of {acc.name}")
    v = w // e
    rows, cols = tile.shape2()
    if cols % v:
        raise InputError("--layout", str(tile.layout), f"a contiguous mode of a multiple of {v} elements "
                         f"({acc.name} moves {w} B = {v} x {e}-byte elements per lane; it has {cols})")
    vcols = cols // v
    tv = tv if tv is not None else default_tv(acc, vcols)
    tm, tk = _check_tv(tv, acc, rows, vcols)
    addr = tile.byte_addresses().reshape(rows, vcols, v)
    first = addr[..., 0]
    bad = (addr != first[..., None] + e * np.arange(v)).any(axis=-1) | (first % w != 0)
    if bad.any():
        r, k = map(int, np.argwhere(bad)[0])
        raise InputError("--layout", str(tile.layout), f"{w} contiguous, {w}-byte aligned bytes per lane for "
                         f"{acc.name}: row {r}, elements {k * v}..{k * v + v - 1} are at bytes "
                         f"{addr[r, k].tolist()}")
    # thread t of block (i, j) -> vector (i*tm + m, j*tk + k) with tv(m, k) = t
    m_of = np.empty(tv.size, dtype=np.int64)
    k_of = np.empty(tv.size, dtype=np.int64)
    for m in range(tm):
        for k in range(tk):
            t = tv(m, k)
            m_of[t], k_of[t] = m, k
    bi = np.arange(rows // tm)[:, None, None] * tm
    bj = np.arange(vcols // tk)[None, :, None] * tk
    a = first[bi + m_of[None, None, :], bj + k_of[None, None, :]]  # (blocks_i, blocks_j, threads)
    a = a.reshape(-1, acc.lanes)  # block by block, the warps of a block in thread order
    out = np.full((a.shape[0], 32), -1, dtype=np.int64)
    out[:, : acc.lanes] = a
    return out, tv


@dataclass(frozen=True)
class AccessReport:
    """Counts of every warp instruction of one access over the tile."""

    access: str
    op: str
    tv: str
    instructions: int
    wavefronts: int
    ideal_wavefronts: int
    bank_conflicts: int  # ncu's l1tex__data_bank_conflicts_pipe_lsu_mem_shared, summed
    worst_wavefronts: int  # of one instruction
    worst_ideal: int
    conflicting_instructions: int
    worst_addrs: tuple  # the first instruction with the most excess wavefronts

    @property
    def excess(self) -> int:
        return self.wavefronts - self.ideal_wavefronts

    def to_json(self) -> dict:
        d = {k: getattr(self, k) for k in ("access", "op", "tv", "instructions", "wavefronts", "ideal_wavefronts",
                                           "bank_conflicts", "conflicting_instructions", "worst_wavefronts",
                                           "worst_ideal")}
        d["excess_wavefronts"] = self.excess
        d["worst_addrs"] = [None if x < 0 else x for x in self.worst_addrs]
        return d


def ideal_wavefronts(acc: Access, addrs: np.ndarray) -> np.ndarray:
    """ceil(distinct bytes / 128), at least 1, per instruction (units of max(W, 4) bytes)."""
    spec = op_spec(acc.op)
    a = np.sort(addrs[:, : acc.lanes] // spec.unit, axis=1)
    distinct = 1 + (np.diff(a, axis=1) != 0).sum(axis=1)
    return np.maximum(1, -(-distinct * spec.unit // 128))


def count(tile: Tile, acc: Access, tv: Layout | None = None) -> AccessReport:
    addrs, tv = warp_addresses(tile, acc, tv)
    wf, bc = wavefronts_batch(acc.op, addrs)
    ideal = ideal_wavefronts(acc, addrs)
    ex = wf - ideal
    worst = int(np.argmax(ex)) if ex.max() > 0 else int(np.argmax(wf))
    return AccessReport(acc.name, acc.op, str(tv), int(len(wf)), int(wf.sum()), int(ideal.sum()), int(bc.sum()),
                        int(wf[worst]), int(ideal[worst]), int((ex > 0).sum()), tuple(int(x) for x in addrs[worst]))
