"""Pictures (matplotlib, Agg backend): pipeline timelines, sweep curves, simulated vs measured.

`plot_timeline` reads the generic Chrome / Perfetto trace-event format (a list of event dicts, or
the `{"traceEvents": [...]}` object that `hopsim.trace.Trace.to_json()` writes):

    {"ph": "M", "name": "thread_name", "pid": 0, "tid": 12, "args": {"name": "tensor cores"}}
    {"ph": "X", "name": "wgmma k3", "pid": 0, "tid": 12, "ts": 1.71, "dur": 0.36,
     "cat": "...", "args": {"start_cycle": 3000, "cycles": 640}}
    "B"/"E" pairs and async "b"/"e" pairs (same id) are turned into boxes too.

One lane per (pid, tid) track, named by its thread_name; overlapping boxes in a lane (several TMA
boxes in flight) are stacked in sub-rows. Boxes are coloured by what they are, guessed from the
event and lane names: TMA issue, TMA in flight, tensor cores, mbarrier wait, epilogue, smem port,
L2/HBM, other. Time is in SM cycles (`args.start_cycle`/`args.cycles` when present, else
`ts * clock_mhz`, the trace being in microseconds at the model clock).
"""

from __future__ import annotations

import functools
import math
import os
import pathlib
from collections import defaultdict
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from hopsim.cache import use_for_matplotlib
from hopsim.sweep import default_point


def pyplot():
    """matplotlib.pyplot (Agg backend), imported when the first picture is drawn: the CLI, which
    imports this module, starts about 0.5 s faster without it. Its config and font cache go under
    $HOPSIM_CACHE (hopsim/cache.py)."""
    use_for_matplotlib()
    import matplotlib  # noqa: PLC0415  (optional heavy dependency, loaded on first use)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    return plt

TIMELINE_SMS = frozenset({0})
"""The SMs `plot_timeline` draws by default (the first SM, whose first CTA `first_cta_windows`
shows): a run traced only for the picture records only these (timing/runner.py `trace_sms`)."""

# What a box is -> colour; order = legend order.
KINDS = {
    "TMA issue": "#1f77b4",
    "TMA in flight": "#9ecae1",
    "tensor cores": "#2ca02c",
    "mbarrier wait": "#d62728",
    "wgmma wait": "#bcbd22",
    "sync wait": "#e377c2",
    "epilogue": "#9467bd",
    "smem port": "#ff7f0e",
    "L2/HBM": "#8c564b",
    "warp issue": "#7f7f7f",
    "other": "#c7c7c7",
}

_RULES = (  # (kind, any of these words); the first rule that matches wins
    ("wgmma wait", ("wait wgmma", "wait_group")),
    ("sync wait", ("rendezvous", "bar.sync", "barrier.sync", "wait bar")),
    ("mbarrier wait", ("wait", "try_wait", "test_wait", "stall", "blocked", "sleep")),
    ("epilogue", ("epilogue", "stmatrix", "st.global", "st.shared", "store c", "writeback", "cvt.rn",
                  "bulk_group", "global.shared::cta")),
    ("TMA in flight", ("fill", "flight", "land", "tma load", "tma box", "bytes")),
    ("TMA issue", ("tma", "cp.async.bulk", "utmaldg")),
    ("tensor cores", ("wgmma", "tensor", "mma", "gmma")),
    ("smem port", ("smem", "shared")),
    ("L2/HBM", ("l2", "hbm", "dram", "miss", "hit")),
    ("warp issue", ("issue", "smsp", "warp", "alu", "mbarrier", "instruction")),
)
_ISSUE_ONLY = ("mbarrier.", "fence", "elect", "setmaxnreg")  # instructions that are issue, not units


