"""Calls of granted tools, checked against their ``ToolSpec`` JSON schemas: arguments by name,
names with did-you-mean, types, ``Literal`` choices, required parameters; each call site is
recorded with its multiplicity and constant arguments for the plan."""

from __future__ import annotations

import difflib
from collections.abc import Callable

from safeexec.dsl import nodes as n
from safeexec.dsl.context import CallSite, CheckerContext, Scope
from safeexec.dsl.cost import Cost
from safeexec.dsl.makers import maker
from safeexec.dsl.rules import TYPE_ERROR
from safeexec.dsl.signatures import ToolSignature
from safeexec.dsl.valuetypes import DType, assignable, from_schema
from safeexec.model.codec import JSONValue
from safeexec.model.values import Span

__all__ = ["CallSite", "check_tool_call"]


# CallSite(tool, span, times, arguments, computed), made faster (one per call site checked).
_call_site: Callable[
    [str, Span, int, tuple[tuple[str, JSONValue], ...], tuple[str, ...]], CallSite
] = maker(CallSite)


def check_tool_call(checker: CheckerContext, e: n.Call, tool: ToolSignature, env: Scope) -> DType:
    """Type a call of a granted tool against its schema; records the call site for the plan."""
    checker.cost.add(Cost(calls={tool.name: 1}))
    if e.args:
        names = ", ".join(f"{p}=..." for p in (tool.properties or {})) or "name=..."
        checker.report(
            TYPE_ERROR,
            f"pass `{tool.name}` its arguments by name: {tool.name}({names})",
            e.span,
        )
        for arg in e.args:
            checker.expr(arg, env)
    properties = tool.properties
    constants: list[tuple[str, JSONValue]] = []
    computed: list[str] = []
    for keyword in e.keywords:
        t = checker.expr(keyword.value, env)
        if isinstance(keyword.value, n.Literal):
            constants.append((keyword.name, keyword.value.value))
        else:
            computed.append(keyword.name)
        if properties is None:
            continue
        if keyword.name not in properties:
            checker.unknown(f"argument of `{tool.name}`", keyword.name, properties, keyword.span)
            continue
        _argument(checker, tool.name, keyword, t, properties[keyword.name])
    given = {k.name for k in e.keywords}
    missing = [r for r in tool.required if r not in given]
    if missing and not e.args:  # positional arguments were already reported
        checker.report(TYPE_ERROR, f"`{tool.name}` needs argument(s) {', '.join(missing)}", e.span)
    site = _call_site(tool.name, e.span, checker.multiplier, tuple(constants), tuple(computed))
    checker.add_site(site)
    return checker.tool_result(tool)


def _argument(
    checker: CheckerContext, tool: str, keyword: n.Keyword, t: DType, schema: JSONValue
) -> None:
    expected = from_schema(schema)
    if not assignable(t, expected):
        checker.report(
            TYPE_ERROR, f"`{tool}({keyword.name}=...)` expects {expected}, got {t}",
            keyword.value.span,
        )  # fmt: skip
        return
    choices = schema.get("enum") if isinstance(schema, dict) else None
    literal = keyword.value if isinstance(keyword.value, n.Literal) else None
    if isinstance(choices, list) and literal is not None and literal.value not in choices:
        close = difflib.get_close_matches(str(literal.value), [str(c) for c in choices], n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; one of {choices!r}"
        checker.report(
            TYPE_ERROR,
            f"`{tool}({keyword.name}=...)`: {literal.value!r} is not allowed{hint}",
            literal.span,
        )
