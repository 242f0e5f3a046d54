"""A small reader of the committed SASS of the CUDA twins (issue 14 item 2: "an IR instruction
costs what ptxas makes of it").

    from hopsim.validate.sass import load_sass, kernel
    lib = load_sass()                                  # validation/sass/sass.tar.gz
    fn = kernel(lib, "gemm_ws1_s4")                    # the GEMM twin's one function
    constructs(fn)                                     # {construct: SASS instruction count}
    k_loops(fn)                                        # the k-loops (backward branches) and their bodies
    micro_per_box(lib, "e")                            # SASS per TMA box of micro_tma_issue mode `e`

The SASS (cuobjdump -sass of sm_90a cubins built by validation/sass_dump.py with nvcc 13.0, the
compiler the H100 records were built with) is data: `validation/sass/README.md` says where it came
from. Everything here is static: an instruction is counted once where it stands; the loops that
matter execute their straight-line bodies once per iteration (the per-lane ELECT loop of a copy
guarded by one lane runs once), so a static count over a loop body is the dynamic count per
iteration of the path that runs all of it.

Constructs the IR models, as ptxas emits them on sm_90a:
- TMA copy (`cp.async.bulk.tensor`): UTMALDG takes its descriptor, coordinates and smem address in
  uniform registers. A copy guarded by a per-lane predicate becomes a loop over the active lanes
  (`ELECT` one, `R2UR` its operands, `UTMALDG`, `PLOP3` x2, `BRA.U.ANY` back); a copy guarded by an
  `elect.sync` result is issued once per warp, unpredicated, with no loop (the uniform path).
- mbarrier arrive / expect_tx: `SYNCS.ARRIVE.TRANS64...`; try_wait: `SYNCS.PHASECHK.TRANS64.TRYWAIT`
  + a retry branch.
- wgmma: `WARPGROUP.ARRIVE` (wgmma.fence), `HGMMA` (one per m64nNk16), `WARPGROUP.DEPBAR` (wait_group).
- epilogue stores: `STSM` (stmatrix), `STG` (st.global), `UTMASTG` (TMA store).
"""

from __future__ import annotations

import json
import pathlib
import re
import tarfile
from dataclasses import dataclass

import numpy as np

from isa.errors import HopsimError

ROOT = pathlib.Path(__file__).resolve().parents[2]
SASS_TAR = ROOT / "validation" / "sass" / "sass.tar.gz"

_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
_INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P(?:T|\d)+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)\s*([^;]*);")
_TARGET = re.compile(r"0x([0-9a-f]+)")

#: construct -> opcode prefixes (the first matching prefix wins; "." separates modifiers)
CONSTRUCTS = {
    "tma_load": ("UTMALDG",),
    "tma_store": ("UTMASTG",),
    "elect": ("ELECT",),
    "r2ur": ("R2UR",),
    "uniform_vote": ("VOTEU",),
    "mbar_arrive": ("SYNCS.ARRIVE",),
    "mbar_try_wait": ("SYNCS.PHASECHK",),
    "wgmma_fence": ("WARPGROUP.ARRIVE",),
    "wgmma": ("HGMMA",),
    "wgmma_wait": ("WARPGROUP.DEPBAR",),
    "stmatrix": ("STSM",),
    "st_global": ("STG",),
    "st_shared": ("STS",),
    "ld_shared": ("LDS", "LDSM"),
    "ld_global": ("LDG",),
    "bar_sync": ("BAR.SYNC",),
    "branch": ("BRA",),
}


class SassError(HopsimError):
    """The SASS archive is missing, or a kernel/function the caller named is not in it."""


@dataclass(frozen=True)
class Sass:
    """One SASS instruction: byte address, guard (``@P0``, ``@!UP1`` or ''), opcode with its
    modifiers (``UTMALDG.2D``) and operand text."""

    addr: int
    guard: str
    op: str
    args: str

    @property
    def base(self) -> str:
        return self.op.split(".", 1)[0]

    def is_(self, *prefixes: str) -> bool:
        """The opcode is one of `prefixes` (a whole opcode or a dotted prefix of it)."""
        return any(self.op == p or self.op.startswith(p + ".") for p in prefixes)

    @property
    def target(self) -> int | None:
        """A branch's target address, else None."""
        if self.base != "BRA":
            return None
        m = _TARGET.search(self.args)
        return int(m.group(1), 16) if m else None


