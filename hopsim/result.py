"""`SimResult`: what a timed run reports.

    cycles, time_ms            total SM cycles of the launch; time at `clock_mhz`
    ctas, ctas_per_sm, limiting, waves
    roles                      per warp role (ROLES): warps, cycles issuing, cycles waiting on each thing
                               (``mbarrier``, ``wait_group``, ``bar.sync``, ``smem``, ``gmem``, ...),
                               summed over the warps of that role
    busy                       busy fraction of TMA unit, tensor cores, smem port (mean over the
                               SMs that ran CTAs) and of the chip-wide L2 and HBM links; the smem
                               port's is counted from `smem_port` (all its clients), see below
    smem_port                  shared-memory port traffic (bytes of LSU wavefronts, wgmma SS
                               operand reads, TMA fills and TMA store reads; port cycles at
                               128 B/clk), and `contention_cycles` the clients lost to each
                               other when the port is contended (smem_port_bytes_per_cycle > 0;
                               timing/runner.py `_smem_port`)
    bytes_l2, bytes_hbm        bytes read from global memory that the L2 served / that came from
                               HBM for that read (bytes_l2 + bytes_hbm = bytes loaded; a read
                               merged with another's miss in flight is served by L2: in a GEMM
                               bytes_l2 = extra.l2_hits x box bytes); bytes_stored to L2
    smem_wavefronts, smem_ideal_wavefronts, bank_conflicts
    flops, tflops              tensor FLOPs executed (or `flop_count` given by the caller) / time
`to_json()` gives a plain dict (no trace, no memory image).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Warp roles, from what each warp executed (timing/sm_units.py WarpStats.role).
ROLES = {
    "producer": "issued TMA loads, took part in no wgmma",
    "consumer": "took part in warpgroup wgmmas, issued no TMA load",
    "producer+consumer": "both (the single-warpgroup GEMM's TMA-issuing warp)",
    "other": "neither (e.g. the idle warps of a warp-specialised producer warpgroup)",
}


@dataclass
class SimResult:
    kernel: str
    cycles: int
    clock_mhz: float
    ctas: int
    ctas_per_sm: int
    limiting: str
    waves: int
    sms_used: int
    roles: dict[str, dict[str, Any]]
    busy: dict[str, float]
    bytes_l2: int
    bytes_hbm: int
    bytes_stored: int
    smem_wavefronts: int
    smem_ideal_wavefronts: int
    flops: int
    mode: str = "values"
    smem_port: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    trace: Any = None  # hopsim.trace.Trace when trace=True
    machine: Any = None  # the functional state (global memory) when values=True

    @property
    def time_ms(self) -> float:
        return self.cycles / (self.clock_mhz * 1e3)

    @property
    def bank_conflicts(self) -> int:
        return self.smem_wavefronts - self.smem_ideal_wavefronts

    @property
    def tflops(self) -> float:
        s = self.time_ms * 1e-3
        return self.flops / s / 1e12 if s > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel, "mode": self.mode, "cycles": self.cycles, "time_ms": self.time_ms,
            "clock_mhz": self.clock_mhz, "ctas": self.ctas, "ctas_per_sm": self.ctas_per_sm,
            "limiting": self.limiting, "waves": self.waves, "sms_used": self.sms_used,
            "roles": self.roles, "busy": self.busy, "bytes_l2": self.bytes_l2, "bytes_hbm": self.bytes_hbm,
            "bytes_stored": self.bytes_stored, "smem_wavefronts": self.smem_wavefronts,
            "smem_ideal_wavefronts": self.smem_ideal_wavefronts, "bank_conflicts": self.bank_conflicts,
            "smem_port": self.smem_port,
            "flops": self.flops, "tflops": self.tflops, **({"extra": self.extra} if self.extra else {}),
        }

    def summary(self) -> str:
        b = self.busy
        lines = [f"{self.kernel}: {self.cycles} cycles = {self.time_ms:.4f} ms at {self.clock_mhz:.0f} MHz, "
                 f"{self.tflops:.1f} TFLOP/s; {self.ctas} CTAs, {self.ctas_per_sm}/SM ({self.limiting}), {self.waves} waves",
                 "busy: " + ", ".join(f"{k} {v:.1%}" for k, v in b.items()),
                 f"bytes: L2 hits {self.bytes_l2}, HBM {self.bytes_hbm}, stored {self.bytes_stored}; "
                 f"smem wavefronts {self.smem_wavefronts} (bank conflicts {self.bank_conflicts})"]
        for role, r in self.roles.items():
            waits = ", ".join(f"{k} {v}" for k, v in sorted(r["wait"].items()))
            lines.append(f"  {role} ({r['warps']} warps): issuing {r['issue']} cycles; waiting: {waits or '-'}")
        return "\n".join(lines)
