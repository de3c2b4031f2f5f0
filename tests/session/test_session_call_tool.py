"""Session.call_tool: one tool call as one step, through the same gateway and audit as code."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from safeexec.capabilities.gateway import tool
from safeexec.model.values import ExecStatus, ToolCalled, ToolRefused, Verdict
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import CapabilityConfig
from safeexec.session.session import TOOL_BACKEND, Session


@tool(effects=["read"])
def double(n: int) -> int:
    return 2 * n


def _session(tmp_path: Path, steps: int = 50) -> Session:
    base = load_policy("default")
    policy = dataclasses.replace(
        base,
        capabilities=(*base.capabilities, CapabilityConfig(tool="double", max_calls=2)),
        budget=dataclasses.replace(base.budget, steps=steps),
    )
    session = Session(policy=policy, state_dir=tmp_path, mode="restricted")
    session.grant(double)
    return session


def test_a_call_runs_is_charged_and_audited_like_a_step(tmp_path: Path) -> None:
    with _session(tmp_path) as session:
        outcome = session.call_tool("double", {"n": 21})
        assert outcome.decision.backend == TOOL_BACKEND
        assert outcome.result is not None and outcome.result.status is ExecStatus.OK
        assert "42" in outcome.observation.text
        assert isinstance(outcome.event.side_effects[0], ToolCalled)
        assert session.budget.tool_calls_left == session.policy.budget.tool_calls - 1
        assert session.audit.statistics().events_written == 1


def test_refusals_are_results_not_exceptions(tmp_path: Path) -> None:
    with _session(tmp_path) as session:
        wrong_type = session.call_tool("double", {"n": "21"})
        unknown = session.call_tool("triple", {"n": 1})
        session.call_tool("double", {"n": 1})
        session.call_tool("double", {"n": 2})
        over_limit = session.call_tool("double", {"n": 3})
        for outcome in (wrong_type, unknown, over_limit):
            assert outcome.result is not None and outcome.result.status is ExecStatus.ERROR
            assert isinstance(outcome.event.side_effects[0], ToolRefused)
        assert "call limit" in over_limit.observation.text
        assert session.audit.statistics().events_written == 5


def test_a_spent_step_budget_denies_the_call(tmp_path: Path) -> None:
    with _session(tmp_path, steps=1) as session:
        session.call_tool("double", {"n": 1})
        outcome = session.call_tool("double", {"n": 2})
        assert outcome.decision.verdict is Verdict.DENY and outcome.result is None
        assert any(f.rule == "SX510" for f in outcome.decision.findings)
