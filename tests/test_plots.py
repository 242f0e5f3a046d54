"""hopsim.plots: trace events -> boxes, lane stacking, kinds, and that every picture is written.

(The pictures themselves were looked at by eye with synthetic traces; these tests hold the laws.)
"""

from __future__ import annotations

import pytest

from hopsim import plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CLOCK_MHZ = 1755.0


def synthetic_trace(stages=4, ktiles=8, boxes=2, tma_lat=700, mma=420):
    """A single-warpgroup pipeline in the Chrome format hopsim.trace writes (ts in us at the
    clock, cycles in args): TMA issue/fill, tensor cores, warp waits, epilogue."""
    ev = [{"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "SM 0"}}]
    for tid, name in ((10, "TMA issue"), (11, "TMA fill"), (12, "tensor cores"), (100, "warp 0")):
        ev.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": tid, "args": {"name": name}})

    def x(tid, name, start, end):
        ev.append({"ph": "X", "pid": 0, "tid": tid, "name": name, "ts": start / CLOCK_MHZ,
                   "dur": (end - start) / CLOCK_MHZ, "args": {"start_cycle": start,
                                                             "cycles": end - start}})
    land, tc = {}, 0
    for k in range(ktiles):
        issue = 0 if k < stages else land[k - stages + 0] + mma  # refill after consume
        for b in range(boxes):
            x(10, f"tma k{k} b{b}", issue + 30 * b, issue + 30 * b + 30)
            x(11, f"k{k} b{b}", issue + 30 * b + 30, issue + 30 * b + 30 + tma_lat)
        land[k] = issue + 30 * boxes + tma_lat
    for k in range(ktiles):
        start = max(tc, land[k])
        if start > tc:
            x(100, f"wait full[{k % stages}]", tc, start)
        x(12, f"wgmma k{k}", start, start + mma)
        tc = start + mma
    x(100, "epilogue", tc, tc + 500)
    return {"traceEvents": ev, "otherData": {"clock_mhz": CLOCK_MHZ}}


@pytest.mark.parametrize("name, lane, kind", [
    ("wait full[2] phase 1", "warp 0", "mbarrier wait"),
    ("k3 box1", "TMA fill", "TMA in flight"),
    ("tma k3 A0", "TMA issue", "TMA issue"),
    ("wgmma k2", "tensor cores", "tensor cores"),
    ("epilogue store C", "warp 1", "epilogue"),
    ("L2->SM", "L2->SM link", "L2/HBM"),
    ("x", "smem port", "smem port"),
    ("issue", "SMSP0 issue", "warp issue"),
    ("zzz", "", "other"),
])
def test_classify(name, lane, kind):
    assert plots.classify(name, lane) == kind


def test_boxes_in_cycles_from_args_or_ts():
    tr = synthetic_trace()
    boxes, names = plots.timeline_boxes(tr)
    assert names[(0, 12)] == "tensor cores" and names[(0, None)] == "SM 0"
    mma = [b for b in boxes if b[1] == 12]
    assert len(mma) == 8 and all(b[3] == 420 for b in mma)
    # the same events without args: ts (us) * clock_mhz gives back cycles
    bare = [{k: v for k, v in e.items() if k != "args"} if e["ph"] == "X" else e
            for e in tr["traceEvents"]]
    boxes2, _ = plots.timeline_boxes(bare, clock_mhz=CLOCK_MHZ)
    for a, b in zip(boxes, boxes2):
        assert a[2] == pytest.approx(b[2]) and a[3] == pytest.approx(b[3])


def test_begin_end_and_async_pairs_become_boxes():
    ev = [{"ph": "B", "pid": 0, "tid": 5, "name": "wait", "ts": 10},
          {"ph": "E", "pid": 0, "tid": 5, "ts": 25},
          {"ph": "b", "pid": 0, "cat": "tma", "id": 7, "name": "box", "ts": 3},
          {"ph": "e", "pid": 0, "cat": "tma", "id": 7, "name": "box", "ts": 40}]
    boxes, _ = plots.timeline_boxes(ev)
    assert (0, 5, 10.0, 15.0, "wait", "") in boxes
    assert any(b[2] == 3.0 and b[3] == 37.0 and b[4] == "box" for b in boxes)


def test_stacking_never_overlaps_within_a_subrow():
    spans = [(0, 10), (5, 15), (12, 20), (14, 30), (16, 18), (30, 31)]
    rows, wrapped = plots._stack(spans, cap=8)
    assert not wrapped
    for i, a in enumerate(spans):
        for j, b in enumerate(spans):
            if i < j and rows[i] == rows[j]:
                assert a[1] <= b[0] or b[1] <= a[0]
    assert max(rows) + 1 == 3  # the maximum number of spans alive at once


def _is_png(path):
    data = path.read_bytes()
    return data[:8] == PNG_MAGIC and len(data) > 5000


def test_plot_timeline_writes_png(tmp_path):
    tr = synthetic_trace()
    assert _is_png(plots.plot_timeline(tr, tmp_path / "t.png", "4 stages"))
    assert _is_png(plots.plot_timeline(tr["traceEvents"], tmp_path / "c.png", "clip",
                                       max_cycles=2000))
    assert _is_png(plots.plot_timeline([], tmp_path / "e.png", "empty"))


def test_plot_sweep_and_compare_write_png(tmp_path):
    from hopsim.sweep import make_grid

    pts = make_grid({"stages": "1-6", "tma_box_rows": "8,128"}).points()
    rows = [{**p, "time_ms": 1 + 2 / p["stages"] + 8 / p["box_rows"]} for p in pts]
    hw = [{**r, "time_ms": r["time_ms"] * 1.05} for r in rows]
    groups = plots.series_of(rows, "stages")
    assert sorted(groups) == [(("box_rows", 8),), (("box_rows", 128),)]
    assert all(len(v) == 6 for v in groups.values())
    assert _is_png(plots.plot_sweep(rows, "stages", tmp_path / "s.png", compare=hw))
    assert _is_png(plots.plot_sweep(rows + [{**pts[0], "error": "x"}], "tma-box-rows",
                                    tmp_path / "r.png"))
    sim = [r["time_ms"] for r in rows]
    assert _is_png(plots.plot_compare(sim, [r["time_ms"] for r in hw], tmp_path / "c.png",
                                      labels=[str(i) for i in range(len(sim))]))
