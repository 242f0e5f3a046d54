"""docs/architecture.md stays true to the code it describes.

* Its layer picture (the first fenced block) names every package of the import contract
  (tests/test_layers.py: PACKAGES, HOPSIM_LAYERS) and every hopsim unit, nothing else in the hopsim
  rows, higher layers above lower ones and the units of one layer on one row.
* Every repository path it names in backticks (`hopsim/timing/sm.py`, `validation/micro_*.py`)
  exists, and every code name it gives, dotted (`isa.ir.ops.base.SYNTAX`) or after a path
  (`hopsim/timing/sm.py: CtaRun._warp`), resolves by import and attribute lookup.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"
TOPS = ("isa", "kernels", "validation", "hopsim", "tests", "docs", "benchmarks")


def _contract() -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """PACKAGES and HOPSIM_LAYERS as tests/test_layers.py declares them (read, not imported)."""
    tree = ast.parse((REPO / "tests" / "test_layers.py").read_text())
    found = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id in ("PACKAGES", "HOPSIM_LAYERS"):
            found[target.id] = ast.literal_eval(node.value)
    return found["PACKAGES"], found["HOPSIM_LAYERS"]


def _picture_rows() -> list[list[str]]:
    """Names of the left column of each row of the layer picture, below its header rule."""
    block = re.search(r"```\n(.*?)```", DOC.read_text(), re.S).group(1).splitlines()
    start = next(i for i, line in enumerate(block) if re.match(r"^-+\+-+$", line))
    return [re.findall(r"[\w.]+", line.split("|")[0]) for line in block[start + 1:]]


def _unit_word(unit: str) -> str:
    """The name a hopsim unit has in the picture: hopsim -> __init__, hopsim.cli -> cli."""
    return "__init__" if unit == "hopsim" else unit.split(".", 1)[1]


def test_layer_picture_matches_the_contract():
    packages, layers = _contract()
    rows = _picture_rows()
    top = {r[0]: i for i, r in enumerate(rows) if r and r[0] in packages}
    assert set(top) == set(packages), f"packages in the picture: {sorted(top)}, contract: {packages}"
    order = [top[p] for p in packages]
    assert order == sorted(order, reverse=True), "packages: higher layers above lower ones"
    first, end = top["hopsim"] + 1, min(i for p, i in top.items() if p != "hopsim" and i > top["hopsim"])
    hopsim_rows = {i: r for i, r in enumerate(rows[first:end], first) if r}
    where = {w: i for i, r in hopsim_rows.items() for w in r}
    words = {_unit_word(u): u for layer in layers for u in layer}
    assert sorted(set(where) - set(words)) == [], "names in the hopsim rows that are not units"
    assert sorted(set(words) - set(where)) == [], "units missing from the picture"
    row_of_layer = []
    for layer in layers:
        at = {where[_unit_word(u)] for u in layer}
        assert len(at) == 1, f"units of one layer on one row: {layer}"
        row_of_layer.append(at.pop())
    assert row_of_layer == sorted(row_of_layer, reverse=True), "hopsim: higher layers above lower ones"


def _code_spans() -> list[str]:
    text = re.sub(r"```.*?```", "", DOC.read_text(), flags=re.S)
    return re.findall(r"`([^`\n]+)`", text)


PATH = re.compile(r"^((?:%s)/[\w/*.-]*?)(?::\s*([\w.]+))?$" % "|".join(TOPS))
DOTTED = re.compile(r"^((?:isa|kernels|validation|hopsim)(?:\.\w+)+)$")


def _resolve(dotted: str):
    """Import the longest module prefix of `dotted`, then look the rest up as attributes."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:n]))
        except ModuleNotFoundError:
            continue
        for attr in parts[n:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def _module_of(path: str) -> str:
    return path[:-3].replace("/", ".").removesuffix(".__init__")


def references() -> list[tuple[str, str | None]]:
    out = []
    for span in _code_spans():
        m = PATH.match(span)
        if m:
            out.append((m.group(1), m.group(2)))
        elif DOTTED.match(span):
            out.append((None, span))
    return out


def test_the_doc_names_code():
    refs = references()
    assert len([p for p, _ in refs if p]) >= 40 and len([n for p, n in refs if p and n]) >= 15


@pytest.mark.parametrize("path, name", references(), ids=lambda x: x)
def test_named_paths_and_code_exist(path, name):
    if path is not None:
        hits = list(REPO.glob(path.rstrip("/"))) if "*" in path else [REPO / path]
        assert hits and all(h.exists() for h in hits), f"{path} does not exist"
        if name:
            assert path.endswith(".py"), f"{path}: {name} names code in a non-Python file"
            _resolve(f"{_module_of(path)}.{name}")
    else:
        _resolve(name)
