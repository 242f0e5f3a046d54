"""Law: a run traced for some SMs only (`simulate(..., trace=True, trace_sms={...})`, what the timeline
picture needs: SM 0) is the same simulation as a run traced for every SM, and records for those SMs
exactly the events the full trace has for them (and none for any other SM or the chip's L2/HBM
tracks). Checked on a GEMM whose SM classes split (3 CTAs per SM: a split off the traced class is
a copy without the trace, fork.py `untrace`; a traced split class re-runs its history), for SM 0
and for the label SM of a split class, and on a grid with one CTA per SM (the CTA scheduler path, memo replays)."""

from __future__ import annotations

import json

import pytest

from hopsim.gemm_setup import setup_gemm
from hopsim.plots import TIMELINE_SMS
from hopsim.timing import fork
from hopsim.timing.runner import simulate
from kernels.gemm import build_gemm
from kernels.params import GemmParams

CASES = {"3 CTAs per SM, splits": dict(m=4096, n=2048, k=128, stages=1),
         "1 CTA per SM, memo": dict(m=2048, n=2048, k=256, stages=4, ctas_per_sm=1)}


def _run(params: dict, trace_sms=None):
    gp = GemmParams(**params)
    gk = build_gemm(gp)
    gm, launch, _a, _b = setup_gemm(gp, gk, values=False)
    return simulate(gk.kernel, launch, values=False, trace=True, gmem=gm, memory="partitioned", memo=True,
                    regs_per_thread=gk.regs_per_thread, trace_sms=trace_sms)


def _events(res, pid):
    return [json.dumps(e, sort_keys=True) for e in res.trace.events if e.get("pid") == pid]


@pytest.fixture(scope="module", params=list(CASES))
def full(request):
    return request.param, _run(CASES[request.param])


def _same_run(a, b) -> None:
    ja = json.loads(json.dumps(a.to_json(), sort_keys=True, default=str))
    jb = json.loads(json.dumps(b.to_json(), sort_keys=True, default=str))
    assert ja == jb


def test_sm0_trace_is_the_full_traces_sm0(full, monkeypatch):
    name, res = full
    untraced_copies = []
    real_fork = fork.fork_class

    def counted(parent, child, untrace=False):
        real_fork(parent, child, untrace=untrace)
        untraced_copies.append(untrace)

    monkeypatch.setattr(fork, "fork_class", counted)
    part = _run(CASES[name], TIMELINE_SMS)
    if res.extra.get("class_splits"):  # SM 0's class splits: the split-off class is a copy without the trace
        assert any(untraced_copies)
    _same_run(res, part)
    assert {e.get("pid") for e in part.trace.events} == {0}
    assert _events(part, 0) == _events(res, 0) and _events(res, 0)


def test_a_split_class_label_is_traced_like_the_full_trace(full):
    name, res = full
    if res.extra.get("class_splits", 0) == 0:
        pytest.skip("no SM class split in this grid")
    sms = {e["pid"] for e in res.trace.events if e.get("name") == "process_name" and e["args"]["name"].startswith("SM ")}
    labels = sorted(sms - {0})
    assert labels, "a split class has its own label SM in the full trace"
    part = _run(CASES[name], frozenset(labels[-1:]))
    _same_run(res, part)
    assert _events(part, labels[-1]) == _events(res, labels[-1])
    assert {e.get("pid") for e in part.trace.events} == {labels[-1]}
