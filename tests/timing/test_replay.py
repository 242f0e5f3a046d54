"""Split SM classes replay their parent's record (replay.py) instead of re-executing the shared
history: the same simulation either way (law: a deterministic re-run makes the same issue() calls
with the same results), on IR GEMMs (2-3 CTAs per SM, multi-wave) whose classes split while CTAs are alive (their executors are
deep-copied, with in-flight TMA/wgmma completions and wait_group resumes rebound to the copy).
A kernel whose MUFU/SHFL results are scoreboarded (the attention tile: ex2, rcp, shfl.sync) is not
recordable (the scoreboard reads program counters a replay does not keep): its split classes
re-execute, and a grid that splits them simulates (it raised AttributeError before)."""

from __future__ import annotations

import pytest

from hopsim.cli.attention_cmd import simulate_attention
from hopsim.gemm_sim import simulate_gemm
from hopsim.timing import replay, smclass
from kernels.attention import AttnParams
from kernels.params import GemmParams


def _run(monkeypatch, params, use_replay: bool):
    init = smclass.Coordinator.__init__
    counts = {"copies": 0, "replayed": 0}
    source_init = replay._Source.__init__

    def coordinator(self, **kw):
        if not use_replay:
            kw["make_executor"] = None
        init(self, **kw)

    def source(self, lx):
        source_init(self, lx)
        counts["copies"] += self.real is not None
        counts["replayed"] += sum(self.lens)

    with monkeypatch.context() as m:
        m.setattr(smclass.Coordinator, "__init__", coordinator)
        m.setattr(replay._Source, "__init__", source)
        return simulate_gemm(params).result, counts


@pytest.mark.parametrize("params", [
    GemmParams(m=4096, n=2048, k=128, stages=1),                                # 3 CTAs per SM, 512 CTAs
    GemmParams(m=4096, n=2048, k=256, stages=2, box_rows=8),                    # 8-row boxes
    GemmParams(m=4096, n=2048, k=128, stages=1, box_rows=8, tma_issuer="elect"),  # elect.sync issuer
])
def test_replayed_split_equals_reexecuted(monkeypatch, params):
    new, got = _run(monkeypatch, params, True)
    old, none = _run(monkeypatch, params, False)
    assert new.extra["class_splits"] > 0 and got["replayed"] > 0 and got["copies"] > 0
    assert none == {"copies": 0, "replayed": 0}
    assert new.cycles == old.cycles
    for f in ("bytes_l2", "bytes_hbm", "bytes_stored", "flops", "smem_wavefronts", "smem_ideal_wavefronts"):
        assert getattr(new, f) == getattr(old, f), f
    assert new.extra == old.extra
    assert new.roles == old.roles
    assert new.busy == old.busy



def test_scoreboarded_unit_ops_are_not_replayed():
    p = AttnParams(seq=256, head_dim=64, kv_block=64, stages=2, q_tiles=600)   # classes split mid-flight
    res = simulate_attention(p, values=False)[0]
    assert res.ctas == 600 and res.cycles > 0
