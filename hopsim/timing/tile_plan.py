"""The tile plan of a launch: each CTA's TMA-load tile keys predicted from a few sample CTAs.

The tile keys of every CTA (needed at dispatch for its hit vector, `dispatch_residency.py`) come
from a `TilePlan` (affine in %ctaid, or else translated per tensor map, see the class):
sample CTAs (0, +x, +y, +z, the last, a middle one) run functionally in zero time (timing-only
executor, `capture_tiles`), their TMA-load tile keys `(tensor map, coords)` are recorded per warp,
and each coordinate must be affine in `%ctaid`: coords(c) = coords(0) + dx*cx + dy*cy + dz*cz. The
rule is verified on the last and a middle CTA, and again on every CTA simulated in detail; if it
does not hold (a swizzled raster order, data-dependent control flow) there is no plan and every
CTA is simulated in detail. Nor is there one when a sample CTA executes a divergent branch
(functional/simt.py), and a CTA simulated in detail under the memo that diverges turns the memo off
for the launch (runner.DIVERGED): divergent kernels are simulated CTA by CTA. The ld.global lines
of a CTA are tiles of the plan too: `(GLINE, (line,))` (memory.py). Used by the CTA memo (memo.py).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from hopsim import HopsimError
from hopsim.functional.effect import Kind
from hopsim.functional.executor import CTAExecutor
from hopsim.timing.memory import GLINE, LINE, coalesce
from hopsim.timing.tile_offsets import batch_offsets


#: Issues one warp may make in one turn of the zero-time capture without blocking. A warp past it
#: is spinning (e.g. an mbarrier.test_wait poll loop, which never blocks): its turn ends, and a
#: round in which every other warp is blocked completes the oldest pending async op, as when all
#: warps are blocked. (No GEMM or memory-bound warp of the fingerprint issues this many in a row.)
SPIN_ISSUES = 4096
#: Issues of one CTA's zero-time capture in all; past it the capture stops (`CaptureLimit`): no
#: tile plan, the CTAs are simulated in detail, where the cycle caps report a livelock.
CAPTURE_ISSUES = 1 << 22


_STORES = (Kind.ST_GLOBAL, Kind.TMA_STORE)
"""Effects whose bytes `capture_tiles(stored=...)` counts as stored."""


class CaptureLimit(HopsimError):
    """A CTA's zero-time capture issued more than CAPTURE_ISSUES (a spin that nothing ends)."""


