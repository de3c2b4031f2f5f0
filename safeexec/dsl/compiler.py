"""Checked DSL program → Python ``ast.Module``, built node by node (never from text).

The module only names what the checker resolved (bindings, granted tools) and ``dsl_*`` helpers
from :mod:`safeexec.dsl.runtime`: every loop goes through ``dsl_loop`` with the bound the plan
assumed, fields and indexes through checked helpers, ``+``/``*`` on non-floats through size-checked
helpers, and ``return`` hands its value to ``dsl_give``. :func:`compile_code` checks every node of
the module against that fixed set of shapes (dsl/SPEC.md, "Where a DSL program runs") before
``compile()``: the DSL session runs the code object with no builtins and no RestrictedPython pass.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from typing import Any

from safeexec.dsl import nodes as n
from safeexec.dsl.checker import Checked
from safeexec.dsl.valuetypes import Kind

__all__ = ["CompiledShapeError", "compile_code", "compile_program"]

# Operators and contexts have no fields and no position: one instance of each serves every node
# (as in the trees ``ast.parse`` makes).
_ARITH: dict[str, ast.operator] = {
    "+": ast.Add(), "-": ast.Sub(), "*": ast.Mult(), "/": ast.Div(), "//": ast.FloorDiv(),
    "%": ast.Mod(),
}  # fmt: skip
_COMPARE: dict[str, ast.cmpop] = {
    "==": ast.Eq(), "!=": ast.NotEq(), "<": ast.Lt(), "<=": ast.LtE(), ">": ast.Gt(),
    ">=": ast.GtE(), "in": ast.In(), "not in": ast.NotIn(),
}  # fmt: skip
_AND, _OR, _NOT, _NEG = ast.And(), ast.Or(), ast.Not(), ast.USub()
_LOAD, _STORE = ast.Load(), ast.Store()


# Every node the compiler makes (operators and contexts, which have no fields, aside): no
# attribute, subscript, import, starred, comprehension, def, class, with, try, while.
_SHAPES = frozenset(
    {
        ast.Assign, ast.Expr, ast.For, ast.If, ast.Pass, ast.Name, ast.Constant, ast.Call,
        ast.keyword, ast.List, ast.Dict, ast.BinOp, ast.Compare, ast.BoolOp, ast.UnaryOp,
        ast.IfExp, ast.JoinedStr, ast.FormattedValue, ast.Lambda, ast.arguments, ast.arg,
    }
)  # fmt: skip
_CONSTANTS = (str, int, float, bool, type(None))
_VERIFIED = frozenset({ast.Call, ast.Constant, ast.arg})  # and ast.Name, in _locate's loop
_POSITIONED = frozenset(t for t in _SHAPES if "lineno" in getattr(t, "_attributes", ()))
# What a field may hold without being walked: plain scalars, and operators and contexts (nodes
# with no fields, e.g. ``ast.Add()``, ``ast.Load()``).
_OPERATOR_BASES = (ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.expr_context)
_LEAVES = frozenset({*_CONSTANTS, *(t for base in _OPERATOR_BASES for t in base.__subclasses__())})
# The fields ``compile()`` reads of each shape (its attributes aside).
_FIELDS: dict[type, tuple[str, ...]] = {t: getattr(t, "_fields", ()) for t in _SHAPES}


class CompiledShapeError(ValueError):
    """The compiler made a node outside its fixed shapes (a compiler bug; nothing runs)."""


def compile_program(checked: Checked) -> ast.Module:
    """The Python module for an accepted program (``checked.ok`` must hold); raises
    :class:`CompiledShapeError` if a node falls outside the compiler's fixed shapes."""
    if not checked.ok:
        raise ValueError("compile_program() takes an accepted program; check it first")
    module = ast.Module(body=_Compiler(checked).block(checked.program.body), type_ignores=[])
    _locate(module)
    return module


def compile_code(checked: Checked, *, filename: str = "<dsl>") -> types.CodeType:
    """The code object of :func:`compile_program`'s module (shapes verified)."""
    return compile(compile_program(checked), filename, "exec", dont_inherit=True)


