"""Calibration: microbenchmark records -> timing config (hopsim/validate/calibrate.py).

Laws: the committed calibrated config is exactly what the committed records give; calibration
reads microbenchmark records only (never the GEMM records it is validated on); every timing number
has a known source kind, and every `measured:` one names a record that exists. The microbenchmark
replays (hopsim/validate/micro_sim.py) reproduce the rows the calibration read.
"""

from __future__ import annotations

import json
import math
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from hopsim.cli import main
from hopsim.config import load_gpu
from hopsim.config.base import SOURCE_KINDS
from hopsim.validate.calibrate import DEFAULT_OUT, CalibrationError, calibrate
from validation.provenance import RECORDS_DIR

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _copy(tmp: pathlib.Path, pattern: str) -> pathlib.Path:
    d = tmp / "records"
    d.mkdir(exist_ok=True)
    for p in RECORDS_DIR.glob(pattern):
        shutil.copy(p, d / p.name)
    return d


def test_committed_calibration_is_what_the_records_give():
    committed = json.loads(DEFAULT_OUT.read_text())["timing"]
    rows = {r.field: r for r in calibrate()}
    assert set(rows) == set(committed), "re-run `hopsim validate calibrate` after changing records or rules"
    for f, r in rows.items():
        assert committed[f]["value"] == pytest.approx(r.value), f
        assert committed[f]["source"] == r.source, f


def _copy_gmem(d: pathlib.Path) -> None:
    """The other microbenchmark record folders: gmem/, membw/ and launch2/ (launch2__*.json only)."""
    for sub, name in (("gmem", "gmem.jsonl"), ("membw", "membw.jsonl")):
        (d / sub).mkdir(exist_ok=True)
        shutil.copy(RECORDS_DIR / sub / name, d / sub / name)
    (d / "launch2").mkdir(exist_ok=True)
    for p in (RECORDS_DIR / "launch2").glob("launch2__*.json"):
        shutil.copy(p, d / "launch2" / p.name)


def _copy_smemport(d: pathlib.Path) -> None:
    (d / "smemport").mkdir(exist_ok=True)
    shutil.copy(RECORDS_DIR / "smemport" / "microbench__smemport.json", d / "smemport" / "microbench__smemport.json")


def test_calibration_reads_microbenchmark_records_only(tmp_path):
    only_micro = _copy(tmp_path, "microbench__*.json")
    _copy_gmem(only_micro)
    _copy_smemport(only_micro)
    assert [(r.field, r.value) for r in calibrate(only_micro)] == [(r.field, r.value) for r in calibrate()]
    gemm_only = tmp_path / "gemm"
    gemm_only.mkdir()
    for p in list(RECORDS_DIR.glob("gemm__*.json"))[:5]:
        shutil.copy(p, gemm_only / p.name)
    with pytest.raises(CalibrationError, match="no microbench"):
        calibrate(gemm_only)


def test_a_missing_record_is_named(tmp_path):
    d = _copy(tmp_path, "microbench__*.json")
    (d / "microbench__tma_width.json").unlink()
    with pytest.raises(CalibrationError, match="tma_width"):
        calibrate(d)


def test_every_timing_number_is_sourced_and_measured_ones_name_their_record():
    gpu = load_gpu()
    calibrated = set(json.loads(DEFAULT_OUT.read_text())["timing"])
    for group in (gpu.spec, gpu.timing):
        for name, p in group.params().items():
            assert p.kind in SOURCE_KINDS and p.unit and p.meaning, name
            assert math.isfinite(p.value), name
    for name in calibrated:
        src = gpu.timing.params()[name].source
        if src.startswith("derived: validation/sass/"):  # SASS counts x fields measured by a named record
            sass = src.split("derived: ", 1)[1].split(" ", 1)[0]
            assert (ROOT / sass).is_file(), (name, sass)
            record = re.search(r"microbench__\w+\.json", src)
            assert record and (RECORDS_DIR / record.group(0)).exists(), (name, src)
            continue
        assert src.startswith(("measured: microbench__", "measured: gmem/gmem.jsonl",
                               "measured: launch2/launch2__",
                               "measured: smemport/microbench__smemport.json",
                               "measured: wgmma_tma_sliced/microbench__wgmma_tma_sliced.json",
                               "measured: membw/membw.jsonl")), (name, src)
        record = src.split("measured: ", 1)[1].split(" ", 1)[0]
        assert (RECORDS_DIR / record).exists(), (name, record)


