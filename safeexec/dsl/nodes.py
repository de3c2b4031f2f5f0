"""The DSL's syntax tree: small frozen values, each with the source span it came from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from safeexec.dsl.makers import maker
from safeexec.model.values import Span, span_at

__all__ = [
    "Assign",
    "BinOp",
    "BoolOp",
    "Call",
    "Compare",
    "Cond",
    "Expr",
    "ExprStmt",
    "FString",
    "Field",
    "For",
    "If",
    "Index",
    "Keyword",
    "Lambda",
    "ListExpr",
    "Literal",
    "Name",
    "Neg",
    "Not",
    "Program",
    "RecordExpr",
    "Return",
    "Stmt",
]

LiteralValue = int | float | str | bool | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Literal:
    value: LiteralValue
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class Name:
    id: str
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class ListExpr:
    items: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordExpr:
    keys: tuple[str, ...]
    values: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class Field:
    value: Expr
    name: str
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class Index:
    value: Expr
    index: Expr
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class BinOp:
    """Arithmetic: ``op`` is one of ``+ - * / // %``."""

    op: str
    left: Expr
    right: Expr
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class Compare:
    """``op`` is one of ``== != < <= > >= in not in``."""

    op: str
    left: Expr
    right: Expr
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class BoolOp:
    """``op`` is ``and`` or ``or``."""

    op: str
    left: Expr
    right: Expr
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class Not:
    operand: Expr
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class Neg:
    operand: Expr
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class Cond:
    """``body if test else orelse``."""

    test: Expr
    body: Expr
    orelse: Expr
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class Lambda:
    """Only ever an argument of an op (``map(xs, lambda x: x.price)``); never a value."""

    params: tuple[str, ...]
    body: Expr
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class Keyword:
    name: str
    value: Expr | Lambda
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """A call of a tool or an op, by name: ``func(args..., name=value...)``."""

    func: str
    args: tuple[Expr | Lambda, ...]
    keywords: tuple[Keyword, ...]
    span: Span

    @property
    def func_span(self) -> Span:
        """The callee's name: a call starts with it (the grammar's ``NAME "(" ...``)."""
        start = self.span
        end_column = start.start_column + len(self.func) - 1
        return span_at(start.start_line, start.start_column, start.start_line, end_column)


@dataclass(frozen=True, slots=True, kw_only=True)
class FString:
    """``f"..."``: literal text and ``{expr}`` / ``{expr:spec}`` parts in order."""

    parts: tuple[str | tuple[Expr, str], ...]
    span: Span


Expr = (
    Literal | Name | ListExpr | RecordExpr | Field | Index | BinOp | Compare | BoolOp | Not | Neg
    | Cond | Call | FString
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Assign:
    """``name = value``; ``op`` is ``+``, ``-`` or ``*`` for ``name op= value``, else ``""``."""

    name: str
    value: Expr
    op: str
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class ExprStmt:
    value: Expr
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class Return:
    value: Expr
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class For:
    var: str
    iterable: Expr
    body: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class If:
    """``elif`` is an ``If`` alone in ``orelse``."""

    test: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    span: Span


Stmt = Assign | ExprStmt | Return | For | If


@dataclass(frozen=True, slots=True, kw_only=True)
class Program:
    body: tuple[Stmt, ...]
    source: str


# Positional makers, for the front end that builds a node per syntax node (python_front): each
# equal to its class called with its fields by name, in the order above.
make_literal: Callable[[LiteralValue, Span], Literal] = maker(Literal)
make_name: Callable[[str, Span], Name] = maker(Name)
make_list: Callable[[tuple[Expr, ...], Span], ListExpr] = maker(ListExpr)
make_record: Callable[[tuple[str, ...], tuple[Expr, ...], Span], RecordExpr] = maker(RecordExpr)
make_field: Callable[[Expr, str, Span], Field] = maker(Field)
make_index: Callable[[Expr, Expr, Span], Index] = maker(Index)
make_binop: Callable[[str, Expr, Expr, Span], BinOp] = maker(BinOp)
make_compare: Callable[[str, Expr, Expr, Span], Compare] = maker(Compare)
make_boolop: Callable[[str, Expr, Expr, Span], BoolOp] = maker(BoolOp)
make_not: Callable[[Expr, Span], Not] = maker(Not)
make_neg: Callable[[Expr, Span], Neg] = maker(Neg)
make_cond: Callable[[Expr, Expr, Expr, Span], Cond] = maker(Cond)
make_lambda: Callable[[tuple[str, ...], Expr, Span], Lambda] = maker(Lambda)
make_keyword: Callable[[str, Expr | Lambda, Span], Keyword] = maker(Keyword)
make_call: Callable[[str, tuple[Expr | Lambda, ...], tuple[Keyword, ...], Span], Call] = maker(Call)
make_fstring: Callable[[tuple[str | tuple[Expr, str], ...], Span], FString] = maker(FString)
make_assign: Callable[[str, Expr, str, Span], Assign] = maker(Assign)
make_expr_stmt: Callable[[Expr, Span], ExprStmt] = maker(ExprStmt)
make_return: Callable[[Expr, Span], Return] = maker(Return)
make_for: Callable[[str, Expr, tuple[Stmt, ...], Span], For] = maker(For)
make_if: Callable[[Expr, tuple[Stmt, ...], tuple[Stmt, ...], Span], If] = maker(If)