def _locate(module: ast.Module) -> None:
    """Give every node without a position its statement's line (what ``fix_missing_locations``
    does here, in one flat pass: every statement already has its line from :func:`_at`), and
    check on the way that every node has one of the compiler's shapes, names are never private
    nor a bound ``dsl_*``, and :func:`_verify` holds. Every field ``compile()``
    reads is walked (a shape's ``_fields``) unless it holds a plain scalar or an operator, so an
    unexpected value fails the shape check."""
    fields_of, verified, positioned, leaves = _FIELDS, _VERIFIED, _POSITIONED, _LEAVES
    stack: list[tuple[object, int]] = [(s, s.lineno) for s in module.body]
    pop, push = stack.pop, stack.append
    while stack:
        node, line = pop()
        kind = type(node)
        names = fields_of.get(kind)
        if names is None:
            raise CompiledShapeError(f"the DSL compiler made a {kind.__name__} node")
        if isinstance(node, ast.Name):  # the commonest node, checked here without a call
            if node.id.startswith("_") or (
                isinstance(node.ctx, ast.Store) and node.id.startswith("dsl_")
            ):
                raise CompiledShapeError(f"the DSL compiler made the name {node.id!r}")
        elif kind in verified:
            _verify(node)  # type: ignore[arg-type]
        if kind in positioned:
            if "lineno" in node.__dict__:
                line = node.lineno  # type: ignore[attr-defined]
            else:
                node.lineno = node.end_lineno = line  # type: ignore[attr-defined]
                node.col_offset = node.end_col_offset = 0  # type: ignore[attr-defined]
        for name in names:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if type(item) not in leaves:
                        push((item, line))
            elif type(value) not in leaves:
                push((value, line))


def _verify(node: ast.AST) -> None:
    """Parameters are never private nor ``dsl_*``; calls name their callee; constants are JSON
    scalars (names are checked in :func:`_locate`'s loop)."""
    if isinstance(node, ast.arg):
        if node.arg.startswith(("_", "dsl_")):
            raise CompiledShapeError(f"the DSL compiler made the parameter {node.arg!r}")
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            raise CompiledShapeError("the DSL compiler made a call of a non-name")
    elif isinstance(node, ast.Constant) and type(node.value) not in _CONSTANTS:
        raise CompiledShapeError("the DSL compiler made a non-JSON constant")


def _name(id: str) -> ast.Name:
    return ast.Name(id=id, ctx=_LOAD)


def _call(func: str, *args: ast.expr, **keywords: ast.expr) -> ast.Call:
    return ast.Call(
        func=_name(func),
        args=list(args),
        keywords=[ast.keyword(arg=k, value=v) for k, v in keywords.items()],
    )


def _at(node: ast.stmt, line: int) -> ast.stmt:
    """Give a statement its source line (tracebacks point into the DSL program); its children
    inherit it in :func:`_locate`."""
    node.lineno = node.end_lineno = line
    node.col_offset = node.end_col_offset = 0
    return node


