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

from hopsim.functional.effect import Kind
from hopsim.timing.memory import MemorySystem
from hopsim.timing.pipes import Jitter, Pipe

WAVEFRONT_BYTES = 128
"""Bytes one shared-memory wavefront moves (32 banks x 4 B, docs/hopper-facts.md §3.2)."""
STORE_KINDS = frozenset({Kind.ST_SHARED, Kind.STMATRIX})
"""Access kinds the shared-memory data path serves at `smem_store_bytes_per_cycle` (SmemPort.access)."""
FILL_HORIZON = 8192.0
"""Cycles a finished TMA fill is kept for port queries at earlier times (> the tensor pipe's lookahead)."""


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
    """The SM's shared-memory data path for LSU traffic (ld/st.shared, ldmatrix, stmatrix), and the
    port its three clients share (wgmma SS operand reads, TMA fills, LSU wavefronts).

    Held `wavefronts * smem_cycles_per_wavefront` cycles per warp instruction (128 B per wavefront,
    docs/hopper-facts.md §3.2); a load's data is back `smem_latency_cycles` after its first wavefront, so
    a w-wavefront access completes at start + w * cpw + (smem_latency_cycles - cpw).

    Contention (`smem_port_bytes_per_cycle` C > 0, microbench__smemport): when a client starts a
    service it takes `share(...)`: its own demand (B/cycle it moves alone: LSU 128 / cpw, a TMA box
    its bytes x `smem_port_tma_weight` over its fill time (weight 0: fills are not on the port),
    a wgmma its operand bytes x `smem_port_wgmma_weight` over its tensor-pipe time) unless the clients active at that moment want more than C. Then clients of a
    higher `smem_port_rank_*` keep their demand, and the client gets the rest, shared with the
    clients of its own rank in proportion to the demands (at least C / 16). Active: LSU while its
    pipe has wavefronts queued, wgmma while the tensor pipe has work, TMA while a box's fill interval
    covers the moment. A fluid approximation: the rate is decided when a service starts.
    """

    MIN_SHARE = 1.0 / 16

    def __init__(self, gpu, sm_id: int = 0, trace: bool = False, jitter: Jitter | None = None):
        t = gpu.timing
        self.cpw = float(t.smem_cycles_per_wavefront.value)
        self.latency = float(t.smem_latency_cycles.value)
        self.pipe = Pipe(f"SM{sm_id}.smem", trace)
        self.jitter = jitter or Jitter()
        self.wavefronts = 0
        self.ideal_wavefronts = 0
        self.accesses = 0
        self.cap = float(t.smem_port_bytes_per_cycle.value)
        self.contended = False  # until link(): a port alone has no other clients
        self.wgmma_weight = float(t.smem_port_wgmma_weight.value)
        self.rank_lsu = float(t.smem_port_rank_lsu.value)
        self.rank_tma = float(t.smem_port_rank_tma.value)
        self.rank_wgmma = float(t.smem_port_rank_wgmma.value)
        self.tma_weight = float(t.smem_port_tma_weight.value)
        self.lsu_demand = WAVEFRONT_BYTES / self.cpw
        st = float(t.smem_store_bytes_per_cycle.value)
        self.store_cpw = WAVEFRONT_BYTES / st if st > 0 else self.cpw  # st.shared / stmatrix (microbench__smemport)
        self.tensor: TensorCores | None = None
        self.tma: TmaUnit | None = None
        self.slowed = 0.0  # cycles the clients' services were lengthened by contention (all clients)

    def link(self, tensor: "TensorCores", tma: "TmaUnit") -> None:
        """The SM's other port clients (their activity slows the LSU and each other)."""
        self.tensor, self.tma = tensor, tma
        self.contended = self.cap > 0
        tensor.port = self if self.contended else None
        tma.port = self if self.contended and self.tma_weight > 0 else None
        tma.tensor = tensor if tma.fill_charge > 0 else None
        tensor.fill_charge = tma.fill_charge

    def share(self, rank: float, demand: float, t: float, lsu: bool = True, tma: bool = True,
              wgmma: bool = True) -> float:
        """Port B/cycle a client of `rank` wanting `demand` B/cycle gets at time `t`, beside the
        other clients active then (the flags leave the client itself out)."""
        hi = eq = 0.0
        if lsu and self.pipe.next_free > t:
            if self.rank_lsu > rank:
                hi += self.lsu_demand
            elif self.rank_lsu == rank:
                eq += self.lsu_demand
        if tma and self.tma.port is not None:
            d = self.tma.demand_at(t)
            if d:
                if self.rank_tma > rank:
                    hi += d
                elif self.rank_tma == rank:
                    eq += d
        if wgmma:
            tc = self.tensor
            if tc.pipe.next_free > t and tc.operand_rate:
                d = tc.operand_rate * self.wgmma_weight
                if self.rank_wgmma > rank:
                    hi += d
                elif self.rank_wgmma == rank:
                    eq += d
        if hi == 0.0 and eq == 0.0:  # no other client active: nothing to share (a lone wgmma reads
            return demand                # at its own rate, microbench__wgmma: TensorCores.mma)
        cap = self.cap
        avail = cap - hi
        if demand + eq <= avail:
            return demand
        floor = cap * self.MIN_SHARE
        got = avail * demand / (demand + eq) if avail > 0 else 0.0
        return got if got > floor else floor

    def access(self, now: float, wavefronts: int, ideal: int | None = None, label: str = "") -> float:
        wavefronts = max(1, int(wavefronts))
        self.wavefronts += wavefronts
        self.ideal_wavefronts += wavefronts if ideal is None else max(1, int(ideal))
        self.accesses += 1
        cpw = self.store_cpw if label in STORE_KINDS else self.cpw
        service = wavefronts * cpw
        if self.contended:
            start = now if now > self.pipe.next_free else self.pipe.next_free
            demand = WAVEFRONT_BYTES / cpw
            got = self.share(self.rank_lsu, demand, start, lsu=False)
            if got < demand:
                slow = wavefronts * WAVEFRONT_BYTES / got
                self.slowed += slow - service
                service = slow
        end = self.pipe.reserve(now, service, label)
        return end + self.jitter(self.latency - self.cpw)

    @property
    def bank_conflicts(self) -> int:
        """Extra wavefronts beyond the ideal count (Nsight's 'bank conflicts', §3.6)."""
        return self.wavefronts - self.ideal_wavefronts


