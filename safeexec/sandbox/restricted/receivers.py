"""What the transformer's fast paths read off the syntax tree: the nodes of one scope, a
method's receiver (``self``) and its accesses. Nothing is rewritten here."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from safeexec.sandbox.restricted.allowlist import DENIED_ATTRIBUTES

# Nodes with a scope of their own: a name inside them may not be the method's (the first
# iterable of a comprehension and a nested function's defaults are not, but are skipped too).
_NESTED_SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def method_receiver(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The name of the first positional parameter of ``node``, if nothing in its body (nested
    scopes included) ever binds or deletes that name: it then names the same object for the
    whole call."""
    params = [*node.args.posonlyargs, *node.args.args]
    if not params:
        return None
    name = params[0].arg
    if any(_binds(inner, name) for stmt in node.body for inner in ast.walk(stmt)):
        return None
    return name


def _binds(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name and not isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.Global | ast.Nonlocal):
        return name in node.names
    if isinstance(
        node,
        ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.ExceptHandler,
    ):
        return node.name == name
    if isinstance(node, ast.MatchAs | ast.MatchStar):
        return node.name == name
    if isinstance(node, ast.MatchMapping):
        return node.rest == name
    if isinstance(node, ast.alias):
        return (node.asname or node.name.split(".")[0]) == name
    if isinstance(node, ast.arg):
        return node.arg == name  # a nested parameter shadows it only there; refused anyway
    return False


def fast_path_name(name: str) -> bool:
    """Names the fast paths take: not dunders or other names ending in ``_`` (the full guard
    decides those), not the public names on the denied list (nor the mediated ones in it)."""
    return not name.endswith("_") and name not in DENIED_ATTRIBUTES


def scope_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of ``body``'s own scope: nested scopes and annotations left out."""
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, _NESTED_SCOPES):
            continue
        yield node
        if isinstance(node, ast.AnnAssign):
            todo.extend(part for part in (node.target, node.value) if part is not None)
        else:
            todo.extend(ast.iter_child_nodes(node))


def receiver_attributes(body: list[ast.stmt], receiver: str) -> list[ast.Attribute]:
    """The reads, writes and deletes ``receiver.name`` of a fast-path name in ``body``'s own
    scope (annotations left out: they take no rewritten expression)."""
    return [
        node
        for node in scope_nodes(body)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == receiver
        and fast_path_name(node.attr)
    ]
