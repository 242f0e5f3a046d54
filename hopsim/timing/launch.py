"""One launch inside a benchmark loop: what the CTAs' own cycles leave out.

The H100 records time a kernel back to back (CUDA-graph batches; inputs and outputs rotated over
sets larger than the L2: validation/harness.py, validation/portfolio_runs.py). The simulator runs
one launch from an idle GPU (CTA dispatch at cycle 0, an empty, clean L2); `loop_cycles` turns the
cycle its last CTA exited into the period of that launch in such a loop:

    period = overhead + max(max(exited, dispatch) + store_ack, max over links of next_free,
                            mean over links of (busy + debt / write_bw))

1. **Launch overhead** `timing.launch_overhead_ns` + (SMs used - 1) x `timing.launch_per_sm_ns`:
   per launch, back to back, the front end's grid launch and completion that no CTA work hides,
   growing with the SMs it reaches (first CTA to each SM, completion from each); fixed in ns,
   converted at the run's SM clock.
2. **CTA dispatch rate** `dispatch` = (CTAs per SM - 1) x `timing.cta_dispatch_cycles`: one SM
   accepts one CTA per interval, so a grid of many short CTAs ends no earlier (launch2 empty
   kernels: ~77 ns per CTA per SM up to 16384 CTAs). A bound on the grid's end, not a per-CTA
   stagger of the SMs' timelines: staggered starts make the engine's FIFO pipes, which never fill
   an idle gap before a reservation already made for a later cycle (pipes.py), serialise CTAs that
   the hardware overlaps (a 22-CTA-per-SM TMA copy ran 3.6x longer).
3. **Store acknowledgement** `store_ack`: a grid that stored completes when its last stores are in
   L2, one `timing.gmem_l2_latency_cycles` after its last CTA exit (a CTA exits once its store
   sectors have left the SM, sm.py).
4. **Dirty L2 lines carried in** (`carry_cycles`): in a rotated loop the previous launch left the
   dirty bytes this launch leaves (same kernel, other buffers: `wb_debt` of each HBM link at the
   end, memory.py). Their write-back shares the HBM link with this launch: in one period a link
   must do this launch's HBM work (its reads and the write-backs forced during it: `busy`, ending
   no earlier than `next_free`) plus the carried write-back (debt / write bandwidth), in its idle
   time, so a compute-bound launch hides it and a memory-bound one pays it in full. A carried line
   is written back when this launch evicts it, i.e. once it allocates lines, not during the launch
   gap: launch2 copy records over rotated buffers take the overhead plus reads plus the carried
   write-back (4.37 us at 4 MiB, 13.10 at 16 MiB, 24.74 at 32 MiB). This replaces the old rule "a
   launch whose footprint fits in L2 pays no write-back": with rotated buffers its stores are
   other lines each launch. Pure store streams write back faster than `hbm_write_bytes_per_s` (the
   rate under mixed read/write traffic): launch2 store_16..32MiB rotated take 6.20..12.52 us, the
   model ~10-17% more.

5. **A loop over the same buffers** (`same`: a naive benchmark loop, a training step re-reading its
   weights, the one-SM cycle profiles of validation/cycle_profile.py): the previous identical
   launch read the same tiles, so when the launch's distinct read footprint fits in the L2
   residency (`spec.l2_bytes` x `timing.l2_effective_capacity_fraction`) every tile it reads is
   resident at its start: its first read is an L2 hit (hit latency, no HBM fetch; then LRU as
   usual), in both memory modes (memory.WarmResidency; the partitioned mode's dispatch-time
   decisions, dispatch_residency.py). Simplification: a footprint beyond that capacity is timed
   as `rotated` (a cold L2; LRU would keep part of it). The period is composed as `rotated`'s
   (overhead, dispatch, store acknowledgement, carried write-back). Not modelled: stores hitting
   the previous launch's own dirty lines (their write-back is charged as in a rotated loop).

The default is `rotated`, a cold, clean L2 at the launch's start, as the rotated records measure.
"""

from __future__ import annotations

LOOPS = ("rotated", "single", "same")
"""rotated: back to back over rotated buffers (the records' method; the default). single: the CTAs'
cycles alone from an idle GPU, an empty clean L2 and no launch overhead (the engine's composition).
same: back to back over the same buffers: as rotated, with the tiles the launch reads resident in
L2 at its start when they fit (item 5 above)."""