def parse(text: str) -> dict[str, list[Sass]]:
    """cuobjdump -sass text -> {function name: its instructions in address order}."""
    out: dict[str, list[Sass]] = {}
    cur: list[Sass] | None = None
    for line in text.splitlines():
        m = _FUNC.match(line)
        if m:
            cur = out.setdefault(m.group(1), [])
            continue
        m = _INSTR.match(line)
        if m and cur is not None:
            cur.append(Sass(int(m.group(1), 16), (m.group(2) or "").strip(), m.group(3), m.group(4).strip()))
    return out


@dataclass(frozen=True)
class SassLib:
    """The archive: {file stem: {function: instructions}} and its index.json."""

    files: dict[str, dict[str, list[Sass]]]
    index: dict


def load_sass(path: pathlib.Path | str = SASS_TAR) -> SassLib:
    """Read sass.tar.gz (one <stem>.sass per compiled source or GEMM configuration + index.json)."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise SassError(f"{path}: no SASS archive (make it with `python3 -m validation.sass_dump --out DIR`)")
    files, index = {}, {}
    with tarfile.open(path, "r:gz") as tar:
        for m in tar.getmembers():
            data = tar.extractfile(m)
            if data is None:
                continue
            text = data.read().decode()
            if m.name.endswith(".sass"):
                files[m.name[:-5]] = parse(text)
            elif m.name == "index.json":
                index = json.loads(text)
    return SassLib(files, index)


def kernel(lib: SassLib, stem: str, function: str | None = None) -> list[Sass]:
    """The instructions of one function of file `stem` (the only one when `function` is None)."""
    funcs = lib.files.get(stem)
    if funcs is None:
        raise SassError(f"SASS file {stem!r} not in the archive; valid: {sorted(lib.files)}")
    if function is None:
        if len(funcs) != 1:
            raise SassError(f"{stem} holds {len(funcs)} functions; name one of {sorted(funcs)}")
        return next(iter(funcs.values()))
    if function not in funcs:
        raise SassError(f"function {function!r} not in {stem}; valid: {sorted(funcs)}")
    return funcs[function]


def constructs(instrs: list[Sass]) -> dict[str, int]:
    """{construct of `CONSTRUCTS`: how many of its instructions stand in `instrs`} + 'total'."""
    out = {k: 0 for k in CONSTRUCTS}
    for i in instrs:
        for name, prefixes in CONSTRUCTS.items():
            if i.is_(*prefixes):
                out[name] += 1
                break
    out["total"] = sum(1 for i in instrs if i.op != "NOP")
    return out


@dataclass(frozen=True)
class Loop:
    """A backward branch at `end` to `start`: the body is every instruction in [start, end]."""

    start: int
    end: int
    body: tuple[Sass, ...]

    @property
    def lanes_loop(self) -> bool:
        """ptxas' loop over the active lanes of a per-lane-guarded uniform instruction."""
        return self.body[-1].op == "BRA.U.ANY"

    @property
    def try_wait_loop(self) -> bool:
        return any(i.is_("SYNCS.PHASECHK") for i in self.body) and len(self.body) <= 12


def loops(instrs: list[Sass]) -> list[Loop]:
    """Every backward branch as a `Loop`, in address order of its branch."""
    out = []
    for i in instrs:
        t = i.target
        if t is not None and t <= i.addr:
            out.append(Loop(t, i.addr, tuple(x for x in instrs if t <= x.addr <= i.addr)))
    return out


def k_loops(instrs: list[Sass]) -> list[Loop]:
    """The k-tile loops: the outermost backward branches whose body holds a TMA copy or a wgmma
    (not ptxas' lane loops or the try_wait retry loops inside them)."""
    cands = [lp for lp in loops(instrs) if not lp.lanes_loop and not lp.try_wait_loop
             and any(i.is_("UTMALDG", "HGMMA") for i in lp.body)]
    return [lp for lp in cands
            if not any(o is not lp and o.start <= lp.start and lp.end <= o.end for o in cands)]


def window(instrs: list[Sass], first: int, last: int) -> list[Sass]:
    """The instructions strictly between the `first`-th and the `last`-th instruction that
    reads SR_CLOCKLO (a microbenchmark's timed region between its clock64 reads)."""
    clocks = [n for n, i in enumerate(instrs) if "SR_CLOCKLO" in i.args]
    if len(clocks) <= max(first, last):
        raise SassError(f"only {len(clocks)} clock reads; the timed window needs {max(first, last) + 1}")
    return instrs[clocks[first] + 1: clocks[last]]


