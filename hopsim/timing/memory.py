"""L2 and HBM shared by all SMs: latency, bandwidth, and L2 residency of tiles.

Model (what it does):
- **Residency** is tracked per *tile*: a key the requester names (for TMA: the tensor map and the
  box coordinates; for ld/st.global: the 128-B line). `L2Residency` is an LRU of tiles with a byte
  capacity (`spec.l2_bytes`): a read of a resident tile is an L2 hit and refreshes it; a miss
  inserts it (first touch brings it in), evicting least-recently-used tiles beyond capacity. A
  store makes its tile resident (write-back L2). So a tile of A that the CTAs of one row of the
  grid re-read is fetched from HBM once and then hits, as on silicon while it stays in L2.
- **Bandwidth**: two chip-wide FIFO `Pipe`s, L2 -> SM (`timing.l2_bytes_per_s`) and HBM -> L2
  (`timing.hbm_bytes_per_s`), converted to bytes per SM cycle at the run's SM clock
  (`GpuConfig.clock_mhz`: L2 and HBM have clocks of their own). A hit moves its bytes over the L2 pipe; a miss over the HBM pipe
  and then the L2 pipe.
- **Shared reads** (partitioned mode): tiles that several SMs read at about the same time are read
  from L2 once and delivered to each (`timing.l2_delivery_bytes_per_s` bounds the delivery;
  microbench__tma_share.json: 7.7-8 TB/s of distinct data, up to ~20 TB/s delivered when 4+ SMs
  read the same boxes). The shared mode charges every read as distinct (not modelled there).
- **Sharing is partial**: a read's share 1/r of the L2 bytes and requests is kept in part
  (`timing.l2_share_bytes_merge`, `timing.l2_share_requests_merge`): the L2 serves a box once
  for SMs that request it together (microbench__tma_share, __tma_stagger: the gain fades once the
  readers are ~1,000-2,000 cycles apart), and a GEMM's load pattern keeps only part of that gain
  (microbench__tma_gemm). The HBM fetch of a merged miss stays 1/r (the tile comes from HBM once).
- **Requests**: the L2 also has a request rate (`timing.l2_requests_per_s`); a TMA box makes one
  request per row, so narrow boxes (32B/64B swizzle) are request-bound, wide ones byte-bound.
- **Latency**: a hit completes `timing.gmem_l2_latency_cycles` after its bytes leave the L2 pipe;
  a miss `gpu.hbm_latency_cycles` (the hit latency plus `timing.hbm_extra_latency_ns` at the
  run's SM clock) after they leave the HBM pipe and the L2 pipe.
- **Stores** (st.global sectors, TMA stores) are written into L2 (the line becomes resident) and
  written back to HBM (`bytes_to_hbm`): each stored byte takes `timing.hbm_write_bytes_per_s`
  time on the HBM link, the FIFO the reads use. The L2 is a write-back cache: up to
  `l2_dirty_fraction x l2_bytes` (this link's share) of stored bytes wait dirty (`wb_debt`) and
  are written back in the link's idle time (a gap before a later request); beyond that they take
  link time as they arrive, so reads queue behind them. A copy of N bytes beyond L2 thus moves N
  read + N written bytes over HBM at the link's rate, and a GEMM's C tiles drain while the link
  idles. The writer never waits for its write-back. Simplification: every stored byte is written
  back once (a line stored twice counts twice); the dirty bytes left at kernel end are counted in
  `bytes_to_hbm` but written after the kernel.
- **Loaded latency of ld.global misses under mixed traffic** (`timing.hbm_loaded_latency_fraction`
  k): an ld.global line that misses L2 while its CTA also stores waits, beyond the unloaded miss
  latency L0, k x w x the link time of its SM's ld.global bytes in flight x and of their share w of
  writes (w = the CTA's stored / loaded bytes so far, at most 1): k w x (1/R + w/X) cycles (R, X:
  one SM's HBM read and write rates). A copy thread with one 4-B load outstanding then runs at
  its Little's-law rate below the link's (membw copyu: 2-8 KB in flight per SM), while a float4
  copy (32 KB) still saturates the link (the FIFO's wait takes over). Read-only CTAs (w = 0), a
  CTA's loads before its first store, and TMA loads keep the unloaded latency. x and w are the
  memo key's (the SM's sectors in flight) and the CTA's own history: the CTA memo stays exact.
- **Miss merging (MSHR)**: a tile records when its bytes are in L2 (HBM pipe end + HBM latency -
  L2 latency); a hit on a tile still being fetched starts its L2 transfer only then, so CTAs
  that request a tile together all wait for the one HBM fetch (which moves the bytes once).

What it does not model: the two L2 partitions (near/far latency), sectors and partial-tile hits,
DRAM banks/row buffers, write-back deferred to eviction (see Stores), the ``l2Promotion`` of tensor maps, and
requests filling idle gaps before a pipe's queue tail (see pipes.py).
"""

