"""The timed units of one SM: sub-partition schedulers, TMA unit, tensor cores, shared-memory port.

Each unit turns an operation (already described by the functional layer's effect record: byte
counts, wavefronts, WGMMA shape) into a completion time, using FIFO `Pipe`s (pipes.py). The SM
runner (sm.py) then waits ONE SimPy timeout per operation and applies the data at completion.
No unit computes a data value.

    warp ──issue──► SMSP[w % 4] (issue_cycles per instruction)
      ├─ ld/st.shared, ldmatrix, stmatrix ──► SmemPort (wavefronts x smem_cycles_per_wavefront)
      ├─ cp.async.bulk.tensor ──► TmaUnit: issue stage ─► MemorySystem (L2/HBM) ─► smem fill
      └─ wgmma.mma_async ──► TensorCores (m*n*k / tensor_fma_f16_per_cycle_per_sm per instruction)

Sources of the numbers: `hopsim/config/h100_sxm.py` (each field names its source).
"""

from __future__ import annotations

import heapq
from collections import deque

from typing import Hashable

from hopsim.timing.memory import MemorySystem
from hopsim.timing.pipes import Jitter, Pipe


class Schedulers:
    """The 4 sub-partition warp schedulers of an SM: one issue slot per cycle each.

    Assumption (not documented by NVIDIA, [FORUM-311023]): warp i of a CTA issues on SMSP i % 4.
    A run of n instructions of one warp occupies its scheduler n * issue_cycles (batched into one
    reservation). Dual issue and operand-collector stalls are not modelled.
    """

    def __init__(self, gpu, sm_id: int = 0, trace: bool = False):
        n = int(gpu.spec.num_subpartitions.value)
        self.issue_cycles = float(gpu.timing.issue_cycles.value)
        self.pipes = [Pipe(f"SM{sm_id}.SMSP{i}", trace) for i in range(n)]
        self.n = n

    def issue(self, now: float, warp: int, count: int = 1, label: str = "") -> float:
        """Issue `count` instructions of `warp`; return when the last one has issued."""
        return self.pipes[warp % self.n].reserve(now, count * self.issue_cycles, label)


class SmemPort:
    """The SM's shared-memory data path for LSU traffic (ld/st.shared, ldmatrix, stmatrix).

    Held `wavefronts * smem_cycles_per_wavefront` cycles per warp instruction (128 B per wavefront,
    docs/hopper-facts.md §3.2); a load's data is back `smem_latency_cycles` after its first wavefront, so
    a w-wavefront access completes at start + w * cpw + (smem_latency_cycles - cpw).
    Not modelled: arbitration with TMA fills and tensor-core operand reads (§3.5, undocumented).
    """

    def __init__(self, gpu, sm_id: int = 0, trace: bool = False, jitter: Jitter | None = None):
        t = gpu.timing
        self.cpw = float(t.smem_cycles_per_wavefront.value)
        self.latency = float(t.smem_latency_cycles.value)
        self.pipe = Pipe(f"SM{sm_id}.smem", trace)
        self.jitter = jitter or Jitter()
        self.wavefronts = 0
        self.ideal_wavefronts = 0
        self.accesses = 0

    def access(self, now: float, wavefronts: int, ideal: int | None = None, label: str = "") -> float:
        wavefronts = max(1, int(wavefronts))
        self.wavefronts += wavefronts
        self.ideal_wavefronts += wavefronts if ideal is None else max(1, int(ideal))
        self.accesses += 1
        end = self.pipe.reserve(now, wavefronts * self.cpw, label)
        return end + self.jitter(self.latency - self.cpw)

    @property
    def bank_conflicts(self) -> int:
        """Extra wavefronts beyond the ideal count (Nsight's 'bank conflicts', §3.6)."""
        return self.wavefronts - self.ideal_wavefronts


class TensorCores:
    """The 4 tensor cores of an SM, used together by one warpgroup's wgmma, as one FIFO pipe.

    Tensor-pipe time of one wgmma.mma_async m64nNk16 (f16/bf16) = 64 * N * 16 /
    `spec.tensor_fma_f16_per_cycle_per_sm` cycles (= N/2, docs/hopper-facts.md §7.5); its result is ready
    `timing.wgmma_fixed_latency_cycles` after it leaves the pipe. Instructions of all warpgroups of
    the SM queue on the same pipe in issue order; the pipe holds at most `timing.wgmma_queue_depth`
    (`accept`: an issue beyond waits until the oldest completes). Not modelled: smem operand bandwidth of SS wgmma
    (counted in `operand_bytes` only), power throttling, the sparse and fp8/tf32 variants' rates.
    """

    def __init__(self, gpu, sm_id: int = 0, trace: bool = False, jitter: Jitter | None = None):
        self.fma_per_cycle = float(gpu.spec.tensor_fma_f16_per_cycle_per_sm.value)
        self.fixed_latency = float(gpu.timing.wgmma_fixed_latency_cycles.value)
        self.pipe = Pipe(f"SM{sm_id}.tensor", trace)
        self.jitter = jitter or Jitter()
        self.queue_depth = max(1, int(gpu.timing.wgmma_queue_depth.value))
        self._ends: deque[float] = deque()  # pipe end times of the wgmmas not yet known complete
        self.flops = 0
        self.operand_bytes = 0
        self.instructions = 0

    def accept(self, now: float) -> float:
        """Earliest time >= `now` at which the pipe holds fewer than `queue_depth` wgmmas (a
        wgmma.mma_async issue waits for room: microbench__wgmma_queue)."""
        ends = self._ends
        while ends and ends[0] <= now:
            ends.popleft()
        if len(ends) < self.queue_depth:
            return now
        return ends[len(ends) - self.queue_depth]

    def pipe_cycles(self, m: int, n: int, k: int) -> float:
        return m * n * k / self.fma_per_cycle

    def mma(self, now: float, m: int, n: int, k: int, operand_bytes: int = 0, label: str = "") -> float:
        """Queue one wgmma; return the time its accumulators are final."""
        self.flops += 2 * m * n * k
        self.operand_bytes += operand_bytes
        self.instructions += 1
        end = self.pipe.reserve(now, self.pipe_cycles(m, n, k), label)
        self._ends.append(end)
        return end + self.jitter(self.fixed_latency)


