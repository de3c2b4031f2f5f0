"""Qualified names of expressions through import aliases: the one resolver the estimator and the
scanner share, so both read ``import numpy as np; np.zeros`` as ``numpy.zeros``.

Aliases are a plain mapping from a bound name to the qualified name it stands for, filled from
:func:`import_bindings`; callers may add their own bindings (the scanner follows ``f = os.system``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

__all__ = ["dotted_name", "import_bindings", "qualified_name"]


def import_bindings(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str]]:
    """Each ``(bound name, qualified name)`` an import statement binds (``*`` binds nothing here).

    ``import a.b`` binds ``a`` to ``a``; ``import a.b as c`` binds ``c`` to ``a.b``; ``from m import
    x as y`` binds ``y`` to ``m.x``; a relative ``from .m import x`` binds ``x`` to ``.m.x``.
    """
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:
                root = alias.name.partition(".")[0]
                yield root, root
        return
    module = "." * node.level + (node.module or "")
    prefix = module if module.endswith(".") else module + "."
    for alias in node.names:
        if alias.name != "*":
            yield alias.asname or alias.name, prefix + alias.name


def dotted_name(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a plain name, as written; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def qualified_name(node: ast.expr, aliases: Mapping[str, str]) -> tuple[str, bool] | None:
    """The qualified name of a dotted ``node`` and whether its root is an alias, or None.

    The root name is replaced by what ``aliases`` binds it to and a leading ``builtins.`` dropped
    (``import builtins as b; b.open`` is ``open``).
    """
    written = dotted_name(node)
    if written is None:
        return None
    head, dot, rest = written.partition(".")
    base = aliases.get(head)
    if base is None:
        return written.removeprefix("builtins."), False
    return (base + dot + rest).removeprefix("builtins."), True