#: micro_tma_issue modes: kernel suffix -> the record's configuration name
TMA_ISSUE_MODES = {"t": "thread", "w": "warp_lane0", "c": "thread_unpredicated", "e": "warp_elect"}
TMA_ISSUE_KS = (1, 2, 4, 8, 16, 32)


def micro_issue_counts(lib: SassLib, mode: str) -> dict[int, dict[str, int]]:
    """micro_tma_issue `tma_issue_k{K}_{mode}`: the constructs of the timed issue window
    (t0 .. t1: arrive.expect_tx + K copies), per K."""
    if mode not in TMA_ISSUE_MODES:
        raise SassError(f"micro_tma_issue mode {mode!r}; valid: {sorted(TMA_ISSUE_MODES)}")
    return {k: constructs(window(kernel(lib, "micro_tma_issue", f"tma_issue_k{k}_{mode}"), 0, 1))
            for k in TMA_ISSUE_KS}


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def micro_per_box(lib: SassLib, mode: str, key: str = "total") -> float:
    """SASS instructions per TMA box on the micro_tma_issue path `mode`: slope of the timed
    window's count over K = 1..32 (exact: the copies are unrolled)."""
    by_k = micro_issue_counts(lib, mode)
    ks = sorted(by_k)
    return slope([float(k) for k in ks], [float(by_k[k][key]) for k in ks])


# --------------------------------------------------------------------------- issue classes

#: the SASS classes the per-instruction issue cost distinguishes (fit: hopsim/validate/calibrate.py)
ISSUE_CLASSES = ("plain", "r2ur", "branch")


def issue_classes(counts: dict[str, float]) -> dict[str, float]:
    """A construct count -> {plain, r2ur, branch}: R2UR (a per-lane register into the uniform
    datapath, a cross-file move the copy waits for), branches (BRA, BRA.U.ANY: ptxas' lane loop
    and lane-divergent or loop branches), everything else plain."""
    return {"plain": counts["total"] - counts["r2ur"] - counts["branch"],
            "r2ur": counts["r2ur"], "branch": counts["branch"]}


def micro_classes(lib: SassLib, mode: str) -> dict[str, float]:
    """SASS per TMA box of micro_tma_issue mode `mode`, by issue class."""
    return issue_classes({k: micro_per_box(lib, mode, k) for k in ("total", "r2ur", "branch")})


def copy_loop(instrs: list[Sass]) -> Loop:
    """The k-loop that issues the TMA copies (single: the mainloop's refill; ws: the producer's
    loop): the last k-loop holding a UTMALDG."""
    got = [lp for lp in k_loops(instrs) if any(i.is_("UTMALDG") for i in lp.body)]
    if not got:
        raise SassError("no k-loop issues a TMA copy (UTMALDG)")
    return got[-1]


def loop_per_box(lib: SassLib, stem: str, function: str) -> dict[str, float]:
    """SASS per TMA box of a run-time copy loop (one copy per iteration, e.g. micro_tma's
    `tma_latency`): the innermost loop around a UTMALDG that is not ptxas' lane loop, by
    construct (+ the issue classes)."""
    got = [lp for lp in loops(kernel(lib, stem, function)) if not lp.lanes_loop and not lp.try_wait_loop
           and sum(1 for i in lp.body if i.is_("UTMALDG")) == 1]
    if not got:
        raise SassError(f"{stem}:{function} has no loop issuing one TMA copy per iteration")
    per = {k: float(v) for k, v in constructs(list(min(got, key=lambda lp: len(lp.body)).body)).items()}
    return {**per, **issue_classes(per)}


def gemm_per_box(lib: SassLib, few: str, many: str) -> dict[str, float]:
    """SASS per TMA box of a GEMM twin's copy loop: the difference of the copy loops of two
    configurations that differ only in box rows (`many` issues more boxes per k-tile), per extra
    box, by construct (+ the issue classes). Exact when ptxas unrolls both loops alike."""
    a, b = constructs(list(copy_loop(kernel(lib, few)).body)), constructs(list(copy_loop(kernel(lib, many)).body))
    extra = b["tma_load"] - a["tma_load"]
    if extra <= 0:
        raise SassError(f"{many} issues no more copies per k-tile than {few}")
    per = {k: (b[k] - a[k]) / extra for k in a}
    return {**per, **issue_classes(per)}


