"""Protocol and race checks of the functional machine (one `Checker` per CTA).

What is tracked (shared memory in 16-B chunks, the granule of TMA/wgmma/ldmatrix rows):

    tma_pending[chunk]    in-flight TMA loads that will still WRITE the chunk   (issue .. complete)
    wgmma_inflight        wgmma ops that may still READ their chunks (sorted)   (issue .. the
                          wgmma.wait_group that covers their group returns)

    ld.shared / ldmatrix / wgmma / TMA-store read of a chunk with tma_pending > 0   -> ReadBeforeLand
    TMA load / st.shared / stmatrix write of a chunk with wgmma_reading > 0          -> StageOverwrite

Registers: per warpgroup, the accumulator and A-fragment rows of wgmma ops not yet retired by a
wait_group (`inflight_rows`): any ordinary instruction of that warpgroup reading or writing one
-> AccumulatorTouched. Ordinary writes to any register a wgmma of the kernel uses mark it dirty;
wgmma.mma_async before the warpgroup's first wgmma.fence, or on a dirty register -> WgmmaWithoutFence.

mbarrier phases: each warp's waits on a barrier are assumed to observe its phases in order (the
CUTLASS pipeline discipline). The phase a parity names is inferred as the next phase with that
parity after the last phase this warp saw complete; if that phase is neither the barrier's current
nor its previous phase the parity is ambiguous on hardware -> BadParity. Turn off with
`check_phases=False` for kernels that deliberately skip phases.

The error classes live in `errors.py` and are re-exported here.
"""

from __future__ import annotations

from bisect import bisect_left

import numpy as np

from hopsim.functional.errors import (  # noqa: F401  (re-exported)
    AccumulatorTouched, ArrivalCountOutOfRange, BadParity, Deadlock, DivergentBranch,
    IllegalInstruction, MbarrierNotInitialised, ProtocolError, ReadBeforeLand, StageOverwrite,
    TxCountOutOfRange, WgmmaWithoutFence,
)

CHUNK = 16


_LISTS: dict = {}  # id(chunks) -> (chunks, chunks.tolist()): a wgmma's chunk array recurs (ops_async caches it per descriptor)


def _as_list(chunks: np.ndarray) -> list:
    """`chunks` as a list of ints (bisect on a list: cheaper than numpy calls per range test)."""
    got = _LISTS.get(id(chunks))
    if got is None or got[0] is not chunks:
        if len(_LISTS) >= 4096:
            _LISTS.clear()
        got = _LISTS[id(chunks)] = (chunks, chunks.tolist())
    return got[1]


def _rows_text(ex, rows) -> str:
    names = {r: n for n, r in ex.prog.layout.rows.items()}
    rs = sorted(rows)
    shown = ", ".join(names.get(r, str(r)) for r in rs[:4])
    return shown + (f", ... ({len(rs)} registers)" if len(rs) > 4 else "")