from __future__ import annotations

from collections import OrderedDict
from itertools import compress, islice
from typing import Hashable

from hopsim.timing.pipes import QUANTUM, GapPipe, Jitter, Pipe


LINE = 128
"""Global-memory granule of the L2 residency model for ld/st.global (one L2 line, one request)."""

SECTOR = 32
"""Global-memory access granule: a warp access moves whole 32-B sectors (coalescing)."""

GLINE = "ld.global line"
"""Tile-plan handle of an ld.global line: its tile key is (GLINE, (address // LINE,)) (memo.py)."""


def coalesce(ranges) -> dict:
    """128-B line address -> bytes of the 32-B sectors a warp access touches in it (the runs of
    sectors in `ranges`, from ops_mem._sector_ranges), in address order."""
    lines: dict = {}
    for addr, nbytes in ranges:
        a, end = addr - addr % LINE, addr + nbytes
        if a < end <= a + LINE:  # the run lies in one line (a warp's sectors of one row: the usual case)
            lines[a] = lines.get(a, 0) + nbytes
            continue
        while a < end:
            lines[a] = lines.get(a, 0) + min(a + LINE, end) - max(a, addr)
            a += LINE
    return lines


class L2Residency:
    """LRU set of tiles with a byte capacity."""

    __slots__ = ("capacity", "used", "_tiles", "_ready", "hits", "misses", "hit_bytes", "miss_bytes", "reread")
    warm = False  # WarmResidency: the tiles a launch reads are resident at its start

    def __init__(self, capacity_bytes: int, reread: tuple | None = None):
        self.capacity = int(capacity_bytes)
        self.reread = reread  # (start, end) bytes of the re-read hit ramp (dispatch_residency), None: strict LRU
        self.used = 0
        self._tiles: OrderedDict[Hashable, int] = OrderedDict()
        self._ready: dict[Hashable, float] = {}
        self.hits = self.misses = self.hit_bytes = self.miss_bytes = 0

    def access(self, key: Hashable, nbytes: int) -> bool:
        """Read `nbytes` of tile `key`; return True on a hit. A miss makes the tile resident."""
        tiles = self._tiles
        if key in tiles:
            tiles.move_to_end(key)
            self.hits += 1
            self.hit_bytes += nbytes
            return True
        self.misses += 1
        self.miss_bytes += nbytes
        self._insert(key, nbytes)
        return False

    def access_all(self, keys: list, nbytes: list) -> list:
        """`access(keys[j], nbytes[j])` for each j in order (one call: the dispatch-time walk of a
        CTA's tiles, memo.DispatchResidency); return the hit flags."""
        move, insert = self._tiles.move_to_end, self._insert
        out = []
        flag = out.append
        for key, nb in zip(keys, nbytes):
            try:  # a hit (most are): one look-up
                move(key)
            except KeyError:
                insert(key, nb)
                flag(False)
            else:
                flag(True)
        hits = out.count(True)
        hit_bytes = sum(compress(nbytes, out))
        self.hits += hits
        self.misses += len(out) - hits
        self.hit_bytes += hit_bytes
        self.miss_bytes += sum(islice(nbytes, len(out))) - hit_bytes
        return out

    def write(self, key: Hashable, nbytes: int) -> None:
        """A store: the tile becomes (or stays) resident and most recently used."""
        if key in self._tiles:
            self._tiles.move_to_end(key)
        else:
            self._insert(key, nbytes)

    def _insert(self, key: Hashable, nbytes: int) -> None:
        self._tiles[key] = nbytes
        self.used += nbytes
        while self.used > self.capacity and len(self._tiles) > 1:
            old_key, old = self._tiles.popitem(last=False)
            self.used -= old
            self._ready.pop(old_key, None)

    def set_ready(self, key: Hashable, t: float) -> None:
        """The cycle the bytes of a tile being fetched are in L2."""
        if key in self._tiles:
            self._ready[key] = t

    def ready(self, key: Hashable) -> float:
        return self._ready.get(key, 0.0)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._tiles


