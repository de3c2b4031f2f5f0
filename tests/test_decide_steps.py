"""``decide`` is the only author of a Decision: approval, narrowing, fail-closed denials and tool
-call steps are made there, and no other module builds or rewrites one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import safeexec
from safeexec.decide import (
    TOOL_BACKEND,
    approved_calls,
    decide,
    decide_tool_call,
    fail_closed,
    settle,
)
from safeexec.errors import BackendUnavailable
from safeexec.model.values import Budget, Enforcement, Finding, Limits, Severity, Verdict
from safeexec.policy.engine_rules import BACKEND_UNAVAILABLE, BUDGET_EXHAUSTED
from safeexec.policy.schema import BackendsConfig, Policy, PolicyInfo

POLICY = Policy(
    info=PolicyInfo(id="team"),
    limits=Limits(cpu_seconds=5.0, wall_seconds=10.0),
    backends=BackendsConfig(allowed=("native",), default="native"),
    digest="f" * 64,
)
PLENTY = Budget(steps_left=10, cpu_seconds_left=100.0, tool_calls_left=10)
APPROVE = Finding(
    rule="SX999",
    name="ask-first",
    message="ask",
    severity=Severity.HIGH,
    enforcement=Enforcement.APPROVE,
)


@pytest.mark.parametrize(
    ("approved", "verdict"), [(True, "needs_approval"), (False, "deny"), (None, "deny")]
)
def test_an_approved_step_keeps_its_verdict_and_a_refused_one_is_denied(
    approved: bool | None, verdict: str
) -> None:
    gated = decide(findings=(APPROVE,), estimate=None, policy=POLICY, budget=PLENTY)
    assert settle(gated, approved=approved).verdict.value == verdict


def test_an_allowed_step_is_not_changed_by_an_answer() -> None:
    gated = decide(findings=(), estimate=None, policy=POLICY, budget=PLENTY)
    assert settle(gated, approved=False) is gated
    assert settle(gated) is gated


def test_a_step_s_limits_narrow_and_never_widen() -> None:
    gated = decide(findings=(), estimate=None, policy=POLICY, budget=PLENTY)
    narrowed = settle(gated, wall_seconds=2.0, cpu_seconds=1.0)
    assert (narrowed.limits.wall_seconds, narrowed.limits.cpu_seconds) == (2.0, 1.0)
    wider = settle(gated, wall_seconds=99.0, cpu_seconds=99.0)
    assert (wider.limits.wall_seconds, wider.limits.cpu_seconds) == (10.0, 5.0)


def test_failing_closed_denies_with_an_ordered_finding_naming_the_backend() -> None:
    gated = decide(findings=(APPROVE,), estimate=None, policy=POLICY, budget=PLENTY)
    failed = fail_closed(gated, BACKEND_UNAVAILABLE, BackendUnavailable("no cgroup"))
    assert failed.verdict is Verdict.DENY
    added = [f for f in failed.findings if f.rule == BACKEND_UNAVAILABLE.id]
    assert len(added) == 1 and "backend='native'" in added[0].message
    assert added[0].evidence == "BackendUnavailable"
    assert failed.findings[0] is added[0]  # engine findings without a position come first


def test_a_tool_call_step_is_decided_on_the_budget_and_names_the_tool_backend() -> None:
    spent = Budget(steps_left=0, cpu_seconds_left=1.0, tool_calls_left=1)
    decision = decide_tool_call(policy=POLICY, budget=spent, backend=None)
    assert decision.backend == TOOL_BACKEND and decision.verdict is Verdict.DENY
    assert [f.rule for f in decision.findings] == [BUDGET_EXHAUSTED.id]


def test_only_an_approved_step_has_approved_calls() -> None:
    gated = decide(findings=(APPROVE,), estimate=None, policy=POLICY, budget=PLENTY)
    assert approved_calls(settle(gated, approved=False), approver=None) is None
    # Approved, but no DSL plan rides on its findings: nothing is granted unasked.
    assert approved_calls(settle(gated, approved=True), approver=None) is None


def _authors(path: Path) -> list[str]:
    """Where ``path`` builds a Decision or replaces fields of one (a name ending in decision,
    or a ``decide(...)`` call)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        first = node.args[0] if node.args else None
        rewrites = (
            name == "replace"
            and first is not None
            and (
                ast.unparse(first).lower().endswith("decision")
                or ast.unparse(first).startswith("decide(")
            )
        )
        if name == "Decision" or rewrites:
            found.append(f"{path}:{node.lineno}")
    return found


def test_no_module_but_decide_builds_or_rewrites_a_decision() -> None:
    root = Path(safeexec.__file__).parent
    skip = {root / "decide.py", root / "model" / "values.py"}  # the author, the definition
    authors = [a for p in sorted(root.rglob("*.py")) if p not in skip for a in _authors(p)]
    assert authors == []
