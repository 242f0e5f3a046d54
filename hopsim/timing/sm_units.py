"""An SM's shared units, a warp's statistics and the config's hot-path constants (timing/sm.py's
`CtaRun` runs a CTA's warps on them).

`SM`: the units of one SM that its resident CTAs share (schedulers, shared-memory port, tensor
cores, TMA unit, the register-only class pipes per sub-partition, the global load/store paths);
`WarpStats`: where one warp's cycles went; `_Consts`: the timing config's numbers read once as
plain floats.
"""

from __future__ import annotations

from hopsim.timing.memory import MemorySystem
from hopsim.timing.atomics import atomic_costs
from hopsim.timing.opclass import PIPES, class_costs
from hopsim.timing.pipes import Jitter, Pipe
from hopsim.timing.units import GmemRequests, Schedulers, SmemPort, TensorCores, TmaUnit


class SM:
    """The units of one SM, shared by the CTAs resident on it."""

    def __init__(self, gpu, sm_id: int, memory: MemorySystem, *, trace: bool = False,
                 jitter: Jitter | None = None):
        """`memory`: the chip's MemorySystem, or this SM's `SmLink` share (partitioned mode)."""
        self.sm_id = sm_id
        self.sched = Schedulers(gpu, sm_id, trace)
        self.smem = SmemPort(gpu, sm_id, trace, jitter)
        self.tensor = TensorCores(gpu, sm_id, trace, jitter)
        self.tma = TmaUnit(gpu, memory, sm_id, trace, jitter)
        self.smem.link(self.tensor, self.tma)  # the shared-memory port's clients contend (units.py)
        self.memory = memory
        self.gst, self.gld_port = Pipe(f"SM{sm_id}.st.global", trace), Pipe(f"SM{sm_id}.ld.global", trace)
        n = self.sched.n  # one special-function and one shuffle pipe per sub-partition
        self.mufu = [Pipe(f"SM{sm_id}.SMSP{i}.MUFU", trace) for i in range(n)]
        self.shfl = [Pipe(f"SM{sm_id}.SMSP{i}.SHFL", trace) for i in range(n)]
        units = {"mufu": self.mufu, "shfl": self.shfl}  # the register-only class pipes (opclass.py)
        self.op_pipes = [[units[p][i] if p in units else Pipe(f"SM{sm_id}.SMSP{i}.{p}", trace) for p in PIPES] for i in range(n)]
        self.alu_pipes = [q for row in self.op_pipes for q in row if q not in self.mufu and q not in self.shfl]
        self.atom_smem, self.atom_gmem = Pipe(f"SM{sm_id}.atom.shared", trace), Pipe(f"SM{sm_id}.atom.global", trace)
        self.gld = GmemRequests(gpu)  # ld.global sectors in flight (bound)
        self.gmem_requests = 0  # ld/st.global L2 requests (128-B lines touched per warp access)
        self.gmem_sectors = 0  # 32-B sectors those requests move
        self.ctas_run = 0
        self.write_end = 0.0  # cycle the last asynchronous global write (TMA store) issued here lands


class WarpStats:
    """Where one warp's cycles went: issuing, or waiting (by what it waited on)."""

    __slots__ = ("cta", "warp", "issue", "wait", "tma", "wgmma", "start", "end", "instructions", "slices")

    def __init__(self, cta: int, warp: int, trace: bool):
        self.cta, self.warp = cta, warp
        self.issue = 0.0
        self.wait: dict[str, float] = {}
        self.tma = self.wgmma = False
        self.start = self.end = 0.0
        self.instructions = 0
        self.slices: list | None = [] if trace else None

    @property
    def role(self) -> str:
        """What the warp did (hopsim/result.py ROLES): "producer" issued TMA loads, "consumer" took
        part in warpgroup wgmmas, "producer+consumer" both (the `single` GEMM's TMA warp), "other"
        neither (e.g. the idle warps of a warp-specialised producer warpgroup)."""
        if self.tma:
            return "producer+consumer" if self.wgmma else "producer"
        return "consumer" if self.wgmma else "other"

    def add_wait(self, what: str, cycles: float) -> None:
        if cycles > 0:
            self.wait[what] = self.wait.get(what, 0.0) + cycles


class _Consts:
    """Plain floats of the config read once (hot path)."""

    def __init__(self, gpu):
        t = gpu.timing
        self.issue = float(t.issue_cycles.value)
        self.alu_tail = max(0.0, float(t.alu_latency_cycles.value) - self.issue)
        self.wgmma_issue = float(t.wgmma_issue_cycles.value)
        self.arrive = float(t.mbarrier_arrive_cycles.value)
        self.wakeup = float(t.mbarrier_wakeup_cycles.value)
        self.tma_issue = float(t.tma_issue_cycles.value)
        self.tma_issue_elect = float(t.tma_issue_elect_cycles.value)
        self.tma_issue_uniform = float(t.tma_issue_uniform_cycles.value)
        self.try_wait = float(t.mbarrier_try_wait_cycles.value)
        self.wgmma_sync = float(t.wgmma_sync_cycles.value)
        self.bar_sync = float(t.bar_sync_cycles.value)
        self.bar_per_warp = float(t.bar_sync_per_warp_cycles.value)
        self.gst_bw = float(t.gst_bytes_per_cycle_per_sm.value)
        self.line_issue, self.gld_bw = float(t.gmem_line_issue_cycles.value), float(t.gld_bytes_per_cycle_per_sm.value)
        self.banks = int(gpu.spec.smem_banks.value)
        self.costs = class_costs(t)  # register-only timing classes (opclass.py)
        self.atomics = atomic_costs(t)  # atom/red classes (atomics.py)
        self.bank_bytes = int(gpu.spec.smem_bank_bytes.value)
