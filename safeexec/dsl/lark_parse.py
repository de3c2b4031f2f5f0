"""The reference front end: lark's LALR parser over ``grammar.lark``, and the finding (line,
column, caret, suggestion) for every text it refuses.

:mod:`safeexec.dsl.parser` asks it for every text the CPython front end does not take. It is
imported then, not before: a program CPython's parser takes never loads lark.
"""

from __future__ import annotations

from functools import cache

from lark import Lark, Token
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)
from lark.indenter import DedentError, Indenter

from safeexec.dsl import nodes as n
from safeexec.dsl.build import build_expression, build_program
from safeexec.dsl.literals import ParseExpression, grammar_text
from safeexec.dsl.rules import SYNTAX, dsl_finding
from safeexec.dsl.syntax_hints import KEYWORD_HINTS, caret
from safeexec.model.values import Finding, Span

__all__ = ["lark_expression", "lark_parser", "lark_program"]

_SYMBOL_HINTS = {
    "_": "names starting with `_` do not exist in the DSL (there are no attributes to reach)",
    "@": "the DSL has no decorators or matrix operator",
    ";": "write one statement per line",
    "*": "the DSL has no power operator or unpacking; multiply with `*` between two numbers",
    "=": "write one assignment per line (`name = value`); chained or keyword-only use is not DSL",
}


class _DslIndenter(Indenter):
    """Python-style blocks: INDENT/DEDENT tokens from leading whitespace, none inside brackets."""

    NL_type = "_NL"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]  # noqa: RUF012 - lark reads these class lists
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]  # noqa: RUF012
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8


@cache
def lark_parser() -> Lark:
    """The grammar's parser, built once per process (about 100 ms)."""
    # Lark's ``cache=`` option would skip that, but it keeps a pickle in the shared temp
    # directory, and loading a planted pickle runs its code.
    return Lark(
        grammar_text(),
        parser="lalr",
        postlex=_DslIndenter(),
        start=["start", "expr"],
        propagate_positions=True,
        maybe_placeholders=False,
    )


def lark_program(
    text: str, reserved: tuple[int, int, str] | None, parse_expression: ParseExpression
) -> n.Program | Finding:
    """``text`` (``\\n`` line ends) parsed by lark, or the finding for its first non-DSL
    construct; ``reserved`` is the first Python keyword the DSL lacks, if any."""
    try:
        tree = lark_parser().parse(text + "\n", start="start")
        if reserved is None:
            return build_program(tree, text, parse_expression)
    except UnexpectedInput as exc:
        found = _syntax_finding(exc, text)
        if reserved is None or (found.span is not None and _before(found.span, reserved)):
            return found
    except DedentError as exc:
        return dsl_finding(SYNTAX, f"inconsistent indentation: {exc}", span=None)
    except VisitError as exc:  # a bad f-string part, raised while building the tree
        return dsl_finding(SYNTAX, f"not a DSL program: {str(exc.orig_exc)[:200]}", span=None)
    except (LarkError, RecursionError) as exc:
        return dsl_finding(SYNTAX, f"not a DSL program: {str(exc)[:200]}", span=None)
    assert reserved is not None
    return _syntax_finding_at(reserved, text)


def lark_expression(
    text: str, parse_expression: ParseExpression, *, line: int, column: int
) -> n.Expr | None:
    """``text`` parsed by lark as one expression placed at ``line``/``column``, or ``None``."""
    try:
        tree = lark_parser().parse(text, start="expr")
    except LarkError:
        return None
    return build_expression(tree, parse_expression, offset=(line, column))


def _before(span: Span, where: tuple[int, int, str]) -> bool:
    return (span.start_line, span.start_column) < (where[0], where[1])


def _syntax_finding_at(where: tuple[int, int, str], text: str) -> Finding:
    line, column, word = where
    span = Span(
        start_line=line, start_column=column, end_line=line, end_column=column + len(word) - 1
    )
    message = f"line {line}, column {column}: `{word}` is not DSL syntax; {KEYWORD_HINTS[word]}"
    return dsl_finding(SYNTAX, message, span=span, evidence=caret(text, span))


