"""The parse with libcst's cross-check only where needed agrees with the parse that always runs it.

Differential over every corpus of Python this repository holds (policy-pack cases, the
model-style corpus, the examples, the escape tests' sources, the benchmark's programs) and over
generated programs: same outcome, same checked text and tree, same finding.
"""

from __future__ import annotations

import ast
import re
import sys
import tokenize
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeexec.model.values import Action
from safeexec.parse import Parsed, ParseFailure, parse
from safeexec.parse.cross_check import _GLUED_NUMBER

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus"))
from python_texts import python_corpus

CORPUS = python_corpus()


def _assert_same(code: str) -> Parsed | ParseFailure:
    action = Action.create(code)
    fast = parse(action)
    full = parse(action, always_cross_check=True)
    if isinstance(full, ParseFailure):
        assert isinstance(fast, ParseFailure), full.finding
        assert fast.finding == full.finding
    else:
        assert isinstance(fast, Parsed), fast.finding
        assert fast.code == full.code
        assert ast.dump(fast.tree, include_attributes=True) == ast.dump(
            full.tree, include_attributes=True
        )
    return fast


def test_the_corpora_are_not_empty() -> None:
    assert len(CORPUS) > 100
    parsed = [isinstance(parse(Action.create(code)), Parsed) for code in CORPUS.values()]
    assert sum(parsed) > 100  # most of the corpus is valid Python: the Parsed branch is compared


@pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_both_paths_agree_on_the_corpus(name: str) -> None:
    _assert_same(CORPUS[name])


@pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_both_paths_agree_on_generated_programs(program: str) -> None:
    _assert_same(program)


# The glued-number pattern without the lookahead that lets its search skip to digits and dots.
_PLAIN_GLUED_NUMBER = re.compile(rf"(?<![\w])(?>{tokenize.Number})[A-Za-z_]")
_NUMBERISH = "0123456789._xXoObBeEjJ+-afinorl ()\n"


def _glued_spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text)]


@pytest.mark.parametrize("text", ["1in x", "0x1for", "1.if", ".5j_", "1_0else", "1e5if", "0o7and"])
def test_the_glued_number_search_finds_each_kind_of_literal(text: str) -> None:
    assert _glued_spans(_GLUED_NUMBER, text) == _glued_spans(_PLAIN_GLUED_NUMBER, text) != []


def test_the_glued_number_search_matches_the_plain_pattern_on_the_corpus() -> None:
    for text in CORPUS.values():
        assert _glued_spans(_GLUED_NUMBER, text) == _glued_spans(_PLAIN_GLUED_NUMBER, text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_NUMBERISH, max_size=40))
def test_the_glued_number_search_matches_the_plain_pattern_on_generated_text(text: str) -> None:
    assert _glued_spans(_GLUED_NUMBER, text) == _glued_spans(_PLAIN_GLUED_NUMBER, text)
