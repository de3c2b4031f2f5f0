"""Lark parse tree → DSL syntax tree (:mod:`safeexec.dsl.nodes`), iteratively (no recursion
limit to hit), with every node's span in the program's own lines and columns: the reference
front end's builder (:mod:`safeexec.dsl.parser`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lark import Token, Transformer_NonRecursive, Tree, v_args
from lark.tree import Meta

from safeexec.dsl import nodes as n
from safeexec.dsl.literals import fstring_parts, unescape
from safeexec.model.values import Span

__all__ = ["build_expression", "build_program"]

ParseExpression = Callable[..., n.Expr]


def build_program(
    tree: Tree, source: str, parse_expression: ParseExpression, *, offset: tuple[int, int] = (1, 1)
) -> n.Program:
    """The program a parse tree of the ``start`` rule holds."""
    built = _Builder(parse_expression, offset).transform(tree)
    assert isinstance(built, n.Program)
    return n.Program(body=built.body, source=source)


def build_expression(
    tree: Tree, parse_expression: ParseExpression, *, offset: tuple[int, int]
) -> n.Expr:
    """The expression a parse tree of the ``expr`` rule holds, placed at ``offset``."""
    built: n.Expr = _Builder(parse_expression, offset).transform(tree)
    return built


@v_args(meta=True, inline=True)
class _Builder(Transformer_NonRecursive):
    def __init__(self, parse_expression: ParseExpression, offset: tuple[int, int]) -> None:
        super().__init__()
        self._parse_expression = parse_expression
        self._line, self._column = offset

    # -- positions ------------------------------------------------------------------------------

    def _at(self, line: int, column: int) -> tuple[int, int]:
        if line == 1:
            return self._line, self._column + column - 1
        return self._line + line - 1, column

    def _span(self, meta: Meta) -> Span:
        start = self._at(meta.line, meta.column)
        end = self._at(meta.end_line, max(1, meta.end_column - 1))
        return Span(start_line=start[0], start_column=start[1], end_line=end[0], end_column=end[1])

    # -- statements -----------------------------------------------------------------------------

    def start(self, meta: Meta, *stmts: n.Stmt) -> n.Program:
        return n.Program(body=tuple(stmts), source="")

    def assign(self, meta: Meta, name: Token, value: n.Expr) -> n.Assign:
        return n.Assign(name=str(name), value=value, op="", span=self._span(meta))

    def aug_assign(self, meta: Meta, name: Token, op: Token, value: n.Expr) -> n.Assign:
        return n.Assign(name=str(name), value=value, op=str(op)[0], span=self._span(meta))

    def return_stmt(self, meta: Meta, value: n.Expr) -> n.Return:
        return n.Return(value=value, span=self._span(meta))

    def expr_stmt(self, meta: Meta, value: n.Expr) -> n.ExprStmt:
        return n.ExprStmt(value=value, span=self._span(meta))

    def for_stmt(self, meta: Meta, var: Token, iterable: n.Expr, body: tuple[n.Stmt, ...]) -> n.For:
        return n.For(var=str(var), iterable=iterable, body=body, span=self._span(meta))

    def if_stmt(self, meta: Meta, test: n.Expr, body: tuple[n.Stmt, ...], *rest: Any) -> n.If:
        orelse: tuple[n.Stmt, ...] = ()
        for clause in reversed(rest):
            if isinstance(clause, tuple) and clause and clause[0] == "else":
                orelse = clause[1]
            else:
                elif_test, elif_body, elif_span = clause
                orelse = (n.If(test=elif_test, body=elif_body, orelse=orelse, span=elif_span),)
        return n.If(test=test, body=body, orelse=orelse, span=self._span(meta))

    def elif_clause(
        self, meta: Meta, test: n.Expr, body: tuple[n.Stmt, ...]
    ) -> tuple[n.Expr, tuple[n.Stmt, ...], Span]:
        return (test, body, self._span(meta))

    def else_clause(self, meta: Meta, body: tuple[n.Stmt, ...]) -> tuple[str, tuple[n.Stmt, ...]]:
        return ("else", body)

    def suite(self, meta: Meta, *stmts: n.Stmt) -> tuple[n.Stmt, ...]:
        return tuple(stmts)

    # -- expressions ----------------------------------------------------------------------------

    def cond(self, meta: Meta, body: n.Expr, test: n.Expr, orelse: n.Expr) -> n.Cond:
        return n.Cond(test=test, body=body, orelse=orelse, span=self._span(meta))

    def or_op(self, meta: Meta, left: n.Expr, right: n.Expr) -> n.BoolOp:
        return n.BoolOp(op="or", left=left, right=right, span=self._span(meta))

    def and_op(self, meta: Meta, left: n.Expr, right: n.Expr) -> n.BoolOp:
        return n.BoolOp(op="and", left=left, right=right, span=self._span(meta))

    def not_op(self, meta: Meta, operand: n.Expr) -> n.Not:
        return n.Not(operand=operand, span=self._span(meta))

    def compare(self, meta: Meta, left: n.Expr, op: Token, right: n.Expr) -> n.Compare:
        return n.Compare(op=str(op), left=left, right=right, span=self._span(meta))

    def in_op(self, meta: Meta, left: n.Expr, right: n.Expr) -> n.Compare:
        return n.Compare(op="in", left=left, right=right, span=self._span(meta))

    def not_in_op(self, meta: Meta, left: n.Expr, right: n.Expr) -> n.Compare:
        return n.Compare(op="not in", left=left, right=right, span=self._span(meta))

    def binop(self, meta: Meta, left: n.Expr, op: Token, right: n.Expr) -> n.BinOp:
        return n.BinOp(op=str(op), left=left, right=right, span=self._span(meta))

    def neg(self, meta: Meta, operand: n.Expr) -> n.Neg:
        return n.Neg(operand=operand, span=self._span(meta))

    def field(self, meta: Meta, value: n.Expr, name: Token) -> n.Field:
        return n.Field(value=value, name=str(name), span=self._span(meta))

    def index(self, meta: Meta, value: n.Expr, index: n.Expr) -> n.Index:
        return n.Index(value=value, index=index, span=self._span(meta))

    def call(self, meta: Meta, func: Token, arguments: Any = None) -> n.Call:
        positional: list[n.Expr | n.Lambda] = []
        keywords: list[n.Keyword] = []
        for argument in arguments or ():
            if isinstance(argument, n.Keyword):
                keywords.append(argument)
            else:
                positional.append(argument)
        return n.Call(
            func=str(func),
            args=tuple(positional),
            keywords=tuple(keywords),
            span=self._span(meta),
        )

    def arguments(self, meta: Meta, *items: Any) -> tuple[Any, ...]:
        return items

    def keyword(self, meta: Meta, name: Token, value: n.Expr | n.Lambda) -> n.Keyword:
        return n.Keyword(name=str(name), value=value, span=self._span(meta))

    def lambda_expr(self, meta: Meta, *parts: Any) -> n.Lambda:
        *params, body = parts
        return n.Lambda(params=tuple(str(p) for p in params), body=body, span=self._span(meta))

    def var(self, meta: Meta, name: Token) -> n.Name:
        return n.Name(id=str(name), span=self._span(meta))

    def int_lit(self, meta: Meta, token: Token) -> n.Literal:
        return n.Literal(value=int(str(token)), span=self._span(meta))

    def float_lit(self, meta: Meta, token: Token) -> n.Literal:
        return n.Literal(value=float(str(token)), span=self._span(meta))

    def str_lit(self, meta: Meta, token: Token) -> n.Literal:
        return n.Literal(value=unescape(str(token)[1:-1]), span=self._span(meta))

    def true_lit(self, meta: Meta, token: Token) -> n.Literal:
        return n.Literal(value=True, span=self._span(meta))

    def false_lit(self, meta: Meta, token: Token) -> n.Literal:
        return n.Literal(value=False, span=self._span(meta))

    def none_lit(self, meta: Meta, token: Token) -> n.Literal:
        return n.Literal(value=None, span=self._span(meta))

    def list_lit(self, meta: Meta, *items: n.Expr) -> n.ListExpr:
        return n.ListExpr(items=tuple(items), span=self._span(meta))

    def record_lit(self, meta: Meta, *entries: tuple[str, n.Expr]) -> n.RecordExpr:
        keys = tuple(k for k, _ in entries)
        return n.RecordExpr(keys=keys, values=tuple(v for _, v in entries), span=self._span(meta))

    def entry(self, meta: Meta, key: Token, value: n.Expr) -> tuple[str, n.Expr]:
        return (unescape(str(key)[1:-1]), value)

    def fstr_lit(self, meta: Meta, token: Token) -> n.FString:
        text = str(token)
        line, column = self._at(token.line or 1, token.column or 1)
        return n.FString(
            parts=tuple(fstring_parts(text[2:-1], line, column + 2, self._parse_expression)),
            span=self._span(meta),
        )
