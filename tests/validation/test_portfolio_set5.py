"""The fifth memory-bound held-out set (`--set heldout5`), without a GPU and without simulating it:
vecadd/copy sizes, the row-wise, TMA copy and attention plans are drawn from SEED 2020261125 with
heldout4's design and pinned by their point names' digests; every point is new (no committed
record's, heldout4's included, no earlier plan's, no development size), a valid launch of its
kernel's contract, and the draws cover the knobs and the classes the earlier sets missed most (scalar
copy at L2-resident sizes, one warp per row of 1024 columns at 20K..200K rows, persistent TMA copies
with small boxes, d128/kv128 attention); the largest sizes are capped so that the simulated
comparison stays within ~30 min; the earlier plans are unchanged; the runner plans the four runs
within one device call; the compare driver refuses another set's records; README lists a set only
once its report exists."""

from __future__ import annotations

import hashlib
import json
import pathlib

import pytest

from hopsim.validate import docs_numbers as dn
from hopsim.validate import portfolio_compare as pc
from kernels.attention import AttnParams, build_attention
from kernels.attention.softmax import LOG2E, f32
from kernels.membound.tmacopy import TmaCopyParams
from kernels.rowwise import RowParams
from validation import portfolio as pf
from validation import portfolio_attention as pat
from validation import portfolio_runs
from validation import portfolio_tmacopy as ptc
from validation import rowwise as rw

H100 = pathlib.Path(__file__).resolve().parents[2] / "validation" / "records" / "h100"
L2 = 50 << 20
#: sha256 of each heldout5 plan's point names joined by newlines, as drawn on 2026-11-25 (SEED 2020261125)
DIGESTS = {"vecadd_copy": "168a4b868f56572050b5ed375ceb2dca68dbb2df1975e786f629e36bf5938608",
           "rowwise": "49f226a9a60d10a244d4620113b4ab3060f2b64fcc227d7a1d94a1e8de0e8bfa",
           "tmacopy": "66fdc0dfb04734248a670174e465d80f010e6d3e69ab8623cde2837de0a5b19e",
           "attention": "bce555d0bf0f99cd431be2d802f53715393e336ba5b1dbc664d800dac16e0aa8"}
COUNTS = {"vecadd_copy": 48, "rowwise": 72, "tmacopy": 24, "attention": 13}
#: the folders heldout5's own runs write (after the freeze): the set is new against every OTHER record
OWN_FOLDERS = {"portfolio_heldout5", "portfolio_rowwise_heldout5", "portfolio_tmacopy_heldout5",
               "portfolio_attention_heldout5"}
#: heldout1..4's records (56 + 48 + 48 + 48 vecadd/copy, 48 + 60 + 72 row-wise, 3 x 24 TMA copy,
#: 13 + 13 attention) are all read: the set is new against each
N_EARLIER_RECORDS = 56 + 48 + 48 + 48 + 48 + 60 + 72 + 3 * 24 + 13 + 13


def _plan(family: str, name: str = "heldout5") -> list[dict]:
    return {"vecadd_copy": lambda: pf.points("all", name), "rowwise": lambda: rw.points("rowwise", name),
            "tmacopy": lambda: ptc.points(name), "attention": lambda: pat.points(name)}[family]()


