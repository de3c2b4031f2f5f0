"""The static plan of a checked program — tools, call bounds, iterations, result sizes, effects —
and its comparison with the grants and the budget (SX703/SX704/SX705/SX710), before anything runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from safeexec.codec import JSONValue
from safeexec.dsl.checker import Checked, DslLimits
from safeexec.dsl.rules import BUDGET, CALLS, ITERATIONS, NEEDS_APPROVAL, PLAN, dsl_finding
from safeexec.dsl.signatures import ToolSignature
from safeexec.model import Finding

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
    name: str
    max_calls: int
    effects: tuple[str, ...]
    granted_calls: int | None
    requires_approval: bool
    sites: tuple[PlannedCall, ...]


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

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "tools": [
                {
                    "name": t.name,
                    "max_calls": t.max_calls,
                    "granted_calls": t.granted_calls,
                    "effects": list(t.effects),
                    "requires_approval": t.requires_approval,
                    "calls": [
                        {
                            "line": s.line,
                            "times": s.times,
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
            "result": self.result,
        }

    def to_text(self) -> str:
        """The plan as lines a human reads (``reserve: ≤ 1 call, effect money``)."""
        lines = []
        for t in self.tools:
            effects = f", effect {', '.join(t.effects)}" if t.effects else ""
            limit = "" if t.granted_calls is None else f" (granted {t.granted_calls})"
            approval = ", needs approval" if t.requires_approval else ""
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
        lines.append(f"result: {self.result}")
        return "\n".join(lines) + "\n"


def make_plan(checked: Checked, tools: Iterable[ToolSignature], limits: DslLimits) -> Plan:
    """The plan of an accepted program (``checked.ok``)."""
    by_name = {t.name: t for t in tools}
    planned = []
    first_line: dict[str, int] = {}
    for site in checked.sites:
        first_line.setdefault(site.tool, site.span.start_line)
    for name, count in sorted(checked.cost.calls.items(), key=lambda kv: first_line[kv[0]]):
        signature = by_name[name]
        sites = tuple(
            PlannedCall(
                line=s.span.start_line, times=s.times, arguments=s.arguments, computed=s.computed
            )
            for s in checked.sites
            if s.tool == name
        )
        planned.append(
            PlannedTool(
                name=name,
                max_calls=count,
                effects=signature.effects,
                granted_calls=signature.max_calls,
                requires_approval=signature.requires_approval,
                sites=sites,
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
    plan: Plan,
    *,
    limits: DslLimits,
    tool_calls_left: int | None,
    approval_tools: Mapping[str, bool] | None = None,
) -> tuple[Finding, ...]:
    """Compare the plan with the grants, the budget and the iteration limit.

    Returns deny findings for what could exceed them, an approve finding when a planned tool needs
    approval (``approval_tools`` adds the policy's view), and always the SX790 plan record.
    """
    findings: list[Finding] = []
    if plan.iterations > limits.max_iterations:
        findings.append(
            dsl_finding(
                ITERATIONS,
                f"the program may run {plan.iterations} iterations, more than the limit of "
                f"{limits.max_iterations}; loop over fewer items (take(xs, n))",
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
    if tool_calls_left is not None and plan.total_calls > tool_calls_left:
        findings.append(
            dsl_finding(
                BUDGET,
                f"the program may make {plan.total_calls} tool calls but the session has "
                f"{tool_calls_left} left; make fewer calls",
                span=None,
            )
        )
    extra = approval_tools or {}
    needing = [t.name for t in plan.tools if t.requires_approval or extra.get(t.name, False)]
    evidence = json.dumps(plan.to_json(), sort_keys=True, ensure_ascii=False)
    if needing:
        findings.append(
            dsl_finding(
                NEEDS_APPROVAL,
                f"the plan may call {', '.join(f'`{n}`' for n in needing)}, which need(s) "
                "approval; the plan is attached",
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
