"""CTA memoisation for large grids: simulate each *class* of CTA once, replay the others.

Why it is exact (in the partitioned memory mode, `memory.SmLink`): with one CTA per SM, per-SM
bandwidth links, and L2 residency decided when the CTA is dispatched, a CTA's cycles, counters
and the state it leaves on its SM's pipes are a function of (its instruction stream, its L2
hit/miss vector, the work still queued on its SM's pipes when it starts) only. Two CTAs of the same kernel whose streams differ only in the TMA box
coordinates (a GEMM: every CTA runs the same loop on other tiles) and whose hit vectors are equal
therefore take the same cycles, provided their control flow is the same: the memo key is (the CTA's
control-flow class, cta_classes.py: equal outcomes of every branch and guard that may differ
between CTAs; hit vector, SM pipe state at start); the value is
the CTA's duration, its counter deltas and the pipe state it leaves (replayed onto the SM). tests/timing/test_memo.py checks memo=True == memo=False (same mode).

The tile keys of every CTA come from a `TilePlan` (tile_plan.py: sample CTAs run in zero time,
coordinates affine in %ctaid or translated per tensor map; no plan, and no memo, when that fails
or lanes diverge), and its hit vector from the dispatch-time L2 residency (dispatch_residency.py:
`DispatchResidency`, `StreamingResidency`, `CtaHits`). This module holds the partitioned mode's SM
link and the SM counters and pipe state that the memo snapshots, keys on and replays; it also
re-exports the plan and residency names, which callers and tests import from here.
"""

from __future__ import annotations

from hopsim.timing.dispatch_residency import CtaHits, DispatchResidency, StreamingResidency
from hopsim.timing.memory import GLINE, SmLink
from hopsim.timing.tile_plan import TilePlan, capture_tiles

__all__ = [
    "GLINE", "CtaHits", "DispatchResidency", "PartitionedLink", "StreamingResidency", "TilePlan",
    "add_counters", "apply_residue", "capture_tiles", "counter_delta", "sm_counters", "sm_residue",
    "sm_state",
]


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
        "tma_req": sm.tma.requests_loaded, "tma_ld": sm.tma.bytes_loaded, "tma_st": sm.tma.bytes_stored,
        "l2_busy": link.l2_pipe.busy, "hbm_busy": link.hbm_pipe.busy,
        "from_l2": link.bytes_from_l2, "from_hbm": link.bytes_from_hbm, "to_l2": link.bytes_to_l2,
        "l2_distinct": link.bytes_l2_distinct,
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
    sm.tma.requests_loaded += d["tma_req"]
    sm.tma.bytes_loaded += d["tma_ld"]
    sm.tma.bytes_stored += d["tma_st"]
    link = sm.memory
    link.l2_pipe.busy += d["l2_busy"]
    link.hbm_pipe.busy += d["hbm_busy"]
    link.bytes_from_l2 += d["from_l2"]
    link.bytes_from_hbm += d["from_hbm"]
    link.bytes_to_l2 += d["to_l2"]
    link.bytes_l2_distinct += d["l2_distinct"]
    link.bytes_to_hbm += d["to_hbm"]
    sm.gst.busy += d["gst_busy"]
    sm.gmem_requests += d["g_req"]
    sm.gmem_sectors += d["g_sec"]


def _pipes(sm) -> list:
    return [*sm.sched.pipes, sm.smem.pipe, sm.tensor.pipe, sm.tma.issue_pipe, sm.tma.fill_pipe,
            sm.memory.l2_pipe, sm.memory.hbm_pipe, sm.gst, *sm.mufu, *sm.shfl, sm.gld_port, *sm.alu_pipes,
            sm.atom_smem, sm.atom_gmem]


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
