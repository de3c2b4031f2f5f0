"""Checked DSL program → Python ``ast.Module``, built node by node (never from text).

The module only names what the checker resolved (bindings, granted tools) and ``dsl_*`` helpers
from :mod:`safeexec.sandbox.dsl_runtime`: every loop goes through ``dsl_loop`` with the bound the
plan assumed, fields and indexes through checked helpers, and ``return`` hands its value to
``dsl_give``. Nothing in the module makes a value by itself: list and record literals, f-strings
and every arithmetic operator are calls of helpers that charge the value against the caps before
they make it (``DslRuntime.charge``). Every node is made by one of a fixed set of constructors,
each a fixed shape, and takes as children only nodes those constructors made (dsl/SPEC.md, "Where
a DSL program runs"), so nothing else reaches ``compile()``: the code object runs with no builtins
and no RestrictedPython pass.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from typing import Any, TypeVar

from safeexec.dsl import nodes as n
from safeexec.dsl.checker import Checked

__all__ = ["CompiledShapeError", "compile_code", "compile_program"]

# Operators and contexts have no fields and no position: one instance of each serves every node
# (as in the trees ``ast.parse`` makes).
_COMPARE: dict[str, ast.cmpop] = {
    "==": ast.Eq(), "!=": ast.NotEq(), "<": ast.Lt(), "<=": ast.LtE(), ">": ast.Gt(),
    ">=": ast.GtE(), "in": ast.In(), "not in": ast.NotIn(),
}  # fmt: skip
_AND, _OR, _NOT, _NEG = ast.And(), ast.Or(), ast.Not(), ast.USub()
_LOAD, _STORE = ast.Load(), ast.Store()


_CONSTANTS = (str, int, float, bool, type(None))  # what a constant may hold: JSON scalars
_Node = TypeVar("_Node", bound=ast.AST)


class CompiledShapeError(ValueError):
    """The compiler made a node outside its fixed shapes (a compiler bug; nothing runs)."""


def compile_program(checked: Checked) -> ast.Module:
    """The Python module for an accepted program (``checked.ok`` must hold); raises
    :class:`CompiledShapeError` if a node falls outside the compiler's fixed shapes."""
    if not checked.ok:
        raise ValueError("compile_program() takes an accepted program; check it first")
    return ast.Module(_Compiler(checked).block(checked.program.body), [])


def compile_code(checked: Checked, *, filename: str = "<dsl>") -> types.CodeType:
    """The code object of :func:`compile_program`'s module (shapes verified)."""
    return compile(compile_program(checked), filename, "exec", dont_inherit=True)


