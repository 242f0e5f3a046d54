"""Microbenchmarks through `simulate()`: each H100 microbenchmark as an IR kernel (kernels/micro/)
run on the same SM runner as the GEMM, timed by its own clock64 reads, vs the record.

    from hopsim.validate.micro_ir import simulate_micro_ir, summary
    rows = simulate_micro_ir()            # {family: [MicroRow(name, field, measured, simulated, ...)]}
    print(summary(rows))                  # within 10% per family, with and without calibration rows

`hopsim validate micro` prints it. The unit replays of hopsim/validate/micro_sim.py check the
units' formulas; these check how hopsim/timing/sm.py composes them (issue costs, ALU batches,
waits, wake-ups) on the instruction sequence of each CUDA kernel. Rows marked `calibration` are
those a calibrated number was read from (hopsim/validate/calibrate.py); through the SM runner
they need not reproduce it, so the fit is reported with and without them.

Families not run through simulate() yet (their unit replays remain in micro_sim.py): FAMILIES_NOT_RUN.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable

from hopsim.validate.compare import MicroRow
from hopsim.validate.micro_ir import clock, mem, membw, ops, smemport, stream, sync, tma, wgmma
from validation.provenance import RECORDS_DIR, load_records

FAMILIES: dict[str, Callable[[dict], list[MicroRow]]] = {
    "smem": mem.smem, "mbarrier": sync.mbarrier, "tma_latency": tma.tma_latency, "tma_issue": tma.tma_issue,
    "wgmma": wgmma.wgmma, "wgmma_queue": wgmma.wgmma_queue,
    "wgmma_swizzle": wgmma.wgmma_swizzle, "wgmma_tma": wgmma.wgmma_tma, "global_latency": mem.global_latency,
    "smemport": smemport.smemport,
    "tma_width": stream.tma_width, "tma_share": stream.tma_share, "tma_stream": stream.tma_stream_rows,
    "clock_domain": clock.clock_domain, "wgmma_chip": wgmma.wgmma_chip, "ops": ops.ops,
    "membw": membw.membw,
}
"""Family (record name) -> its simulate() comparison, most valuable first."""

FAMILIES_NOT_RUN = {
    "wgmma_queue (tma_after_wgmma)": "the TMA-behind-wgmma kernel wgqt: not written as an IR kernel yet",
    "global_bandwidth": ("gread over all SMs (2 GiB from HBM, 16 MiB x 40 from L2: 10^8 lane loads): "
                         "not written as an IR kernel (too long to simulate as is)"),
    "launch": ("empty kernels: the record's us per launch is host launch overhead (not simulated) and "
               "its start spread a %globaltimer reading: not written as an IR kernel"),
}


SUBDIRS = ("smemport",)
"""Record folders below the records directory whose microbench records the families read too."""


def records(records_dir=None) -> dict[str, dict]:
    d = pathlib.Path(records_dir or RECORDS_DIR)
    recs = {r["name"]: r for r in load_records("microbench", d)}
    for sub in SUBDIRS:
        if (d / sub).is_dir():
            recs.update({r["name"]: r for r in load_records("microbench", d / sub)})
    points = membw.membw_records(d)
    if points:  # membw/membw.jsonl: one point per line; the family reads them all
        recs["membw"] = {"name": "membw", "results": {"points": points}}
    return recs


def simulate_micro_ir(families=None, records_dir=None) -> dict[str, list[MicroRow]]:
    """Run the named families (default: all in FAMILIES) whose record exists."""
    recs = records(records_dir)
    out = {}
    for name in families or FAMILIES:
        if name in recs:
            out[name] = FAMILIES[name](recs[name])
    return out


def fit(rows: list[MicroRow]) -> dict:
    """Within-tolerance counts: all rows, and the check rows (calibration rows left out)."""
    checks = [r for r in rows if not r.calibration]
    return {"within": sum(r.ok for r in rows), "rows": len(rows),
            "within_checks": sum(r.ok for r in checks), "checks": len(checks)}


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:5.1f}%" if b else "    -"


def summary(by_family: dict[str, list[MicroRow]]) -> str:
    """A table: per family, rows within 10% (all, and without the calibration rows)."""
    lines = [f"{'family':16s} {'within/all':>11s} {'':6s} {'within/checks':>14s} {'':6s}  (checks: calibration rows left out)"]
    tot = {"within": 0, "rows": 0, "within_checks": 0, "checks": 0}
    for name, rows in by_family.items():
        f = fit(rows)
        for k in tot:
            tot[k] += f[k]
        lines.append(f"{name:16s} {f['within']:5d}/{f['rows']:<5d} {_pct(f['within'], f['rows'])} "
                     f"{f['within_checks']:8d}/{f['checks']:<5d} {_pct(f['within_checks'], f['checks'])}")
    lines.append(f"{'all':16s} {tot['within']:5d}/{tot['rows']:<5d} {_pct(tot['within'], tot['rows'])} "
                 f"{tot['within_checks']:8d}/{tot['checks']:<5d} {_pct(tot['within_checks'], tot['checks'])}")
    return "\n".join(lines)
