"""Pure statistics over NVML samples (no NVML, no GPU): what a power/clock record summarises.

A sample is a dict with the host time `t` (seconds, time.perf_counter) and any of the fields
SAMPLE_FIELDS. NVML readings are piecewise constant between reads, so a time-weighted mean holds
each sample's value until the next sample (zero-order hold) and ignores the last sample's hold
beyond the window end. Energy comes from the board's energy counter (mJ since driver load), whose
difference over a window is exact up to the counter's own update period; the power readings are
kept for comparison because the board averages them over a window (measured by the step load).
"""

from __future__ import annotations

import math
import statistics

# field -> (unit, meaning); the sampler fills whichever the driver offers (None when it does not)
SAMPLE_FIELDS = {
    "sm_mhz": ("MHz", "SM clock (nvmlDeviceGetClockInfo NVML_CLOCK_SM)"),
    "mem_mhz": ("MHz", "memory clock (nvmlDeviceGetClockInfo NVML_CLOCK_MEM)"),
    "power_w": ("W", "board power, nvmlDeviceGetPowerUsage (driver-averaged)"),
    "power_instant_w": ("W", "NVML_FI_DEV_POWER_INSTANT field"),
    "power_average_w": ("W", "NVML_FI_DEV_POWER_AVERAGE field"),
    "energy_mj": ("mJ", "nvmlDeviceGetTotalEnergyConsumption, since driver load"),
    "temp_c": ("C", "GPU temperature"),
    "reasons": ("bitmask", "clock-event (throttle) reasons"),
}

# nvmlClocksEventReasons bits (nvml.h, NVML_CLOCKS_EVENT_REASON_*)
REASON_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}

STAT_FIELDS = ("sm_mhz", "mem_mhz", "power_w", "power_instant_w", "power_average_w", "temp_c")


def decode_reasons(mask: int | None) -> list[str]:
    """Names of the set bits of a clock-event reason mask (unknown bits as hex)."""
    if mask is None:
        return []
    names = [name for bit, name in REASON_BITS.items() if mask & bit]
    rest = mask & ~sum(REASON_BITS)
    if rest:
        names.append(f"unknown_0x{rest:x}")
    return names


def _series(samples: list[dict], key: str) -> tuple[list[float], list[float]]:
    pts = [(s["t"], s[key]) for s in samples if s.get(key) is not None]
    return [p[0] for p in pts], [float(p[1]) for p in pts]


def time_weighted_mean(ts: list[float], vs: list[float], t_end: float | None = None) -> float | None:
    """Zero-order-hold mean of v over [ts[0], t_end] (t_end defaults to the last sample time;
    with one sample, its value)."""
    if not ts:
        return None
    if len(ts) == 1:
        return vs[0]
    t_end = ts[-1] if t_end is None else t_end
    area = span = 0.0
    for i, (t, v) in enumerate(zip(ts, vs)):
        t_next = ts[i + 1] if i + 1 < len(ts) else t_end
        dt = max(0.0, min(t_next, t_end) - t)
        area += v * dt
        span += dt
    return area / span if span > 0 else statistics.fmean(vs)


def field_stats(samples: list[dict], key: str, t_end: float | None = None) -> dict | None:
    """median/min/max/time-weighted mean/n of one field, or None when never read."""
    ts, vs = _series(samples, key)
    if not vs:
        return None
    return {"median": statistics.median(vs), "min": min(vs), "max": max(vs),
            "tw_mean": time_weighted_mean(ts, vs, t_end), "n": len(vs)}


def reason_fractions(samples: list[dict], t_end: float | None = None) -> dict[str, float]:
    """Fraction of the window (zero-order hold) during which each reason bit was set."""
    ts, masks = _series(samples, "reasons")
    if not ts:
        return {}
    out: dict[str, float] = {}
    for bit, name in REASON_BITS.items():
        frac = time_weighted_mean(ts, [1.0 if int(m) & bit else 0.0 for m in masks], t_end)
        if frac:
            out[name] = frac
    if not any(int(m) for m in masks):
        out["none"] = 1.0
    return out