def _syntax_finding(exc: UnexpectedInput, text: str) -> Finding:
    line = max(1, int(getattr(exc, "line", 1) or 1))
    column = max(1, int(getattr(exc, "column", 1) or 1))
    before = _line_before(text, line, column)
    if before.endswith("*") and _rest_of_line(text, line, column).startswith("*"):
        column -= 1  # `**`: the first star lexed as multiplication
    elif _word_before(before) == "lambda":
        column = len(before.rstrip()) - len("lambda") + 1
        span = Span(start_line=line, start_column=column, end_line=line, end_column=column + 5)
        message = f"line {line}, column {column}: `lambda` is not DSL syntax here; "
        message += KEYWORD_HINTS["lambda"]
        return dsl_finding(SYNTAX, message, span=span, evidence=caret(text, span))
    what, hint = _describe(exc, text, line, column)
    span = Span(start_line=line, start_column=column, end_line=line, end_column=column)
    message = f"line {line}, column {column}: {what} is not DSL syntax; {hint}"
    return dsl_finding(SYNTAX, message, span=span, evidence=caret(text, span))


def _describe(exc: UnexpectedInput, text: str, line: int, column: int) -> tuple[str, str]:
    if isinstance(exc, UnexpectedCharacters):
        char = exc.char
        rest = _rest_of_line(text, line, column)
        if rest.startswith("**"):
            return "`**`", _SYMBOL_HINTS["*"]
        word = _word_at(rest)
        if word.startswith("_"):
            return f"`{word}`", _SYMBOL_HINTS["_"]
        return f"`{char}`", _SYMBOL_HINTS.get(
            char, "remove it or write it as DSL (see dsl/SPEC.md)"
        )
    if isinstance(exc, UnexpectedToken):
        token: Token = exc.token
        if token.type == "$END":
            return "the end of the program", "something is missing before it (a closing bracket?)"
        value = str(token)
        if value in KEYWORD_HINTS:
            return f"`{value}`", KEYWORD_HINTS[value]
        if token.type == "LPAR" and _after_field(text, line, column):
            return (
                "a method call",
                "there are no methods; call ops by name: lower(s), not s.lower()",
            )
        if token.type == "_INDENT":
            return "an indented line", "indent only the body of a `for` or an `if`"
        if exc.expected == {"_NL"} and _starts_line(text, line, column):
            return "an unindented line", "indent the body of the `for` or `if` above it"
        if value == "for":
            return "`for` inside an expression", "use map(xs, lambda x: ...) and filter(...)"
        if value in _SYMBOL_HINTS:
            return f"`{value}`", _SYMBOL_HINTS[value]
        expected = ", ".join(sorted(_readable(e) for e in exc.expected)[:8])
        return f"`{value.strip() or token.type}`", f"expected one of: {expected}"
    return "this text", "see dsl/SPEC.md for the syntax"


def _starts_line(text: str, line: int, column: int) -> bool:
    lines = text.split("\n")
    return 1 <= line <= len(lines) and not lines[line - 1][: column - 1].strip()


def _line_before(text: str, line: int, column: int) -> str:
    lines = text.split("\n")
    return lines[line - 1][: column - 1] if 1 <= line <= len(lines) else ""


def _word_before(before: str) -> str:
    stripped = before.rstrip()
    return stripped[len(stripped.rstrip("abcdefghijklmnopqrstuvwxyz")) :]


def _rest_of_line(text: str, line: int, column: int) -> str:
    lines = text.split("\n")
    return lines[line - 1][column - 1 :] if 1 <= line <= len(lines) else ""


def _word_at(rest: str) -> str:
    out = []
    for char in rest:
        if not (char.isalnum() or char == "_"):
            break
        out.append(char)
    return "".join(out)


def _after_field(text: str, line: int, column: int) -> bool:
    lines = text.split("\n")
    before = lines[line - 1][: column - 1].rstrip() if 1 <= line <= len(lines) else ""
    stem = before.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
    return stem.endswith(".")


_TERMINAL_NAMES = {
    "NAME": "a name", "INT": "a number", "FLOAT": "a number", "STRING": "a string",
    "FSTRING": "an f-string", "LPAR": "`(`", "RPAR": "`)`", "LSQB": "`[`", "RSQB": "`]`",
    "LBRACE": "`{`", "RBRACE": "`}`", "COLON": "`:`", "COMMA": "`,`", "_NL": "a new line",
    "EQUAL": "`=`", "DOT": "`.`", "COMPOP": "a comparison", "ADDOP": "`+`/`-`",
    "MULOP": "`*`/`/`", "_DEDENT": "the end of the block", "_INDENT": "an indented block",
}  # fmt: skip


def _readable(terminal: str) -> str:
    return _TERMINAL_NAMES.get(terminal, f"`{terminal.lower()}`")
