"""The instruction table is complete: every declared opcode has a timing class, functional
semantics, a parser entry and a print/parse round trip (all declarations enumerated, no sampling),
and no layer dispatches on class-name strings (issue 12: a table-driven ISA)."""

from __future__ import annotations

import pathlib
import re

import pytest

from isa.ir import INSTRUCTION_CLASSES, parse, to_text
from isa.ir.ops.base import PRODUCES, SYNTAX
from isa.ir.kinds import Kind
from hopsim.functional import (  # noqa: F401  (register semantics)
    ops_alu, ops_async, ops_atomic, ops_cpasync, ops_float, ops_mem, ops_sync, ops_warp,
)
from hopsim.functional.semantics import semantics_of

REPO = pathlib.Path(__file__).resolve().parents[2]
DECLARED = sorted(INSTRUCTION_CLASSES.values(), key=lambda c: c.mnemonic)
KINDS = {v for k, v in vars(Kind).items() if k.isupper() and isinstance(v, str)}


def test_the_table_is_not_empty():
    assert len(DECLARED) >= 46


@pytest.mark.parametrize("cls", DECLARED, ids=lambda c: c.mnemonic)
def test_every_opcode_declares_a_timing_class(cls):
    assert cls.timing_class in KINDS, f"{cls.__name__}.timing_class={cls.timing_class!r}"


@pytest.mark.parametrize("cls", DECLARED, ids=lambda c: c.mnemonic)
def test_every_opcode_has_functional_semantics(cls):
    assert semantics_of(cls) is not None, f"{cls.__name__} has no @semantics builder"


@pytest.mark.parametrize("cls", DECLARED, ids=lambda c: c.mnemonic)
def test_every_opcode_has_a_parser_entry(cls):
    heads = [p for p, made in PRODUCES.items() if cls in made]
    assert heads, f"{cls.__name__}: no parse entry produces it"
    assert all(p in SYNTAX for p in heads)


def _one(text: str):
    k = parse(f".kernel k\n    {text}\n")
    assert len(k.body) == 1
    return k.body[0]


@pytest.mark.parametrize("cls", DECLARED, ids=lambda c: c.mnemonic)
def test_every_opcode_round_trips_its_examples(cls):
    """Each declared example parses to exactly that class, prints back to the same text, and the
    printed kernel parses back equal (the printer law)."""
    assert cls.examples, f"{cls.__name__} declares no examples"
    for text in cls.examples:
        ins = _one(text)
        assert type(ins) is cls, text
        assert text in (ins.text(), ins.text(abbreviate=False))
        assert _one(ins.text(abbreviate=False)) == ins
        k = parse(f".kernel k\n    {text}\n")
        assert parse(to_text(k)) == k


_NAME_DISPATCH = re.compile(r"""__name__\s*(==|!=|\bin\b)\s*["'(\[{]|\[\s*type\([^)]*\)\.__name__\s*\]"""
                            r"""|\.get\(\s*type\([^)]*\)\.__name__""")


@pytest.mark.parametrize("pkg", ["isa", "hopsim", "kernels", "validation"])
def test_no_class_name_string_dispatch(pkg):
    bad = []
    for path in sorted((REPO / pkg).rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if "__main__" in line:
                continue
            if _NAME_DISPATCH.search(line):
                bad.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not bad, "dispatch on types or declared attributes, not class names:\n" + "\n".join(bad)
