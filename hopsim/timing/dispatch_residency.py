"""L2 residency of the partitioned memory mode, decided when each CTA is dispatched.

In the partitioned mode (`memo.PartitionedLink`) a CTA's L2 hit/miss vector for its TMA tiles and
ld.global lines is decided at dispatch, in linear CTA order, from the tile plan (`tile_plan.py`),
so it does not depend on timing; the vector (`CtaHits.key`) is part of the CTA memo's key
(memo.py). `DispatchResidency` walks the plan's tiles on arrays; `StreamingResidency` is its
closed form for streaming plans (no tile read twice).
"""

from __future__ import annotations

import copy

import numpy as np

from hopsim.timing.tile_plan import TilePlan


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
        hit or a fresh miss by reuse distance (Mattson et al., "Evaluation techniques for storage
        hierarchies", IBM Syst. J. 1970: a reference hits an LRU cache iff the distinct bytes
        touched since its last use fit). The bytes touched chip-wide in between (the footprint F)
        are estimated as the warp's own distinct bytes between the two reads times the warps
        resident at once (min(slots, CTAs of the grid) x the plan's warps that read global
        memory, all streaming alike) times (1 + the plan's stored bytes / its distinct read bytes):
        the other warps' traffic in that time carries their stores in that ratio, and a store
        allocates its line in L2 (write-back, write-allocate) as a first read does. The share of
        such re-reads that hit is `reread_hit_fraction(F)`: 1 up to the ramp's start, 0 from its
        end, linear between (the H100's L2 is not a strict LRU: re-read rounds of a footprint past
        the start hit in part, micro_membw's reuse family; `residency.reread`, None: a strict LRU
        at the residency's capacity); a warp's re-reads take the hits evenly (an accumulator of
        the fractions: a hit each time it passes 1), so CTAs alike get equal vectors (the memo).
        `_classify_walk`.
    `classify(cta)` returns a `CtaHits` (its `key` is the memo key).

    Representation (speed; same decisions as a per-tile dict walk): the plan's tiles of every CTA
    as one integer array `ids[cta, position]` (a dense id per distinct (tensor map, coords) tile,
    numpy), r from a count per tile of the CTAs in the window, slid along as classify() walks the
    CTAs in linear order (else two binary searches in the sorted unique `id * num_ctas + cta`
    codes), and the windows as arrays indexed by tile id; the L2 LRU (`L2Residency`) is
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
        self._real = real
        self._window = None  # (first CTA, end CTA, readers per tile) of the sliding count (_readers)
        sorted_ids = np.sort(self.ids, axis=1)
        self._dup_rows = (sorted_ids[:, 1:] == sorted_ids[:, :-1]).any(axis=1) if t > 1 else np.zeros(n, bool)
        self._nb_list = self.nbytes.tolist()
        self._win_end = np.full(self.num_tiles, -1, dtype=np.int64)  # fetch window end (exclusive)
        self._win_share = np.zeros(self.num_tiles)
        self._sh_end = np.full(self.num_tiles, -1, dtype=np.int64)  # share window end (exclusive)
        self._sh_share = np.zeros(self.num_tiles)
        reading = sum(1 for w in range(len(self.starts) - 1) if self.starts[w + 1] > self.starts[w])
        # warps reading global memory at once, chip-wide: the resident CTAs (a grid smaller than the
        # slots has all its CTAs resident, no more) x the plan's warps that read; x (1 + stored /
        # distinct read bytes of CTA 0): the footprint per byte of a warp's own distinct reads
        distinct = float(self.nbytes[np.unique(self.ids[0], return_index=True)[1]].sum()) if n and t else 0.0
        stores = 1.0 + (plan.stored_bytes / distinct if distinct else 0.0)
        self._concurrent = min(slots, num_ctas) * max(1, reading) * stores

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
        d._window = None
        return d

    def tiles(self, cta: int) -> list[list]:
        """The plan's (handle, coords, nbytes) per warp of CTA `cta` (for the detailed-run check)."""
        co, h, nb, d = self.coords[cta].tolist(), self.hidx.tolist(), self._nb_list, self.ndim.tolist()
        flat = [(self.handles[h[j]], tuple(co[j][:d[j]]), nb[j]) for j in range(len(h))]
        rows = [flat[self.starts[w]:self.starts[w + 1]] for w in range(len(self.starts) - 1)]
        cut = self.plan.lengths(cta)
        return rows if cut is None else [row[:k] for row, k in zip(rows, cut)]

    def _readers(self, ids: np.ndarray, cta: int) -> np.ndarray:
        """r per position: how many CTAs in [cta, cta + slots) read the tile (at least 1).

        A count per tile of the CTAs in the window: classify() is called in linear CTA order, so
        the window slides forward (each CTA's distinct tiles added once as the window reaches it,
        removed as it leaves) and r is one gather; a call out of that order recounts its window."""
        end = min(cta + self.slots, self.num_ctas)
        win = self._window
        if win is None:
            win = self._window = [cta, cta, np.zeros(self.num_tiles, dtype=np.int64)]
        counts = win[2]
        if cta < win[0] or end < win[1] or cta >= win[1]:  # not a forward slide: count afresh
            counts[:] = 0
            win[0] = win[1] = cta
        for c in range(win[1], end):
            counts[self._read_by(c)] += 1
        for c in range(win[0], cta):
            counts[self._read_by(c)] -= 1
        win[0], win[1] = cta, end
        return np.maximum(counts[ids], 1)

    def _read_by(self, cta: int) -> np.ndarray:
        """The tile ids CTA `cta` reads (its positions of `_real`). `counts[ids] += 1` counts a
        tile the row holds twice once (a repeated index is written once)."""
        if self._short is not None and cta >= self._short[0]:
            return self.ids[cta][self._real[cta]]
        return self.ids[cta]

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
        ramp = getattr(res, "reread", None)
        w, last, touched, acc = 0, {}, 0, 0.0  # last: tile -> the warp's bytes read before its latest read
        for j, (t, h) in enumerate(zip(ids.tolist(), hit.tolist())):
            while j >= starts[w + 1]:
                w, last, touched, acc = w + 1, {}, 0, 0.0
            before = last.get(t)
            last[t] = touched
            touched += nb[j]
            if before is not None and h:   # the warp's own re-read (a hit at dispatch)
                foot = (touched - nb[j] - before) * self._concurrent
                if ramp is None:
                    miss = foot > res.capacity
                else:
                    acc += reread_hit_fraction(foot, *ramp)
                    miss = acc < 1.0 - 1e-9
                    if not miss:
                        acc -= 1.0
                if miss:
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


def reread_hit_fraction(footprint: float, start: float, end: float) -> float:
    """Share of re-reads at reuse footprint `footprint` (bytes) that hit L2: 1 up to `start`,
    0 from `end`, linear between (timing.l2_reread_ramp_*_fraction x l2_bytes, fitted on
    micro_membw's reuse_read rounds: reread_ramp in hopsim/validate/calibrate_membw.py)."""
    if footprint <= start:
        return 1.0
    if footprint >= end:
        return 0.0
    return (end - footprint) / (end - start)


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
        if res.warm:
            return self._warm(cta)
        if self.short is not None and cta >= self.short[0]:
            res.misses += self.short[1]
            res.miss_bytes += self.short[2]
            return self.short[3]
        res.misses += self.positions
        res.miss_bytes += self.bytes
        return self.hits

    def _warm(self, cta: int) -> CtaHits:
        """A same-buffer loop (memory.WarmResidency): every line is a first read, resident at the
        launch's start (all hits, each its own reader) while the lines read so far fit."""
        res = self.residency
        short = self.short is not None and cta >= self.short[0]
        n, nb, starts = (self.short[1], self.short[2], self.short[3].starts) if short else (
            self.positions, self.bytes, self.starts)
        res.first_reads(nb)
        res.hits += n
        res.hit_bytes += nb
        return CtaHits(np.ones(n, dtype=bool), np.ones(n), starts)


def _dense_ids(hidx: np.ndarray, coords: np.ndarray) -> np.ndarray:
    """A dense integer id (0..tiles-1) per (CTA, position) for its (handle, coords) tile.

    Each key column (the handle index, then each coordinate) on its grid (a box's rows apart:
    lo + step x index) packs into one int64 code (mixed radix, so the codes sort as the keys);
    the ids are the codes' ranks. Two (CTA, position) arrays in all, reused column by column
    (a launch has millions of positions: fresh temporaries per step cost more than the
    arithmetic)."""
    n, t, dims = coords.shape
    if not t or not n:
        return np.zeros((n, t), dtype=np.int64)
    lo = int(hidx.min())
    step = int(np.gcd.reduce(hidx - lo)) or 1  # the handle column holds exactly hidx's values
    span = (int(hidx.max()) - lo) // step + 1
    code = np.empty((n, t), dtype=np.int64)
    code[...] = ((hidx - lo) // step)[None, :]
    tmp = np.empty((n, t), dtype=np.int64)
    for d in range(dims):
        col = coords[:, :, d]
        lo, hi = int(col.min()), int(col.max())
        np.subtract(col, lo, out=tmp)
        step = int(np.gcd.reduce(tmp, axis=None)) or 1  # coordinates on a grid: its index
        radix = (hi - lo) // step + 1
        if span * radix >= 1 << 62:  # too wide for one int64: unique rows instead
            return _unique_ids(hidx, coords)
        if step != 1:
            np.floor_divide(tmp, step, out=tmp)
        code *= radix
        code += tmp
        span *= radix
    code = code.reshape(-1)
    if span <= DENSE_TABLE_MAX:  # ranks through a table over the codes (np.unique's inverse, no sort)
        seen = np.zeros(span, dtype=bool)
        seen[code] = True
        rank = np.cumsum(seen, dtype=np.int64) - 1
        return rank[code].reshape(n, t)
    _, inv = np.unique(code, return_inverse=True)
    return inv.reshape(n, t).astype(np.int64)


def _unique_ids(hidx: np.ndarray, coords: np.ndarray) -> np.ndarray:
    """`_dense_ids` by sorting the key rows (codes too wide for one int64)."""
    n, t, dims = coords.shape
    cols = [np.broadcast_to(hidx[None, :], (n, t)).reshape(-1)] + [coords[:, :, d].reshape(-1) for d in range(dims)]
    _, inv = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
    return inv.reshape(n, t).astype(np.int64)


DENSE_TABLE_MAX = 1 << 22
"""Largest code span `_dense_ids` ranks through a table (bytes: 9 x span) instead of sorting."""