@functools.lru_cache(maxsize=1 << 14)
def classify(name: str, lane: str = "", cat: str = "") -> str:
    """The kind of a box from its event name and category, else from its lane's name.

    A box on a warp lane named by an instruction (`@%p1 mbarrier.arrive...`, `fence...`) is warp
    issue; waits are split by what they wait on (mbarrier phase, wgmma group, bar.sync or the
    warpgroup rendezvous); `cvt`/`st.global`/`stmatrix` after the mainloop are the epilogue.
    (Cached: a timeline repeats the same few thousand names.)"""
    text = f"{name} {cat}".lower()
    if "warp" in lane.lower() and "cp.async.bulk" in text:
        return "epilogue" if "global.shared::cta" in text else "TMA issue"
    if "warp" in lane.lower() and any(text.lstrip("@%!p0123456789 ").startswith(w) for w in _ISSUE_ONLY):
        return "warp issue"
    for t in (text, lane.lower()):
        for kind, words in _RULES:
            if any(w in t for w in words):
                if kind == "TMA in flight" and "tma" not in t and "fill" not in t:
                    continue  # "bytes"/"flight" alone do not make a TMA box
                if kind == "L2/HBM" and t is text and not any(w in lane.lower() for w in ("l2", "hbm", "link")) \
                        and any(w in t for w in ("miss", "hit")) and not any(w in t for w in ("l2", "hbm", "dram")):
                    continue  # "miss"/"hit" name L2 only on a memory lane
                return kind
    return "other"


def _events(trace: Any) -> tuple[list[dict], float | None]:
    if hasattr(trace, "to_json"):  # a hopsim.trace.Trace
        trace = trace.to_json()
    if isinstance(trace, dict):
        clock = (trace.get("otherData") or {}).get("clock_mhz")
        return list(trace.get("traceEvents") or []), clock
    return list(trace), None


def _cycles(ev: dict, clock_mhz: float | None) -> tuple[float, float]:
    """(start, duration) in cycles."""
    a = ev.get("args") or {}
    if "start_cycle" in a and "cycles" in a:
        return float(a["start_cycle"]), float(a["cycles"])
    scale = clock_mhz or 1.0
    return float(ev.get("ts", 0.0)) * scale, float(ev.get("dur", 0.0)) * scale


class TimelineBoxes(NamedTuple):
    """What `timeline_boxes` reads from a trace (computed once, passed on to the drawing)."""

    boxes: list   # (pid, tid, start_cycle, dur_cycles, name, cat)
    names: dict   # {(pid, tid): lane name, (pid, None): process name}


def timeline_boxes(trace: Any, clock_mhz: float | None = None) -> TimelineBoxes:
    """Boxes `(pid, tid, start_cycle, dur_cycles, name, cat)` and lane names `{(pid, tid): name}`
    from trace events ("X", "B"/"E", async "b"/"e"); process names under `(pid, None)`. A
    `TimelineBoxes` is returned as it is (a trace read once for `first_cta_windows` and
    `plot_timeline`, the same clock)."""
    if isinstance(trace, TimelineBoxes):
        return trace
    events, clock = _events(trace)
    clock = clock_mhz or clock
    names: dict = {}
    boxes: list[tuple] = []
    open_b: dict = defaultdict(list)
    open_async: dict = {}
    add = boxes.append
    for ev in events:
        ph, pid, tid = ev.get("ph"), ev.get("pid", 0), ev.get("tid", 0)
        if ph == "X":  # the common event (_cycles inlined for hopsim's own: cycles in args)
            a = ev.get("args") or {}
            if "start_cycle" in a and "cycles" in a:
                add((pid, tid, float(a["start_cycle"]), float(a["cycles"]), ev.get("name", ""), ev.get("cat", "")))
            else:
                s, d = _cycles(ev, clock)
                add((pid, tid, s, d, ev.get("name", ""), ev.get("cat", "")))
        elif ph == "M":
            label = (ev.get("args") or {}).get("name")
            if ev.get("name") == "thread_name":
                names[(pid, tid)] = label
            elif ev.get("name") == "process_name":
                names[(pid, None)] = label
        elif ph == "B":
            open_b[(pid, tid)].append(ev)
        elif ph == "E" and open_b[(pid, tid)]:
            b = open_b[(pid, tid)].pop()
            s, _ = _cycles(b, clock)
            e, _ = _cycles(ev, clock)
            boxes.append((pid, tid, s, e - s, b.get("name", ""), b.get("cat", "")))
        elif ph == "b":
            open_async[(ev.get("cat"), ev.get("id"), ev.get("name"))] = ev
        elif ph == "e":
            b = open_async.pop((ev.get("cat"), ev.get("id"), ev.get("name")), None)
            if b is not None:
                s, _ = _cycles(b, clock)
                e, _ = _cycles(ev, clock)
                lane = b.get("tid", f"{b.get('cat') or b.get('name')} (async)")
                boxes.append((pid, lane, s, e - s, b.get("name", ""), b.get("cat", "")))
    return TimelineBoxes(boxes, names)


