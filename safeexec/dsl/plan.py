"""The static plan of a checked program — tools, call bounds, iterations, result sizes, effects,
and which of them need approval — and its comparison with the grants, the budget and the policy's
``[dsl]`` limits (SX703/SX704/SX705/SX707/SX710), before anything runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from safeexec.dsl.limits import DslLimits
from safeexec.dsl.makers import maker
from safeexec.dsl.rules import (
    BUDGET,
    CALLS,
    ITERATIONS,
    NEEDS_APPROVAL,
    PLAN,
    TOTAL_CALLS,
    dsl_finding,
)
from safeexec.model.codec import JSONValue
from safeexec.model.values import Finding

if TYPE_CHECKING:  # plan_of() readers (approvers, the harness) need neither the checker nor lark
    from safeexec.dsl.checker import Checked
    from safeexec.dsl.signatures import ToolSignature

__all__ = ["Plan", "PlannedCall", "PlannedTool", "admit", "make_plan", "plan_of"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedCall:
    """One call site: line, how many times it may run, its constant arguments."""

    line: int
    times: int
    arguments: tuple[tuple[str, JSONValue], ...]
    computed: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedTool:
    """One tool the program may call: its bound, its declared effects and what needs approval.

    ``requires_approval`` is the grant's own flag; ``approval_effects`` are the tool's effects the
    policy's ``[approval] effects`` name — all of them when its effects are not known (no spec:
    fail closed). Either makes the tool ``needs_approval``.
    """

    name: str
    max_calls: int
    effects: tuple[str, ...]
    granted_calls: int | None
    requires_approval: bool
    sites: tuple[PlannedCall, ...]
    approval_effects: tuple[str, ...] = ()
    effects_known: bool = True

    @property
    def needs_approval(self) -> bool:
        return self.requires_approval or bool(self.approval_effects)


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """What a program may do, at most: the card a human approves before it runs."""

    tools: tuple[PlannedTool, ...]
    iterations: int
    max_items: int
    effects: tuple[str, ...]
    result: str

    @property
    def total_calls(self) -> int:
        return sum(t.max_calls for t in self.tools)

    @property
    def approval_effects(self) -> tuple[str, ...]:
        """The planned effects that need approval (sorted)."""
        return tuple(sorted({e for t in self.tools for e in t.approval_effects}))

    @property
    def approval_tools(self) -> tuple[str, ...]:
        """The planned tools that need approval, by effect or by grant (in plan order)."""
        return tuple(t.name for t in self.tools if t.needs_approval)

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "tools": [
                {
                    "name": t.name,
                    "max_calls": t.max_calls,
                    "granted_calls": t.granted_calls,
                    "effects": list(t.effects),
                    "effects_known": t.effects_known,
                    "requires_approval": t.requires_approval,
                    "approval_effects": list(t.approval_effects),
                    "needs_approval": t.needs_approval,
                    "calls": [
                        {
                            "line": s.line,
                            "times": s.times,
                            "effects": list(t.effects),
                            "arguments": dict(s.arguments),
                            "computed": list(s.computed),
                        }
                        for s in t.sites
                    ],
                }
                for t in self.tools
            ],
            "total_calls": self.total_calls,
            "iterations": self.iterations,
            "max_items": self.max_items,
            "effects": list(self.effects),
            "approval": {
                "effects": list(self.approval_effects),
                "tools": list(self.approval_tools),
            },
            "result": self.result,
        }

    def to_text(self) -> str:
        """The plan as lines a human reads (``reserve: ≤ 1 call, effect money``)."""
        lines = []
        for t in self.tools:
            effects = f", effect {', '.join(t.effects)}" if t.effects else ""
            if not t.effects_known:
                effects = ", effects unknown"
            limit = "" if t.granted_calls is None else f" (granted {t.granted_calls})"
            approval = ""
            if t.approval_effects:
                approval = f", needs approval (effect {', '.join(t.approval_effects)})"
            elif t.requires_approval:
                approval = ", needs approval (grant)"
            plural = "call" if t.max_calls == 1 else "calls"
            lines.append(f"{t.name}: ≤ {t.max_calls} {plural}{limit}{effects}{approval}")
            for s in t.sites:
                args = ", ".join(f"{k}={json.dumps(v)}" for k, v in s.arguments)
                args += (
                    "".join(f", {k}=<computed>" for k in s.computed)
                    if args
                    else ", ".join(f"{k}=<computed>" for k in s.computed)
                )
                lines.append(f"  line {s.line}: ≤ {s.times}× {t.name}({args})")
        lines.append(f"tool calls: ≤ {self.total_calls}")
        lines.append(f"iterations: ≤ {self.iterations}")
        lines.append(f"items per tool result: ≤ {self.max_items}")
        lines.append(f"effects: {', '.join(self.effects) or 'none'}")
        if self.approval_tools:
            asked = self.approval_effects
            by_effect = f"effects {', '.join(asked)}; " if asked else ""
            lines.append(f"needs approval: {by_effect}tools {', '.join(self.approval_tools)}")
        else:
            lines.append("needs approval: nothing")
        lines.append(f"result: {self.result}")
        return "\n".join(lines) + "\n"


# PlannedCall(line, times, arguments, computed), made faster (one per call site planned).
_planned_call: Callable[
    [int, int, tuple[tuple[str, JSONValue], ...], tuple[str, ...]], PlannedCall
] = maker(PlannedCall)


def make_plan(
    checked: Checked,
    tools: Iterable[ToolSignature],
    limits: DslLimits,
    *,
    approval_effects: Iterable[str] = (),
) -> Plan:
    """The plan of an accepted program (``checked.ok``); ``approval_effects`` are the effects the
    policy wants approved before a tool that has them runs."""
    asks = frozenset(approval_effects)
    by_name = {t.name: t for t in tools}
    planned = []
    calls: dict[str, list[PlannedCall]] = {}  # each tool's sites, in one pass over them
    for s in checked.sites:
        planned_call = _planned_call(s.span.start_line, s.times, s.arguments, s.computed)
        calls.setdefault(s.tool, []).append(planned_call)
    for name, count in sorted(checked.cost.calls.items(), key=lambda kv: calls[kv[0]][0].line):
        signature = by_name[name]
        planned.append(
            PlannedTool(
                name=name,
                max_calls=count,
                effects=signature.effects,
                granted_calls=signature.max_calls,
                requires_approval=signature.requires_approval,
                sites=tuple(calls[name]),
                approval_effects=tuple(e for e in signature.effects if e in asks)
                if signature.effects_known
                else tuple(sorted(asks)),
                effects_known=signature.effects_known,
            )
        )
    effects = sorted({e for t in planned for e in t.effects})
    return Plan(
        tools=tuple(planned),
        iterations=checked.cost.iterations,
        max_items=limits.max_items,
        effects=tuple(effects),
        result=str(checked.result),
    )


def admit(
    plan: Plan, *, limits: DslLimits, tool_calls_left: int | None, describe: bool = True
) -> tuple[Finding, ...]:
    """Compare the plan with the grants, the budget and the policy's ``[dsl]`` limits.

    Returns deny findings for what could exceed them (each saying how to proceed), then, with
    ``describe``, an approve finding when a planned tool needs approval (by its effects or its
    grant) and the SX790 plan record (a backend re-checking an admitted program needs neither).
    """
    findings: list[Finding] = []
    if plan.iterations > limits.max_iterations:
        findings.append(
            dsl_finding(
                ITERATIONS,
                f"the program may run {plan.iterations} iterations, more than the limit of "
                f"{limits.max_iterations}; loop over fewer items (take(xs, n)) or raise "
                "[dsl] max_iterations in the policy",
                span=None,
            )
        )
    for t in plan.tools:
        if t.granted_calls is not None and t.max_calls > t.granted_calls:
            findings.append(
                dsl_finding(
                    CALLS,
                    f"`{t.name}` may be called {t.max_calls} times but its grant allows "
                    f"{t.granted_calls}; bound the loop (take(xs, {t.granted_calls}))",
                    span=None,
                    evidence=t.name,
                )
            )
    if limits.max_tool_calls is not None and plan.total_calls > limits.max_tool_calls:
        findings.append(
            dsl_finding(
                TOTAL_CALLS,
                f"the program may make {plan.total_calls} tool calls, more than the policy's "
                f"[dsl] max_tool_calls = {limits.max_tool_calls}; call tools in fewer places or "
                "over fewer items (take(xs, n)), or raise the limit in the policy",
                span=None,
            )
        )
    if tool_calls_left is not None and plan.total_calls > tool_calls_left:
        findings.append(
            dsl_finding(
                BUDGET,
                f"the program may make {plan.total_calls} tool calls but the session has "
                f"{tool_calls_left} left; make fewer calls",
                span=None,
            )
        )
    if not describe:
        return tuple(findings)
    evidence = json.dumps(plan.to_json(), sort_keys=True, ensure_ascii=False)
    if plan.approval_tools:
        tools = ", ".join(f"`{n}`" for n in plan.approval_tools)
        if plan.approval_effects:
            effects = ", ".join(f"`{e}`" for e in plan.approval_effects)
            message = f"the plan has effect(s) {effects} that need approval (tools {tools})"
            unknown = [
                f"`{t.name}`" for t in plan.tools if t.needs_approval and not t.effects_known
            ]
            if unknown:
                message += f"; the effects of {', '.join(unknown)} are unknown here (no spec)"
        else:
            message = f"the plan may call {tools}, whose grant requires approval"
        findings.append(
            dsl_finding(
                NEEDS_APPROVAL,
                f"{message}; the plan is attached for the approver",
                span=None,
                evidence=evidence,
            )
        )
    findings.append(dsl_finding(PLAN, plan.to_text().rstrip(), span=None, evidence=evidence))
    return tuple(findings)


def plan_of(findings: Iterable[Finding]) -> dict[str, JSONValue] | None:
    """The plan a DSL decision carries (its ``SX790`` finding's evidence), for approvers and
    audit readers; ``None`` for decisions without one."""
    for finding in findings:
        if finding.rule == PLAN.id and finding.evidence:
            value = json.loads(finding.evidence)
            return value if isinstance(value, dict) else None
    return None
