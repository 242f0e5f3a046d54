"""Text summary of a timed run, in Nsight Compute's vocabulary (sections of metric / unit / value).

    print(format_summary(result, title="gemm 4096x4096x4096 ...", launch=..., extra=...))

Sections: GPU Speed Of Light Throughput (duration, cycles, clock, TFLOP/s, busy fraction of each
unit), Launch Statistics (grid, block, shared memory, registers, CTAs per SM and the limiting
resource, waves), Memory Workload Analysis (L2 hits, HBM bytes, stores, shared-memory wavefronts
and bank conflicts), Warp State by role (cycles issuing and waiting on each barrier kind, as a share
of the role's warp-cycles). The numbers come from `hopsim.result.SimResult` unchanged.

Plain fixed-width text on purpose (not `rich` tables, which the progress bars use): scripts and
tests read these lines and the sweep table column by column; `--json` is the machine format.
"""

from __future__ import annotations

from typing import Any

from hopsim.result import ROLES

BUSY_NAMES = {"tma": "TMA Unit Busy", "tensor": "Tensor Core Busy", "smem": "Shared Memory Port Busy",
              "l2": "L2 Link Busy (chip)", "hbm": "DRAM Link Busy (chip)"}


def _row(name: str, unit: str, value: Any) -> str:
    if isinstance(value, float) and unit == "%":
        value = f"{value:.1f}"
    elif isinstance(value, float):
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
    port = getattr(res, "smem_port", None) or {}
    for name, key in (("Shared Memory wgmma Operand Reads", "wgmma_operand_bytes"),
                      ("Shared Memory TMA Fill Writes", "tma_fill_bytes"),
                      ("Shared Memory TMA Store Reads", "tma_store_read_bytes")):
        if key in port:
            unit, v = _bytes(int(port[key]))
            lines.append(_row(name, unit, v if unit != "byte" else int(v)))
    lines.append(_row("Shared Memory Wavefronts", "", int(res.smem_wavefronts)))
    lines.append(_row("Shared Memory Ideal Wavefronts", "", int(res.smem_ideal_wavefronts)))
    lines.append(_row("Shared Bank Conflicts", "", int(res.bank_conflicts)))
    lines += warp_state(res.roles)
    if port:
        lines.append(f"  note: Shared Memory Port Busy = LSU wavefront cycles + wgmma operand reads, "
                     f"TMA fills and store reads at {port['bytes_per_cycle']:.0f} B/cycle per SM; "
                     "counted, not modelled (only LSU wavefronts hold the port in the timing), so "
                     "above 100% means more demand than the port gives")
    for n in notes or ():
        lines.append(f"  note: {n}")
    return "\n".join(lines)


def warp_state(roles: dict) -> list[str]:
    """Warp State Statistics: one row per state (issuing, then each wait kind, largest first), one
    column per warp role, each cell the share of that role's issue + wait warp-cycles."""
    lines = _section("Warp State Statistics (share of each role's warp-cycles)")
    if not roles:
        return lines + ["    (no warps)"]
    grouped = {role: _group(r.get("wait", {})) for role, r in roles.items()}
    totals = {role: r["issue"] + sum(grouped[role].values()) for role, r in roles.items()}
    waits = sorted({w for g in grouped.values() for w in g},
                   key=lambda w: -sum(_share(grouped[r].get(w, 0), totals[r]) for r in roles))
    heads = [f"{role} ({r['warps']:,} warps)" for role, r in roles.items()]
    wid = [max(12, len(h) + 2) for h in heads]
    lines.append(f"    {'state':<36}" + "".join(f"{h:>{w}}" for h, w in zip(heads, wid)))
    rows = [("Issuing", {role: r["issue"] for role, r in roles.items()})]
    rows += [(f"Waiting on {w}", {role: grouped[role].get(w, 0) for role in roles}) for w in waits]
    for name, vals in rows:
        lines.append(f"    {name:<36}" + "".join(f"{_pct(vals[role], totals[role]):>{w}}"
                                                 for role, w in zip(roles, wid)))
    lines.append("    (roles, from what each warp executed: " + "; ".join(
        f"{role} = {ROLES[role]}" for role in roles if role in ROLES) + ";")
    lines.append("     a warp's cycles before its first and after its last instruction are not counted)")
    return lines


def _share(part: float, total: float) -> float:
    return part / total if total else 0.0


def _group(waits: dict) -> dict:
    """Wait cycles by kind: 'mbarrier 0x8000' and 'mbarrier 0x8008' count as 'mbarrier'."""
    out: dict = {}
    for k, v in waits.items():
        kind = str(k).split()[0]
        out[kind] = out.get(kind, 0) + v
    return out


def _pct(part: float, total: float) -> str:
    return f"{100.0 * part / total:.1f}%" if total else "-"
