"""CTA scheduler with synthetic CTAs (each a fixed number of cycles)."""

import math

import pytest
import simpy

from hopsim.config import load_gpu
from hopsim.timing.gpu import CtaScheduler, waves

GPU = load_gpu("h100_sxm")
NUM_SMS = int(GPU.spec.num_sms.value)
LAUNCH = float(GPU.timing.cta_launch_cycles.value)


def _run(num_ctas, ctas_per_sm, dur):
    env = simpy.Environment()

    def cta(sm, slot, c):
        yield env.timeout(dur(c) if callable(dur) else dur)

    s = CtaScheduler(env, num_sms=NUM_SMS, ctas_per_sm=ctas_per_sm, num_ctas=num_ctas,
                     launch_cycles=LAUNCH, run_cta=cta)
    env.run(s.done)
    return env.now, s


@pytest.mark.parametrize("num_ctas,per_sm", [(1, 1), (132, 1), (133, 1), (1024, 1), (1024, 2), (4096, 1)])
def test_uniform_ctas_take_waves_times_duration(num_ctas, per_sm):
    d = 5000
    t, s = _run(num_ctas, per_sm, d)
    w = waves(num_ctas, NUM_SMS, per_sm)
    assert w == math.ceil(num_ctas / (NUM_SMS * per_sm))
    assert t == w * d + (w - 1) * LAUNCH  # every wave: the CTA; later waves: the relaunch gap too
    assert len(s.placement) == num_ctas


def test_first_wave_is_breadth_first():
    _, s = _run(2 * NUM_SMS, 2, 100)
    assert s.placement[0][0] == 0 and s.placement[1][0] == 1
    assert s.placement[NUM_SMS][:2] == (0, 1)  # CTA 132 is SM 0's second slot


def test_freed_slot_takes_next_cta():
    # CTA 0 is short: its SM takes CTA 132 first
    _, s = _run(NUM_SMS + 2, 1, lambda c: 10 if c == 0 else 1000)
    assert s.placement[NUM_SMS][0] == 0
    assert s.placement[NUM_SMS][2] == 10 + LAUNCH


def test_deterministic():
    a = _run(1000, 1, lambda c: 100 + (c * 37) % 91)
    b = _run(1000, 1, lambda c: 100 + (c * 37) % 91)
    assert a[0] == b[0] and a[1].placement == b[1].placement
