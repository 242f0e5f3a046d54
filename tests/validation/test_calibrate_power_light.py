"""Law tests of the light-load power fit (hopsim/validate/calibrate_power_light.py) on synthetic
records built from known terms through the current model's formula: the fit must recover every
term it can identify (exact linear algebra, no noise), and bad input exits 2 with one line."""

import json

import pytest

from hopsim.power.model import PowerModel
from hopsim.validate import calibrate_power_light as cpl
from validation.power import light

TRUE = {"run_offset_w": 6.0, "resident_sm_w": 0.35, "resident_warp_w": 0.02, "e_poll_pj": 40.0, "l2_active_w": 55.0,
        "e_l2_extra_pj_per_byte": -7.0,
        "e_tma_request_pj": 900.0, "e_cta_pj": 30000.0, "e_launch_pj": 2.0e6,
        "e_tensor_swz64_extra_pj_per_flop": 0.05, "e_tensor_swz32_extra_pj_per_flop": 0.2}


def _rec(name, family="light", params=None, rates=None, rate=None):
    r = {"kind": "power", "family": family, "name": name, "params": params or {}, "error": None}
    if rates is not None:
        r["steady_rates_per_s"] = rates
    if rate is not None:
        r["steady_rate_per_s"] = rate
    return r


def _rates_of(name: str, kw: dict):
    """Plausible steady rates for one planned light point (rates, steady_rate_per_s)."""
    if name.startswith("light_resident_"):
        return {"warp_iterations": (3.0e9 if kw["mode"] == "poll" else 1.0e8) * kw["warps"] / 4}, None
    if name.startswith("light_tma_req"):
        bw = {256: 1.5e12, 1024: 5.0e12, 16384: 8.0e12}[kw["req_bytes"]] / (10 if kw.get("gap_us") else 1)
        return {"bytes": bw, "requests": bw / kw["req_bytes"]}, None
    if name.startswith("light_pipe_"):
        wg = 6.0e8 if kw["req_bytes"] >= 4096 else 3.0e8
        return {"wgmma": wg, "bytes": wg / 4 * 40960, "requests": wg / 4 * 40960 / kw["req_bytes"]}, None
    if name.startswith("light_wgswz"):
        return None, {128: 6.0e8, 64: 5.5e8, 32: 4.0e8}[kw["swizzle"]]
    if name.startswith("light_wgmma_"):
        return None, 1.5e8
    if name.startswith("light_churn_"):
        return {"ctas": 1.5e5 * kw["grid"], "launches": 1.5e5}, None
    raise AssertionError(name)


def synthetic_records(true=TRUE):
    """Every point of the light run's plan (validation/power/light.py, + both idles) with plausible
    rates; power = current model + the true terms."""
    recs = [_rec("idle", "units"), _rec("idle_after", "units")]
    for pt in light.plan():
        kw = {k: v for k, v in pt["kw"].items() if k != "duration_s"}
        rates, rate = _rates_of(pt["name"], kw)
        recs.append(_rec(pt["name"], params=kw, rates=rates, rate=rate))
    pm = PowerModel.load()
    for r in recs:
        ev, col, _ = cpl.point_events(r)
        extra = sum(col[t] * true[t] * (1e-12 if t in cpl._PJ_TERMS else 1.0) for t in cpl.TERMS)
        r["power_steady_summary"] = {"power_w": {"tw_mean": pm.power_w(1980.0, ev, 1.0) + extra}}
    return recs


def test_the_light_plan_identifies_every_term_from_exact_synthetic_records():
    fit = cpl.fit_records(synthetic_records())
    assert fit["identified"] == list(cpl.TERMS) and fit["rank"] == len(cpl.TERMS)
    for t, v in TRUE.items():
        assert fit["terms"][t] == pytest.approx(v, rel=1e-6), t
    assert fit["rms_w"] < 1e-6
    assert all(abs(p["residual_after_w"]) < 1e-6 for p in fit["points"])
    roles = {p["name"]: p["role"] for p in fit["points"]}
    assert roles["light_pipe_req1024_s2"] == "check" and roles["light_wgmma_bf16f32_duty10"] == "check"


def test_check_points_are_reported_never_fitted():
    # a pipe point with 50 W the terms cannot explain: the fit is unchanged, the check shows -50 W
    recs = synthetic_records()
    for r in recs:
        if r["name"] == "light_pipe_req8192_s2":
            r["power_steady_summary"]["power_w"]["tw_mean"] += 50.0
    fit = cpl.fit_records(recs)
    for t, v in TRUE.items():
        assert fit["terms"][t] == pytest.approx(v, rel=1e-6), t
    chk = next(p for p in fit["points"] if p["name"] == "light_pipe_req8192_s2")
    assert chk["residual_after_w"] == pytest.approx(-50.0, abs=1e-6)


def test_current_model_alone_leaves_the_terms_as_residual():
    # with every term 0 the data equal the current model: nothing to fit, residuals 0
    fit = cpl.fit_records(synthetic_records(dict.fromkeys(TRUE, 0.0)))
    assert all(abs(v) < 1e-9 for v in fit["terms"].values())
    assert all(abs(p["residual_before_w"]) < 1e-9 for p in fit["points"])


def test_unloaded_term_is_reported_not_invented():
    recs = [r for r in synthetic_records() if not r["name"].startswith("light_churn_")]
    fit = cpl.fit_records(recs)
    assert "e_cta_pj" not in fit["identified"] and fit["terms"]["e_cta_pj"] == 0.0
    assert fit["terms"]["e_tma_request_pj"] == pytest.approx(TRUE["e_tma_request_pj"], rel=1e-6)


def test_bad_records_exit_2_with_one_line(tmp_path, capsys):
    rec = _rec("light_mystery", rates={})
    rec["power_steady_summary"] = {"power_w": {"tw_mean": 100.0}}
    (tmp_path / "light.jsonl").write_text(json.dumps(rec) + "\n")
    assert cpl.main(["--records", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "light_mystery" in err and "\n" not in err
    assert cpl.main(["--records", str(tmp_path / "nope")]) == 2
    assert "--records" in capsys.readouterr().err
