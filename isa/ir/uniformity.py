"""Which registers may differ between the lanes of a warp (a flow-insensitive taint analysis), for
the verifier's warning on guarded barriers and warpgroup collectives (PTX ISA: bar.sync, wgmma.*,
setmaxnreg are .aligned: every thread of the warp executes them or none).

A register is lane-varying if some instruction writes it from a lane-varying source: a
lane-varying special register (%tid.*, %laneid, %lanemask_*), a lane-varying register, a value
loaded or exchanged per lane (ld, atom, shfl, ldmatrix, wgmma accumulators: any instruction with
a memory or vector operand), or elect.sync's predicate. warp-uniform results: vote.sync, redux.sync,
`shr` of a %tid.x-derived value by 5 or more bits (the warp index, warpgroup index) and `setp` of one
against a warp boundary (`tid >= 128`); both assume %ntid.x is a multiple of 32, as warp-specialised
kernels launch. The analysis ignores control flow,
so it can call a uniform register varying (the verifier only warns), never the reverse for the
sources listed.
"""

from __future__ import annotations

from isa.ir import instructions as I
from isa.ir.cfg import pcs_and_labels, post_dominators, region, successors
from isa.ir.operands import Imm, Mem, RegVec, SReg

VARYING_SREGS = frozenset({"%tid.x", "%tid.y", "%tid.z", "%laneid", "%lanemask_eq", "%lanemask_le",
                           "%lanemask_lt", "%lanemask_ge", "%lanemask_gt"})
UNIFORM_RESULTS = (I.VoteSync, I.ReduxSync, I.LdParam, I._Mbar)
"""Results the same in every lane: votes, reductions, kernel parameters, mbarrier results (the
semantics require a warp-uniform mbarrier address)."""


def _operand_values(x) -> list:
    return [getattr(x, f) for f in x.__dataclass_fields__ if f != "guard" and f not in x._writes_fields]


def _warp_index(x, tidx: set) -> bool:
    """`shr` of a %tid.x-derived value by >= 5 bits: the same in every lane of a warp."""
    return (isinstance(x, I.Shr) and isinstance(x.b, Imm) and int(x.b.value) >= 5
            and getattr(x.a, "name", None) in tidx)


_SPLIT_AT_WARP = {"lt": 0, "ge": 0, "lo": 0, "hs": 0, "le": 31, "gt": 31, "ls": 31, "hi": 31}
"""Unsigned/signed comparisons of a thread index with an immediate c that give the same answer in every
lane of a warp when c % 32 is this value (`tid < 128`: warps 0..3 true, the others false)."""


def _warp_split(x, tidx: set) -> bool:
    """`setp.cmp p, tid, c` with a %tid.x copy and c a warp boundary (`_SPLIT_AT_WARP`): the same in
    every lane of a warp (the warp-specialised role split `tid >= 128`)."""
    return (isinstance(x, I.Setp) and isinstance(x.b, Imm) and not isinstance(x.b.value, float)
            and getattr(x.a, "name", None) in tidx and _SPLIT_AT_WARP.get(x.cmp) == int(x.b.value) % 32
            and int(x.b.value) >= 0)


def _tid_x_copies(kernel) -> set[str]:
    """Registers every write of which is `mov %tid.x` (so `shr` by >= 5 of one is a warp index)."""
    only_tid: dict[str, bool] = {}
    for _, x in kernel.instructions():
        is_tid = isinstance(x, I.Mov) and isinstance(x.src, SReg) and x.src.name == "%tid.x" and x.guard is None
        for r in x.writes():
            only_tid[r.name] = only_tid.get(r.name, True) and is_tid
    return {n for n, ok in only_tid.items() if ok}


def lane_varying(kernel) -> set[str]:
    """Names of the registers that may differ between the lanes of a warp."""
    varying: set[str] = set()
    tidx = _tid_x_copies(kernel)
    changed = True
    while changed:
        changed = False
        for _, x in kernel.instructions():
            outs = [r.name for r in x.writes()]
            if not outs or all(o in varying for o in outs):
                continue
            vals = _operand_values(x)
            if isinstance(x, UNIFORM_RESULTS) or _warp_index(x, tidx) or _warp_split(x, tidx):
                continue
            per_lane = isinstance(x, I.ElectSync) or any(
                isinstance(v, (Mem, RegVec)) or (isinstance(v, SReg) and v.name in VARYING_SREGS)
                or getattr(v, "name", None) in varying for v in vals)
            if per_lane:
                varying.update(outs)
                changed = True
    return varying


def divergent_region(kernel, varying: set[str] | None = None) -> set[int]:
    """Body indices of the instructions that may run on part of a warp: those a `bra` (not `.uni`)
    whose guard may differ between lanes leads to before its immediate post-dominator, where the
    warp reconverges (isa/ir/cfg.py)."""
    varying = lane_varying(kernel) if varying is None else varying
    pcs, label_pc = pcs_and_labels(kernel.body)
    instrs = [kernel.body[i] for i in pcs]
    splits = [pc for pc, x in enumerate(instrs) if isinstance(x, I.Bra) and x.guard is not None
              and not x.uni and x.guard.pred.name in varying]
    if not splits:
        return set()
    succ = successors(instrs, label_pc)
    ipdom = post_dominators(succ)
    inside: set[int] = set()
    for pc in splits:
        inside |= region(succ, pc, ipdom[pc])
    return {pcs[p] for p in inside if p < len(pcs)}


_ALIGNED = (I.BarSync, I.BarArrive, I.WgmmaFence, I.WgmmaMmaAsync, I.WgmmaCommitGroup, I.WgmmaWaitGroup,
            I.Setmaxnreg)


def divergent_guards(kernel) -> list[tuple[int, str]]:
    """(body index, message) for each barrier or warpgroup collective guarded by a predicate that
    may differ between the lanes of a warp, or inside a path of a branch that may diverge."""
    varying = lane_varying(kernel)
    inside = divergent_region(kernel, varying)
    out = []
    for i, x in kernel.instructions():
        if not isinstance(x, _ALIGNED):
            continue
        if x.guard is not None and x.guard.pred.name in varying:
            out.append((i, f"{x.mnemonic} is guarded by {x.guard.pred.name}, which may differ between the lanes "
                           f"of a warp (it derives from a per-lane value): PTX ISA requires every thread of the "
                           f"warp to execute it or none (a divergent one is a DivergentBarrier at run time)"))
        elif i in inside:
            out.append((i, f"{x.mnemonic} is inside a path of a branch whose guard may differ between the lanes "
                           f"of a warp: PTX ISA requires every thread of the warp to execute it (executed by a "
                           f"diverged warp it is a DivergentBarrier at run time)"))
    return out