class TensorCores:
    """The 4 tensor cores of an SM, used together by one warpgroup's wgmma, as one FIFO pipe.

    Tensor-pipe time of one wgmma.mma_async m64nNk16 (f16/bf16) = 64 * N * 16 /
    `spec.tensor_fma_f16_per_cycle_per_sm` cycles (= N/2, docs/hopper-facts.md §7.5); its result is ready
    `timing.wgmma_fixed_latency_cycles` (SS; `wgmma_rs_fixed_latency_cycles` with A in registers)
    after its pipe time. The pipe takes the next wgmma no sooner than its occupancy: the pipe time,
    at least `wgmma_pipe_min_cycles` and, SS, its operand bytes / `wgmma_ss_operand_bytes_per_cycle`
    (microbench__wgmma: small N run at 13 cycles (RS) and 128 B/cycle of A + B (SS) per wgmma, while
    a lone one's latency stays N/2 + fixed). Instructions of all warpgroups of
    the SM queue on the same pipe in issue order; the pipe holds at most `timing.wgmma_queue_depth`
    (`accept`: an issue beyond waits until the oldest completes). SS operand reads share the
    shared-memory port (`port`, SmemPort.share: a wgmma beside TMA fills / LSU wavefronts that want
    more than the port gives takes longer). Not modelled: power throttling, the sparse and fp8/tf32
    variants' rates.
    """

    def __init__(self, gpu, sm_id: int = 0, trace: bool = False, jitter: Jitter | None = None):
        self.fma_per_cycle = float(gpu.spec.tensor_fma_f16_per_cycle_per_sm.value)
        self.fixed_latency = float(gpu.timing.wgmma_fixed_latency_cycles.value)
        self.rs_fixed_latency = float(gpu.timing.wgmma_rs_fixed_latency_cycles.value)
        self.min_cycles = float(gpu.timing.wgmma_pipe_min_cycles.value)
        rate = float(gpu.timing.wgmma_ss_operand_bytes_per_cycle.value)
        self.ss_cycles_per_byte = 1.0 / rate if rate > 0 else 0.0
        self.pipe = Pipe(f"SM{sm_id}.tensor", trace)
        self.jitter = jitter or Jitter()
        self.queue_depth = max(1, int(gpu.timing.wgmma_queue_depth.value))
        self._ends: deque[float] = deque()  # pipe end times of the wgmmas not yet known complete
        self.flops = 0
        self.operand_bytes = 0
        self.instructions = 0
        self.port: SmemPort | None = None  # set by SmemPort.link when the port is contended
        self.operand_rate = 0.0  # operand B/cycle of the last queued wgmma (its port demand)
        self.landings: deque = deque()  # (fill start, bytes) of TMA fills not yet charged (TmaUnit.load)
        self.fill_charge = 0.0  # tensor cycles per byte of a fill landing while the pipe works

    def accept(self, now: float) -> float:
        """Earliest time >= `now` at which the pipe holds fewer than `queue_depth` wgmmas (a
        wgmma.mma_async issue waits for room: microbench__wgmma_queue)."""
        ends = self._ends
        while ends and ends[0] <= now:
            ends.popleft()
        if len(ends) < self.queue_depth:
            return now
        return ends[len(ends) - self.queue_depth]

    def _fill_charge(self, now: float, cycles: float) -> float:
        """Tensor cycles the TMA fills cost that land before this wgmma would end, while the pipe
        works: during the queued wgmmas (before the queue tail) or during this one; a fill that
        lands in an idle gap before it costs nothing. Each fill is charged once, to the first
        wgmma reserved after it is known (fill starts come in FIFO order)."""
        tail = self.pipe.next_free
        start = now if now > tail else tail
        end = start + cycles
        landings = self.landings
        nbytes = 0
        while landings and landings[0][0] < end:
            s, b = landings.popleft()
            if s < tail or s >= start:
                nbytes += b
        return nbytes * self.fill_charge

    def pipe_cycles(self, m: int, n: int, k: int) -> float:
        return m * n * k / self.fma_per_cycle

    def occupancy(self, cycles: float, operand_bytes: int, a_from_regs: bool) -> float:
        """Pipe cycles a wgmma of pipe time `cycles` holds the pipe: at least the floor and, SS,
        its operand bytes at the lone read rate."""
        occ = cycles if cycles > self.min_cycles else self.min_cycles
        if not a_from_regs and self.ss_cycles_per_byte:
            rd = operand_bytes * self.ss_cycles_per_byte
            if rd > occ:
                occ = rd
        return occ

    def mma(self, now: float, m: int, n: int, k: int, operand_bytes: int = 0, label: str = "",
            a_from_regs: bool = False) -> float:
        """Queue one wgmma; return the time its accumulators are final."""
        self.flops += 2 * m * n * k
        self.operand_bytes += operand_bytes
        self.instructions += 1
        cycles = self.pipe_cycles(m, n, k)
        occ = self.occupancy(cycles, operand_bytes, a_from_regs)
        port = self.port
        if port is not None and operand_bytes:
            self.operand_rate = operand_bytes / occ
            want = self.operand_rate * port.wgmma_weight
            start = now if now > self.pipe.next_free else self.pipe.next_free
            got = port.share(port.rank_wgmma, want, start, wgmma=False)
            if got < want:
                slow = occ * want / got
                port.slowed += slow - occ
                cycles += slow - occ
                occ = slow
        if self.landings:
            charge = self._fill_charge(now, occ)
            if charge:
                cycles += charge
                occ += charge
                if port is not None:
                    port.slowed += charge
        end = self.pipe.reserve(now, occ, label)
        self._ends.append(end)
        fixed = self.rs_fixed_latency if a_from_regs else self.fixed_latency
        return end - occ + cycles + self.jitter(fixed)


