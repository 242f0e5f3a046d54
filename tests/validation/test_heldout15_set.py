"""The third held-out GEMM set (validation/heldout15.py) and the shared drawing
(validation/heldout_draw.py), without a GPU and without simulating it: heldout14 drawn through the
shared code is exactly the set its committed records measured; heldout15 is frozen (its tags'
digest), valid, sized, one knob per sweep, coverage enumerated as heldout14's, disjoint from every
configuration recorded under validation/records/h100/ (the exclusion rule) and from every other
sweep, and gemm_runs wires it in (records carry "issue14-15" and their sweep; no cuBLAS loops;
`--list` prints it without simulating; the planned run fits one device call)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pathlib

import pytest

from kernels.params import BOX_ROWS, GemmParams
from validation import gemm_runs, heldout13, heldout14, heldout15, heldout_draw

REPO = pathlib.Path(__file__).resolve().parents[2]
H100 = REPO / "validation" / "records" / "h100"
#: sha256 of heldout15's tags joined by newlines, as drawn on 2026-11-24 (SEED 1520261124)
FROZEN_DIGEST = "54ca9c6e4a401f949e1efa550e5dff1043057f7fa0affe784b602d3558abf48f"
DIM_FIELDS = {"stages": {"stages"}, "box_rows": {"box_rows"}, "tile": {"bm", "bn"},
              "swizzle": {"swizzle"}, "ctas_per_sm": {"ctas_per_sm"},
              "variant": {"variant", "consumers"}, "tma_issuer": {"tma_issuer"}}


def _digest(params) -> str:
    return hashlib.sha256("\n".join(p.tag for p in params).encode()).hexdigest()


def _recorded_params(skip: str) -> set[GemmParams]:
    """Every GEMM configuration in a committed record under records/h100/ except folder `skip`."""
    out = set()
    for path in sorted(H100.rglob("*")):
        if skip in path.relative_to(H100).parts or path.suffix not in (".json", ".jsonl"):
            continue
        text = path.read_text()
        docs = [json.loads(text)] if path.suffix == ".json" else [json.loads(x) for x in text.splitlines() if x.strip()]
        for d in docs:
            for r in d if isinstance(d, list) else [d]:
                p = r.get("params") if isinstance(r, dict) else None
                if isinstance(p, dict) and "bm" in p:
                    out.add(GemmParams.from_dict(p))
    return out


# ----------------------------------------------------------------------------- the shared drawing
def test_heldout14_through_the_shared_drawing_is_the_measured_set():
    path = H100 / "heldout14" / "gemm_sustained_heldout14.jsonl"
    recorded = [json.loads(x)["tag"] for x in path.read_text().splitlines() if x.strip()]
    assert [p.tag for p in heldout14.sweep()] == recorded  # same tags, same run order
    assert heldout14.SET.exclude == frozenset()


def test_the_seed_alone_makes_a_new_set():
    a, b = set(heldout14.sweep()), set(heldout15.sweep())
    assert not (a & b) and len(heldout15.sweep()) == len(heldout14.sweep())
    same_design = dataclasses.replace(heldout15.held_set(), seed=heldout14.SEED, name="heldout14",
                                      tag="issue14", exclude=frozenset())
    assert heldout_draw.draw_sweeps(same_design) == heldout14.sweeps()


def test_an_excluded_tag_is_redrawn():
    hs = dataclasses.replace(heldout15.held_set(), exclude=frozenset())
    first = heldout_draw.draw_sweeps(hs)[0]
    single = heldout_draw.draw_singles(hs)[0]
    banned = dataclasses.replace(hs, exclude=frozenset({first.points[0].tag, single.tag}))
    again = heldout_draw.draw_sweeps(banned)[0]
    assert first.points[0].tag not in {p.tag for p in again.points} and again.dim == first.dim
    assert heldout_draw.draw_singles(banned)[0].tag != single.tag
    assert heldout_draw.draw_sweeps(banned)[1:] == heldout_draw.draw_sweeps(hs)[1:]  # own streams


def test_recorded_tags_reads_every_kind_and_skips_the_own_folder(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "heldout15").mkdir()
    (tmp_path / "x.json").write_text(json.dumps({"tag": "t1", "params": {}}))
    (tmp_path / "a" / "y.jsonl").write_text(json.dumps({"tag": "t2"}) + "\n" + json.dumps({"tag": "t3"}) + "\n")
    (tmp_path / "heldout15" / "z.jsonl").write_text(json.dumps({"tag": "t4"}) + "\n")
    (tmp_path / "a" / "n.txt").write_text('"tag": "t5"')
    assert heldout_draw.recorded_tags(tmp_path, skip=("heldout15",)) == {"t1", "t2", "t3"}


# ----------------------------------------------------------------------------- heldout15
def test_set_is_deterministic_and_frozen():
    ps = heldout15.sweep()
    assert _digest(ps) == FROZEN_DIGEST
    for f in (heldout15.sweeps, heldout15.singles, heldout15.held_set):  # re-read, redraw
        f.cache_clear()
    assert heldout15.sweep() == ps


def test_no_point_was_recorded_before():
    """The exclusion rule: the frozen list is what was recorded (records are never removed), and no
    point's tag, configuration or shape is in any record committed since (own folder aside)."""
    held = set(heldout15.sweep())
    frozen = heldout15.held_set().exclude
    tags = heldout_draw.recorded_tags(H100, skip=("heldout15",))
    assert len(frozen) == 405 and frozen <= tags  # 405 tags on 2026-11-24
    assert not ({p.tag for p in held} & tags)
    recorded = _recorded_params("heldout15")
    assert len(recorded) >= 400 and not (held & recorded)
    assert not ({(p.m, p.n, p.k) for p in held} & {(p.m, p.n, p.k) for p in recorded})
    for name, fn in gemm_runs.SWEEPS.items():
        if name != heldout15.SWEEP_NAME:
            assert not (held & set(fn())), name


