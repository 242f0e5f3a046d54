"""Import directions of the architecture (shared/design/architecture.md), checked statically.

isa <- kernels, isa <- hopsim; hopsim.functional never imports simpy; nothing but validation
imports cupy; kernels imports isa only (plus stdlib and numpy).
"""

from __future__ import annotations

import ast
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _files(pkg: str):
    return sorted((REPO / pkg).rglob("*.py"))


def _top(names):
    return {n.split(".")[0] for n in names}


@pytest.mark.parametrize("path", _files("isa"), ids=lambda p: str(p.relative_to(REPO)))
def test_isa_imports_nothing_of_ours(path):
    assert not (_top(_imports(path)) & {"hopsim", "kernels", "validation", "simpy", "cupy"})


@pytest.mark.parametrize("path", _files("hopsim/functional"), ids=lambda p: str(p.relative_to(REPO)))
def test_functional_layer_never_imports_simpy(path):
    names = _imports(path)
    assert "simpy" not in _top(names)
    assert not any(n.startswith("hopsim.timing") for n in names)


@pytest.mark.parametrize("path", _files("hopsim") + _files("kernels") + _files("isa"), ids=lambda p: str(p.relative_to(REPO)))
def test_only_validation_imports_cupy(path):
    assert not (_top(_imports(path)) & {"cupy", "cuda"})


def _imports_split(path: pathlib.Path) -> tuple[set[str], set[str]]:
    """(modules imported outside any function, modules imported inside a function body)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    inside = {id(n) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
              for n in ast.walk(fn)}
    top: set[str] = set()
    lazy: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods = {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mods = {node.module}
        else:
            continue
        (lazy if id(node) in inside else top).update(mods)
    return top, lazy


@pytest.mark.parametrize("path", _files("kernels"), ids=lambda p: str(p.relative_to(REPO)))
def test_kernels_import_isa_only(path):
    """kernels/ imports isa (+ stdlib, numpy), also inside functions: never the simulator, simpy or
    validation (a GEMM's GlobalMemory and Launch are built by hopsim/gemm_setup.py)."""
    module_level, lazy = _imports_split(path)
    assert not (_top(module_level | lazy) & {"hopsim", "validation", "simpy"})