class TmaUnit:
    """One SM's TMA engine: a request queue, a per-box unit cost, L2/HBM, and the smem fill.

    load:  issue stage (`tma_unit_box_cycles` per box, FIFO; the issuing thread itself is held
           `tma_issue_cycles` per box, in sm.py)
           -> MemorySystem.read (L2 hit or HBM miss, one L2 request per box row) -> smem fill
           (`tma_bytes_per_cycle`, at most one row per `tma_row_cycles`) -> + `tma_extra_latency_cycles`
           -> complete_tx on the mbarrier.
    store: issue stage -> smem read (`tma_bytes_per_cycle`; `.read` completion) -> L2 write
           (write completion).
    Fills and store reads take the shared-memory port beside wgmma operand reads and LSU
    wavefronts (`port`, SmemPort.share). A fill landing while the tensor pipe works charges it
    `smem_port_fill_tensor_cycles_per_kib` per KiB (microbench__smemport, wgmma beside a TMA
    stream; TensorCores._fill_charge adds it to the first wgmma reserved after the fill is known).
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
        self.requests_loaded = 0  # L2 requests of the loads (`rows` of load(); the power model's e_tma_request_pj)
        self.bytes_loaded = 0
        self.bytes_stored = 0
        self.port: SmemPort | None = None  # set by SmemPort.link when the port is contended
        self._fills: deque = deque()  # (start, end, B/cycle) of fills not known finished (contention only)
        self.fill_charge = float(t.smem_port_fill_tensor_cycles_per_kib.value) / 1024.0  # tensor cycles per byte
        self.tensor: TensorCores | None = None  # set by SmemPort.link when fills charge the tensor pipe

    def load(self, now: float, key: Hashable, nbytes: int, label: str = "", hit: bool | None = None,
             hbm_share: float = 1.0, rows: int = 1) -> float:
        """One box global -> shared; return when its bytes are in shared memory.
        `hit`, `hbm_share`: L2 residency decided at dispatch (partitioned mode), else looked up now.
        `rows`: the box's rows (contiguous global ranges), one L2 request each: the fill takes
        `max(bytes / tma_bytes_per_cycle, rows * tma_row_cycles)`."""
        self.boxes += 1
        self.requests_loaded += rows
        self.bytes_loaded += nbytes
        t = self.issue_pipe.reserve(now, self.issue_cycles, label)
        t, _hit = self.memory.read(t, key, nbytes, hit, hbm_share, rows)
        fill = nbytes / self.fill_bw
        gen = rows * self.row_cycles
        if gen > fill:
            fill = gen
        if self.port is not None:
            fill = self._contended_fill(t, nbytes, fill)
        if self.tensor is not None:  # the tensor pipe is charged if wgmmas run when it lands
            self.tensor.landings.append((t if t > self.fill_pipe.next_free else self.fill_pipe.next_free, nbytes))
        t = self.fill_pipe.reserve(t, fill, label)
        return t + self.jitter(self.extra_latency)

    def _contended_fill(self, arrival: float, nbytes: int, fill: float) -> float:
        """The fill time of a box beside the port's other clients active when its fill starts."""
        port = self.port
        start = arrival if arrival > self.fill_pipe.next_free else self.fill_pipe.next_free
        w = port.tma_weight
        want = w * nbytes / fill
        got = port.share(port.rank_tma, want, start, tma=False)
        if got < want:
            slow = w * nbytes / got
            port.slowed += slow - fill
            fill = slow
        self._fills.append((start, start + fill, w * nbytes / fill))
        return fill

    def demand_at(self, t: float) -> float:
        """B/cycle the fills take of the port at time t (0 when no fill covers t). Fills start in
        FIFO order; those that ended `FILL_HORIZON` cycles before a query are dropped (queries come
        at a service's start: now, or a queued tensor-pipe start up to its queue ahead)."""
        fills = self._fills
        old = t - FILL_HORIZON
        while fills and fills[0][1] <= old:
            fills.popleft()
        for s, e, r in fills:
            if s > t:
                return 0.0
            if e > t:
                return r
        return 0.0

    def port_state(self, now: float) -> tuple:
        """The fills after `now` that the port sees, relative times, and the tensor pipe's pending
        fill charge (the memo key's part; empty when neither applies)."""
        debt = tuple((s - now, b) for s, b in self.tensor.landings) if self.tensor is not None else ()
        if self.port is None:
            return debt
        return tuple((s - now, e - now, r) for s, e, r in self._fills if e > now) + debt

    def store(self, now: float, key: Hashable, nbytes: int, label: str = "") -> tuple[float, float]:
        """One box shared -> global; return (smem read done, global write done)."""
        self.boxes += 1
        self.bytes_stored += nbytes
        t = self.issue_pipe.reserve(now, self.issue_cycles, label)
        read = nbytes / self.fill_bw
        if self.port is not None:
            read = self._contended_fill(t, nbytes, read)
        read_done = self.fill_pipe.reserve(t, read, label)
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
