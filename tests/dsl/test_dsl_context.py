"""Ops and tool calls are checked against the small ``CheckerContext`` protocol, not the
checker's private class: a stand-in context checks them alone."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from safeexec.dsl import nodes as n
from safeexec.dsl.context import Binding, CallSite, CheckerContext, Scope
from safeexec.dsl.cost import Cost
from safeexec.dsl.limits import DslLimits
from safeexec.dsl.ops import OPS, OpContext
from safeexec.dsl.parser import parse_expression
from safeexec.dsl.rules import DslRule
from safeexec.dsl.signatures import ToolSignature
from safeexec.dsl.valuetypes import ANY, INT, STR, DType, Kind, list_of
from safeexec.model.values import Span

DSL = Path(__file__).resolve().parents[2] / "safeexec" / "dsl"
_T = TypeVar("_T")


class StandIn:
    """A checker context with fixed answers: names are lists of strings, literals their type."""

    def __init__(self) -> None:
        self.limits = DslLimits(max_items=7)
        self.cost = Cost()
        self.bounds: dict[int, int] = {}
        self.reports: list[tuple[str, str]] = []
        self.sites: list[CallSite] = []

    @property
    def multiplier(self) -> int:
        return 1

    def report(self, rule: DslRule, message: str, span: Span | None) -> None:
        self.reports.append((rule.id, message))

    def unknown(self, what: str, name: str, choices: Iterable[str], span: Span) -> None:
        self.reports.append(("unknown", name))

    def expr(self, e: n.Expr | n.Lambda, env: Scope) -> DType:
        if isinstance(e, n.Name):
            return env[e.id].type if e.id in env else list_of(STR, 3)
        if isinstance(e, n.Literal):
            return INT if type(e.value) is int else STR
        return ANY

    def measure(self, check: Callable[[], _T]) -> tuple[_T, Cost]:
        return check(), Cost()

    def bindable(self, name: str, span: Span, env: Scope) -> bool:
        return True

    def iteration(self, t: DType, span: Span) -> tuple[DType, int]:
        return (t.item or ANY, t.bound) if t.kind is Kind.LIST else (ANY, self.limits.max_items)

    def tool_result(self, tool: ToolSignature) -> DType:
        return ANY

    def add_site(self, site: CallSite) -> None:
        self.sites.append(site)


def _check(text: str, context: CheckerContext, env: Scope | None = None) -> DType:
    call = parse_expression(text, line=1, column=1)
    assert isinstance(call, n.Call)
    return OPS[call.func].check(OpContext(context, call, env or {}))


def test_an_op_is_checked_against_a_stand_in_context() -> None:
    context = StandIn()
    assert _check('join(xs, ",")', context) == STR
    assert list(context.bounds.values()) == [3]  # the stand-in's list bound, for the compiler
    assert _check("len(3)", context) == ANY
    assert context.reports == [("SX702", "len(): needs a list, string or record, got int")]


def test_a_lambda_binds_its_parameter_in_the_callers_scope() -> None:
    context = StandIn()
    env = {"ys": Binding(list_of(INT, 4), fixed=False)}
    result = _check("map(ys, lambda y: y)", context, env)
    assert result == list_of(INT, 4)


def test_ops_and_tool_calls_do_not_import_the_checker() -> None:
    for name in ("ops.py", "tool_calls.py", "context.py"):
        tree = ast.parse((DSL / name).read_text(encoding="utf-8"))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)} | {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        assert "safeexec.dsl.checker" not in imported, name
