"""The nesting measure's literal count: its one-literal fast path counts as the tokenizer does."""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeexec.parse import _segment, _string_literal_count

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus"))
from python_texts import python_corpus


def _tokenized_count(segment: str) -> int:
    """The count by the tokenizer alone (the path the fast path skips)."""
    tokens = tokenize.generate_tokens(io.StringIO(f"({segment}\n)").readline)
    try:
        return sum(1 for token in tokens if token.type == tokenize.STRING)
    except (tokenize.TokenError, SyntaxError):
        return 1


@pytest.mark.parametrize(
    "segment",
    [
        '"a" "b"',
        "'''a''' '''b'''",
        "'a' f'b'",
        '"""a""" "b"',
        "'''a''''",
        "'a\\\nb'",
        '"a"\n"b"',
        "'it\\'s'",
        '"""doc with \\" and \' inside"""',
    ],
)
def test_adjacent_and_tricky_literals_count_as_the_tokenizer_counts(segment: str) -> None:
    assert _string_literal_count(segment) == _tokenized_count(segment)


def test_every_string_in_the_corpus_counts_as_the_tokenizer_counts() -> None:
    checked = 0
    for text in python_corpus().values():
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        lines = text.splitlines()
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr) or (
                isinstance(node, ast.Constant) and isinstance(node.value, str | bytes)
            ):
                segment = _segment(lines, node)
                assert _string_literal_count(segment) == _tokenized_count(segment), segment
                checked += 1
    assert checked > 1000


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="'\"\\ \nabfr{}", max_size=24))
def test_generated_quote_soup_counts_as_the_tokenizer_counts(segment: str) -> None:
    assert _string_literal_count(segment) == _tokenized_count(segment)
