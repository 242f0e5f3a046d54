"""Progress on stderr for sweeps and long simulations, drawn by `rich.progress`.

    with Progress(total=len(points), desc="sweep") as bar:
        for ... in ...:
            bar.update()          # or bar.update(n, errors=k) for a chunk of n points

    sweep ━━━━━━━━━━╺━━━━━━━━━  512/1024  50.0%  83.1 points/s  0:00:06 left  1 failed

    with Activity("simulating gemm 4096x4096x4096"):   # unknown amount of work
        run = simulate_gemm(...)
    # after 2 s:  simulating gemm 4096x4096x4096 ⠋ 0:00:07 elapsed   (erased when done)

Policy (ours; the drawing is rich's): draw only when the stream is a terminal, or when forced
(`enabled=True`, or HOPSIM_PROGRESS=1); HOPSIM_PROGRESS=0 silences it, so piped output and CI logs
stay clean. rich redraws once a second on its own thread, so the elapsed time moves even while
the points are slow. Nothing is ever written to stdout.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TextIO

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, SpinnerColumn, TaskProgressColumn,
                           TextColumn, TimeElapsedColumn, TimeRemainingColumn)
from rich.progress import Progress as _RichProgress


def _want(stream: TextIO, enabled: bool | None) -> bool:
    if enabled is not None:
        return enabled
    env = os.environ.get("HOPSIM_PROGRESS")
    if env is not None:
        return env.strip() not in ("", "0", "false", "no")
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _console(stream: TextIO, draw: bool) -> Console:
    """A console on `stream`; when drawing is forced on a non-terminal, it still draws."""
    return Console(file=stream, force_terminal=draw or None, stderr=stream is sys.stderr)


class Progress:
    """Counts done out of `total`, with rate, time left and failures (see the module docstring)."""

    def __init__(self, total: int, desc: str = "", *, stream: TextIO | None = None,
                 enabled: bool | None = None, unit: str = "points"):
        stream = stream or sys.stderr
        self.total = int(total)
        self.done = 0
        self.errors = 0
        draw = _want(stream, enabled) and self.total > 0
        self._bar = _RichProgress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TaskProgressColumn("{task.percentage:>5.1f}%"),
            TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), TextColumn("{task.fields[failed]}"),
            console=_console(stream, draw), disable=not draw, refresh_per_second=1)
        self._task = self._bar.add_task(desc, total=self.total, rate="", failed="")
        self._bar.start()

    def update(self, n: int = 1, *, errors: int = 0) -> None:
        self.done += n
        self.errors += errors
        task = self._bar.tasks[0]
        rate = f"{task.speed:.3g} /s" if task.speed else ""
        self._bar.update(self._task, advance=n, rate=rate,
                         failed=f"{self.errors} failed" if self.errors else "")

    def close(self) -> None:
        self._bar.stop()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Activity:
    """An elapsed-time line for one long job of unknown length: appears after `delay_s`, erased
    when the job ends (see the module docstring)."""

    def __init__(self, desc: str, *, stream: TextIO | None = None, enabled: bool | None = None,
                 delay_s: float = 2.0):
        stream = stream or sys.stderr
        draw = _want(stream, enabled)
        self._bar = _RichProgress(TextColumn(desc), SpinnerColumn(), TimeElapsedColumn(),
                                  TextColumn("elapsed"), console=_console(stream, draw),
                                  disable=not draw, transient=True, refresh_per_second=1)
        self._bar.add_task(desc, total=None)
        self._timer = threading.Timer(delay_s, self._bar.start)
        self._timer.daemon = True
        self._draw = draw

    def __enter__(self) -> "Activity":
        if self._draw:
            self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()
        if self._timer.is_alive():  # firing right now: let it finish starting, then stop
            self._timer.join()
        self._bar.stop()
