"""The command-line surface shared by the GPU-side run scripts (micro_gmem, micro_membw,
micro_launch2, portfolio_runs): `--out`, `--budget-s`, `--plan`, optionally `--only` groups and
the hidden child-process arguments of point_runner; bad input is one line on stderr and exit 2.
No hopsim import (it runs on the device machine)."""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

HIDDEN = ("--child", "--from", "--deadline", "--prov", "--jsonl")
"""point_runner's parent -> child arguments (not shown in --help)."""


def parser(module: str, doc: str, budget_s: float, *, only: str | None = None, children: bool = False,
           plan_help: str = "print the plan and its planned time; run nothing") -> argparse.ArgumentParser:
    """`python3 -m validation.<module>` with --out, --budget-s (default `budget_s`), --only (when
    `only` is its help text), --plan and, with `children`, the hidden child arguments."""
    ap = argparse.ArgumentParser(prog=f"python3 -m validation.{module}", description=doc.splitlines()[0])
    ap.add_argument("--out", type=pathlib.Path, help="output folder (created)")
    ap.add_argument("--budget-s", type=float, default=budget_s, help="wall-time budget, seconds (> 0)")
    if only is not None:
        ap.add_argument("--only", default="", help=only)
    ap.add_argument("--plan", action="store_true", help=plan_help)
    if children:
        for hidden in HIDDEN:
            ap.add_argument(hidden, help=argparse.SUPPRESS)
    return ap


def fail(line: str) -> int:
    """Print one bad-input line on stderr; the exit status 2."""
    print(line, file=sys.stderr)
    return 2


def bad_budget(a) -> bool:
    """--budget-s must be > 0 (printed when not)."""
    if a.budget_s > 0:
        return False
    fail(f"--budget-s: {a.budget_s} is not valid; give seconds > 0")
    return True


def missing_out(a, example: str) -> bool:
    """--out is needed to run (printed when missing; `example`: e.g. "$OUT/gmem")."""
    if a.out is not None:
        return False
    fail(f"--out: missing; give the output folder (e.g. {example})")
    return True


def select(pts: list[dict], names: list[str], only: str) -> tuple[list[dict] | None, list[str], str | None]:
    """The points and group names of the comma-separated --only groups (all when empty), or
    (None, names, the error line)."""
    if not only:
        return pts, names, None
    want = [g.strip() for g in only.split(",") if g.strip()]
    bad = [g for g in want if g not in names]
    if bad or not want:
        return None, names, f"--only: unknown group {(bad or [only])[0]!r}; valid: {', '.join(names)}"
    names = [g for g in names if g in want]
    return [p for p in pts if p["group"] in names], names, None


def print_plan(pts: list[dict], names: list[str], planned_s: float, budget_s: float, noun: str = "points",
               width: int = 10) -> int:
    """Per group: its points and estimated seconds; then the planned total against the budget."""
    for g in names:
        gp_ = [p for p in pts if p["group"] == g]
        print(f"{g:<{width}} {len(gp_):4d} {noun} {sum(p['est_s'] for p in gp_):7.1f} s")
    print(f"planned {planned_s:.0f} s of {budget_s:.0f} s budget ({len(pts)} {noun})")
    return 0


def run_child(a, kind: str, pts: list[dict], run_point, health, runner) -> int:
    """Child mode (point_runner): run the points of group `a.child` from index `a.from`."""
    gpts = [p for p in pts if p["group"] == a.child]
    prov = json.loads(pathlib.Path(a.prov).read_text())
    return runner.run_child(kind, gpts, run_point, health, int(getattr(a, "from")), float(a.deadline), prov,
                            pathlib.Path(a.jsonl))
