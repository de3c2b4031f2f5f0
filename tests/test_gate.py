"""gate.check: the static gate as one call that never raises."""

from __future__ import annotations

import pytest

import safeexec.gate as gate_module
from safeexec.gate import check, fresh_budget
from safeexec.model.values import Action, Budget, Verdict
from safeexec.policy.loader import load_policy

DEFAULT = load_policy("default")


@pytest.fixture(autouse=True)
def _empty_gate_cache() -> None:
    # Tests here replace the gate's steps (scan, estimate): a cached decision would bypass them.
    gate_module._CHECKED.clear()


def test_allowed_code_gets_the_default_backend_and_policy_identity() -> None:
    result = check("print(1)", DEFAULT)
    assert result.decision.verdict is Verdict.ALLOW
    assert result.decision.backend == "native"
    assert result.decision.policy_digest == DEFAULT.digest
    assert result.parsed is not None and result.estimate is not None


def test_parse_failures_are_denied_with_their_finding() -> None:
    result = check(Action.create("def (:"), DEFAULT)
    assert result.parsed is None and result.decision.verdict is Verdict.DENY
    assert result.findings[0].rule.startswith("SX0")


def test_granted_tools_feed_the_estimate_and_the_budget() -> None:
    code = "for i in range(10):\n    fetch_url(url='x')"
    assert check(code, DEFAULT).estimate.tool_calls.value == 10  # type: ignore[union-attr]
    tight = Budget(steps_left=5, cpu_seconds_left=10.0, tool_calls_left=3)
    result = check(code, DEFAULT, budget=tight)
    assert "SX510" in {f.rule for f in result.findings}


def test_fresh_budget_comes_from_the_policy() -> None:
    budget = fresh_budget(DEFAULT)
    assert budget.steps_left == DEFAULT.budget.steps
    assert budget.tool_calls_left == DEFAULT.budget.tool_calls


def test_an_estimator_crash_is_an_sx900_deny(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*args: object, **kwargs: object) -> object:
        raise MemoryError

    monkeypatch.setattr(gate_module, "estimate", explode)
    result = check("x = 1", DEFAULT)
    assert result.decision.verdict is Verdict.DENY
    assert [f.rule for f in result.findings] == ["SX900"]
    assert "MemoryError" in result.findings[0].message
