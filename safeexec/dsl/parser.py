"""Text → :class:`~safeexec.dsl.nodes.Program`, or an ``SX700`` finding with line, column, caret
and a suggestion. The grammar file ``grammar.lark`` beside this module is the syntax.

Lark compiles the grammar into LALR tables once per process. An accepted program is parsed by
:mod:`safeexec.dsl.lalr`, a lean driver of those same tables; any text it does not take is parsed
by lark itself, which is the reference and makes every refusal and its message.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from importlib import resources

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
from safeexec.dsl.build import build_expression, build_program, builder
from safeexec.dsl.lalr import FastParser
from safeexec.dsl.rules import SYNTAX, dsl_finding
from safeexec.model import Finding, Span

__all__ = [
    "MAX_DEPTH",
    "MAX_SOURCE_CHARS",
    "DslParseError",
    "caret",
    "forget_parses",
    "parse_expression",
    "parse_program",
]

MAX_SOURCE_CHARS = 200_000
MAX_DEPTH = 100

# What a Python programmer reaches for first, and what the DSL offers instead.
_KEYWORD_HINTS = {
    "import": "the DSL has no imports; granted tools are names you call directly",
    "from": "the DSL has no imports; granted tools are names you call directly",
    "def": "the DSL has no function definitions; pass `lambda x: ...` to an op such as map",
    "class": 'the DSL has no classes; build records with {"field": value}',
    "while": "the DSL has no while; loop with `for x in <collection>` (its size is bounded)",
    "try": "the DSL has no try; a failing tool call ends the program with an error",
    "with": "the DSL has no with-statements",
    "raise": "the DSL has no raise; return a value that says what went wrong",
    "del": "bindings cannot be deleted; bind a new name",
    "global": "the DSL has no scopes to declare",
    "nonlocal": "the DSL has no scopes to declare",
    "yield": "the DSL has no generators",
    "async": "the DSL has no async code",
    "await": "the DSL has no async code",
    "assert": "the DSL has no assert; use `if` and return a value",
    "lambda": "a lambda is allowed only as an argument of an op, e.g. map(xs, lambda x: x.price)",
    "pass": "the DSL has no pass; leave the branch out",
    "break": "the DSL has no break; use take(xs, n) or filter before the loop",
    "continue": "the DSL has no continue; use filter(xs, lambda x: ...) before the loop",
    "is": "use == or != to compare values",
}
_SYMBOL_HINTS = {
    "_": "names starting with `_` do not exist in the DSL (there are no attributes to reach)",
    "@": "the DSL has no decorators or matrix operator",
    ";": "write one statement per line",
    "*": "the DSL has no power operator or unpacking; multiply with `*` between two numbers",
    "=": "write one assignment per line (`name = value`); chained or keyword-only use is not DSL",
}


# Strings and comments are skipped whole, so a keyword inside them is not a construct.
_WORD_OR_SKIP = re.compile(
    r"f?\"(?:[^\"\\]|\\.)*\"?|f?'(?:[^'\\]|\\.)*'?|#.*|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
)


# Finds at least every word the careful scan below would (a word there starts after a non-letter).
_ANY_RESERVED = re.compile(
    r"(?<![A-Za-z_])(?:"
    + "|".join(sorted(w for w in _KEYWORD_HINTS if w != "lambda"))
    + r")(?![A-Za-z0-9_])"
)


class DslParseError(Exception):
    """Raised by :func:`parse_expression` for text that is not a DSL expression."""


class _DslIndenter(Indenter):
    """Python-style blocks: INDENT/DEDENT tokens from leading whitespace, none inside brackets."""

    NL_type = "_NL"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]  # noqa: RUF012 - lark reads these class lists
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]  # noqa: RUF012
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8


@cache
def _grammar() -> str:
    return resources.files("safeexec.dsl").joinpath("grammar.lark").read_text(encoding="utf-8")


@cache
def _parser() -> Lark:
    # Built once per process (about 100 ms). Lark's ``cache=`` option would skip that, but it
    # keeps a pickle in the shared temp directory, and loading a planted pickle runs its code.
    return Lark(
        _grammar(),
        parser="lalr",
        postlex=_DslIndenter(),
        start=["start", "expr"],
        propagate_positions=True,
        maybe_placeholders=False,
    )


@cache
def _fast() -> FastParser:
    indenter = _DslIndenter
    return FastParser(
        _parser(),
        indent_types=(indenter.NL_type, indenter.INDENT_type, indenter.DEDENT_type),
        parens=indenter.OPEN_PAREN_types,
        closers=indenter.CLOSE_PAREN_types,
        tab_len=indenter.tab_len,
    )


def _fast_parse(text: str, start: str, offset: tuple[int, int]) -> object | None:
    """The fast driver's tree, or ``None`` when it does not take ``text`` (then lark decides)."""
    try:
        return _fast().parse(text, start, builder(parse_expression, offset=offset))
    except Exception:  # anything it cannot take, lark parses again and explains
        return None


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
    reserved = _first_reserved_word(text)
    if reserved is None:
        fast = _fast_parse(text + "\n", "start", (1, 1))
        if isinstance(fast, n.Program):
            return n.Program(body=fast.body, source=text)
    try:
        tree = _parser().parse(text + "\n", start="start")
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


def parse_expression(text: str, *, line: int, column: int) -> n.Expr:
    """Parse ``text`` as one expression whose first character is at ``line``/``column``
    (f-string parts); raises :class:`DslParseError`."""
    if "\n" not in text:
        fast = _fast_parse(text, "expr", (line, column))
        if isinstance(fast, n.Expr):
            return fast
    try:
        tree = _parser().parse(text, start="expr")
    except LarkError as exc:
        raise DslParseError(f"bad expression {text!r} in an f-string at line {line}") from exc
    if "\n" in text:
        raise DslParseError(f"an f-string expression at line {line} spans lines")
    return build_expression(tree, parse_expression, offset=(line, column))


def caret(source: str, span: Span | None) -> str:
    """The source line of ``span`` with a caret under its first character (empty without one)."""
    if span is None:
        return ""
    lines = source.split("\n")
    if not 1 <= span.start_line <= len(lines):
        return ""
    line = lines[span.start_line - 1]
    return f"{line}\n{' ' * (span.start_column - 1)}^"


_BRACKET = re.compile(r"[(\[{]")


def _too_deep(text: str) -> Finding | None:
    if len(_BRACKET.findall(text)) <= MAX_DEPTH:
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
        for match in _WORD_OR_SKIP.finditer(line):
            word = match.group("word")
            if word is not None and word in _KEYWORD_HINTS and word != "lambda":
                return line_no, match.start() + 1, word
    return None


def _before(span: Span, where: tuple[int, int, str]) -> bool:
    return (span.start_line, span.start_column) < (where[0], where[1])


def _syntax_finding_at(where: tuple[int, int, str], text: str) -> Finding:
    line, column, word = where
    span = Span(
        start_line=line, start_column=column, end_line=line, end_column=column + len(word) - 1
    )
    message = f"line {line}, column {column}: `{word}` is not DSL syntax; {_KEYWORD_HINTS[word]}"
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
        message += _KEYWORD_HINTS["lambda"]
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
        if value in _KEYWORD_HINTS:
            return f"`{value}`", _KEYWORD_HINTS[value]
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
