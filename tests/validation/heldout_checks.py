"""Checks every held-out GEMM set of heldout_draw's design (validation/heldout14.py, heldout15.py,
heldout16.py) must pass, shared by tests/validation/test_heldout1{4,5,6}_set.py and
test_heldout1{5,6}_compare.py. Each function takes the set module (its public names: sweep(),
sweeps(), singles(), membership(), SWEEP_NAME, HELDOUT_TAG, SEED, N_SINGLE, plan_seconds ...) and
asserts one law; the set files keep their pinned digests and set-specific checks. Without a GPU and
without simulating a set (the compare checks use synthetic records)."""

from __future__ import annotations

import hashlib
import json
import pathlib

import pytest

from hopsim.validate import docs_numbers, heldout, heldout14_report
from kernels.params import GemmParams
from validation import gemm_runs, heldout13, heldout14, heldout_draw

REPO = pathlib.Path(__file__).resolve().parents[2]
RECORDS = REPO / "validation" / "records"
H100 = RECORDS / "h100"
#: knob swept -> the GemmParams fields its points may differ in
DIM_FIELDS = {"stages": {"stages"}, "box_rows": {"box_rows"}, "tile": {"bm", "bn"},
              "swizzle": {"swizzle"}, "ctas_per_sm": {"ctas_per_sm"},
              "variant": {"variant", "consumers"}, "tma_issuer": {"tma_issuer"}}


def digest(params) -> str:
    """sha256 of the tags joined by newlines (what a set's FROZEN_DIGEST pins)."""
    return hashlib.sha256("\n".join(p.tag for p in params).encode()).hexdigest()


def recorded_params(root: pathlib.Path, skip: str, after: tuple[str, ...] = ()) -> set[GemmParams]:
    """Every GEMM configuration in a committed record (*.json and *.jsonl, every folder) under
    `root`, except in the folders named `skip` (a set's own measurement, committed after its freeze)
    and `after` (diagnostics of the set's configurations made after its first comparison was
    published, e.g. worst17: heldout17's worst, re-profiled)."""
    out = set()
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if skip in parts or any(a in parts for a in after) or path.suffix not in (".json", ".jsonl"):
            continue
        text = path.read_text()
        docs = [json.loads(text)] if path.suffix == ".json" else [json.loads(x) for x in text.splitlines() if x.strip()]
        for d in docs:
            for r in d if isinstance(d, list) else [d]:
                p = r.get("params") if isinstance(r, dict) else None
                if isinstance(p, dict) and "bm" in p:
                    out.add(GemmParams.from_dict(p))
    return out


# ----------------------------------------------------------------------------- the drawn set
def check_frozen(hset, frozen_digest: str) -> None:
    """The set is its pinned digest, and drawing it again (caches cleared, exclusion re-read) gives it."""
    ps = hset.sweep()
    assert digest(ps) == frozen_digest
    caches = (hset.sweeps, hset.singles) + ((hset.held_set,) if hasattr(hset, "held_set") else ())
    for f in caches:  # redraw, re-read the frozen exclusion
        f.cache_clear()
    assert hset.sweep() == ps


def check_valid_distinct_and_sized(hset, max_configs: int) -> None:
    """Every configuration re-validates, is distinct, non-square, within the shape and FLOP bounds."""
    ps = hset.sweep()
    assert 80 <= len(ps) <= max_configs and len(set(ps)) == len(ps)
    for p in ps:
        assert GemmParams.from_dict(p.to_dict()) == p  # construction re-validates every knob
        assert 1024 <= p.m <= 16384 and 1024 <= p.n <= 16384 and 512 <= p.k <= 16384 and p.m != p.n
        assert heldout_draw.MIN_FLOPS <= p.flops <= heldout_draw.MAX_FLOPS
    assert len(hset.singles()) == hset.N_SINGLE


def check_one_knob_per_sweep(hset) -> None:
    """Each sweep varies exactly its knob around one shape, and its points are distinct launches."""
    for s in hset.sweeps():
        assert len(s.points) == len(s.labels) == len(set(s.labels)) >= heldout_draw.MIN_POINTS[s.dim]
        assert len({(p.m, p.n, p.k) for p in s.points}) == 1, s.name
        for p in s.points:
            diff = {f for f, v in p.to_dict().items() if s.base.to_dict().get(f) != v}
            diff |= {f for f in s.base.to_dict() if f not in p.to_dict()}
            assert diff <= DIM_FIELDS[s.dim], (s.name, diff)
        kernels = {(tuple(sorted(p.cuda_defines().items())), p.dynamic_smem_bytes) for p in s.points}
        assert len(kernels) == len(s.points), s.name  # no two points are the same launch
        assert s.base in s.points, s.name


def sweep_values(hset, dim: str) -> set[str]:
    """Every value label the set's sweeps of knob `dim` take."""
    return {lab for s in hset.sweeps() if s.dim == dim for lab in s.labels}


