"""The repository stands alone: nothing it ships points at files outside it.

The project grew from notes kept beside the repository (a Hopper fact sheet, seed documents, a
trace format). What the code and docs cite from them now lives in the repo: the fact sheet is
docs/hopper-facts.md (its sources in docs/references.md), the trace format
docs/warp-access-trace.md, the seed descriptor dumps tests/data/. So:

  * no file outside tests/ names the directory beside the repo (`../shared`, `/work/shared`,
    `shared/reference|seeds|formats|design`);
  * a test may read such a file if it is there, but never skips for lack of it;
  * every `hopper-facts.md §N` a file cites names a section that docs/hopper-facts.md has;
  * every repository path the code's comments and docstrings name exists (outputs aside).
"""

from __future__ import annotations

import io
import pathlib
import re
import tokenize

REPO = pathlib.Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"\.\./shared|/work/shared|\bshared/(?:reference|seeds|formats|design)\b")
SUFFIXES = {".py", ".md", ".cu", ".cuh", ".toml", ".yaml", ".yml", ".txt", ".sh", ".cfg", ".ini"}
SECTION_CITE = re.compile(r"hopper-facts(?:\.md)? §(\d+(?:\.\d+)?)")
FACTS = REPO / "docs" / "hopper-facts.md"


def _shipped() -> list[pathlib.Path]:
    """Text files of the repo (records and caches aside), README and the CI scripts included."""
    out = [REPO / "README.md", REPO / "pyproject.toml", *sorted((REPO / ".ci").glob("*"))]
    for top in ("isa", "kernels", "validation", "hopsim", "docs", "benchmarks", "tests"):
        out += [p for p in sorted((REPO / top).rglob("*"))
                if p.is_file() and p.suffix in SUFFIXES and "records" not in p.parts
                and "__pycache__" not in p.parts]
    return [p for p in out if p.is_file()]


def _rel(p: pathlib.Path) -> str:
    return str(p.relative_to(REPO))


def test_no_shipped_file_points_outside_the_repo():
    bad = [f"{_rel(p)}:{i}: {line.strip()}" for p in _shipped() if p.parts[len(REPO.parts)] != "tests"
           for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if OUTSIDE.search(line)]
    assert bad == [], "files citing outside the repo (bring the material into docs/ or tests/data/):\n" + \
        "\n".join(bad)


def test_no_test_skips_for_lack_of_outside_files():
    """A test file that reads the notes beside the repo must run without them (no skip)."""
    bad = []
    for p in _shipped():
        if p.parts[len(REPO.parts)] != "tests" or p.resolve() == pathlib.Path(__file__).resolve():
            continue
        text = p.read_text(errors="replace")
        if OUTSIDE.search(text) and re.search(r"\bskip(?:if)?\b|importorskip", text):
            bad.append(_rel(p))
    assert bad == []


def _facts_sections() -> set[str]:
    heads = re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", FACTS.read_text(), re.M)
    return set(heads)


def test_fact_sheet_section_citations_resolve():
    sections = _facts_sections()
    assert {"3", "3.3", "4.1", "6.2", "7.5", "12"} <= sections
    bad = [f"{_rel(p)}: §{s}" for p in _shipped() for s in SECTION_CITE.findall(p.read_text(errors="replace"))
           if s not in sections]
    assert bad == []


def test_fact_sheet_is_cited_by_its_repo_path():
    """Outside docs/ (where a relative link works) the sheet is named docs/hopper-facts.md."""
    bare = re.compile(r"(?<![/\w])hopper-facts\b")
    bad = [f"{_rel(p)}:{i}" for p in _shipped() if p.parts[len(REPO.parts)] != "docs"
           and p.resolve() != pathlib.Path(__file__).resolve()
           for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if bare.search(line)]
    assert bad == []


REPO_PATH = re.compile(r"(?<![\w/.$-])((?:isa|kernels|validation|hopsim|tests|docs|benchmarks)/[\w/.*{},-]*\w)")
#: Directories the tools write (named in help texts as defaults), not shipped.
OUTPUTS = {"validation/reports/latest"}


def _prose(path: pathlib.Path) -> list[tuple[int, str]]:
    toks = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [(t.start[0], t.string) for t in toks if t.type in (tokenize.COMMENT, tokenize.STRING)]


def test_paths_the_code_names_exist():
    missing = []
    for top in ("isa", "kernels", "validation", "hopsim", "benchmarks"):
        for p in sorted((REPO / top).rglob("*.py")):
            for line, text in _prose(p):
                for path in REPO_PATH.findall(text):
                    pattern = re.sub(r"\{[^}]*\}", "*", path) + ("*" if path.endswith("__") else "")
                    found = list(REPO.glob(pattern)) if "*" in pattern else (REPO / path).exists()
                    if not found and path not in OUTPUTS:
                        missing.append(f"{_rel(p)}:{line}: {path}")
    assert missing == []