def _stack(spans: list[tuple[float, float]], cap: int) -> tuple[list[int], bool]:
    """Sub-row of each (start, end) so that overlapping spans do not hide each other (greedy
    interval partitioning; beyond `cap` rows they wrap around: then the flag is True)."""
    order = sorted(range(len(spans)), key=lambda i: spans[i][0])
    ends: list[float] = []
    row = [0] * len(spans)
    for i in order:
        s, e = spans[i]
        for r, end in enumerate(ends):
            if end <= s:
                ends[r] = e
                row[i] = r
                break
        else:
            ends.append(e)
            row[i] = len(ends) - 1
    return [r % cap for r in row], len(ends) > cap


def _fit_label(name: str, lane: str, chars: int) -> str:
    """The longest of (name, name without the words its lane already says, the part in
    parentheses) that fits in `chars` characters; '' if none does (never a word cut in half)."""
    name = str(name)
    short = name
    for w in str(lane).split():
        short = short.replace(w, "")
    cands = [name, " ".join(short.split())]
    if "(" in name and ")" in name:
        cands.append(name[name.index("("): name.rindex(")") + 1])
    for c in cands:
        if c and len(c) <= chars:
            return c
    return ""


def first_cta_windows(trace: Any, head_cycles: float, tail_cycles: float = 2500.0,
                      clock_mhz: float | None = None) -> list[tuple[float, float]]:
    """Windows that show the first CTA of SM 0 readably: its first `head_cycles` (prologue, the
    pipeline filling, a few k-tiles of steady state) and, if its epilogue lies beyond that, the
    last `tail_cycles` before the end of its epilogue (the last k-tiles, the epilogue)."""
    boxes, names = timeline_boxes(trace, clock_mhz)
    pid0 = min((x[0] for x in boxes), default=0)
    boxes = [b for b in boxes if b[0] == pid0 and b[3] > 0]
    if not boxes:
        return [(0.0, max(head_cycles, 1.0))]
    t0 = min(b[2] for b in boxes)
    warp_lane = {k: "warp" in str(names.get(k, "")).lower() for k in {(b[0], b[1]) for b in boxes}}
    warp = sorted((b for b in boxes if warp_lane[(b[0], b[1])]), key=lambda b: b[2])
    end = None
    in_epi = False
    for b in warp:
        kind = classify(b[4], names.get((b[0], b[1]), ""), b[5])
        if kind == "epilogue":
            in_epi, end = True, b[2] + b[3]
        elif in_epi and kind in ("TMA issue", "tensor cores", "mbarrier wait", "wgmma wait"):
            break  # the next CTA on this slot has begun
        elif in_epi and kind == "warp issue" and any(w in str(b[4]) for w in ("mbarrier.init", "fence.mbarrier")):
            break
    head = (t0, t0 + head_cycles)
    if end is None or end <= head[1] + tail_cycles * 0.25:
        return [(t0, max(head[1], end or head[1]))]
    return [head, (max(head[1], end - tail_cycles), end + 0.03 * tail_cycles)]


