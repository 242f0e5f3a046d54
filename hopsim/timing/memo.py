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
is simulated in detail.
"""

from __future__ import annotations

from collections import deque

from hopsim.functional.effect import Kind
from hopsim.timing.memory import SmLink


def capture_tiles(ex, stop=None) -> list[list]:
    """Run one CTA executor in zero time; return its TMA-load (tile key, bytes) per warp.

    Scheduling as the functional runner does it: round-robin over warps, each issues until it
    blocks; when all are blocked the oldest pending async op completes. `stop(tiles)` -> True
    ends the run early (partial capture).
    """
    tiles: list[list] = [[] for _ in range(ex.num_warps)]
    pending: deque = deque()
    live = list(range(ex.num_warps))
    while live:
        progressed = False
        for w in list(live):
            while True:
                eff = ex.issue(w, 256)
                if eff.blocked_on is not None:
                    break
                progressed = True
                if eff.kind == Kind.TMA_LOAD:
                    tiles[w].append((eff.tile_key, eff.gmem_bytes))
                    if stop is not None and stop(tiles):
                        return tiles
                if eff.complete is not None:
                    pending.append(eff)
                if eff.kind == Kind.EXIT:
                    live.remove(w)
                    break
        if not progressed:
            if not pending:
                raise ex.deadlock_error()
            pending.popleft().complete()
    while pending:
        pending.popleft().complete()
    return tiles


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
        self.first = {}  # (w, handle) -> CTA 0's first coords
        for w, row in enumerate(base):
            for h, co, _ in row:
                self.first.setdefault((w, h), co)

    def _offsets(self, cta: int) -> dict:
        need = set(self.first)

        def stop(tiles):
            return all(any(k[0] == h for k, _ in tiles[w]) for w, h in need)

        got = capture_tiles(self.make_executor(cta), stop)
        off = {}
        for w, row in enumerate(got):
            for k, _ in row:
                if (w, k[0]) in self.first and (w, k[0]) not in off:
                    off[(w, k[0])] = tuple(a - b for a, b in zip(k[1], self.first[(w, k[0])]))
        return off

    def tiles(self, cta: int) -> list[list]:
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

    @classmethod
    def build(cls, launch, make_executor) -> "TilePlan | None":
        grid = launch.grid
        coords_of = launch.cta_coords

        def linear(x, y, z):
            return x + grid[0] * (y + grid[1] * z)

        def keys(cta):
            raw = capture_tiles(make_executor(cta))
            out = []
            for row in raw:
                sp = [_split(k) for k in row]
                if any(s is None for s in sp):
                    return None
                out.append(sp)
            return out

        base = keys(0)
        if base is None or not any(base):
            return None
        n = launch.num_ctas
        checks = sorted({n - 1, n // 2 + 1 if n > 2 else n - 1})
        plan = cls._affine(base, grid, linear, keys, coords_of)
        # affine: checked on the last CTA here, and on every CTA simulated in detail (runner.py)
        if plan is not None and keys(n - 1) == plan.tiles(n - 1):
            return plan
        plan = cls(base, [None, None, None], coords_of, "translate", make_executor)
        if all(keys(c) == plan.tiles(c) for c in sorted({1, *checks}) if c < n):
            return plan
        return None

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
            d = _delta(base, other)
            if d is None:
                return None
            deltas.append(d)
        return cls(base, deltas, coords_of)


def _delta(base, other):
    if other is None or len(other) != len(base):
        return None
    out = []
    for rb, ro in zip(base, other):
        if len(rb) != len(ro):
            return None
        row = []
        for (hb, cb, nb), (ho, co, no) in zip(rb, ro):
            if hb != ho or len(cb) != len(co) or nb != no:
                return None
            row.append(tuple(o - b for b, o in zip(cb, co)))
        out.append(row)
    return out


# ------------------------------------------------------------------------------- SM link
class _NoAllocate:
    """Stands in for the L2 residency while a PartitionedLink stores: the store allocates nothing."""

    @staticmethod
    def write(key, nbytes) -> None:
        return None


_NO_ALLOCATE = _NoAllocate()


class PartitionedLink(SmLink):
    """An SM's link in the partitioned mode: stores do not allocate in the L2 residency.

    In the partitioned mode the L2 residency is decided at dispatch from the CTAs' TMA-load tiles
    (`DispatchResidency`, in linear CTA order), so it does not depend on timing; a store inserting
    its lines when it happens would make the residency (and the hit vectors of later CTAs) depend
    on the interleaving of all SMs, which no memo could replay. Stores still cost their L2 link
    time and count their bytes. `lookups` counts reads whose residency is looked up at request
    time (ld.global): the SM-level memo refuses kernels that do any (smclass.NotMemoisable).
    (Hook for memory.py: `MemorySystem.write(..., allocate=False)` would replace this override.)
    """

    lookups = 0

    def write(self, arrival: float, key, nbytes: int) -> float:
        res, self.residency = self.residency, _NO_ALLOCATE
        try:
            return super().write(arrival, key, nbytes)
        finally:
            self.residency = res

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
        "operand_bytes": sm.tensor.operand_bytes,
        "tma_issue": sm.tma.issue_pipe.busy, "tma_fill": sm.tma.fill_pipe.busy, "boxes": sm.tma.boxes,
        "tma_ld": sm.tma.bytes_loaded, "tma_st": sm.tma.bytes_stored,
        "l2_busy": link.l2_pipe.busy, "hbm_busy": link.hbm_pipe.busy,
        "from_l2": link.bytes_from_l2, "from_hbm": link.bytes_from_hbm, "to_l2": link.bytes_to_l2,
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


def _pipes(sm) -> list:
    return [*sm.sched.pipes, sm.smem.pipe, sm.tensor.pipe, sm.tma.issue_pipe, sm.tma.fill_pipe,
            sm.memory.l2_pipe, sm.memory.hbm_pipe]


def sm_state(sm, now: float) -> tuple:
    """The SM's units as a CTA starting at `now` sees them: work still queued on each pipe, in
    cycles after `now` (exact: pipes.QUANTUM). Part of the memo key."""
    return tuple(p.next_free - now if p.next_free > now else 0.0 for p in _pipes(sm))


def sm_residue(sm, start: float) -> tuple:
    """Each pipe's queue tail relative to a CTA's start (recorded when it ends)."""
    return tuple(p.next_free - start for p in _pipes(sm))


def apply_residue(sm, start: float, residue: tuple) -> None:
    """Leave the SM's pipes as the memoised CTA left them."""
    for p, r in zip(_pipes(sm), residue):
        if start + r > p.next_free:
            p.next_free = start + r


