"""Every CTA's translate-mode tile offsets from one traced partial run (tile_plan.TilePlan).

A translate-mode plan (`TilePlan`, a grouped raster: tiles not affine in %ctaid) needs, for each CTA
c, the coordinates of its first TMA load of each (warp, tensor map); `TilePlan._offsets` gets them
from a partial zero-time run of c (`capture_tiles`). CTAs of one launch differ only in %ctaid (the
other special registers, the parameters and the global memory they read are the same), so when
nothing derived from %ctaid steers the run, every CTA issues the same instructions in the same order
and only the values derived from %ctaid differ. `batch_offsets` checks that on one traced partial run
(of CTA 1) and then recomputes just those values for every CTA:

  taint      a register row of a warp is tainted once an ALU instruction that reads %ctaid or a
             tainted row writes it ("slice" instructions);
  safe run   no tainted row (nor %ctaid) reaches a guard, a branch, an address, a non-ALU
             instruction (shared memory, mbarriers, ...) or a MUFU/SHFL, except a TMA load's
             coordinates; no clock is read by a slice instruction; no global memory is written or
             read (no ld/st/atom/red.global, TMA store, cp.async: the partial runs leave global
             memory as it was, and read none of it); no divergent branch; a slice instruction
             runs on a full warp. Otherwise `batch_offsets` returns None and the caller runs each
             CTA (the results are the same, only slower).
  replay     for each CTA, the slice instructions run again in trace order on one scratch
             executor whose %ctaid is the CTA's, with the untainted registers they touch restored
             from the traced run (they are the same in every CTA); at each first TMA load of a
             (warp, tensor map) its coordinates are read with the instruction's own getter.

The same compiled closures compute the values as in a CTA's own run. The result is checked against
the traced CTA's own offsets, CTA 0's (zero) and the last CTA's partial run; the tile plan is also
checked against every CTA simulated in detail (runner.py).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from hopsim.functional.effect import Kind
from hopsim.functional.executor import CTAExecutor
from hopsim.functional.ops_async import tma_coords_getter
from hopsim.functional.regs import WARP
from hopsim.functional.semantics import CLOCKS, Ctx
from isa.ir.operands import Mem, Reg, SReg

CTAID = ("%ctaid.x", "%ctaid.y", "%ctaid.z")

#: Non-ALU classes a safe partial run may execute (untainted): private state of the CTA only.
#: (Not allowed: LD_GLOBAL (atom.global is one), ST_GLOBAL, TMA_STORE, bulk groups, cp.async.)
PRIVATE = frozenset({Kind.MUFU, Kind.SHFL, Kind.LD_SHARED, Kind.ST_SHARED, Kind.LDMATRIX, Kind.STMATRIX,
                     Kind.MBAR_INIT, Kind.MBAR_ARRIVE, Kind.MBAR_EXPECT_TX, Kind.MBAR_COMPLETE_TX,
                     Kind.MBAR_WAIT, Kind.MBAR_TEST, Kind.MBAR_INVAL, Kind.BAR_SYNC, Kind.BAR_ARRIVE,
                     Kind.FENCE, Kind.TMA_LOAD, Kind.WGMMA_FENCE, Kind.WGMMA, Kind.WGMMA_COMMIT,
                     Kind.WGMMA_WAIT, Kind.SETMAXNREG, Kind.EXIT})


class _Unsafe(Exception):
    """The traced run does not show that all CTAs run alike (see the module docstring)."""


def _sregs(x) -> list:
    """The special registers among an operand (tuples and memory bases included)."""
    if isinstance(x, SReg):
        return [x.name]
    if isinstance(x, Mem):
        return _sregs(x.base)
    if isinstance(x, (tuple, list)):
        return [n for item in x for n in _sregs(item)]
    return []


class _Tracer:
    """Wraps a CTA executor's compiled ops: follows the taint, records the slice and the sites."""

    def __init__(self, ex, need: set):
        self.ex, self.need = ex, need
        self.tainted = [set() for _ in range(ex.num_warps)]
        self.events: list = []   # ("op", w, op, snapshot) | ("site", w, handle, op, snapshot), in trace order
        self.sites: dict = {}    # (w, handle) -> the traced coords
        self.unsafe: str | None = None
        layout = ex.prog.layout
        self.coord_rows: dict = {}
        self.names: dict = {}
        self.unknown: set = set()  # ops whose registers program.py could not list
        for op in ex.prog.ops:
            ins = op.instr
            names = _sregs(ins.operands()) if ins is not None else []
            self.names[id(op)] = names
            try:
                if ins is not None:
                    frozenset(layout.row(r.name) for r in (*ins.reads(), *ins.writes()))
            except Exception:
                self.unknown.add(id(op))
            if op.kind == Kind.TMA_LOAD:
                self.coord_rows[id(op)] = frozenset(layout.row(c.name) for c in ins.coords if isinstance(c, Reg))
        ex.prog = dataclasses.replace(ex.prog, ops=[dataclasses.replace(op, fn=self._wrap(op)) for op in ex.prog.ops])

    def _wrap(self, op):
        fn = op.fn

        def wrapped(ex, ws, mask):
            if self.unsafe is not None:
                return fn(ex, ws, mask)
            try:
                snap = self._before(op, ws)
            except _Unsafe as e:
                self.unsafe = str(e)
                return fn(ex, ws, mask)
            out = fn(ex, ws, mask)
            if op.kind == Kind.TMA_LOAD:
                key = out.tile_key
                if key is not None and (ws.w, key[0]) in self.need and (ws.w, key[0]) not in self.sites:
                    self.sites[(ws.w, key[0])] = key[1]
                    self.events.append(("site", ws.w, key[0], op, snap))
            elif snap is not None:
                self.tainted[ws.w] |= op.rows_written
                self.events.append(("op", ws.w, op, snap))
            return out
        return wrapped

    def _snapshot(self, op, ws, tainted: set) -> tuple:
        bits = self.ex.bits
        return tuple((r, bits[r, ws.lanes].copy(), ws.uni[r]) for r in sorted(op.rows - tainted))

    def _before(self, op, ws):
        """The snapshot of an op to replay (a slice op or a TMA load), else None; _Unsafe if the
        op lets %ctaid steer the run."""
        if id(op) in self.unknown:
            raise _Unsafe(f"the registers of {op.text} are not known")
        tainted = self.tainted[ws.w]
        hit = op.rows & tainted
        names = self.names[id(op)]
        ctaid = any(n in CTAID for n in names)
        if op.guard_row is not None and op.guard_row in tainted:
            raise _Unsafe(f"a guard depends on %ctaid ({op.text})")
        if op.kind == Kind.ALU:
            if not (hit or ctaid):
                return None
            if any(n in CLOCKS for n in names):
                raise _Unsafe(f"a clock is read with %ctaid-derived values ({op.text})")
            if not (ws.full and ws.nactive == WARP and ws.active.all()):
                raise _Unsafe(f"%ctaid-derived values on a partial warp ({op.text})")
            return self._snapshot(op, ws, tainted)
        if op.kind not in PRIVATE:
            raise _Unsafe(f"{op.kind} in the partial run ({op.text})")
        if ctaid or (hit and (op.kind != Kind.TMA_LOAD or not hit <= self.coord_rows[id(op)])):
            raise _Unsafe(f"%ctaid-derived values reach a {op.kind} ({op.text})")
        return self._snapshot(op, ws, tainted) if op.kind == Kind.TMA_LOAD else None


