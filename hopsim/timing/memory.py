"""L2 and HBM shared by all SMs: latency, bandwidth, and L2 residency of tiles.

Model (what it does):
- **Residency** is tracked per *tile*: a key the requester names (for TMA: the tensor map and the
  box coordinates; for ld/st.global: the 128-B line). `L2Residency` is an LRU of tiles with a byte
  capacity (`spec.l2_bytes`): a read of a resident tile is an L2 hit and refreshes it; a miss
  inserts it (first touch brings it in), evicting least-recently-used tiles beyond capacity. A
  store makes its tile resident (write-back L2). So a tile of A that the CTAs of one row of the
  grid re-read is fetched from HBM once and then hits, as on silicon while it stays in L2.
- **Bandwidth**: two chip-wide FIFO `Pipe`s, L2 -> SM (`timing.l2_bytes_per_cycle`) and HBM -> L2
  (`timing.hbm_bytes_per_cycle`). A hit moves its bytes over the L2 pipe; a miss over the HBM pipe
  and then the L2 pipe.
- **Latency**: a hit completes `timing.gmem_l2_latency_cycles` after its bytes leave the L2 pipe;
  a miss `timing.gmem_hbm_latency_cycles` (which includes the L2 traversal) after they leave the
  HBM pipe and the L2 pipe.

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

    __slots__ = ("capacity", "used", "_tiles", "hits", "misses", "hit_bytes", "miss_bytes")

    def __init__(self, capacity_bytes: int):
        self.capacity = int(capacity_bytes)
        self.used = 0
        self._tiles: OrderedDict[Hashable, int] = OrderedDict()
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
            _, old = self._tiles.popitem(last=False)
            self.used -= old

    def __contains__(self, key: Hashable) -> bool:
        return key in self._tiles


class MemorySystem:
    """Chip-wide L2 + HBM: one instance shared by every SM of a simulation."""

    def __init__(self, gpu, *, trace: bool = False, jitter: Jitter | None = None):
        t = gpu.timing
        self.l2_latency = float(t.gmem_l2_latency_cycles.value)
        self.hbm_latency = float(t.gmem_hbm_latency_cycles.value)
        self.l2_bw = float(t.l2_bytes_per_cycle.value)
        self.hbm_bw = float(t.hbm_bytes_per_cycle.value)
        self.l2_pipe = Pipe("L2->SM", trace)
        self.hbm_pipe = Pipe("HBM->L2", trace)
        self.residency = L2Residency(int(gpu.spec.l2_bytes.value))
        self.jitter = jitter or Jitter()
        self.bytes_from_l2 = 0  # bytes served by L2 hits
        self.bytes_from_hbm = 0  # bytes that missed and came from HBM
        self.bytes_to_l2 = 0  # bytes stored

    def read(self, arrival: float, key: Hashable, nbytes: int, hit: bool | None = None) -> tuple[float, bool]:
        """Read a tile arriving at `arrival`; return (time its bytes reach the SM, hit?).

        `hit` given: the residency was already decided (CTA-dispatch residency, see `SmLink`)."""
        if hit is None:
            hit = self.residency.access(key, nbytes)
        if hit:
            self.bytes_from_l2 += nbytes
            t = self.l2_pipe.reserve(arrival, nbytes / self.l2_bw, "hit")
            return t + self.jitter(self.l2_latency), True
        self.bytes_from_hbm += nbytes
        t = self.hbm_pipe.reserve(arrival, nbytes / self.hbm_bw, "miss")
        t = self.l2_pipe.reserve(t, nbytes / self.l2_bw, "miss")
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
        self.l2_pipe.name = f"SM{sm_id}.L2 link"
        self.hbm_pipe.name = f"SM{sm_id}.HBM link"
