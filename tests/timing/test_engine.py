"""The timed SM engine driven by a scripted executor: formulas from the config."""

from __future__ import annotations

import math

import pytest

from hopsim.config import load_gpu
from hopsim.timing.pipes import QUANTUM
from hopsim.functional.errors import Deadlock
from hopsim.functional.executor import Launch
from hopsim.timing.runner import simulate
from tests.timing.scripted import BIG_SMEM_KERNEL, KERNEL, ScriptedExecutor, scripted_wavefronts

GPU = load_gpu("h100_sxm")


def q(cycles):
    """A service time as the pipes round it: up to a multiple of 1/QUANTUM cycle (pipes.py)."""
    return math.ceil(cycles * QUANTUM) / QUANTUM


T = {k: float(v) for k, v in GPU.timing.values().items()}
S = {k: float(v) for k, v in GPU.spec.values().items()}
LAUNCH = T["cta_launch_cycles"]  # relaunch gap of a freed slot (later waves)
START = 0.0  # a first-wave CTA (slot 0) starts at cycle 0: no freed slot to wait for (gpu.py)
ISSUE = T["issue_cycles"]
ALU_TAIL = T["alu_latency_cycles"] - T["issue_cycles"]
FULL = ("mbar", 0, 0)  # event keys as the executor names them
G0 = ("wgmma", 0, 0)


def run(scripts_for_cta, grid=1, warps=None, kernel=KERNEL, **kw):
    nw = warps or len(scripts_for_cta(0))
    launch = Launch(grid=(grid, 1, 1), block=(32 * nw, 1, 1))
    log = []
    res = simulate(kernel, launch, GPU, executor_factory=lambda c: ScriptedExecutor(scripts_for_cta(c), c, log),
                   bank_model=scripted_wavefronts, regs_per_thread=32, **{"loop": "single", **kw})
    return res, log


def test_alu_run_is_one_batched_issue():
    n = 10
    res, _ = run(lambda c: [[("alu", n), ("exit",)]])
    # start, n issue slots, the last result's latency, then exit's issue slot
    assert res.cycles == START + n * ISSUE + ALU_TAIL + ISSUE


def test_long_alu_runs_are_split_in_batches_with_same_total_issue():
    n = 200
    res, _ = run(lambda c: [[("alu", n), ("exit",)]])
    batches = math.ceil(n / 64)  # ALU_BATCH: each batch waits its last result
    assert res.cycles == START + n * ISSUE + batches * ALU_TAIL + ISSUE
    assert res.roles["other"]["instructions"] == n + 1


def test_tma_completion_wakes_consumer():
    nbytes = 16384
    scripts = [[("tma", nbytes, ("A", 0), FULL, 1), ("exit",)],
               [("wait", FULL), ("alu", 1), ("exit",)]]
    res, _ = run(lambda c: scripts)
    tma_done = (START + ISSUE + T["tma_unit_box_cycles"] + q(nbytes / GPU.hbm_bytes_per_cycle)
                + q(nbytes / GPU.l2_bytes_per_cycle) + GPU.hbm_latency_cycles
                + q(nbytes / T["tma_bytes_per_cycle"]) + T["tma_extra_latency_cycles"])
    woken = math.ceil(tma_done) + T["mbarrier_wakeup_cycles"]
    # the try_wait re-issues (one slot), then the alu, its latency, exit
    assert res.cycles == woken + ISSUE + ISSUE + ALU_TAIL + ISSUE
    assert res.roles["producer"]["warps"] == 1
    assert res.roles["other"]["wait"]["mbarrier 0x0"] == woken - START  # FULL is the mbarrier at 0x0
    assert res.bytes_hbm == nbytes and res.bytes_l2 == 0


def test_wgmma_group_then_wait():
    k, n = 4, 128
    scripts = [[("wgmma", n, G0, k)] * k + [("wait", G0), ("exit",)]]
    res, _ = run(lambda c: scripts)
    issued_first = START + ISSUE  # the first wgmma enters the pipe at its SMSP issue (its issue cost holds the warp)
    pipe = k * 64 * n * 16 / S["tensor_fma_f16_per_cycle_per_sm"]  # k back-to-back: k * N/2 (N = 128: above every floor)
    done = issued_first + pipe + T["wgmma_fixed_latency_cycles"]
    # wake at completion, a wait_group 0 is released wgmma_sync_cycles later, re-issues, exit
    assert res.cycles == math.ceil(done) + T["wgmma_sync_cycles"] + ISSUE + ISSUE
    assert res.flops == k * 2 * 64 * n * 16
    assert res.roles["consumer"]["wait"]["wgmma.wait_group"] > 0


