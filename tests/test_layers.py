"""The import contract: layers as packages, importing in one direction (issue 12).

An AST walk over every .py file of isa/, kernels/, validation/ and hopsim/ counts every import,
also those inside functions, and builds two graphs: the top-level packages, and hopsim's units
(each subpackage and each top-level module is one unit). Both must be acyclic and follow the
declared order below: a unit imports only units of a lower layer (units of one layer do not
import each other). Also:

  * validation/ is the GPU-machine side: it imports neither hopsim nor simpy (it runs where only
    numpy, cupy, cuda-bindings and nvidia-ml-py are installed);
  * nothing but validation/ imports cupy, cuda (cuda-bindings) or pynvml;
  * hopsim.functional (what happens) never imports simpy or hopsim.timing (when it happens);
  * no import inside a function, except of the optional heavy dependencies in LAZY_OK (an
    internal import inside a function is how a cycle hides).

A new hopsim module or subpackage must be given its layer in HOPSIM_LAYERS.
"""

from __future__ import annotations

import ast
import functools
import pathlib
from dataclasses import dataclass

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]

#: Top-level packages, lowest layer first.
PACKAGES = ("isa", "kernels", "validation", "hopsim")
#: hopsim's units, lowest layer first ("hopsim" is the package's own __init__).
HOPSIM_LAYERS: tuple[tuple[str, ...], ...] = (
    ("hopsim",),                  # the package root: the error types (from isa)
    ("hopsim.config",),           # typed, sourced hardware numbers
    ("hopsim.functional",),       # what happens: numpy only
    ("hopsim.result", "hopsim.trace"),
    ("hopsim.timing",),           # when it happens: SimPy
    ("hopsim.power", "hopsim.fingerprint"),  # power and clock of a timed run; the model's hash
    ("hopsim.summary", "hopsim.progress", "hopsim.cache", "hopsim.inputs"),
    ("hopsim.gemm_setup", "hopsim.attention"),  # a GEMM's / attention tile's operands in the functional machine's memory
    ("hopsim.gemm_sim",),         # build + time one GEMM
    ("hopsim.sweep_knobs",),      # every family's sweep knobs, defaults and point checks
    ("hopsim.sweep",),
    ("hopsim.plots",),
    ("hopsim.validate",),         # calibrate / compare against the hardware records
    ("hopsim.cli",),
    ("hopsim.__main__",),
)
#: The only modules a function may import (optional, heavy, or present on one machine only).
LAZY_OK = frozenset({"cupy", "cuda", "dask", "distributed", "matplotlib", "pynvml"})
#: Modules only the GPU-machine side may import.
GPU_ONLY = frozenset({"cupy", "cuda", "pynvml"})


@dataclass(frozen=True)
class Imp:
    """One imported module (resolved to the submodule where `from pkg import name` names one)."""

    src: str          # importing module, dotted
    target: str       # imported module, dotted
    path: str         # file, relative to the repo
    line: int
    in_function: bool

    def where(self) -> str:
        return f"{self.path}:{self.line} ({self.src} -> {self.target})"


