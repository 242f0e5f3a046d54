"""What every non-GEMM `hopsim simulate <family>` front end does the same way: check the output
paths, solve the clock (hopsim/power/solve.py), simulate once more at the chosen clock with data
or a trace when asked, write --trace/--plot atomically, and the clock/power fields of --json.

    run = clocked_run(args, name, lambda mhz, **kw: simulate_x(p, gpu, mhz=mhz, **kw), gpu)
    run.res, run.data        # the final simulation's result and its extra outputs (gmem, arrays)
    write_outputs(args, run.res, name)
    print(json.dumps({**run.res.to_json(), ..., **run.clock_fields()}))

`simulate(mhz, values=..., trace=...)` returns (SimResult, *data); the solve calls it with the
defaults (timing only, no trace), the final call with values=<wants data>, trace=<--trace/--plot>.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from hopsim import inputs
from hopsim.plots import plot_timeline
from hopsim.power.model import Events, PowerModel
from hopsim.power.solve import ClockPoint, ClockSolution, ClockSolver, parse_clock
from hopsim.progress import Activity
from hopsim.timing import launch as launch_loops
from isa.errors import InputError


LOOP_HELP = ("the benchmark loop the launch is one of: rotated (default; inputs and outputs rotated over "
             "sets larger than the L2, as the H100 records: a cold L2 at the start) or same (a loop over "
             "the same buffers: when the distinct bytes the launch reads fit in l2_bytes x "
             "l2_effective_capacity_fraction, they are L2-resident at its start, first reads hit; a "
             "larger footprint is timed as rotated)")


def add_loop_argument(p, dest: str = "loop", more_help: str = "") -> None:
    """The `--loop rotated|same` option of every `simulate` command (LOOP_HELP + `more_help`)."""
    p.add_argument("--loop", dest=dest, default="rotated" if dest == "loop" else None, metavar="rotated|same",
                   help=LOOP_HELP + more_help)


def loop_of(args) -> str:
    """--loop, checked: one of hopsim/timing/launch.py CLI_LOOPS (the wording of the sweep knob's
    check, hopsim/sweep_knobs.py LOOP: a bad value reads the same in every command)."""
    if args.loop not in launch_loops.CLI_LOOPS:
        raise InputError("loop", args.loop, "one of " + ", ".join(launch_loops.CLI_LOOPS))
    return args.loop


def loop_notes(res) -> list[str]:
    """The report line of --loop same (none for the default)."""
    note = launch_loops.loop_note(res.extra)
    return [note] if note else []


def check_output_paths(args) -> None:
    """--trace (.json) and --plot (.png) writable before anything is simulated (hopsim/inputs.py)."""
    inputs.output_paths([("trace", args.trace, (".json",)), ("plot", args.plot, (".png",))])


@dataclass
class ClockedRun:
    """The clock solution, the chosen clock's point and the final simulation (result + data)."""

    sol: ClockSolution
    mhz: float
    point: ClockPoint
    res: Any
    data: tuple

    def notes(self) -> list[str]:
        return [self.sol.summary(),
                f"at {self.mhz:.0f} MHz: {self.point.power_w:.0f} W, {self.point.energy_mj:.4g} mJ per launch"]

    def clock_fields(self) -> dict:
        """The JSON fields of the clock solve (same keys as `simulate gemm --json`)."""
        return {"clock_mhz": float(self.mhz), "sm_clock_mhz": self.res.clock_mhz,
                "time_ms_boost": self.sol.boost.time_ms, "time_ms_sustained": self.sol.sustained.time_ms,
                "sustained_clock_mhz": self.sol.sustained.mhz, "power_w": self.point.power_w,
                "energy_mj": self.point.energy_mj}


def clocked_run(args, name: str, simulate: Callable[..., tuple], gpu, *, values: bool,
                variant: str = "f16f32", tensor_cores: bool = False) -> ClockedRun:
    """Solve the clock asked for by --clock (timing-only simulations), then simulate at it with
    data when `values` and with a trace when --trace/--plot ask for one. `simulate(mhz)` gets the
    SMs' clock: the reported clock x tensor_sm_clock_ratio for a kernel that uses the tensor cores
    (`tensor_cores`), the reported clock otherwise (hopsim/config/power.py)."""
    pm = PowerModel.load()
    clock = parse_clock(args.clock, pm)
    nsms = int(gpu.spec.num_sms.value)
    with Activity(f"simulating {name}", enabled=False if args.no_progress else None):
        solver = ClockSolver(lambda mhz: simulate(mhz)[0], lambda r: Events.from_result(r, variant, nsms), pm,
                             clock_ratio=pm.sm_clock_ratio(tensor_cores))
        sol = solver.solve()
        mhz = {"sustained": sol.sustained.mhz, "boost": sol.boost.mhz}.get(clock, clock)
        pt = solver.point(mhz)
        res, *data = simulate(solver.sm_mhz(mhz), values=values, trace=bool(args.trace or args.plot))
    return ClockedRun(sol, mhz, pt, res, tuple(data))


def write_outputs(args, res, title: str) -> None:
    """--trace and --plot, all or none (inputs.Outputs: temp files renamed at the end)."""
    with inputs.Outputs() as outs:
        if args.trace:
            res.trace.write(outs.stage(args.trace))
        if args.plot:
            plot_timeline(res.trace, outs.stage(args.plot), title=title, clock_mhz=res.clock_mhz,
                          total_cycles=res.cycles)


def bandwidth_gbs(bytes_moved: int, res) -> float:
    """Achieved bandwidth of one launch, GB/s (0 for a zero-time launch)."""
    return bytes_moved / (res.time_ms * 1e-3) / 1e9 if res.time_ms > 0 else 0.0


__all__ = ["LOOP_HELP", "ClockedRun", "add_loop_argument", "bandwidth_gbs", "check_output_paths", "clocked_run", "loop_notes", "loop_of",
           "write_outputs"]
