"""The fast LALR driver makes exactly the trees lark makes (lark stays the reference), and gives up
on whatever it cannot take so that lark refuses it with the usual finding."""

from __future__ import annotations

from pathlib import Path

import pytest
from dsl_support import EXAMPLES
from hypothesis import given, settings
from hypothesis import strategies as st
from test_dsl_properties import programs

from safeexec.dsl import nodes as n
from safeexec.dsl import parser
from safeexec.dsl.build import build_program
from safeexec.dsl.lalr import NotTaken
from safeexec.model import Finding


def by_lark(source: str) -> n.Program:
    tree = parser._parser().parse(source + "\n", start="start")
    return build_program(tree, source, parser.parse_expression)


def by_fast(source: str) -> n.Program:
    built = parser._fast().parse(source + "\n", "start", parser.builder(parser.parse_expression))
    assert isinstance(built, n.Program)
    return n.Program(body=built.body, source=source)


@pytest.mark.parametrize("program", sorted(EXAMPLES.glob("*.dsl")), ids=lambda p: p.stem)
def test_the_fast_driver_builds_the_examples_as_lark_does(program: Path) -> None:
    source = program.read_text(encoding="utf-8")
    assert by_fast(source) == by_lark(source)


TRICKY = [
    "x = -1 - -2\nreturn x",  # `-` as unary MINUS and as ADDOP
    "format = 1\nreturn format",  # a name starting with a keyword
    'x = [1, 2,]\ny = {"a": (1 +\n  2), }\nreturn x',  # newlines inside brackets
    "# c\nif 1 > 2:  # why\n    x = 1\n    # more\nelif 2 > 1:\n    x = 2\n"
    "else:\n  x = 3\nreturn x",
    """return f"{1 + 2:>5} and {'q'}" + 'it\\'s'""",
    "return map([1, 2], lambda a: a * 2.5e3)",
    "x = 1 \\\n  + 2\nreturn x",  # a line continuation
    "for a in [1]:\n\tfor b in [2]:\n\t\tprint(a, b)\nreturn None",
]


@pytest.mark.parametrize("source", TRICKY)
def test_the_fast_driver_agrees_with_lark_on_tricky_lexing(source: str) -> None:
    assert by_fast(source) == by_lark(source)


@pytest.mark.parametrize(
    "source",
    ["import os", "x = (1", "x = 1\n  y = 2", "return x.__class__", "x = $", "x = 1 ** 2"],
)
def test_text_the_grammar_refuses_is_left_to_lark(source: str) -> None:
    with pytest.raises(NotTaken):
        by_fast(source)
    assert isinstance(parser.parse_program(source), Finding)


@settings(max_examples=200, deadline=None)
@given(programs())
def test_the_fast_driver_agrees_with_lark_on_generated_programs(source: str) -> None:
    assert by_fast(source) == by_lark(source)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab1 =+-*()[]{}:,.\n\t#\"'f\\", max_size=60))
def test_on_any_text_the_fast_driver_agrees_with_lark_or_gives_up(text: str) -> None:
    try:
        reference: n.Program | None = by_lark(text)
    except Exception:
        reference = None
    try:
        fast: n.Program | None = by_fast(text)
    except Exception:
        fast = None
    assert fast is None or fast == reference