def plot_timeline(trace_events: Any, path: str | os.PathLike, title: str = "timeline",
                  max_cycles: float | None = None, *, pids: Sequence[int] | str | None = None,
                  clock_mhz: float | None = None, max_subrows: int = 8,
                  label_boxes: bool = True,
                  windows: Sequence[tuple[float, float]] | None = None,
                  total_cycles: float | None = None) -> pathlib.Path:
    """A lane per unit / warp track; boxes coloured by kind; x = SM cycles.

    `max_cycles` clips to the first N cycles (a few k-tiles stay readable). `windows`: several
    (start, end) cycle ranges drawn side by side on a broken x axis (e.g. `first_cta_windows`:
    the pipeline filling and, further on, the last k-tiles and the epilogue). `pids`: which
    processes (SMs) to draw: default the first one that has boxes, "all" for every one.
    `total_cycles`: the run's cycle count (`SimResult.cycles`, the report's Elapsed Cycles); the
    title's "of N" is that number and a dashed line marks it. Without it the title counts from the
    first to the last drawn box, which is not the kernel's duration: the trace starts after the
    CTA launch and the L2 link may still drain stores after the last warp exits.
    The title is also stored in the PNG's "Title" metadata.
    """
    boxes, names = timeline_boxes(trace_events, clock_mhz)
    if pids is None:
        first = min((b[0] for b in boxes), default=None)
        keep = {first}
    elif pids == "all":
        keep = {b[0] for b in boxes}
    else:
        keep = set(pids)
    boxes = [b for b in boxes if b[0] in keep and b[3] > 0]  # zero-length slices draw nothing
    t0 = min((b[2] for b in boxes), default=0.0)
    t_end = max((b[2] + b[3] for b in boxes), default=1.0)
    if windows:
        wins = [(float(lo), float(hi)) for lo, hi in windows if hi > lo]
    else:
        wins = [(t0, min(t_end, t0 + max_cycles) if max_cycles else t_end)]
    boxes = _in_windows(boxes, wins)
    lanes = sorted({(b[0], b[1]) for b in boxes}, key=lambda k: (k[0], str(type(k[1])), k[1]))
    multi = len({p for p, _ in lanes}) > 1

    def lane_name(key):
        n = names.get(key) or f"tid {key[1]}"
        return f"{names.get((key[0], None)) or f'pid {key[0]}'}: {n}" if multi else n

    # sub-rows per lane
    by_lane: dict = defaultdict(list)
    for b in boxes:
        by_lane[(b[0], b[1])].append(b)
    layout, y, yticks = {}, 0.0, []
    for key in lanes:
        bs = by_lane[key]
        rows, wrapped = _stack([(b[2], b[2] + b[3]) for b in bs], max_subrows)
        n = max(rows) + 1
        layout[key] = (y, n, rows, wrapped)
        yticks.append((y + n / 2, lane_name(key)))
        y += n + 0.6
    height = max(2.5, 0.8 + 0.28 * y)
    spans = [hi - lo for lo, hi in wins]
    plt = pyplot()
    from matplotlib.colors import to_rgba  # noqa: PLC0415  (loaded by pyplot above)

    fig, axes = plt.subplots(1, len(wins), figsize=(14, height), sharey=True, squeeze=False,
                             gridspec_kw={"width_ratios": spans, "wspace": 0.03})
    axes = axes[0]
    used = set()
    total = sum(spans)
    for ax, (lo, hi) in zip(axes, wins):
        span = max(hi - lo, 1.0)
        width_chars = 150 * span / total  # characters that fit across this panel
        batch: dict = defaultdict(list)  # rectangles by (row, kind, style), in first-seen order
        for key in lanes:
            y0, n, rows, wrapped = layout[key]
            lane = names.get(key) or ""
            for b, r in zip(by_lane[key], rows):
                if not (b[2] < hi and b[2] + b[3] > lo):
                    continue
                kind = classify(b[4], lane, b[5])
                used.add(kind)
                start, end = max(b[2], lo), min(b[2] + b[3], hi)
                dur = end - start
                thin = dur < span * 0.004  # a few pixels: an outline would paint it black
                x1, y1 = start + max(dur, span * 1e-4), y0 + r + 0.08
                batch[(y0 + r, kind, thin, wrapped)].append(((start, y1), (start, y1 + 0.84), (x1, y1 + 0.84), (x1, y1)))
                if label_boxes and not wrapped and b[4]:
                    text = _fit_label(b[4], lane, int(dur / span * width_chars))
                    if text:
                        ax.text(start + dur / 2, y0 + r + 0.5, text, ha="center", va="center",
                                fontsize=6.5, clip_on=True)
        if batch:
            ax.add_collection(_rectangles(batch, to_rgba), autolim=False)
        ax.set_xlim(lo, hi)
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(axis="x", labelsize=8)
    for ax in axes[1:]:
        ax.tick_params(axis="y", left=False)
        for side in ("left",):
            ax.spines[side].set_linestyle((0, (4, 3)))
    axes[0].set_yticks([t for t, _ in yticks], [n for _, n in yticks], fontsize=8)
    axes[0].set_ylim(y + 0.2, -0.8)  # first lane on top
    clip = _clip_text(wins, t0, t_end, total_cycles)
    if total_cycles is not None:
        for ax, (lo, hi) in zip(axes, wins):
            if lo <= total_cycles <= hi:
                ax.axvline(total_cycles, color="black", linestyle="--", linewidth=0.8)
                ax.text(total_cycles, -0.7, " kernel end", fontsize=7, va="bottom")
    # margins in inches, whatever the height: title, legend, axes, x label
    fig.subplots_adjust(left=0.11, right=0.99, top=1 - 0.75 / height, bottom=0.55 / height)
    fig.suptitle(title + clip, fontsize=11, y=1 - 0.12 / height, va="top")
    fig.supxlabel("SM cycles" + ("  (broken axis: the gap between panels is not drawn)"
                                 if len(wins) > 1 else ""), fontsize=10, y=0.08 / height, va="bottom")
    from matplotlib.patches import Patch  # noqa: PLC0415  (loaded by pyplot above)

    handles = [Patch(facecolor=c, edgecolor="black", linewidth=0.3, label=k)
               for k, c in KINDS.items() if k in used]
    if handles:
        fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 1 - 0.38 / height),
                   ncol=len(handles), fontsize=8, frameon=False)
    if not boxes:
        axes[0].text(0.5, 0.5, "no trace events", transform=axes[0].transAxes, ha="center")
    return _save(fig, path, tight=False, title=title + clip)


