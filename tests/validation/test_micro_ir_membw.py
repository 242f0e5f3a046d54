"""The membw microbenchmarks' IR twins through simulate() (hopsim/validate/micro_ir/membw.py):
goldens are the H100 records (validation/records/h100/membw/membw.jsonl), the laws are the
model's (a further line of one warp request costs gmem_line_issue_cycles), and the lone-warp
rows the fit was read from are reproduced within 10%."""

from __future__ import annotations

import pytest

from hopsim.validate.calibrate_membw import line_issue
from hopsim.validate.micro_ir import membw, records
from hopsim.validate.micro_ir.membw import chain_cycles, chain_rows
from hopsim.validate.micro_ir.run import gpu_at

TARGET = 0.10
POINTS = {r["name"]: r for r in records()["membw"]["results"]["points"]}
GPU = gpu_at(1980)


def test_goldens_are_the_records():
    assert POINTS["chain_cg_v16_warp_s1_w1"]["results"]["passes"][1]["median_cycles_per_trip"] == 342.875
    assert POINTS["chain_cg_v4_warp_s1_w1"]["results"]["passes"][1]["median_cycles_per_trip"] == 318.9375


@pytest.mark.parametrize("name", ["chain_cg_v4_warp_s1_w1", "chain_cg_v8_warp_s1_w1", "chain_cg_v16_warp_s1_w1"])
def test_fitted_line_interval_reproduces_the_lone_warp_rereads(name, monkeypatch):
    """The rows gmem_line_issue_cycles is fitted from, simulated with the fitted value (fitted, not
    yet applied: calibrate_membw.NOT_APPLIED), are within 10% of the H100."""
    c, _ = line_issue(list(POINTS.values()))
    monkeypatch.setattr(membw, "_clock", lambda rec: gpu_at(1980).with_timing(gmem_line_issue_cycles=c))
    for row in chain_rows(POINTS[name])[1:]:
        assert abs(row.error_pct) <= 100 * TARGET, (row.name, row.measured, row.simulated)


@pytest.mark.parametrize("c", [4.0, 10.0])
def test_a_lone_warps_four_line_request_costs_three_intervals_more(c):
    """Law: a 16-B-per-lane trip (4 lines) minus a 4-B one (1 line) grows by 3 x c when the
    per-line interval goes from 0 to c (the L2 re-read passes; the SM's load path unbounded so
    that its per-line time does not overlap the interval)."""
    def diff(gpu):
        v16 = chain_cycles(POINTS["chain_cg_v16_warp_s1_w1"]["params"], gpu)
        v4 = chain_cycles(POINTS["chain_cg_v4_warp_s1_w1"]["params"], gpu)
        return v16[1] - v4[1]
    g = GPU.with_timing(gld_bytes_per_cycle_per_sm=0)
    assert diff(g.with_timing(gmem_line_issue_cycles=c)) - diff(g.with_timing(gmem_line_issue_cycles=0)) == \
        pytest.approx(3 * c, abs=0.01)
