"""validation/micro_single_loop.py: the single variant's k-tile loop taken apart on one SM by the
GEMM twin's compile-time switches (GEMM_NO_MMA, GEMM_DIAG_*; every switch off by default, so the
default build is unchanged), timed at two depths whose difference is the per-k-tile cost."""

from __future__ import annotations

import json
import re

import pytest

from validation import harness
from validation import micro_single_loop as m


def test_every_base_has_every_piece_on_one_sm_at_both_depths():
    vs = m.variants()
    assert len({v.name for v in vs}) == len(vs) == len(m.BASES) * len(m.PIECES) == 36
    for v in vs:
        assert v.short.grid == v.long.grid == 1
        assert (v.short.k, v.long.k) == (m.K_SHORT, m.K_LONG)
        assert v.long == v.short.replace(k=m.K_LONG)
    by = {(v.base, v.piece): v for v in vs}
    for base, _ in m.BASES:
        assert by[(base, "s1")].short.stages == 1 and by[(base, "s2")].short.stages == 2
        assert by[(base, "full")].short.stages == 4 and by[(base, "full")].flags == ()
        assert by[(base, "elect")].short.tma_issuer == "elect"
    assert {v.short.variant for v in vs} == {"single", "ws"}
    assert {(v.short.bm, v.short.bn) for v in vs} == {(128, 128), (128, 256)}


def test_every_switch_exists_in_the_twin_and_is_off_by_default():
    src = harness.GEMM_SRC.read_text()
    macros = {f.split("=")[0][2:] for v in m.variants() for f in v.flags}
    assert macros == {"GEMM_NO_MMA", "GEMM_DIAG_NO_TMA", "GEMM_DIAG_NO_FULL_WAIT", "GEMM_DIAG_NO_WAIT_GROUP"}
    for mac in macros | {"GEMM_DIAG_NO_FENCE"}:
        assert re.search(rf"#ifndef {mac}\s+#define {mac} 0\b", src), mac
    assert all(f.endswith("=1") for v in m.variants() for f in v.flags)


def test_per_ktile_cancels_what_does_not_scale_with_k():
    fixed, per = 5000.0, 555.5
    def cyc(k):
        return fixed + per * (k // 64)
    assert m.per_ktile(cyc(m.K_SHORT), cyc(m.K_LONG)) == pytest.approx(per)
    assert m.per_ktile(100.0, 1100.0, 64, 128) == 1000.0


def test_stamps_cycles_and_clock():
    assert m.stamps([3, 1000, 181000, 50, 100050]) == (180000, pytest.approx(1800.0))
    assert m.stamps([3, 10, 20, 7, 7]) == (10, None)


def test_main_writes_one_record_per_variant_and_reports_build_errors(tmp_path, monkeypatch):
    calls = []

    def fake_compile(job):
        p, flags = job
        if "-DGEMM_DIAG_NO_TMA=1" in flags and p.k == m.K_LONG:
            return RuntimeError("nvcc failed (fake)")
        return object()

    def fake_time(p, compiled, warm=m.WARM, reps=m.REPS):
        calls.append(p.tag)
        c = 1000 + 500 * (p.k // 64)
        return {"cycles": [c] * reps, "cycles_median": c, "clock_mhz": 1755.0}

    monkeypatch.setattr(m, "_compile", fake_compile)
    monkeypatch.setattr(m.cf, "ProcessPoolExecutor", m.cf.ThreadPoolExecutor)
    monkeypatch.setattr(m, "time_build", fake_time)
    monkeypatch.setattr(m, "device_provenance", lambda: {})
    assert m.main(["--only", "single_128x128", "--out", str(tmp_path)]) == 0
    recs = {p.name: json.loads(p.read_text()) for p in tmp_path.glob("micro_single_loop__*.json")}
    assert len(recs) == len(m.PIECES)
    full = recs["micro_single_loop__single_128x128__full.json"]
    assert full["status"] == "ok" and full["cycles_per_ktile"] == pytest.approx(500.0)
    assert full["k_tiles_short"] == 64 and full["k_tiles_long"] == 192
    for name in ("notma", "notma_nomma"):
        r = recs[f"micro_single_loop__single_128x128__{name}.json"]
        assert r["status"] == "error" and "nvcc failed" in r["error"]


def test_bad_only_is_one_line_and_status_2(capsys):
    assert m.main(["--only", "single_128x128,bogus"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bogus" in err[0] and "single_128x128" in err[0]


def test_list_runs_without_a_gpu(capsys):
    assert m.main(["--list"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 36


def test_ptxas_notes_are_the_c75xx_lines_of_the_build_log(tmp_path):
    cubin = tmp_path / "gemm_x.cubin"
    cubin.with_suffix(".log").write_text("ptxas info    : Used 154 registers\nptxas info    : (C7517) "
                                         "warpgroup.wait is injected in around line 338\n")

    class Built:
        pass
    b = Built()
    b.cubin = cubin
    assert m.ptxas_notes(b) == ["ptxas info    : (C7517) warpgroup.wait is injected in around line 338"]
    assert m.ptxas_notes(RuntimeError("no build")) == []
    b.cubin = tmp_path / "absent.cubin"
    assert m.ptxas_notes(b) == []
