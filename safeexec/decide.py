"""The static gate: findings + estimate + policy + budget → one
:class:`~safeexec.model.values.Decision`.

Pure and total: the same inputs always give the same decision, with findings in a stable order.
Deny wins over approve, approve over allow. The engine adds its own findings here: ``SX510``
(budget-exhausted, one per dimension) and ``SX520`` (backend-not-allowed).

This module is the only author of a ``Decision``: what a step runs under once its approver has
answered and its caller narrowed the time limits (:func:`settle`), a step that could not run
after all (:func:`fail_closed`), a tool-call step (:func:`decide_tool_call`) and the calls an
approved DSL plan may make unasked (:func:`approved_calls`) are all made here; the session only
passes them on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from safeexec.model.values import (
    Bound,
    BoundKind,
    Budget,
    Decision,
    Enforcement,
    Estimate,
    Finding,
    Limits,
    Verdict,
)
from safeexec.policy.engine_rules import BACKEND_NOT_ALLOWED, BUDGET_EXHAUSTED, engine_finding
from safeexec.policy.schema import Policy, Rule

if TYPE_CHECKING:
    from safeexec.capabilities.gateway import ApprovalRequest

__all__ = [
    "TOOL_BACKEND",
    "approved_calls",
    "chosen_backend",
    "decide",
    "decide_tool_call",
    "fail_closed",
    "order_findings",
    "settle",
]

TOOL_BACKEND = "tool"
"""The ``backend`` of a step that was one tool call (``Session.call_tool``), not code."""


def chosen_backend(policy: Policy, backend: str | None) -> str:
    """The mode a step asks for: ``backend``, else the policy's default."""
    return backend if backend is not None else policy.backends.default


def decide(
    *,
    findings: tuple[Finding, ...],
    estimate: Estimate | None,
    policy: Policy,
    budget: Budget,
    backend: str | None = None,
) -> Decision:
    """Decide whether an action may run, where, and under which limits.

    ``backend`` is the mode the caller asks for (``None``: the policy's default). Limits are the
    policy's, with ``cpu_seconds`` clipped to what the budget has left.
    """
    chosen = chosen_backend(policy, backend)
    engine = [*_budget_findings(budget, estimate)]
    if chosen not in policy.backends.allowed:
        engine.append(_backend_not_allowed(chosen, policy.backends.allowed))
    every = order_findings((*findings, *engine))
    return Decision(
        verdict=_verdict(every),
        findings=every,
        backend=chosen,
        limits=_clip(policy.limits, budget),
        estimate=estimate,
        policy_id=policy.info.id,
        policy_digest=policy.digest,
    )


def decide_tool_call(*, policy: Policy, budget: Budget, backend: str | None = None) -> Decision:
    """The decision on one tool call as a step: the engine's findings on the budget and the mode
    asked for (:func:`decide` with no findings), with ``backend`` :data:`TOOL_BACKEND` (no code
    runs; the capability gateway decides on the call itself)."""
    decision = decide(findings=(), estimate=None, policy=policy, budget=budget, backend=backend)
    return dataclasses.replace(decision, backend=TOOL_BACKEND)


def settle(
    decision: Decision,
    *,
    approved: bool | None = None,
    wall_seconds: float | None = None,
    cpu_seconds: float | None = None,
) -> Decision:
    """The decision a step runs under, from the gate's.

    ``approved`` is the approver's answer to a ``needs_approval`` decision (ignored otherwise):
    an approved action keeps its ``needs_approval`` verdict in the log (and runs), a refused
    one (or one nobody answered) is denied. ``wall_seconds`` and ``cpu_seconds``, the caller's
    limits for this step, narrow the decision's limits and never widen them, so the audit
    event states the limits that applied.
    """
    if decision.verdict is Verdict.NEEDS_APPROVAL and approved is not True:
        decision = dataclasses.replace(decision, verdict=Verdict.DENY)
    limits = decision.limits
    if wall_seconds is not None and wall_seconds < limits.wall_seconds:
        limits = dataclasses.replace(limits, wall_seconds=wall_seconds)
    if cpu_seconds is not None and cpu_seconds < limits.cpu_seconds:
        limits = dataclasses.replace(limits, cpu_seconds=cpu_seconds)
    return decision if limits is decision.limits else dataclasses.replace(decision, limits=limits)