def _in_windows(boxes: list, wins: list[tuple[float, float]]) -> list:
    """The boxes that overlap any window (open intervals), in their order."""
    out = []
    for b in boxes:
        start = b[2]
        end = start + b[3]
        for lo, hi in wins:
            if start < hi and end > lo:
                out.append(b)
                break
    return out


def _rectangles(batch: dict, to_rgba):
    """One PolyCollection of every box of a panel, painted in the order (and with the face, edge
    and alpha) that one `ax.broken_barh` per (row, kind, style) group would paint them: a
    collection per group cost ~2 ms each, 10^2-10^3 groups per picture."""
    from matplotlib.collections import PolyCollection  # noqa: PLC0415  (loaded by pyplot)

    verts, faces, edges, widths = [], [], [], []
    for (_row, kind, thin, wrapped), rects in batch.items():
        alpha = 0.6 if wrapped else 1.0
        face, edge = to_rgba(KINDS[kind], alpha), (0.0, 0.0, 0.0, 0.0 if thin else alpha)
        verts += rects
        faces += [face] * len(rects)
        edges += [edge] * len(rects)
        widths += [0.0 if thin else 0.3] * len(rects)
    return PolyCollection(np.array(verts), facecolors=faces, edgecolors=edges, linewidths=widths)


def _clip_text(wins: list[tuple[float, float]], t0: float, t_end: float,
               total: float | None) -> str:
    """The title's note on what part of the run is drawn: against `total` (the run's cycles) when
    given, else against the span of the drawn boxes."""
    if total is not None:
        if len(wins) > 1:
            shown = sum(hi - lo for lo, hi in wins)
            return f" ({shown:,.0f} of {total:,.0f} cycles, in {len(wins)} windows)"
        lo, hi = wins[0]
        return f" (cycles {lo:,.0f}-{hi:,.0f} of {total:,.0f})" if hi < total or lo > 0 else \
            f" ({total:,.0f} cycles)"
    if len(wins) > 1:
        shown = sum(hi - lo for lo, hi in wins)
        return f" ({shown:,.0f} of {t_end - t0:,.0f} traced cycles, in {len(wins)} windows)"
    if wins[0][1] < t_end or wins[0][0] > t0:
        return f" (cycles {wins[0][0]:,.0f}-{wins[0][1]:,.0f} of traced {t0:,.0f}-{t_end:,.0f})"
    return ""


