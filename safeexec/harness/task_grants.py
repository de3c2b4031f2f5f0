"""What a task may do, derived from the task itself, so a suite needs no policy entries.

On top of the pack the user chose, the harness adds a ``[capabilities.<tool>]`` entry for each tool
the task lists (and ``submit``) that the pack does not mention; a pack's own entry wins, so a pack
can still forbid a tool or cap it. Tools with effects beyond ``read`` require approval; a call that
matches one of the task's ``authorized_effects`` is approved, anything else goes to the user's
approver (denied when there is none); a code step that needs approval only because it calls
authorized tools is approved, and each call is then checked as above. A tool with a scope
parameter is scoped to the values the authorized effects pin for it; a writing tool the task
never authorizes gets an empty scope.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from safeexec.capabilities.gateway import ApprovalRequest, Effect, ToolSpec
from safeexec.dsl.plan import plan_of
from safeexec.dsl.rules import NEEDS_APPROVAL
from safeexec.errors import ConfigurationError
from safeexec.harness.suite import Task
from safeexec.model.values import Action, Decision, Enforcement, Finding
from safeexec.policy.loader import policy_digest
from safeexec.policy.schema import CapabilityConfig, Policy
from safeexec.session.session import Approver

__all__ = [
    "ToolApprover",
    "derive_policy",
    "select_tools",
    "task_approver",
    "task_scope",
    "task_step_approver",
]

ToolApprover = Callable[[ApprovalRequest], bool]
_TOOL_APPROVAL = "tool-requires-approval"


def _has_effects(spec: ToolSpec) -> bool:
    return any(e is not Effect.READ for e in spec.effects)


def derive_policy(base: Policy, task: Task, specs: Sequence[ToolSpec]) -> Policy:
    """``base`` plus a grantable entry for every tool in ``specs`` that ``base`` does not list."""
    listed = {c.tool for c in base.capabilities}
    added = tuple(
        CapabilityConfig(tool=s.name, requires_approval=_has_effects(s))
        for s in specs
        if s.name not in listed
    )
    derived = dataclasses.replace(
        base,
        info=dataclasses.replace(base.info, id=f"{base.info.id}+task:{task.id}"),
        capabilities=(*base.capabilities, *added),
    )
    return dataclasses.replace(derived, digest=policy_digest(derived))


def task_scope(task: Task, spec: ToolSpec) -> frozenset[str] | None:
    """The scope to grant ``spec`` with for ``task`` (``None``: unscoped)."""
    if spec.scope_parameter is None:
        return None
    effects = [e for e in task.authorized_effects if e.tool == spec.name]
    if not effects:
        return frozenset() if _has_effects(spec) else None
    values: set[str] = set()
    for effect in effects:
        pinned = effect.allowed_values(spec.scope_parameter)
        if pinned is None:
            return None  # one authorized effect leaves the parameter open
        values.update(pinned)
    return frozenset(values)


def task_approver(task: Task, user: ToolApprover | None) -> ToolApprover:
    """Approve calls matching an authorized effect; ask ``user`` about the rest (deny if none)."""

    def approve(request: ApprovalRequest) -> bool:
        arguments = request.arguments
        if isinstance(arguments, Mapping) and any(
            e.matches(request.tool, arguments) for e in task.authorized_effects
        ):
            return True
        if user is None:
            return False
        return user(request) is True

    return approve


def task_step_approver(
    task: Task, user: Approver | None, *, approval_tools: frozenset[str] = frozenset()
) -> Approver:
    """Approve a step whose only approval findings are calls of tools the task authorizes: a
    code step's per-call findings, or a DSL plan (SX710) whose planned tools needing approval
    (``approval_tools``) the task all authorizes. Each call is still checked against the
    authorized effects when it runs. Ask ``user`` about any other ``needs_approval`` step (deny
    if none)."""
    authorized = {e.tool for e in task.authorized_effects}

    def planned(decision: Decision) -> set[str]:
        tools = (plan_of(decision.findings) or {}).get("tools")
        listed = tools if isinstance(tools, list) else []
        return {str(t.get("name")) for t in listed if isinstance(t, dict)}

    def covered(finding: Finding, decision: Decision) -> bool:
        if finding.name == _TOOL_APPROVAL:
            return finding.evidence in authorized
        if finding.rule == NEEDS_APPROVAL.id:
            return planned(decision) & approval_tools <= authorized
        return False

    def approve(decision: Decision, action: Action) -> bool:
        asks = [f for f in decision.findings if f.enforcement is Enforcement.APPROVE]
        if asks and all(covered(f, decision) for f in asks):
            return True
        return user is not None and user(decision, action) is True

    # Its yes to a plan rests on each call being checked against the authorized effects, so an
    # approved plan grants no call unasked (safeexec.dsl.approval).
    approve.grants_plan = False  # type: ignore[attr-defined]
    return approve


def select_tools(task: Task, available: Sequence[ToolSpec]) -> list[ToolSpec]:
    """The environment's tools the task lists, in the task's order; a missing one is an error."""
    by_name = {s.name: s for s in available}
    missing = [n for n in task.tools if n not in by_name]
    if missing:
        raise ConfigurationError(
            f"task id={task.id!r} lists tools {missing} that make_environment() does not "
            f"provide; it provides {sorted(by_name)}"
        )
    return [by_name[n] for n in task.tools]
