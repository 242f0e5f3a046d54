"""The functional executor of one CTA: `issue(warp) -> Effect` (contract: docs/dev/EXECUTOR_API.md).

    CTAExecutor
    ├── RegisterFile      bits[reg, thread]           (regs.py)
    ├── shared memory     uint8[static + dynamic]      (SharedMemory of smem.py when present)
    ├── mbarriers         {smem addr: MbarrierState}   (mbarrier.py)
    ├── warps             pc, active lanes, block record, reconvergence stack (simt.py)
    ├── warpgroups        rendezvous, wgmma groups, fence state
    ├── bulk groups       per warp (TMA stores)
    ├── cp.async groups   per warp (ops_cpasync.py)
    ├── named barriers    bar.sync id -> arrived threads, generation
    └── Checker           races and protocol rules (checks.py)

Instructions are compiled once per Kernel (`program.compile_kernel`) into closures; `issue()` only
calls them. Data of async ops (TMA, wgmma, cp.async) is applied by `Effect.complete()`, never at issue.
Timing-only mode (`values=False`) skips the data of TMA copies, bulk stores and wgmma math but keeps
control flow, addresses and every Effect field identical.
"""

from __future__ import annotations

import copy

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from hopsim.functional.checks import Checker
from hopsim.functional.effect import Effect, Kind, WgmmaInfo, alu_effect
from hopsim.functional.errors import (
    Deadlock, IllegalInstruction, MbarrierNotInitialised, ProtocolError,
)
from hopsim.functional.gmem import GlobalMemory
from hopsim.functional.mbarrier import MbarrierState
from hopsim.functional.program import compile_kernel
from hopsim.functional.regs import WARP, RegisterFile, RegisterPool
from hopsim.functional.simt import NO_RPC, reconverge
from hopsim.functional.smem import SharedMemory

__all__ = ["Launch", "CTAExecutor", "Effect", "Kind", "WgmmaInfo"]

_ALU, _REGISTER, _COLLECTIVE = Kind.ALU, Kind.REGISTER, Kind.COLLECTIVE  # (issue()'s hot loop)


def _dim3(v) -> tuple[int, int, int]:
    if isinstance(v, int):
        return (v, 1, 1)
    v = tuple(int(x) for x in v)
    return (v + (1, 1, 1))[:3]


