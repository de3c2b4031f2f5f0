"""Errors as values: what the code raised comes back as ``result.error`` (name, value, trimmed
traceback) in every Python mode, and is audited and shown by ``safeexec log show``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from safeexec.audit.log import read_log
from safeexec.audit.timeline import show_log
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import Policy
from safeexec.session.session import Session

RAISES = "```python\ndef f(x):\n    return 1 / x\nf(0)\n```\n"
MODES = ["native", "restricted", "restricted-inprocess"]


def _policy() -> Policy:
    base = load_policy("default")
    allowed = (*base.backends.allowed, "restricted-inprocess")
    return dataclasses.replace(base, backends=dataclasses.replace(base.backends, allowed=allowed))


@pytest.mark.parametrize("mode", MODES)
def test_a_raised_exception_is_a_value_with_name_message_and_trimmed_traceback(
    tmp_path: Path, mode: str
) -> None:
    with Session(policy=_policy(), mode=mode, state_dir=tmp_path / "state") as session:
        outcome = session.run(RAISES)
        fine = session.run("```python\nprint('ok')\n```\n")
    result = outcome.result
    assert result is not None and result.status.value == "error"
    error = result.error
    assert error is not None
    assert (error.name, error.value) == ("ZeroDivisionError", "division by zero")
    lines = error.traceback.strip().split("\n")
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[-1] == "ZeroDivisionError: division by zero"
    frames = [line for line in lines if line.startswith("  File ")]
    # The model's two frames only: no frame of safeexec's own worker or runtime.
    assert [frame.split(",")[0] for frame in frames] == ['  File "<cell-1>"'] * 2
    assert "safeexec" not in error.traceback
    assert fine.result is not None and fine.result.error is None


def test_the_error_is_in_the_audit_event_and_log_show(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with Session(policy="default", mode="native", state_dir=state) as session:
        outcome = session.run(RAISES)
        session.run("```python\nprint('ok')\n```\n")
    assert outcome.result is not None
    events = read_log(state)
    assert events[0].error == outcome.result.error
    assert events[1].error is None
    shown = show_log(state)
    assert "  error ZeroDivisionError: division by zero" in shown
    assert shown.count("  error ") == 1


def test_an_exception_that_does_not_print_still_has_a_name(tmp_path: Path) -> None:
    unprintable = (
        "```python\nclass Odd(Exception):\n    def __str__(self):\n        raise RuntimeError\n"
        "raise Odd()\n```\n"
    )
    with Session(policy="default", mode="native", state_dir=tmp_path / "state") as session:
        outcome = session.run(unprintable)
    assert outcome.result is not None and outcome.result.error is not None
    assert outcome.result.error.name == "Odd"
    assert outcome.result.error.value == "<unprintable>"
