"""The static gate: deny beats approve beats allow; budget and backend checks; stable ordering."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeexec.decide import decide, order_findings
from safeexec.model.values import (
    Bound,
    Budget,
    Enforcement,
    Estimate,
    Finding,
    Limits,
    Severity,
    Span,
    Verdict,
)
from safeexec.policy.schema import BackendsConfig, Policy, PolicyInfo

POLICY = Policy(
    info=PolicyInfo(id="team"),
    limits=Limits(cpu_seconds=5.0, wall_seconds=10.0),
    backends=BackendsConfig(allowed=("native", "restricted"), default="native"),
    digest="f" * 64,
)
PLENTY = Budget(steps_left=10, cpu_seconds_left=100.0, tool_calls_left=10)


def _finding(rule: str, enforcement: Enforcement, line: int | None = 1, column: int = 1) -> Finding:
    span = None if line is None else Span(
        start_line=line, start_column=column, end_line=line, end_column=column + 1
    )  # fmt: skip
    return Finding(
        rule=rule,
        name="some-rule",
        message=f"{rule} fired",
        severity=Severity.MEDIUM,
        enforcement=enforcement,
        span=span,
    )


def _estimate(tool_calls: Bound) -> Estimate:
    unknown = Bound.unknown("dynamic")
    return Estimate(cpu=unknown, memory=unknown, output=unknown, tool_calls=tool_calls)


def test_no_findings_within_budget_is_allowed_on_the_default_backend() -> None:
    decision = decide(findings=(), estimate=None, policy=POLICY, budget=PLENTY)
    assert decision.verdict is Verdict.ALLOW
    assert decision.backend == "native"
    assert decision.limits == POLICY.limits
    assert (decision.policy_id, decision.policy_digest) == ("team", "f" * 64)
    assert decision.findings == ()


@pytest.mark.parametrize(
    ("enforcements", "verdict"),
    [
        ((Enforcement.WARN, Enforcement.AUDIT), Verdict.ALLOW),
        ((Enforcement.APPROVE, Enforcement.WARN), Verdict.NEEDS_APPROVAL),
        ((Enforcement.APPROVE, Enforcement.DENY), Verdict.DENY),
        ((Enforcement.DENY,), Verdict.DENY),
    ],
)
def test_deny_beats_approve_beats_allow(
    enforcements: tuple[Enforcement, ...], verdict: Verdict
) -> None:
    findings = tuple(_finding(f"SX{300 + i}", e) for i, e in enumerate(enforcements))
    decision = decide(findings=findings, estimate=None, policy=POLICY, budget=PLENTY)
    assert decision.verdict is verdict
    assert set(decision.findings) == set(findings)


@pytest.mark.parametrize(
    ("budget", "dimensions"),
    [
        (Budget(steps_left=0, cpu_seconds_left=1.0, tool_calls_left=1), ["steps"]),
        (Budget(steps_left=3, cpu_seconds_left=-0.2, tool_calls_left=1), ["cpu_seconds"]),
        (Budget(steps_left=3, cpu_seconds_left=1.0, tool_calls_left=-1), ["tool_calls"]),
        (
            Budget(steps_left=0, cpu_seconds_left=0.0, tool_calls_left=-2),
            ["steps", "cpu_seconds", "tool_calls"],
        ),
    ],
)
def test_an_exhausted_budget_denies_naming_each_dimension(
    budget: Budget, dimensions: list[str]
) -> None:
    decision = decide(findings=(), estimate=None, policy=POLICY, budget=budget)
    assert decision.verdict is Verdict.DENY
    sx510 = [f for f in decision.findings if f.rule == "SX510"]
    assert sorted(f.evidence for f in sx510) == sorted(dimensions)
    assert all(f.name == "budget-exhausted" and f.enforcement is Enforcement.DENY for f in sx510)
    assert all(f.evidence in f.message for f in sx510)


def test_an_estimate_of_more_tool_calls_than_are_left_is_denied() -> None:
    budget = Budget(steps_left=3, cpu_seconds_left=1.0, tool_calls_left=2)
    over = decide(findings=(), estimate=_estimate(Bound.known(3)), policy=POLICY, budget=budget)
    assert over.verdict is Verdict.DENY
    assert [(f.rule, f.evidence) for f in over.findings] == [("SX510", "tool_calls")]
    assert "3 tool calls" in over.findings[0].message
    for bound in (Bound.known(2), Bound.unknown("loop"), Bound.unbounded("while True")):
        within = decide(findings=(), estimate=_estimate(bound), policy=POLICY, budget=budget)
        assert within.verdict is Verdict.ALLOW, bound
        assert within.estimate == _estimate(bound)


def test_a_backend_outside_the_allowlist_is_denied() -> None:
    decision = decide(findings=(), estimate=None, policy=POLICY, budget=PLENTY, backend="fake")
    assert decision.verdict is Verdict.DENY
    (finding,) = decision.findings
    assert (finding.rule, finding.name, finding.evidence) == (
        "SX520",
        "backend-not-allowed",
        "fake",
    )
    assert "native, restricted" in finding.message
    assert decision.backend == "fake"


def test_a_requested_allowed_backend_is_chosen() -> None:
    decision = decide(
        findings=(), estimate=None, policy=POLICY, budget=PLENTY, backend="restricted"
    )
    assert (decision.verdict, decision.backend) == (Verdict.ALLOW, "restricted")


def test_a_policy_whose_default_backend_is_not_allowed_denies() -> None:
    policy = Policy(backends=BackendsConfig(allowed=("restricted",), default="native"))
    decision = decide(findings=(), estimate=None, policy=policy, budget=PLENTY)
    assert [f.rule for f in decision.findings] == ["SX520"]


def test_cpu_limit_is_clipped_to_the_budget_left() -> None:
    budget = Budget(steps_left=3, cpu_seconds_left=1.5, tool_calls_left=0)
    decision = decide(findings=(), estimate=None, policy=POLICY, budget=budget)
    assert decision.limits.cpu_seconds == 1.5
    assert decision.limits.wall_seconds == POLICY.limits.wall_seconds
    assert decision.verdict is Verdict.ALLOW


def test_clipped_cpu_limit_never_goes_negative() -> None:
    budget = Budget(steps_left=3, cpu_seconds_left=-4.0, tool_calls_left=0)
    decision = decide(findings=(), estimate=None, policy=POLICY, budget=budget)
    assert decision.limits.cpu_seconds == 0.0
    assert decision.verdict is Verdict.DENY


def test_findings_are_ordered_by_position_with_engine_findings_first() -> None:
    later = _finding("SX201", Enforcement.DENY, line=3, column=1)
    earlier = _finding("SX301", Enforcement.WARN, line=1, column=5)
    same_place = _finding("SX200", Enforcement.DENY, line=1, column=5)
    decision = decide(
        findings=(later, earlier, same_place),
        estimate=None,
        policy=POLICY,
        budget=Budget(steps_left=0, cpu_seconds_left=1.0, tool_calls_left=0),
        backend="fake",
    )
    assert [f.rule for f in decision.findings] == ["SX510", "SX520", "SX200", "SX301", "SX201"]


def test_duplicate_findings_are_reported_once() -> None:
    finding = _finding("SX201", Enforcement.DENY)
    assert order_findings((finding, finding)) == (finding,)


_enforcements = st.sampled_from(list(Enforcement))
_findings = st.lists(
    st.builds(
        _finding,
        rule=st.sampled_from(["SX201", "SX301", "SX401", "TEAM001"]),
        enforcement=_enforcements,
        line=st.none() | st.integers(min_value=1, max_value=5),
        column=st.integers(min_value=1, max_value=5),
    ),
    max_size=8,
)


@settings(max_examples=80, deadline=None)
@given(findings=_findings, seed=st.integers())
def test_decision_does_not_depend_on_the_order_findings_arrive_in(
    findings: list[Finding], seed: int
) -> None:
    shuffled = list(findings)
    random.Random(seed).shuffle(shuffled)
    first = decide(findings=tuple(findings), estimate=None, policy=POLICY, budget=PLENTY)
    second = decide(findings=tuple(shuffled), estimate=None, policy=POLICY, budget=PLENTY)
    assert first == second
    denies = any(f.enforcement is Enforcement.DENY for f in findings)
    approves = any(f.enforcement is Enforcement.APPROVE for f in findings)
    expected = Verdict.DENY if denies else Verdict.NEEDS_APPROVAL if approves else Verdict.ALLOW
    assert first.verdict is expected


def test_public_exports_are_pinned() -> None:
    import safeexec.decide as module

    assert module.__all__ == [
        "TOOL_BACKEND",
        "approved_calls",
        "chosen_backend",
        "decide",
        "decide_tool_call",
        "fail_closed",
        "order_findings",
        "settle",
    ]
