"""Text summary of a timed run, in Nsight Compute's vocabulary (sections of metric / unit / value).

    print(format_summary(result, title="gemm 4096x4096x4096 ...", launch=..., extra=...))

Sections: GPU Speed Of Light Throughput (duration, cycles, clock, TFLOP/s, busy fraction of each
unit), Launch Statistics (grid, block, shared memory, registers, CTAs per SM and the limiting
resource, waves), Memory Workload Analysis (L2 hits, HBM bytes, stores, shared-memory wavefronts
and bank conflicts), Warp State by role (cycles issuing and waiting on each barrier kind, as a share
of the role's warp-cycles). The numbers come from `hopsim.result.SimResult` unchanged.
"""

from __future__ import annotations

from typing import Any

BUSY_NAMES = {"tma": "TMA Unit Busy", "tensor": "Tensor Core Busy", "smem": "Shared Memory Port Busy",
              "l2": "L2 Link Busy (chip)", "hbm": "DRAM Link Busy (chip)"}


def _row(name: str, unit: str, value: Any) -> str:
    if isinstance(value, float):
        value = f"{value:,.4f}" if abs(value) < 10 else f"{value:,.1f}"
    elif isinstance(value, int):
        value = f"{value:,}"
    return f"    {name:<36}{unit:<14}{value:>18}"


def _section(title: str) -> list[str]:
    return ["", f"  Section: {title}", "    " + "-" * 68]


def _bytes(n: int) -> tuple[str, float]:
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= div:
            return unit, n / div
    return "byte", float(n)


def format_summary(res, *, title: str = "", launch: dict | None = None, flops: float | None = None,
                   notes: list[str] | None = None) -> str:
    """The report of one `SimResult`. `launch`: extra Launch Statistics rows (name -> (unit, value))."""
    lines = [f"  {title or res.kernel}"]
    lines += _section("GPU Speed Of Light Throughput")
    lines.append(_row("Duration", "ms", res.time_ms))
    lines.append(_row("Elapsed Cycles", "cycle", int(res.cycles)))
    lines.append(_row("SM Frequency (model clock)", "MHz", float(res.clock_mhz)))
    lines.append(_row("Tensor Throughput", "TFLOP/s", float(res.tflops)))
    for k, v in res.busy.items():
        lines.append(_row(BUSY_NAMES.get(k, f"{k} busy"), "%", 100.0 * float(v)))
    lines += _section("Launch Statistics")
    for name, (unit, value) in (launch or {}).items():
        lines.append(_row(name, unit, value))
    lines.append(_row("CTAs", "", int(res.ctas)))
    lines.append(_row("CTAs per SM", "", int(res.ctas_per_sm)))
    lines.append(_row("Occupancy Limiter", "", str(res.limiting)))
    lines.append(_row("Waves Per SM", "", res.waves))
    lines.append(_row("SMs Used", "", int(res.sms_used)))
    lines += _section("Memory Workload Analysis")
    for name, n in (("L2 Hit Bytes (loads)", res.bytes_l2), ("DRAM Bytes (loads)", res.bytes_hbm),
                    ("Bytes Stored", res.bytes_stored)):
        unit, v = _bytes(int(n))
        lines.append(_row(name, unit, v if unit != "byte" else int(v)))
    lines.append(_row("Shared Memory Wavefronts", "", int(res.smem_wavefronts)))
    lines.append(_row("Shared Memory Ideal Wavefronts", "", int(res.smem_ideal_wavefronts)))
    lines.append(_row("Shared Bank Conflicts", "", int(res.bank_conflicts)))
    lines += _section("Warp State (cycles summed over the warps of a role)")
    grouped = {role: _group(r.get("wait", {})) for role, r in res.roles.items()}
    waits = sorted({w for g in grouped.values() for w in g})
    cols = ["issuing"] + waits
    wid = [max(9, len(c) + 2) for c in cols]
    lines.append(f"    {'role':<10}{'warps':>6}" + "".join(f"{c:>{w}}" for c, w in zip(cols, wid)))
    for role, r in res.roles.items():
        g = grouped[role]
        total = r["issue"] + sum(g.values())
        vals = [r["issue"]] + [g.get(w, 0) for w in waits]
        lines.append(f"    {role:<10}{r['warps']:>6}" +
                     "".join(f"{_pct(v, total):>{w}}" for v, w in zip(vals, wid)))
    lines.append("    (share of each role's issue + wait cycles; the rest of a warp's life is not "
                 "counted)" if res.roles else "    (no warps)")
    for n in notes or ():
        lines.append(f"  note: {n}")
    return "\n".join(lines)


def _group(waits: dict) -> dict:
    """Wait cycles by kind: 'mbarrier 0x8000' and 'mbarrier 0x8008' count as 'mbarrier'."""
    out: dict = {}
    for k, v in waits.items():
        kind = str(k).split()[0]
        out[kind] = out.get(kind, 0) + v
    return out


def _pct(part: float, total: float) -> str:
    return f"{100.0 * part / total:.1f}%" if total else "-"