class _Compiler:
    def __init__(self, checked: Checked) -> None:
        self.checked = checked
        self.tools = {s.tool for s in checked.sites}

    def block(self, stmts: tuple[n.Stmt, ...]) -> list[ast.stmt]:
        out = [self.stmt(s) for s in stmts]
        return out or [ast.Pass()]

    def stmt(self, s: n.Stmt) -> ast.stmt:
        line = s.span.start_line
        if isinstance(s, n.Assign):
            value = self.checked_aug(s)
            target = ast.Name(id=s.name, ctx=_STORE)
            return _at(ast.Assign(targets=[target], value=self.expr(value)), line)
        if isinstance(s, n.ExprStmt):
            return _at(ast.Expr(value=self.expr(s.value)), line)
        if isinstance(s, n.Return):
            return _at(ast.Expr(value=_call("dsl_give", self.expr(s.value))), line)
        if isinstance(s, n.For):
            bound = self.checked.bounds[id(s)]
            iterable = _call("dsl_loop", self.expr(s.iterable), ast.Constant(bound))
            target = ast.Name(id=s.var, ctx=_STORE)
            loop = ast.For(target=target, iter=iterable, body=self.block(s.body), orelse=[])
            return _at(loop, line)
        test = self.expr(s.test)
        return _at(
            ast.If(test=test, body=self.block(s.body), orelse=[self.stmt(x) for x in s.orelse]),
            line,
        )

    def checked_aug(self, s: n.Assign) -> n.Expr:
        return self.checked.desugared[id(s)] if s.op else s.value

    def expr(self, e: n.Expr | n.Lambda) -> ast.expr:
        made: ast.expr = _EMIT[type(e)](self, e)
        return made

    def lambda_expr(self, e: n.Lambda) -> ast.expr:
        params = ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=p) for p in e.params],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        )
        return ast.Lambda(args=params, body=self.expr(e.body))

    def literal(self, e: n.Literal) -> ast.expr:
        return ast.Constant(e.value)

    def name(self, e: n.Name) -> ast.expr:
        return _name(e.id)

    def list_expr(self, e: n.ListExpr) -> ast.expr:
        return ast.List(elts=[self.expr(x) for x in e.items], ctx=_LOAD)

    def record_expr(self, e: n.RecordExpr) -> ast.expr:
        return ast.Dict(
            keys=[ast.Constant(k) for k in e.keys], values=[self.expr(v) for v in e.values]
        )

    def field(self, e: n.Field) -> ast.expr:
        return _call("dsl_field", self.expr(e.value), ast.Constant(e.name))

    def index(self, e: n.Index) -> ast.expr:
        return _call("dsl_index", self.expr(e.value), self.expr(e.index))

    def compare(self, e: n.Compare) -> ast.expr:
        op = _COMPARE[e.op]
        return ast.Compare(left=self.expr(e.left), ops=[op], comparators=[self.expr(e.right)])

    def boolop(self, e: n.BoolOp) -> ast.expr:
        boolean = _AND if e.op == "and" else _OR
        return ast.BoolOp(op=boolean, values=[self.expr(e.left), self.expr(e.right)])

    def not_expr(self, e: n.Not) -> ast.expr:
        return ast.UnaryOp(op=_NOT, operand=self.expr(e.operand))

    def neg(self, e: n.Neg) -> ast.expr:
        return ast.UnaryOp(op=_NEG, operand=self.expr(e.operand))

    def cond(self, e: n.Cond) -> ast.expr:
        return ast.IfExp(test=self.expr(e.test), body=self.expr(e.body), orelse=self.expr(e.orelse))

    def binop(self, e: n.BinOp) -> ast.expr:
        left, right = self.expr(e.left), self.expr(e.right)
        kinds = {self.checked.types[id(e.left)].kind, self.checked.types[id(e.right)].kind}
        # Only float arithmetic is plain Python; ints, strings and lists can grow without bound.
        if e.op == "+" and kinds != {Kind.FLOAT}:
            return _call("dsl_add", left, right)
        if e.op == "*" and kinds != {Kind.FLOAT}:
            return _call("dsl_mul", left, right)
        return ast.BinOp(left=left, op=_ARITH[e.op], right=right)

    def fstring(self, e: n.FString) -> ast.expr:
        values: list[ast.expr] = []
        for part in e.parts:
            if isinstance(part, str):
                values.append(ast.Constant(part))
                continue
            value, spec = part
            shown = self.expr(value)
            if not spec:  # values render as the DSL shows them (JSON), not as Python reprs
                text = _call("dsl_str", shown)
                values.append(ast.FormattedValue(value=text, conversion=-1, format_spec=None))
                continue
            values.append(
                ast.FormattedValue(
                    value=shown,
                    conversion=-1,
                    format_spec=ast.JoinedStr(values=[ast.Constant(spec)]),
                )
            )
        return ast.JoinedStr(values=values)

    def call(self, e: n.Call) -> ast.expr:
        args = [self.expr(a) for a in e.args]
        keywords = [ast.keyword(arg=k.name, value=self.expr(k.value)) for k in e.keywords]
        func = e.func if e.func in self.tools else f"dsl_{e.func}"
        if e.func == "range":  # the run checks the size the checker assumed
            bound = ast.Constant(self.checked.bounds[id(e)])
            keywords.append(ast.keyword(arg="bound", value=bound))
        return ast.Call(func=_name(func), args=args, keywords=keywords)


# Each DSL node's emitter, by the node's exact type (one lookup instead of a chain of tests).
_EMIT: dict[type, Callable[[_Compiler, Any], ast.expr]] = {
    n.Lambda: _Compiler.lambda_expr,
    n.Literal: _Compiler.literal,
    n.Name: _Compiler.name,
    n.Call: _Compiler.call,
    n.ListExpr: _Compiler.list_expr,
    n.RecordExpr: _Compiler.record_expr,
    n.Field: _Compiler.field,
    n.Index: _Compiler.index,
    n.BinOp: _Compiler.binop,
    n.Compare: _Compiler.compare,
    n.BoolOp: _Compiler.boolop,
    n.Not: _Compiler.not_expr,
    n.Neg: _Compiler.neg,
    n.Cond: _Compiler.cond,
    n.FString: _Compiler.fstring,
}