def _save(fig, path, tight: bool = True, title: str | None = None) -> pathlib.Path:
    p = pathlib.Path(path)
    if tight:
        fig.tight_layout()
    fig.savefig(p, dpi=130, bbox_inches="tight", metadata={"Title": title} if title else None)
    pyplot().close(fig)
    return p


# --------------------------------------------------------------------------- sweeps


def _key_value(row: dict, knob: str) -> Any:
    """A knob's value in a row; "tile" is composed from bm, bn, bk when absent."""
    knob = knob.replace("-", "_")
    if knob in ("tma_box_rows",):
        knob = "box_rows"
    if knob == "tile" and "tile" not in row and "bm" in row:
        return f"{row['bm']}x{row['bn']}x{row['bk']}"
    return row.get(knob)


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def default_params(rows: Iterable[dict]) -> list[str]:
    """The parameter columns of sweep rows: the knobs of hopsim.sweep that the rows have."""
    keys = set(default_point()) | {"loop"}  # loop: a knob only in the points that ask for one
    seen: dict = {}
    for r in rows:
        for k in r:
            if k in keys:
                seen.setdefault(k, None)
    return list(seen)


def series_of(rows: Sequence[dict], knob: str, params: Sequence[str] | None = None) -> dict:
    """Rows grouped into curves: key = the other parameters that vary (as a tuple of (name,
    value)), value = rows sorted by the knob."""
    params = list(params) if params is not None else default_params(rows)
    kn = knob.replace("-", "_")
    skip = {kn, "box_rows" if kn == "tma_box_rows" else kn}
    if kn == "tile":
        skip |= {"bm", "bn", "bk"}
    vary = [p for p in params if p not in skip and len({str(r.get(p)) for r in rows}) > 1]
    groups: dict = defaultdict(list)
    for r in rows:
        groups[tuple((p, r.get(p)) for p in vary)].append(r)
    return dict(groups)


def _x_positions(values: list) -> tuple[dict, bool]:
    nums = [_num(v) for v in values]
    if all(n is not None for n in nums):
        return {v: _num(v) for v in values}, True
    order = sorted(set(map(str, values)), key=lambda s: (_num(s) is None, _num(s) or 0, s))
    return {s: i for i, s in enumerate(order)}, False


def plot_sweep(rows: Sequence[dict], knob: str, path: str | os.PathLike, y: str = "time_ms",
               compare: Sequence[dict] | None = None, *, title: str | None = None,
               params: Sequence[str] | None = None, compare_label: str = "H100") -> pathlib.Path:
    """`y` against the swept `knob`, one curve per combination of the other varying parameters;
    `compare` rows (e.g. H100 measurements, same parameter columns) dashed on the same axes and
    in the same colour as the simulated curve they match."""
    rows = [r for r in rows if _num(r.get(y)) is not None and not r.get("error")]
    compare = [r for r in (compare or []) if _num(r.get(y)) is not None]
    allx = [_key_value(r, knob) for r in list(rows) + list(compare)]
    pos, numeric = _x_positions([v if v is not None else "-" for v in allx])

    def xs(rs):
        return [pos[_key_value(r, knob)] if numeric else pos[str(_key_value(r, knob))] for r in rs]

    groups = series_of(rows, knob, params)
    hw_groups = series_of(compare, knob, params or default_params(rows)) if compare else {}
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    keys = list(groups) + [k for k in hw_groups if k not in groups]
    for i, key in enumerate(keys):
        c = colors[i % len(colors)]
        label = ", ".join(f"{k}={v}" for k, v in key)
        for rs, style, suffix in ((groups.get(key, []), "-o", "simulated"),
                                  (hw_groups.get(key, []), "--x", f"{compare_label} measured")):
            if not rs:
                continue
            pts = sorted(zip(xs(rs), [float(r[y]) for r in rs]))
            lab = (f"{label} ({suffix})" if label else suffix) if compare else (label or suffix)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=c, label=lab,
                    markersize=6 if suffix == "sim" else 8)
    if not numeric:
        ax.set_xticks(list(pos.values()), list(pos.keys()))
    elif pos and all(float(v).is_integer() for v in pos.values()) and len(pos) <= 16:
        ax.set_xticks(sorted(set(pos.values())))
    ax.set_xlabel(knob)
    ax.set_ylabel({"time_ms": "time (ms)", "tflops": "TFLOP/s", "cycles": "SM cycles"}.get(y, y))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(title or f"{y} against {knob}" + (f" (sim solid, {compare_label} dashed)"
                                                     if compare else ""))
    if keys:
        ax.legend(fontsize=7, loc="best")
    return _save(fig, path, title=ax.get_title())


