"""Background NVML sampler for timed windows: clocks, power, energy, temperature, clock-event reasons.

    with PowerSampler(period_s=0.01) as ps:
        ...timed launches...
    rec["power_samples_summary"] = ps.summary(launches=n)

A daemon thread reads NVML every `period_s` (10 ms default; period 0 = as fast as NVML answers)
until the window closes; the energy counter is also read synchronously at the window's ends, so
the window's energy is exact up to the counter's update. Without NVML (no pynvml, no driver,
no GPU) the sampler records nothing and its summary says why: records never fail because of it.
Read-only: nothing here sets a clock or a power limit (issue 13: observe what the chip chooses).
pynvml (nvidia-ml-py) is imported lazily: the package is optional off the GPU machine.
"""

from __future__ import annotations

import threading
import time

from validation.power.stats import summarize, window

_NVML = {"lib": None, "handle": None, "error": None, "inited": False}
_FI_POWER_AVERAGE = 185   # nvml.h NVML_FI_DEV_POWER_AVERAGE (used when pynvml lacks the name)
_FI_POWER_INSTANT = 186   # nvml.h NVML_FI_DEV_POWER_INSTANT


def nvml():
    """(pynvml module, device-0 handle), or (None, None) with _NVML['error'] saying why."""
    if not _NVML["inited"]:
        _NVML["inited"] = True
        try:
            import pynvml  # noqa: PLC0415  (optional: only on the GPU machine)

            pynvml.nvmlInit()
            _NVML["lib"], _NVML["handle"] = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception as exc:  # noqa: BLE001  (no NVML here: degrade to no samples)
            _NVML["error"] = f"{type(exc).__name__}: {exc}"
    return _NVML["lib"], _NVML["handle"]


def _try(fn, *args):
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001  (a field this driver does not offer)
        return None


def _field_watts(lib, h) -> tuple[float | None, float | None]:
    """(average, instant) power in W from nvmlDeviceGetFieldValues, None where not offered."""
    ids = [getattr(lib, "NVML_FI_DEV_POWER_AVERAGE", _FI_POWER_AVERAGE),
           getattr(lib, "NVML_FI_DEV_POWER_INSTANT", _FI_POWER_INSTANT)]
    vals = _try(lib.nvmlDeviceGetFieldValues, h, ids)
    if not vals:
        return None, None
    out = []
    for v in vals:
        if getattr(v, "nvmlReturn", 1) != 0:
            out.append(None)
            continue
        member = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}.get(v.valueType, "uiVal")
        out.append(float(getattr(v.value, member)) / 1e3)  # mW -> W
    return out[0], out[1]


