"""Divergent control flow of a warp: a SIMT reconvergence stack at immediate post-dominators.

The model (pre-Volta hardware's and GPGPU-Sim's, Fung et al., MICRO 2007): a `@%p bra L` whose
guard differs between the warp's executing lanes splits the warp. Its two paths run one after
the other, each with only its own lanes active (inactive lanes neither execute nor count: no
register or memory writes, no bytes, not in a collective's lanes), and the warp reconverges at the
branch's immediate post-dominator (IPDOM) in the kernel's control-flow graph (isa/ir/cfg.py),
the first instruction every path from the branch must reach. Order: the fall-through path first,
then the taken one (source order for `@%p bra ELSE; then; bra END; ELSE: else; END:`).

    ws.pc, ws.active, ws.rpc      the running path: its pc, its lanes, where it stops (-1: never)
    ws.stack = [(pc, lanes, rpc)] suspended entries: the other path of a split, and below it the
                                  reconvergence entry (IPDOM, all lanes of the split, the enclosing rpc)

A running path whose pc reaches its rpc is popped (`reconverge`); lanes that `exit` leave every
entry (`exit_lanes`). A path that reaches an instruction every non-exited lane must execute together
(bar.sync/bar.arrive, wgmma/setmaxnreg, ldmatrix/stmatrix, a shfl/vote/redux.sync whose membermask
holds every live lane) while other lanes are on other paths waits there (`converge`: it is
parked, as sm_70+ Independent Thread Scheduling lets it) and the warp runs its other paths; when
every live lane has arrived (the others exited), the warp is converged there and runs it. So
`if (i >= n) return; ... __syncthreads();` works although the barrier does not post-dominate the
branch. Lanes parked at two different such instructions can never meet: a named error. A split whose IPDOM is the kernel's exit (a path that exits) reconverges at
the enclosing rpc instead. A nested split with the same IPDOM as the running path needs no entry
of its own (a loop whose trip count differs per lane keeps one entry, whatever its trip count).

Why this model. PTX promises nothing about where diverged threads reconverge (PTX ISA, "Independent
Thread Scheduling" of sm_70+): only `.sync`/`.aligned` instructions (bar.warp.sync, shfl.sync,
vote.sync, redux.sync with a membermask; bar.sync, wgmma, which need the whole warp) synchronise
lanes. The IPDOM stack is deterministic, is a legal schedule of the Volta+ semantics (each lane
runs its own instruction sequence), and reconverges as early as structured code allows, so a
`shfl.sync 0xffffffff` after an if/else or after a loop with per-lane trip counts finds every lane
of the warp, and one inside a path finds exactly that path's lanes. A `.sync` instruction whose
executing lanes differ from the non-exited lanes of its membermask (guarded off, or on another path
and never reaching it) is a MemberMaskError; a bar.sync, warpgroup collective or ldmatrix whose
lanes are split (guarded off, or waiting at another instruction) is a DivergentBarrier (ops_warp.py,
ops_sync.py, ops_mem.py). `bra.uni` asserts a non-divergent branch (PTX ISA):
a divergent one is a DivergentBranch.
"""

from __future__ import annotations

import numpy as np

from hopsim.functional.errors import DivergentBarrier
from isa.ir.cfg import NO_IPDOM

NO_RPC = NO_IPDOM
"""The rpc of a path that never reconverges by reaching a pc (the whole warp, or a path below a
split whose IPDOM is the kernel's exit)."""


def set_active(ws, lanes: np.ndarray) -> None:
    """Make `lanes` the running lanes of warp ws (and its counts)."""
    ws.active = lanes
    n = int(np.count_nonzero(lanes))
    ws.nactive = n
    ws.full = n == 32


def diverge(ex, ws, taken: np.ndarray, target: int, fall: int, ipdom: int) -> int:
    """Split warp ws at a branch whose guard holds on `taken` (a proper non-empty subset of the
    running lanes); returns the pc the warp runs next (module docstring)."""
    r = ws.rpc if ipdom == NO_RPC else ipdom
    rest = ws.active & ~taken
    if r != ws.rpc:
        ws.stack.append((r, ws.active, ws.rpc))
    if fall == r:
        first, lanes = target, taken
    elif target == r:
        first, lanes = fall, rest
    else:
        ws.stack.append((target, taken, r))
        first, lanes = fall, rest
    ws.rpc = r
    set_active(ws, lanes)
    ex.divergences += 1
    return first