def check_coverage(hset, box_rows: set[str]) -> None:
    """Coverage is enumerated: every knob swept >= twice over all its values (box rows: `box_rows`,
    the set's own law), the 9 strata, both layouts/epilogues/rasters, every K bin in >= 3 bases,
    and 'auto' CTAs/SM points fit two CTAs."""
    sw = hset.sweeps()
    dims = [s.dim for s in sw]
    for d in DIM_FIELDS:
        assert dims.count(d) >= 2, d
    assert sweep_values(hset, "stages") == {str(i) for i in range(1, 9)}
    assert sweep_values(hset, "box_rows") == box_rows
    assert sweep_values(hset, "tile") == {f"{m}x{n}" for m in (64, 128, 256) for n in (64, 128, 256)}
    assert sweep_values(hset, "swizzle") == {"32B", "64B", "128B"}
    assert sweep_values(hset, "ctas_per_sm") == {"auto", "1"}
    assert sweep_values(hset, "variant") == {"single", "ws1", "ws2"}
    assert sweep_values(hset, "tma_issuer") == {"lane", "elect"}
    ps = hset.sweep()
    assert {(p.variant, p.num_consumer_warpgroups, p.dtype, p.accum) for p in ps} == set(heldout13.STRATA)
    for knob, vals in {"layout": {"tn", "nn"}, "epilogue": {"direct", "stmatrix"},
                       "raster": {"row", "grouped"}}.items():
        assert {getattr(p, knob) for p in ps} == vals, knob
    for lo, hi in heldout_draw.KBINS:  # every K bin holds the base of >= 3 sweeps
        assert sum(lo <= s.base.k <= hi for s in sw) >= 3, (lo, hi)
    for s in sw:
        if s.dim == "ctas_per_sm":
            auto = next(p for p in s.points if p.ctas_per_sm == "auto")
            assert auto.smem_limited_ctas_per_sm >= 2


def check_disjoint(hset, recorded: set[GemmParams], min_recorded: int) -> None:
    """No configuration, not even a shape, of the set is in `recorded` (>= min_recorded of them),
    and no configuration is in another gemm_runs sweep."""
    held = set(hset.sweep())
    assert len(recorded) >= min_recorded and not (held & recorded)
    assert not ({(p.m, p.n, p.k) for p in held} & {(p.m, p.n, p.k) for p in recorded})
    for name, fn in gemm_runs.SWEEPS.items():
        if name != hset.SWEEP_NAME:
            assert not (held & set(fn())), name


def check_not_recorded_before(hset, n_frozen: int, min_recorded: int, after: tuple[str, ...] = ()) -> None:
    """The exclusion rule: the frozen list (n_frozen tags) is what was recorded (records are never
    removed), and no point's tag, configuration or shape is in any record committed since (own
    folder aside, and the folders `after`: diagnostics of the set's own configurations made after
    its first comparison was published, which must then hold nothing but those)."""
    frozen = hset.held_set().exclude
    tags = heldout_draw.recorded_tags(H100, skip=(hset.SWEEP_NAME, *after))
    assert len(frozen) == n_frozen and frozen <= tags
    assert not ({p.tag for p in hset.sweep()} & tags)
    check_disjoint(hset, recorded_params(H100, hset.SWEEP_NAME, after), min_recorded)


# ----------------------------------------------------------------------------- gemm_runs wiring
def check_records_carry_their_set_and_sweep(hset) -> None:
    """Every record of a sweep point carries the set's tag, its sweep, knob and value; a single point's 'single'."""
    assert len(hset.membership()) == len(hset.sweep())
    for s in hset.sweeps():
        for p, lab in zip(s.points, s.labels):
            rec = gemm_runs.base_record(hset.SWEEP_NAME, p)
            assert rec["heldout"] == hset.HELDOUT_TAG and rec["heldout_sweep"] == s.name
            assert rec["sweep_dim"] == s.dim and rec["sweep_value"] == lab
    single = gemm_runs.base_record(hset.SWEEP_NAME, hset.singles()[0])
    assert single["heldout_sweep"] == "single" and single["sweep_dim"] is None


def check_run_options(hset) -> None:
    """Sustained 2 s with the last 1 s steady, no cuBLAS loops."""
    assert gemm_runs.SUSTAINED_ONLY[hset.SWEEP_NAME] == (hset.SUSTAIN_S, hset.STEADY_S) == (2.0, 1.0)
    assert gemm_runs.CUBLAS_PICKS[hset.SWEEP_NAME](hset.sweep()) == set()