def _reasons(lib, h) -> int | None:
    fn = getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        getattr(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
    return None if fn is None else _try(fn, h)


def read_sample(lib, h, fields: str = "full") -> dict:
    """One sample now. fields='full': everything; 'power': power, instant/average fields, energy
    and SM clock only (the fast set for the step-load measurement)."""
    s = {"t": time.perf_counter()}
    s["power_w"] = (lambda mw: None if mw is None else mw / 1e3)(_try(lib.nvmlDeviceGetPowerUsage, h))
    s["power_average_w"], s["power_instant_w"] = _field_watts(lib, h)
    s["energy_mj"] = _try(lib.nvmlDeviceGetTotalEnergyConsumption, h)
    s["sm_mhz"] = _try(lib.nvmlDeviceGetClockInfo, h, lib.NVML_CLOCK_SM)
    if fields == "full":
        s["mem_mhz"] = _try(lib.nvmlDeviceGetClockInfo, h, lib.NVML_CLOCK_MEM)
        s["temp_c"] = _try(lib.nvmlDeviceGetTemperature, h, lib.NVML_TEMPERATURE_GPU)
        s["reasons"] = _reasons(lib, h)
    return s


def power_limits() -> dict:
    """Power limits and maximum clocks as read (never set), for provenance."""
    lib, h = nvml()
    if lib is None:
        return {"nvml_error": _NVML["error"]}
    mw = lambda x: None if x is None else x / 1e3  # noqa: E731
    cons = _try(lib.nvmlDeviceGetPowerManagementLimitConstraints, h) or (None, None)
    return {
        "power_limit_enforced_w": mw(_try(lib.nvmlDeviceGetEnforcedPowerLimit, h)),
        "power_limit_w": mw(_try(lib.nvmlDeviceGetPowerManagementLimit, h)),
        "power_limit_default_w": mw(_try(lib.nvmlDeviceGetPowerManagementDefaultLimit, h)),
        "power_limit_min_w": mw(cons[0]), "power_limit_max_w": mw(cons[1]),
        "sm_clock_max_mhz": _try(lib.nvmlDeviceGetMaxClockInfo, h, lib.NVML_CLOCK_SM),
        "mem_clock_max_mhz": _try(lib.nvmlDeviceGetMaxClockInfo, h, lib.NVML_CLOCK_MEM),
        "nvml_driver": _try(lib.nvmlSystemGetDriverVersion),
    }


class PowerSampler:
    """Context manager (or start()/stop()) sampling NVML in a daemon thread."""

    def __init__(self, period_s: float = 0.01, fields: str = "full"):
        self.period_s, self.fields = period_s, fields
        self.samples: list[dict] = []
        self.t_start = self.t_stop = None
        self.e_start = self.e_stop = None
        self._stop = threading.Event()
        self._thread = None
        self.error = None

    def _loop(self, lib, h):
        nxt = time.perf_counter()
        while not self._stop.is_set():
            self.samples.append(read_sample(lib, h, self.fields))
            nxt += self.period_s
            delay = nxt - time.perf_counter()
            if delay > 0:
                self._stop.wait(delay)
            else:
                nxt = time.perf_counter()

    def start(self) -> "PowerSampler":
        lib, h = nvml()
        self.t_start = time.perf_counter()
        if lib is None:
            self.error = _NVML["error"] or "NVML unavailable"
            return self
        self.e_start = _try(lib.nvmlDeviceGetTotalEnergyConsumption, h)
        self._thread = threading.Thread(target=self._loop, args=(lib, h), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> "PowerSampler":
        self.t_stop = time.perf_counter()
        if self._thread is not None:
            lib, h = nvml()
            self.e_stop = _try(lib.nvmlDeviceGetTotalEnergyConsumption, h)
            self._stop.set()
            self._thread.join(timeout=2.0)
        return self

    def __enter__(self) -> "PowerSampler":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def window_energy_j(self) -> float | None:
        if self.e_start is None or self.e_stop is None:
            return None
        return (self.e_stop - self.e_start) / 1e3

    def summary(self, launches: int | None = None, last_s: float | None = None) -> dict:
        """The window's summary (stats.summarize); last_s: only the last `last_s` seconds
        (steady state), energy then from the samples' counter reads."""
        if self.error is not None:
            return {"nvml_error": self.error, "n_samples": 0}
        t_end = self.t_stop
        if last_s is None:
            samples = [s for s in self.samples if s["t"] <= t_end]
            energy = self.window_energy_j()
            if samples:  # the window starts at start(), not at the first sample
                samples = [{**samples[0], "t": self.t_start}] + samples[1:]
        else:
            samples, energy = window(self.samples, t_end - last_s, t_end), None
        out = summarize(samples, launches=launches, t_end=t_end, counter_energy_j=energy)
        out["period_requested_ms"] = self.period_s * 1e3
        return out

    def trajectory(self, keys=("sm_mhz", "mem_mhz", "power_w", "power_instant_w", "power_average_w",
                               "energy_mj", "temp_c", "reasons")) -> dict:
        """Columns of the raw samples, time relative to start() (s), for plots and fits."""
        t0 = self.t_start or 0.0
        out = {"t_s": [round(s["t"] - t0, 5) for s in self.samples]}
        for k in keys:
            col = [s.get(k) for s in self.samples]
            if any(v is not None for v in col):
                out[k] = col
        return out


def sampled(fn, *args, launches: int | None = None, **kwargs):
    """Run fn(*args, **kwargs) inside a PowerSampler: (result, summary)."""
    with PowerSampler() as ps:
        res = fn(*args, **kwargs)
    return res, ps.summary(launches=launches)
