"""The tool checks: calls of tools the policy refuses, gates on approval or limits in number.

Registered code checks (see :mod:`safeexec.analysis.checks`, which holds the registry).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from safeexec.analysis.sites import CheckHit, ScanContext
from safeexec.analysis.trips import fixed_sequences, loop_trips
from safeexec.model.values import BoundKind

__all__ = ["tool_call_limit", "tool_not_granted", "tool_requires_approval"]

# The check counts calls over the whole module at once: no name is bound to a known constant.
_NO_CONSTANTS: Mapping[str, float] = MappingProxyType({})


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
    sequences = fixed_sequences(ctx.tree)
    _count_calls(ctx.tree.body, 1.0, set(limits), counts, first_site, sequences)
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
    sequences: Mapping[str, ast.expr],
) -> None:
    for stmt in body:
        inner = multiplier
        if isinstance(stmt, ast.For | ast.AsyncFor):
            inner = multiplier * _trips_at_most(stmt.iter, sequences)
        elif isinstance(stmt, ast.While):
            inner = math.inf
        for field_name, value in ast.iter_fields(stmt):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                _count_calls(value, inner, tools, counts, first_site, sequences)
            elif isinstance(value, list) and value and isinstance(value[0], ast.ExceptHandler):
                for handler in value:
                    _count_calls(handler.body, inner, tools, counts, first_site, sequences)
            elif isinstance(value, list) and value and isinstance(value[0], ast.match_case):
                for case in value:
                    _count_calls(case.body, inner, tools, counts, first_site, sequences)
            elif isinstance(value, ast.AST | list):
                scale = multiplier if field_name == "iter" else inner
                # A list field may hold plain strings (`global`'s names): only nodes are walked.
                nodes = (
                    [v for v in value if isinstance(v, ast.AST)]
                    if isinstance(value, list)
                    else [value]
                )
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


def _trips_at_most(iterable: ast.expr, sequences: Mapping[str, ast.expr]) -> float:
    """How many times a loop over ``iterable`` may run: the shared trip count when the constants
    or the module's fixed sequences prove it, else infinitely often (the count must not undercount
    a tool's calls)."""
    trips = loop_trips(iterable, _NO_CONSTANTS, sequences)
    return trips.value if trips.kind is BoundKind.KNOWN else math.inf
