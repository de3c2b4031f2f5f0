"""The agent harness and log replay refuse a mode that runs the code in the host process unless
their caller allows it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from safeexec.errors import InProcessRefused
from safeexec.harness import RunOptions, load_suite, run_suite
from safeexec.harness.replay import replay_log
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import Policy
from safeexec.session.session import Session

IN_PROCESS = "restricted-inprocess"
SUITE = Path(__file__).resolve().parent / "fixture_suite"


def _policy() -> Policy:
    base = load_policy("default")
    backends = dataclasses.replace(base.backends, allowed=("restricted", IN_PROCESS))
    return dataclasses.replace(base, backends=backends)


def test_the_harness_refuses_an_in_process_mode_unless_allowed(tmp_path: Path) -> None:
    suite = load_suite(SUITE)
    options = RunOptions(mode=IN_PROCESS, policy=_policy(), state_dir=tmp_path / "refused")
    with pytest.raises(InProcessRefused, match="not a security boundary"):
        run_suite(suite, "oracle", options, task_ids=["calc-sum"])
    assert not (tmp_path / "refused").exists()  # refused before any session was opened
    allowed = dataclasses.replace(options, state_dir=tmp_path / "allowed", allow_in_process=True)
    [result] = run_suite(suite, "oracle", allowed, task_ids=["calc-sum"]).results
    assert result.success and result.mode == IN_PROCESS


def test_replay_refuses_a_log_of_in_process_steps_unless_allowed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with Session(policy=_policy(), mode=IN_PROCESS, state_dir=state) as session:
        session.run("```python\nprint(6 * 7)\n```")
    with pytest.raises(InProcessRefused, match="allow_in_process=True"):
        replay_log(state, policy=_policy())
    report = replay_log(state, policy=_policy(), allow_in_process=True)
    assert report.ok and len(report.steps) == 1