class _Compiler:
    """DSL tree → Python nodes. Every node is made by one of the constructors below (the only
    code here that instantiates a node class), which fix its shape, give it the statement's line
    and record it; a constructor takes as a child only a node it can find in that record, so by
    induction from the module's body down the module holds nothing but those shapes. What the
    program chooses (names, parameters, constants) is checked as it is made."""

    def __init__(self, checked: Checked) -> None:
        self.checked = checked
        self.tools = {s.tool for s in checked.sites}
        self.line = 1  # the line of the statement being compiled: every node it makes is on it
        self.made: dict[int, ast.AST] = {}  # id -> every node a constructor made (kept alive)

    # -- the wall: records and checks ----------------------------------------------------------

    def _made(self, node: _Node) -> _Node:
        # No end position: compile() takes a node's end as its start, the code it makes is the
        # same (and a statement's nodes all start where it does).
        node.lineno = self.line  # type: ignore[attr-defined]
        node.col_offset = 0  # type: ignore[attr-defined]
        self.made[id(node)] = node
        return node

    def _kid(self, node: _Node) -> _Node:
        """``node``, refused unless a constructor here made it."""
        if self.made.get(id(node)) is not node:
            raise CompiledShapeError(
                f"the DSL compiler made a {type(node).__name__} node outside its constructors"
            )
        return node

    def _kids(self, nodes: list[_Node]) -> list[_Node]:
        made = self.made
        for node in nodes:
            if made.get(id(node)) is not node:
                self._kid(node)
        return nodes

    # -- the constructors ----------------------------------------------------------------------

    def _load(self, id: str) -> ast.Name:
        if id.startswith("_"):
            raise CompiledShapeError(f"the DSL compiler made the name {id!r}")
        return self._made(ast.Name(id, _LOAD))

    def _store(self, id: str) -> ast.Name:
        if id.startswith(("_", "dsl_")):
            raise CompiledShapeError(f"the DSL compiler made the name {id!r}")
        return self._made(ast.Name(id, _STORE))

    def _param(self, id: str) -> ast.arg:
        if id.startswith(("_", "dsl_")):
            raise CompiledShapeError(f"the DSL compiler made the parameter {id!r}")
        return self._made(ast.arg(id))

    def _constant(self, value: object) -> ast.Constant:
        if type(value) not in _CONSTANTS:
            raise CompiledShapeError("the DSL compiler made a non-JSON constant")
        return self._made(ast.Constant(value))  # type: ignore[arg-type]

    def _call(
        self, func: str, args: list[ast.expr], keywords: list[ast.keyword] | None = None
    ) -> ast.Call:
        """A call of a name (the only callee the DSL has)."""
        made = ast.Call(self._load(func), self._kids(args), self._kids(keywords or []))
        return self._made(made)

    def _keyword(self, arg: str, value: ast.expr) -> ast.keyword:
        return self._made(ast.keyword(arg, self._kid(value)))

    def _compare(self, left: ast.expr, op: str, right: ast.expr) -> ast.Compare:
        return self._made(ast.Compare(self._kid(left), [_COMPARE[op]], [self._kid(right)]))

    def _boolop(self, op: ast.boolop, left: ast.expr, right: ast.expr) -> ast.BoolOp:
        return self._made(ast.BoolOp(op, [self._kid(left), self._kid(right)]))

    def _unary(self, op: ast.unaryop, operand: ast.expr) -> ast.UnaryOp:
        return self._made(ast.UnaryOp(op, self._kid(operand)))

    def _ifexp(self, test: ast.expr, body: ast.expr, orelse: ast.expr) -> ast.IfExp:
        return self._made(ast.IfExp(self._kid(test), self._kid(body), self._kid(orelse)))

    def _lambda(self, params: tuple[str, ...], body: ast.expr) -> ast.Lambda:
        args = ast.arguments([], [self._param(p) for p in params], None, [], [], None, [])
        return self._made(ast.Lambda(args, self._kid(body)))

    def _assign(self, name: str, value: ast.expr) -> ast.Assign:
        return self._made(ast.Assign([self._store(name)], self._kid(value)))

    def _expr_stmt(self, value: ast.expr) -> ast.Expr:
        return self._made(ast.Expr(self._kid(value)))

    def _for(self, var: str, iterable: ast.expr, body: list[ast.stmt]) -> ast.For:
        loop = ast.For(self._store(var), self._kid(iterable), self._kids(body), [])
        return self._made(loop)

    def _if(self, test: ast.expr, body: list[ast.stmt], orelse: list[ast.stmt]) -> ast.If:
        return self._made(ast.If(self._kid(test), self._kids(body), self._kids(orelse)))

    def _pass(self) -> ast.Pass:
        return self._made(ast.Pass())

    # -- statements ----------------------------------------------------------------------------

    def block(self, stmts: tuple[n.Stmt, ...]) -> list[ast.stmt]:
        out = self._kids([self.stmt(s) for s in stmts])
        return out or [self._pass()]

    def stmt(self, s: n.Stmt) -> ast.stmt:
        """A statement on its source line (tracebacks point into the DSL program), as is every
        node made for it."""
        line = self.line = s.span.start_line
        if isinstance(s, n.Assign):
            return self._assign(s.name, self.expr(self.checked_aug(s)))
        if isinstance(s, n.ExprStmt):
            return self._expr_stmt(self.expr(s.value))
        if isinstance(s, n.Return):
            return self._expr_stmt(self._call("dsl_give", [self.expr(s.value)]))
        if isinstance(s, n.For):
            bound = self._constant(self.checked.bounds[id(s)])
            iterable = self._call("dsl_loop", [self.expr(s.iterable), bound])
            body = self.block(s.body)
            self.line = line
            return self._for(s.var, iterable, body)
        test = self.expr(s.test)
        body, orelse = self.block(s.body), [self.stmt(x) for x in s.orelse]
        self.line = line
        return self._if(test, body, orelse)

    def checked_aug(self, s: n.Assign) -> n.Expr:
        return self.checked.desugared[id(s)] if s.op else s.value

    # -- expressions ---------------------------------------------------------------------------

    def expr(self, e: n.Expr | n.Lambda) -> ast.expr:
        made: ast.expr = _EMIT[type(e)](self, e)
        return made

    def lambda_expr(self, e: n.Lambda) -> ast.expr:
        return self._lambda(e.params, self.expr(e.body))

    def literal(self, e: n.Literal) -> ast.expr:
        return self._constant(e.value)

    def name(self, e: n.Name) -> ast.expr:
        return self._load(e.id)

    def list_expr(self, e: n.ListExpr) -> ast.expr:
        return self._call("dsl_list", [self.expr(x) for x in e.items])

    def record_expr(self, e: n.RecordExpr) -> ast.expr:
        pairs: list[ast.expr] = []
        for key, value in zip(e.keys, e.values, strict=True):
            pairs += (self._constant(key), self.expr(value))
        return self._call("dsl_record", pairs)

    def field(self, e: n.Field) -> ast.expr:
        return self._call("dsl_field", [self.expr(e.value), self._constant(e.name)])

    def index(self, e: n.Index) -> ast.expr:
        return self._call("dsl_index", [self.expr(e.value), self.expr(e.index)])

    def compare(self, e: n.Compare) -> ast.expr:
        return self._compare(self.expr(e.left), e.op, self.expr(e.right))

    def boolop(self, e: n.BoolOp) -> ast.expr:
        return self._boolop(_AND if e.op == "and" else _OR, self.expr(e.left), self.expr(e.right))

    def not_expr(self, e: n.Not) -> ast.expr:
        return self._unary(_NOT, self.expr(e.operand))

    def neg(self, e: n.Neg) -> ast.expr:
        return self._unary(_NEG, self.expr(e.operand))

    def cond(self, e: n.Cond) -> ast.expr:
        return self._ifexp(self.expr(e.test), self.expr(e.body), self.expr(e.orelse))

    def binop(self, e: n.BinOp) -> ast.expr:
        # Every operator is a helper, whatever the checker inferred: a value typed float may
        # still be a string at run time (a tool's result), and ``%`` on a string formats it.
        left, right = self.expr(e.left), self.expr(e.right)
        if e.op == "+":
            return self._call("dsl_add", [left, right])
        if e.op == "*":
            return self._call("dsl_mul", [left, right])
        return self._call("dsl_arith", [left, self._constant(e.op), right])

    def fstring(self, e: n.FString) -> ast.expr:
        # dsl_format(text, value, spec, text, value, spec, text, ...): literal text and
        # (value, spec) in turn, so the helper can size the whole string before making it.
        parts: list[ast.expr] = []
        text = ""
        for part in e.parts:
            if isinstance(part, str):
                text += part
                continue
            value, spec = part
            parts += (self._constant(text), self.expr(value), self._constant(spec))
            text = ""
        parts.append(self._constant(text))
        return self._call("dsl_format", parts)

    def call(self, e: n.Call) -> ast.expr:
        args = [self.expr(a) for a in e.args]
        keywords = [self._keyword(k.name, self.expr(k.value)) for k in e.keywords]
        func = e.func if e.func in self.tools else f"dsl_{e.func}"
        if e.func == "range":  # the run checks the size the checker assumed
            keywords.append(self._keyword("bound", self._constant(self.checked.bounds[id(e)])))
        return self._call(func, args, keywords)


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
