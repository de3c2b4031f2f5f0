"""The checker: names resolved, types checked against the tools' schemas, costs bounded.

:func:`check_program` never raises for any program: every problem is an SX70x finding with a span,
a caret and, for unknown names, a did-you-mean. What it accepts, :mod:`safeexec.dsl.compiler`
compiles; the costs it computes become the :class:`~safeexec.dsl.plan.Plan`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from safeexec.dsl import nodes as n
from safeexec.dsl.context import Binding, CallSite, Scope
from safeexec.dsl.cost import Cost
from safeexec.dsl.limits import DslLimits
from safeexec.dsl.ops import OPS, OpContext
from safeexec.dsl.parser import caret
from safeexec.dsl.rules import STRUCTURE, TYPE_ERROR, UNKNOWN_NAME, DslRule, dsl_finding
from safeexec.dsl.signatures import ToolSignature
from safeexec.dsl.tool_calls import check_tool_call
from safeexec.dsl.valuetypes import (
    ANY,
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    DType,
    Kind,
    join,
    list_of,
    record,
    with_cap,
)
from safeexec.model.values import Finding, Span

__all__ = ["CallSite", "Checked", "DslLimits", "check_program"]

_RESERVED_PREFIX = "dsl_"
_FORMAT_SPEC = frozenset("<>^=+- 0123456789.,_dfeEgGs%x")
_LITERAL_TYPES = {bool: BOOL, int: INT, float: FLOAT, str: STR}
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Checked:
    """The checker's verdict on a program; ``ok`` when no finding denies it."""

    program: n.Program
    findings: tuple[Finding, ...]
    cost: Cost
    sites: tuple[CallSite, ...]
    result: DType
    bounds: Mapping[int, int]  # id(For or op Call node) -> its iteration bound
    desugared: Mapping[int, n.BinOp]  # id(``x op= v`` Assign) -> the ``x op v`` it was checked as

    @property
    def ok(self) -> bool:
        return not self.findings


@dataclass(slots=True)
class _State:
    findings: list[Finding] = field(default_factory=list)
    sites: list[CallSite] = field(default_factory=list)
    multiplier: int = 1


def check_program(
    program: n.Program, tools: Iterable[ToolSignature], *, limits: DslLimits | None = None
) -> Checked:
    """Check ``program`` against the granted ``tools``; total (never raises for any program)."""
    checker = _Checker(program, {t.name: t for t in tools}, limits or DslLimits())
    return checker.run()


