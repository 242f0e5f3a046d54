"""The TMA box-shape power points (validation/power/tmaw.py) without a GPU: opt-in selection and
GPU time, the launch shapes (equal bytes per launch for every box shape, rows = boxes x box rows),
and bad parameters refused with one line naming the field."""

from __future__ import annotations

import pytest

from validation.power import benches, run, tmaw


def test_tmaw_points_are_opt_in_and_fit_their_budget(capsys):
    sel = [p for p in run.selectable() if p["name"].startswith("tmaw_")]
    assert [p["name"] for p in sel] == [tmaw.point_name(w, r) for w, r in tmaw.POINTS]
    assert all(p["family"] == "light_tmaw" for p in sel) and "light_tmaw" in run.FILES
    assert not any(p["family"] == "light_tmaw" for p in run.plan())     # default run unchanged
    assert run.main(["--plan", "--only", "tmaw_,idle_after", "--budget-s", "170"]) == 0
    assert "planned" in capsys.readouterr().out
    assert benches.SOURCES[tmaw.STEM].name == "micro_tma_width.cu"


@pytest.mark.parametrize("wb,r", tmaw.POINTS)
def test_launch_shapes_count_what_they_move(wb, r):
    sh = tmaw.launch_shape(wb, r)
    assert sh["box_bytes"] == wb * r and sh["w"] * 2 == wb
    assert sh["bytes"] == sh["boxes"] * sh["box_bytes"] and sh["rows"] == sh["boxes"] * r
    assert abs(sh["bytes"] - tmaw.PER_CTA_BYTES) <= sh["box_bytes"] * sh["k"]   # equal bytes per launch
    assert 2 * sh["k"] * sh["box_bytes"] <= 96 * 1024 and sh["smem"] <= 200 * 1024


def test_bad_shapes_are_refused_by_name():
    with pytest.raises(ValueError, match=r"row_bytes: 16 is not valid; give one of 32, 64, 128"):
        tmaw.check(16, 8)
    with pytest.raises(ValueError, match=r"rows: 7 is not valid"):
        tmaw.check(32, 7)
