"""The third memory-bound held-out set (`--set heldout3`), without a GPU and without simulating it:
vecadd/copy sizes, the row-wise plan and the TMA copy plan are all new (none of heldout1's,
heldout2's, any committed record's or a development size), valid launches of their kernels'
contracts, spanning L2-resident to GB tensors; the first plans are unchanged (the committed
records' point names, in run order); the runner plans them within one device call; the compare
driver refuses another set's records with one line."""

from __future__ import annotations

import hashlib
import json
import pathlib

import pytest

from hopsim.validate import docs_numbers as dn
from hopsim.validate import portfolio_compare as pc
from kernels.membound.tmacopy import TmaCopyParams
from kernels.rowwise import RowParams
from validation import portfolio as pf
from validation import portfolio_runs
from validation import portfolio_tmacopy as ptc
from validation import rowwise as rw

H100 = pathlib.Path(__file__).resolve().parents[2] / "validation" / "records" / "h100"
L2 = 50 << 20
#: sha256 of heldout3's row-wise shapes "rows x cols" joined by newlines (SEED 1520261124)
ROWWISE_DIGEST = "5a707027b6233b1ff383f646563b1440d6d89eea5dc6f6e77743ef7560f19449"


def _records(folder: str) -> list[dict]:
    path = H100 / folder / "portfolio.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


#: the folders heldout3's own runs wrote (measured after the freeze at 6f5e12c): the set is new
#: against every OTHER record, which is what "never measured before" means once it has been measured
OWN_FOLDERS = {"portfolio_heldout3", "portfolio_rowwise_heldout3", "portfolio_tmacopy_heldout3"}


