"""A dependency-free progress bar on stderr, for sweeps and long simulations.

    with Progress(total=len(points), desc="sweep") as bar:
        for ... in ...:
            bar.update()          # or bar.update(n) for a chunk of n points

One line, redrawn in place with a carriage return, at most every `min_interval_s`:

    sweep [##########----------]  512/1024  50.0%  83.1/s  ETA 0:06

It draws only when the stream is a terminal, or when forced (`enabled=True`, or the environment
variable HOPSIM_PROGRESS=1); HOPSIM_PROGRESS=0 silences it. Piped output and CI logs therefore stay
clean. Rate and ETA come from wall time since the bar was created. While a bar is drawn, a
background thread redraws it every `refresh_s` (1 s) so that the elapsed time moves even when the
points are slow (a sweep of six 4096^3 GEMMs: minutes before the first one is done).

A single long job whose amount of work is unknown (one large simulation) gets `Activity`, a line
that appears only after `delay_s` (2 s) and counts the elapsed time:

    with Activity("simulating gemm 4096x4096x4096"):
        run = simulate_gemm(...)
    # stderr:  simulating gemm 4096x4096x4096 ... 0:07 elapsed   (erased when done)
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO


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


def format_duration(seconds: float) -> str:
    """`h:mm:ss` (or `m:ss` under an hour); `?` when unknown."""
    if seconds != seconds or seconds in (float("inf"), float("-inf")) or seconds < 0:
        return "?"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Counts done out of `total` and draws a bar with rate and ETA (see the module docstring)."""

    def __init__(self, total: int, desc: str = "", *, stream: TextIO | None = None,
                 enabled: bool | None = None, width: int = 24, min_interval_s: float = 0.1,
                 unit: str = "pt", refresh_s: float | None = 1.0):
        self.total = max(0, int(total))
        self.desc = desc
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _want(self.stream, enabled)
        self.width = width
        self.min_interval_s = min_interval_s
        self.unit = unit
        self.done = 0
        self.errors = 0
        self._t0 = time.monotonic()
        self._last_draw = -1e9
        self._drawn_at = -1
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        if self.enabled and refresh_s:
            self._thread = threading.Thread(target=self._refresh, args=(refresh_s,), daemon=True)
            self._thread.start()

    def _refresh(self, every: float) -> None:
        while not self._stop.wait(every):
            self._draw(time.monotonic())

    # ------------------------------------------------------------------ counting
    def update(self, n: int = 1, *, errors: int = 0) -> None:
        """Mark `n` more items done (`errors` of them failed); redraw if it is time to."""
        self.done += n
        self.errors += errors
        now = time.monotonic()
        if self.enabled and (now - self._last_draw >= self.min_interval_s or self.done >= self.total):
            self._draw(now)

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self._t0

    def rate(self) -> float:
        """Items per second so far (0 before the first item)."""
        el = self.elapsed_s
        return self.done / el if el > 0 else 0.0

    def eta_s(self) -> float:
        r = self.rate()
        return (self.total - self.done) / r if r > 0 else float("nan")

    # ------------------------------------------------------------------ drawing
    def line(self) -> str:
        """The text of the bar as it would be drawn now."""
        frac = self.done / self.total if self.total else 1.0
        frac = min(1.0, frac)
        fill = int(round(frac * self.width))
        bar = "#" * fill + "-" * (self.width - fill)
        n = len(str(self.total))
        head = f"{self.desc} " if self.desc else ""
        err = f"  {self.errors} failed" if self.errors else ""
        el = format_duration(self.elapsed_s)
        tail = (f"in {el}" if self.done >= self.total else
                f"{el} elapsed" if not self.done else f"ETA {format_duration(self.eta_s())}")
        return (f"{head}[{bar}] {self.done:>{n}d}/{self.total}  {100 * frac:5.1f}%  "
                f"{self.rate():.1f} {self.unit}/s  {tail}{err}")

    def _draw(self, now: float) -> None:
        with self._lock:
            self._last_draw = now
            self._drawn_at = self.done
            self.stream.write("\r" + self.line() + "\x1b[K")
            self.stream.flush()

    def close(self) -> None:
        """Draw the final state and end the line (only if anything was drawn)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.enabled:
            if self._drawn_at != self.done:
                self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Activity:
    """An elapsed-time line on stderr for one job of unknown length (see the module docstring).

    Drawn only where `Progress` would draw (a terminal, or HOPSIM_PROGRESS=1), and only once the
    job has run `delay_s`; erased when the job ends, so short runs and piped output see nothing.
    """

    def __init__(self, desc: str, *, stream: TextIO | None = None, enabled: bool | None = None,
                 delay_s: float = 2.0, refresh_s: float = 1.0):
        self.desc = desc
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _want(self.stream, enabled)
        self.delay_s = delay_s
        self.refresh_s = refresh_s
        self.drawn = False
        self._t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = None

    def line(self) -> str:
        return f"{self.desc} ... {format_duration(time.monotonic() - self._t0)} elapsed"

    def _run(self) -> None:
        if self._stop.wait(self.delay_s):
            return
        while True:
            self.stream.write("\r" + self.line() + "\x1b[K")
            self.stream.flush()
            self.drawn = True
            if self._stop.wait(self.refresh_s):
                return

    def __enter__(self) -> "Activity":
        self._t0 = time.monotonic()
        if self.enabled:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