class Checker:
    """Race and protocol bookkeeping of one CTAExecutor (see module docstring)."""

    def __init__(self, ex, *, enabled: bool = True, check_phases: bool = True):
        self.ex = ex
        self.active = enabled
        self.check_phases = enabled and check_phases
        n = -(-max(ex.smem_size, 1) // CHUNK)
        self.tma_pending = np.zeros(n, dtype=np.int32)
        self.tma_inflight: dict[int, tuple] = {}     # id -> (lo, hi, warp, index, text, mbarrier)
        self.wgmma_inflight: dict[int, tuple] = {}   # id -> (chunks, wg, group, warp, index, text, chunks as a list)
        self.wgmma_rows = ex.prog.wgmma_rows

    # ------------------------------------------------------------------------- per instruction
    def before(self, op, ws) -> None:
        """Register rules, called before every instruction a warp executes."""
        if op.collective:
            return
        wg = self.ex.wgs[ws.wg]
        if wg.inflight_rows and not op.rows.isdisjoint(wg.inflight_rows):  # (no set built when disjoint)
            hit = op.rows & wg.inflight_rows
            raise AccumulatorTouched(
                f"touches wgmma registers {_rows_text(self.ex, hit)} of warpgroup {ws.wg} while a "
                f"wgmma.mma_async using them is in flight (no wgmma.wait_group has covered it yet)")
        if not op.rows_written.isdisjoint(self.wgmma_rows):
            wg.dirty |= op.rows_written & self.wgmma_rows

    # ------------------------------------------------------------------------- shared memory
    def smem_read(self, chunks, what: str) -> None:
        """`chunks`: int array of chunk indices or a (lo, hi) chunk range."""
        if not self.tma_inflight:
            return
        hit = self._any(self.tma_pending, chunks)
        if hit is not None:
            rec = self._tma_record(hit)
            raise ReadBeforeLand(
                f"{what} reads smem 0x{hit * CHUNK:x} which an in-flight TMA load (issued by warp {rec[2]} at "
                f"#{rec[3]} `{rec[4]}`) has not written yet: wait on its mbarrier phase first",
                barrier=rec[5])

    def smem_write(self, chunks, what: str) -> None:
        if not self.wgmma_inflight:
            return
        hit = self._read_by_wgmma(chunks)
        if hit is not None:
            rec = self._wgmma_record(hit)
            raise StageOverwrite(
                f"{what} writes smem 0x{hit * CHUNK:x} which wgmma group {rec[2]} of warpgroup {rec[1]} "
                f"(mma_async at #{rec[4]} `{rec[5]}`) still reads: wgmma.wait_group must cover that group "
                f"before the stage is reused")

    def _read_by_wgmma(self, chunks):
        """The first chunk of `chunks` (a (lo, hi) range: the lowest) that an in-flight wgmma
        reads, or None. Each wgmma's chunks are sorted and unique: a range is tested against
        their bounds first (another stage's wgmma: no overlap), then by bisection."""
        if isinstance(chunks, tuple):
            lo, hi = chunks
            best = None
            for rec in self.wgmma_inflight.values():
                c = rec[6]
                if not c or c[0] >= hi or c[-1] < lo:
                    continue
                i = bisect_left(c, lo)
                if i < len(c) and c[i] < hi and (best is None or c[i] < best):
                    best = c[i]
            return best
        chunks = np.asarray(chunks)
        read = np.zeros(len(chunks), dtype=bool)
        for rec in self.wgmma_inflight.values():
            read |= np.isin(chunks, rec[0])
        return int(chunks[np.flatnonzero(read)[0]]) if read.any() else None

    @staticmethod
    def _any(arr, chunks):
        if isinstance(chunks, tuple):
            lo, hi = chunks
            vals = arr[lo:hi]
            if not np.count_nonzero(vals):  # (cheaper than .any() on a short slice)
                return None
            return int(lo + np.flatnonzero(vals)[0])
        vals = arr[chunks]
        if not vals.any():
            return None
        return int(np.asarray(chunks)[np.flatnonzero(vals)[0]])

    def _tma_record(self, chunk: int):
        for rec in self.tma_inflight.values():
            if rec[0] <= chunk < rec[1]:
                return rec
        return (chunk, chunk + 1, None, None, "?", None)  # pragma: no cover

    def _wgmma_record(self, chunk: int):
        for rec in self.wgmma_inflight.values():
            if np.any(rec[0] == chunk):
                return rec
        return (None, None, None, None, None, "?")  # pragma: no cover

    # ------------------------------------------------------------------------- TMA loads
    def tma_issue(self, ident: int, lo: int, hi: int, ws, op, mbar: int) -> None:
        """A TMA load will write smem bytes [lo, hi)."""
        c = (lo // CHUNK, -(-hi // CHUNK))
        self.smem_write(c, "TMA load")
        self.tma_pending[c[0]:c[1]] += 1
        self.tma_inflight[ident] = (c[0], c[1], ws.w, op.index, op.text, mbar)

    def tma_land(self, ident: int) -> None:
        rec = self.tma_inflight.pop(ident, None)
        if rec is not None:
            self.tma_pending[rec[0]:rec[1]] -= 1

    # ------------------------------------------------------------------------- wgmma
    def wgmma_fence_rule(self, wg, rows: set, op) -> None:
        if not wg.fenced:
            raise WgmmaWithoutFence(f"wgmma.mma_async of warpgroup {wg.g} before any wgmma.fence "
                                    f"(PTX: wgmma.fence is required before the first wgmma.mma_async)")
        bad = rows & wg.dirty
        if bad:
            raise WgmmaWithoutFence(f"registers {_rows_text(self.ex, bad)} were written by an ordinary "
                                    f"instruction since the last wgmma.fence of warpgroup {wg.g}")

    def wgmma_issue(self, ident: int, chunks: np.ndarray, wg, group: int, ws, op) -> None:
        """`chunks`: sorted, unique (ops_async._chunks). The read check as `smem_read` makes it (the
        first chunk in flight from a TMA load), by bisection of each load's chunk range in them."""
        got = _as_list(chunks)
        if self.tma_inflight:
            hit = None
            for rec in self.tma_inflight.values():  # tma_pending counts exactly these ranges
                i = bisect_left(got, rec[0])
                if i < len(got) and got[i] < rec[1] and (hit is None or got[i] < hit):
                    hit = got[i]
            if hit is not None:
                self.smem_read((hit, hit + 1), "wgmma.mma_async operand fetch")
        self.wgmma_inflight[ident] = (chunks, wg.g, group, ws.w, op.index, op.text, got)

    def wgmma_retire(self, ident: int) -> None:
        self.wgmma_inflight.pop(ident, None)

    # ------------------------------------------------------------------------- mbarrier parity
    def wait_phase(self, ws, addr: int, parity: int, bar) -> int:
        """The phase number this wait names (inferred, see module docstring); checks it."""
        last = ws.last_phase.get(addr, -2)
        k = last + 1 if ((last + 1) & 1) == parity else last + 2
        if self.check_phases and k not in (bar.phase, bar.phase - 1):
            raise BadParity(
                f"parity {parity} names phase {k} for this warp (it last saw phase {last} complete), but the "
                f"barrier is in phase {bar.phase}: only phase {bar.phase} (current) or {bar.phase - 1} "
                f"(previous) can be waited on; the parity is ambiguous", barrier=addr, phase=bar.phase)
        return k
