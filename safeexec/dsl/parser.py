"""Text → :class:`~safeexec.dsl.nodes.Program`, or an ``SX700`` finding with line, column, caret
and a suggestion. The grammar file ``grammar.lark`` beside this module is the syntax.

Two front ends, one language: a text is first read by CPython's own parser and converted
(:mod:`safeexec.dsl.python_front`, which takes a text only when its Python parse is exactly its
DSL parse); any text it does not take is parsed by lark (:mod:`safeexec.dsl.lark_parse`), the
reference, which makes every refusal and its message. Tests prove both build the same trees.
"""

from __future__ import annotations

import re
from functools import lru_cache

from safeexec.dsl import nodes as n
from safeexec.dsl.python_front import expression_from_python, program_from_python
from safeexec.dsl.rules import SYNTAX, dsl_finding
from safeexec.dsl.syntax_hints import KEYWORD_HINTS, caret
from safeexec.model.values import Finding, Span

__all__ = [
    "MAX_DEPTH",
    "MAX_SOURCE_CHARS",
    "DslParseError",
    "forget_parses",
    "parse_expression",
    "parse_program",
]

MAX_SOURCE_CHARS = 200_000
MAX_DEPTH = 100

# Strings and comments are skipped whole, so a keyword inside them is not a construct.
_WORD_OR_SKIP = re.compile(
    r"f?\"(?:[^\"\\]|\\.)*\"?|f?'(?:[^'\\]|\\.)*'?|#.*|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
)


# Finds at least every word the careful scan below would (a word there starts after a non-letter).
_ANY_RESERVED = re.compile(
    r"(?<![A-Za-z_])(?:"
    + "|".join(sorted(w for w in KEYWORD_HINTS if w != "lambda"))
    + r")(?![A-Za-z0-9_])"
)


class DslParseError(Exception):
    """Raised by :func:`parse_expression` for text that is not a DSL expression."""


def parse_program(source: str) -> n.Program | Finding:
    """Parse a whole program; never raises for any ``source`` (a bad one is an SX700 finding).

    Results are immutable and cached by the exact text: the gate and the in-process backend
    parse the same program once between them.
    """
    return _parse_cached(source)


def forget_parses() -> None:
    """Empty the parse cache (benchmarks measure cold parses with it)."""
    _parse_cached.cache_clear()


@lru_cache(maxsize=64)
def _parse_cached(source: str) -> n.Program | Finding:
    if len(source) > MAX_SOURCE_CHARS:
        return dsl_finding(
            SYNTAX,
            f"the program has {len(source)} characters, more than {MAX_SOURCE_CHARS}; "
            "split the work into smaller steps",
            span=None,
        )
    text = source.replace("\r\n", "\n")
    too_deep = _too_deep(text)
    if too_deep is not None:
        return too_deep
    program = program_from_python(text, parse_expression)
    if program is not None:  # never for a text with a keyword the DSL lacks (each is a Python
        return program  # node the conversion refuses), so the search for one waits for lark
    return _by_lark(text, _first_reserved_word(text))


def _by_lark(text: str, reserved: tuple[int, int, str] | None) -> n.Program | Finding:
    """The reference parse (lark, imported on first use), which makes every refusal."""
    from safeexec.dsl.lark_parse import lark_program

    return lark_program(text, reserved, parse_expression)


def parse_expression(text: str, *, line: int, column: int) -> n.Expr:
    """Parse ``text`` as one expression whose first character is at ``line``/``column``
    (f-string parts); raises :class:`DslParseError`."""
    fast = expression_from_python(text, parse_expression, line=line, column=column)
    if fast is not None:
        return fast
    from safeexec.dsl.lark_parse import lark_expression

    built = lark_expression(text, parse_expression, line=line, column=column)
    if built is None:
        raise DslParseError(f"bad expression {text!r} in an f-string at line {line}")
    if "\n" in text:
        raise DslParseError(f"an f-string expression at line {line} spans lines")
    return built


def _too_deep(text: str) -> Finding | None:
    if text.count("(") + text.count("[") + text.count("{") <= MAX_DEPTH:
        return None  # too few brackets to nest too deep (most programs): no walk
    depth = 0
    for line_no, line in enumerate(text.split("\n"), start=1):
        for col, char in enumerate(line, start=1):
            if char in "([{":
                depth += 1
                if depth > MAX_DEPTH:
                    span = Span(
                        start_line=line_no, start_column=col, end_line=line_no, end_column=col
                    )
                    return dsl_finding(
                        SYNTAX,
                        f"brackets nest deeper than {MAX_DEPTH} levels at line {line_no}; "
                        "bind parts to names",
                        span=span,
                        evidence=caret(text, span),
                    )
            elif char in ")]}":
                depth = max(0, depth - 1)
    return None


def _first_reserved_word(text: str) -> tuple[int, int, str] | None:
    """The first Python keyword the DSL lacks (outside strings and comments), as line, column."""
    if _ANY_RESERVED.search(text) is None:
        return None  # none anywhere, so none outside strings either (most programs): no walk
    for line_no, line in enumerate(text.split("\n"), start=1):
        if _ANY_RESERVED.search(line) is None:
            continue  # nor on this line (a keyword in a string elsewhere): no walk of its words
        for match in _WORD_OR_SKIP.finditer(line):
            word = match.group("word")
            if word is not None and word in KEYWORD_HINTS and word != "lambda":
                return line_no, match.start() + 1, word
    return None