def capture_tiles(ex, stop=None, favour=None, budget: int | None = None, stored: list | None = None) -> list[list]:
    """Run one CTA executor in zero time; return its TMA-load (tile key, bytes) per warp, with
    the 128-B lines of its ld.global as tiles (GLINE, (line,)) in issue order. `stored` (a list):
    each st.global's and TMA store's bytes are appended to it (the L2 re-read rule counts them).

    Scheduling as the functional runner does it: round-robin over warps, each issues until it
    blocks; when all are blocked the oldest pending async op completes. `stop(tiles)` -> True
    ends the run early (partial capture). `favour` (a set of warps, partial captures only): the
    other warps issue one instruction each per round, and only while every favoured warp is
    blocked (e.g. to reach the bar.sync the favoured warps wait on), so their work past that point
    is not executed; a warp's values do not depend on the interleaving (and the plan is checked
    against every CTA simulated in detail). (One issue: a run of register-only ALU instructions,
    which touch nothing another warp reads, or one other.) A warp blocked on an event that has not
    fired is not asked (its issue() would change nothing). A warp that issues SPIN_ISSUES in one
    turn without blocking counts as blocked for that round (a spin-wait); more than `budget`
    issues in all raise `CaptureLimit`.
    """
    tiles: list[list] = [[] for _ in range(ex.num_warps)]
    pending: deque = deque()
    live = list(range(ex.num_warps))
    warps, ready = (ex.warps, ex.is_ready) if isinstance(ex, CTAExecutor) else (None, None)
    issued, budget = 0, CAPTURE_ISSUES if budget is None else budget
    while live:
        progressed = spun = False
        groups = (((live, False),) if favour is None else
                  (([w for w in live if w in favour], False), ([w for w in live if w not in favour], True)))
        for group, once in groups:
            for w in group:
                if warps is not None and warps[w].block is not None and not ready(warps[w].block[0]):
                    continue
                turn, spin = 0, False
                while True:
                    if turn == SPIN_ISSUES:  # a spin: the warp counts as blocked this round
                        spin = True
                        break
                    eff = ex.issue(w, 256)
                    if eff.blocked_on is not None:
                        break
                    turn += 1
                    issued += 1
                    if issued > budget:
                        raise CaptureLimit(f"CTA {getattr(ex, 'cta_linear', '?')}: the zero-time tile capture "
                                           f"issued more than {budget} instructions (a spin that nothing ends)")
                    if eff.kind == Kind.TMA_LOAD:
                        tiles[w].append((eff.tile_key, eff.gmem_bytes))
                        if stop is not None and stop(tiles):
                            return tiles
                    elif eff.kind == Kind.LD_GLOBAL and eff.gmem_ranges:  # its lines, as sm.py reads them
                        tiles[w].extend(((GLINE, (a // LINE,)), b) for a, b in coalesce(eff.gmem_ranges).items())
                    elif stored is not None and eff.kind in _STORES:
                        stored.append(sum(coalesce(eff.gmem_ranges).values()) if eff.gmem_ranges else eff.gmem_bytes)
                    if eff.complete is not None:
                        pending.append(eff)
                    if eff.kind == Kind.EXIT:
                        live.remove(w)
                        break
                    if once:
                        break
                spun = spun or spin
                progressed = progressed or (turn > 0 and not spin)
            if progressed:
                break
        if not progressed:
            if pending:
                pending.popleft().complete()
            elif not spun:
                raise ex.deadlock_error()
    while pending:
        pending.popleft().complete()
    return tiles


def _keys(make_executor, cta: int, stored: list | None = None) -> list | None:
    """A CTA's TMA tiles per warp as (handle, coords, nbytes), from a full zero-time run; None
    when a tile key is not (handle, integer coords), lanes diverged (paths may differ by CTA) or
    the run passed CAPTURE_ISSUES (`CaptureLimit`). `stored`: see `capture_tiles`."""
    ex = make_executor(cta)
    try:
        raw = capture_tiles(ex, stored=stored)
    except CaptureLimit:  # a spin nothing ends: no plan; the detailed simulation's caps report it
        return None
    if getattr(ex, "divergences", 0):  # lanes' paths may differ between CTAs: no plan, no memo
        return None
    out = []
    for row in raw:
        sp = [_split(k) for k in row]
        if any(s is None for s in sp):
            return None
        out.append(sp)
    return out


def _split(item):
    """(handle, coords, nbytes) of a (tile key, nbytes), or None when the key is not (handle, coords)."""
    key, nbytes = item
    if (isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], tuple)
            and all(isinstance(v, int) for v in key[1])):
        return key[0], key[1], nbytes
    return None


class TilePlan:
    """Prediction of each CTA's TMA tile keys from sample CTAs (see module docstring).

    mode "affine":    coords(c) = coords(0) + dx*cx + dy*cy + dz*cz, per tile.
    mode "translate": (a CTA -> tile mapping that is not affine in %ctaid, e.g. a grouped raster)
                      every tile of tensor map h issued by warp w is CTA 0's tile translated by
                      one offset per (w, h); the offsets of CTA c come from a *partial* zero-time
                      run of c up to its first TMA load of each (w, h).
    """

    def __init__(self, base: list[list], deltas: list, coords_of, mode: str = "affine", make_executor=None):
        self.base = base  # per warp: [(handle, coords, nbytes)]
        self.deltas = deltas  # per axis: per warp: [coord delta tuples]
        self.coords_of = coords_of
        self.mode = mode
        self.make_executor = make_executor
        self.cut = None  # truncated plan: (first CTA with the short rows, short row lengths per warp)
        self.stored_bytes = 0  # bytes CTA 0 stores (st.global, TMA stores): `build` sets it
        self.first = {}  # (w, handle) -> CTA 0's first coords
        for w, row in enumerate(base):
            for h, co, _ in row:
                self.first.setdefault((w, h), co)

    def _offsets(self, cta: int) -> dict:
        need = set(self.first)

        def stop(tiles):
            return all(any(k[0] == h for k, _ in tiles[w]) for w, h in need)

        got = capture_tiles(self.make_executor(cta), stop, favour={w for w, _h in need})
        off = {}
        for w, row in enumerate(got):
            for k, _ in row:
                if (w, k[0]) in self.first and (w, k[0]) not in off:
                    off[(w, k[0])] = tuple(a - b for a, b in zip(k[1], self.first[(w, k[0])]))
        return off

    def lengths(self, cta: int) -> list[int] | None:
        """Positions per warp of CTA `cta` in a truncated plan (None: all of the base rows)."""
        if self.cut is None or cta < self.cut[0]:
            return None
        return self.cut[1]

    def tiles(self, cta: int) -> list[list]:
        got = self._tiles(cta)
        cut = self.lengths(cta)
        return got if cut is None else [row[:k] for row, k in zip(got, cut)]

    def _tiles(self, cta: int) -> list[list]:
        if self.mode == "translate":
            off = self._offsets(cta) if cta else {}
            return [[(h, tuple(a + b for a, b in zip(co, off.get((w, h), (0,) * len(co)))), nb)
                     for h, co, nb in row] for w, row in enumerate(self.base)]
        c = self.coords_of(cta)
        axes = [(c[ax], self.deltas[ax]) for ax in range(3) if c[ax] and self.deltas[ax] is not None]
        if not axes:
            return [list(row) for row in self.base]
        out = []
        for w, keys in enumerate(self.base):
            ds = [(k, d[w]) for k, d in axes]
            if len(ds) == 1:
                (k1, d1), = ds
                row = [(h, tuple(a + k1 * x for a, x in zip(co, e1)), nb) for (h, co, nb), e1 in zip(keys, d1)]
            elif len(ds) == 2:
                (k1, d1), (k2, d2) = ds
                row = [(h, tuple(a + k1 * x + k2 * y for a, x, y in zip(co, e1, e2)), nb)
                       for (h, co, nb), e1, e2 in zip(keys, d1, d2)]
            else:
                (k1, d1), (k2, d2), (k3, d3) = ds
                row = [(h, tuple(a + k1 * x + k2 * y + k3 * z for a, x, y, z in zip(co, e1, e2, e3)), nb)
                       for (h, co, nb), e1, e2, e3 in zip(keys, d1, d2, d3)]
            out.append(row)
        return out

    def layout(self):
        """The plan's TMA loads flattened in warp order ("positions"): (distinct handles, handle
        index per position, bytes per position, start position of each warp (+ the end), number
        of coordinates per position), the last three as numpy arrays / a list."""
        handles: list = []
        where: dict = {}
        hidx, nbytes, ndim, starts = [], [], [], [0]
        for row in self.base:
            for h, co, nb in row:
                if h not in where:
                    where[h] = len(handles)
                    handles.append(h)
                hidx.append(where[h])
                nbytes.append(nb)
                ndim.append(len(co))
            starts.append(len(hidx))
        return (handles, np.array(hidx, dtype=np.int64), np.array(nbytes, dtype=np.int64), starts,
                np.array(ndim, dtype=np.int64))

    def coords_array(self, num_ctas: int) -> np.ndarray:
        """Coordinates of every CTA's tiles as an int64 array (num_ctas, positions, max dims), zero
        padded; the same values as `tiles(cta)` (numpy instead of a tuple per tile)."""
        flat = [co for row in self.base for _h, co, _nb in row]
        dims = max((len(co) for co in flat), default=0)
        base = np.zeros((len(flat), dims), dtype=np.int64)
        for j, co in enumerate(flat):
            base[j, :len(co)] = co
        if self.mode == "translate":
            groups = list(self.first)
            gidx = np.array([groups.index((w, h)) for w, row in enumerate(self.base) for h, _co, _nb in row],
                            dtype=np.int64)
            off = self._batch_offsets(num_ctas, groups, dims)
            if off is None:  # each CTA's own partial run
                off = np.zeros((num_ctas, len(groups), dims), dtype=np.int64)
                for cta in range(1, num_ctas):
                    for g, d in self._offsets(cta).items():
                        off[cta, groups.index(g), :len(d)] = d
            out = np.take(off, gidx, axis=1)  # a new C-ordered array (no broadcast copy first)
            out += base
            return out
        out = np.broadcast_to(base, (num_ctas, *base.shape)).copy()
        cc = np.array([self.coords_of(c) for c in range(num_ctas)], dtype=np.int64).reshape(num_ctas, 3)
        for ax in range(3):
            if self.deltas[ax] is None:
                continue
            d = np.zeros_like(base)
            for j, e in enumerate(e for row in self.deltas[ax] for e in row):
                d[j, :len(e)] = e
            out += cc[:, ax, None, None] * d[None]
        return out

    def _batch_offsets(self, num_ctas: int, groups: list, dims: int) -> np.ndarray | None:
        """Every CTA's offsets from one traced partial run (tile_offsets.py), checked also against
        the last CTA's own partial run; None when that does not apply."""
        got = batch_offsets(self, num_ctas, dims, capture_tiles)
        if got is None:
            return None
        own = np.zeros((len(groups), dims), dtype=np.int64)
        for g, d in self._offsets(num_ctas - 1).items():
            own[groups.index(g), :len(d)] = d
        return got if np.array_equal(own, got[num_ctas - 1]) else None

    def keyed(self, tiles: list) -> list:
        """A CTA's recorded (handle, coords) tiles per warp in this plan's keys (the same here;
        linear_plan.LinearTilePlan: linear box indices)."""
        return tiles

    @classmethod
    def build(cls, launch, make_executor, transform=None, also=()) -> "TilePlan | None":
        """The plan from sample CTAs; `transform(rows)` (linear_plan) rewrites each sample's
        rows into the plan's keys (None: no plan); with it, affine plans only. `also`: more CTAs
        the plan must predict (the first CTA of each control-flow class, cta_classes.py)."""
        seen: dict = {}  # a CTA's full zero-time run is the same every time: once each (the rows are not mutated)
        stored: list = []  # CTA 0's stored bytes

        def keys(cta):
            if cta not in seen:
                got = _keys(make_executor, cta, stored if cta == 0 else None)
                seen[cta] = transform(got) if transform is not None and got is not None else got
            return seen[cta]

        base = keys(0)
        if base is None or not any(base):
            return None
        plan = cls._build(base, launch, make_executor, transform, also, keys)
        if plan is not None:
            plan.stored_bytes = sum(stored)
        return plan

    @classmethod
    def _build(cls, base, launch, make_executor, transform, also, keys) -> "TilePlan | None":
        """`build` once CTA 0's rows (`base`) are known: affine, truncated or translated."""
        grid = launch.grid
        coords_of = launch.cta_coords

        def linear(x, y, z):
            return x + grid[0] * (y + grid[1] * z)

        n = launch.num_ctas
        checks = sorted({n - 1, n // 2 + 1 if n > 2 else n - 1})
        plan = cls._affine(base, grid, linear, keys, coords_of)
        # affine: checked on the last CTA here, and on every CTA simulated in detail (runner.py)
        if plan is not None:
            last = keys(n - 1)
            if last == plan.tiles(n - 1) or plan._truncate(last, n, keys):
                return plan if all(keys(c) == plan.tiles(c) for c in also) else None
        if transform is not None:
            return None
        plan = cls(base, [None, None, None], coords_of, "translate", make_executor)
        if all(keys(c) == plan.tiles(c) for c in sorted({1, *checks, *also}) if c < n):
            return plan
        return None

    def _truncate(self, last, n: int, keys) -> bool:
        """A grid-stride loop over a size that is not a multiple of the grid: the later CTAs run
        one trip fewer, so their rows are prefixes of the affine rows. When the last CTA's rows
        are such prefixes (1-D grid), find by bisection the first CTA with the short rows (the
        row lengths must step once, from CTA 0's to the last's: checked on the middle CTA here
        and on every CTA simulated in detail, runner.py)."""
        if last is None or self.deltas[1] is not None or self.deltas[2] is not None:
            return False
        full = self._tiles(n - 1)
        short = [len(r) for r in last]
        if any(len(r) > len(f) or r != f[:len(r)] for r, f in zip(last, full)) or len(last) != len(full):
            return False

        def is_short(c):
            got = keys(c)
            if got is None:
                return None
            if [len(r) for r in got] == short:
                return True
            return False if [len(r) for r in got] == [len(r) for r in self.base] else None

        lo, hi = 1, n - 1  # CTA 0 long, CTA n-1 short: the first short one is in (0, n-1]
        while lo < hi:
            mid = (lo + hi) // 2
            s = is_short(mid)
            if s is None:
                return False
            if s:
                hi = mid
            else:
                lo = mid + 1
        self.cut = (lo, short)
        mid = n // 2
        return keys(mid) == self.tiles(mid)

    @classmethod
    def _affine(cls, base, grid, linear, keys, coords_of):
        deltas = []
        for ax in range(3):
            if grid[ax] < 2:
                deltas.append(None)
                continue
            unit = [0, 0, 0]
            unit[ax] = 1
            other = keys(linear(*unit))
            d = _delta(base, other, grid[1] == grid[2] == 1)
            if d is None:
                return None
            deltas.append(d)
        return cls(base, deltas, coords_of)


def _delta(base, other, shorter: bool = False):
    """Per warp, per position: coords of `other` - coords of `base`. `shorter` (a 1-D grid):
    a row of `other` may be a prefix of the base's length (CTA 1 already makes one trip fewer,
    a truncated plan) when its deltas are all equal: the missing positions get that delta (the
    plan is checked on the sample CTAs and every CTA simulated in detail)."""
    if other is None or len(other) != len(base):
        return None
    out = []
    for rb, ro in zip(base, other):
        if len(rb) != len(ro) and not (shorter and 0 < len(ro) < len(rb)):
            return None
        row = []
        for (hb, cb, nb), (ho, co, no) in zip(rb, ro):
            if hb != ho or len(cb) != len(co) or nb != no:
                return None
            row.append(tuple(o - b for b, o in zip(cb, co)))
        if len(row) < len(rb):
            if len(set(row)) != 1:
                return None
            row += [row[0]] * (len(rb) - len(row))
        out.append(row)
    return out