class L2Overflow(Exception):
    """A launch of a same-buffer loop read more distinct bytes than the L2 residency holds: its
    inputs cannot all be resident at its start (`WarmResidency`); the runner times it as rotated."""


class WarmResidency(L2Residency):
    """The L2 at the start of a launch inside a loop over the same buffers (launch.LOOPS "same"):
    the previous identical launch read the same tiles, so every tile this launch reads is resident
    at its start when the launch's distinct read footprint fits in the residency's capacity
    (`gpu.l2_residency_bytes` = spec.l2_bytes x timing.l2_effective_capacity_fraction). A tile's
    first read is a hit (hit latency, no HBM fetch); from then on the LRU as in `L2Residency`
    (a tile evicted by later stores or reads and read again misses). `warm_bytes`: the distinct
    bytes first read so far; past the capacity the premise fails and `L2Overflow` is raised
    (simplification: a footprint beyond the L2 is timed as the rotated loop, a cold L2).
    Stores are as in `L2Residency` (not modelled: stores hitting the previous launch's dirty lines)."""

    __slots__ = ("_seen", "warm_bytes")
    warm = True

    def __init__(self, capacity_bytes: int, reread: tuple | None = None):
        super().__init__(capacity_bytes, reread)
        self._seen: set = set()
        self.warm_bytes = 0

    def first_reads(self, nbytes: int) -> None:
        """Count `nbytes` of tiles read for the first time (resident from the previous launch)."""
        self.warm_bytes += nbytes
        if self.warm_bytes > self.capacity:
            raise L2Overflow(self.warm_bytes, self.capacity)

    def access(self, key: Hashable, nbytes: int) -> bool:
        if key in self._tiles or key in self._seen:
            self._seen.add(key)
            return super().access(key, nbytes)
        self._seen.add(key)
        self.first_reads(nbytes)
        self.hits += 1
        self.hit_bytes += nbytes
        self._insert(key, nbytes)
        return True

    def access_all(self, keys: list, nbytes: list) -> list:
        return [self.access(key, nb) for key, nb in zip(keys, nbytes)]


