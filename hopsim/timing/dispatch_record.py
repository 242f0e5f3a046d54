"""The dispatch-time L2 decisions of a launch, recorded at its first simulation and replayed at the
others (the power model's clock solve simulates one launch at several clocks, power/solve.py).

Why it is exact. `memo.DispatchResidency.classify(cta)` is called once per CTA in linear CTA
order whatever the timing, and its result (the CTA's hit vector, `CtaHits`) and its effect on
the L2 residency (LRU content and hit/miss counters) depend only on the CTAs classified before
it, as long as nothing else touches the residency between two calls: an L2 look-up at request
time (a read without a dispatch-time `hit`) or an allocating store would interleave with the
walk, and through it with the timing. So the recording run checks, at every call and when the
run ends (`finish`), that the residency is exactly as the previous call left it (counters, bytes
and tiles held); only then is the record complete. Another simulation of the same launch (the
plan cache's key: same kernel, launch, tensor maps and slots, timing/runner.py) over an empty
residency of the same capacity (e.g. at another clock) then takes each
CTA's hit vector from the record, sets the counters to the recorded values, checks that nothing
else touched them in between (an internal error otherwise), and gives the residency the
recorded LRU content with the last CTA (so anything after dispatch sees the same L2). What it
no longer does per simulation is the LRU walk and the window arrays of `classify`.
"""

from __future__ import annotations

from collections import OrderedDict

from isa.errors import HopsimError


class ClassifyRecord:
    """Per CTA, in linear order: the hit vector and the residency counters after its dispatch."""

    __slots__ = ("num_ctas", "capacity", "hits", "after", "valid", "complete", "tiles", "used", "warm",
                 "warm_bytes", "reread")

    def __init__(self, num_ctas: int, capacity: int, warm: bool = False, reread: tuple | None = None):
        self.num_ctas, self.capacity = num_ctas, capacity  # the L2 residency's bytes
        self.reread = reread  # the residency's re-read hit ramp (dispatch_residency)
        self.warm, self.warm_bytes = warm, 0  # a same-buffer loop's residency (memory.WarmResidency)
        self.hits: list = []
        self.after: list = []  # _state() after each CTA's classify
        self.valid = True
        self.complete = False
        self.tiles = self.used = None  # the LRU after the last CTA

    def replays(self, residency) -> bool:
        """Can a run over this (empty) residency replay the record? Complete, same L2 capacity and
        re-read ramp, both warm (a same-buffer loop) or both cold."""
        return (self.complete and residency.capacity == self.capacity
                and getattr(residency, "reread", None) == self.reread
                and getattr(residency, "warm", False) == self.warm)


def _state(res) -> tuple:
    return (res.hits, res.misses, res.hit_bytes, res.miss_bytes, res.used, len(res._tiles))


_EMPTY = (0, 0, 0, 0, 0, 0)


class RecordedDispatch:
    """A `DispatchResidency` (`inner`) whose `classify` records into, or replays, `record`
    (module docstring). Everything else is the inner object's."""

    def __init__(self, inner, record: ClassifyRecord):
        self.inner, self.record = inner, record
        self.replaying = record.replays(inner.residency)

    def __getattr__(self, name):  # plan, tiles, residency, ... of the inner dispatch
        return getattr(self.__dict__["inner"], name)

    def classify(self, cta: int):
        rec = self.record
        res = self.inner.residency
        before = rec.after[cta - 1] if cta else _EMPTY
        if self.replaying:
            if cta >= len(rec.hits) or (_state(res) != _EMPTY if cta == 0 else _state(res)[:4] != before[:4]):
                raise HopsimError(f"CTA {cta}: the L2 residency differs from the recorded dispatch "
                                  "(dispatch_record.py, internal)")
            res.hits, res.misses, res.hit_bytes, res.miss_bytes = rec.after[cta][:4]
            if cta == rec.num_ctas - 1:
                res._tiles = OrderedDict(rec.tiles)
                res.used = rec.used
                if rec.warm:
                    res.warm_bytes = rec.warm_bytes
            return rec.hits[cta]
        if cta != len(rec.hits) or _state(res) != before:
            rec.valid = False
        hits = self.inner.classify(cta)
        if rec.valid:
            rec.hits.append(hits)
            rec.after.append(_state(res))
            if cta == rec.num_ctas - 1:
                rec.tiles, rec.used = OrderedDict(res._tiles), res.used
                if rec.warm:
                    rec.warm_bytes = res.warm_bytes
        return hits

    def finish(self) -> None:
        """The run has ended: a recording is complete when every CTA was classified and nothing
        touched the residency after the last one; a replay checks the same."""
        rec = self.record
        res = self.inner.residency
        done = len(rec.hits) == rec.num_ctas and rec.num_ctas > 0 and _state(res) == rec.after[-1]
        if self.replaying:
            if not done:
                raise HopsimError("the L2 residency differs from the recorded dispatch at the end of the run "
                                  "(dispatch_record.py, internal)")
            return
        rec.complete = rec.valid and done
