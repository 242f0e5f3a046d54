"""Control-flow classes of a launch's CTAs, so that the CTA memo (memo.py, smclass.py) never
replays a CTA whose control flow differs from the one it stands for.

The memo keys a CTA on its L2 hit vector and its SM's state (memo.py); the tile plan predicts
its tiles from a few sample CTAs (tile_plan.py). Neither sees a branch or a guard that depends on
the CTA: `setp.eq %p, %ctaid.x, 7; @%p bra SKIP` makes CTA 7 run another instruction stream
with the same tiles, and an unsampled CTA would be replayed with CTA 0's cycles. This module
finds, statically, the predicates that may differ between CTAs and evaluates them for every CTA
at once, so each CTA gets a class (equal class: equal control flow) that joins the memo key:

1. CTA-varying registers (a flow-insensitive taint analysis like isa/ir/uniformity.py's, over
   CTAs instead of lanes): sources are %ctaid.*, the clocks and %smid, and every register written
   by an instruction that reads memory or the tensor cores (ld, atom, wgmma, ldmatrix, ...);
   a register written from a varying one (or under a varying guard) varies. mbarrier results are
   not sources: they depend on the timing, which the memo key (the SM state) already holds.
2. The controlling predicates: the varying predicates that guard an instruction or a `bra`. None:
   every CTA runs the same control flow, one class (the memo as before).
3. Each must be computed in the kernel's straight-line prefix (before the first label, `bra` or
   `exit`), defined once in the kernel, from an unguarded chain of integer ALU instructions,
   `ld.param` and special registers (its backward slice). Then its value in every thread is a
   function of (%ctaid, %tid, parameters) fixed for the whole run, and two CTAs with the same
   values of all of them execute the same instructions with the same lanes (everything else that
   steers control is the same in every CTA). The slice is evaluated with the functional
   semantics (ops_*.py) for a chunk of CTAs at a time: one lane per (CTA, thread).
4. Otherwise (a trip count that differs per CTA: a grid-stride loop's tail), when every branch
   predicate and controlling predicate comes from such pure instructions wherever they are (the
   kernel's control skeleton), the skeleton is run for a chunk of CTAs at once, one lane per
   (CTA, thread), each lane at its own pc (the lowest pc runs next: the ALU ops are per lane, so
   the order does not change a lane's values), and a CTA's signature is every lane's path: the
   sequence of (pc, outcome) of its controlled instructions (those guarded by a controlling
   predicate; any other branch follows from the path so far), folded into two 64-bit hashes per
   lane (`_path`). At most `MAX_STEPS` instructions per chunk. An mbarrier wait's
   predicate (`mbarrier.try_wait`/`test_wait`, a spin loop's exit) is taken as true: a warp
   leaves the loop only when the phase completes (else the launch deadlocks, a named error), and
   how many spins that takes is timing, which the memo key (the SM state) holds.
5. Otherwise (a predicate from loaded data or a timing result, a path longer than the budget):
   `refused` names why, and the memo is not used for the launch (every CTA simulated in detail).

The runner (runner.py) also checks the tile plan on the first CTA of every class other than
CTA 0's (no plan when one differs), since the plan's sample CTAs need not include it.
"""

from __future__ import annotations

import numpy as np

from isa.ir import instructions as I
from isa.ir.operands import SReg
from isa.ir.program import LabelDef

CTA_SREGS = frozenset({"%ctaid.x", "%ctaid.y", "%ctaid.z", "%clock", "%clock64", "%globaltimer", "%smid"})
"""Special registers that may differ between CTAs (the clocks and %smid: per CTA on hardware)."""
NOT_EVALUATED = frozenset({"%clock", "%clock64", "%globaltimer", "%smid"})
EVAL = (I.Add, I.Sub, I.Mul, I.Mad, I.Shl, I.Shr, I.And, I.Or, I.Xor, I.Not, I.Min, I.Max, I.Setp, I.Selp,
        I.Mov, I.Cvt, I.LdParam)
