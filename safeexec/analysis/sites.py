"""What the scanner's single traversal collects, as handed to the registered code checks."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from safeexec.analysis.constants import StringFolder
from safeexec.model.fieldwise import Fieldwise
from safeexec.policy.schema import Policy

__all__ = ["AttributeSite", "CallSite", "CheckHit", "ScanContext", "clip_text"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class CallSite(Fieldwise):
    """A call; ``callee`` is the qualified name called (``os.system``, ``eval``) or None."""

    node: ast.Call
    callee: str | None
    rooted: bool


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class AttributeSite(Fieldwise):
    """An attribute access ``base.attr``; ``rooted`` when ``base`` resolves through an import."""

    node: ast.Attribute
    base: str | None
    rooted: bool


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class CheckHit(Fieldwise):
    """One match of a code check: where, and the values for the rule's message placeholders."""

    node: ast.AST
    fields: Mapping[str, str]
    evidence: str


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ScanContext(Fieldwise):
    """Everything a check may read; built once per scan, after the traversal."""

    policy: Policy
    tree: ast.Module
    calls: tuple[CallSite, ...]
    attributes: tuple[AttributeSite, ...]
    # Every resolved name read: the node, its qualified name, whether an import roots it.
    references: tuple[tuple[ast.expr, str, bool], ...]
    # Annotations and the arguments of typing generics (strings there may be evaluated).
    annotations: tuple[ast.expr, ...]
    # Every `a / b`: with a path on the left, an absolute right operand replaces the path.
    divisions: tuple[ast.BinOp, ...]
    # Every subscript, every plain name read and every `import` statement, in traversal order.
    subscripts: tuple[ast.Subscript, ...]
    name_reads: tuple[ast.Name, ...]
    imports: tuple[ast.Import, ...]
    # The parent of every node but the module (by id): checks look up instead of walking again.
    parents: Mapping[int, ast.AST]
    folder: StringFolder
    # The execution mode scanned for and its import allowlist (safeexec.policy.modes).
    mode: str = "native"
    allow: tuple[str, ...] = ()


def clip_text(text: str, limit: int = 120) -> str:
    """``text`` made printable on one line (escapes) and cut to ``limit`` characters."""
    text = text.encode("unicode_escape", "backslashreplace").decode("ascii")
    return text if len(text) <= limit else text[: limit - 1] + "…"
