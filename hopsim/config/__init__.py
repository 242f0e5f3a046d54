"""Typed, sourced hardware configuration (pydantic). One module per GPU.

`load_gpu("h100_sxm")` returns a `GpuConfig` whose `spec` are chip facts and whose `timing` are the
model's timing parameters: the defaults of `h100_sxm.py`, overridden field by field by the calibrated
values in `h100_sxm_calibrated.json` when that file exists (written by `hopsim validate calibrate`).
"""

from __future__ import annotations

import json
import pathlib

from pydantic import BaseModel, ConfigDict

from hopsim.config.base import Param, ParamGroup
from hopsim.config.h100_sxm import H100Spec, H100Timing
from isa.errors import InputError

_HERE = pathlib.Path(__file__).resolve().parent
GPUS = {"h100_sxm": (H100Spec, H100Timing, _HERE / "h100_sxm_calibrated.json")}


class GpuConfig(BaseModel):
    """One GPU: chip facts and timing parameters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    spec: H100Spec
    timing: H100Timing
    #: The SM clock this run is simulated at (MHz); None: the spec's maximum `spec.clock_mhz`.
    #: A run condition, not a hardware constant: under heavy tensor load the H100 lowers its SM
    #: clock (power management, not modelled), while L2 and HBM keep their own clocks, so memory
    #: bandwidth per SM cycle grows as the SM clock falls, and the DRAM part of an L2 miss takes
    #: fewer SM cycles; the L2 hit latency stays fixed in SM cycles (microbench__clock_domain).
    #: `validate compare` simulates each H100 record at the SM clock measured in that run.
    sm_clock_mhz: float | None = None

    @property
    def clock_mhz(self) -> float:
        """The SM clock of this run (MHz)."""
        return float(self.sm_clock_mhz or self.spec.clock_mhz.value)

    @property
    def clock_hz(self) -> float:
        return self.clock_mhz * 1e6

    def per_cycle(self, field: str) -> float:
        """A chip-wide `timing.<field>` given per second (L2/HBM clock domains) in units per SM
        cycle at this run's SM clock."""
        return float(getattr(self.timing, field).value) / self.clock_hz

    @property
    def l2_bytes_per_cycle(self) -> float:
        return self.per_cycle("l2_bytes_per_s")

    @property
    def l2_requests_per_cycle(self) -> float:
        return self.per_cycle("l2_requests_per_s")

    @property
    def l2_delivery_bytes_per_cycle(self) -> float:
        return self.per_cycle("l2_delivery_bytes_per_s")

    @property
    def l2_delivery_requests_per_cycle(self) -> float:
        return self.per_cycle("l2_delivery_requests_per_s")

    @property
    def hbm_bytes_per_cycle(self) -> float:
        return self.per_cycle("hbm_bytes_per_s")

    @property
    def hbm_write_bytes_per_cycle(self) -> float:
        return self.per_cycle("hbm_write_bytes_per_s")

    @property
    def sm_link_max_bytes_per_cycle(self) -> float:
        """One SM's L2 -> SM port cap (`timing.sm_link_max_bytes_per_s`) per SM cycle; 0: no cap."""
        return self.per_cycle("sm_link_max_bytes_per_s")

    @property
    def l2_residency_bytes(self) -> int:
        """Bytes the L2 residency (LRU) holds: `spec.l2_bytes` x `timing.l2_effective_capacity_fraction`."""
        return int(float(self.spec.l2_bytes.value) * float(self.timing.l2_effective_capacity_fraction.value))

    @property
    def l2_reread_ramp_bytes(self) -> tuple | None:
        """(start, end) bytes of the re-read hit ramp (`timing.l2_reread_ramp_start_fraction`,
        `_end_fraction` x `spec.l2_bytes`; dispatch_residency.reread_hit_fraction); None when the
        end is 0 (off: a strict LRU at `l2_residency_bytes`)."""
        l2 = float(self.spec.l2_bytes.value)
        end = float(self.timing.l2_reread_ramp_end_fraction.value)
        return None if end <= 0 else (l2 * float(self.timing.l2_reread_ramp_start_fraction.value), l2 * end)

    @property
    def hbm_latency_cycles(self) -> float:
        """Load latency of an L2 miss in SM cycles at this run's clock: the L2 hit latency (SM
        clock domain) plus the DRAM access `timing.hbm_extra_latency_ns` (memory clock domain)."""
        return (float(self.timing.gmem_l2_latency_cycles.value)
                + float(self.timing.hbm_extra_latency_ns.value) * self.clock_mhz / 1e3)

    def at_clock(self, mhz: float | None) -> "GpuConfig":
        """A copy simulated at SM clock `mhz` (None: the spec's maximum)."""
        if mhz is not None and not (100 <= float(mhz) <= float(self.spec.clock_mhz.value) * 1.05):
            raise InputError("sm_clock_mhz", mhz, f"100..{float(self.spec.clock_mhz.value):.0f} MHz "
                             "(the SM clock of the run; at most the spec's maximum)")
        return self.model_copy(update={"sm_clock_mhz": None if mhz is None else float(mhz)})

    def cycles_to_ms(self, cycles: float) -> float:
        return cycles / self.clock_hz * 1e3

    def with_timing(self, **updates) -> "GpuConfig":
        """A copy with timing fields replaced (values or Params) — for what-if studies and tests."""
        conv = {}
        for k, v in updates.items():
            if isinstance(v, (int, float)):
                old = self.timing.params()[k]
                v = Param(value=v, unit=old.unit, meaning=old.meaning, source="assumed: overridden by the user")
            conv[k] = v
        return self.model_copy(update={"timing": self.timing.with_values(conv)})


def load_gpu(name: str = "h100_sxm", *, calibrated: bool = True) -> GpuConfig:
    if name not in GPUS:
        raise InputError("gpu", name, f"one of {sorted(GPUS)}")
    spec_cls, timing_cls, calib_path = GPUS[name]
    timing = timing_cls()
    if calibrated and calib_path.exists():
        data = json.loads(calib_path.read_text())
        timing = timing.with_values({k: Param(**v) for k, v in data.get("timing", {}).items()})
    return GpuConfig(name=name, spec=spec_cls(), timing=timing)


__all__ = ["GpuConfig", "Param", "ParamGroup", "load_gpu"]
