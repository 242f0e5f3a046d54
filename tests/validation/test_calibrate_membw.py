"""calibrate_membw: each rule recovers the value that synthetic membw records were made from
(a known per-line interval, per-SM cap, in-flight bytes, L2 capacity), and refuses nothing it
cannot read (no file: no rows)."""

from __future__ import annotations

import json
import math

import pytest

from hopsim.validate import calibrate_membw as cm

MIB = 1 << 20
CLOCK_HZ = 1.98e9
OVERHEAD_S = 3e-6  # what an event-timed launch adds to its work (synthetic)


def _rec(family, name, params, results):
    return {"kind": "microbench_membw", "family": family, "group": family, "name": name, "params": params,
            "error": None, "results": results, "provenance": {"device_name": "synthetic", "git_commit": "0" * 40,
                                                              "date_utc": "2026-11-24"}}


def chain(vec, base, per_line, passes=3, trips=16):
    """A lone-warp chain whose L2 re-read trip costs base + (lines - 1) x per_line (pass 0: 2x);
    its launches take the passes' cycles + OVERHEAD_S (the fastest) or more."""
    lines = 32 * vec // 128
    cyc = base + (lines - 1) * per_line
    per = [cyc * (2 if k == 0 else 1) for k in range(passes)]
    ms = (sum(per) * trips / CLOCK_HZ + OVERHEAD_S) * 1e3
    r = _rec("chain", f"chain_cg_v{vec}_warp_s1_w1",
             {"cache_op": "cg", "layout": "warp", "sms": 1, "warps_per_sm": 1, "vec_bytes": vec},
             {"trips": trips, "ms_all": [ms * 1.5, ms, ms * 1.1],
              "passes": [{"median_cycles_per_trip": c, "max_cycles_per_trip": c} for c in per]})
    r["sm_clock"] = {"nvml_median_mhz": CLOCK_HZ / 1e6}
    return r


def sms(where, vec, n, per_sm_bps, nbytes=4 * MIB):
    """An sms point whose work runs at per_sm_bps per SM; its launch takes OVERHEAD_S more."""
    ms = (nbytes * n / (per_sm_bps * n) + OVERHEAD_S) * 1e3
    r = _rec("sms", f"sms_{where}_v{vec}_s{n}", {"where": where, "vec_bytes": vec, "sms": n},
             {"bytes_per_launch": nbytes * n, "ms_median": ms, "bytes_per_s": nbytes * n / (ms * 1e-3)})
    r["sm_clock"] = {"nvml_median_mhz": CLOCK_HZ / 1e6}
    return r


CHAINS = [chain(v, 300.0, 8.0) for v in (4, 8, 16)]


def reuse(op, fp, capacity, l2_bps, hbm_bps, overhead_ms=0.02):
    """Rounds 1 and 4 of a footprint read (or copied) by a cyclic LRU of `capacity` bytes: rounds
    after the first at the L2 rate if the footprint fits, else at the HBM rate."""
    moved = fp * (2 if op == "copy" else 1)
    rate = l2_bps if moved <= capacity else hbm_bps
    out = []
    for rounds in (1, 4):
        ms = overhead_ms + (moved / hbm_bps + (rounds - 1) * moved / rate) * 1e3
        out.append(_rec("reuse", f"reuse_{op}_{fp // MIB}MiB_r{rounds}",
                        {"op": op, "footprint_bytes": fp, "rounds": rounds},
                        {"bytes_per_s": moved * rounds / (ms * 1e-3), "ms_median": ms}))
    return out


@pytest.mark.parametrize("per_line", [0.0, 3.0, 8.25])
def test_line_issue_recovers_the_per_line_interval(per_line):
    recs = [chain(v, 300.0, per_line) for v in (4, 8, 16)]
    got, src = cm.line_issue(recs)
    assert got == pytest.approx(per_line, abs=1e-9)
    assert "slope" in src


