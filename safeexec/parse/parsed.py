"""What :func:`safeexec.parse.parse` returns, and the building of a failure that points at the code.

A failure's finding carries a span in the model's convention (1-based, inclusive end) and, as
evidence, the source line (control characters made visible) with a caret line under the column.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from safeexec.model.fieldwise import Fieldwise
from safeexec.model.values import Action, Finding, Span
from safeexec.policy.engine_rules import engine_finding
from safeexec.policy.schema import Rule

__all__ = ["ParseFailure", "Parsed"]

_EVIDENCE_BEFORE = 80
_EVIDENCE_AFTER = 80


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Parsed:
    """A successfully parsed action. ``code`` is the exact text that was checked and will run."""

    action: Action
    code: str
    tree: ast.Module


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ParseFailure(Fieldwise):
    """Why an action could not be parsed; ``finding`` is an ``SX0xx`` deny finding with a span."""

    action: Action
    finding: Finding


def _lines(code: str) -> list[str]:
    return code.split("\n")


def _fail(
    action: Action,
    rule: Rule,
    message: str,
    *,
    span: Span | None = None,
    evidence: str = "",
) -> ParseFailure:
    return ParseFailure(
        action=action, finding=engine_finding(rule, message, span=span, evidence=evidence)
    )


def _fail_at(action: Action, code: str, rule: Rule, message: str, index: int) -> ParseFailure:
    """A finding pointing at character ``index`` of ``code`` (any newline convention)."""
    before = code[:index]
    line = before.count("\n") + before.count("\r") - before.count("\r\n") + 1
    line_start = max(before.rfind("\n"), before.rfind("\r")) + 1
    column = index - line_start + 1
    flat = code.replace("\r\n", "\n").replace("\r", "\n")
    return _fail(
        action, rule, message, span=_point(flat, line, column), evidence=_caret(flat, line, column)
    )


def _char_column(code: str, line: int, byte_offset: int) -> int:
    """1-based character column of a 0-based UTF-8 byte offset on ``line`` (ast's convention)."""
    lines = _lines(code)
    if not 1 <= line <= len(lines):
        return 1
    return len(lines[line - 1].encode("utf-8")[:byte_offset].decode("utf-8", "replace")) + 1


def _point(code: str, line: int, column: int) -> Span:
    return _span(code, line, column, line, column + 1)


def _span(code: str, line: int, column: int, end_line: int, end_column: int) -> Span:
    """A Span from CPython's convention (``end_column`` one past the last character)."""
    line = max(1, min(line, len(_lines(code))))
    column = max(1, column)
    if end_line < line or (end_line == line and end_column <= column):
        end_line, end_column = line, column + 1
    return Span(start_line=line, start_column=column, end_line=end_line, end_column=end_column - 1)


def _caret(code: str, line: int, column: int, end_line: int = 0, end_column: int = 0) -> str:
    """The source line (control characters made visible) and a caret line under ``column``."""
    lines = _lines(code)
    line = max(1, min(line, len(lines)))
    text = _visible(lines[line - 1])
    column = max(1, min(column, len(text) + 1))
    width = end_column - column if end_line == line and end_column > column else 1
    width = max(1, min(width, len(text) + 2 - column, _EVIDENCE_AFTER))
    if len(text) > _EVIDENCE_BEFORE + _EVIDENCE_AFTER:
        # A long line is cut to a window around the column, so evidence stays readable.
        start = max(0, column - 1 - _EVIDENCE_BEFORE)
        end = min(len(text), column - 1 + _EVIDENCE_AFTER)
        head = "…" if start > 0 else ""
        text = head + text[start:end] + ("…" if end < len(text) else "")
        column = column - start + len(head)
    indent = "".join("\t" if char == "\t" else " " for char in text[: column - 1])
    return f"{text}\n{indent}{'^' * width}"


def _visible(text: str) -> str:
    """Control characters (except tab) as Unicode control pictures, surrogates as U+FFFD; 1:1."""
    return "".join(
        chr(0x2400 + ord(char))
        if ord(char) < 0x20 and char != "\t"
        else "\ufffd"
        if "\ud800" <= char <= "\udfff"
        else char
        for char in text
    )
