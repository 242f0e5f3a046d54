"""Law: a split SM class that goes on from a copy of its parent's state at the split (fork.py) is
the same simulation as one that re-runs the shared history from cycle 0 (smclass.py `catch_up`):
a deterministic re-run reaches the copied state. Checked field by field (cycles, bytes, counters,
role statistics, busy fractions, shared-memory port) on grids whose classes split while CTAs are
alive (their executors, events, pending TMA/wgmma completions and processes are copied): IR
GEMMs with 2-3 CTAs per SM (8-row boxes, the elect.sync issuer, a grouped raster), the attention
tile (MUFU/SHFL results scoreboarded: warps copied in a scoreboard wait), and scripted GEMMs with TMA stores (store completions pending at the split)
whose consumers wait on a spin loop of test instructions (tests/timing/scripted.py "spin": a
warp's number of issues depends on the timing)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hopsim.cli.attention_cmd import simulate_attention
from hopsim.functional.executor import Launch
from hopsim.gemm_setup import setup_gemm
from hopsim.timing import fork, smclass
from hopsim.timing import sm as sm_mod
from hopsim.timing.runner import simulate
from hopsim.timing.sm import CtaRun
from kernels.attention import AttnParams
from kernels.gemm import build_gemm
from kernels.params import GemmParams
from tests.timing.scripted import ScriptedExecutor, scripted_wavefronts
from tests.timing.test_memo_gmem import _gpu
from tests.timing.test_memo_multi import SMEM, gemm_scripts


def _gemm(**kw):
    gp = GemmParams(**kw)
    gk = build_gemm(gp)

    def make():
        gm, launch, _a, _b = setup_gemm(gp, gk, values=False)
        return gk.kernel, launch, gm, gk.regs_per_thread, {}
    return make


def _scripted(gx: int, gy: int, per_sm: int, spin: bool):
    """The scripted GEMM of test_memo_multi (TMA loads, wgmmas, TMA stores); with `spin` its
    consumer waits for each stage's data in a spin loop (scripted "spin") instead of blocking."""
    def scripts(c):
        out = gemm_scripts(c, gx)
        if spin:
            out[-1] = [("spin", op[1]) if op[0] == "wait" and op[1][0] == "mbar" else op for op in out[-1]]
        return out

    def make():
        kernel = SimpleNamespace(name="scripted_gemm", static_smem_bytes=SMEM[per_sm], regs=())
        return (kernel, Launch(grid=(gx, gy, 1), block=(160, 1, 1)), None, 64,
                dict(executor_factory=lambda c: ScriptedExecutor(scripts(c), c), bank_model=scripted_wavefronts))
    return make


CASES = {
    "gemm 3 CTAs per SM": (_gemm(m=4096, n=2048, k=128, stages=1), None),
    "gemm 8-row boxes": (_gemm(m=4096, n=2048, k=256, stages=2, box_rows=8), None),
    "gemm elect.sync issuer": (_gemm(m=4096, n=2048, k=128, stages=1, box_rows=8, tma_issuer="elect"), None),
    "gemm 2 CTAs per SM": (_gemm(m=4096, n=4096, k=128, stages=3), None),
    "gemm grouped raster": (_gemm(m=4096, n=4096, k=128, stages=2, raster="grouped"), None),
    "attention tile (scoreboarded ex2, rcp, shfl.sync)": (None, lambda: simulate_attention(
        AttnParams(seq=256, head_dim=64, kv_block=64, stages=2, q_tiles=600), values=False)[0]),
    "scripted, TMA stores": (_scripted(8, 8, 3, spin=False), (5, 98304)),
    "scripted, spin-wait consumers": (_scripted(8, 8, 3, spin=True), (5, 98304)),
    "scripted, spin-wait, 2 CTAs per SM": (_scripted(7, 9, 2, spin=True), (6, 131072)),
}
BASELINES = {  # the spin cases' grids with blocking waits (not a fork case of their own)
    "scripted, blocking consumers": (_scripted(8, 8, 3, spin=False), (5, 98304)),
    "scripted, blocking, 2 CTAs per SM": (_scripted(7, 9, 2, spin=False), (6, 131072)),
}


def _run(monkeypatch, case: str, use_fork: bool):
    make, small = {**CASES, **BASELINES}[case]  # small: (SMs, L2 bytes) of a small GPU, or a run of its own
    init = smclass.Coordinator.__init__
    forks = []
    real_fork = fork.fork_class

    def coordinator(self, **kw):
        kw["fork"] = use_fork
        init(self, **kw)

    def counted(parent, child, **kw):  # a copy made (NotCopyable: the split re-ran instead, not counted)
        real_fork(parent, child, **kw)
        forks.append(child.label)

    with monkeypatch.context() as m:
        m.setattr(smclass.Coordinator, "__init__", coordinator)
        m.setattr(fork, "fork_class", counted)
        if callable(small):
            return small(), len(forks)
        kernel, launch, gm, regs, extra = make()
        gpu = _gpu(*small) if small else None
        res = simulate(kernel, launch, gpu, values=False, gmem=gm, regs_per_thread=regs, memory="partitioned",
                       memo=True, **extra)
    return res, len(forks)


@pytest.mark.parametrize("case", list(CASES))
def test_forked_split_equals_rerun(monkeypatch, case):
    new, forks = _run(monkeypatch, case, True)
    old, none = _run(monkeypatch, case, False)
    if "spin" in case:  # the consumers spun: more issues than the same grid with blocking waits
        blocking, _ = _run(monkeypatch, case.replace("spin-wait", "blocking"), True)
        assert new.roles["consumer"]["instructions"] > blocking.roles["consumer"]["instructions"]
    assert new.ctas_per_sm > 1 and new.extra["sm_memo"] == "on"
    assert new.extra["class_splits"] > 0 and forks == new.extra["class_splits"] and none == 0
    assert new.cycles == old.cycles
    for f in ("bytes_l2", "bytes_hbm", "bytes_stored", "flops", "smem_wavefronts", "smem_ideal_wavefronts",
              "smem_port"):
        assert getattr(new, f) == getattr(old, f), f
    assert new.extra == old.extra
    assert new.roles == old.roles
    assert new.busy == old.busy


def test_every_yield_of_a_copied_process_names_its_point():
    """fork.py resumes a copied process from the suspension point its frame holds (`at`): every
    yield of the warp and slot processes must be preceded by its own `at = AT_...` (a yield added
    without one would resume at the previous point's code); the first yield of a resumed process
    is the only one without (it stands for any point)."""
    for fn, names in ((CtaRun._warp, sm_mod), (smclass._SmClass._slot, fork)):
        table = fork.yield_points(fn, names)
        assert table, fn
        assert list(table.values()).count(None) == 1, (fn, table)
        points = [v for v in table.values() if v is not None]
        assert len(points) == len(table) - 1
