"""CTA memoisation for large grids: simulate each *class* of CTA once, replay the others.

Why it is exact (in the partitioned memory mode, `memory.SmLink`): with one CTA per SM, per-SM
bandwidth links, and L2 residency decided when the CTA is dispatched, a CTA's cycles, counters
and the state it leaves on its SM's pipes are a function of (its instruction stream, its L2
hit/miss vector, the work still queued on its SM's pipes when it starts) only. Two CTAs of the same kernel whose streams differ only in the TMA box
coordinates (a GEMM: every CTA runs the same loop on other tiles) and whose hit vectors are equal
therefore take the same cycles. The memo key is (hit vector, SM pipe state at start); the value is
the CTA's duration, its counter deltas and the pipe state it leaves (replayed onto the SM). tests/timing/test_memo.py checks memo=True == memo=False (same mode).

The tile keys of every CTA (needed at dispatch for its hit vector) come from a `TilePlan`
(affine in %ctaid, or else translated per tensor map, see the class):
sample CTAs (0, +x, +y, +z, the last, a middle one) run functionally in zero time (timing-only
executor), their TMA-load tile keys `(tensor map, coords)` are recorded per warp, and each
coordinate must be affine in `%ctaid`: coords(c) = coords(0) + dx*cx + dy*cy + dz*cz. The rule is
verified on the last and a middle CTA, and again on every CTA simulated in detail; if it does
not hold (a swizzled raster order, data-dependent control flow) there is no plan and every CTA
is simulated in detail. Nor is there one when a sample CTA executes a divergent branch
(functional/simt.py), and a CTA simulated in detail under the memo that diverges turns the memo off
for the launch (runner.DIVERGED): divergent kernels are simulated CTA by CTA.
"""

from __future__ import annotations

import copy
from collections import deque

import numpy as np

from hopsim.functional.effect import Kind
from hopsim.functional.executor import CTAExecutor
from hopsim.timing.memory import GLINE, LINE, SmLink, coalesce


