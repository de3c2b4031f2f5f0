"""libcst's cross-check of CPython's parse, run on text the two parsers may read differently.

Where it runs, and why only there, is the design decision written in :mod:`safeexec.parse`.
libcst is imported on first use only: importing it costs a one-shot CLI run more than the rest
of a check.
"""

from __future__ import annotations

import ast
import re
import sys
import tokenize
import unicodedata
from typing import TYPE_CHECKING

from safeexec.model.values import Action
from safeexec.parse.parsed import Parsed, ParseFailure, _caret, _fail, _point
from safeexec.policy.engine_rules import NESTING_TOO_DEEP, PARSER_MISMATCH

if TYPE_CHECKING:
    import libcst

_UNUSUAL = re.compile("[^\t\n\x20-\x7e]")
# A number literal directly followed by a letter (``1in``, ``0x1for``, ``1e5x``): CPython's
# tokenizer splits it, libcst's does not. Atomic, so ``1e5`` is not read as ``1`` before ``e``;
# a match inside a string or comment only sends the text through the cross-check. Every number
# literal starts with a digit or a dot: the leading lookahead lets the search skip to those
# (4x faster on plain code; the same matches, see tests/test_parse_cross_check.py).
_GLUED_NUMBER = re.compile(rf"(?=[0-9.])(?<![\w])(?>{tokenize.Number})[A-Za-z_]")


def _parsers_may_differ(code: str) -> bool:
    """Is ``code`` in a class of text that CPython and libcst are known to read differently?"""
    return (
        _UNUSUAL.search(code) is not None
        or "\\\n" in code
        or _GLUED_NUMBER.search(code) is not None
    )


def _concrete_check(
    action: Action, code: str, tree: ast.Module, *, needs_normalising: bool
) -> Parsed | ParseFailure:
    """Parse ``code`` with libcst too and cross-check its tree against CPython's."""
    import libcst  # only here: importing it costs a one-shot CLI run more than the rest of a check

    # libcst's native parser reads its newest grammar whatever the config says; CPython's
    # parser, which ran first, is what holds the code to the running version's grammar.
    config = libcst.PartialParserConfig(
        python_version=f"{sys.version_info.major}.{sys.version_info.minor}"
    )
    try:
        module = libcst.parse_module(code, config)
    except libcst.ParserSyntaxError as exc:
        return _fail(
            action,
            PARSER_MISMATCH,
            f"CPython accepts this code but the checker's parser (libcst) does not: "
            f"{exc.message}; rewrite this construct more plainly",
            span=_point(code, exc.raw_line, exc.raw_column + 1),
            evidence=_caret(code, exc.raw_line, exc.raw_column + 1),
        )
    except (RecursionError, MemoryError):
        return _fail(
            action,
            NESTING_TOO_DEEP,
            "the checker's parser (libcst) ran out of stack; split the code into "
            "smaller, less nested statements",
        )
    except libcst.CSTValidationError as exc:
        return _fail(
            action,
            PARSER_MISMATCH,
            f"CPython accepts this code but the checker's parser (libcst) does not: "
            f"{str(exc).rstrip('.')}; "
            "rewrite this construct more plainly",
        )
    except Exception as exc:  # libcst is third-party code facing adversarial input: fail closed
        return _fail(
            action,
            PARSER_MISMATCH,
            f"the checker's parser (libcst) failed: {type(exc).__name__}: {exc}",
        )
    try:
        return _cross_check(action, code, tree, module, needs_normalising=needs_normalising)
    except (RecursionError, MemoryError):
        return _fail(
            action,
            NESTING_TOO_DEEP,
            "the checker ran out of stack on this code; split it into smaller, less nested "
            "statements",
        )
    except Exception as exc:  # a bug in libcst or here: fail closed
        return _fail(
            action, PARSER_MISMATCH, f"the parsers' cross-check failed: {type(exc).__name__}: {exc}"
        )


