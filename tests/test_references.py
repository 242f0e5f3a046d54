"""Every source tag the repository cites ([LUO24], [PTX-MBAR], ...) resolves in docs/references.md.

Citations are read from the prose of the code (comments, docstrings and string literals such as a
config Param's `source`) of isa/, kernels/, validation/ and hopsim/, from the comments of the
CUDA sources, from hopsim's JSON configs, and from README.md and docs/**/*.md. A tag is an
upper-case name of at least two characters with optional hyphenated parts (LUO24, CPG-5x,
FORUM-311023); references.md defines one per list item: `- [TAG] description`.
"""

from __future__ import annotations

import io
import pathlib
import re
import tokenize

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
REFERENCES = REPO / "docs" / "references.md"
TAG = re.compile(r"\[([A-Z][A-Z0-9]+(?:-[A-Z0-9][A-Za-z0-9.]*)*)\]")
DEFINITION = re.compile(r"^- \[([^\]]+)\] \S", re.M)


def defined() -> dict[str, int]:
    """tag -> how many list items define it."""
    out: dict[str, int] = {}
    for tag in DEFINITION.findall(REFERENCES.read_text()):
        out[tag] = out.get(tag, 0) + 1
    return out


def _python_prose(path: pathlib.Path) -> str:
    toks = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return "\n".join(t.string for t in toks if t.type in (tokenize.COMMENT, tokenize.STRING))


def _cuda_comments(path: pathlib.Path) -> str:
    return "\n".join(line.split("//", 1)[1] for line in path.read_text().splitlines() if "//" in line)


def cited() -> dict[str, set[str]]:
    """tag -> the files citing it."""
    texts: list[tuple[pathlib.Path, str]] = []
    for pkg in ("isa", "kernels", "validation", "hopsim"):
        texts += [(p, _python_prose(p)) for p in sorted((REPO / pkg).rglob("*.py"))]
        texts += [(p, _cuda_comments(p)) for ext in ("*.cu", "*.cuh") for p in sorted((REPO / pkg).rglob(ext))]
    texts += [(p, p.read_text()) for p in sorted((REPO / "hopsim").rglob("*.json"))]
    texts += [(p, p.read_text()) for p in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
              if p != REFERENCES]
    out: dict[str, set[str]] = {}
    for path, text in texts:
        for tag in TAG.findall(text):
            out.setdefault(tag, set()).add(str(path.relative_to(REPO)))
    return out


def test_every_cited_tag_is_defined():
    refs = defined()
    missing = {tag: sorted(files) for tag, files in cited().items() if tag not in refs}
    assert not missing, f"cited but not in docs/references.md: {missing}"


def test_each_tag_is_defined_once_and_the_config_cites_them():
    refs = defined()
    assert {t: n for t, n in refs.items() if n > 1} == {}
    assert [t for t in refs if not TAG.fullmatch(f"[{t}]")] == []  # every entry is citable
    config = {t for t, files in cited().items() if "hopsim/config/h100_sxm.py" in files}
    assert {"LUO24", "HTG", "LOCKWOOD", "CPG-CC90"} <= config  # the walk reads Param sources


@pytest.mark.parametrize("text, tags", [
    ("see [PTX-WGMMA-DESC] and [LUO24] Table IV", ["PTX-WGMMA-DESC", "LUO24"]),
    ("[CPG-5x] as quoted in [MAXAS-8]", ["CPG-5x", "MAXAS-8"]),
    ("acc[MI][N] x[C] regex [A-Z] link [text](url)", ["MI"]),
])
def test_the_tag_pattern(text, tags):
    """What counts as a citation: two or more upper-case characters, hyphenated parts allowed;
    single letters and character classes do not (code is not scanned, only prose)."""
    assert TAG.findall(text) == tags
