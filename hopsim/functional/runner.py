"""The functional runner: a whole kernel launch in zero time, with LAZY async completion.

    for each CTA (in linear order):
        repeat:
            round-robin over the warps: each issues until it blocks, exits, or spins
            (a failed mbarrier.test_wait counts as blocked for the round)
            nobody progressed?  -> complete the OLDEST pending async op (TMA / wgmma / bulk store)
                                       ("newest": the newest op first in its FIFO queue; adversarial)
            nothing pending?    -> Deadlock naming every waiting warp, instruction, barrier, phase

Async data lands as late as any schedule allows, so a kernel that reads a stage before waiting on
its mbarrier phase reads stale bytes (and the race checks name it). Async ops left pending when
every warp has exited are completed at the end (a TMA store that was never waited still lands).
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field

from hopsim.functional.effect import Kind
from hopsim.functional.executor import CTAExecutor, Launch
from hopsim.functional.gmem import GlobalMemory

SPIN_LIMIT = 1_000_000
"""Instructions one warp may run in one round before the runner calls it a livelock."""


@dataclass
class RunStats:
    """Counts of one functional run."""

    ctas: int = 0
    instructions: int = 0
    issues: int = 0
    async_ops: int = 0
    by_kind: Counter = field(default_factory=Counter)
    wall_s: float = 0.0

    @property
    def instructions_per_s(self) -> float:
        return self.instructions / self.wall_s if self.wall_s else 0.0


def run_kernel(kernel, launch: Launch, gmem: GlobalMemory, *, values: bool = True, checks: bool = True,
               check_phases: bool = True, batch: int = 64, ctas=None, order: str = "oldest") -> RunStats:
    """Run `kernel` over `launch` on `gmem` (results are in gmem's buffers). `ctas`: optional
    iterable of linear CTA indices (default all). `order`: which pending async op completes when
    every warp is blocked: "oldest" (default) or "newest" (adversarial: the most recently issued op
    that is first in its FIFO queue, so data a racy kernel needs lands as late as possible)."""
    if order not in ("oldest", "newest"):
        raise ValueError(f"order={order!r}: 'oldest' or 'newest'")
    stats = RunStats()
    t0 = time.perf_counter()
    for c in (range(launch.num_ctas) if ctas is None else ctas):
        ex = CTAExecutor(kernel, launch, gmem, c, values=values, checks=checks, check_phases=check_phases)
        run_cta(ex, stats, batch=batch, order=order)
    stats.wall_s = time.perf_counter() - t0
    return stats


def _queue(eff):
    """FIFO queue of an async op: wgmma ops per warpgroup, bulk stores per warp; TMA loads: none."""
    if eff.kind == Kind.WGMMA:
        return ("wgmma", eff.warpgroup)
    if eff.kind == Kind.TMA_STORE:
        return ("bulk", eff.warp)
    return None


def _pop(pending: deque, order: str):
    if order == "oldest":
        return pending.popleft()
    seen = set()
    heads = []
    for i, e in enumerate(pending):
        q = _queue(e)
        if q is None or q not in seen:
            heads.append(i)
        if q is not None:
            seen.add(q)
    i = heads[-1]
    e = pending[i]
    del pending[i]
    return e


def run_cta(ex: CTAExecutor, stats: RunStats | None = None, *, batch: int = 64, order: str = "oldest") -> RunStats:
    """Run one CTA to completion (see module docstring)."""
    stats = stats if stats is not None else RunStats()
    pending: deque = deque()
    warps = ex.warps
    while True:
        progressed = False
        for ws in warps:
            steps = 0
            while not ws.done:
                b = ws.block
                if b is not None and not ex.is_ready(b[0]):
                    break
                eff = ex.issue(ws.w, batch)
                stats.issues += 1
                stats.instructions += eff.count
                stats.by_kind[eff.kind] += eff.count
                if eff.complete is not None:
                    pending.append(eff)
                    stats.async_ops += 1
                if eff.blocked_on is not None:
                    break
                if eff.kind == Kind.MBAR_TEST and eff.extra.get("ready") is False:
                    break  # a failed test_wait: the warp is polling; let the others (and async ops) move
                if eff.kind not in Kind.REGISTER or eff.resumed:
                    progressed = True
                steps += eff.count
                if steps > SPIN_LIMIT:
                    raise ex.deadlock_error(f"warp {ws.w} ran {SPIN_LIMIT} instructions without blocking (livelock?)")
        if ex.all_done:
            while pending:
                pending.popleft().complete()
            break
        if progressed:
            continue
        if pending:
            _pop(pending, order).complete()
            continue
        raise ex.deadlock_error()
    stats.ctas += 1
    return stats