CLI_LOOPS = ("rotated", "same")
"""The loops `hopsim simulate ... --loop` offers (single is the engine's internal composition)."""


def warm_fields(warm: bool, footprint: int, capacity: int) -> dict:
    """The result fields of a `same` loop: whether its reads were L2-resident at its start, the
    distinct bytes it reads (a lower bound when they do not fit: the count stops there) and the
    L2 residency's bytes."""
    return {"loop": "same", "l2_warm": warm, "l2_read_footprint_bytes": int(footprint),
            "l2_capacity_bytes": int(capacity)}


def loop_note(extra: dict) -> str | None:
    """The report line of a `same` loop (None for the other loops)."""
    if extra.get("loop") != "same":
        return None
    fp, cap = extra["l2_read_footprint_bytes"], extra["l2_capacity_bytes"]
    if extra["l2_warm"]:
        return (f"loop over the same buffers: the {fp / 2**20:.3g} MiB it reads fit in the L2 residency "
                f"({cap / 2**20:.3g} MiB = l2_bytes x l2_effective_capacity_fraction): L2-resident at the "
                "launch's start (first reads hit)")
    return (f"loop over the same buffers: it reads more than the L2 residency holds ({cap / 2**20:.3g} MiB "
            "= l2_bytes x l2_effective_capacity_fraction): timed as the rotated loop (cold L2)")


def overhead_cycles(gpu, sms_used: int) -> float:
    """The launch overhead of a grid reaching `sms_used` SMs, in SM cycles at the run's clock."""
    t = gpu.timing
    ns = float(t.launch_overhead_ns.value) + max(0, sms_used - 1) * float(t.launch_per_sm_ns.value)
    return ns * gpu.clock_mhz / 1e3


def carry_cycles(links) -> float:
    """The cycle by which the HBM has done this launch's work and written back the dirty bytes the
    previous identical launch left (`wb_debt` at the end), in the link's idle time: chip-wide,
    the mean over the links of (busy + debt / write bandwidth) (the partitioned mode's links are
    each 1/n of the chip, one per SM used; the write-back is the chip's, whichever SM stored),
    and no earlier than any link's last reservation."""
    need = sum(m.hbm_pipe.busy + (m.wb_debt / m.hbm_wr_bw if m.wb_debt > 0 else 0.0) for m in links) / len(links)
    return max(need, max(m.hbm_pipe.next_free for m in links))


def dispatch_cycles(gpu, num_ctas: int) -> float:
    """The earliest end of a grid by the SMs' CTA dispatch rate: (CTAs per SM - 1) intervals."""
    sms = min(int(gpu.spec.num_sms.value), num_ctas)
    return (-(-num_ctas // sms) - 1) * float(gpu.timing.cta_dispatch_cycles.value)


def loop_cycles(exited: float, links, gpu, loop: str, num_ctas: int,
                writes_end: float = 0.0) -> tuple[int, dict]:
    """(period of the launch in `loop`, the cycles it adds beyond `exited`: launch overhead, store
    acknowledgement, carried write-back beyond the CTAs' work). `writes_end`: the cycle the last
    asynchronous global write (a TMA store not waited for before exit) lands; the launch is done
    no earlier (its completion includes its writes being performed)."""
    if loop == "single":
        end = int(max(exited, -(-writes_end // 1)))
        return end, {"launch_overhead_cycles": 0, "dispatch_bound_cycles": 0, "store_ack_cycles": end - int(exited),
                     "writeback_tail_cycles": 0}
    over = overhead_cycles(gpu, min(int(gpu.spec.num_sms.value), num_ctas))
    stored = any(m.bytes_to_l2 for m in links)
    ended = max(float(exited), dispatch_cycles(gpu, num_ctas))
    done = max(ended + (float(gpu.timing.gmem_l2_latency_cycles.value) if stored else 0.0), writes_end)
    work = max(done, carry_cycles(links)) if loop in ("rotated", "same") else done
    total = int(-(-(over + work) // 1))
    return total, {"launch_overhead_cycles": int(round(over)), "dispatch_bound_cycles": int(round(ended - exited)),
                   "store_ack_cycles": int(round(done - ended)),
                   "writeback_tail_cycles": int(round(work - done))}
