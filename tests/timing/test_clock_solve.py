"""Laws of the sustained-clock solve (hopsim/power/solve.py) on synthetic launches whose cycles
follow the physical model cycles(f) = C_sm + T_mem * f (or a convex mix of such lines): the chosen
clock is simulated and within the limits by its own simulation, the next higher supported clock is
estimated over the limit, at most MAX_SIMS simulations (2 when the prior slope is exact), and the
chosen clock never rises when the launch draws more power."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from hopsim.power.model import Events, PowerModel
from hopsim.power.solve import MAX_SIMS, ClockSolver

PM = PowerModel.load()
FB = PM.f_max
STEP = PM.v["clock_step_mhz"]


def _affine(c_sm, t_mem_s):
    return lambda mhz: int(round(c_sm + t_mem_s * mhz * 1e6))


def _convex(c_sm, c0, t_mem_s):
    """SM-bound below a knee, memory-latency bound above it (max of two lines: convex)."""
    return lambda mhz: int(round(max(c_sm, c0 + t_mem_s * mhz * 1e6)))


def _solver(cycles_at, ev: Events, share=None, model=PM):
    calls = []

    def sim(mhz):
        calls.append(mhz)
        return SimpleNamespace(cycles=cycles_at(mhz), share=share)
    solver = ClockSolver(sim, lambda r: ev, model, sm_share=None if share is None else (lambda r: r.share))
    return solver, calls


def _true_ok(cycles_at, ev, mhz, model=PM):
    return model.binding(mhz, ev, cycles_at(mhz) / (mhz * 1e6)) is None


def _rule(cycles_at, ev, model=PM):
    """The highest supported clock within the limits with every clock simulated."""
    return next((f for f in model.supported_clocks() if _true_ok(cycles_at, ev, f, model)), None)


# events of a 4096^3 f16 GEMM-like launch (tensor-heavy: power-bound at the boost clock)
GEMM = Events(tensor_flops=1.37e11, l2_bytes=2.1e9, hbm_read_bytes=6.7e7, hbm_write_bytes=3.4e7,
              smem_wavefronts=3e7, instructions=1.3e7)
CURVES = {f"affine T={t}us C={c}": (_affine(c, t * 1e-6), c) for t, c in
          itertools.product((0, 20, 60, 110), (250_000, 290_000, 330_000))}


@pytest.mark.parametrize("name", sorted(CURVES))
def test_exact_prior_on_an_affine_launch_takes_two_simulations_and_meets_the_rule(name):
    cycles_at, c_sm = CURVES[name]
    solver, calls = _solver(cycles_at, GEMM, share=c_sm / cycles_at(FB))
    sol = solver.solve()
    f = sol.sustained.mhz
    assert calls[0] == FB and f in calls and sol.sustained.cycles == cycles_at(f)
    assert _true_ok(cycles_at, GEMM, f)
    if f < FB:
        assert not solver.estimate_ok(f + STEP) and not _true_ok(cycles_at, GEMM, f + STEP)
        assert sol.simulations == len(calls) <= 2
    assert f == _rule(cycles_at, GEMM)


@pytest.mark.parametrize("share", [None, 0.0, 0.3, 0.6, 0.9, 1.0])
@pytest.mark.parametrize("curve", ["affine", "convex", "flat"])
def test_any_prior_meets_the_rule_within_max_sims(curve, share):
    cycles_at = {"affine": _affine(230_000, 50e-6), "convex": _convex(290_000, 220_000, 55e-6),
                 "flat": _affine(330_000, 0.0)}[curve]
    solver, calls = _solver(cycles_at, GEMM, share=share)
    sol = solver.solve()
    f = sol.sustained.mhz
    assert len(calls) == len(set(calls)) == sol.simulations <= MAX_SIMS
    assert f in calls and sol.sustained.cycles == cycles_at(f)
    assert _true_ok(cycles_at, GEMM, f) and sol.sustained.power_w <= PM.limit_w
    assert f == FB or not solver.estimate_ok(f + STEP)


def test_estimates_are_monotone_and_bounded_by_physics():
    cycles_at = _convex(290_000, 220_000, 55e-6)
    for share in (None, 0.0, 0.5, 1.0):
        solver, _ = _solver(cycles_at, GEMM, share=share)
        solver.result(FB)
        for extra in ([], [1500.0], [1500.0, 1200.0]):
            for g in extra:
                solver.result(g)
            clocks = sorted(PM.supported_clocks())
            est = [solver.cycles_estimate(g) for g in clocks]
            assert all(b >= a for a, b in zip(est, est[1:]))            # cycles never rise as f falls
            low = min(solver.cache)
            c_low = solver.cache[low].cycles
            for g, c in zip(clocks, est):
                if g < low:                                              # time never falls as f falls
                    assert c / g >= c_low / low - 1e-9 and c <= c_low


@pytest.mark.parametrize("curve", ["affine", "convex"])
def test_more_power_never_raises_the_sustained_clock(curve):
    cycles_at = {"affine": _affine(230_000, 50e-6), "convex": _convex(290_000, 220_000, 55e-6)}[curve]
    clocks = []
    for k in (0.6, 0.8, 1.0, 1.2, 1.4):
        ev = Events(**{**GEMM.__dict__, "tensor_flops": GEMM.tensor_flops * k})
        solver, _ = _solver(cycles_at, ev, share=0.7)
        clocks.append(solver.solve().sustained.mhz)
    assert all(b <= a for a, b in zip(clocks, clocks[1:])) and clocks[0] > clocks[-1]


def test_a_launch_within_the_limits_at_boost_takes_one_simulation():
    ev = Events(tensor_flops=1e9, l2_bytes=1e8)
    solver, calls = _solver(_affine(1e6, 0.0), ev, share=0.5)
    sol = solver.solve()
    assert calls == [FB] and sol.sustained.mhz == FB and sol.limit is None


def test_gemm_prior_share_is_a_fraction_at_least_the_tensor_busy_share():
    from hopsim.gemm_sim import sm_share
    role = {"lifetime": 1000, "issue": 100, "wait": {"tma_issue": 500, "mbarrier 0x0": 300, "bar.sync 0": 50}}
    res = SimpleNamespace(busy={"tensor": 0.4}, roles={"producer": role, "consumer": {
        "lifetime": 1000, "issue": 50, "wait": {"mbarrier 0x8": 900}}})
    assert sm_share(res) == pytest.approx(0.65)            # producer: (100 + 500 + 50) / 1000
    res.busy["tensor"] = 0.9
    assert sm_share(res) == pytest.approx(0.9)
    res.roles["producer"]["wait"]["wgmma_sync"] = 10_000    # waits beyond the lifetime: capped at 1
    assert sm_share(res) == 1.0


@pytest.mark.parametrize("ratio", [1.0, 0.9337, 0.8])
def test_clock_ratio_simulates_at_the_sms_clock_and_times_at_it(ratio):
    """With clock_ratio r (the SMs' clock over the reported one): every simulation runs at r x a
    supported (reported) clock, a point's time is its cycles at r x its clock, its power is the
    model's at the reported clock with that time's rates, and the chosen clock meets the rule with
    the times taken at r x f."""
    cycles_at = _affine(290_000, 60e-6)          # cycles as a function of the SMs' own clock
    calls = []

    def sim(sm_mhz):
        calls.append(sm_mhz)
        return SimpleNamespace(cycles=cycles_at(sm_mhz))
    solver = ClockSolver(sim, lambda r: GEMM, PM, clock_ratio=ratio)
    sol = solver.solve()
    supported = set(PM.supported_clocks())
    assert all(any(abs(c - f * ratio) < 1e-9 for f in supported) for c in calls)
    for pt in (sol.boost, sol.sustained):
        assert pt.sm_mhz == pytest.approx(pt.mhz * ratio)
        assert pt.time_ms == pytest.approx(cycles_at(pt.mhz * ratio) / (pt.mhz * ratio * 1e3))
        assert pt.power_w == pytest.approx(PM.power_w(pt.mhz, GEMM, pt.time_ms * 1e-3))
    ok = lambda f: PM.binding(f, GEMM, cycles_at(f * ratio) / (f * ratio * 1e6)) is None  # noqa: E731
    assert ok(sol.sustained.mhz)
    higher = [f for f in supported if f > sol.sustained.mhz]
    assert not higher or not ok(min(higher))


def test_a_lower_clock_ratio_never_raises_the_time():
    """Slower SMs at the same reported clock: the sustained time never falls."""
    cycles_at = _affine(290_000, 60e-6)
    times = []
    for ratio in (1.0, 0.95, 0.9337, 0.9):
        s = ClockSolver(lambda m: SimpleNamespace(cycles=cycles_at(m)), lambda r: GEMM, PM, clock_ratio=ratio)
        times.append(s.solve().sustained.time_ms)
    assert times == sorted(times)
