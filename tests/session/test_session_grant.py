"""``Session.grant``: the policy's ``[capabilities.<tool>]`` decides what code may call."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeexec.backends.restricted import RestrictedBackend
from safeexec.capabilities.gateway import ApprovalRequest, Url, tool
from safeexec.errors import CapabilityError, ConfigurationError
from safeexec.model.values import ExecStatus
from safeexec.session.session import Session

sent: list[str] = []


@tool(effects=["network"])
def send_email(to: str, body: str) -> str:
    sent.append(to)
    return "sent"


@tool(effects=["network"])
def fetch_url(url: Url) -> str:
    return "page"


@tool
def run_shell(command: str) -> str:
    return command


@tool
def unlisted(x: int) -> int:
    return x


def session(tmp_path: Path, **kwargs: object) -> Session:
    backends = {"restricted": RestrictedBackend(in_process=True)}
    return Session(
        policy="default", mode="restricted", state_dir=tmp_path, backends=backends, **kwargs
    )  # type: ignore[arg-type]


def test_tools_the_policy_does_not_list_or_forbids_cannot_be_granted(tmp_path: Path) -> None:
    with session(tmp_path) as s:
        with pytest.raises(CapabilityError, match="no \\[capabilities\\] entry"):
            s.grant(unlisted)
        with pytest.raises(CapabilityError, match="not grantable"):
            s.grant(run_shell)


def test_policy_max_calls_caps_the_grant(tmp_path: Path) -> None:
    with session(tmp_path) as s:
        assert s.grant(send_email, max_calls=50).max_calls == 5
        assert s.grant(send_email, max_calls=2).max_calls == 2


def test_policy_scopes_bound_the_grant(tmp_path: Path) -> None:
    with session(tmp_path) as s:
        assert s.grant(fetch_url).scope == frozenset({"https"})
        with pytest.raises(CapabilityError, match="exceeds the policy"):
            s.grant(fetch_url, scope=["http"])


def test_policy_approval_cannot_be_switched_off(tmp_path: Path) -> None:
    sent.clear()
    # The step itself is approved (SX603 asks); the tool call still needs the tool approver.
    with session(tmp_path, approver=lambda decision, action: True) as s:
        assert s.grant(send_email, requires_approval=False).requires_approval
        outcome = s.run("```python\nsend_email('a@example.org', 'hi')\n```")
    assert outcome.result is not None and outcome.result.status is ExecStatus.ERROR
    assert [e.kind for e in outcome.event.side_effects] == ["tool_refused"]
    assert sent == []


def test_a_tool_approver_lets_approved_calls_through(tmp_path: Path) -> None:
    sent.clear()
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return request.arguments == {"to": "ok@example.org", "body": "hi"}

    code = (
        "```python\nsend_email('ok@example.org', 'hi')\n"
        "try:\n    send_email('evil@example.org', 'hi')\n"
        "except ToolError:\n    print('refused')\n```"
    )
    with session(tmp_path, tool_approver=approve, approver=lambda d, a: True) as s:
        s.grant(send_email)
        outcome = s.run(code)
    assert sent == ["ok@example.org"]
    assert [e.kind for e in outcome.event.side_effects] == ["tool_called", "tool_refused"]
    assert len(asked) == 2


def test_granting_after_the_sandbox_started_is_an_error(tmp_path: Path) -> None:
    with session(tmp_path) as s:
        s.run("```python\nx = 1\n```")
        with pytest.raises(ConfigurationError, match="before the first run"):
            s.grant(send_email)


def test_capabilities_work_in_native_mode_too(tmp_path: Path) -> None:
    sent.clear()
    with Session(
        policy="default",
        mode="native",
        state_dir=tmp_path,
        approver=lambda d, a: True,
        tool_approver=lambda r: True,
    ) as s:
        s.grant(send_email, max_calls=1)
        outcome = s.run("```python\nprint(send_email('n@example.org', 'hi'))\n```")
    assert outcome.result is not None and outcome.result.status is ExecStatus.OK, outcome
    assert sent == ["n@example.org"]
    assert [e.kind for e in outcome.event.side_effects] == ["tool_called"]