def fail_closed(decision: Decision, rule: Rule, exc: BaseException) -> Decision:
    """The decision as audited when an allowed action could not be run after all: denied, with
    an engine finding of ``rule`` that names the backend and the error."""
    finding = engine_finding(
        rule,
        f"backend={decision.backend!r} could not run the action: {exc}",
        evidence=type(exc).__name__,
    )
    return dataclasses.replace(
        decision,
        verdict=Verdict.DENY,
        findings=order_findings((*decision.findings, finding)),
    )


def approved_calls(
    decision: Decision, approver: object
) -> Callable[[ApprovalRequest], bool] | None:
    """The tool calls an approved DSL plan may make unasked during its run, or ``None`` (see
    :mod:`safeexec.dsl.approval`); ``decision`` is one that runs, after :func:`settle`."""
    if decision.verdict is not Verdict.NEEDS_APPROVAL:
        return None
    # Imported only for an approved step: the plan reader loads the capability layer (socket,
    # ctypes, secrets), which ``check`` (this module's importer) must not pay for.
    from safeexec.dsl.approval import approved_plan_calls

    return approved_plan_calls(decision, approver)


def order_findings(findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
    """Findings in a stable order, exact duplicates removed.

    Engine findings without a position come first, then by position in the source, then by rule.
    """
    unique = dict.fromkeys(findings)
    return tuple(sorted(unique, key=_order_key))


def _order_key(finding: Finding) -> tuple[object, ...]:
    span = finding.span
    where = (0, 0, 0, 0, 0) if span is None else (
        1, span.start_line, span.start_column, span.end_line, span.end_column
    )  # fmt: skip
    rest = (finding.name, finding.enforcement, finding.severity, finding.message, finding.evidence)
    return (*where, finding.rule, *rest)


def _verdict(findings: tuple[Finding, ...]) -> Verdict:
    enforcements = {finding.enforcement for finding in findings}
    if Enforcement.DENY in enforcements:
        return Verdict.DENY
    if Enforcement.APPROVE in enforcements:
        return Verdict.NEEDS_APPROVAL
    return Verdict.ALLOW


def _clip(limits: Limits, budget: Budget) -> Limits:
    if budget.cpu_seconds_left < limits.cpu_seconds:
        return dataclasses.replace(limits, cpu_seconds=max(0.0, budget.cpu_seconds_left))
    return limits


def _budget_findings(budget: Budget, estimate: Estimate | None) -> list[Finding]:
    out = [
        _budget_exhausted(
            dimension,
            f"the session's {dimension} budget is exhausted (none left); "
            "start a new session or raise [budget] in the policy",
        )
        for dimension in budget.exhausted
    ]
    if estimate is not None and "tool_calls" not in budget.exhausted:
        calls = _known(estimate.tool_calls)
        if calls is not None and calls > budget.tool_calls_left:
            out.append(
                _budget_exhausted(
                    "tool_calls",
                    f"the code makes {calls:g} tool calls but only {budget.tool_calls_left} are "
                    "left in the session's budget; make fewer calls",
                )
            )
    return out


def _known(bound: Bound) -> float | None:
    return bound.value if bound.kind is BoundKind.KNOWN else None


def _budget_exhausted(dimension: str, message: str) -> Finding:
    return engine_finding(BUDGET_EXHAUSTED, message, evidence=dimension)


def _backend_not_allowed(backend: str, allowed: tuple[str, ...]) -> Finding:
    return engine_finding(
        BACKEND_NOT_ALLOWED,
        f"backend={backend!r} is not allowed by the policy (allowed: "
        f"{', '.join(allowed) or 'none'}); pick an allowed backend or change [backends]",
        evidence=backend,
    )