def _all_portfolio_records() -> list[dict]:
    out = []
    for path in sorted(H100.rglob("portfolio.jsonl")):
        if path.parent.name in OWN_FOLDERS:
            continue
        out += [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return out


def test_own_folders_hold_exactly_the_set():
    """heldout3's own records are the set's points, name for name (so excluding them above
    excludes nothing else)."""
    for folder, family in (("portfolio_heldout3", "all"),):
        recs = _records(folder)
        assert sorted(r["name"] for r in recs) == sorted(p["name"] for p in pf.points(family, "heldout3"))


# ----------------------------------------------------------------------------- vecadd / copy
def test_vecadd_copy_sizes_are_new_and_span_l2_to_gigabytes():
    new = set(pf.HELDOUT3_SIZES)
    assert not new & (set(pf.SIZES) | set(pf.HELDOUT2_SIZES))
    assert not new & {r["params"].get("n_floats") for r in _all_portfolio_records()}
    assert all(n % 1024 == 0 for n in new)
    assert 12 * min(new) <= 0.8 * L2  # vecadd's three arrays L2-resident
    assert 4 * max(new) >= 3.5 * (1 << 30)  # up to ~4 GB per array
    pts = pf.points("all", "heldout3")
    assert len(pts) == 48 and {p["set"] for p in pts} == {"heldout3"}


# ----------------------------------------------------------------------------- row-wise
def test_rowwise_first_plan_is_the_measured_one():
    names = [r["name"] for r in _records("portfolio_rowwise")]
    assert [p["name"] for p in rw.points(size_set="heldout1")] == names
    assert [p["name"] for p in rw.points(size_set="heldout2")] == names  # no plan of its own


def test_rowwise_heldout3_is_new_valid_and_covers_every_cell():
    shapes = rw.drawn_shapes()
    assert rw.drawn_shapes() == shapes and len(shapes) == len(rw.COL_BINS) * len(rw.BYTE_BINS)
    measured = {(r["params"]["rows"], r["params"]["cols"]) for r in _all_portfolio_records()
                if r["params"].get("family") in rw.FAMILIES}
    # heldout1's 12 shapes were all that was measured when heldout3 was drawn; later sets' records
    # (heldout4's) add shapes, and heldout3 must stay new against those too
    assert len(measured) >= 12 and not set(shapes) & (measured | set(rw.grid_shapes()))
    assert not set(shapes) & {(8192, 1024), (512, 1024), (256, 1024), (256, 512), (8, 1024)}  # tests, benchmarks
    for i, (rows, cols) in enumerate(shapes):
        (clo, chi), (blo, bhi) = rw.COL_BINS[i // len(rw.BYTE_BINS)], rw.BYTE_BINS[i % len(rw.BYTE_BINS)]
        assert clo <= cols <= chi and cols % 128 == 0 and cols & (cols - 1), (rows, cols)
        assert rows % 8 == 0 and 0.9 * blo <= 4 * rows * cols <= 1.1 * bhi, (rows, cols)
        for fam in rw.FAMILIES:
            for mapping in rw.MAPPINGS:
                RowParams(family=fam, rows=rows, cols=cols, mapping=mapping)  # the IR twin's contract
    pts = rw.points("rowwise", "heldout3")
    assert len(pts) == 60 and {p["set"] for p in pts} == {"heldout3"}
    assert min(p["bytes_moved"] for p in pts) <= 0.5 * L2 and max(p["bytes_per_array"] for p in pts) >= 1 << 30
    digest = hashlib.sha256("\n".join(f"{r}x{c}" for r, c in shapes).encode()).hexdigest()
    assert digest == ROWWISE_DIGEST


# ----------------------------------------------------------------------------- TMA copy
def test_tmacopy_first_plan_is_the_measured_one():
    names = [r["name"] for r in _records("portfolio_tmacopy")]
    assert [p["name"] for p in ptc.points("heldout1")] == names
    assert [p["name"] for p in ptc.points("heldout2")] == names


def test_tmacopy_heldout3_is_new_valid_and_spread():
    pts = ptc.points("heldout3")
    measured = {r["params"]["name"] for r in _all_portfolio_records()}
    assert len(pts) == 24 and not {p["name"] for p in pts} & measured
    assert len({p["name"] for p in pts}) == 24 and {p["set"] for p in pts} == {"heldout3"}
    old_boxes = {(d, br, bc, sw) for d, _, _, br, bc, sw, _, _ in ptc.POINTS}
    new_boxes = {(p["dtype"], p["box_rows"], p["box_cols"], p["swizzle"]) for p in pts}
    assert len(new_boxes - old_boxes) >= 18
    for p in pts:
        ctas = None if p["ctas_per_sm"] is None else p["ctas_per_sm"] * 132
        t = TmaCopyParams(dtype=p["dtype"], rows=p["rows"], cols=p["cols"], box_rows=p["box_rows"],
                          box_cols=p["box_cols"], swizzle=p["swizzle"], stages=p["stages"], ctas=ctas)
        assert t.stage_bytes == p["stage_bytes"] and t.num_ctas == p["grid_132sm"]
        if p["ctas_per_sm"]:
            assert p["ctas_per_sm"] * t.smem_bytes <= 228 << 10  # the persistent CTAs fit one SM
    assert {p["swizzle"] for p in pts} == {"none", "32B", "64B", "128B"}
    assert {p["stages"] for p in pts} == set(range(1, 9))
    assert {p["ctas_per_sm"] for p in pts} == {None, 1, 2, 3, 4}
    assert {p["dtype"] for p in pts} == {"f16", "f32"}
    assert min(p["bytes_moved"] for p in pts) <= 0.5 * L2 and max(p["bytes_per_array"] for p in pts) >= 1 << 30


# ----------------------------------------------------------------------------- runner and compare
@pytest.mark.parametrize("family", ["vecadd_copy", "rowwise", "tmacopy"])
def test_runner_plans_heldout3_within_one_device_call(family, capsys, monkeypatch):
    monkeypatch.setenv(pf.SET_ENV, "heldout1")  # recorded, so main's own os.environ write is undone
    assert portfolio_runs.main(["--set", "heldout3", "--family", family, "--plan"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    planned = float(out[-1].split()[1])
    assert planned <= 120 and len(out) - 1 == {"vecadd_copy": 48, "rowwise": 60, "tmacopy": 24}[family]
    monkeypatch.setenv(pf.SET_ENV, "heldout3")  # what the child processes see
    assert {p["params"]["set"] for p in portfolio_runs.plan(family)} == {"heldout3"}


def test_compare_refuses_another_sets_records(tmp_path, capsys):
    rec = _records("portfolio_heldout2")[0]
    (tmp_path / "portfolio.jsonl").write_text(json.dumps(rec) + "\n")
    out = tmp_path / "r"
    assert pc.main(["--set", "heldout3", "--records", str(tmp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and rec["params"]["name"] in err[0] and "heldout2" in err[0] and not out.exists()
    assert pc.main(["--set", "heldout9", "--records", str(tmp_path), "--out", str(out)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_committed_records_belong_to_their_sets():
    for folder, name in (("portfolio", "heldout1"), ("portfolio_heldout2", "heldout2"),
                         ("portfolio_rowwise", "heldout1"), ("portfolio_tmacopy", "heldout1")):
        recs = _records(folder)
        assert pc.only_set(recs, name) == recs
    assert "set heldout3" in pc.markdown([], {}, "f" * 64, "", "heldout3").splitlines()[0]


def test_readme_lists_the_third_sets_once_their_reports_exist(tmp_path, monkeypatch):
    monkeypatch.setattr(dn, "REPORT_DIR", tmp_path)
    assert dn.heldout() == "No held-out set has been compared yet.\n"
    st = {"n": 60, "mape_pct": 7.5, "mean_pct": -1.0, "worst_pct": -19.0, "within_10pct": 50}
    (tmp_path / "portfolio_rowwise_heldout3").mkdir()
    (tmp_path / "portfolio_rowwise_heldout3" / "portfolio.json").write_text(json.dumps(
        {"model_fingerprint": "b" * 64, "summary": {"all, at the predicted clock": st}}))
    text = dn.heldout()
    assert text.count("\n") == 1 and "`validation/reports/h100/portfolio_rowwise_heldout3/`" in text
    assert "60 row reduction / row softmax points of the third set: time MAPE 7.5%" in text
