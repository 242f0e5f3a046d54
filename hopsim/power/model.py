"""Board power of the H100 at an SM clock, from a launch's event counts (hopsim/config/power.py).

    from hopsim.power.model import Events, PowerModel
    pm = PowerModel.load()
    ev = Events.from_result(sim_result, variant="f16f32")
    pm.power_w(1590, ev, seconds=1.2e-3)        # predicted NVML averaged board power, W

The formula (hopsim/config/power.py has it with the fields' sources): a floor, idle and active
clock power scaling with f v(f)^2, core-rail event energies scaling with v(f)^2, DRAM energies
not scaling. Event counts are what the simulation counted (hopsim/result.py):

    tensor FLOPs         extra.tensor_flops (else flops), energy by dtype/accumulator, random data
    L2 -> SM bytes       bytes_l2 + bytes_hbm (every byte an SM reads crosses L2), + bytes_stored;
                         any such byte also turns on the static step l2_active_w
    HBM read / write     bytes_hbm / bytes_stored (a GEMM's C is written once, write-back to HBM)
    smem wavefronts      smem_wavefronts (LSU ld/st; direction not counted: mean of ld and st
                         energies). The wgmma SS operand reads are inside the tensor energy (the
                         burner is SS), TMA fills inside the L2 byte energy: not counted twice.
    instructions         the warp instructions every role issued
    TMA tensor loads     extra.tma_load_requests (L2 requests: box rows, 128-B pieces) and
                         smem_port.tma_fill_bytes: energies beyond the L2 byte energy (which bulk
                         copies fitted), from the box-shape microbenchmark power/light_tmaw/

plus the fed-L2 term (`l2_fed_sq_w`): a launch whose tensor cores are fed from L2 (tensor FLOPs
and L2 -> SM bytes, as a TMA-fed GEMM) draws coefficient x (the L2's distinct byte rate, in
TB/s)^2 beyond the per-byte and per-FLOP energies (`fed_l2_w`). Distinct: the read bytes the
timing model charges against `timing.l2_bytes_per_s` after the sharing merge
(`extra.bytes_l2_distinct`, hopsim/timing/memory.py `_l2_service`) plus the stored bytes; a tile
read by r SMs together counts once there, r times in `l2_bytes` (the per-byte energy's count). Fitted from the TMA+wgmma pipe
runs (power/light_pipe2*, 33..132 SMs up to 4.3 TFLOP/s and 6.6 TB/s,
hopsim/validate/calibrate_power_pipe.py); the wgmma-only burners (no L2 traffic) show no such
excess up to 6.3 TFLOP/s per SM, and the L2/HBM streaming burners (no tensor work) are fitted
without it, hence the gate on both.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from hopsim.config.power import H100Power, load_power

PJ = 1e-12
#: the excess power of a TMA-fed tensor launch grows as (its L2 -> SM byte rate)^FED_L2_EXPONENT
FED_L2_EXPONENT = 2
#: Events fields that are not event counts (never scaled by `Events.scaled`)
NOT_COUNTS = ("variant", "sm_fraction", "zero_data")


@dataclass(frozen=True)
class Events:
    """Event counts of one launch (or, with seconds=1, event rates per second)."""

    tensor_flops: float = 0.0
    variant: str = "f16f32"
    l2_bytes: float = 0.0
    l2_shared_bytes: float = 0.0          # of l2_bytes, those delivered beyond the L2's distinct reads (sharing)
    hbm_read_bytes: float = 0.0
    hbm_write_bytes: float = 0.0
    smem_wavefronts: float = 0.0          # direction unknown (simulator LSU count)
    smem_ld_wavefronts: float = 0.0
    smem_st_wavefronts: float = 0.0
    instructions: float = 0.0
    tma_requests: float = 0.0             # L2 requests of TMA tensor loads (box rows, 128-B pieces)
    tma_bytes: float = 0.0                # bytes of TMA tensor loads (also in l2_bytes)
    sm_fraction: float = 1.0              # SMs the launch used / SMs of the chip
    zero_data: bool = False               # all-zero tensor operands (the records' zero points only)

    @classmethod
    def from_result(cls, res: Any, variant: str = "f16f32", num_sms: int = 132) -> "Events":
        """The counts of a `hopsim.result.SimResult` (random tensor data assumed)."""
        extra = res.extra or {}
        insts = sum(float(r.get("instructions", 0)) for r in (res.roles or {}).values())
        loaded = float(res.bytes_l2 + res.bytes_hbm)
        distinct = float(extra.get("bytes_l2_distinct", loaded))
        return cls(tensor_flops=float(extra.get("tensor_flops", res.flops)), variant=variant,
                   l2_bytes=loaded + float(res.bytes_stored), l2_shared_bytes=max(0.0, loaded - distinct),
                   hbm_read_bytes=float(res.bytes_hbm), hbm_write_bytes=float(res.bytes_stored),
                   smem_wavefronts=float(res.smem_wavefronts), instructions=insts,
                   tma_requests=float(extra.get("tma_load_requests", 0)),
                   tma_bytes=float((res.smem_port or {}).get("tma_fill_bytes", 0)),
                   sm_fraction=min(1.0, max(0.0, res.sms_used / num_sms)))

    @property
    def l2_distinct_bytes(self) -> float:
        """The bytes the L2 itself reads or writes: l2_bytes less those a shared read delivered to
        further SMs (the read bytes the timing model charges against `timing.l2_bytes_per_s` after
        the sharing merge, `extra.bytes_l2_distinct`, plus the stored bytes)."""
        return self.l2_bytes - self.l2_shared_bytes

    def scaled(self, k: float) -> "Events":
        """Every count times k (rates of a launch repeated, or per second)."""
        counts = {f.name: getattr(self, f.name) * k for f in fields(self)
                  if f.name not in NOT_COUNTS}
        return replace(self, **counts)


class PowerModel:
    """Predicted board power and the limits that decide the sustained clock."""

    def __init__(self, params: H100Power):
        self.p = params
        self.v = params.values()

    @classmethod
    def load(cls, gpu: str = "h100_sxm") -> "PowerModel":
        return cls(load_power(gpu))

    # ---- clocks
    def sm_clock_ratio(self, tensor_cores: bool) -> float:
        """The SMs' clock over the SM clock NVML reports: `tensor_sm_clock_ratio` for a kernel that
        uses the tensor cores (microbench__clock_truth), 1 otherwise (hopsim/config/power.py)."""
        return float(self.v["tensor_sm_clock_ratio"]) if tensor_cores else 1.0

    @property
    def limit_w(self) -> float:
        return self.v["power_limit_w"]

    @property
    def f_max(self) -> float:
        return self.v["clock_max_mhz"]

    def supported_clocks(self) -> list[float]:
        """Supported SM clocks, highest first."""
        hi, lo, step = self.v["clock_max_mhz"], self.v["clock_min_mhz"], self.v["clock_step_mhz"]
        n = int(round((hi - lo) / step))
        return [hi - i * step for i in range(n + 1)]

    def voltage(self, mhz: float) -> float:
        """Relative core voltage v(f) (1 at f_max), the linear clock/voltage relation fitted from
        the power-capped burners."""
        v0 = self.v["voltage_intercept"]
        return v0 + (1.0 - v0) * float(mhz) / self.f_max

    # ---- power
    def tensor_energy_pj(self, ev: Events) -> float:
        suffix = "_zero" if ev.zero_data else ""
        return self.v[f"e_tensor_{ev.variant}{suffix}_pj_per_flop"]

    def fed_l2_w(self, rates: Events) -> float:
        """The fed-L2 term (module docstring) of the event rates `rates` (per second), W:
        l2_fed_sq_w x (the L2's distinct TB/s)^2 (`Events.l2_distinct_bytes`: a tile that several
        SMs read together counts once, as the timing model charges it); 0 without tensor FLOPs,
        without L2 -> SM bytes or without SMs. Not voltage-scaled (the fit's choice: scaling by
        v(f)^2 fits the pipe worse, calibrate_power_pipe.py)."""
        if rates.tensor_flops <= 0 or rates.l2_bytes <= 0 or rates.sm_fraction <= 0:
            return 0.0
        return self.v["l2_fed_sq_w"] * (rates.l2_distinct_bytes / 1e12) ** FED_L2_EXPONENT

    def breakdown_w(self, mhz: float, ev: Events, seconds: float) -> dict[str, float]:
        """Power by part (W) at SM clock `mhz` for the counts `ev` taken over `seconds`."""
        v = self.v
        s = self.voltage(mhz) ** 2
        fr = float(mhz) / self.f_max
        r = ev.scaled(1.0 / seconds)
        smem_mean = 0.5 * (v["e_smem_ld_pj_per_wavefront"] + v["e_smem_st_pj_per_wavefront"])
        return {
            "floor": v["floor_w"],
            "clock": s * fr * (v["idle_clock_w"] + v["active_base_w"] * ev.sm_fraction),
            "tensor": s * r.tensor_flops * self.tensor_energy_pj(ev) * PJ,
            "fed_l2": self.fed_l2_w(r),
            "l2": s * r.l2_bytes * v["e_l2_pj_per_byte"] * PJ,
            "l2_active": s * fr * v["l2_active_w"] * (1.0 if r.l2_bytes > 0 else 0.0),
            "smem": s * PJ * (r.smem_wavefronts * smem_mean
                              + r.smem_ld_wavefronts * v["e_smem_ld_pj_per_wavefront"]
                              + r.smem_st_wavefronts * v["e_smem_st_pj_per_wavefront"]),
            "instructions": s * r.instructions * v["e_instruction_pj"] * PJ,
            "tma": s * PJ * (r.tma_requests * v["e_tma_request_pj"] + r.tma_bytes * v["e_tma_byte_pj"]),
            "dram": PJ * (r.hbm_read_bytes * v["e_dram_read_pj_per_byte"]
                          + r.hbm_write_bytes * v["e_dram_write_pj_per_byte"]),
        }

    def power_w(self, mhz: float, ev: Events, seconds: float) -> float:
        """Predicted board power (W, as the NVML averaged reading in steady state)."""
        return sum(self.breakdown_w(mhz, ev, seconds).values())

    def tensor_cap_flops(self, variant: str) -> float:
        return self.v[f"tensor_cap_{variant}_tflops"] * 1e12

    def binding(self, mhz: float, ev: Events, seconds: float) -> str | None:
        """Which limit the launch exceeds at `mhz` ('power', 'tensor'), None within both."""
        if self.power_w(mhz, ev, seconds) > self.limit_w:
            return "power"
        if ev.tensor_flops / seconds > self.tensor_cap_flops(ev.variant):
            return "tensor"
        return None
