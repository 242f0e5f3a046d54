"""setmaxnreg.{inc,dec}.sync.aligned.u32 (PTX ISA, setmaxnreg) against the CTA's register pool
(Launch.regs_per_thread): FlashAttention-3's split (producer .dec 40, two consumer warpgroups
.inc 232, launched at 168 = (40 + 2 * 232) / 3) completes even when the consumers ask first (they
wait for the producer's .dec), functionally and timed; asking for more than the pool holds is a
Deadlock naming the warpgroup and the pool, never a hang; .inc below / .dec above the current count
is a named error; without a launch register count nothing is accounted (as before)."""

from __future__ import annotations

import pytest

from isa.ir import parse
from hopsim.config import load_gpu
from hopsim.functional.errors import Deadlock, IllegalInstruction
from hopsim.functional.executor import CTAExecutor, Launch
from hopsim.functional.gmem import GlobalMemory
from hopsim.functional.runner import run_cta
from hopsim.timing.runner import simulate


def split(producer_wg: int, producer: int, consumer: int) -> str:
    return f""".kernel fa3_regs
.reg .u32 %r<4>
.reg .pred %p<2>
    mov.u32 %r0, %tid.x;
    shr.u32 %r1, %r0, 7;
    setp.eq.u32 %p0, %r1, {producer_wg};
@%p0 bra PRODUCER;
    setmaxnreg.inc.sync.aligned.u32 {consumer};
    exit;
PRODUCER:
    setmaxnreg.dec.sync.aligned.u32 {producer};
    exit;
"""


def _pool(src: str, regs=168, block=384):
    ex = CTAExecutor(parse(src), Launch(grid=1, block=block, regs_per_thread=regs), GlobalMemory())
    run_cta(ex)
    return ex.regs.per_wg


@pytest.mark.parametrize("producer_wg", [0, 2])
def test_fa3_split_fits_whoever_asks_first(producer_wg):
    want = [40 if g == producer_wg else 232 for g in range(3)]
    assert _pool(split(producer_wg, 40, 232)) == want
    assert 40 + 2 * 232 == 3 * 168   # the pool is used exactly


def test_fa3_split_timed_consumers_wait_for_the_dec():
    k = parse(split(2, 40, 232))
    r = simulate(k, Launch(grid=1, block=384, regs_per_thread=168), load_gpu("h100_sxm"), gmem=GlobalMemory())
    assert r.cycles > 0


def test_asking_more_than_the_pool_is_a_named_deadlock():
    with pytest.raises(Deadlock, match=r"setmaxnreg.inc of warpgroup \d: warpgroups hold \[.*\] registers per "
                                       r"thread of the 168 x 3 the CTA was launched with"):
        _pool(split(2, 40, 240))   # 40 + 2 * 240 = 520 > 504


@pytest.mark.parametrize("src, match", [
    (split(0, 200, 232), r"setmaxnreg.dec to 200 registers but warpgroup 0 holds 168"),
    ("    setmaxnreg.inc.sync.aligned.u32 96;\n", r"setmaxnreg.inc to 96 registers but warpgroup \d holds 168"),
])
def test_inc_below_or_dec_above_the_current_count_is_named(src, match):
    if not src.startswith(".kernel"):
        src = ".kernel k\n" + src + "    exit;\n"
    with pytest.raises(IllegalInstruction, match=match):
        _pool(src)


def test_without_a_launch_register_count_nothing_is_accounted():
    ex = CTAExecutor(parse(split(2, 40, 240)), Launch(grid=1, block=384), GlobalMemory())
    run_cta(ex)
    assert ex.regs is None and ex.all_done