def _files() -> list[pathlib.Path]:
    return [p for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))]


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    p = REPO.joinpath(*dotted.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _resolve(node: ast.ImportFrom, module: str, is_pkg: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@functools.lru_cache(maxsize=None)
def _imports(path: pathlib.Path) -> tuple[Imp, ...]:
    """Every import statement of one file (parsed once per test process)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    module, rel = _module_name(path), str(path.relative_to(REPO))
    in_fn = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
             for n in ast.walk(f)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node, module, path.name == "__init__.py")
            subs = [f"{base}.{a.name}" for a in node.names if _is_module(f"{base}.{a.name}")]
            targets = subs if len(subs) == len(node.names) else [base] + subs
        else:
            continue
        out += [Imp(module, t, rel, node.lineno, id(node) in in_fn) for t in targets]
    return tuple(out)


@functools.lru_cache(maxsize=1)
def _all() -> tuple[Imp, ...]:
    """Every import of every file of PACKAGES: read when a test first needs it, not at collection
    (each test process collects; only the processes that run these tests parse the sources)."""
    return tuple(imp for p in _files() for imp in _imports(p))


def _top(dotted: str) -> str:
    return dotted.split(".")[0]


def _unit(dotted: str) -> str:
    """hopsim's unit of a hopsim module: hopsim.<first component>, or hopsim for the root."""
    parts = dotted.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else parts[0]


def _rank(order, name: str) -> int:
    for i, layer in enumerate(order):
        if name in layer:
            return i
    raise KeyError(name)


def _graph(edges) -> dict[str, set[str]]:
    g: dict[str, set[str]] = {}
    for a, b, _ in edges:
        g.setdefault(a, set()).add(b)
    return g


def _cycle(g: dict[str, set[str]]) -> list[str] | None:
    """One cycle of g (as a path a -> ... -> a), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(g.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        state[n] = 2
        stack.pop()
        return None

    for n in sorted(g):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def _package_edges():
    return [(_top(i.src), _top(i.target), i) for i in _all()
            if _top(i.target) in PACKAGES and _top(i.src) != _top(i.target)]


def _hopsim_edges():
    return [(_unit(i.src), _unit(i.target), i) for i in _all()
            if _top(i.src) == "hopsim" and _top(i.target) == "hopsim" and _unit(i.src) != _unit(i.target)]


def test_the_walk_sees_the_code():
    """The walker finds every package and the imports everyone knows are there."""
    seen = {(i.src, i.target) for i in _all()}
    assert ("hopsim.timing.runner", "simpy") in seen
    assert ("hopsim.gemm_sim", "kernels.gemm") in seen
    assert {_top(i.src) for i in _all()} == set(PACKAGES)


def test_top_level_packages_form_a_dag_in_the_declared_order():
    edges = _package_edges()
    cyc = _cycle(_graph(edges))
    assert cyc is None, "import cycle between packages: " + " -> ".join(cyc)
    bad = [i.where() for a, b, i in edges if PACKAGES.index(b) >= PACKAGES.index(a)]
    assert not bad, "imports against isa <- kernels <- validation <- hopsim:\n" + "\n".join(bad)


def test_every_hopsim_unit_has_a_layer():
    units = {_unit(_module_name(p)) for p in sorted((REPO / "hopsim").rglob("*.py"))}
    declared = {u for layer in HOPSIM_LAYERS for u in layer}
    assert not units - declared, f"declare the layer of {sorted(units - declared)} in HOPSIM_LAYERS"


def test_hopsim_units_form_a_dag_in_the_declared_order():
    edges = _hopsim_edges()
    cyc = _cycle(_graph(edges))
    assert cyc is None, "import cycle between hopsim units: " + " -> ".join(cyc)
    declared = {u for layer in HOPSIM_LAYERS for u in layer}
    bad = [i.where() for a, b, i in edges
           if {a, b} <= declared and _rank(HOPSIM_LAYERS, b) >= _rank(HOPSIM_LAYERS, a)]
    assert not bad, "imports against the order of HOPSIM_LAYERS:\n" + "\n".join(bad)


def test_modules_import_each_other_without_cycles():
    """Within a package too: no module-level import cycle between modules (Python would hand one
    of them a half-initialised module)."""
    cyc = _cycle(_graph((i.src, i.target, i) for i in _all()
                        if _top(i.target) in PACKAGES and i.src != i.target and not i.in_function
                        and not i.src.startswith(i.target + ".")))
    assert cyc is None, "module import cycle: " + " -> ".join(cyc)


def test_validation_is_the_gpu_side_without_the_simulator():
    bad = [i.where() for i in _all() if _top(i.src) == "validation" and _top(i.target) in {"hopsim", "simpy"}]
    assert not bad, "validation/ must run without hopsim and simpy:\n" + "\n".join(bad)


def test_only_validation_imports_gpu_modules():
    bad = [i.where() for i in _all() if _top(i.target) in GPU_ONLY and _top(i.src) != "validation"]
    assert not bad, "cupy/cuda/pynvml outside validation/:\n" + "\n".join(bad)


def test_functional_never_imports_simpy_or_timing():
    bad = [i.where() for i in _all() if i.src.startswith("hopsim.functional")
           and (_top(i.target) == "simpy" or i.target.startswith("hopsim.timing"))]
    assert not bad, "\n".join(bad)


def test_kernels_and_isa_never_import_simpy():
    bad = [i.where() for i in _all() if _top(i.src) in {"isa", "kernels"} and _top(i.target) == "simpy"]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_import_inside_a_function(path):
    """Only the optional heavy dependencies (LAZY_OK) are imported inside functions."""
    bad = [i.where() for i in _imports(path) if i.in_function and _top(i.target) not in LAZY_OK]
    assert not bad, "move to module level (a cycle hides behind a lazy import):\n" + "\n".join(bad)


def test_the_helpers_resolve_and_find_cycles():
    """Relative imports resolve against the importing module; `from pkg import sub` names the
    submodule; a two-node loop is a cycle, a chain is not."""
    node = ast.parse("from ..timing import runner").body[0]
    assert _resolve(node, "hopsim.validate.micro_sim", False) == "hopsim.timing"
    assert _resolve(node, "hopsim.validate", True) == "hopsim.timing"
    assert _is_module("hopsim.sweep") and not _is_module("hopsim.InputError")
    assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