class MemorySystem:
    """Chip-wide L2 + HBM: one instance shared by every SM of a simulation.

    Its two links are `GapPipe`s: a request reserved for a future arrival (an SM's ld.global
    waiting for room among its outstanding sectors, a miss's L2 leg after its HBM transfer) does
    not make the requests that other SMs make before it wait (pipes.GapPipe). `now`: the
    simulation's clock (a callable), set by the runner, lets the links forget past intervals."""

    PIPE = GapPipe
    now = None
    allocates = True  # a store enters the L2 residency (memo.PartitionedLink: not)

    def __init__(self, gpu, *, trace: bool = False, jitter: Jitter | None = None):
        t = gpu.timing
        self.l2_latency = float(t.gmem_l2_latency_cycles.value)
        self.hbm_latency = gpu.hbm_latency_cycles  # L2 hit latency + DRAM ns at the run's clock
        self.l2_bw = gpu.l2_bytes_per_cycle  # bytes/s at the run's SM clock (config)
        self.hbm_bw = gpu.hbm_bytes_per_cycle
        self.hbm_wr_bw = gpu.hbm_write_bytes_per_cycle
        self.loaded_frac = float(t.hbm_loaded_latency_fraction.value)  # k of the loaded ld.global miss latency
        self.link_sms = int(gpu.spec.num_sms.value)  # SMs sharing these links (runner: those used; SmLink: 1)
        self.wb_room = float(gpu.timing.l2_dirty_fraction.value) * float(gpu.spec.l2_bytes.value)
        self.wb_debt = 0.0  # stored bytes not yet written back (dirty in L2)
        self.l2_req = gpu.l2_requests_per_cycle
        self.l2_dlv = gpu.l2_delivery_bytes_per_cycle
        self.l2_dlv_req = gpu.l2_delivery_requests_per_cycle
        self.merge_bytes = float(t.l2_share_bytes_merge.value)  # share of the dispatch-time sharing kept (bytes)
        self.merge_req = float(t.l2_share_requests_merge.value)  # (requests)
        self.l2_pipe = self.PIPE("L2->SM", trace)
        self.hbm_pipe = self.PIPE("HBM->L2", trace)
        self._reads = 0
        self.port = SharedPort(self) if self.PIPE is GapPipe else None  # requests made without one
        self.residency = L2Residency(gpu.l2_residency_bytes, gpu.l2_reread_ramp_bytes)
        self.jitter = jitter or Jitter()
        self.bytes_from_l2 = 0  # bytes read not fetched from HBM for this read (hits, merged misses)
        self.bytes_from_hbm = 0  # bytes that missed and came from HBM
        self.bytes_l2_distinct = 0.0  # read bytes charged against l2_bytes_per_s (after the sharing merge)
        self.bytes_to_l2 = 0  # bytes stored
        self.bytes_to_hbm = 0  # stored bytes written back to HBM

    def _l2_service(self, nbytes: int, requests: int, share: float = 1.0) -> float:
        """Time a read takes of the L2 link: the L2's distinct reads of its bytes and requests
        (`share` = 1/r when r SMs of a wave read the tile, kept in part: each pays
        1 - merge x (1 - share), `timing.l2_share_*_merge`) and the delivery of all its bytes
        and requests to this SM (`timing.l2_delivery_*_per_s`). Counts the distinct bytes it
        charges against `l2_bytes_per_s` in `bytes_l2_distinct` (the power model's fed-L2 term)."""
        distinct = nbytes * (1.0 - self.merge_bytes * (1.0 - share))
        self.bytes_l2_distinct += distinct
        return max(distinct / self.l2_bw,
                   requests * (1.0 - self.merge_req * (1.0 - share)) / self.l2_req,
                   nbytes / self.l2_dlv, requests / self.l2_dlv_req)

    def loaded_extra(self, inflight_bytes: float, w: float) -> float:
        """Cycles an ld.global miss waits beyond the unloaded latency when its CTA also writes
        (`timing.hbm_loaded_latency_fraction` k; module docstring): k w x (1/R + w/X), x =
        `inflight_bytes` of its SM's ld.global bytes in flight (itself included), w = its CTA's
        stored / loaded bytes so far (at most 1), R, X one SM's HBM read and write rates. Both are
        in the CTA memo's key or the CTA's own history (memo-exact)."""
        if not w or not inflight_bytes:
            return 0.0
        w = min(1.0, w)
        return self.loaded_frac * w * inflight_bytes * self.link_sms * (1.0 / self.hbm_bw + w / self.hbm_wr_bw)

    def read(self, arrival: float, key: Hashable, nbytes: int, hit: bool | None = None,
             hbm_share: float = 1.0, requests: int = 1, port: SharedPort | None = None,
             inflight_bytes: float = 0.0, w: float = 0.0) -> tuple[float, bool]:
        """Read a tile arriving at `arrival`; return (time its bytes reach the SM, hit?).

        `hit` given: the residency was decided at CTA dispatch (partitioned mode, memo.py); a
        miss then moves `hbm_share * nbytes` over this link's HBM pipe (its share of a fetch
        merged with the other CTAs of its wave that read the tile) and pays the miss latency;
        hit or miss, `hbm_share` is also its share of the L2 read of those bytes (read once,
        delivered to each reader). Without `hit` (shared mode) every read is a distinct read.
        `port`: the requesting SM's `SharedPort` (shared mode): its requests take each link in
        their order (none starts before the SM's previous one on that link has ended).
        `inflight_bytes`, `w`: an ld.global line's SM's ld.global bytes in flight and its CTA's
        stored / loaded bytes: a miss then adds `loaded_extra` (a TMA load: 0, unchanged)."""
        res = self.residency
        port = port or self.port
        self._reads += 1
        if not self._reads & 255 and self.now is not None:
            self._forget()
        if hit is None:
            hit = res.access(key, nbytes)
            if hit:
                ready = res.ready(key)
                if ready > arrival:  # merged with a fetch in flight
                    arrival = ready
        if hit:
            self.bytes_from_l2 += nbytes
            if port is not None and port.l2 > arrival:
                arrival = port.l2
            t = self.l2_pipe.reserve(arrival, self._l2_service(nbytes, requests, hbm_share), "hit")
            if port is not None:
                port.l2 = t
            return t + self.jitter(self.l2_latency), True
        self.bytes_from_hbm += nbytes * hbm_share
        if self.wb_debt:
            self._drain(arrival)
        # the rest of a merged miss was fetched by another reader: served by L2 for this one (the
        # shared mode counts such a read, issued after the fetch began, as a hit: same total)
        self.bytes_from_l2 += nbytes * (1.0 - hbm_share)
        if port is not None and port.hbm > arrival:
            arrival = port.hbm
        t = self.hbm_pipe.reserve(arrival, nbytes * hbm_share / self.hbm_bw, "miss")
        res.set_ready(key, t + self.hbm_latency - self.l2_latency)
        if port is not None:
            port.hbm = t
            if port.l2 > t:
                t = port.l2
        t = self.l2_pipe.reserve(t, self._l2_service(nbytes, requests, hbm_share), "miss")
        if port is not None:
            port.l2 = t
        if w and self.loaded_frac:
            t += self.loaded_extra(inflight_bytes, w)
        return t + self.jitter(self.hbm_latency), False

    def write(self, arrival: float, key: Hashable, nbytes: int, port: SharedPort | None = None) -> float:
        """Store a tile into L2 and post its write-back to HBM; return when it is in L2.
        `port`: as in `read` (the SM's stores take the L2 link in their order)."""
        port = port or self.port
        if self.allocates:
            self.residency.write(key, nbytes)
        self.bytes_to_l2 += nbytes
        self.bytes_to_hbm += nbytes
        if port is not None and port.l2 > arrival:
            arrival = port.l2
        t = self.l2_pipe.reserve(arrival, nbytes / self.l2_bw, "store")
        if port is not None:
            port.l2 = t
        if self.wb_debt:
            self._drain(t)
        self.wb_debt += nbytes
        excess = self.wb_debt - self.wb_room
        if excess > 0:  # the dirty share of L2 is full: written back as it arrives
            if port is not None and port.hbm > t:  # after the storing SM's earlier HBM traffic
                wb = self.hbm_pipe.reserve(port.hbm, excess / self.hbm_wr_bw, "write-back")
            else:
                wb = self.hbm_pipe.reserve(t, excess / self.hbm_wr_bw, "write-back")
            if port is not None:
                port.hbm = wb
            self.wb_debt = self.wb_room
        return t + self.jitter(self.l2_latency)

    def write_lines(self, arrival: float, lines: dict) -> None:
        """`write(arrival, ("line", a), b)` for each line a -> b bytes of `lines`, in order (a warp's
        st.global, sm.py): the same arithmetic, with the per-call work hoisted where a store does
        not allocate and has no port (the partitioned mode's links)."""
        if self.allocates or self.port is not None:
            for a, b in lines.items():
                self.write(arrival, ("line", a), b)
            return
        l2_reserve, hbm_reserve, hbm = self.l2_pipe.reserve, self.hbm_pipe.reserve, self.hbm_pipe
        l2_bw, wr_bw, room, jitter, lat = self.l2_bw, self.hbm_wr_bw, self.wb_room, self.jitter, self.l2_latency
        for b in lines.values():
            self.bytes_to_l2 += b
            self.bytes_to_hbm += b
            t = l2_reserve(arrival, b / l2_bw, "store")
            if self.wb_debt and t > hbm.next_free:  # (_drain does nothing without idle link time before t)
                self._drain(t)
            self.wb_debt += b
            excess = self.wb_debt - room
            if excess > 0:  # the dirty share of L2 is full: written back as it arrives
                hbm_reserve(t, excess / wr_bw, "write-back")
                self.wb_debt = room
            if jitter.max_cycles:  # (draws as write() does; off, the latency is unchanged)
                jitter(lat)

    def _forget(self) -> None:
        """Drop the links' busy intervals that ended before the clock (GapPipe.forget_before)."""
        now = self.now()
        self.l2_pipe.forget_before(now)
        self.hbm_pipe.forget_before(now)

    def _drain(self, now: float) -> None:
        """Write dirty bytes back in the HBM link's idle time before `now` (whole 1/QUANTUM
        cycles of it, so the link is free again by `now`)."""
        pipe = self.hbm_pipe
        gap = now - pipe.next_free
        if gap <= 0:
            return
        gap = gap * QUANTUM // 1 / QUANTUM
        d = min(self.wb_debt, gap * self.hbm_wr_bw)
        cycles = d / self.hbm_wr_bw
        if cycles > gap:  # rounding: keep the link free at `now`
            cycles = gap
        if cycles > 0:
            pipe.reserve(pipe.next_free, cycles, "write-back")
            self.wb_debt = max(0.0, self.wb_debt - d)