# --------------------------------------------------------------------------- sim vs hardware


def plot_compare(sim: Sequence[float], hw: Sequence[float], path: str | os.PathLike, *,
                 labels: Sequence[str] | None = None, title: str = "simulated vs measured",
                 unit: str = "ms", groups: Sequence[str] | None = None,
                 band: float = 0.10, basis: str | None = None) -> pathlib.Path:
    """Scatter of simulated against measured with the y = x line and a +-`band` wedge;
    log axes when the values span more than a decade, with compact tick labels (10k, 2M).
    `groups` colours the points; the three worst points beyond the band are numbered and
    named under the axes (`labels`); `basis` (e.g. the clock basis) is printed under the title."""
    s = np.asarray(sim, dtype=float)
    h = np.asarray(hw, dtype=float)
    ok = np.isfinite(s) & np.isfinite(h) & (h > 0) & (s > 0)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 7))
    notes = []
    if ok.any():
        lo, hi = min(s[ok].min(), h[ok].min()), max(s[ok].max(), h[ok].max())
        log = hi / lo > 10
        pad = (hi / lo) ** 0.05 if log else 0.05 * (hi - lo or hi)
        lo, hi = (lo / pad, hi * pad) if log else (max(0.0, lo - pad), hi + pad)
        line = np.geomspace(lo, hi, 50) if log else np.linspace(lo, hi, 50)
        ax.plot(line, line, "k-", lw=1, label="y = x")
        ax.fill_between(line, line * (1 - band), line * (1 + band), color="0.85",
                        label=f"within {band:.0%}")
        gs = list(groups) if groups is not None else ["configurations"] * len(s)
        for g in dict.fromkeys(gs):
            m = ok & np.array([x == g for x in gs])
            ax.scatter(h[m], s[m], s=18, label=f"{g} ({int(m.sum())})", zorder=3, alpha=0.8)
        if labels is not None:
            err = s / h - 1
            for n, i in enumerate(np.argsort(-np.where(ok, np.abs(err), -1))[:3], 1):
                if ok[i] and abs(err[i]) > band:
                    ax.annotate(str(n), (h[i], s[i]), fontsize=8, fontweight="bold",
                                xytext=(5, -10), textcoords="offset points")
                    notes.append(f"{n}: {labels[i]} ({100 * err[i]:+.0f}%)")
        if log:
            from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: PLC0415

            ax.set_xscale("log")
            ax.set_yscale("log")
            for axis in (ax.xaxis, ax.yaxis):
                axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
                axis.set_major_formatter(FuncFormatter(lambda v, _: _compact(v)))
                axis.set_minor_formatter(NullFormatter())
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        mape = float(np.mean(np.abs(s[ok] / h[ok] - 1)) * 100)
        title = f"{title}\nMAPE {mape:.1f}% over {int(ok.sum())} points"
    if basis:
        title += f"\n{basis}"
    ax.set_aspect("equal", adjustable="box")
    ax.tick_params(axis="both", labelsize=9)
    ax.tick_params(axis="x", labelrotation=45)
    ax.set_xlabel(f"measured on the H100 ({unit})")
    ax.set_ylabel(f"simulated ({unit})")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="upper left")
    if notes:
        fig.text(0.02, -0.02, "worst points:\n" + "\n".join(notes), fontsize=7, va="top",
                 ha="left", family="monospace")
    return _save(fig, path, title=title)


def _compact(v: float) -> str:
    """A tick label: 20k, 1.5M, 0.01 (no scientific notation)."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:g}{suffix}"
    return f"{v:g}"
