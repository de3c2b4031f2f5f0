"""What both front ends share about the DSL's tokens: the shapes of its terminals as the grammar
file writes them, string-literal bodies, and f-string parts.

:func:`terminal` reads a terminal's regular expressions out of ``grammar.lark`` itself (no lark
needed), so the CPython front end (:mod:`safeexec.dsl.python_front`) checks literals against the
same patterns lark lexes with; a test compares them with lark's compiled terminals.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from importlib import resources

from safeexec.dsl import nodes as n

__all__ = ["DslSyntaxError", "fstring_parts", "grammar_text", "terminal", "unescape"]

ParseExpression = Callable[..., n.Expr]

_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t"}


class DslSyntaxError(ValueError):
    """A malformed f-string, found while building the tree."""


@cache
def grammar_text() -> str:
    """The grammar file's text (``grammar.lark`` beside this module)."""
    return resources.files("safeexec.dsl").joinpath("grammar.lark").read_text(encoding="utf-8")


@cache
def terminal(name: str) -> re.Pattern[str]:
    """The grammar's terminal ``name`` (written as ``/regex/`` alternatives) as one pattern."""
    found = re.search(rf"^{name}(?:\.\d+)?:((?:\s*\|?\s*/(?:[^/\\\n]|\\.)*/)+)\s*$",
                      grammar_text(), re.M)  # fmt: skip
    if found is None:
        raise LookupError(f"grammar.lark has no regular terminal {name!r}")
    alternatives = re.findall(r"/((?:[^/\\\n]|\\.)*)/", found.group(1))
    return re.compile("|".join(f"(?:{a})" for a in alternatives))


def unescape(body: str) -> str:
    """The text of a string literal's body (the grammar admits only ``\\\\ \\" \\' \\n \\t``)."""
    if "\\" not in body:
        return body  # no escape (most literals): the body is the text
    out: list[str] = []
    chars = iter(body)
    for char in chars:
        out.append(_ESCAPES[next(chars)] if char == "\\" else char)
    return "".join(out)


def fstring_parts(
    body: str, line: int, column: int, parse_expression: ParseExpression
) -> list[str | tuple[n.Expr, str]]:
    """Split an f-string's body into text and ``(expression, format spec)`` parts; the body's
    first character is at ``line``/``column``. Raises :class:`DslSyntaxError`."""
    parts: list[str | tuple[n.Expr, str]] = []
    text: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char in "{}" and body[i : i + 2] in ("{{", "}}"):
            text.append(char)
            i += 2
            continue
        if char == "}":
            raise DslSyntaxError(f"a single `}}` in an f-string at line {line}; write `}}}}`")
        if char != "{":
            text.append(char)
            i += 1
            continue
        end = body.find("}", i)
        if end < 0:
            raise DslSyntaxError(f"an unclosed `{{` in an f-string at line {line}")
        inner = body[i + 1 : end]
        expression, spec = _split_spec(inner)
        if "{" in inner or not expression.strip():
            raise DslSyntaxError(f"an empty or nested `{{...}}` in an f-string at line {line}")
        if text:
            parts.append(unescape("".join(text)))
            text = []
        parts.append((parse_expression(expression, line=line, column=column + i + 1), spec))
        i = end + 1
    if text:
        parts.append(unescape("".join(text)))
    return parts


def _split_spec(inner: str) -> tuple[str, str]:
    depth = 0
    quote = ""
    for i, char in enumerate(inner):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == ":" and depth == 0:
            return inner[:i], inner[i + 1 :]
    return inner, ""