def reconverge(ws) -> None:
    """The running path has reached its rpc (or has no lanes left): resume the top suspended entry
    that still has lanes not parked (the other path, or the reconvergence entry: the lanes of the
    split). With none left, the parked lanes resume at their sync point when they are all the live
    lanes of the warp (`converge`); parked at two different instructions, they can never meet: a
    DivergentBarrier."""
    stack = ws.stack
    parked = _parked_lanes(ws)
    while stack:
        pc, lanes, rpc = stack.pop()
        if parked is not None:
            lanes = lanes & ~parked
        if lanes.any():
            ws.pc, ws.rpc = pc, rpc
            set_active(ws, lanes)
            return
    ws.rpc = NO_RPC
    if ws.parked:
        if len(ws.parked) == 1:
            (pc, (lanes, _err)), = ws.parked.items()
            if int(np.count_nonzero(lanes)) == ws.nlive:
                ws.parked = {}
                ws.pc = pc
                set_active(ws, lanes)
                return
        where = "; ".join(f"lanes {lanes_text(m)} at pc {pc}" for pc, (m, _e) in sorted(ws.parked.items()))
        err = next(iter(ws.parked.values()))[1]
        raise err(f"the lanes of a diverged warp wait at different warp-synchronous instructions ({where}): "
                  f"each needs every non-exited lane of the warp (or of its membermask) at the same "
                  f"instruction (PTX ISA: .aligned / .sync)")
    set_active(ws, ws.none)


def _parked_lanes(ws):
    if not ws.parked:
        return None
    out = None
    for m, _err in ws.parked.values():
        out = m if out is None else out | m
    return out


def converge(ws, mask: np.ndarray, err=DivergentBarrier):
    """An instruction every non-exited lane of the warp executes together (bar, wgmma, ldmatrix,
    a full-warp shfl/vote/redux.sync), reached with all the running lanes (`mask`) while other live
    lanes are on other paths of a divergent branch: as under sm_70+ Independent Thread Scheduling,
    the path waits here (is parked) and the warp runs its other paths; when every live lane has
    arrived at this instruction (the others exited or parked here) the warp is converged and runs it
    with all of them. Returns those lanes, or None when the path was parked (the caller's instruction
    does nothing now; the executor resumes another path). Lanes parked at two different instructions
    never meet: `err` (DivergentBarrier, MemberMaskError for shfl/vote/redux) when nothing else can run."""
    pc = ws.pc
    have = ws.parked.get(pc)
    merged = mask if have is None else mask | have[0]
    if int(np.count_nonzero(merged)) == ws.nlive:
        ws.parked = {}
        ws.stack = []
        ws.rpc = NO_RPC
        set_active(ws, merged)
        return merged
    ws.parked[pc] = (merged, err)  # err: what to raise if the warp's lanes never meet here
    set_active(ws, ws.none)
    return None


def whole_warp(ws, mask: np.ndarray, what: str):
    """The lanes to run a `.aligned` whole-warp instruction with (mask, or every live lane after
    `converge`), None when the path was parked; a DivergentBarrier when some running lanes skip it
    (a guard false on part of the warp: PTX ISA, every thread of the warp executes it)."""
    if mask is ws.active and ws.nactive == ws.nlive:
        return mask
    n = int(np.count_nonzero(mask))
    if n == 0 or n == ws.nlive:
        return mask
    if n == ws.nactive:
        return converge(ws, mask)
    raise DivergentBarrier(f"{what} executed by {n} of the warp's {ws.nlive} live lanes "
                           f"({why_absent(ws, ws.live & ~mask)}): every thread of the warp executes it "
                           f"(PTX ISA: .aligned)")


def exit_lanes(ws, mask: np.ndarray, n: int) -> None:
    """`n` lanes (`mask`, part of the running lanes, not all live lanes) exit: they leave the warp's
    live lanes, the running path and every suspended entry; the warp goes on with the others."""
    keep = ~mask
    ws.live = ws.live & keep
    ws.nlive -= n
    ws.stack = [(pc, lanes & keep, rpc) for pc, lanes, rpc in ws.stack]
    set_active(ws, ws.active & keep)


def lanes_text(m: np.ndarray) -> str:
    """'0, 1, 2 ...' of the set lanes of a bool[32] (first 8)."""
    idx = np.flatnonzero(m).tolist()
    return ", ".join(str(i) for i in idx[:8]) + (" ..." if len(idx) > 8 else "")


def why_absent(ws, lanes: np.ndarray) -> str:
    """Why `lanes` (existing lanes of warp ws) do not execute the current instruction: exited, on
    another path of a divergent branch, or their guard is false."""
    parts = []
    for what, m in (("have exited", lanes & ~ws.live), ("are on another path of a divergent branch",
                                                       lanes & ws.live & ~ws.active),
                    ("have their guard false", lanes & ws.active)):
        if m.any():
            parts.append(f"lanes {lanes_text(m)} {what}")
    return "; ".join(parts)