"""Instructions the class evaluator runs (pure functions of their operands)."""
FROM_OPERANDS = EVAL + (I.ShflSync, I.VoteSync, I.ReduxSync, I.ElectSync, I.Ex2, I.Rcp, I.Fma)
"""Instructions whose results vary between CTAs only if an operand (or the guard) does."""
TIMING_RESULTS = (I._Mbar,)
"""Results that depend on the timing only (the memo key's SM state), not on the CTA."""
MAX_LANES = 1 << 17
"""Lanes (CTAs x threads) evaluated at once: bounds the evaluator's memory (registers x lanes x 8 B)."""
MAX_CHECKED = 64
"""Classes whose first CTA the runner checks against the tile plan; more classes: no memo."""


class CtaClasses:
    """`of[cta]`: the class of each CTA (0 = CTA 0's); `first[k]`: the first CTA of class k;
    `predicates`: the controlling predicates' names; `refused`: why no classes (then the memo
    must not be used), or None."""

    def __init__(self, of=None, first=(0,), predicates=(), refused: str | None = None):
        self.of = of
        self.first = list(first)
        self.predicates = tuple(predicates)
        self.refused = refused

    @property
    def count(self) -> int:
        return len(self.first)

    def __call__(self, cta: int) -> int:
        return 0 if self.of is None else int(self.of[cta])


def _sregs(x) -> list[str]:
    return [o.name for o in x.operands() if isinstance(o, SReg)]


def cta_varying(kernel) -> set[str]:
    """Names of the registers whose value may differ between CTAs (module docstring, step 1)."""
    varying: set[str] = set()
    changed = True
    while changed:
        changed = False
        for _, x in kernel.instructions():
            outs = [r.name for r in x.writes()]
            if not outs or all(o in varying for o in outs) or isinstance(x, TIMING_RESULTS):
                continue
            if (not isinstance(x, FROM_OPERANDS) or any(r.name in varying for r in x.reads())
                    or any(s in CTA_SREGS for s in _sregs(x))):
                varying.update(outs)
                changed = True
    return varying


def controlling(kernel, varying: set[str]) -> list[str]:
    """The varying predicates that guard an instruction or a branch, in first-use order."""
    out: list[str] = []
    for _, x in kernel.instructions():
        g = getattr(x, "guard", None)
        if g is not None and g.pred.name in varying and g.pred.name not in out:
            out.append(g.pred.name)
    return out


def _slice(kernel, preds: list[str]) -> tuple[list[int], str | None]:
    """Body indices of the instructions computing `preds` (in body order), or (_, why not)
    (module docstring, step 3)."""
    body = kernel.body
    prefix_end = len(body)
    for i, item in enumerate(body):
        if isinstance(item, (LabelDef, I.Bra, I.Exit)):
            prefix_end = i
            break
    defs: dict[str, list[int]] = {}
    for i, x in kernel.instructions():
        for r in x.writes():
            defs.setdefault(r.name, []).append(i)
    need, seen, todo = set(), set(), list(preds)
    while todo:
        r = todo.pop()
        if r in seen:
            continue
        seen.add(r)
        where = defs.get(r, [])
        if not where:
            continue  # never written: 0 in every CTA
        if len(where) > 1:
            return [], f"{r} is written at {len(where)} places (e.g. a trip count that differs per CTA)"
        i = where[0]
        x = body[i]
        if i >= prefix_end:
            return [], f"{r} is computed after the first branch or label (body #{i}: {x.text()})"
        if not isinstance(x, EVAL) or x.guard is not None:
            return [], f"{r} comes from {x.text()} (body #{i}): not a pure function of %ctaid and %tid"
        bad = [s for s in _sregs(x) if s in NOT_EVALUATED]
        if bad:
            return [], f"{r} reads {bad[0]} (body #{i})"
        need.add(i)
        todo.extend(q.name for q in x.reads())
    return sorted(need), None


class _Lanes:
    """The warp-state fields the ALU semantics read, for one lane per (CTA, thread) of a chunk."""

    def __init__(self, n: int, sreg: dict, nregs: int):
        self.lanes = slice(None)
        self.active = np.ones(n, dtype=bool)
        self.full = False
        self.nactive = self.nlive = n
        self.sreg = sreg
        self.sreg_uni = {}
        self.uni = [None] * nregs


class _Regs:
    """The executor fields the ALU semantics read: the register bits and the parameters."""

    def __init__(self, nregs: int, n: int, param):
        self.bits = np.zeros((nregs, n), dtype=np.uint64)
        self.param = param


