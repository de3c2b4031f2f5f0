"""The step budget fits notebook work and never reports a negative count."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.model.values import Budget, Usage
from safeexec.policy import Policy, load_policy
from safeexec.policy.schema import BackendsConfig
from safeexec.session.session import Session


def _fake_default(steps: int | None = None) -> Policy:
    policy = load_policy("default")
    policy = dataclasses.replace(policy, backends=BackendsConfig(allowed=("fake",), default="fake"))
    if steps is not None:
        policy = dataclasses.replace(policy, budget=dataclasses.replace(policy.budget, steps=steps))
    return policy


def _backend() -> FakeBackend:
    return FakeBackend(lambda request: FakeReply(stdout="ok\n", usage=Usage(cpu_seconds=0.01)))


def test_a_hundred_step_notebook_loop_fits_the_default_budget(tmp_path: Path) -> None:
    with Session(
        policy=_fake_default(), state_dir=tmp_path / "state", backends={"fake": _backend()}
    ) as session:
        verdicts = {session.run(f"```python\nx = {i}\n```").decision.verdict for i in range(100)}
        assert verdicts == {"allow"}
        assert session.budget.steps_left == load_policy("default").budget.steps - 100


def test_an_exhausted_budget_stays_at_zero_and_says_none_left(tmp_path: Path) -> None:
    with Session(
        policy=_fake_default(steps=2), state_dir=tmp_path / "state", backends={"fake": _backend()}
    ) as session:
        outcomes = [session.run("```python\nprint(1)\n```") for _ in range(5)]
        assert [o.decision.verdict for o in outcomes] == ["allow"] * 2 + ["deny"] * 3
        assert session.budget.steps_left == 0
        (finding,) = [f for f in outcomes[-1].decision.findings if f.rule == "SX510"]
        assert "none left" in finding.message and "-" not in finding.message.split("(")[1]


def test_charge_stops_steps_and_cpu_at_zero_but_shows_overspent_tool_calls() -> None:
    budget = Budget(steps_left=1, cpu_seconds_left=0.5, tool_calls_left=1)
    spent = budget.charge(steps=3, cpu_seconds=2.0, tool_calls=2)
    assert (spent.steps_left, spent.cpu_seconds_left, spent.tool_calls_left) == (0, 0.0, -1)
    assert spent.exhausted == ("steps", "cpu_seconds", "tool_calls")
