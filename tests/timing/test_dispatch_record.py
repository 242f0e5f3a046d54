"""The dispatch record (hopsim/timing/dispatch_record.py) is exact: a launch simulated again from
the plan cache, with its dispatch-time L2 decisions replayed from the record, gives the same
result as the same launch simulated with no cache at all (the law that a cache is invisible)."""

from __future__ import annotations

import pytest

from hopsim.config import load_gpu
from hopsim.gemm_sim import simulate_gemm
from hopsim.timing import dispatch_record
from kernels.params import GemmParams

# multi-wave grids whose CTAs have 2-3 distinct hit vectors (first wave, later waves)
POINTS = [dict(m=4096, n=4096, k=512, stages=4),                  # one CTA per SM (CtaScheduler)
          dict(m=4096, n=2048, k=256, stages=1),                  # SM classes (3 CTAs per SM)
          dict(m=2048, n=4096, k=256, stages=2, box_rows=8)]      # many boxes per CTA


def _numbers(run) -> dict:
    r = run.result
    return {"cycles": r.cycles, "bytes_l2": r.bytes_l2, "bytes_hbm": r.bytes_hbm, "busy": r.busy,
            "l2_hits": r.extra["l2_hits"], "l2_misses": r.extra["l2_misses"],
            "memo_hits": r.extra.get("memo_hits"), "detailed_ctas": r.extra.get("detailed_ctas")}


@pytest.mark.parametrize("kw", POINTS, ids=lambda kw: "x".join(str(kw[a]) for a in "mnk") + f" s{kw['stages']}")
def test_replayed_dispatch_equals_a_fresh_simulation(kw, monkeypatch):
    replays = []
    finish = dispatch_record.RecordedDispatch.finish

    def spy(self):
        replays.append(self.replaying)
        finish(self)
    monkeypatch.setattr(dispatch_record.RecordedDispatch, "finish", spy)
    cache: dict = {}
    p = GemmParams(**kw)
    simulate_gemm(p, load_gpu(), plan_cache=cache)                     # records
    again = simulate_gemm(p, load_gpu().at_clock(1410), plan_cache=cache)  # replays
    assert replays == [False, True]
    assert len({h.key for h in cache["record"].hits}) > 1  # the replay has CTAs to tell apart
    fresh = simulate_gemm(p, load_gpu().at_clock(1410))
    assert _numbers(again) == _numbers(fresh)


def test_a_residency_of_another_capacity_does_not_replay():
    rec = dispatch_record.ClassifyRecord(num_ctas=1, capacity=1000)
    rec.complete = True

    class Res:
        capacity = 2000
    assert not rec.replays(Res())
    Res.capacity = 1000
    assert rec.replays(Res())