# ------------------------------------------------------------------------------- dispatch-time L2
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
        each SM (`MemorySystem._l2_service`).
    `classify(cta)` returns {(warp, i): (hit, share)}, also the memo key.
    """

    def __init__(self, plan: TilePlan, residency, num_ctas: int, slots: int):
        import bisect
        self._bisect = bisect
        self.plan = plan
        self.residency = residency
        self.slots = slots
        self._tiles: dict[int, list] = {}
        self.readers: dict = {}
        for c in range(num_ctas):
            rows = plan.tiles(c)
            if plan.mode == "translate":
                self._tiles[c] = rows  # partial executor runs: compute once
            for row in rows:
                for h, co, _ in row:
                    lst = self.readers.setdefault((h, co), [])
                    if not lst or lst[-1] != c:
                        lst.append(c)
        self.window: dict = {}  # tile -> (fetch window end, share of the HBM fetch)
        self.share: dict = {}  # tile -> (share window end, share of the L2 read) for hits

    def tiles(self, cta: int) -> list[list]:
        t = self._tiles.get(cta)
        return t if t is not None else self.plan.tiles(cta)

    def classify(self, cta: int, tiles: list[list]) -> dict:
        out = {}
        b = self._bisect
        for w, row in enumerate(tiles):
            for i, (h, co, nb) in enumerate(row):
                t = (h, co)
                if not self.residency.access(t, nb):
                    rd = self.readers.get(t, [cta])
                    r = max(1, b.bisect_left(rd, cta + self.slots) - b.bisect_left(rd, cta))
                    self.window[t] = (cta + self.slots, 1.0 / r)
                    out[(w, i)] = (False, 1.0 / r)
                    continue
                win = self.window.get(t)
                if win is not None and cta < win[0]:
                    out[(w, i)] = (False, win[1])
                else:
                    # an L2 hit: the readers of T in its share window (one wave from the first
                    # reader after the last window) read it at about the same time; the L2 serves
                    # the bytes once and delivers them to each (microbench__tma_share.json)
                    sw = self.share.get(t)
                    if sw is None or cta >= sw[0]:
                        rd = self.readers.get(t, [cta])
                        r = max(1, b.bisect_left(rd, cta + self.slots) - b.bisect_left(rd, cta))
                        sw = self.share[t] = (cta + self.slots, 1.0 / r)
                    out[(w, i)] = (True, sw[1])
        return out