@dataclass(frozen=True)
class Launch:
    """A kernel launch: grid and block shape (x fastest), dynamic shared bytes, parameter values.

    `params` maps each `.param` name to its value: an int (pointer = a `GlobalMemory` address, or a
    tensor-map handle from `GlobalMemory.register_tensor_map`) or a float. `regs_per_thread`: the
    registers each thread gets at launch (nvcc's count / __launch_bounds__); when given, the
    warpgroups' setmaxnreg are checked against the CTA's register pool (ops_sync.py); None: not
    accounted."""

    grid: tuple = (1, 1, 1)
    block: tuple = (128, 1, 1)
    dynamic_smem: int = 0
    params: Mapping[str, int | float] = field(default_factory=dict)
    regs_per_thread: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "grid", _dim3(self.grid))
        object.__setattr__(self, "block", _dim3(self.block))

    @property
    def num_threads(self) -> int:
        b = self.block
        return b[0] * b[1] * b[2]

    @property
    def num_warps(self) -> int:
        return -(-self.num_threads // WARP)

    @property
    def num_ctas(self) -> int:
        g = self.grid
        return g[0] * g[1] * g[2]

    def cta_coords(self, linear: int) -> tuple[int, int, int]:
        gx, gy, _ = self.grid
        return (linear % gx, (linear // gx) % gy, linear // (gx * gy))


_LANE = np.arange(WARP, dtype=np.uint64)
LANEMASKS = {k: (f(_LANE) & 0xFFFFFFFF).astype(np.uint32) for k, f in {
    "eq": lambda l: np.uint64(1) << l, "lt": lambda l: (np.uint64(1) << l) - np.uint64(1),
    "le": lambda l: (np.uint64(2) << l) - np.uint64(1),
    "ge": lambda l: np.uint64(0xFFFFFFFF) ^ ((np.uint64(1) << l) - np.uint64(1)),
    "gt": lambda l: np.uint64(0xFFFFFFFF) ^ ((np.uint64(2) << l) - np.uint64(1))}.items()}
"""%lanemask_* per lane (PTX ISA): eq = bit lane, lt = bits below it, le = through it, ge/gt = at or
above / above it (32 bits)."""

_SREG_CACHE: dict = {}  # (block, grid, num_warps, warp) -> (special registers but %ctaid, uniform values)


class WarpState:
    """Per-warp control state. Lanes: `exists` (threads of the launch), `live` (not exited),
    `active` (the running path of a divergent branch: simt.py; all live lanes when converged)."""

    __slots__ = ("w", "pc", "done", "lanes", "active", "nactive", "full", "block", "wg", "sreg", "last_phase",
                 "uni", "sreg_uni", "none", "exists", "nexists", "live", "nlive", "rpc", "stack", "parked", "deferred", "met",
                 "where", "rows")

    def __init__(self, w: int, num_threads: int, sregs: dict, num_regs: int = 0, sreg_uni: dict | None = None):
        self.w = w
        self.pc = 0
        self.done = False
        self.lanes = slice(w * WARP, (w + 1) * WARP)
        tid = np.arange(w * WARP, (w + 1) * WARP)
        self.active = tid < num_threads
        self.nactive = int(self.active.sum())
        self.full = self.nactive == WARP
        self.exists = self.live = self.active
        self.nlive = self.nexists = self.nactive  # nexists: lanes of `exists` (never changes)
        self.rpc = NO_RPC                 # the running path's reconvergence pc (simt.py)
        self.stack: list = []             # suspended (pc, lanes, rpc) entries (simt.py)
        self.parked: dict = {}            # pc -> simt.Park: lanes waiting there for other lanes (simt.converge/rendezvous)
        self.deferred: list = []          # stack entries set aside while all their lanes wait (simt.reconverge)
        self.met: dict = {}               # pc -> a .sync rendezvous that met, for the paths resuming there
        self.where = str                  # pc -> "line N: text" for messages (the executor's `where`)
        self.block: tuple | None = None   # (key, kind, advance_on_resume)
        self.wg = w // 4
        self.sreg = sregs
        self.last_phase: dict[int, int] = {}  # mbarrier addr -> last phase this warp saw complete
        self.uni: list = [None] * num_regs    # warp-uniform register values (program.py, fast path)
        self.sreg_uni = (sreg_uni if sreg_uni is not None else
                         {k: int(v[0]) for k, v in sregs.items() if v.min() == v.max()})
        self.none = np.zeros(WARP, dtype=bool)
        self.rows: list = [None] * num_regs   # per register row: the view bits[row, lanes], made on
        # first use (semantics.with_scalar writes a uniform value with view.fill: the same bits)

    def __deepcopy__(self, memo):
        """A copy whose row views are rebuilt on the copy's register file (a deep-copied view
        would be an array of its own)."""
        new = WarpState.__new__(WarpState)
        memo[id(self)] = new
        for name in WarpState.__slots__:
            setattr(new, name, [None] * len(self.rows) if name == "rows" else copy.deepcopy(getattr(self, name), memo))
        return new


class WarpgroupState:
    """Rendezvous and wgmma bookkeeping of one warpgroup."""

    __slots__ = ("g", "seq", "arrived", "arrived_index", "fenced", "dirty", "uncommitted", "groups",
                 "committed", "completed", "retired", "inflight_rows", "op_count")

    def __init__(self, g: int):
        self.g = g
        self.seq = 0                   # number of finished rendezvous
        self.arrived: set[int] = set()
        self.arrived_index = -1
        self.fenced = False            # a wgmma.fence has executed (first-wgmma rule)
        self.dirty: set[int] = set()   # accumulator/A rows written by ordinary instructions since the last fence
        self.uncommitted: list = []    # wgmma ops issued since the last commit
        self.groups: list[list] = []   # committed groups: list of ops
        self.committed = 0
        self.completed = 0             # groups completed (in order)
        self.retired = 0               # groups covered by a wait_group that returned
        self.inflight_rows: set[int] = set()
        self.op_count = 0


class CTAExecutor:
    """All functional state of one CTA and the `issue()` entry point (see module docstring)."""

    def __init__(self, kernel, launch: Launch, gmem: GlobalMemory, cta: int | tuple = 0, *,
                 values: bool = True, checks: bool = True, check_phases: bool = True, smem=None):
        self.kernel = kernel
        self.launch = launch
        self.gmem = gmem
        self.values = values
        self.prog = compile_kernel(kernel)
        if isinstance(cta, int):
            self.cta_linear = cta
            self.cta = launch.cta_coords(cta)
        else:
            self.cta = _dim3(cta)
            gx, gy, _ = launch.grid
            self.cta_linear = self.cta[0] + gx * (self.cta[1] + gy * self.cta[2])
        nthreads = launch.num_threads
        self.num_threads = nthreads
        self.num_warps = launch.num_warps
        self.rf = RegisterFile(self.prog.layout, self.num_warps * WARP)
        self.bits = self.rf.bits
        self.smem_size = self.prog.static_smem + int(launch.dynamic_smem)
        self.smem_obj, self.smem = _make_smem(self.smem_size, smem)
        self.params = {}
        for name, v in dict(launch.params).items():
            if not isinstance(v, (int, float, np.integer, np.floating)):
                v = gmem.register_tensor_map(name, v)  # a tensor-map object given directly
            self.params[name] = v
        self.mbar: dict[int, MbarrierState] = {}
        self.bars: dict[int, list] = {}     # id -> [arrived_threads, generation, warps]
        self.bulk: dict[int, dict] = {}     # warp -> {"uncommitted": [], "groups": [], "committed", "completed"}
        self.regs = RegisterPool.of(launch.regs_per_thread, -(-launch.num_warps // 4))
        self.cpasync: dict[int, dict] = {}  # warp -> cp.async groups, the same fields (ops_cpasync.py)
        nregs = self.bits.shape[0]
        self.warps = []
        for w in range(self.num_warps):
            sregs, uni = self._sregs_uni(w)
            self.warps.append(WarpState(w, nthreads, sregs, nregs, sreg_uni=uni))
        for ws in self.warps:  # registers start at 0 in every lane
            ws.uni = [0] * nregs
            ws.where = self.where
        self.wgs = [WarpgroupState(g) for g in range(-(-self.num_warps // 4))]
        self.checker = Checker(self, enabled=checks, check_phases=check_phases)
        self.issued = 0
        self.clock_reads = 0
        self.divergences = 0   # divergent branches executed (simt.py; the memo refuses such CTAs)

    # ------------------------------------------------------------------------- special registers
    def _sregs_uni(self, w: int) -> tuple[dict, dict]:
        """(special registers of warp w, their warp-uniform values) without per-CTA numpy work:
        everything but %ctaid is a function of (block, grid, warp, shared sizes) and cached across CTAs (the
        arrays are only read: program.py copies them with astype)."""
        key = (self.launch.block, self.launch.grid, self.num_warps, w, self.smem_size, int(self.launch.dynamic_smem))
        base = _SREG_CACHE.get(key)
        if base is None:
            regs = self._sregs(w)
            for k in ("%ctaid.x", "%ctaid.y", "%ctaid.z"):
                del regs[k]
            base = (regs, {k: int(v[0]) for k, v in regs.items() if v.min() == v.max()})
            if len(_SREG_CACHE) > 4096:
                _SREG_CACHE.clear()
            _SREG_CACHE[key] = base
        regs, uni = dict(base[0]), dict(base[1])
        for k, v in zip(("%ctaid.x", "%ctaid.y", "%ctaid.z"), self.cta):
            regs[k] = np.full(WARP, v, dtype=np.uint32)
            uni[k] = int(v)
        return regs, uni

    def _sregs(self, w: int) -> dict:
        bx, by, bz = self.launch.block
        tid = np.arange(w * WARP, (w + 1) * WARP, dtype=np.uint32)
        gx, gy, gz = self.launch.grid
        u = lambda v: np.full(WARP, v, dtype=np.uint32)  # noqa: E731
        return {
            "%tid.x": tid % bx, "%tid.y": (tid // bx) % by, "%tid.z": tid // (bx * by),
            "%ntid.x": u(bx), "%ntid.y": u(by), "%ntid.z": u(bz),
            "%ctaid.x": u(self.cta[0]), "%ctaid.y": u(self.cta[1]), "%ctaid.z": u(self.cta[2]),
            "%nctaid.x": u(gx), "%nctaid.y": u(gy), "%nctaid.z": u(gz),
            "%laneid": np.arange(WARP, dtype=np.uint32), "%warpid": u(w), "%nwarpid": u(self.num_warps),
            "%smid": u(0), "%nsmid": u(1),
            "%lanemask_eq": LANEMASKS["eq"], "%lanemask_le": LANEMASKS["le"], "%lanemask_lt": LANEMASKS["lt"],
            "%lanemask_ge": LANEMASKS["ge"], "%lanemask_gt": LANEMASKS["gt"],
            "%dynamic_smem_size": u(int(self.launch.dynamic_smem)), "%total_smem_size": u(self.smem_size),
            "%cluster_ctarank": u(0), "%cluster_nctarank": u(1),
        }

    def clock_tick(self) -> int:
        """%clock / %clock64 / %globaltimer in the functional model: the CTA's issued instructions
        plus the clock reads so far (strictly increasing per read). The functional layer has no time:
        these are not cycles or nanoseconds (the timing model's cycles are not visible here)."""
        self.clock_reads += 1
        return self.issued + self.clock_reads

    def param(self, name: str):
        """Value of kernel parameter `name` (from `Launch.params`)."""
        try:
            return self.params[name]
        except KeyError:
            raise IllegalInstruction(f"kernel parameter {name} has no value in Launch.params "
                                     f"(given: {', '.join(self.params) or 'none'})") from None

    def registers_changed(self, rows=None) -> None:
        """Call after writing `self.bits` from outside the executor: drops the warp-uniform cache
        (`WarpState.uni`) of `rows` (default all) so the fast path re-reads the numpy values."""
        for ws in self.warps:
            if rows is None:
                ws.uni = [None] * len(ws.uni)
            else:
                for r in rows:
                    ws.uni[r] = None

    # ------------------------------------------------------------------------- queries
    def warp_done(self, w: int) -> bool:
        return self.warps[w].done

    @property
    def all_done(self) -> bool:
        return all(ws.done for ws in self.warps)

    def pc(self, w: int) -> int:
        return self.warps[w].pc

    def blocked(self, w: int):
        b = self.warps[w].block
        return None if b is None else b[0]

    def is_ready(self, key: tuple) -> bool:
        """Has the event `key` fired (see EXECUTOR_API.md, Event keys)?"""
        kind = key[0]
        if kind == "rdv":  # (the most frequent first: a warpgroup's collectives)
            return self.wgs[key[1]].seq > key[2]
        if kind == "mbar":
            b = self.mbar.get(key[1])
            return b is None or b.phase > key[2]  # an invalidated barrier wakes its waiters (they then fail)
        if kind == "bar":
            st = self.bars.get(key[1])
            return st is not None and st[1] > key[2]
        if kind == "wgmma":
            return self.wgs[key[1]].completed > key[2]
        if kind == "bulk":
            st = self.bulk.get(key[1])
            return st is not None and st["completed"] > key[2]
        if kind == "bulkr":
            st = self.bulk.get(key[1])
            return st is not None and st["read"] > key[2]
        if kind == "cpasync":
            st = self.cpasync.get(key[1])
            return st is not None and st["completed"] > key[2]
        if kind == "regs":
            return self.regs is not None and self.regs.released > key[1]
        raise ValueError(f"unknown event key {key!r}")

    # ------------------------------------------------------------------------- issue
    def issue(self, w: int, batch: int = 1, stop: frozenset | None = None) -> Effect:
        """Execute warp w's next instruction(s); see EXECUTOR_API.md. `stop`: register rows whose
        value is not yet there for the timing layer (scoreboarded loads in flight): an ALU batch
        ends before an instruction that reads, writes or is guarded by one of them."""
        ws = self.warps[w]
        if ws.done:
            raise IllegalInstruction("issue() on a warp that has exited", warp=w, cta=self.cta_linear)
        resumed = False
        if ws.block is not None:
            key, kind, advance, on_resume = ws.block
            if not self.is_ready(key):
                op = self.prog.ops[ws.pc]
                return Effect(kind=kind, warp=w, index=op.index, instr=op.instr, count=0, blocked_on=key)
            ws.block = None
            resumed = True
            if on_resume is not None:
                on_resume()
            if advance:
                ws.pc = self.prog.ops[ws.pc].next_pc
                if ws.pc == ws.rpc:
                    reconverge(ws)
        ops = self.prog.ops
        op = ops[ws.pc]
        try:
            if op.kind in _REGISTER:  # a run of ALU ops, or one MUFU/SHFL op (its own timing class)
                n = 0
                first = op
                alone = op.kind != _ALU
                check = self.checker.active
                lanes = ws.nactive
                ran = []
                while True:
                    g = op.guard_row
                    if g is None:
                        mask = ws.active
                    else:  # (_mask's warp-uniform guard inlined)
                        u = ws.uni[g]
                        if u is None:
                            mask = self._mask(op, ws)
                        else:
                            mask = ws.active if (u != 0) != op.guard_neg else ws.none
                    if check and op.check_regs:
                        self.checker.before(op, ws)
                    target = op.fn(self, ws, mask)
                    n += 1
                    ran.append(op)
                    if target is None:
                        ws.pc = op.next_pc
                    else:
                        ws.pc = target
                        if ws.nactive != lanes:  # a divergent branch or a parked path: the batch ends (simt.py)
                            if not ws.nactive:
                                reconverge(ws)
                            break
                    if ws.pc == ws.rpc:          # a path reaches its reconvergence pc (simt.py)
                        reconverge(ws)
                        break
                    op = ops[ws.pc]
                    if alone or n >= batch or op.kind != _ALU:
                        break
                    if stop is not None and (op.rows & stop or op.guard_row in stop):
                        break
                self.issued += n
                return alu_effect(first.kind, w, first.index, first.instr, n, lanes, resumed, ran)
            g = op.guard_row
            if g is None:
                mask = ws.active
            else:  # (_mask's warp-uniform guard inlined)
                u = ws.uni[g]
                if u is None:
                    mask = self._mask(op, ws)
                else:
                    mask = ws.active if (u != 0) != op.guard_neg else ws.none
            if self.checker.active and op.check_regs:
                self.checker.before(op, ws)
            eff = op.fn(self, ws, mask)
            eff.resumed = resumed
            eff.index = op.index
            eff.instr = op.instr
            if eff.blocked_on is None and not ws.done and ws.block is None:
                if eff.kind not in _COLLECTIVE:
                    ws.pc = op.next_pc
                if ws.pc == ws.rpc or not ws.nactive:  # reconvergence, or the path's lanes exited
                    reconverge(ws)
            self.issued += 1
            return eff
        except ProtocolError as e:
            raise e.located(warp=w, cta=self.cta_linear, index=op.index, text=_text(op.instr),
                            line=self.kernel.line_of(op.index))

    def where(self, pc: int) -> str:
        """The instruction at `pc` for messages: "line N: text" (or "#index: text" when not parsed)."""
        op = self.prog.ops[pc]
        line = self.kernel.line_of(op.index) if hasattr(self.kernel, "line_of") else None
        return f"{'line ' + str(line) if line is not None else '#' + str(op.index)}: {op.text}"

    def _mask(self, op, ws: WarpState) -> np.ndarray:
        g = op.guard_row
        if g is None:
            return ws.active
        u = ws.uni[g]
        if u is not None:
            return ws.active if (u != 0) != op.guard_neg else ws.none
        p = self.bits[g, ws.lanes] != 0
        if op.guard_neg:
            p = ~p
        return p & ws.active

    # ------------------------------------------------------------------------- blocking helpers
    def block(self, ws: WarpState, key: tuple, kind: str, advance: bool, on_resume=None) -> None:
        """Block warp ws on event `key`; on resume, call on_resume() and skip the instruction if
        `advance` (else re-execute it)."""
        ws.block = (key, kind, advance, on_resume)

    # ------------------------------------------------------------------------- mbarriers
    def mbarrier(self, addr: int) -> MbarrierState:
        b = self.mbar.get(addr)
        if b is None:
            raise MbarrierNotInitialised(f"no initialised mbarrier at shared address 0x{addr:x}", barrier=addr)
        return b

    # ------------------------------------------------------------------------- deadlock report
    def waiters(self) -> list[tuple]:
        """(warp, index, text, key, description) of every blocked live warp."""
        out = []
        for ws in self.warps:
            if ws.done or ws.block is None:
                continue
            op = self.prog.ops[ws.pc]
            key = ws.block[0]
            out.append((ws.w, op.index, _text(op.instr), key, self.describe(key)))
        return out

    def describe(self, key: tuple) -> str:
        k = key[0]
        if k == "mbar":
            b = self.mbar.get(key[1])
            state = (f" (phase {b.phase}: {b.pending}/{b.expected} arrivals pending, tx-count {b.tx_count})"
                     if b else " (invalidated)")
            return f"mbarrier 0x{key[1]:x} phase {key[2]} (parity {key[2] & 1}){state}"
        if k == "bar":
            st = self.bars.get(key[1])
            return f"bar.sync {key[1]} generation {key[2]}" + (f" ({st[0]} threads arrived)" if st else "")
        if k == "rdv":
            g = self.wgs[key[1]]
            return (f"warpgroup {key[1]} rendezvous #{key[2]} (warps arrived: {sorted(g.arrived)}; "
                    f"missing: {sorted(set(range(4 * key[1], 4 * key[1] + 4)) - g.arrived)})")
        if k == "wgmma":
            return f"wgmma group {key[2]} of warpgroup {key[1]}"
        if k == "bulk":
            return f"bulk-async group {key[2]} of warp {key[1]}"
        if k == "bulkr":
            return f"bulk-async group {key[2]} of warp {key[1]} (source reads, .read)"
        if k == "cpasync":
            return f"cp.async group {key[2]} of warp {key[1]}"
        if k == "regs":
            return f"setmaxnreg.inc of warpgroup {key[2]}: {self.regs.describe()}"
        return repr(key)

    def deadlock_error(self, detail: str = "every live warp is blocked and nothing can wake one") -> Deadlock:
        ws = self.waiters()
        lines = "; ".join(f"warp {w} at #{i} `{t}` waits on {d}" for w, i, t, _k, d in ws)
        first = ws[0] if ws else None
        barrier = phase = None
        if first and first[3][0] == "mbar":
            barrier, phase = first[3][1], first[3][2]
        return Deadlock(f"{detail}: {lines}", waiters=ws, warp=first[0] if first else None,
                        cta=self.cta_linear, index=first[1] if first else None,
                        line=self.kernel.line_of(first[1]) if first else None,
                        text=first[2] if first else None, barrier=barrier, phase=phase)


def _text(instr) -> str:
    if instr is None:
        return ""
    t = getattr(instr, "text", None)
    try:
        return t() if callable(t) else str(instr)
    except Exception:  # pragma: no cover - text of a malformed instruction
        return type(instr).__name__


def _make_smem(size: int, smem):
    """(SharedMemory object or None, its uint8 array)."""
    if smem is not None:
        return smem, _smem_array(smem)
    try:
        obj = SharedMemory(size)
        return obj, _smem_array(obj)
    except Exception:
        return None, np.zeros(size, dtype=np.uint8)


def _smem_array(obj) -> np.ndarray:
    if isinstance(obj, np.ndarray):
        return obj
    for name in ("data", "bytes", "buf", "mem", "array"):
        a = getattr(obj, name, None)
        if isinstance(a, np.ndarray):
            return a
    raise TypeError(f"cannot find the byte array of {type(obj).__name__}")