def energy_from_counter(samples: list[dict]) -> dict | None:
    """Energy (J) and mean power (W) between the first and last energy-counter reads."""
    ts, es = _series(samples, "energy_mj")
    if len(ts) < 2 or ts[-1] <= ts[0]:
        return None
    joules = (es[-1] - es[0]) / 1e3
    return {"energy_j": joules, "seconds": ts[-1] - ts[0], "mean_power_w": joules / (ts[-1] - ts[0])}


def energy_from_power(samples: list[dict], key: str = "power_w") -> float | None:
    """Energy (J) integrating a power reading (zero-order hold): compare with the counter."""
    ts, vs = _series(samples, key)
    if len(ts) < 2:
        return None
    return time_weighted_mean(ts, vs) * (ts[-1] - ts[0])


def sample_period(samples: list[dict]) -> dict | None:
    """Achieved sampling period (ms): median and max gap between consecutive samples."""
    ts = [s["t"] for s in samples]
    gaps = [(b - a) * 1e3 for a, b in zip(ts, ts[1:])]
    if not gaps:
        return None
    return {"median_ms": statistics.median(gaps), "max_ms": max(gaps)}


def window(samples: list[dict], t0: float | None = None, t1: float | None = None) -> list[dict]:
    """Samples with t0 <= t <= t1 (None: open)."""
    return [s for s in samples if (t0 is None or s["t"] >= t0) and (t1 is None or s["t"] <= t1)]


def summarize(samples: list[dict], launches: int | None = None, t_end: float | None = None,
              counter_energy_j: float | None = None) -> dict:
    """The `power_samples_summary` of a window: per-field stats, energy, reasons, sampling.

    counter_energy_j: energy read from the counter exactly at the window's ends (preferred
    over the first/last sample difference when given)."""
    out: dict = {"n_samples": len(samples), "period": sample_period(samples)}
    if samples:
        out["seconds"] = (t_end if t_end is not None else samples[-1]["t"]) - samples[0]["t"]
    for key in STAT_FIELDS:
        st = field_stats(samples, key, t_end)
        if st is not None:
            out[key] = st
    en = energy_from_counter(samples)
    if counter_energy_j is not None:
        secs = out.get("seconds") or (en or {}).get("seconds")
        en = {"energy_j": counter_energy_j, "seconds": secs,
              "mean_power_w": counter_energy_j / secs if secs else None}
    if en is not None:
        out["energy"] = en
        if launches:
            out["energy_per_launch_mj"] = en["energy_j"] * 1e3 / launches
            out["launches"] = launches
    integ = energy_from_power(samples)
    if integ is not None:
        out["energy_j_from_power_w"] = integ
    out["reasons"] = reason_fractions(samples, t_end)
    return out


def step_response(ts: list[float], vs: list[float], t_step: float, settle_s: float = 0.5) -> dict | None:
    """Lag of a reading after a step at t_step: the level before (median of samples before the
    step), the level after (median of the last `settle_s` of the series), and the delays (s) from
    the step to the first sample past 10/50/90 % of the change. None when there is no change."""
    before = [v for t, v in zip(ts, vs) if t < t_step]
    after_t = [t for t in ts if t >= t_step]
    if not before or not after_t:
        return None
    tail = [v for t, v in zip(ts, vs) if t >= ts[-1] - settle_s and t >= t_step]
    lo, hi = statistics.median(before), statistics.median(tail)
    if math.isclose(lo, hi, rel_tol=1e-6, abs_tol=1e-9):
        return None
    out = {"level_before": lo, "level_after": hi}
    for pct in (10, 50, 90):
        thr = lo + (hi - lo) * pct / 100
        hit = next((t for t, v in zip(ts, vs) if t >= t_step and (v - thr) * (hi - lo) >= 0), None)
        out[f"t{pct}_s"] = None if hit is None else hit - t_step
    return out


def derivative(ts: list[float], vs: list[float], min_dt: float = 0.0) -> tuple[list[float], list[float]]:
    """Finite difference dv/dt at the midpoints (pairs closer than min_dt are merged forward):
    the energy counter's derivative is the board power without the reading's averaging."""
    out_t, out_v = [], []
    i = 0
    for j in range(1, len(ts)):
        if ts[j] - ts[i] > min_dt and ts[j] > ts[i]:
            out_t.append((ts[i] + ts[j]) / 2)
            out_v.append((vs[j] - vs[i]) / (ts[j] - ts[i]))
            i = j
    return out_t, out_v