def _records(folder: str) -> list[dict]:
    path = H100 / folder / "portfolio.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _other_records() -> list[dict]:
    out = []
    for path in sorted(H100.rglob("portfolio.jsonl")):
        if path.parent.name not in OWN_FOLDERS:
            out += [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return out


# ----------------------------------------------------------------------------- the draws
@pytest.mark.parametrize("family", list(DIGESTS))
def test_plan_is_pinned_new_and_of_its_set(family):
    pts = _plan(family)
    names = [p["name"] for p in pts]
    assert hashlib.sha256("\n".join(names).encode()).hexdigest() == DIGESTS[family]
    assert len(pts) == COUNTS[family] == len(set(names)) and {p["set"] for p in pts} == {"heldout5"}
    others = _other_records()
    assert len(others) >= N_EARLIER_RECORDS
    assert not set(names) & {r["params"].get("name", r.get("name")) for r in others}
    for earlier in ("heldout1", "heldout2", "heldout3", "heldout4"):
        assert not set(names) & {p["name"] for p in _plan(family, earlier)}, earlier


def test_own_folders_hold_only_the_set():
    """Once measured, heldout5's own folders hold its points and nothing else (so excluding them
    above excludes nothing else)."""
    for folder, family in (("portfolio_heldout5", "vecadd_copy"), ("portfolio_rowwise_heldout5", "rowwise"),
                           ("portfolio_tmacopy_heldout5", "tmacopy"), ("portfolio_attention_heldout5", "attention")):
        if (H100 / folder / "portfolio.jsonl").exists():
            assert {r["name"] for r in _records(folder)} <= {p["name"] for p in _plan(family)}


def test_vecadd_copy_sizes_are_new_per_bin_from_l2_resident_to_the_cap():
    new = pf.HELDOUT5_SIZES
    old = pf.SIZES + pf.HELDOUT2_SIZES + pf.HELDOUT3_SIZES + pf.HELDOUT4_SIZES
    assert pf.drawn_sizes(pf.SEED5, pf.HELDOUT5_BINS, frozenset(old)) == new
    assert not set(new) & set(old)
    assert not set(new) & {r["params"].get("n_floats") for r in _other_records()}
    for n, (lo, hi) in zip(new, pf.HELDOUT5_BINS, strict=True):
        assert lo <= n <= hi and n % 1024 == 0 and n & (n - 1), n
    assert 12 * new[0] <= 0.8 * L2  # vecadd's three arrays L2-resident
    assert 8 * new[1] <= 0.8 * L2  # copy's two arrays L2-resident at two sizes (its worst class)
    # capped (each point is simulated at two clocks in the comparison): 1..1.5 GiB per array at most
    assert 1 << 30 <= 4 * max(new) <= 1.5 * (1 << 30) and 4 * sorted(new)[-2] <= 768 << 20


def test_rowwise_shapes_are_new_valid_and_cover_every_cell_and_1024_columns():
    shapes = rw.heldout5_shapes()
    assert len(shapes) == len(rw.COL_BINS4) * len(rw.BYTE_BINS5) == 18
    measured = {(r["params"]["rows"], r["params"]["cols"]) for r in _other_records()
                if r["params"].get("family") in rw.FAMILIES}
    assert len(measured) >= 45
    assert not set(shapes) & (measured | set(rw.grid_shapes()) | set(rw.drawn_shapes()) | set(rw.heldout4_shapes()))
    assert not set(shapes) & rw.DEV_SHAPES
    for i, (rows, cols) in enumerate(shapes):
        (clo, chi), (blo, bhi) = rw.COL_BINS4[i // len(rw.BYTE_BINS5)], rw.BYTE_BINS5[i % len(rw.BYTE_BINS5)]
        assert clo <= cols <= chi and cols % 128 == 0 and (cols & (cols - 1) or clo == chi), (rows, cols)
        assert rows % 8 == 0 and 0.9 * blo <= 4 * rows * cols <= 1.1 * bhi, (rows, cols)
        for fam in rw.FAMILIES:
            for mapping in rw.MAPPINGS:
                RowParams(family=fam, rows=rows, cols=cols, mapping=mapping)  # the IR twin's contract
    c1024 = sorted(r for r, c in shapes if c == 1024)
    # one warp per row of 1024 columns, heldout4's worst class, at 20K..200K rows (and one small)
    assert len(c1024) == 3 and all(20_000 <= r <= 200_000 for r in c1024[1:])
    pts = rw.points("rowwise", "heldout5")
    assert min(p["bytes_moved"] for p in pts) <= 0.5 * L2
    assert 256 << 20 <= max(p["bytes_per_array"] for p in pts) <= 512 << 20  # capped


def test_tmacopy_points_are_valid_spread_and_persistent_ones_use_small_boxes():
    pts = ptc.points("heldout5")
    assert ptc.heldout5_points() == ptc.PLANS["heldout5"]
    assert not set(ptc.PLANS["heldout5"]) & (set(ptc.POINTS) | set(ptc.HELDOUT3_POINTS) | set(ptc.PLANS["heldout4"]))
    for p in pts:
        ctas = None if p["ctas_per_sm"] is None else p["ctas_per_sm"] * 132
        t = TmaCopyParams(dtype=p["dtype"], rows=p["rows"], cols=p["cols"], box_rows=p["box_rows"],
                          box_cols=p["box_cols"], swizzle=p["swizzle"], stages=p["stages"], ctas=ctas)
        assert t.stage_bytes == p["stage_bytes"] and t.num_ctas == p["grid_132sm"] and t.tiles <= ptc.TILES_MAX4
        if p["ctas_per_sm"]:
            assert p["ctas_per_sm"] * t.smem_bytes <= 228 << 10  # the persistent CTAs fit one SM
            assert p["box_rows"] <= 64 and p["box_cols"] * ptc.ESIZE[p["dtype"]] <= 64  # small boxes
    assert {p["swizzle"] for p in pts} == {"none", "32B", "64B", "128B"}
    assert {p["stages"] for p in pts} == set(range(1, 9))
    assert [p["ctas_per_sm"] for p in pts].count(None) == 12
    assert {p["ctas_per_sm"] for p in pts} == {None, 1, 2, 3, 4}
    assert {p["dtype"] for p in pts} == {"f16", "f32"}
    per = [p for p in pts if p["ctas_per_sm"]]
    assert {p["swizzle"] for p in per} == {"none", "32B", "64B", "128B"} and len({p["stages"] for p in per}) >= 6
    assert min(p["bytes_moved"] for p in pts) <= 0.5 * L2
    assert 256 << 20 <= max(p["bytes_per_array"] for p in pts) <= 1.1 * (512 << 20)  # capped


def test_attention_points_are_valid_and_cover_the_knobs():
    pts = pat.points("heldout5")
    assert pat.heldout5_points() == pat.PLANS["heldout5"]
    assert not set(pat.PLANS["heldout5"]) & (set(pat.POINTS) | set(pat.PLANS["heldout4"]))
    for j, p in enumerate(pts):
        pat.params(p)  # AttnParams accepts it
        assert p["q_tiles"] * p["seq"] // p["kv_block"] <= pat.STEPS_MAX
        assert p["stages"] == min(1 + (j // 4 + j) % 4,
                                  AttnParams(seq=p["seq"], head_dim=p["head_dim"], kv_block=p["kv_block"],
                                             q_tiles=p["q_tiles"], stages=1).max_stages_that_fit)
    assert {(p["head_dim"], p["kv_block"]) for p in pts} == {(64, 64), (64, 128), (128, 64), (128, 128)}
    assert sum((p["head_dim"], p["kv_block"]) == (128, 128) for p in pts) == 4
    assert {p["stages"] for p in pts} == {1, 2, 3, 4}
    assert min(p["q_tiles"] for p in pts) < 132 < max(p["q_tiles"] for p in pts)


@pytest.mark.parametrize("p", pat.points("heldout5"), ids=lambda p: p["name"])
def test_attention_point_is_launched_as_the_ir_twin(p):
    ak = build_attention(pat.params(p))
    assert ak.grid == (p["q_tiles"], 1, 1) and ak.block == (pat.THREADS, 1, 1)
    assert ak.dynamic_smem == p["dynamic_smem"] and p["c"] == f32(ak.params.softmax_scale * LOG2E)


def test_earlier_plans_are_unchanged():
    """Every earlier plan is still the one its records measured (heldout4's included)."""
    for family, folder in (("attention", "portfolio_attention_heldout4"), ("tmacopy", "portfolio_tmacopy_heldout4"),
                           ("rowwise", "portfolio_rowwise_heldout4")):
        assert [p["name"] for p in _plan(family, "heldout4")] == [r["name"] for r in _records(folder)], folder
    assert sorted(p["name"] for p in pf.points("all", "heldout4")) == sorted(r["name"] for r in _records("portfolio_heldout4"))
    assert [p["name"] for p in pat.points("heldout1")] == [r["name"] for r in _records("portfolio_attention")]
    assert [p["name"] for p in ptc.points("heldout3")] == [r["name"] for r in _records("portfolio_tmacopy_heldout3")]
    assert [p["name"] for p in rw.points("rowwise", "heldout3")] == [r["name"] for r in _records("portfolio_rowwise_heldout3")]


# ----------------------------------------------------------------------------- runner and compare
def test_runner_plans_the_four_runs_within_one_device_call(capsys, monkeypatch):
    monkeypatch.setenv(pf.SET_ENV, "heldout1")  # recorded, so main's own os.environ write is undone
    total = 0.0
    for family, n in COUNTS.items():
        assert portfolio_runs.main(["--set", "heldout5", "--family", family, "--plan"]) == 0
        out = capsys.readouterr().out.strip().splitlines()
        planned = float(out[-1].split()[1])
        assert planned <= 120 and len(out) - 1 == n
        total += planned
    # heldout4's four runs planned 231 s and fit one device call (600 s) with heldout19's
    assert total <= 260
    monkeypatch.setenv(pf.SET_ENV, "heldout5")  # what the child processes see
    for family in COUNTS:
        assert {p["params"]["set"] for p in portfolio_runs.plan(family)} == {"heldout5"}


def test_compare_refuses_another_sets_records(tmp_path, capsys):
    for rec in (_records("portfolio_heldout4")[0], _records("portfolio_attention_heldout4")[0]):
        (tmp_path / "portfolio.jsonl").write_text(json.dumps(rec) + "\n")
        out = tmp_path / "r"
        assert pc.main(["--set", "heldout5", "--records", str(tmp_path), "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and rec["params"]["name"] in err[0] and not out.exists()
    assert "set heldout5" in pc.markdown([], {}, "f" * 64, "", "heldout5").splitlines()[0]


def test_readme_lists_the_fifth_sets_once_their_reports_exist(tmp_path, monkeypatch):
    monkeypatch.setattr(dn, "REPORT_DIR", tmp_path)
    assert dn.heldout() == "No held-out set has been compared yet.\n"
    st = {"n": 72, "mape_pct": 7.5, "mean_pct": 1.0, "worst_pct": 21.0, "within_10pct": 50}
    (tmp_path / "portfolio_rowwise_heldout5").mkdir()
    (tmp_path / "portfolio_rowwise_heldout5" / "portfolio.json").write_text(json.dumps(
        {"model_fingerprint": "c" * 64, "summary": {"all, at the predicted clock": st}}))
    text = dn.heldout()
    assert text.count("\n") == 1 and "`validation/reports/h100/portfolio_rowwise_heldout5/`" in text
    assert "72 row reduction / row softmax points of the fifth set: time MAPE 7.5%" in text