def _cross_check(
    action: Action, code: str, tree: ast.Module, module: libcst.Module, *, needs_normalising: bool
) -> Parsed | ParseFailure:
    """Both trees describe the same program: same reprint, same outline, normal names."""
    if _UNUSUAL.search(code) is not None and not _reprints_faithfully(code, module.code, tree):
        # A lossless tree reprints its source. libcst may drop blank lines (harmless) but also
        # whitespace CPython gives meaning to (a form feed in an indent): that is a mismatch.
        # Reprinting costs a fifth of parsing, so plain printable ASCII is trusted to round-trip.
        return _fail(
            action,
            PARSER_MISMATCH,
            "the checker's parser (libcst) does not reproduce this source exactly; remove "
            "unusual whitespace such as form feeds",
        )
    if _ast_outline(tree) != _cst_outline(module):
        return _fail(
            action,
            PARSER_MISMATCH,
            "CPython and the checker's parser (libcst) see different statement structure in "
            "this code; write its blocks and indentation more plainly",
        )
    if needs_normalising:
        stray = _unnormalised_name(module)
        if stray is not None:
            return _fail(
                action,
                PARSER_MISMATCH,
                f"identifier {stray!r} is not in NFKC form where the checker could not "
                "normalise it (e.g. inside an f-string); write identifiers in ASCII",
            )
    return Parsed(action=action, code=code, tree=tree)


def _ast_outline(tree: ast.Module) -> list[tuple[int, str]]:
    """Every statement of CPython's tree, in source order, as (block depth, statement kind)."""
    outline: list[tuple[int, str]] = []
    pending: list[tuple[int, ast.stmt]] = [(0, statement) for statement in reversed(tree.body)]
    while pending:
        depth, node = pending.pop()
        outline.append((depth, type(node).__name__))
        blocks: list[list[ast.stmt]] = [getattr(node, "body", [])]
        blocks += [handler.body for handler in getattr(node, "handlers", [])]
        blocks += [getattr(node, "orelse", []), getattr(node, "finalbody", [])]
        blocks += [case.body for case in getattr(node, "cases", [])]
        children = [child for block in blocks for child in block]
        pending.extend((depth + 1, child) for child in reversed(children))
    return outline


def _cst_outline(module: libcst.Module) -> list[tuple[int, str]]:
    """The same outline from libcst's tree (``elif`` is a nested ``If``, as in CPython's)."""
    import libcst

    outline: list[tuple[int, str]] = []
    pending: list[tuple[int, libcst.CSTNode]] = [
        (0, statement) for statement in reversed(module.body)
    ]
    while pending:
        depth, node = pending.pop()
        if isinstance(node, libcst.SimpleStatementLine):
            outline.extend((depth, _ast_name(small)) for small in node.body)
            continue
        if isinstance(node, libcst.BaseSmallStatement):
            outline.append((depth, _ast_name(node)))
            continue
        asynchronous = getattr(node, "asynchronous", None) is not None
        outline.append((depth, ("Async" if asynchronous else "") + type(node).__name__))
        children: list[libcst.CSTNode] = []
        body = getattr(node, "body", None)
        if isinstance(body, libcst.BaseSuite):
            children += body.body
        for handler in getattr(node, "handlers", ()):
            children += handler.body.body
        orelse = getattr(node, "orelse", None)
        if isinstance(orelse, libcst.If):
            children.append(orelse)
        elif isinstance(orelse, libcst.Else):
            children += orelse.body.body
        finalbody = getattr(node, "finalbody", None)
        if isinstance(finalbody, libcst.Finally):
            children += finalbody.body.body
        for case in getattr(node, "cases", ()):
            children += case.body.body
        pending.extend((depth + 1, child) for child in reversed(children))
    return outline


def _ast_name(statement: libcst.BaseSmallStatement) -> str:
    name = type(statement).__name__
    return "Delete" if name == "Del" else name


def _unnormalised_name(module: libcst.Module) -> str | None:
    import libcst

    stack: list[libcst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, libcst.Name) and node.value != unicodedata.normalize(
            "NFKC", node.value
        ):
            return node.value
        stack.extend(node.children)
    return None


def _reprints_faithfully(code: str, reprint: str, tree: ast.Module) -> bool:
    """Does libcst's reprint hold every line that means something to CPython, unchanged?

    Blank lines and trailing whitespace mean nothing, nor do the lines after CPython's last
    statement (only comments can be there), which libcst is known to drop.
    """
    if reprint == code:
        return True
    last_line = tree.body[-1].end_lineno or 0 if tree.body else 0
    meaningful = _nonblank(code.split("\n")[:last_line])
    printed = _nonblank(reprint.split("\n"))
    return printed[: len(meaningful)] == meaningful and all(
        line.lstrip().startswith("#") for line in printed[len(meaningful) :]
    )


def _nonblank(lines: list[str]) -> list[str]:
    return [line.rstrip() for line in lines if line.strip()]