def test_shared_load_waits_its_wavefronts():
    wf = 8
    res, _ = run(lambda c: [[("lds", wf, 1), ("exit",)]])
    cpw = T["smem_cycles_per_wavefront"]
    assert res.cycles == START + ISSUE + wf * cpw + T["smem_latency_cycles"] - cpw + ISSUE
    assert res.bank_conflicts == wf - 1 and res.smem_wavefronts == wf


def test_deadlock_is_named():
    with pytest.raises(Deadlock, match="scripted deadlock"):
        run(lambda c: [[("wait", ("mbar", 8, 0)), ("exit",)], [("alu", 3), ("exit",)]])


def test_waves_over_132_sms():
    num_sms = int(S["num_sms"])
    grid = 2 * num_sms + 1
    n = 100
    res, _ = run(lambda c: [[("alu", n), ("exit",)]], grid=grid, kernel=BIG_SMEM_KERNEL)
    per_cta = n * ISSUE + 2 * ALU_TAIL + ISSUE  # 100 ALU = 2 batches
    assert res.ctas_per_sm == 1 and res.limiting == "shared_memory"
    assert res.waves == 3
    assert res.cycles == 3 * per_cta + 2 * LAUNCH  # the later waves wait the relaunch gap


def test_l2_reuse_across_ctas():
    nbytes = 8192
    scripts = lambda c: [[("tma", nbytes, ("B", 0), FULL, 1), ("wait", FULL), ("exit",)]]  # noqa: E731
    res, _ = run(scripts, grid=4)
    assert res.bytes_hbm == nbytes  # first touch
    assert res.bytes_l2 == 3 * nbytes  # the other three CTAs hit


def test_data_applied_at_completion_in_time_order():
    scripts = [[("tma", 64, ("A", i), FULL, 4) for i in range(4)] + [("wait", FULL), ("exit",)]]
    _, log = run(lambda c: scripts)
    assert [e[2] for e in log] == [("A", i) for i in range(4)]


def test_deterministic_and_seeded_jitter():
    scripts = lambda c: [[("tma", 4096, ("A", c % 3), FULL, 1), ("wait", FULL), ("alu", 5), ("exit",)],  # noqa: E731
                         [("wgmma", 64, G0, 2), ("wgmma", 64, G0, 2), ("wait", G0), ("exit",)]]
    a = run(scripts, grid=300)[0].cycles
    b = run(scripts, grid=300)[0].cycles
    assert a == b
    j1 = run(scripts, grid=300, jitter_seed=3, jitter_cycles=50)[0].cycles
    j2 = run(scripts, grid=300, jitter_seed=3, jitter_cycles=50)[0].cycles
    assert j1 == j2 and j1 >= a


def test_result_json_and_trace():
    scripts = [[("tma", 4096, ("A", 0), FULL, 1), ("exit",)], [("wait", FULL), ("exit",)]]
    launch = Launch(grid=(1, 1, 1), block=(64, 1, 1))
    res = simulate(KERNEL, launch, GPU, executor_factory=lambda c: ScriptedExecutor(scripts, c),
                   bank_model=scripted_wavefronts, regs_per_thread=32, trace=True, flop_count=1e9)
    j = res.to_json()
    assert j["cycles"] == res.cycles and j["ctas_per_sm"] >= 1 and "busy" in j
    assert j["tflops"] == pytest.approx(1e9 / (res.cycles / (S["clock_mhz"] * 1e6)) / 1e12)
    ev = res.trace.to_json()["traceEvents"]
    assert any(e["ph"] == "M" and e["name"] == "thread_name" for e in ev)
    xs = [e for e in ev if e["ph"] == "X"]
    assert xs and all(e["dur"] >= 0 for e in xs)
    assert any("TMA" in e["name"] or e["name"] == "load" for e in xs)


def test_an_issue_that_fires_and_blocks_wakes_the_others():
    rdv, grp = ("rdv", 0, 0), ("wgmma", 0, 0)
    scripts = [[("fire_wait", rdv, grp), ("exit",)], [("wait", rdv), ("arrive", grp, 1), ("exit",)]]
    res, _ = run(lambda c: scripts)  # would raise Deadlock if the fired key were dropped
    assert res.cycles > START