def trace_partial(plan, capture, ref: int = 1):
    """CTA `ref`'s partial run (as `TilePlan._offsets` makes it) with the taint followed: the
    tracer (`.unsafe`: why the batch does not apply, else None; `.sites`: the traced coords of
    each (warp, handle)'s first tile), or None for an executor that is not a CTAExecutor."""
    need = set(plan.first)
    ex = plan.make_executor(ref)
    if not isinstance(ex, CTAExecutor):  # a scripted executor (tests): each CTA is run
        return None
    tracer = _Tracer(ex, need)

    def stop(tiles):
        return all(any(k[0] == h for k, _ in tiles[w]) for w, h in need)

    capture(ex, stop, favour={w for w, _h in need})
    if tracer.unsafe is None and getattr(ex, "divergences", 0):
        tracer.unsafe = "a divergent branch in the partial run"
    if tracer.unsafe is None and set(tracer.sites) != need:
        tracer.unsafe = "the partial run ended before the first tile of each (warp, tensor map)"
    return tracer


def batch_offsets(plan, num_ctas: int, dims: int, capture) -> np.ndarray | None:
    """Offsets (num_ctas, len(plan.first), dims) of every CTA's first tile of each (warp, handle)
    from CTA 0's, in `plan.first`'s order (zero padded); None when the traced run is not safe
    (module docstring) or the replay does not give CTA 0 zero offsets and the traced CTA its own.
    `capture(ex, stop, favour)`: tile_plan.capture_tiles."""
    groups = list(plan.first)
    ref = 1
    if num_ctas < 3 or not groups:
        return None
    tracer = trace_partial(plan, capture, ref)
    if tracer is None or tracer.unsafe is not None:
        return None
    out = _replay(plan, tracer, groups, dims, num_ctas)
    if out is None or out[0].any():
        return None
    for (w, h), co in tracer.sites.items():
        first = plan.first[(w, h)]
        own = [a - b for a, b in zip(co, first)] + [0] * (dims - len(co))
        if len(co) != len(first) or out[ref, groups.index((w, h))].tolist() != own:
            return None
    return out


def _replay(plan, tracer, groups: list, dims: int, num_ctas: int) -> np.ndarray | None:
    """Run the slice for every CTA on a scratch executor (see the module docstring)."""
    scratch = plan.make_executor(0)
    prog = scratch.prog
    ctx = Ctx(prog.kernel, prog.layout, prog.shared, prog.params, prog.labels)
    getters = {}
    gi = {g: i for i, g in enumerate(groups)}
    steps = []
    for ev in tracer.events:
        if ev[0] == "op":
            _k, w, op, snap = ev
            steps.append((False, scratch.warps[w], op, snap, None))
        else:
            _k, w, h, op, snap = ev
            g = getters.get(id(op))
            if g is None:
                g = getters[id(op)] = tma_coords_getter(op.instr, ctx)
            steps.append((True, scratch.warps[w], op, snap, (g, gi[(w, h)], plan.first[(w, h)])))
    warps = sorted({id(s[1]): s[1] for s in steps}.values(), key=lambda ws: ws.w)
    out = np.zeros((num_ctas, len(groups), dims), dtype=np.int64)
    bits = scratch.bits
    coords_of = plan.coords_of
    for cta in range(num_ctas):
        xyz = coords_of(cta)
        for ws in warps:
            for name, v in zip(CTAID, xyz):
                ws.sreg[name] = np.full(WARP, v, dtype=np.uint32)
                ws.sreg_uni[name] = int(v)
        row = out[cta]
        for site, ws, op, snap, info in steps:
            lanes, uni = ws.lanes, ws.uni
            for r, b, u in snap:
                bits[r, lanes] = b
                uni[r] = u
            mask = scratch._mask(op, ws)
            if site:
                getter, j, first = info
                co = getter(scratch, ws, mask)
                row[j, :len(co)] = [a - b for a, b in zip(co, first)]
            else:
                target = op.fn(scratch, ws, mask)
                if target is not None and target != op.next_pc:
                    return None
    return out