class SharedPort:
    """One SM's port to the chip-wide `MemorySystem` (the shared memory mode).

    The chip's links fill idle gaps (`GapPipe`): a request that one SM reserves for a future
    arrival does not hold up the other SMs. An SM's own requests still take each link in the
    order it makes them, none starting before its previous one there has ended (`l2`, `hbm`: the
    end of its last use of each link), as its requests queue on its own link in the partitioned
    mode (`SmLink`, a FIFO): with the SMs alike, the two modes then give the same times (issue 15
    item 4: the memo's partitioned mode against this exact mode). Requests made on the
    `MemorySystem` without a port share its own port (one requester: the FIFO of `Pipe`)."""

    __slots__ = ("memory", "l2", "hbm")
    lookups = 0  # the SM-level memo's question (PartitionedLink.lookups); never asked in shared mode

    def __init__(self, memory: MemorySystem):
        self.memory = memory
        self.l2 = self.hbm = 0.0

    def read(self, arrival: float, key: Hashable, nbytes: int, hit: bool | None = None,
             hbm_share: float = 1.0, requests: int = 1, inflight_bytes: float = 0.0,
             w: float = 0.0) -> tuple[float, bool]:
        return self.memory.read(arrival, key, nbytes, hit, hbm_share, requests, self, inflight_bytes, w)

    def write(self, arrival: float, key: Hashable, nbytes: int) -> float:
        return self.memory.write(arrival, key, nbytes, self)

    def write_lines(self, arrival: float, lines: dict) -> None:
        for a, b in lines.items():
            self.memory.write(arrival, ("line", a), b, self)


