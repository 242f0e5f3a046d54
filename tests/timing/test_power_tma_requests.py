"""The TMA tensor-load energies of the power model (issue 13, `e_tma_request_pj`, `e_tma_byte_pj`,
hopsim/power/model.py breakdown "tma"): laws of the term, the simulator's request count it reads
(extra.tma_load_requests, memo-replayed), and its fit against the box-shape power records (the golden
is the hardware's measured power, validation/records/h100/power/light_tmaw/)."""

from __future__ import annotations

import pytest

from hopsim.cli import main
from hopsim.config.power import load_power
from hopsim.gemm_sim import simulate_gemm
from hopsim.power.model import Events, PowerModel
from hopsim.validate import calibrate_power_tmaw
from kernels.params import GemmParams

PM = PowerModel.load()
#: the fit's stated bound (calibrate_power_tmaw report: max |residual| 1.6 W over 6 points)
STATED_MAX_W = 3.0


def test_the_energies_are_positive_and_measured():
    prm = load_power().params()
    for k in calibrate_power_tmaw.FIELDS:
        assert PM.v[k] > 0 and prm[k].kind == "measured" and "light_tmaw" in prm[k].source


@pytest.mark.parametrize("mhz", [1980, 1500, 1200])
def test_more_requests_for_the_same_bytes_cost_more(mhz):
    # 32-B box rows are four L2 requests per 128 B, 128-B rows one: at equal bytes, narrower rows draw more
    wide = Events(l2_bytes=4e12, tma_bytes=4e12, tma_requests=4e12 / 128)
    narrow = Events(l2_bytes=4e12, tma_bytes=4e12, tma_requests=4e12 / 32)
    assert PM.power_w(mhz, narrow, 1.0) > PM.power_w(mhz, wide, 1.0) > PM.power_w(mhz, Events(l2_bytes=4e12), 1.0)


def test_no_tma_loads_add_nothing():
    # bulk copies, LSU loads, stores: their energies are the L2/HBM ones (fitted without this term)
    for ev in (Events(l2_bytes=5e12), Events(hbm_read_bytes=2e12, l2_bytes=2e12), Events()):
        assert PM.breakdown_w(1980, ev, 1.0)["tma"] == 0.0


def test_the_term_scales_with_the_core_voltage():
    ev = Events(tma_bytes=3e12, tma_requests=3e12 / 64)
    hi, lo = PM.breakdown_w(1980, ev, 1.0)["tma"], PM.breakdown_w(1200, ev, 1.0)["tma"]
    assert lo / hi == pytest.approx(PM.voltage(1200) ** 2, rel=1e-9)


def test_the_fit_reproduces_the_box_shape_records():
    fit = calibrate_power_tmaw.fit(PM)
    assert len(fit["points"]) == 6
    assert all(abs(p["residual_w"]) <= STATED_MAX_W for p in fit["points"])
    assert fit["e_tma_request_pj"] == pytest.approx(PM.v["e_tma_request_pj"], rel=1e-3)
    assert fit["e_tma_byte_pj"] == pytest.approx(PM.v["e_tma_byte_pj"], rel=1e-3)


@pytest.mark.parametrize("swizzle,row_bytes", [("32B", 32), ("64B", 64), ("128B", 128)])
def test_the_simulator_counts_one_request_per_box_row(swizzle, row_bytes):
    # a box row of up to 128 B is one L2 request: requests = bytes loaded / row bytes
    p = GemmParams(m=128, n=128, k=256, bm=128, bn=128, bk=64, stages=2, box_rows=64, swizzle=swizzle)
    res = simulate_gemm(p).result
    rows, nbytes = res.extra["tma_load_requests"], res.smem_port["tma_fill_bytes"]
    assert nbytes == (128 * 256 + 128 * 256) * 2
    assert rows * row_bytes == nbytes


def test_memoised_ctas_replay_the_request_count():
    # a grid of alike CTAs (memo on in fast mode) counts what each CTA would count alone
    one = simulate_gemm(GemmParams(m=128, n=128, k=256, bm=128, bn=128, bk=64, stages=2, box_rows=32,
                                   swizzle="64B")).result
    many = simulate_gemm(GemmParams(m=128 * 12, n=128 * 12, k=256, bm=128, bn=128, bk=64, stages=2, box_rows=32,
                                    swizzle="64B")).result
    assert many.extra["tma_load_requests"] == 144 * one.extra["tma_load_requests"]


def test_config_show_lists_the_fields(capsys):
    assert main(["config", "show"]) == 0
    out = capsys.readouterr().out
    assert "e_tma_request_pj" in out and "e_tma_byte_pj" in out
