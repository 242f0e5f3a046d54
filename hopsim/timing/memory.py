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
- **Requests**: the L2 also has a request rate (`timing.l2_requests_per_s`); a TMA box makes one
  request per row, so narrow boxes (32B/64B swizzle) are request-bound, wide ones byte-bound.
- **Latency**: a hit completes `timing.gmem_l2_latency_cycles` after its bytes leave the L2 pipe;
  a miss `gpu.hbm_latency_cycles` (the hit latency plus `timing.hbm_extra_latency_ns` at the
  run's SM clock) after they leave the HBM pipe and the L2 pipe.
- **Miss merging (MSHR)**: a tile records when its bytes are in L2 (HBM pipe end + HBM latency -
  L2 latency); a hit on a tile still being fetched starts its L2 transfer only then, so CTAs
  that request a tile together all wait for the one HBM fetch (which moves the bytes once).

What it does not model: the two L2 partitions (near/far latency), sectors and partial-tile hits,
DRAM banks/row buffers, L2 write-back traffic to HBM, the ``l2Promotion`` of tensor maps, and
requests filling idle gaps before a pipe's queue tail (see pipes.py).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Hashable

from hopsim.timing.pipes import Jitter, Pipe


class L2Residency:
    """LRU set of tiles with a byte capacity."""

    __slots__ = ("capacity", "used", "_tiles", "_ready", "hits", "misses", "hit_bytes", "miss_bytes")

    def __init__(self, capacity_bytes: int):
        self.capacity = int(capacity_bytes)
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
        tiles, move, insert = self._tiles, self._tiles.move_to_end, self._insert
        out = []
        hits = hit_bytes = miss_bytes = 0
        for key, nb in zip(keys, nbytes):
            if key in tiles:
                move(key)
                hits += 1
                hit_bytes += nb
                out.append(True)
            else:
                miss_bytes += nb
                insert(key, nb)
                out.append(False)
        self.hits += hits
        self.misses += len(out) - hits
        self.hit_bytes += hit_bytes
        self.miss_bytes += miss_bytes
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


class MemorySystem:
    """Chip-wide L2 + HBM: one instance shared by every SM of a simulation."""

    def __init__(self, gpu, *, trace: bool = False, jitter: Jitter | None = None):
        t = gpu.timing
        self.l2_latency = float(t.gmem_l2_latency_cycles.value)
        self.hbm_latency = gpu.hbm_latency_cycles  # L2 hit latency + DRAM ns at the run's clock
        self.l2_bw = gpu.l2_bytes_per_cycle  # bytes/s at the run's SM clock (config)
        self.hbm_bw = gpu.hbm_bytes_per_cycle
        self.l2_req = gpu.l2_requests_per_cycle
        self.l2_dlv = gpu.l2_delivery_bytes_per_cycle
        self.l2_dlv_req = gpu.l2_delivery_requests_per_cycle
        self.l2_pipe = Pipe("L2->SM", trace)
        self.hbm_pipe = Pipe("HBM->L2", trace)
        self.residency = L2Residency(int(gpu.spec.l2_bytes.value))
        self.jitter = jitter or Jitter()
        self.bytes_from_l2 = 0  # bytes read not fetched from HBM for this read (hits, merged misses)
        self.bytes_from_hbm = 0  # bytes that missed and came from HBM
        self.bytes_to_l2 = 0  # bytes stored

    def _l2_service(self, nbytes: int, requests: int, share: float = 1.0) -> float:
        """L2 -> SM link time of a transfer: the slowest of the L2 read of its distinct bytes and
        requests (`share` of them when SMs read the same tile together) and the delivery of all
        its bytes and requests to this SM (`timing.l2_delivery_*_per_s`)."""
        return max(nbytes * share / self.l2_bw, requests * share / self.l2_req,
                   nbytes / self.l2_dlv, requests / self.l2_dlv_req)

    def read(self, arrival: float, key: Hashable, nbytes: int, hit: bool | None = None,
             hbm_share: float = 1.0, requests: int = 1) -> tuple[float, bool]:
        """Read a tile arriving at `arrival`; return (time its bytes reach the SM, hit?).

        `hit` given: the residency was decided at CTA dispatch (partitioned mode, memo.py); a
        miss then moves `hbm_share * nbytes` over this link's HBM pipe (its share of a fetch
        merged with the other CTAs of its wave that read the tile) and pays the miss latency;
        hit or miss, `hbm_share` is also its share of the L2 read of those bytes (read once,
        delivered to each reader). Without `hit` (shared mode) every read is a distinct read."""
        res = self.residency
        if hit is None:
            hit = res.access(key, nbytes)
            if hit:
                ready = res.ready(key)
                if ready > arrival:  # merged with a fetch in flight
                    arrival = ready
        if hit:
            self.bytes_from_l2 += nbytes
            t = self.l2_pipe.reserve(arrival, self._l2_service(nbytes, requests, hbm_share), "hit")
            return t + self.jitter(self.l2_latency), True
        self.bytes_from_hbm += nbytes * hbm_share
        # the rest of a merged miss was fetched by another reader: served by L2 for this one (the
        # shared mode counts such a read, issued after the fetch began, as a hit: same total)
        self.bytes_from_l2 += nbytes * (1.0 - hbm_share)
        t = self.hbm_pipe.reserve(arrival, nbytes * hbm_share / self.hbm_bw, "miss")
        res.set_ready(key, t + self.hbm_latency - self.l2_latency)
        t = self.l2_pipe.reserve(t, self._l2_service(nbytes, requests, hbm_share), "miss")
        return t + self.jitter(self.hbm_latency), False

    def write(self, arrival: float, key: Hashable, nbytes: int) -> float:
        """Store a tile into L2 (write-back); return when it is written."""
        self.residency.write(key, nbytes)
        self.bytes_to_l2 += nbytes
        t = self.l2_pipe.reserve(arrival, nbytes / self.l2_bw, "store")
        return t + self.jitter(self.l2_latency)


class SmLink(MemorySystem):
    """One SM's 1/num_sms share of the chip's L2 and HBM bandwidth (the *partitioned* memory mode).

    Used by the memoised GPU mode (runner.py, `memo=True`): every SM has its own L2->SM and HBM->L2
    links of `bytes_per_cycle / num_sms` and the same latencies, and all SMs share one
    `L2Residency`. Then a CTA's timing no longer depends on what other SMs do at the same moment,
    only on its own instruction stream and its L2 hit/miss vector; that is what makes CTAs with
    identical inputs to timing identical (the basis of the memo). Approximation (stated): an SM
    cannot borrow the bandwidth that idle SMs leave unused (e.g. in a partial last wave).
    """

    def __init__(self, gpu, residency: L2Residency, num_sms: int, sm_id: int, *, trace: bool = False,
                 jitter: Jitter | None = None):
        super().__init__(gpu, trace=trace, jitter=jitter)
        self.residency = residency
        self.l2_bw /= num_sms
        self.hbm_bw /= num_sms
        self.l2_req /= num_sms
        self.l2_dlv /= num_sms
        self.l2_dlv_req /= num_sms
        self.l2_pipe.name = f"SM{sm_id}.L2 link"
        self.hbm_pipe.name = f"SM{sm_id}.HBM link"
