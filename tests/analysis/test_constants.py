"""String folding: what obfuscated constants evaluate to, without building huge strings."""

from __future__ import annotations

import ast

import pytest

from safeexec.analysis.constants import StringFolder


def _fold(expr: str, **bindings: str | None) -> str | None:
    return StringFolder(bindings).fold(ast.parse(expr, mode="eval").body)


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("'__cla' + 'ss__'", "__class__"),
        ("''.join(['__', 'class', '__'])", "__class__"),
        ("'-'.join(('a', 'b'))", "a-b"),
        ("'__ssalc__'[::-1]", "__class__"),
        ("'x__class__y'[1:-1]", "__class__"),
        ("chr(95) * 2 + 'class' + chr(95) * 2", "__class__"),
        ("'%s%s' % ('__cla', 'ss__')", "__class__"),
        ("'{}{}'.format('__cla', 'ss__')", "__class__"),
        ("f\"{'__cl'}ass__\"", "__class__"),
        ("'__CLASS__'.lower()", "__class__"),
        ("'__clXss__'.replace('X', 'a')", "__class__"),
        ("b'os'.decode()", "os"),
        ("str('os')", "os"),
    ],
)
def test_obfuscated_constants_fold(expr: str, value: str) -> None:
    assert _fold(expr) == value


def test_names_bound_once_fold_through_bindings() -> None:
    assert _fold("a + 'ss__'", a="__cla") == "__class__"
    assert _fold("a + 'x'", a=None) is None
    assert _fold("unknown + 'x'") is None


@pytest.mark.parametrize(
    "expr",
    [
        "'%1000000000s' % 'a'",  # a width would make the host build a huge string
        "'{:>1000000000}'.format('a')",
        "'{0.__class__}'.format('a')",  # field walks must never run in the host
        "'a' * 10**9",
        "'ab' * 100000",
        "'-'.join(['x' * 4000, 'y' * 4000])",
        "('a' * 4000).replace('a', 'bbbb')",
        "input() + 'x'",
        "'abc'[n]",
    ],
)
def test_unsafe_or_unknown_expressions_do_not_fold(expr: str) -> None:
    assert _fold(expr) is None


def test_deep_nesting_does_not_recurse_without_bound() -> None:
    expr = " + ".join(["'a'"] * 300)
    assert _fold(expr) is None  # too deep to fold: unknown, not a crash
