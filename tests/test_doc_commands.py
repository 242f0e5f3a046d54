"""Every command the README and the docs show still exists: subcommands, modules and flags.

Commands are read from README.md and docs/**/*.md: lines of fenced and indented code blocks and
inline code spans that start with `hopsim`, `python3 -m`, `python -m` or `python3 path.py` (a `$ ` prompt, leading
`VAR=value` assignments and a `cmd && ` prefix are dropped; `a|b` alternatives are each checked;
`...`, `[...]` and `<placeholders>` are skipped). Nothing is simulated:

  * `hopsim ...`: the subcommand path exists in `hopsim.cli.build_parser()` (`simulate gemm` and
    `simulate FILE.ptx` use their own parsers) and every `--flag` is an option of that parser;
  * `python3 -m pkg.module ...` (isa/kernels/validation/hopsim): the module exists and its `--help`
    lists every `--flag` (and the sub-command word, when the help offers a `{a,b}` choice);
  * `python3 path/script.py ...` (benchmarks): the script exists.

And every repository path the docs name (`hopsim/timing/sm.py`, `validation/micro_*.py`,
`validation/records/h100/gemm__validation__...`) exists.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from hopsim.cli import build_parser
from hopsim.cli import attention_cmd, membound_cmd, rowwise_cmd, tmacopy_cmd
from hopsim.cli.simulate_cmd import gemm_parser, ptx_parser

REPO = pathlib.Path(__file__).resolve().parents[1]
OURS = ("isa", "kernels", "validation", "hopsim")
START = re.compile(r"^(?:\$\s+)?(?:[A-Z_]+=(?:\$\([^)]*\)|\S+)\s+)*((?:hopsim|python3? -m|python3? \w+/[\w/]+\.py)\s.*|hopsim|python3? \w+/[\w/]+\.py)$")


def _docs() -> list[pathlib.Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _code_lines(text: str) -> list[str]:
    """Lines of fenced blocks, indented blocks, and inline code spans."""
    out, fence = [], False
    for line in text.replace("\\\n", " ").splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence or line.startswith("    "):
            out.append(line.strip())
        else:
            out += re.findall(r"`([^`]+)`", line)
    return out


def _commands() -> list[tuple[str, str]]:
    found = []
    for path in _docs():
        for line in _code_lines(path.read_text()):
            for part in re.split(r"\s*(?:&&|\|\s+(?=hopsim|python))\s*", line):
                m = START.match(part.strip())
                if m:
                    found.append((str(path.relative_to(REPO)), m.group(1)))
    return sorted(set(found))


def _words(cmd: str) -> list[str]:
    """Tokens up to a comment, pipe or redirection; placeholders and optional parts dropped."""
    cmd = re.sub(r"\[[^\]]*\]", " ", cmd.split(" #")[0])
    try:
        toks = shlex.split(cmd)
    except ValueError:
        toks = cmd.split()
    out = []
    for t in toks:
        if t in ("|", ">", "2>&1", "<") or t.startswith((">", "2>")):
            break
        if t == "..." or "<" in t and ">" in t and not t.startswith("Swizzle"):
            continue
        out.append(t)
    return out


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def _options(p: argparse.ArgumentParser) -> set[str]:
    return {s for a in p._actions for s in a.option_strings}


def _flags(words: list[str]) -> list[str]:
    return [w.split("=", 1)[0] for w in words if w.startswith("--")]


def _check_hopsim(words: list[str]) -> list[str]:
    """Problems of one `hopsim ...` command (an empty list: it exists)."""
    parser, rest = build_parser(), words[1:]
    if rest and rest[0] == "simulate":
        target = rest[1] if len(rest) > 1 else None
        if target is None or target.startswith("-"):
            return [f"unknown flag {f}" for f in _flags(rest[1:]) if f not in ("--help",)]
        parser, rest = (gemm_parser() if target == "gemm" else membound_cmd.parser(target)
                        if target in membound_cmd.FAMILIES else rowwise_cmd.parser(target)
                        if target in rowwise_cmd.FAMILIES else tmacopy_cmd.parser()
                        if target == tmacopy_cmd.FAMILY else attention_cmd.parser()
                        if target == attention_cmd.FAMILY else ptx_parser()), rest[2:]
    else:
        while rest and not rest[0].startswith("-"):
            subs = _subparsers(parser)
            if not subs:
                break
            names = rest[0].split("|")
            missing = [n for n in names if n not in subs]
            if missing:
                return [f"no subcommand {' '.join(missing)} (has {sorted(subs)})"]
            parser, rest = subs[names[0]], rest[1:]
            if len(names) > 1:  # `a|b|c` lists alternatives: their flags are not checked
                return []
    known = _options(parser)
    return [f"unknown flag {f} (of {parser.prog})" for f in _flags(rest) if f not in known]


@functools.lru_cache(maxsize=None)
def _module_help(module: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", module, "--help"], cwd=REPO, capture_output=True, text=True,
                       timeout=120, env=env)
    return r.stdout + r.stderr


def _check_module(words: list[str]) -> list[str]:
    if len(words) < 3 or words[2].startswith("-"):
        return []  # `python3 -m validation.<name>`: a placeholder
    module, rest = words[2], words[3:]
    if module.split(".")[0] not in OURS:
        return []  # pip, pytest: not ours
    if importlib.util.find_spec(module) is None:
        return [f"no module {module}"]
    if module == "hopsim":
        return _check_hopsim(["hopsim", *rest])
    if not rest:
        return []  # nothing to look up in its --help
    text = _module_help(module)
    problems = [f"{module}: unknown flag {f}" for f in _flags(rest) if not re.search(re.escape(f) + r"\b", text)]
    choices = re.search(r"\{([\w,-]+)\}", text)
    if choices and rest and not rest[0].startswith("-") and rest[0] not in choices.group(1).split(","):
        problems.append(f"{module}: no sub-command {rest[0]} (has {choices.group(1)})")
    return problems


def test_the_docs_show_commands():
    cmds = [c for _, c in _commands()]
    assert sum(c.startswith("hopsim") for c in cmds) >= 25
    assert sum(c.startswith("python") for c in cmds) >= 15


@pytest.mark.parametrize("doc, cmd", _commands(), ids=lambda x: x[:60])
def test_command_exists(doc, cmd):
    words = _words(cmd)
    if words[0] == "hopsim":
        problems = _check_hopsim(words)
    elif words[1].endswith(".py"):  # python3 benchmarks/x.py: the script exists (not run)
        problems = [] if (REPO / words[1]).is_file() else [f"no file {words[1]}"]
    else:
        problems = _check_module(words)
    assert problems == [], f"{doc}: `{cmd}`: {problems}"


REPO_PATH = re.compile(r"(?<![\w/.$-])((?:isa|kernels|validation|hopsim|tests|docs|benchmarks|\.ci)/[\w/.*{},-]*\w)")


def test_every_path_the_docs_name_exists():
    missing = []
    for doc in _docs():
        for i, line in enumerate(doc.read_text().splitlines(), 1):
            for path in REPO_PATH.findall(line):
                pattern = re.sub(r"\{[^}]*\}", "*", path) + ("*" if path.endswith("__") else "")
                hits = list(REPO.glob(pattern)) if "*" in pattern else [REPO / path] if (REPO / path).exists() else []
                if not hits:
                    missing.append(f"{doc.relative_to(REPO)}:{i}: {path}")
    assert missing == []
