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
(bar.sync/bar.arrive, wgmma/setmaxnreg, ldmatrix/stmatrix: .aligned) while other lanes are on other
paths waits there (`converge`: it is parked, as sm_70+ Independent Thread Scheduling lets it) and
the warp runs its other paths; when every live lane has arrived (the others exited), the warp is
converged there and runs it. So `if (i >= n) return; ... __syncthreads();` works although the
barrier does not post-dominate the branch. A shfl/vote/redux.sync reached while live lanes of its
membermask are on other paths waits the same way (`rendezvous`), but meets them at any instruction
of the same mnemonic, qualifiers and membermask value (PTX ISA, sm_70+: "executed ... with the same
qualifiers and same membermask value"): `if (c) x = shfl(a) else y = shfl(b)` exchanges across
the two paths, each lane giving its own instruction's operand, as the converged `shfl(c ? a : b)`
does; the paths then go on, each to its IPDOM. Lanes parked where they can never meet (two
different .aligned instructions, .sync instructions of other qualifiers or membermask, a member
waiting at a barrier) are a named error naming each instruction's line, never a hang. A split
whose IPDOM is the kernel's exit (a path that exits) reconverges at
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
and never reaching a matching one) is a MemberMaskError; a bar.sync, warpgroup collective or ldmatrix whose
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


class Park:
    """Lanes of a diverged warp waiting at the warp-synchronous instruction at one pc.

    key:      None for the whole-warp (.aligned) instructions, which meet only at the same pc with
              every live lane; else (mnemonic, qualifiers, membermask) of a shfl/vote/redux.sync,
              which meets every instruction of equal key (PTX ISA: "executed ... with the same
              qualifiers and same membermask value")
    member:   the membermask's lanes (bool[32]); vals: each waiting lane's input (bool/int[32])
    arrivals: [(lanes, rpc)] the paths that arrived, resumed each with its own rpc after the meeting
    """

    __slots__ = ("lanes", "err", "key", "member", "vals", "arrivals")

    def __init__(self, lanes, err, key=None, member=None, vals=None, rpc=NO_RPC):
        self.lanes, self.err, self.key, self.member, self.vals = lanes, err, key, member, vals
        self.arrivals = [(lanes, rpc)]

    def join(self, lanes, vals, rpc) -> None:
        self.lanes = self.lanes | lanes
        if vals is not None:
            self.vals = np.where(lanes, vals, self.vals)
        self.arrivals.append((lanes, rpc))


def reconverge(ws) -> None:
    """The running path has reached its rpc (or has no lanes left): resume the top suspended entry
    that still has lanes not parked (the other path, or the reconvergence entry: the lanes of the
    split); an entry whose lanes are all parked is set aside (`ws.deferred`) until they meet. With
    none left, the parked lanes that can meet do (`_meet`: every live member of a .sync
    rendezvous has arrived, or every live lane of the warp is at one whole-warp instruction).
    Lanes that can never meet (parked at instructions of different keys, or waiting for a member
    that is parked elsewhere) are a named error (DivergentBarrier or MemberMaskError) naming the
    instructions, never a hang."""
    stack = ws.stack
    while True:
        parked = _parked_lanes(ws)
        while stack:
            pc, lanes, rpc = stack.pop()
            run = lanes if parked is None else lanes & ~parked
            if run.any():
                ws.pc, ws.rpc = pc, rpc
                set_active(ws, run)
                return
            ws.deferred.append((pc, lanes, rpc))
        if not ws.parked:
            break
        met = _meet(ws)
        if met == "resumed":
            return
        if not met:
            break
    ws.rpc = NO_RPC
    if ws.parked:
        where = "; ".join(f"lanes {lanes_text(p.lanes)} at {ws.where(pc)}" + _key_text(p.key)
                          for pc, p in sorted(ws.parked.items()))
        err = next(iter(ws.parked.values())).err
        raise err(f"the lanes of a diverged warp wait at different warp-synchronous instructions ({where}): "
                  f"each needs every non-exited lane of the warp (or of its membermask) at the same "
                  f"instruction (PTX ISA: .aligned), or at a .sync instruction of the same qualifiers and "
                  f"membermask")
    ws.deferred = []
    set_active(ws, ws.none)


def _key_text(key) -> str:
    return "" if key is None else f" ({key[0]} membermask 0x{key[-1]:08x})"


def _parked_lanes(ws):
    if not ws.parked:
        return None
    out = None
    for p in ws.parked.values():
        out = p.lanes if out is None else out | p.lanes
    return out