def test_line_issue_needs_two_widths():
    assert cm.line_issue([chain(16, 300.0, 8.0)]) is None


def test_event_overhead_is_the_fastest_launch_less_the_clock64_time():
    assert cm.event_overhead_s(CHAINS) == pytest.approx(OVERHEAD_S)
    assert cm.event_overhead_s([]) is None


def test_load_path_is_the_few_sm_plateau_of_the_widest_vector():
    recs = CHAINS + [sms("l2", 16, n, 176e9 if n <= 4 else 176e9 * 4 / n) for n in (1, 2, 4, 8, 132)]
    recs += [sms("l2", 4, n, 100e9) for n in (1, 2, 4)]
    got, _ = cm.load_path(recs)
    assert got == pytest.approx(176e9 / CLOCK_HZ)


@pytest.mark.parametrize("inflight_bytes", [8000.0, 33000.0])
def test_outstanding_is_littles_law_at_one_sm(inflight_bytes):
    lat = {"l2": 270.0, "hbm": 680.0}
    recs = CHAINS + [sms("hbm", 16, 1, inflight_bytes / lat["hbm"] * CLOCK_HZ),
            sms("l2", 16, 1, 0.5 * inflight_bytes / lat["l2"] * CLOCK_HZ), sms("hbm", 16, 8, 1e9)]
    got, _ = cm.outstanding(recs, lat)
    assert got == math.ceil(inflight_bytes / 32 - 1e-9)


@pytest.mark.parametrize("capacity_mib", [30, 44, 60])
def test_l2_capacity_recovers_the_lru_capacity_within_the_footprint_grid(capacity_mib):
    """The rule brackets the capacity between two measured footprints and takes the midpoint: the
    result is within half a grid step of the true capacity."""
    l2 = 50 * MIB
    recs = [sms("hbm", 16, 132, 3e12 / 132)]
    grid = (8, 16, 24, 32, 40, 48, 64, 96)
    for fp in grid:
        recs += reuse("read", fp * MIB, capacity_mib * MIB, 8e12, 3e12)
    got, _ = cm.l2_capacity(recs, l2)
    lo = max(f for f in grid if f <= capacity_mib)
    hi = min(f for f in grid if f > capacity_mib)
    assert got * 50 == pytest.approx((lo + hi) / 2)
    assert abs(got * 50 - capacity_mib) <= (hi - lo) / 2


def test_copy_footprint_counts_source_and_destination():
    recs = [sms("hbm", 16, 132, 3e12 / 132)]
    for fp in (8, 16, 24, 32):
        recs += reuse("copy", fp * MIB, 40 * MIB, 8e12, 3e12)
    rates = cm.per_round_rates(recs)
    assert set(rates) == {("copy", 2 * f * MIB) for f in (8, 16, 24, 32)}
    got, _ = cm.l2_capacity(recs, 50 * MIB)
    assert got * 50 == pytest.approx(40)  # hits up to 2 x 16 = 32 MiB, misses at 2 x 24 = 48 MiB


def ramp_reuse(fp, start, end, t_hit, t_miss, overhead_ms=0.02):
    """Rounds 1 and 4 of a footprint read whose re-read rounds hit the share of the ramp
    (start, end) (seconds per byte t_hit for a hit, t_miss for a miss)."""
    h = cm.ramp_share(fp, start, end)
    out = []
    for rounds in (1, 4):
        ms = overhead_ms + (fp * t_miss + (rounds - 1) * fp * (h * t_hit + (1 - h) * t_miss)) * 1e3
        out.append(_rec("reuse", f"reuse_read_{fp // MIB}MiB_r{rounds}", {"op": "read", "footprint_bytes": fp,
                                                                          "rounds": rounds},
                        {"bytes_per_s": fp * rounds / (ms * 1e-3), "ms_median": ms}))
    return out


