"""The control-flow graph of a kernel and its immediate post-dominators, for divergent control
flow: a warp split by a divergent `bra` reconverges at the branch's immediate post-dominator
(hopsim/functional/simt.py), and the verifier lets `.sync` collectives inside such a path name only
some lanes (uniformity.divergent_region).

Nodes are the kernel's instructions in body order (`pcs`, labels removed) plus the implicit exit
at the end; a `bra` goes to its label (and falls through when guarded), an unguarded `exit` ends
the thread (no successor), everything else falls through.
"""

from __future__ import annotations

from isa.ir import instructions as I
from isa.ir.program import LabelDef

NO_IPDOM = -1
"""The immediate post-dominator of a node that only the exit post-dominates (or that reaches no exit)."""


def pcs_and_labels(body) -> tuple[list[int], dict[str, int]]:
    """(body index of each pc, label name -> pc); a label at the end names the implicit exit."""
    pcs: list[int] = []
    label_pc: dict[str, int] = {}
    pending: list[str] = []
    for i, item in enumerate(body):
        if isinstance(item, LabelDef):
            pending.append(item.name)
            continue
        for name in pending:
            label_pc[name] = len(pcs)
        pending.clear()
        pcs.append(i)
    for name in pending:
        label_pc[name] = len(pcs)
    return pcs, label_pc


def successors(instrs: list, label_pc: dict) -> list[list[int]]:
    """Successor pcs of each pc (`instrs` in pc order; pc len(instrs) is the implicit exit). An empty
    list: the pc ends the thread."""
    out: list[list[int]] = []
    for pc, ins in enumerate(instrs):
        nxt = pc + 1
        guarded = getattr(ins, "guard", None) is not None
        if isinstance(ins, I.Bra):
            t = label_pc.get(ins.target.name, nxt)  # an undefined label is reported elsewhere
            out.append([t, nxt] if guarded and t != nxt else [t])
        elif isinstance(ins, I.Exit):
            out.append([nxt] if guarded else [])
        else:
            out.append([nxt])
    out.append([])  # the implicit exit
    return out


def post_dominators(succ: list[list[int]]) -> list[int]:
    """The immediate post-dominator of every node (NO_IPDOM: only the exit), by Cooper, Harvey and
    Kennedy's dominator iteration on the reversed graph rooted at a virtual exit node."""
    n = len(succ)
    root = n
    rsucc = [[] for _ in range(n + 1)]  # successors in the reversed graph
    for u, vs in enumerate(succ):
        for v in (vs or [root]):
            rsucc[v].append(u)
    order, seen, stack = [], [False] * (n + 1), [(root, 0)]
    seen[root] = True
    while stack:  # iterative DFS postorder of the reversed graph
        v, i = stack.pop()
        if i < len(rsucc[v]):
            stack.append((v, i + 1))
            u = rsucc[v][i]
            if not seen[u]:
                seen[u] = True
                stack.append((u, 0))
        else:
            order.append(v)
    num = {v: k for k, v in enumerate(order)}
    idom: list = [None] * (n + 1)
    idom[root] = root
    rpo = order[::-1][1:]
    changed = True
    while changed:
        changed = False
        for v in rpo:
            new = None
            for p in (succ[v] or [root]):
                if idom[p] is None:
                    continue
                new = p if new is None else _intersect(p, new, idom, num)
            if new is not None and idom[v] != new:
                idom[v] = new
                changed = True
    return [NO_IPDOM if d is None or d == root else d for d in idom[:n]]


def _intersect(a: int, b: int, idom: list, num: dict) -> int:
    while a != b:
        while num[a] < num[b]:
            a = idom[a]
        while num[b] < num[a]:
            b = idom[b]
    return a


def region(succ: list[list[int]], start: int, stop: int) -> set[int]:
    """The pcs reachable from `start`'s successors before reaching `stop` (a branch's paths up to
    its immediate post-dominator; NO_IPDOM: up to the exit)."""
    seen: set[int] = set()
    todo = [s for s in succ[start] if s != stop]
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        todo.extend(s for s in succ[v] if s != stop and s not in seen)
    return seen