def check_list(hset, frozen_digest: str, capsys, monkeypatch) -> None:
    """`gemm_runs --sweep NAME --list` prints the set in run order and its digest, compiling nothing."""
    monkeypatch.setattr(gemm_runs.harness, "compile_many", lambda *a: pytest.fail("--list compiled"))
    assert gemm_runs.main(["--sweep", hset.SWEEP_NAME, "--list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(hset.sweep()) + 1 and frozen_digest[:16] in lines[-1]
    assert lines[0].split()[0] == hset.sweep()[0].tag and lines[0].split()[-1] == "00_stages"
    assert "cublas" not in "".join(lines)


# ----------------------------------------------------------------------------- the comparison (synthetic records)
def row(tag: str, i: int, scale: float = 1.0) -> dict:
    """A synthetic compared row: hardware time deterministic and distinct within a sweep, simulated
    time `scale` x it, clock and power exact."""
    hw = 0.2 + (i * 37 % 101) / 50.0
    return {"tag": tag, "hw_time_ms": hw, "hw_clock_mhz_tw": 1500.0, "hw_power_w_nvml": 600.0,
            "pred_clock_mhz": 1500.0, "pred_power_w": 600.0, "pred_time_ms": hw * scale,
            "sim_time_ms_at_hw_clock": hw * scale, "err_clock": 0.0, "err_power_nvml": 0.0,
            "err_power_counter": 0.0, "err_time_pred_clock": scale - 1, "err_time_hw_clock": scale - 1}


def rows(hset, scale: float = 1.0) -> list[dict]:
    """One synthetic row per configuration of the set."""
    return [row(p.tag, i, scale) for i, p in enumerate(hset.sweep())]


def check_perfect_simulation_meets_every_target(hset) -> None:
    s = heldout14_report.summarise(rows(hset), hset=hset)
    assert s["n_set"] == s["n_simulated"] == len(hset.sweep()) and not s["not_measured"]
    for basis in ("predicted_clock", "measured_clock"):
        a = s["sweeps"][basis]["all"]
        assert a["n"] == len(hset.sweeps()) == a["best_same"] == a["shape_ok"] == a["points_ok"]
    assert all(t["met"] for t in s["targets"])
    assert [t["limit"] for t in s["targets"]] == [t.limit for t in heldout14_report.TARGETS]


def check_rows_against_heldout14_count_as_unmeasured(hset) -> None:
    s = heldout14_report.summarise(rows(hset))  # default set: heldout14
    assert len(s["not_measured"]) == len(heldout14.sweep())
    assert s["sweeps"]["predicted_clock"]["all"]["n"] == 0


def check_report(hset) -> tuple[str, dict, list[dict]]:
    """The report of a 10%-slow simulation names the set's module and seed, every sweep and the
    missed target; heldout14's own title stays. Returns (markdown, summary, rows) for the set's
    title checks."""
    rs = rows(hset, 1.1)
    s = heldout14_report.summarise(rs, hset=hset)
    md = heldout14_report.markdown(s, rs, "e" * 64, "Measured after the freeze.", hset=hset)
    assert hset.SWEEP_NAME in md.splitlines()[0] and str(hset.SEED) in md.splitlines()[0]
    assert f"validation/{hset.SWEEP_NAME}.py (seed {hset.SEED})" in md and "**not met**" in md
    for sw in hset.sweeps():
        assert f"| {sw.name} |" in md
    old = heldout14_report.markdown(s, rs, "e" * 64, "")
    assert old.startswith("# Held-out comparison, issue 14:")  # heldout14's title unchanged
    return md, s, rs


def check_cli_refuses_another_sets_records(hset, tmp_path, capsys) -> None:
    name = hset.SWEEP_NAME
    rec = {"kind": "gemm_sustained", "status": "ok", "tag": heldout14.sweep()[0].tag, "params": {}}
    (tmp_path / "x.jsonl").write_text(json.dumps(rec) + "\n")
    assert heldout.main(["--set", name, "--records", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and heldout14.sweep()[0].tag in err[0] and name in err[0]
    assert not (tmp_path / "r").exists()
    assert heldout.SETS[name]["files"] == ("compare.json", "report.md")
    assert heldout.SETS[name]["name"] == name


def check_readme_lists_the_set_once_its_report_exists(hset, tmp_path, monkeypatch) -> None:
    name = hset.SWEEP_NAME
    monkeypatch.setattr(docs_numbers, "REPORT_DIR", tmp_path)
    assert docs_numbers.heldout() == "No held-out set has been compared yet.\n"  # no report: no line, no failure
    rs = rows(hset, 1.05)
    s = heldout14_report.summarise(rs, hset=hset)
    (tmp_path / name).mkdir()
    (tmp_path / name / "compare.json").write_text(json.dumps({"model_fingerprint": "a" * 64, "summary": s}))
    text = docs_numbers.heldout()
    assert text.count("\n") == 1 and f"`validation/reports/h100/{name}/`, model `aaaaaaaaaaaa`" in text
    assert f"{len(rs)} GEMM benchmark loops" in text and "time MAPE 5.0% at the predicted clock" in text