class _Checker:
    def __init__(
        self, program: n.Program, tools: dict[str, ToolSignature], limits: DslLimits
    ) -> None:
        self.program = program
        self.tools = tools
        self.limits = limits
        self.state = _State()
        self.bounds: dict[int, int] = {}
        self.result: DType = NONE
        self.aug_values: dict[int, n.BinOp] = {}  # id(Assign with op) -> its desugared value
        self.results: dict[str, DType] = {}  # tool name -> its result type under the cap
        # The cost of the piece being checked (the program, a loop body, a branch, a lambda's
        # body): every expression adds its own to it, so none returns one.
        self.cost = Cost()

    # -- findings -------------------------------------------------------------------------------

    def report(self, rule: DslRule, message: str, span: Span | None) -> None:
        evidence = caret(self.program.source, span)
        self.state.findings.append(dsl_finding(rule, message, span=span, evidence=evidence))

    def unknown(self, what: str, name: str, choices: Iterable[str], span: Span) -> None:
        close = difflib.get_close_matches(name, sorted(set(choices)), n=1, cutoff=0.6)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        self.report(UNKNOWN_NAME, f"unknown {what} `{name}`{hint}", span)

    @property
    def multiplier(self) -> int:
        """How many times the code being checked may run (the product of enclosing loops)."""
        return self.state.multiplier

    def add_site(self, site: CallSite) -> None:
        self.state.sites.append(site)

    def measure(self, check: Callable[[], _T]) -> tuple[_T, Cost]:
        """What ``check`` returns and the cost of what it checks, kept out of the current piece
        (a loop body's runs many times, only one branch of an ``if`` runs)."""
        outer, self.cost = self.cost, Cost()
        made = check()
        piece, self.cost = self.cost, outer
        return made, piece

    def tool_result(self, tool: ToolSignature) -> DType:
        """A granted tool's result type with the session's ``max_items`` (made once per check)."""
        made = self.results.get(tool.name)
        if made is None:
            made = self.results[tool.name] = with_cap(tool.result, self.limits.max_items)
        return made

    # -- statements -----------------------------------------------------------------------------

    def run(self) -> Checked:
        env: Scope = {}
        body = self.program.body
        for i, stmt in enumerate(body):
            if isinstance(stmt, n.Return) and i != len(body) - 1:
                self.report(STRUCTURE, "`return` must be the last statement", stmt.span)
        self.block(body, env, top=True)
        findings = tuple(dict.fromkeys(self.state.findings))
        return Checked(
            program=self.program,
            findings=findings,
            cost=self.cost,
            sites=tuple(self.state.sites),
            result=self.result,
            bounds=self.bounds,
            desugared=self.aug_values,
        )

    def block(self, stmts: tuple[n.Stmt, ...], env: Scope, *, top: bool) -> None:
        for stmt in stmts:
            self.stmt(stmt, env, top=top)

    def stmt(self, stmt: n.Stmt, env: Scope, *, top: bool) -> None:
        if isinstance(stmt, n.Assign):
            self.assign(stmt, env)
        elif isinstance(stmt, n.ExprStmt):
            self.expr(stmt.value, env)
        elif isinstance(stmt, n.Return):
            if not top:
                self.report(STRUCTURE, "`return` is allowed only at the top level", stmt.span)
            self.result = self.expr(stmt.value, env)
        elif isinstance(stmt, n.For):
            self.for_stmt(stmt, env)
        else:
            self.if_stmt(stmt, env)

    def bindable(self, name: str, span: Span, env: Scope) -> bool:
        if name in self.tools or name in OPS or name.startswith(_RESERVED_PREFIX):
            self.report(STRUCTURE, f"`{name}` names a tool or op; bind another name", span)
            return False
        if name in env and env[name].fixed:
            self.report(STRUCTURE, f"`{name}` is a loop variable or parameter here", span)
            return False
        return True

    def assign(self, stmt: n.Assign, env: Scope) -> None:
        value = stmt.value
        if stmt.op:
            value = n.BinOp(
                op=stmt.op, left=n.Name(id=stmt.name, span=stmt.span), right=value, span=stmt.span
            )
            self.aug_values[id(stmt)] = value
        t = self.expr(value, env)
        if self.bindable(stmt.name, stmt.span, env):
            env[stmt.name] = Binding(t, fixed=False)

    def for_stmt(self, stmt: n.For, env: Scope) -> None:
        it = self.expr(stmt.iterable, env)
        item, bound = self.iteration(it, stmt.iterable.span)
        self.bounds[id(stmt)] = bound
        outer = dict(env)
        mark = len(self.state.findings), len(self.state.sites)
        body_cost = self.loop_body(stmt, env, item, bound)
        changed = [k for k, b in outer.items() if env[k] is not b and env[k].type != b.type]
        if changed:  # a second pass with the types widened to what the loop can make them
            for k in changed:
                widened = _widen(join(outer[k].type, env[k].type), self.limits.max_items)
                env[k] = Binding(widened, False)
            del self.state.findings[mark[0] :]
            del self.state.sites[mark[1] :]
            body_cost = self.loop_body(stmt, env, item, bound)
        self.cost.add(Cost(iterations=bound)).add(body_cost.times(bound))

    def loop_body(self, stmt: n.For, env: Scope, item: DType, bound: int) -> Cost:
        inner = dict(env)
        if self.bindable(stmt.var, stmt.span, env):
            inner[stmt.var] = Binding(item, fixed=True)
        saved = self.state.multiplier
        self.state.multiplier = saved * max(bound, 1)
        _, body_cost = self.measure(lambda: self.block(stmt.body, inner, top=False))
        self.state.multiplier = saved
        for k, before in env.items():  # the body may run no time at all: a name holds what it
            if inner[k] is not before:  # held, or what the body bound to it
                env[k] = Binding(join(before.type, inner[k].type), before.fixed)
        return body_cost

    def if_stmt(self, stmt: n.If, env: Scope) -> None:
        self.expr(stmt.test, env)
        then_env, else_env = dict(env), dict(env)
        _, then_cost = self.measure(lambda: self.block(stmt.body, then_env, top=False))
        _, else_cost = self.measure(lambda: self.block(stmt.orelse, else_env, top=False))
        for k, then in then_env.items():
            orelse = else_env.get(k)
            if orelse is not None and orelse is not then:  # bound in both, rebound in either
                env[k] = Binding(join(then.type, orelse.type), then.fixed)
        self.cost.add(then_cost.either(else_cost))

    def iteration(self, t: DType, span: Span) -> tuple[DType, int]:
        """The item type and iteration bound of looping over a value of type ``t``."""
        if t.kind is Kind.LIST and t.item is not None:
            return t.item, t.bound
        if t.kind is Kind.ANY:
            return ANY, self.limits.max_items
        if t.kind in (Kind.MAP, Kind.RECORD):
            return STR, t.bound if t.kind is Kind.MAP else len(t.fields)
        self.report(TYPE_ERROR, f"cannot loop over a value of type {t}; loop over a list", span)
        return ANY, 0

    # -- expressions ----------------------------------------------------------------------------

    def expr(self, e: n.Expr | n.Lambda, env: Scope) -> DType:
        rule = _EXPRESSIONS.get(type(e))
        if rule is None:  # a lambda: the only node of the closed tree that is not an expression
            self.report(STRUCTURE, "a lambda is allowed only as an op's function argument", e.span)
            return ANY
        return rule(self, e, env)

    def literal(self, e: n.Literal, env: Scope) -> DType:
        return _LITERAL_TYPES.get(type(e.value), NONE)

    def list_expr(self, e: n.ListExpr, env: Scope) -> DType:
        item = None
        for x in e.items:
            t = self.expr(x, env)
            item = t if item is None else join(item, t)
        return list_of(item or ANY, len(e.items))

    def record_expr(self, e: n.RecordExpr, env: Scope) -> DType:
        return record({k: self.expr(v, env) for k, v in zip(e.keys, e.values, strict=True)})

    def boolop(self, e: n.BoolOp, env: Scope) -> DType:
        a, b = self.expr(e.left, env), self.expr(e.right, env)
        return BOOL if a == b == BOOL else join(a, b)

    def not_expr(self, e: n.Not, env: Scope) -> DType:
        self.expr(e.operand, env)
        return BOOL

    def neg(self, e: n.Neg, env: Scope) -> DType:
        t = self.expr(e.operand, env)
        if not t.numeric:
            self.report(TYPE_ERROR, f"`-` needs a number, got {t}", e.span)
        return t

    def cond(self, e: n.Cond, env: Scope) -> DType:
        self.expr(e.test, env)
        a, body_cost = self.measure(lambda: self.expr(e.body, env))
        b, else_cost = self.measure(lambda: self.expr(e.orelse, env))
        self.cost.add(body_cost.either(else_cost))
        return join(a, b)

    def name(self, e: n.Name, env: Scope) -> DType:
        if e.id in env:
            return env[e.id].type
        if e.id in self.tools or e.id in OPS:
            self.report(STRUCTURE, f"`{e.id}` is called, not used as a value: {e.id}(...)", e.span)
        else:
            self.unknown("name", e.id, env, e.span)
        return ANY

    def field(self, e: n.Field, env: Scope) -> DType:
        t = self.expr(e.value, env)
        base = t.item if t.kind is Kind.OPTIONAL and t.item is not None else t
        if base.kind is Kind.RECORD:
            found = base.field(e.name)
            if found is None:
                self.unknown("field", e.name, (k for k, _ in base.fields), e.span)
                return ANY
            return found
        if base.kind is Kind.MAP and base.item is not None:
            return base.item
        if base.kind is not Kind.ANY:
            self.report(TYPE_ERROR, f"`.{e.name}` needs a record, got {t}", e.span)
        return ANY

    def index(self, e: n.Index, env: Scope) -> DType:
        t, i = self.expr(e.value, env), self.expr(e.index, env)
        if t.kind is Kind.LIST and t.item is not None:
            if i.kind not in (Kind.INT, Kind.ANY):
                self.report(TYPE_ERROR, f"a list index must be an int, got {i}", e.index.span)
            return t.item
        if t.kind is Kind.STR:
            return STR
        if t.kind in (Kind.MAP, Kind.RECORD):
            if i.kind not in (Kind.STR, Kind.ANY):
                self.report(TYPE_ERROR, f"a record key must be a string, got {i}", e.index.span)
            if t.kind is Kind.RECORD and isinstance(e.index, n.Literal):
                key = str(e.index.value)
                found = t.field(key)
                if found is None:
                    self.unknown("field", key, (k for k, _ in t.fields), e.index.span)
                return found or ANY
            return t.item or ANY
        if t.kind is not Kind.ANY:
            self.report(TYPE_ERROR, f"cannot index a value of type {t}", e.span)
        return ANY

    def binop(self, e: n.BinOp, env: Scope) -> DType:
        a, b = self.expr(e.left, env), self.expr(e.right, env)
        if a.kind is Kind.ANY or b.kind is Kind.ANY:
            return ANY
        if a.numeric and b.numeric:
            if e.op == "/":
                return FLOAT
            return INT if a.kind is b.kind is Kind.INT else FLOAT
        if e.op == "+" and a.kind is b.kind is Kind.STR:
            return STR
        if e.op == "+" and a.kind is b.kind is Kind.LIST:
            assert a.item is not None and b.item is not None
            bound = min(a.bound + b.bound, self.limits.max_items)
            return list_of(join(a.item, b.item), bound)
        self.report(TYPE_ERROR, f"`{e.op}` cannot combine {a} and {b}", e.span)
        return ANY

    def compare(self, e: n.Compare, env: Scope) -> DType:
        a, b = self.expr(e.left, env), self.expr(e.right, env)
        if e.op in ("<", "<=", ">", ">="):
            ok = (a.numeric and b.numeric) or (a.kind is b.kind is Kind.STR)
            if not ok and Kind.ANY not in (a.kind, b.kind):
                self.report(TYPE_ERROR, f"`{e.op}` cannot order {a} and {b}", e.span)
        elif e.op in ("in", "not in") and b.kind not in (
            Kind.LIST, Kind.STR, Kind.MAP, Kind.RECORD, Kind.ANY
        ):  # fmt: skip
            self.report(TYPE_ERROR, f"`{e.op}` needs a list, string or record, got {b}", e.span)
        return BOOL

    def fstring(self, e: n.FString, env: Scope) -> DType:
        for part in e.parts:
            if isinstance(part, str):
                continue
            value, spec = part
            self.expr(value, env)
            width = "".join(ch for ch in spec.split(".")[0] if ch.isdigit())
            if not set(spec) <= _FORMAT_SPEC or len(width) > 3 or len(spec) > 12:
                self.report(TYPE_ERROR, f"format spec {spec!r} is not allowed", value.span)
        return STR

    # -- calls ----------------------------------------------------------------------------------

    def call(self, e: n.Call, env: Scope) -> DType:
        if e.func in self.tools:
            return check_tool_call(self, e, self.tools[e.func], env)
        if e.func in OPS:
            return OPS[e.func].check(OpContext(self, e, env))
        self.unknown("tool or op", e.func, [*self.tools, *OPS], e.func_span)
        for arg in (*e.args, *(k.value for k in e.keywords)):
            if not isinstance(arg, n.Lambda):
                self.expr(arg, env)
        return ANY


def _widen(t: DType, cap: int) -> DType:
    """A type grown inside a loop: its list bound becomes the runtime cap."""
    if t.kind is Kind.LIST and t.item is not None:
        return list_of(t.item, cap)
    return t


# Each expression node's rule, by the node's exact type (one lookup instead of a chain of tests).
_EXPRESSIONS: dict[type, Callable[[_Checker, Any, Scope], DType]] = {
    n.Literal: _Checker.literal,
    n.Name: _Checker.name,
    n.Call: _Checker.call,
    n.ListExpr: _Checker.list_expr,
    n.RecordExpr: _Checker.record_expr,
    n.Field: _Checker.field,
    n.Index: _Checker.index,
    n.BinOp: _Checker.binop,
    n.Compare: _Checker.compare,
    n.BoolOp: _Checker.boolop,
    n.Not: _Checker.not_expr,
    n.Neg: _Checker.neg,
    n.Cond: _Checker.cond,
    n.FString: _Checker.fstring,
}