def test_calibrated_cycle_counts_are_whole_cycles():
    t = load_gpu().timing
    for name in json.loads(DEFAULT_OUT.read_text())["timing"]:
        p = t.params()[name]
        if p.unit == "cycles":
            assert p.value == int(p.value), name


def test_bandwidth_per_cycle_is_bytes_per_second_over_the_clock():
    g = load_gpu()
    assert g.l2_bytes_per_cycle * g.clock_hz == pytest.approx(float(g.timing.l2_bytes_per_s.value))
    assert g.at_clock(1500).hbm_bytes_per_cycle * 1.5e9 == pytest.approx(float(g.timing.hbm_bytes_per_s.value))


def test_calibration_rows_are_reproduced_by_the_microbenchmark_replays():
    from hopsim.validate.micro_sim import simulate_micro

    rows = simulate_micro()
    cal = [r for r in rows if r.calibration]
    assert len(cal) >= 10
    for r in cal:
        # whole-cycle rounding of the calibrated numbers (<= 0.5 cycle each) is the only
        # difference allowed: 3%, or one cycle where a row sums two rounded numbers
        assert abs(r.simulated - r.measured) <= max(0.03 * abs(r.measured), 1.0), (r.name, r.measured, r.simulated)
    assert all(math.isfinite(r.simulated) and r.simulated > 0 for r in rows if r.measured > 0)


def test_cli_dry_run_and_bad_records_dir(tmp_path, capsys):
    run = [sys.executable, "-m", "hopsim", "validate", "calibrate"]
    ok = subprocess.run(run + ["--dry-run"], capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0 and "tma_issue_cycles" in ok.stdout and "dry run" in ok.stdout
    # the two refusals in this process (the CLI's main; they stop before any calibration)
    assert main(["validate", "calibrate", "--dry-run", "--records", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "records" in err
    assert main(["validate", "calibrate", "--dry-run", "--records", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "microbench" in err


def test_gmem_fields_come_from_the_gmem_records_when_present(tmp_path):
    """With the gmem microbenchmark records the outstanding bound is Little's law over them
    (the largest bytes in flight an all-SM stream kept: bytes/cycle/SM x the chase latency of its
    level) and the write bandwidth the one that makes N read + N written bytes over one link take
    what the fastest copy stream beyond L2 took; without them the fields
    keep their provisional defaults (no row)."""
    from hopsim.validate.calibrate_gmem import chase_latency_cycles, gmem_records
    recs = gmem_records(RECORDS_DIR)
    lat = chase_latency_cycles(recs)
    reads = [r for r in recs if r["group"] in ("read_hbm", "read_l2")]
    inflight = max(r["results"]["bytes_per_cycle_per_sm"] * lat[r["params"]["where"]] for r in reads)
    copy = max(r["results"]["bytes_per_s"] for r in recs if r["group"] == "store_hbm" and r["name"].startswith("copy_"))
    read = max(r["results"]["bytes_per_s"] for r in recs if r["group"] == "read_hbm")
    from hopsim.validate.calibrate_gmem import derive_gmem
    assert derive_gmem(RECORDS_DIR)["gmem_outstanding_sectors_per_sm"][0] == math.ceil(inflight / 32)
    rows = {r.field: r for r in calibrate()}
    # with the membw records, their one-SM rule replaces it (calibrate_membw.py)
    assert "membw/membw.jsonl" in rows["gmem_outstanding_sectors_per_sm"].source
    x = rows["hbm_write_bytes_per_s"].value  # a copy's N read + N written bytes over the one link
    assert 2 / (1 / read + 1 / x) == pytest.approx(copy, rel=1e-9)
    assert "gmem/gmem.jsonl" in rows["hbm_write_bytes_per_s"].source
    without = {r.field for r in calibrate(_copy(tmp_path, "microbench__*.json"))}
    assert not without & {"gmem_outstanding_sectors_per_sm", "hbm_write_bytes_per_s"}
    assert load_gpu(calibrated=False).timing.gmem_outstanding_sectors_per_sm.source.startswith(
        "assumed: provisional: to be calibrated from microbench__gmem")
