"""How many CTAs of a kernel fit on one SM, and which resource limits it.

    ctas_per_sm = min( max_ctas_per_sm,                                   "cta_slots"
                       max_threads_per_sm // threads_per_cta_rounded,      "threads"
                       max_warps_per_sm // warps_per_cta,                  "warps"
                       smem_per_sm // (smem_per_cta + reserved_per_cta),   "shared_memory"
                       warps_fitting_in_regs // warps_per_cta )            "registers"

Registers are allocated per warp in granules of `reg_alloc_unit` (256 = 8 per thread):
regs_per_warp = ceil(regs_per_thread * 32 / 256) * 256, and warps_fitting_in_regs =
regs_per_sm // regs_per_warp. (The hardware also rounds per-warp-scheduler; not modelled.)
Shared memory counts the per-CTA system reservation (1 KB on cc 9.0, [CPG-CC90]).

setmaxnreg does not change occupancy: regs_per_thread is the launch's count, which fixes the CTA's
register allocation; setmaxnreg.dec/.inc only move registers between the CTA's warpgroups inside
that allocation (checked functionally: hopsim/functional/regs.py RegisterPool, Launch.regs_per_thread).
A warp-specialised kernel (FA3: producer 40, two consumers 232) therefore computes its occupancy
from the launch count (168 = (40 + 2 * 232) / 3), not from the per-warpgroup counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from isa.errors import InputError


@dataclass(frozen=True)
class Occupancy:
    """CTAs per SM and the binding limit (ties: the first in `limits` order)."""

    ctas_per_sm: int
    limiting: str
    limits: dict

    def to_json(self) -> dict:
        return {"ctas_per_sm": self.ctas_per_sm, "limiting": self.limiting, "limits": dict(self.limits)}


def occupancy(gpu, *, threads_per_cta: int, smem_bytes_per_cta: int, regs_per_thread: int) -> Occupancy:
    """CTAs of this shape resident per SM on `gpu`; raises InputError if even one does not fit."""
    s = gpu.spec
    warp = 32
    if not 1 <= threads_per_cta <= int(s.max_threads_per_cta.value):
        raise InputError("threads_per_cta", threads_per_cta, f"1..{int(s.max_threads_per_cta.value)}")
    if not 0 <= smem_bytes_per_cta <= int(s.smem_per_cta_bytes.value):
        raise InputError("smem_bytes_per_cta", smem_bytes_per_cta,
                         f"0..{int(s.smem_per_cta_bytes.value)} bytes (227 KB per CTA)")
    if not 1 <= regs_per_thread <= int(s.max_regs_per_thread.value):
        raise InputError("regs_per_thread", regs_per_thread, f"1..{int(s.max_regs_per_thread.value)}")
    warps = -(-threads_per_cta // warp)
    unit = int(s.reg_alloc_unit.value)
    regs_per_warp = -(-regs_per_thread * warp // unit) * unit
    smem_need = smem_bytes_per_cta + int(s.smem_reserved_per_cta_bytes.value)
    limits = {
        "cta_slots": int(s.max_ctas_per_sm.value),
        "threads": int(s.max_threads_per_sm.value) // (warps * warp),
        "warps": int(s.max_warps_per_sm.value) // warps,
        "shared_memory": int(s.smem_per_sm_bytes.value) // smem_need,
        "registers": (int(s.regs_per_sm.value) // regs_per_warp) // warps,
    }
    limiting = min(limits, key=lambda k: limits[k])
    n = limits[limiting]
    if n < 1:
        raise InputError("launch", f"{threads_per_cta} threads, {smem_bytes_per_cta} B smem, {regs_per_thread} regs/thread",
                         f"a CTA that fits on one SM (limited by {limiting}: {limits})")
    return Occupancy(n, limiting, limits)