def classify(kernel, launch, sample) -> CtaClasses:
    """The control-flow class of every CTA of `launch` (module docstring); `sample` is a
    CTAExecutor of CTA 0 (its compiled program, special registers and parameters are used)."""
    varying = cta_varying(kernel)
    preds = controlling(kernel, varying)
    if not preds:
        return CtaClasses()
    rows, why = _slice(kernel, preds)
    if why is not None:
        skel, why2 = _skeleton(kernel, preds)
        if why2 is not None:
            return CtaClasses(predicates=preds, refused=f"control flow may differ between CTAs: {why}; {why2}")
        return _classes_by_path(kernel, launch, sample, preds, skel)
    prog = sample.prog
    ops = {op.index: op for op in prog.ops}
    pred_rows = [prog.layout.row(p) for p in preds]
    setup = _Setup(kernel, launch, sample, rows)

    def signature(c0, k):
        ws, ex = setup.lanes(c0, k)
        for i in rows:
            if ops[i].fn(ex, ws, ws.active) is not None:  # pragma: no cover (EVAL ops fall through)
                raise AssertionError(f"body #{i} is not an ALU instruction")
        parts = [(ex.bits[r].reshape(k, setup.lpc)[:, setup.exists] != 0) for r in pred_rows]
        return np.packbits(np.concatenate(parts, axis=1), axis=1)
    return _group(launch.num_ctas, setup.lpc, signature, preds)


