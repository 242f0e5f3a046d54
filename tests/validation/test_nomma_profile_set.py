"""`python3 -m validation.cycle_profile --set nomma`: one-SM TMA issue configurations, each profiled
with the normal profile build and with the diagnostic build without wgmma.mma_async
(kernels/cuda/gemm_sm90.cu GEMM_NO_MMA, default 0: the normal build is unchanged)."""

from __future__ import annotations

import re

from validation import cycle_profile, gemm_profile, harness


def test_nomma_set_is_one_sm_and_covers_variants_issuers_and_box_rows():
    ps = cycle_profile.nomma_configurations()
    assert len({p.tag for p in ps}) == len(ps) == 26
    assert all(p.grid == 1 and p.k == 4096 and p.stages == 4 for p in ps)
    cover = {(p.variant, p.consumers if p.variant == "ws" else 0, p.tma_issuer, p.box_rows) for p in ps}
    for v in (("single", 0), ("ws", 1), ("ws", 2)):
        for issuer in ("lane", "elect"):
            assert {r for (vv, c, i, r) in cover if (vv, c) == v and i == issuer} >= {8, 32, 128}


def test_no_mma_is_off_by_default_and_only_removes_the_mma():
    src = harness.GEMM_SRC.read_text()
    assert re.search(r"#ifndef GEMM_NO_MMA\s+#define GEMM_NO_MMA 0", src)
    assert gemm_profile.NO_MMA_FLAGS == ("-DGEMM_NO_MMA=1",)


def test_each_configuration_is_built_with_and_without_the_mma(tmp_path, monkeypatch):
    built = []

    def fake_compile(p, digest=None, extra=()):
        built.append((p.tag, tuple(extra)))
        return RuntimeError("no nvcc in this test")

    monkeypatch.setattr(cycle_profile, "compile_profile", fake_compile)
    monkeypatch.setattr(cycle_profile.cf, "ProcessPoolExecutor", cycle_profile.cf.ThreadPoolExecutor)
    monkeypatch.setattr(cycle_profile, "device_provenance", lambda: {})
    assert cycle_profile.main(["--set", "nomma", "--only", "2", "--out", str(tmp_path)]) == 0
    ps = cycle_profile.nomma_configurations()[:2]
    assert built == [(p.tag, f) for p in ps for f in ((), gemm_profile.NO_MMA_FLAGS)]
