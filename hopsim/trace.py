"""Chrome / Perfetto trace-event JSON of a timed run.

Layout (open the file in https://ui.perfetto.dev or chrome://tracing):

    pid = SM index (process "SM 7")          pid = num_sms: the chip-wide memory ("L2/HBM")
      tid 0..3   SMSP0..3 issue slots          tid 0 L2->SM link, tid 1 HBM->L2 link
      tid 10     TMA issue stage, 11 TMA fill
      tid 12     tensor cores, 13 smem port, 14/15 the SM's L2/HBM links (partitioned mode)
      tid 16     TMA loads in flight (issue -> bytes landed), 17 wgmma in flight (issue -> done)
      tid 100+w  warp w of the CTA (slices: issue runs and waits, named by what they wait on)

Events: "M" metadata names each process and thread; "X" complete events carry ``ts``/``dur``
in microseconds at the model clock (``cycles / clock_mhz``) and the cycles in ``args``; "C"
counters (e.g. resident CTAs per SM). Only built when ``simulate(..., trace=True)``.
"""

from __future__ import annotations

import json


class Trace:
    """Collects trace events; `to_json()` gives the Chrome trace-event object."""

    def __init__(self, clock_mhz: float):
        self.clock_mhz = float(clock_mhz)
        self.events: list[dict] = []
        self._named: set[tuple[int, int | None]] = set()

    def _us(self, cycles: float) -> float:
        return cycles / self.clock_mhz

    def name_process(self, pid: int, name: str) -> None:
        if (pid, None) not in self._named:
            self._named.add((pid, None))
            self.events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})

    def name_thread(self, pid: int, tid: int, name: str) -> None:
        if (pid, tid) not in self._named:
            self._named.add((pid, tid))
            self.events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})

    def slice(self, pid: int, tid: int, name: str, start: float, end: float, **args) -> None:
        """An "X" complete event from `start` to `end` cycles."""
        args["start_cycle"], args["cycles"] = start, end - start
        mhz = self.clock_mhz  # (_us inlined: a traced run makes one call per slice)
        self.events.append({"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": start / mhz,
                            "dur": (end - start) / mhz, "args": args})

    def counter(self, pid: int, name: str, at: float, **values) -> None:
        self.events.append({"ph": "C", "name": name, "pid": pid, "ts": self._us(at), "args": values})

    def add_pipe(self, pid: int, tid: int, pipe) -> None:
        """All recorded slices of a `Pipe` as one track."""
        if not pipe.slices:
            return
        self.name_thread(pid, tid, pipe.name)
        for start, end, label in pipe.slices:
            self.slice(pid, tid, label or pipe.name, start, end)

    def to_json(self) -> dict:
        return {"traceEvents": self.events, "displayTimeUnit": "ns",
                "otherData": {"clock_mhz": self.clock_mhz, "time_unit": "us at clock_mhz; args.cycles are SM cycles"}}

    def write(self, path) -> None:
        with open(path, "w") as f:
            json.dump(self.to_json(), f)