class SmLink(MemorySystem):
    """One SM's 1/num_sms share of the chip's L2 and HBM bandwidth (the *partitioned* memory mode).

    Used by the memoised GPU mode (runner.py, `memo=True`): every SM has its own L2->SM and HBM->L2
    links of `bytes_per_cycle / num_sms` and the same latencies, and all SMs share one
    `L2Residency`. Then a CTA's timing no longer depends on what other SMs do at the same moment,
    only on its own instruction stream and its L2 hit/miss vector; that is what makes CTAs with
    identical inputs to timing identical (the basis of the memo). Approximation (stated): an SM
    cannot borrow the bandwidth that idle SMs leave unused (e.g. in a partial last wave).
    Its links are plain FIFO `Pipe`s (one SM's requests; the memo compares their `next_free`).
    `timing.sm_link_max_bytes_per_s` (when set) caps the share: one SM's L2 -> SM port cannot take
    more than that, however few SMs the grid uses (its HBM share neither: the bytes go through it).
    """

    PIPE = Pipe

    def __init__(self, gpu, residency: L2Residency, num_sms: int, sm_id: int, *, trace: bool = False,
                 jitter: Jitter | None = None):
        super().__init__(gpu, trace=trace, jitter=jitter)
        self.residency = residency
        self.l2_bw /= num_sms
        self.hbm_bw /= num_sms
        self.hbm_wr_bw /= num_sms
        self.link_sms = 1
        self.wb_room /= num_sms
        self.l2_req /= num_sms
        self.l2_dlv /= num_sms
        self.l2_dlv_req /= num_sms
        cap = gpu.sm_link_max_bytes_per_cycle  # one SM's L2 -> SM port (0: no cap)
        if cap:
            self.l2_bw = min(self.l2_bw, cap)
            self.l2_dlv = min(self.l2_dlv, cap)
            self.hbm_bw = min(self.hbm_bw, cap)
        self.l2_pipe.name = f"SM{sm_id}.L2 link"
        self.hbm_pipe.name = f"SM{sm_id}.HBM link"