class TmaUnit:
    """One SM's TMA engine: a request queue, a per-box unit cost, L2/HBM, and the smem fill.

    load:  issue stage (`tma_unit_box_cycles` per box, FIFO; the issuing thread itself is held
           `tma_issue_cycles` per box, in sm.py)
           -> MemorySystem.read (L2 hit or HBM miss, one L2 request per box row) -> smem fill
           (`tma_bytes_per_cycle`, at most one row per `tma_row_cycles`) -> + `tma_extra_latency_cycles`
           -> complete_tx on the mbarrier.
    store: issue stage -> smem read (`tma_bytes_per_cycle`; `.read` completion) -> L2 write
           (write completion).
    Not modelled: the number of boxes in flight (unbounded), multicast, im2col, OOB fill cost.
    """

    def __init__(self, gpu, memory: MemorySystem, sm_id: int = 0, trace: bool = False,
                 jitter: Jitter | None = None):
        t = gpu.timing
        self.issue_cycles = float(t.tma_unit_box_cycles.value)
        self.fill_bw = float(t.tma_bytes_per_cycle.value)
        self.row_cycles = float(t.tma_row_cycles.value)
        self.extra_latency = float(t.tma_extra_latency_cycles.value)
        self.memory = memory
        self.issue_pipe = Pipe(f"SM{sm_id}.TMA", trace)
        self.fill_pipe = Pipe(f"SM{sm_id}.TMA.fill", trace)
        self.jitter = jitter or Jitter()
        self.boxes = 0
        self.bytes_loaded = 0
        self.bytes_stored = 0

    def load(self, now: float, key: Hashable, nbytes: int, label: str = "", hit: bool | None = None,
             hbm_share: float = 1.0, rows: int = 1) -> float:
        """One box global -> shared; return when its bytes are in shared memory.
        `hit`, `hbm_share`: L2 residency decided at dispatch (partitioned mode), else looked up now.
        `rows`: the box's rows (contiguous global ranges), one L2 request each: the fill takes
        `max(bytes / tma_bytes_per_cycle, rows * tma_row_cycles)`."""
        self.boxes += 1
        self.bytes_loaded += nbytes
        t = self.issue_pipe.reserve(now, self.issue_cycles, label)
        t, _hit = self.memory.read(t, key, nbytes, hit, hbm_share, rows)
        fill = nbytes / self.fill_bw
        gen = rows * self.row_cycles
        t = self.fill_pipe.reserve(t, gen if gen > fill else fill, label)
        return t + self.jitter(self.extra_latency)

    def store(self, now: float, key: Hashable, nbytes: int, label: str = "") -> tuple[float, float]:
        """One box shared -> global; return (smem read done, global write done)."""
        self.boxes += 1
        self.bytes_stored += nbytes
        t = self.issue_pipe.reserve(now, self.issue_cycles, label)
        read_done = self.fill_pipe.reserve(t, nbytes / self.fill_bw, label)
        return read_done, self.memory.write(read_done, key, nbytes)

    def busy_cycles(self) -> float:
        """Cycles the unit is busy: issue stage or fill (the larger; they overlap)."""
        return max(self.issue_pipe.busy, self.fill_pipe.busy)


class GmemRequests:
    """The bound on one SM's ld.global sectors in flight (`gmem_outstanding_sectors_per_sm`).

    A line request of n sectors is admitted when the sectors in flight plus n fit the bound: it
    waits for the earliest returns (heap of (return cycle, sectors)); `hold` records its return.
    With few warps the bound never binds; with many it caps an SM's bandwidth at bound x 32 B /
    latency (Little's law), which is how the microbenchmark measures it."""

    __slots__ = ("bound", "_heap", "inflight", "waited")

    def __init__(self, gpu):
        self.bound = max(1, int(gpu.timing.gmem_outstanding_sectors_per_sm.value))
        self._heap: list = []
        self.inflight = 0
        self.waited = 0.0

    def admit(self, now: float, n: int) -> float:
        """Earliest time >= now at which n more sectors fit."""
        heap = self._heap
        t = now
        while heap and (heap[0][0] <= t or self.inflight + n > self.bound):
            end, k = heapq.heappop(heap)
            self.inflight -= k
            if end > t:
                t = end
        self.waited += t - now
        return t

    def hold(self, end: float, n: int) -> None:
        heapq.heappush(self._heap, (end, n))
        self.inflight += n

    def state(self, now: float) -> tuple:
        """Sectors in flight after `now`, relative times (the memo key's part for this unit)."""
        return tuple(sorted((e - now, k) for e, k in self._heap if e > now))
