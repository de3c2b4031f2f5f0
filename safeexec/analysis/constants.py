"""Fold string-valued expressions the code builds from constants, without running anything.

``'__cla' + 'ss__'``, ``''.join(['__', 'class', '__'])``, ``'__ssalc__'[::-1]``, ``chr(95) * 2``,
``'%s%s' % ('__cla', 'ss__')``, f-strings of constants and names bound to such values all fold to
the string they produce. Anything else folds to ``None`` ("not statically known"). Results are
capped in size and nesting so folding is always cheap.
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Mapping

__all__ = ["StringFolder"]

_MAX_CHARS = 4096
_MAX_DEPTH = 32
_PERCENT_SPEC = re.compile(r"%[s%]")
_STR_METHODS = frozenset({"lower", "upper", "strip", "lstrip", "rstrip", "casefold", "title"})


class StringFolder:
    """Folds expressions to strings; ``bindings`` maps a name to the one string it was bound to."""

    __slots__ = ("_bindings",)

    def __init__(self, bindings: Mapping[str, str | None]) -> None:
        self._bindings = bindings

    def fold(self, node: ast.AST, depth: int = 0) -> str | None:
        """The string ``node`` always evaluates to, or None when that is not known statically."""
        if depth > _MAX_DEPTH:
            return None
        result = self._fold(node, depth + 1)
        if result is not None and len(result) > _MAX_CHARS:
            return None
        return result

    def _fold(self, node: ast.AST, depth: int) -> str | None:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return node.value
            if isinstance(node.value, bytes):
                return node.value.decode("latin-1")
            return None
        if isinstance(node, ast.Name):
            return self._bindings.get(node.id)
        if isinstance(node, ast.BinOp):
            return self._fold_binop(node, depth)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                if isinstance(value, ast.FormattedValue):
                    if value.format_spec is not None or value.conversion not in (-1, 115):
                        return None
                    part = self.fold(value.value, depth)
                else:
                    part = self.fold(value, depth)
                if part is None:
                    return None
                parts.append(part)
            return "".join(parts)
        if isinstance(node, ast.Subscript):
            return self._fold_subscript(node, depth)
        if isinstance(node, ast.Call):
            return self._fold_call(node, depth)
        return None

    def _fold_binop(self, node: ast.BinOp, depth: int) -> str | None:
        if isinstance(node.op, ast.Add):
            left, right = self.fold(node.left, depth), self.fold(node.right, depth)
            return None if left is None or right is None else left + right
        if isinstance(node.op, ast.Mult):
            for text_node, count_node in ((node.left, node.right), (node.right, node.left)):
                text = self.fold(text_node, depth)
                count = _small_int(count_node)
                if text is not None and count is not None and len(text) * count <= _MAX_CHARS:
                    return text * count
            return None
        if isinstance(node.op, ast.Mod):
            template = self.fold(node.left, depth)
            if template is None:
                return None
            if isinstance(node.right, ast.Tuple):
                args = [self.fold(e, depth) for e in node.right.elts]
            else:
                args = [self.fold(node.right, depth)]
            # Only bare %s and %%: a width or precision could make the host build a huge string.
            if any(a is None for a in args) or _PERCENT_SPEC.sub("", template).count("%"):
                return None
            try:
                return template % tuple(args)
            except (TypeError, ValueError, KeyError):
                return None
        return None

    def _fold_subscript(self, node: ast.Subscript, depth: int) -> str | None:
        text = self.fold(node.value, depth)
        if text is None:
            return None
        index = node.slice
        if isinstance(index, ast.Slice):
            bounds = [
                None if p is None else _small_int(p, signed=True)
                for p in (index.lower, index.upper, index.step)
            ]
            given = [p for p in (index.lower, index.upper, index.step) if p is not None]
            if len([b for b in bounds if b is not None]) != len(given) or bounds[2] == 0:
                return None
            return text[bounds[0] : bounds[1] : bounds[2]]
        position = _small_int(index, signed=True)
        if position is None or not -len(text) <= position < len(text):
            return None
        return text[position]

    def _fold_call(self, node: ast.Call, depth: int) -> str | None:
        func = node.func
        if node.keywords:
            return None
        if isinstance(func, ast.Name):
            if func.id == "chr" and len(node.args) == 1:
                code = _small_int(node.args[0])
                return chr(code) if code is not None and code < 0x110000 else None
            if func.id == "str" and len(node.args) == 1:
                return self.fold(node.args[0], depth)
            return None
        if not isinstance(func, ast.Attribute):
            return None
        receiver = self.fold(func.value, depth)
        if receiver is None:
            return None
        if func.attr == "join" and len(node.args) == 1:
            arg = node.args[0]
            if isinstance(arg, ast.List | ast.Tuple):
                parts = [self.fold(e, depth) for e in arg.elts]
                if any(p is None for p in parts):
                    return None
                items = [p for p in parts if p is not None]
            else:
                joined = self.fold(arg, depth)
                if joined is None:
                    return None
                items = list(joined)
            size = sum(map(len, items)) + len(receiver) * max(len(items) - 1, 0)
            return receiver.join(items) if size <= _MAX_CHARS else None
        if func.attr in _STR_METHODS and not node.args:
            return str(getattr(receiver, func.attr)())
        if func.attr == "replace" and len(node.args) == 2:
            old, new = self.fold(node.args[0], depth), self.fold(node.args[1], depth)
            if old is None or new is None or not old:
                return None
            if len(receiver) + receiver.count(old) * len(new) > _MAX_CHARS:
                return None
            return receiver.replace(old, new)
        if func.attr == "format":
            args = [self.fold(a, depth) for a in node.args]
            if any(a is None for a in args) or not _plain_format_template(receiver):
                return None
            try:
                return receiver.format(*args)
            except (IndexError, KeyError, ValueError):
                return None
        if func.attr == "decode" and not node.args:
            return receiver
        return None


def _plain_format_template(template: str) -> bool:
    """Only ``{}``/``{0}`` fields: no attribute walks, indexes, specs or conversions run here."""
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        return False
    return all(
        name is None or ((name == "" or name.isdigit()) and not spec and conversion is None)
        for _text, name, spec, conversion in fields
    )


def _small_int(node: ast.AST, *, signed: bool = False) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and signed:
        inner = _small_int(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int and 0 <= node.value <= _MAX_CHARS:
        return node.value
    return None