class _Setup:
    """The special registers a slice reads, per lane of a chunk of CTAs (one lane per thread)."""

    def __init__(self, kernel, launch, sample, rows):
        self.launch, self.param, self.nregs = launch, sample.param, sample.bits.shape[0]
        self.lpc = sample.num_warps * 32
        self.exists = np.arange(self.lpc) < sample.num_threads
        used = {s for i in rows for s in _sregs(kernel.body[i])}
        self.template = {k: np.concatenate([sample._sregs(w)[k] for w in range(sample.num_warps)])
                         for k in sample._sregs(0) if k in used}

    def lanes(self, c0: int, k: int) -> tuple:
        """(warp state, executor) stand-ins for CTAs c0..c0+k-1."""
        lpc, template = self.lpc, self.template
        sreg = {name: np.tile(v, k) for name, v in template.items() if not name.startswith("%ctaid")}
        ctas = np.arange(c0, c0 + k)
        gx, gy, _ = self.launch.grid
        for name, v in (("%ctaid.x", ctas % gx), ("%ctaid.y", (ctas // gx) % gy), ("%ctaid.z", ctas // (gx * gy))):
            if name in template:
                sreg[name] = np.repeat(v.astype(np.uint32), lpc)
        return _Lanes(k * lpc, sreg, self.nregs), _Regs(self.nregs, k * lpc, self.param)


def _group(n: int, lpc: int, signature, preds) -> CtaClasses:
    """Classes of CTAs 0..n-1 by `signature(c0, k)` (one row per CTA of a chunk; None: refused),
    numbered in order of their first CTA."""
    chunk = max(1, min(n, MAX_LANES // lpc))
    of = np.empty(n, dtype=np.int32)
    ids: dict[bytes, int] = {}
    first: list[int] = []
    for c0 in range(0, n, chunk):
        k = min(chunk, n - c0)
        sig = signature(c0, k)
        if sig is None:
            return CtaClasses(predicates=preds, refused=f"control flow may differ between CTAs and its skeleton "
                                                        f"runs more than {MAX_STEPS} steps per chunk of CTAs")
        rows_u, at, inv = np.unique(sig, axis=0, return_index=True, return_inverse=True)
        local = np.empty(len(rows_u), dtype=np.int32)
        for u in np.argsort(at):
            key = rows_u[u].tobytes()
            cls = ids.get(key)
            if cls is None:
                cls = ids[key] = len(first)
                first.append(c0 + int(at[u]))
            local[u] = cls
        of[c0:c0 + k] = local[inv.reshape(-1)]
    return CtaClasses(of, first, preds)


MAX_STEPS = 50_000
"""Instructions the skeleton run may execute per chunk of CTAs (step 4) before the classes are refused."""
_MUL = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))


WAITS = (I.MbarrierTryWaitParity, I.MbarrierTestWaitParity)
"""Wait predicates the skeleton takes as true (step 4)."""


def _skeleton(kernel, preds: list[str]) -> tuple[set[int], str | None]:
    """Body indices of the instructions that compute a branch predicate or a controlling one,
    wherever they are (step 4; mbarrier waits included), or (_, why not)."""
    defs: dict[str, list[int]] = {}
    for i, x in kernel.instructions():
        for r in x.writes():
            defs.setdefault(r.name, []).append(i)
    todo = list(preds) + [x.guard.pred.name for _, x in kernel.instructions()
                          if isinstance(x, I.Bra) and x.guard is not None]
    need, seen = set(), set()
    while todo:
        r = todo.pop()
        if r in seen:
            continue
        seen.add(r)
        for i in defs.get(r, []):
            x = kernel.body[i]
            if isinstance(x, WAITS):
                need.add(i)
                continue
            if not isinstance(x, EVAL):
                return set(), f"a branch or guard predicate depends on {x.text()} (body #{i})"
            bad = [s for s in _sregs(x) if s in NOT_EVALUATED]
            if bad:
                return set(), f"a branch or guard predicate depends on {bad[0]} (body #{i})"
            need.add(i)
            todo.extend(q.name for q in x.reads())
    return need, None


def _classes_by_path(kernel, launch, sample, preds, skel: set[int]) -> CtaClasses:
    """Step 4: classes from every lane's path through the control skeleton."""
    controlled = {i for i, x in kernel.instructions()
                  if getattr(x, "guard", None) is not None and x.guard.pred.name in preds}
    setup = _Setup(kernel, launch, sample, skel)

    def signature(c0, k):
        h = _path(sample.prog, skel, controlled, setup, c0, k)
        if h is None:
            return None
        return h.reshape(2, k, setup.lpc)[:, :, setup.exists].transpose(1, 0, 2).reshape(k, -1)
    return _group(launch.num_ctas, setup.lpc, signature, preds)


def _path(prog, skel, controlled, setup, c0, k):
    """Two 64-bit hashes per lane of the lane's path through the skeleton (CTAs c0..c0+k-1), or
    None past MAX_STEPS. Only the outcomes of the controlled instructions (guarded by a controlling
    predicate) are hashed: every other branch's outcome follows from the path so far (its predicate
    is the same in every CTA at the same point of the same path). A lane steps over instructions
    that neither compute the skeleton nor steer it (`nxt`)."""
    n = k * setup.lpc
    ws, ex = setup.lanes(c0, k)
    ops = prog.ops
    done_pc = len(ops)
    nxt = list(range(done_pc + 1))
    for p in range(done_pc - 1, -1, -1):
        x = ops[p].instr
        if not (x is None or isinstance(x, (I.Bra, I.Exit)) or ops[p].index in skel or ops[p].index in controlled):
            nxt[p] = nxt[p + 1]
    pc = np.where(np.tile(setup.exists, k), nxt[0], done_pc).astype(np.int64)
    h = np.zeros((2, n), dtype=np.uint64)
    for _ in range(MAX_STEPS):
        cur = int(pc.min())
        if cur >= done_pc:
            return h
        at = pc == cur
        op = ops[cur]
        x = op.instr
        if x is None or (isinstance(x, I.Exit) and x.guard is None):
            pc[at] = done_pc
            continue
        g = at
        if op.guard_row is not None:
            g = at & ((ex.bits[op.guard_row] != 0) ^ op.guard_neg)
        if op.index in controlled:
            word = np.where(g, np.uint64(2 * cur + 1), np.uint64(2 * cur))
            for j in (0, 1):
                h[j] = np.where(at, h[j] * _MUL[j] + word, h[j])
        if isinstance(x, I.Bra):
            pc[at & ~g] = nxt[cur + 1]
            pc[g] = nxt[prog.labels[x.target.name]]
        elif isinstance(x, I.Exit):
            pc[at & ~g] = nxt[cur + 1]
            pc[g] = done_pc
        else:
            if op.index in skel and g.any():
                if isinstance(x, WAITS):
                    ex.bits[prog.layout.row(x.pred.name), g] = 1
                else:
                    op.fn(ex, ws, g)
            pc[at] = nxt[cur + 1]
    return None