def _meet(ws):
    """Let the first parked group that can meet do so: "resumed" (every live lane at one pc: the
    warp runs it converged), True (a .sync rendezvous of several paths: they are back on the
    stack, each to run its instruction with the meeting's data, `rendezvous`), False (none can)."""
    for pc, p in sorted(ws.parked.items()):
        if p.key is None or len(ws.parked) == 1:
            if int(np.count_nonzero(p.lanes)) == ws.nlive and (p.key is None or not (p.member & ws.live & ~p.lanes).any()):
                ws.parked, ws.stack, ws.deferred, ws.rpc = {}, [], [], NO_RPC
                ws.pc = pc
                set_active(ws, p.lanes)
                return "resumed"
        if p.key is not None and _try_meet(ws, p.key):
            return True
    return False


def _try_meet(ws, key) -> bool:
    """Every live member of the rendezvous `key` has arrived (at one or several pcs): put the
    paths back on the stack (above the entries set aside while they waited), each at its pc with
    the meeting's data in `ws.met` (the lowest pc runs first)."""
    groups = sorted((pc, p) for pc, p in ws.parked.items() if p.key == key)
    union = groups[0][1].lanes
    vals = groups[0][1].vals
    for _pc, p in groups[1:]:
        union = union | p.lanes
        vals = np.where(p.lanes, p.vals, vals)
    if (groups[0][1].member & ws.live & ~union).any():
        return False
    ws.stack.extend(reversed(ws.deferred))
    ws.deferred = []
    for pc, p in reversed(groups):
        del ws.parked[pc]
        ws.met[pc] = (vals, union, p.lanes)
        for lanes, rpc in p.arrivals:
            ws.stack.append((pc, lanes, rpc))
    return True


def converge(ws, mask: np.ndarray, err=DivergentBarrier):
    """An instruction every non-exited lane of the warp executes together (bar, wgmma, ldmatrix),
    reached with all the running lanes (`mask`) while other live lanes are on other paths of a
    divergent branch: as under sm_70+ Independent Thread Scheduling, the path waits here (is
    parked) and the warp runs its other paths; when every live lane has arrived at this
    instruction (the others exited or parked here) the warp is converged and runs it with all of
    them. Returns those lanes, or None when the path was parked (the caller's instruction does
    nothing now; the executor resumes another path). Lanes parked at two different such
    instructions never meet: `err` when nothing else can run (`reconverge`)."""
    pc = ws.pc
    have = ws.parked.get(pc)
    merged = mask if have is None else mask | have.lanes
    if int(np.count_nonzero(merged)) == ws.nlive:
        ws.parked, ws.stack, ws.deferred, ws.rpc = {}, [], [], NO_RPC
        set_active(ws, merged)
        return merged
    if have is None:
        ws.parked[pc] = Park(mask, err, rpc=ws.rpc)
    else:
        have.join(mask, None, ws.rpc)
    set_active(ws, ws.none)
    return None


def rendezvous(ws, mask: np.ndarray, key: tuple, member: np.ndarray, vals: np.ndarray, err):
    """A shfl/vote/redux.sync reached by the running lanes `mask` while live lanes of its
    membermask (`member`) are on other paths (PTX ISA, sm_70+: each executing thread waits until
    all non-exited threads of membermask have executed the instruction "with the same qualifiers
    and same membermask value", on whichever path). Returns (vals, union, jump): the inputs of every
    member lane that met (each from its own instruction) and those lanes, jump True when the warp
    has just converged here (the batch ends after it); or None when the path waits (parked: the
    caller stays at its pc). Its own lanes' results are the caller's to write (`mask`)."""
    pc = ws.pc
    met = ws.met.get(pc)
    if met is not None:  # a path resuming after its rendezvous met: its share of the meeting
        all_vals, union, left = met
        left = left & ~mask
        if left.any():
            ws.met[pc] = (all_vals, union, left)
        else:
            del ws.met[pc]
        return all_vals, union, False
    have = ws.parked.get(pc)
    if have is not None and have.key != key:
        raise err(f"lanes {lanes_text(mask)} execute {ws.where(pc)}{_key_text(key)} while lanes "
                  f"{lanes_text(have.lanes)} wait there with another membermask{_key_text(have.key)} (PTX ISA: "
                  f"the same membermask value)")
    merged = mask if have is None else mask | have.lanes
    others = [p for q, p in ws.parked.items() if q != pc and p.key == key]
    if not others and int(np.count_nonzero(merged)) == ws.nlive and not (ws.live & ~member).any():
        vals = vals if have is None else np.where(mask, vals, have.vals)  # every live lane here: converged
        ws.parked, ws.stack, ws.deferred, ws.rpc = {}, [], [], NO_RPC
        set_active(ws, merged)
        return vals, merged, True
    if have is None:
        ws.parked[pc] = Park(mask, err, key, member, vals, ws.rpc)
    else:
        have.join(mask, vals, ws.rpc)
    set_active(ws, ws.none)
    _try_meet(ws, key)
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
    ws.deferred = [(pc, lanes & keep, rpc) for pc, lanes, rpc in ws.deferred]
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