@pytest.mark.parametrize("start_mib, end_mib", [(29, 52), (20, 44), (36, 70)])
def test_reread_ramp_recovers_the_ramp(start_mib, end_mib):
    """Records made from a ramp (the fastest footprint a full hit at t_hit, the all-SM HBM read
    rate the miss): the fit gives back its start and end (footprints every 4 MiB, 4..96)."""
    recs = [sms("hbm", 16, 132, 3e12 / 132)]
    t_miss = 1 / recs[0]["results"]["bytes_per_s"]  # the all-SM HBM read rate (its launch overhead included)
    for fp in range(4, 100, 4):
        recs += ramp_reuse(fp * MIB, start_mib * MIB, end_mib * MIB, 1 / 16e12, t_miss)
    shares = dict(cm.reread_shares(recs))
    for fp, h in shares.items():
        assert h == pytest.approx(cm.ramp_share(fp, start_mib * MIB, end_mib * MIB), abs=1e-9)
    (a, _), (b, src) = cm.reread_ramp(recs, 50 * MIB)
    assert (a * 50, b * 50) == pytest.approx((start_mib, end_mib))
    assert "least squares 0.000" in src


def test_reread_ramp_needs_reuse_points():
    assert cm.reread_ramp([sms("hbm", 16, 132, 3e12 / 132)], 50 * MIB) is None


def test_no_records_no_rows(tmp_path):
    assert cm.derive_membw(tmp_path, 50 * MIB) == {}


def test_derive_reads_the_file(tmp_path):
    (tmp_path / "membw").mkdir()
    recs = CHAINS + [sms("l2", 16, n, 176e9) for n in (1, 2, 4)]
    (tmp_path / "membw" / "membw.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    got = cm.derive_membw(tmp_path, 50 * MIB)
    assert "gmem_line_issue_cycles" not in got  # fitted (line_issue), not applied: cm.NOT_APPLIED
    assert got["gld_bytes_per_cycle_per_sm"][0] == pytest.approx(176e9 / CLOCK_HZ)
    assert "l2_effective_capacity_fraction" not in got  # no reuse points


def copyu(name, vec, unroll, warps, bps):
    r = _rec("copyu", name, {"where": "hbm", "vec_bytes": vec, "unroll": unroll, "warps_per_sm": warps,
                             "sms": 132}, {"bytes_per_s": bps})
    r["sm_clock"] = {"nvml_median_mhz": CLOCK_HZ / 1e6}
    return r


@pytest.mark.parametrize("k", [0.3, 0.72])
def test_loaded_latency_recovers_the_queue_fraction(k):
    """Synthetic copies made from L = L0 + k x (link time of the bytes in flight) at or below the
    link's rate: the rule gives k back (saturated points, at the link's rate, left out)."""
    rd, wr, l0, sms_n = 3.0e12, 2.6e12, 676.0, 132
    link_rate = 2 / (1 / rd + 1 / wr)  # a copy's bytes per second on the shared link
    recs = []
    for vec, warps in ((4, 16), (4, 32), (8, 16), (16, 64)):
        x = warps * 32 * vec
        a = x * sms_n * CLOCK_HZ * (1 / rd + 1 / wr)
        lat = max(l0 + k * a, a)
        bps = min(link_rate, 2 * x / lat * sms_n * CLOCK_HZ)
        recs.append(copyu(f"copyu_v{vec}_u1_w{warps}", vec, 1, warps, bps))
    got, src = cm.loaded_latency(recs, {"hbm": l0}, rd, wr, sms_n)
    assert got == pytest.approx(k, rel=1e-9)
    assert "copyu_v16_u1_w64" not in src  # saturated: only the link's rate


def test_loaded_latency_needs_copy_points_and_the_hbm_latency():
    assert cm.loaded_latency([], {"hbm": 676.0}, 3e12, 2.6e12, 132) is None
    assert cm.loaded_latency([copyu("copyu_v4_u1_w16", 4, 1, 16, 1e12)], {}, 3e12, 2.6e12, 132) is None