def capture_tiles(ex, stop=None, favour=None) -> list[list]:
    """Run one CTA executor in zero time; return its TMA-load (tile key, bytes) per warp, with
    the 128-B lines of its ld.global as tiles (GLINE, (line,)) in issue order.

    Scheduling as the functional runner does it: round-robin over warps, each issues until it
    blocks; when all are blocked the oldest pending async op completes. `stop(tiles)` -> True
    ends the run early (partial capture). `favour` (a set of warps, partial captures only): the
    other warps issue one instruction each per round, and only while every favoured warp is
    blocked (e.g. to reach the bar.sync the favoured warps wait on), so their work past that point
    is not executed; a warp's values do not depend on the interleaving (and the plan is checked
    against every CTA simulated in detail). (One issue: a run of register-only ALU instructions,
    which touch nothing another warp reads, or one other.) A warp blocked on an event that has not
    fired is not asked (its issue() would change nothing).
    """
    tiles: list[list] = [[] for _ in range(ex.num_warps)]
    pending: deque = deque()
    live = list(range(ex.num_warps))
    warps, ready = (ex.warps, ex.is_ready) if isinstance(ex, CTAExecutor) else (None, None)
    while live:
        progressed = False
        groups = (((live, False),) if favour is None else
                  (([w for w in live if w in favour], False), ([w for w in live if w not in favour], True)))
        for group, once in groups:
            for w in group:
                if warps is not None and warps[w].block is not None and not ready(warps[w].block[0]):
                    continue
                while True:
                    eff = ex.issue(w, 256)
                    if eff.blocked_on is not None:
                        break
                    progressed = True
                    if eff.kind == Kind.TMA_LOAD:
                        tiles[w].append((eff.tile_key, eff.gmem_bytes))
                        if stop is not None and stop(tiles):
                            return tiles
                    elif eff.kind == Kind.LD_GLOBAL and eff.gmem_ranges:  # its lines, as sm.py reads them
                        tiles[w].extend(((GLINE, (a // LINE,)), b) for a, b in coalesce(eff.gmem_ranges).items())
                    if eff.complete is not None:
                        pending.append(eff)
                    if eff.kind == Kind.EXIT:
                        live.remove(w)
                        break
                    if once:
                        break
            if progressed:
                break
        if not progressed:
            if not pending:
                raise ex.deadlock_error()
            pending.popleft().complete()
    while pending:
        pending.popleft().complete()
    return tiles


def _keys(make_executor, cta: int) -> list | None:
    """A CTA's TMA tiles per warp as (handle, coords, nbytes), from a full zero-time run; None
    when a tile key is not (handle, integer coords) or lanes diverged (paths may differ by CTA)."""
    ex = make_executor(cta)
    raw = capture_tiles(ex)
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
        out = np.broadcast_to(base, (num_ctas, *base.shape)).copy()
        if self.mode == "translate":
            groups = list(self.first)
            gidx = np.array([groups.index((w, h)) for w, row in enumerate(self.base) for h, _co, _nb in row],
                            dtype=np.int64)
            off = np.zeros((num_ctas, len(groups), dims), dtype=np.int64)
            for cta in range(1, num_ctas):
                for g, d in self._offsets(cta).items():
                    off[cta, groups.index(g), :len(d)] = d
            if len(flat):
                out += off[:, gidx, :]
            return out
        cc = np.array([self.coords_of(c) for c in range(num_ctas)], dtype=np.int64).reshape(num_ctas, 3)
        for ax in range(3):
            if self.deltas[ax] is None:
                continue
            d = np.zeros_like(base)
            for j, e in enumerate(e for row in self.deltas[ax] for e in row):
                d[j, :len(e)] = e
            out += cc[:, ax, None, None] * d[None]
        return out

    def keyed(self, tiles: list) -> list:
        """A CTA's recorded (handle, coords) tiles per warp in this plan's keys (the same here;
        linear_plan.LinearTilePlan: linear box indices)."""
        return tiles

    @classmethod
    def build(cls, launch, make_executor, transform=None) -> "TilePlan | None":
        """The plan from sample CTAs; `transform(rows)` (linear_plan) rewrites each sample's
        rows into the plan's keys (None: no plan); with it, affine plans only."""
        grid = launch.grid
        coords_of = launch.cta_coords

        def linear(x, y, z):
            return x + grid[0] * (y + grid[1] * z)

        seen: dict = {}  # a CTA's full zero-time run is the same every time: once each (the rows are not mutated)

        def keys(cta):
            if cta not in seen:
                got = _keys(make_executor, cta)
                seen[cta] = transform(got) if transform is not None and got is not None else got
            return seen[cta]

        base = keys(0)
        if base is None or not any(base):
            return None
        n = launch.num_ctas
        checks = sorted({n - 1, n // 2 + 1 if n > 2 else n - 1})
        plan = cls._affine(base, grid, linear, keys, coords_of)
        # affine: checked on the last CTA here, and on every CTA simulated in detail (runner.py)
        if plan is not None:
            last = keys(n - 1)
            if last == plan.tiles(n - 1):
                return plan
            if plan._truncate(last, n, keys):
                return plan
        if transform is not None:
            return None
        plan = cls(base, [None, None, None], coords_of, "translate", make_executor)
        if all(keys(c) == plan.tiles(c) for c in sorted({1, *checks}) if c < n):
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


# ------------------------------------------------------------------------------- SM link
class PartitionedLink(SmLink):
    """An SM's link in the partitioned mode: stores do not allocate in the L2 residency.

    In the partitioned mode the L2 residency is decided at dispatch from the CTAs' TMA-load tiles
    (`DispatchResidency`, in linear CTA order), so it does not depend on timing; a store inserting
    its lines when it happens would make the residency (and the hit vectors of later CTAs) depend
    on the interleaving of all SMs, which no memo could replay. Stores still cost their L2 link
    time and count their bytes. `lookups` counts reads whose residency is looked up at request
    time (ld.global): the SM-level memo refuses kernels that do any (smclass.NotMemoisable).
    """

    lookups = 0
    allocates = False  # MemorySystem.write: a store does not enter the residency

    def read(self, arrival: float, key, nbytes: int, hit=None, *args, **kw):
        if hit is None:
            self.lookups += 1
        return super().read(arrival, key, nbytes, hit, *args, **kw)


# ------------------------------------------------------------------------------- SM counters
def sm_counters(sm) -> dict:
    """The additive counters of one SM (and its memory link) — snapshot for memo deltas."""
    link = sm.memory
    return {
        "sched": [p.busy for p in sm.sched.pipes], "smem_busy": sm.smem.pipe.busy,
        "smem_wf": sm.smem.wavefronts, "smem_ideal": sm.smem.ideal_wavefronts, "smem_acc": sm.smem.accesses,
        "tensor_busy": sm.tensor.pipe.busy, "flops": sm.tensor.flops, "tensor_ops": sm.tensor.instructions,
        "operand_bytes": sm.tensor.operand_bytes, "port_slowed": sm.smem.slowed,
        "tma_issue": sm.tma.issue_pipe.busy, "tma_fill": sm.tma.fill_pipe.busy, "boxes": sm.tma.boxes,
        "tma_ld": sm.tma.bytes_loaded, "tma_st": sm.tma.bytes_stored,
        "l2_busy": link.l2_pipe.busy, "hbm_busy": link.hbm_pipe.busy,
        "from_l2": link.bytes_from_l2, "from_hbm": link.bytes_from_hbm, "to_l2": link.bytes_to_l2,
        "to_hbm": link.bytes_to_hbm, "gst_busy": sm.gst.busy, "g_req": sm.gmem_requests, "g_sec": sm.gmem_sectors,
    }


def counter_delta(after: dict, before: dict) -> dict:
    return {k: ([a - b for a, b in zip(v, before[k])] if isinstance(v, list) else v - before[k])
            for k, v in after.items()}


def add_counters(sm, d: dict) -> None:
    """Replay a memoised CTA's counters on `sm`."""
    for p, b in zip(sm.sched.pipes, d["sched"]):
        p.busy += b
    sm.smem.pipe.busy += d["smem_busy"]
    sm.smem.wavefronts += d["smem_wf"]
    sm.smem.ideal_wavefronts += d["smem_ideal"]
    sm.smem.accesses += d["smem_acc"]
    sm.tensor.pipe.busy += d["tensor_busy"]
    sm.tensor.flops += d["flops"]
    sm.tensor.instructions += d["tensor_ops"]
    sm.tensor.operand_bytes += d["operand_bytes"]
    sm.smem.slowed += d["port_slowed"]
    sm.tma.issue_pipe.busy += d["tma_issue"]
    sm.tma.fill_pipe.busy += d["tma_fill"]
    sm.tma.boxes += d["boxes"]
    sm.tma.bytes_loaded += d["tma_ld"]
    sm.tma.bytes_stored += d["tma_st"]
    link = sm.memory
    link.l2_pipe.busy += d["l2_busy"]
    link.hbm_pipe.busy += d["hbm_busy"]
    link.bytes_from_l2 += d["from_l2"]
    link.bytes_from_hbm += d["from_hbm"]
    link.bytes_to_l2 += d["to_l2"]
    link.bytes_to_hbm += d["to_hbm"]
    sm.gst.busy += d["gst_busy"]
    sm.gmem_requests += d["g_req"]
    sm.gmem_sectors += d["g_sec"]


def _pipes(sm) -> list:
    return [*sm.sched.pipes, sm.smem.pipe, sm.tensor.pipe, sm.tma.issue_pipe, sm.tma.fill_pipe,
            sm.memory.l2_pipe, sm.memory.hbm_pipe, sm.gst, *sm.mufu, *sm.shfl]


def sm_state(sm, now: float) -> tuple:
    """The SM's units as a CTA starting at `now` sees them: work still queued on each pipe, in
    cycles after `now` (exact: pipes.QUANTUM). Part of the memo key."""
    return (tuple(p.next_free - now if p.next_free > now else 0.0 for p in _pipes(sm))
            + sm.gld.state(now) + (sm.memory.wb_debt,) + sm.tma.port_state(now))


def sm_residue(sm, start: float) -> tuple:
    """Each pipe's queue tail relative to a CTA's start (recorded when it ends)."""
    return tuple(p.next_free - start for p in _pipes(sm)) + (sm.memory.wb_debt,)


def apply_residue(sm, start: float, residue: tuple) -> None:
    """Leave the SM's pipes as the memoised CTA left them."""
    for p, r in zip(_pipes(sm), residue):
        if start + r > p.next_free:
            p.next_free = start + r
    sm.memory.wb_debt = residue[-1]  # the dirty bytes the CTA left (its key held those it found)


# ------------------------------------------------------------------------------- dispatch-time L2
class CtaHits:
    """One CTA's L2 decisions, per TMA load in warp order: `of(w, i)` -> (hit, share of the fetch or
    L2 read); `key` (bytes) is equal for two CTAs exactly when their (hit, share) vectors are."""

    __slots__ = ("hit", "share", "starts", "key", "_lists")

    def __init__(self, hit: np.ndarray, share: np.ndarray, starts: list):
        self.hit, self.share, self.starts = hit, share, starts
        self.key = hit.tobytes() + share.tobytes()
        self._lists = None

    def of(self, w: int, i: int) -> tuple:
        if self._lists is None:
            self._lists = (self.hit.tolist(), self.share.tolist())
        j = self.starts[w] + i
        return self._lists[0][j], self._lists[1][j]


class DispatchResidency:
    """L2 hit/miss of a CTA's TMA tiles decided when it is dispatched (partitioned mode).

    For tile T read by CTA c (dispatch order = linear CTA order):
      - not resident: a miss; c opens T's fetch window [c, c + slots) (slots = num_sms *
        ctas_per_sm, one wave): the CTAs of that window that read T (r of them, from the plan)
        fetch it together, each moving bytes / r over its own HBM link and paying the miss latency
        (MSHR merging, as the shared mode's ready times do);
      - resident and c inside T's fetch window: the same merged miss (bytes / r);
      - resident otherwise: a hit, read at about the same time by the r readers of T in its share
        window [c, c + slots) (opened by the first reader after the previous window): the L2
        reads the bytes once for them (share 1/r of the L2 read bandwidth) and delivers them to
        each SM (`MemorySystem._l2_service`);
      - read again by the warp that read it before (a row kernel's second pass): the first read
        has completed (the warp's later reads depend on it), so it is not part of that fetch: a
        hit if it is still resident by LRU reuse distance (Mattson et al., "Evaluation techniques
        for storage hierarchies", IBM Syst. J. 1970: a reference hits a fully associative LRU
        cache iff the distinct bytes touched since its last use fit), else a fresh miss. The bytes
        touched chip-wide in between are estimated as the warp's own distinct bytes between the two
        reads times the warps resident at once (slots x the plan's warps that read global
        memory, all streaming alike); stores are not counted. `_classify_walk`.
    `classify(cta)` returns a `CtaHits` (its `key` is the memo key).

    Representation (speed; same decisions as a per-tile dict walk): the plan's tiles of every CTA
    as one integer array `ids[cta, position]` (a dense id per distinct (tensor map, coords) tile,
    numpy), the readers of each tile as the sorted unique `id * num_ctas + cta` codes (r is two
    binary searches), and the windows as arrays indexed by tile id; the L2 LRU (`L2Residency`) is
    walked in the same order as before, with the tile ids as keys (ld.global lines use ("line",
    addr) keys, so they never collide), at dispatch, so it interleaves with ld.global look-ups
    as before.
    """

    def __init__(self, plan: TilePlan, residency, num_ctas: int, slots: int):
        self.plan = plan
        self.residency = residency
        self.slots = slots
        self.num_ctas = num_ctas
        handles, self.hidx, self.nbytes, self.starts, ndim = plan.layout()
        self.handles = handles
        self.ndim = ndim
        coords = plan.coords_array(num_ctas)  # (num_ctas, positions, dims) int64
        self.coords = coords
        n, t = coords.shape[0], coords.shape[1]
        self.ids = _dense_ids(self.hidx, coords)
        self.num_tiles = int(self.ids.max()) + 1 if t else 0
        self._short = self._short_rows(plan, n, t)
        real = np.ones((n, t), dtype=bool)
        if self._short is not None:  # the short CTAs' missing positions read nothing
            real[self._short[0]:] = False
            real[self._short[0]:, self._short[1]] = True
        self._codes = _sorted_unique((self.ids * num_ctas + np.arange(n, dtype=np.int64)[:, None])[real])
        sorted_ids = np.sort(self.ids, axis=1)
        self._dup_rows = (sorted_ids[:, 1:] == sorted_ids[:, :-1]).any(axis=1) if t > 1 else np.zeros(n, bool)
        self._nb_list = self.nbytes.tolist()
        self._win_end = np.full(self.num_tiles, -1, dtype=np.int64)  # fetch window end (exclusive)
        self._win_share = np.zeros(self.num_tiles)
        self._sh_end = np.full(self.num_tiles, -1, dtype=np.int64)  # share window end (exclusive)
        self._sh_share = np.zeros(self.num_tiles)
        reading = sum(1 for w in range(len(self.starts) - 1) if self.starts[w + 1] > self.starts[w])
        self._concurrent = slots * max(1, reading)  # warps reading global memory at once, chip-wide

    def _short_rows(self, plan: TilePlan, n: int, t: int):
        """A truncated plan (`TilePlan.cut`: from CTA c0 on, each warp reads a prefix of its row,
        e.g. a partial last CTA whose idle warps exit): (c0, the positions those CTAs read, their
        warps' start positions), else None."""
        if plan.cut is None or plan.cut[0] >= n:
            return None
        c0, lens = plan.cut
        keep = np.concatenate([np.arange(self.starts[w], self.starts[w] + k, dtype=np.int64)
                               for w, k in enumerate(lens)] or [np.zeros(0, dtype=np.int64)])
        starts = [0]
        for k in lens:
            starts.append(starts[-1] + k)
        return c0, keep, starts

    def fresh(self, residency) -> "DispatchResidency":
        """The same plan arrays over another (empty) L2 residency, with no windows open (another
        simulation of the same launch, e.g. at another clock)."""
        d = copy.copy(self)
        d.residency = residency
        d._win_end = np.full(self.num_tiles, -1, dtype=np.int64)
        d._win_share = np.zeros(self.num_tiles)
        d._sh_end = np.full(self.num_tiles, -1, dtype=np.int64)
        d._sh_share = np.zeros(self.num_tiles)
        return d

    def tiles(self, cta: int) -> list[list]:
        """The plan's (handle, coords, nbytes) per warp of CTA `cta` (for the detailed-run check)."""
        co, h, nb, d = self.coords[cta].tolist(), self.hidx.tolist(), self._nb_list, self.ndim.tolist()
        flat = [(self.handles[h[j]], tuple(co[j][:d[j]]), nb[j]) for j in range(len(h))]
        rows = [flat[self.starts[w]:self.starts[w + 1]] for w in range(len(self.starts) - 1)]
        cut = self.plan.lengths(cta)
        return rows if cut is None else [row[:k] for row, k in zip(rows, cut)]

    def _readers(self, ids: np.ndarray, cta: int) -> np.ndarray:
        """r per position: how many CTAs in [cta, cta + slots) read the tile (at least 1)."""
        base = ids * self.num_ctas
        lo = np.searchsorted(self._codes, base + cta)
        hi = np.searchsorted(self._codes, base + min(cta + self.slots, self.num_ctas))
        return np.maximum(hi - lo, 1)

    def classify(self, cta: int) -> CtaHits:
        ids = self.ids[cta]
        if self._short is not None and cta >= self._short[0]:
            ids = ids[self._short[1]]
            nb = [self._nb_list[j] for j in self._short[1].tolist()]
            hit = np.array(self.residency.access_all(ids.tolist(), nb), dtype=bool)
            return self._classify_walk(cta, ids, hit, nb, self._short[2])
        hit = np.array(self.residency.access_all(ids.tolist(), self._nb_list), dtype=bool)
        if self._dup_rows[cta]:
            return self._classify_walk(cta, ids, hit)
        r = self._readers(ids, cta)
        end = cta + self.slots
        share = np.empty(len(ids))
        miss = ~hit
        m_ids = ids[miss]
        inv_r = 1.0 / r
        self._win_end[m_ids] = end
        self._win_share[m_ids] = inv_r[miss]
        share[miss] = inv_r[miss]
        in_win = hit & (self._win_end[ids] > cta)
        share[in_win] = self._win_share[ids[in_win]]
        real = hit & ~in_win
        r_ids = ids[real]
        new = real.copy()
        new[real] = self._sh_end[r_ids] <= cta
        n_ids = ids[new]
        self._sh_end[n_ids] = end
        self._sh_share[n_ids] = inv_r[new]
        share[real] = self._sh_share[r_ids]
        return CtaHits(real, share, self.starts)

    def _classify_walk(self, cta: int, ids: np.ndarray, hit: np.ndarray, nb=None, starts=None) -> CtaHits:
        """Tile by tile (a CTA that reads one tile twice: later reads see the earlier's window; a
        warp's own re-read is a hit or a fresh miss by reuse distance, see the class docstring;
        a short CTA of a truncated plan: its own bytes per position and warp starts)."""
        r = self._readers(ids, cta).tolist()
        end = cta + self.slots
        out_hit, share = [], []
        nb = self._nb_list if nb is None else nb
        starts = self.starts if starts is None else starts
        res = self.residency
        w, last, touched = 0, {}, 0  # last: tile -> the warp's bytes read before its latest read
        for j, (t, h) in enumerate(zip(ids.tolist(), hit.tolist())):
            while j >= starts[w + 1]:
                w, last, touched = w + 1, {}, 0
            before = last.get(t)
            last[t] = touched
            touched += nb[j]
            if before is not None and h:   # the warp's own re-read (a hit at dispatch)
                if (touched - nb[j] - before) * self._concurrent > res.capacity:
                    res.hits, res.misses = res.hits - 1, res.misses + 1
                    res.hit_bytes, res.miss_bytes = res.hit_bytes - nb[j], res.miss_bytes + nb[j]
                    out_hit.append(False)
                    share.append(1.0)
                    continue
                if self._sh_end[t] <= cta:
                    self._sh_end[t], self._sh_share[t] = end, 1.0 / r[j]
                out_hit.append(True)
                share.append(float(self._sh_share[t]))
                continue
            if not h:
                self._win_end[t], self._win_share[t] = end, 1.0 / r[j]
                out_hit.append(False)
                share.append(1.0 / r[j])
            elif self._win_end[t] > cta:
                out_hit.append(False)
                share.append(float(self._win_share[t]))
            else:
                if self._sh_end[t] <= cta:
                    self._sh_end[t], self._sh_share[t] = end, 1.0 / r[j]
                out_hit.append(True)
                share.append(float(self._sh_share[t]))
        return CtaHits(np.array(out_hit, dtype=bool), np.array(share), starts)


class StreamingResidency:
    """`DispatchResidency` for a plan of ld.global lines that no two (CTA, position) share (a
    streaming kernel: vector add, copy): every read is a first touch, so every CTA's vector is
    all misses with fetch share 1, which is what the per-tile walk gives for such a plan, with no
    per-CTA arrays (a 2^30-element stream has ~10^8 positions). Applies to affine plans over a 1-D
    grid whose tiles are all ld.global lines moving by the same d lines per CTA; no two positions
    j, k of CTA 0 may differ by a multiple of d smaller than d x the CTAs that read them
    (`applies`); a truncated plan (TilePlan.cut) gives the later CTAs the short rows."""

    def __init__(self, plan: TilePlan, residency, num_ctas: int, slots: int):
        self.plan, self.residency, self.num_ctas, self.slots = plan, residency, num_ctas, slots
        flat = [(co[0], nb) for row in plan.base for _h, co, nb in row]
        self.starts = [0]
        for row in plan.base:
            self.starts.append(self.starts[-1] + len(row))
        self.d = plan.deltas[0][0][0][0] if flat and plan.deltas[0] is not None else 0  # one CTA: no delta
        self.positions = len(flat)
        self.bytes = sum(nb for _l, nb in flat)
        self.hits = CtaHits(np.zeros(len(flat), dtype=bool), np.ones(len(flat)), self.starts)
        self.short = None
        if plan.cut is not None:  # the CTAs from plan.cut[0] on read prefixes of the rows
            lens = plan.cut[1]
            starts = [0]
            for k in lens:
                starts.append(starts[-1] + k)
            nb = sum(nb for row, k in zip(plan.base, lens) for _h, _co, nb in row[:k])
            self.short = (plan.cut[0], starts[-1], nb,
                          CtaHits(np.zeros(starts[-1], dtype=bool), np.ones(starts[-1]), starts))

    @staticmethod
    def applies(plan: TilePlan, num_ctas: int) -> bool:
        if plan.mode != "affine" or plan.deltas[1] is not None or plan.deltas[2] is not None:
            return False
        rows = plan.base
        if not any(rows) or len({h for row in rows for h, _co, _nb in row}) != 1 or any(
                len(co) != 1 for row in rows for _h, co, _nb in row):  # one handle, 1-D keys (linear_plan too)
            return False
        if plan.deltas[0] is None:  # one CTA: its own positions must be distinct
            lines = [co[0] for row in rows for _h, co, _nb in row]
            return len(set(lines)) == len(lines)
        ds = {e for row in plan.deltas[0] for e in row}
        if len(ds) != 1:
            return False
        d = next(iter(ds))[0]
        if d <= 0:
            return False
        # position j is read by CTAs 0 .. n_j - 1 (n_j = num_ctas, or the cut CTA for a position
        # beyond a truncated row); j at line q_j*d + r and k at q_k*d + r (q_j <= q_k) meet iff
        # q_k - q_j < n_j: checking neighbours in q order covers every pair
        cut = plan.cut
        groups: dict = {}
        for w, row in enumerate(rows):
            for i, (_h, co, _nb) in enumerate(row):
                n_j = num_ctas if cut is None or i < cut[1][w] else cut[0]
                groups.setdefault(co[0] % d, []).append((co[0] // d, n_j))
        for qs in groups.values():
            qs.sort()
            if any(b[0] - a[0] < a[1] for a, b in zip(qs, qs[1:])):
                return False
        return True

    def fresh(self, residency) -> "StreamingResidency":
        d = copy.copy(self)
        d.residency = residency
        return d

    def tiles(self, cta: int) -> list[list]:
        off = cta * self.d
        cut = self.plan.lengths(cta)
        rows = self.plan.base if cut is None else [row[:k] for row, k in zip(self.plan.base, cut)]
        return [[(h, (co[0] + off,), nb) for h, co, nb in row] for row in rows]

    def classify(self, cta: int) -> CtaHits:
        res = self.residency
        if self.short is not None and cta >= self.short[0]:
            res.misses += self.short[1]
            res.miss_bytes += self.short[2]
            return self.short[3]
        res.misses += self.positions
        res.miss_bytes += self.bytes
        return self.hits


def _dense_ids(hidx: np.ndarray, coords: np.ndarray) -> np.ndarray:
    """A dense integer id (0..tiles-1) per (CTA, position) for its (handle, coords) tile."""
    n, t, dims = coords.shape
    if not t or not n:
        return np.zeros((n, t), dtype=np.int64)
    cols = [np.broadcast_to(hidx[None, :], (n, t)).reshape(-1)] + [coords[:, :, d].reshape(-1) for d in range(dims)]
    code = np.zeros(n * t, dtype=np.int64)
    span = 1
    for col in cols:
        lo, hi = int(col.min()), int(col.max())
        radix = hi - lo + 1
        if span * radix >= 1 << 62:  # too wide for one int64: unique rows instead
            _, inv = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
            return inv.reshape(n, t).astype(np.int64)
        code = code * radix + (col - lo)
        span *= radix
    _, inv = np.unique(code, return_inverse=True)
    return inv.reshape(n, t).astype(np.int64)


def _sorted_unique(a: np.ndarray) -> np.ndarray:
    """np.unique of a 1-D int array by sorting (numpy 2's hash-based unique is slower on millions)."""
    a = np.sort(a)
    return a[np.concatenate(([True], a[1:] != a[:-1]))] if a.size else a