def test_every_configuration_is_valid_distinct_and_sized():
    ps = heldout15.sweep()
    assert 80 <= len(ps) <= 90 and len(set(ps)) == len(ps)
    for p in ps:
        assert GemmParams.from_dict(p.to_dict()) == p
        assert 1024 <= p.m <= 16384 and 1024 <= p.n <= 16384 and 512 <= p.k <= 16384 and p.m != p.n
        assert heldout_draw.MIN_FLOPS <= p.flops <= heldout_draw.MAX_FLOPS
    assert len(heldout15.singles()) == heldout15.N_SINGLE


def test_each_sweep_varies_one_knob_around_one_shape():
    for s in heldout15.sweeps():
        assert len(s.points) == len(s.labels) == len(set(s.labels)) >= heldout_draw.MIN_POINTS[s.dim]
        assert len({(p.m, p.n, p.k) for p in s.points}) == 1, s.name
        for p in s.points:
            diff = {f for f, v in p.to_dict().items() if s.base.to_dict().get(f) != v}
            assert diff <= DIM_FIELDS[s.dim], (s.name, diff)
        kernels = {(tuple(sorted(p.cuda_defines().items())), p.dynamic_smem_bytes) for p in s.points}
        assert len(kernels) == len(s.points) and s.base in s.points, s.name


def test_coverage_is_enumerated():
    sw = heldout15.sweeps()
    values = lambda d: {lab for s in sw if s.dim == d for lab in s.labels}  # noqa: E731
    assert values("stages") == {str(i) for i in range(1, 9)}
    assert values("box_rows") == {str(r) for r in BOX_ROWS}
    assert values("tile") == {f"{m}x{n}" for m in (64, 128, 256) for n in (64, 128, 256)}
    assert values("swizzle") == {"32B", "64B", "128B"} and values("ctas_per_sm") == {"auto", "1"}
    assert values("variant") == {"single", "ws1", "ws2"} and values("tma_issuer") == {"lane", "elect"}
    ps = heldout15.sweep()
    assert {(p.variant, p.num_consumer_warpgroups, p.dtype, p.accum) for p in ps} == set(heldout13.STRATA)
    for knob, vals in {"layout": {"tn", "nn"}, "epilogue": {"direct", "stmatrix"},
                       "raster": {"row", "grouped"}}.items():
        assert {getattr(p, knob) for p in ps} == vals, knob
    for lo, hi in heldout_draw.KBINS:
        assert sum(lo <= s.base.k <= hi for s in sw) >= 3, (lo, hi)
    for s in sw:
        if s.dim == "ctas_per_sm":
            auto = next(p for p in s.points if p.ctas_per_sm == "auto")
            assert auto.smem_limited_ctas_per_sm >= 2


# ----------------------------------------------------------------------------- gemm_runs wiring
def test_records_carry_their_set_and_sweep():
    assert len(heldout15.membership()) == len(heldout15.sweep())
    s = heldout15.sweeps()[3]
    rec = gemm_runs.base_record(heldout15.SWEEP_NAME, s.points[0])
    assert rec["heldout"] == "issue14-15" and rec["heldout_sweep"] == s.name and rec["sweep_value"] == s.labels[0]
    single = gemm_runs.base_record(heldout15.SWEEP_NAME, heldout15.singles()[0])
    assert single["heldout_sweep"] == "single" and single["sweep_dim"] is None


def test_run_options_and_plan_fit_one_device_call():
    assert gemm_runs.SUSTAINED_ONLY[heldout15.SWEEP_NAME] == (2.0, 1.0)
    ps = heldout15.sweep()
    assert gemm_runs.CUBLAS_PICKS[heldout15.SWEEP_NAME](ps) == set()
    # heldout14's 88 configurations took 253 s on the device against a plan of 391 s; same count here
    assert heldout15.plan_seconds(ps) <= heldout14.plan_seconds(heldout14.sweep()) <= 420


def test_list_prints_the_set_without_running_it(capsys, monkeypatch):
    monkeypatch.setattr(gemm_runs.harness, "compile_many", lambda *a: pytest.fail("--list compiled"))
    assert gemm_runs.main(["--sweep", "heldout15", "--list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(heldout15.sweep()) + 1 and FROZEN_DIGEST[:16] in lines[-1]
    assert lines[0].split()[0] == heldout15.sweep()[0].tag and "cublas" not in "".join(lines)