#: GEMM twin issue paths: (variant, tma_issuer) -> (SASS of box rows 128, of box rows 8), the
#: configurations of validation/sass_dump.py CONFIGS that differ only in box rows
GEMM_ISSUE_PAIRS = {
    ("single", "lane"): ("gemm_single_s4", "gemm_single_s4_box8"),
    ("single", "elect"): ("gemm_single_s4_elect", "gemm_single_s4_box8_elect"),
    ("ws", "lane"): ("gemm_ws1_s4", "gemm_ws1_s4_box8"),
    ("ws", "elect"): ("gemm_ws1_s4_elect", "gemm_ws1_s4_box8_elect"),
}


def fit_class_costs(rows: list[tuple[dict[str, float], float]]) -> dict[str, float]:
    """Least squares: cycles per box = sum over classes of (SASS per box x cycles per instruction
    of the class), over `rows` of (classes, measured cycles per box)."""
    a = np.array([[r[c] for c in ISSUE_CLASSES] for r, _ in rows])
    y = np.array([m for _, m in rows])
    sol = np.linalg.lstsq(a, y, rcond=None)[0]
    return {c: float(v) for c, v in zip(ISSUE_CLASSES, sol)}


def box_cycles(classes: dict[str, float], costs: dict[str, float]) -> float:
    """Cycles per box of a path: its SASS per box by class x the class costs."""
    return sum(classes[c] * costs[c] for c in ISSUE_CLASSES)


# --------------------------------------------------------------------------- report

def _loop_cell(lp: Loop | None, keys: tuple[str, ...]) -> str:
    if lp is None:
        return "-"
    c = constructs(list(lp.body))
    return f"{c['total']}: " + ", ".join(f"{c[k]} {k}" for k in keys if c[k])


def markdown(lib: SassLib) -> str:
    """Per GEMM twin: registers, the consumer k-loop and the copy loop (SASS per iteration, static,
    by construct), the epilogue's stores over the kernel; then SASS per TMA box of each issue path."""
    lines = ["| kernel | registers (spill st/ld) | wgmma k-loop: SASS per k-tile | copy loop: SASS per k-tile "
             "| epilogue stores (kernel) |", "|---|---|---|---|---|"]
    mma = ("wgmma", "wgmma_fence", "wgmma_wait", "mbar_arrive", "mbar_try_wait", "branch")
    cp = ("tma_load", "elect", "r2ur", "uniform_vote", "mbar_arrive", "mbar_try_wait", "branch")
    for stem in sorted(s for s in lib.files if s.startswith("gemm_")):
        fn, ix = kernel(lib, stem), lib.index.get("kernels", {}).get(stem, {})
        ks = k_loops(fn)
        mloop = next((lp for lp in ks if any(i.is_("HGMMA") for i in lp.body)), None)
        cloop = copy_loop(fn)
        c = constructs(fn)
        lines.append(f"| {stem} | {ix.get('registers', '?')} ({ix.get('spill_stores', '?')}/{ix.get('spill_loads', '?')}) "
                     f"| {_loop_cell(mloop, mma)} | {'same loop' if cloop is mloop else _loop_cell(cloop, cp)} "
                     f"| {c['stmatrix']} STSM, {c['st_global']} STG, {c['tma_store']} UTMASTG |")
    lines += ["", "| issue path | SASS per box: total (plain + R2UR + branch) |", "|---|---|"]
    for (variant, issuer), pair in GEMM_ISSUE_PAIRS.items():
        if all(p in lib.files for p in pair):
            per = gemm_per_box(lib, *pair)
            lines.append(f"| GEMM {variant}, {issuer} ({pair[0]} vs {pair[1]}) | {per['total']:.2f} "
                         f"({per['plain']:.2f} + {per['r2ur']:.2f} + {per['branch']:.2f}) |")
    for mode, name in TMA_ISSUE_MODES.items():
        cl = micro_classes(lib, mode)
        lines.append(f"| micro_tma_issue {name} | {sum(cl.values()):.2f} ({cl['plain']:.2f} + {cl['r2ur']:.2f} "
                     f"+ {cl['branch']:.2f}) |")
    lat = loop_per_box(lib, "micro_tma", "tma_latency")
    lines.append(f"| micro_tma tma_latency (run-time loop) | {lat['total']:.0f} ({lat['plain']:.0f} + "
                 f"{lat['r2ur']:.0f} + {lat['branch']:.0f}) |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(load_sass()), end="")
