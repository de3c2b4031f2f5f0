"""What a refused DSL text is told: the hint for each Python keyword the DSL lacks, and the
source line with a caret under the refused spot (shared by both parsers)."""

from __future__ import annotations

from safeexec.model.values import Span

__all__ = ["KEYWORD_HINTS", "caret"]

# What a Python programmer reaches for first, and what the DSL offers instead.
KEYWORD_HINTS = {
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


def caret(source: str, span: Span | None) -> str:
    """The source line of ``span`` with a caret under its first character (empty without one)."""
    if span is None:
        return ""
    lines = source.split("\n")
    if not 1 <= span.start_line <= len(lines):
        return ""
    line = lines[span.start_line - 1]
    return f"{line}\n{' ' * (span.start_column - 1)}^"
