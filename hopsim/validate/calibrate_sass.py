"""TMA issue costs from the committed SASS (validation/sass/sass.tar.gz) x the microbenchmark
records (issue 14 item 2: "an IR instruction costs what ptxas makes of it"); `calibrate.calibrate`
adds these rows when the SASS archive and microbench__tma_issue exist (else the fields keep their
defaults in h100_sxm.py).

| field | rule (SASS: construct; record: key) |
|---|---|
| sass_plain_cycles, sass_r2ur_cycles, sass_branch_cycles | least squares over the four micro_tma_issue paths (thread, warp_lane0, thread_unpredicated, warp_elect; R8: per_box_cycles, the slope over K = 1..32) of cycles per box = SASS per box by class (micro_tma_issue.sass: the timed window's instructions, slope over K) x cycles per instruction of the class |
| gemm_{single,ws}_{lane,elect}_tma_issue_cycles | the GEMM twin's copy loop (gemm_<variant>_s4[_elect] vs its _box8 configuration: SASS per extra box, by class) x the three class costs |

The held-out checks (hopsim/validate/micro_sim.py `tma_issue_sass`): the same class costs on the
R64/R128 paths of microbench__tma_issue and on microbench__tma_latency's run-time issue loop
(micro_tma.sass `tma_latency`), which the fit never reads.
"""

from __future__ import annotations

import pathlib

from hopsim.validate.sass import (GEMM_ISSUE_PAIRS, ISSUE_CLASSES, SASS_TAR, TMA_ISSUE_MODES, SassLib,
                                  box_cycles, fit_class_costs, gemm_per_box, load_sass, micro_classes)

#: the box rows whose micro_tma_issue slopes the fit reads (K = 1..32: the longest sequences)
FIT_ROWS = 8
SASS_NAME = "validation/sass/sass.tar.gz"


def class_costs(lib: SassLib, tma_issue: dict) -> dict[str, float]:
    """{class: cycles per SASS instruction}: the fit over the micro_tma_issue paths at R8."""
    rows = [(micro_classes(lib, mode), float(tma_issue["results"][f"R{FIT_ROWS},{name}"]["per_box_cycles"]))
            for mode, name in TMA_ISSUE_MODES.items()]
    return fit_class_costs(rows)


def _fmt(classes: dict[str, float]) -> str:
    return " + ".join(f"{classes[c]:.2f} {c}" for c in ISSUE_CLASSES)


def derive_sass(recs: dict[str, dict], sass_path: pathlib.Path = SASS_TAR,
                src=None) -> dict[str, tuple[float, str]]:
    """field -> (value, source); {} without the SASS archive or the tma_issue record. `src(recs,
    name, what)` formats a record's source line (calibrate._src)."""
    if "tma_issue" not in recs or not pathlib.Path(sass_path).is_file():
        return {}
    lib = load_sass(sass_path)
    costs = class_costs(lib, recs["tma_issue"])
    per_mode = "; ".join(f"{name} {_fmt(micro_classes(lib, m))}" for m, name in TMA_ISSUE_MODES.items())
    fit = (f"least squares of R{FIT_ROWS} per_box_cycles over the 4 issue paths = SASS per box by class "
           f"({SASS_NAME} micro_tma_issue.sass, timed window, slope over K: {per_mode}) x cycles per class")
    out: dict[str, tuple[float, str]] = {}
    for c in ISSUE_CLASSES:
        what = f"{fit}: {c} = {costs[c]:.3f}"
        out[f"sass_{c}_cycles"] = (costs[c], src(recs, "tma_issue", what) if src else f"measured: {what}")
    cost_text = ", ".join(f"{c} {costs[c]:.2f}" for c in ISSUE_CLASSES)
    for (variant, issuer), (few, many) in GEMM_ISSUE_PAIRS.items():
        if few not in lib.files or many not in lib.files:
            continue
        per = gemm_per_box(lib, few, many)
        out[f"gemm_{variant}_{issuer}_tma_issue_cycles"] = (box_cycles(per, costs), (
            f"derived: {SASS_NAME} {few}.sass vs {many}.sass copy loop, per extra box {_fmt(per)} SASS x "
            f"cycles per class (sass_*_cycles: {cost_text}, fitted on microbench__tma_issue.json)"))
    return out
