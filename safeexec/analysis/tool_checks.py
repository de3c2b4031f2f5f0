"""The tool checks: calls of tools the policy refuses, gates on approval or limits in number.

Registered code checks (see :mod:`safeexec.analysis.checks`, which holds the registry).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator

from safeexec.analysis.sites import CheckHit, ScanContext
from safeexec.qualnames import dotted_name

__all__ = ["tool_call_limit", "tool_not_granted", "tool_requires_approval"]


def _tool_calls(ctx: ScanContext) -> Iterator[tuple[str, ast.Call]]:
    tools = {c.tool for c in ctx.policy.capabilities}
    for site in ctx.calls:
        func = site.node.func
        if isinstance(func, ast.Name) and func.id in tools:
            yield func.id, site.node


def tool_not_granted(ctx: ScanContext) -> Iterator[CheckHit]:
    """A call to a tool the policy declares but does not let a session be granted."""
    refused = {c.tool for c in ctx.policy.capabilities if not c.grantable}
    for tool, node in _tool_calls(ctx):
        if tool in refused:
            yield CheckHit(node=node, fields={"tool": tool}, evidence=tool)


def tool_requires_approval(ctx: ScanContext) -> Iterator[CheckHit]:
    """A call to a tool whose capability requires a human (or harness) approval."""
    needs = {c.tool for c in ctx.policy.capabilities if c.requires_approval and c.grantable}
    for tool, node in _tool_calls(ctx):
        if tool in needs:
            yield CheckHit(node=node, fields={"tool": tool}, evidence=tool)


def tool_call_limit(ctx: ScanContext) -> Iterator[CheckHit]:
    """More static calls of a tool than its capability's ``max_calls`` (loops multiply)."""
    limits = {c.tool: c.max_calls for c in ctx.policy.capabilities if c.max_calls is not None}
    if not limits or not any(tool in limits for tool, _ in _tool_calls(ctx)):
        return
    counts: dict[str, float] = {}
    first_site: dict[str, ast.Call] = {}
    _count_calls(ctx.tree.body, 1.0, set(limits), counts, first_site)
    for tool, calls in sorted(counts.items()):
        limit = limits[tool]
        if limit is not None and calls > limit:
            shown = "unbounded" if math.isinf(calls) else str(int(calls))
            yield CheckHit(
                node=first_site[tool],
                fields={"tool": tool, "calls": shown, "max_calls": str(limit)},
                evidence=f"{tool} x {shown}",
            )


def _count_calls(
    body: list[ast.stmt],
    multiplier: float,
    tools: set[str],
    counts: dict[str, float],
    first_site: dict[str, ast.Call],
) -> None:
    for stmt in body:
        inner = multiplier
        if isinstance(stmt, ast.For | ast.AsyncFor):
            inner = multiplier * _range_trips(stmt.iter)
        elif isinstance(stmt, ast.While):
            inner = math.inf
        for field_name, value in ast.iter_fields(stmt):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                _count_calls(value, inner, tools, counts, first_site)
            elif isinstance(value, list) and value and isinstance(value[0], ast.ExceptHandler):
                for handler in value:
                    _count_calls(handler.body, inner, tools, counts, first_site)
            elif isinstance(value, list) and value and isinstance(value[0], ast.match_case):
                for case in value:
                    _count_calls(case.body, inner, tools, counts, first_site)
            elif isinstance(value, ast.AST | list):
                scale = multiplier if field_name == "iter" else inner
                nodes = value if isinstance(value, list) else [value]
                for root in nodes:
                    in_comprehension = _calls_in_comprehensions(root)
                    for node in ast.walk(root):
                        func = getattr(node, "func", None)
                        if isinstance(func, ast.Name) and func.id in tools:
                            repeat = math.inf if id(node) in in_comprehension else scale
                            counts[func.id] = counts.get(func.id, 0.0) + repeat
                            first_site.setdefault(func.id, node)  # type: ignore[arg-type]


def _calls_in_comprehensions(root: ast.AST) -> set[int]:
    """Ids of the call nodes under any comprehension in ``root`` (one walk per comprehension)."""
    inside: set[int] = set()
    for node in ast.walk(root):
        if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            if id(node) in inside:
                continue
            for child in ast.walk(node):
                inside.add(id(child))
    return inside


def _range_trips(node: ast.expr) -> float:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "range"
        and 1 <= len(node.args) <= 3
        and all(isinstance(a, ast.Constant) and type(a.value) is int for a in node.args)
    ):
        values = [
            a.value for a in node.args if isinstance(a, ast.Constant) and type(a.value) is int
        ]
        try:
            return float(len(range(*values)))
        except (ValueError, OverflowError):
            return math.inf
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return float(len(node.elts))
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        return _slice_trips(node.slice, _range_trips(node.value))
    if (
        isinstance(node, ast.Call)
        and dotted_name(node.func) in ("itertools.islice", "islice")
        and len(node.args) == 2
        and not node.keywords
    ):
        stop = _constant_int(node.args[1])
        return math.inf if stop is None else float(max(stop, 0))
    return math.inf


def _constant_int(node: ast.expr | None) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _constant_int(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _slice_trips(part: ast.Slice, whole: float) -> float:
    """At most how many items a constant slice holds: ``hits[:2]`` bounds a loop whatever
    ``hits`` is (the estimator's ``_slice_trips`` reads the same slices for the CPU bound)."""
    values = [_constant_int(p) for p in (part.lower, part.upper, part.step)]
    given = [p is not None for p in (part.lower, part.upper, part.step)]
    if any(g and v is None for g, v in zip(given, values, strict=True)):
        return whole
    lower, upper, step = values
    step = 1 if step is None else step
    start = 0 if lower is None else lower
    if step <= 0:
        return whole
    if upper is not None and upper >= 0 and start >= 0:
        span = upper - start
    elif upper is None and start < 0:
        span = -start
    elif upper is not None and upper < 0 and start < 0:
        span = upper - start
    else:
        return whole
    return min(float(math.ceil(max(span, 0) / step)), whole)
