"""Tool dispatch, the LangChain tool and the smolagents executor refuse a session whose mode runs
the code in the host process unless their caller passes ``allow_in_process=True``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.errors import InProcessRefused
from safeexec.faces.langchain_tool import SafeexecTool
from safeexec.faces.smolagents_executor import SafeexecExecutor
from safeexec.faces.tooldefs import dispatch, dispatch_many
from safeexec.policy.loader import load_policy
from safeexec.session.session import Session

IN_PROCESS = "restricted-inprocess"
CALL = {
    "type": "function",
    "id": "call-1",
    "function": {"name": "run_code", "arguments": json.dumps({"code": "print(6 * 7)"})},
}


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    """A session in the in-process mode (its policy allows it)."""
    base = load_policy("default")
    backends = dataclasses.replace(base.backends, allowed=("restricted", IN_PROCESS))
    policy = dataclasses.replace(base, backends=backends)
    with Session(policy=policy, mode=IN_PROCESS, state_dir=tmp_path / "state") as s:
        yield s


def test_dispatch_refuses_an_in_process_session_unless_allowed(session: Session) -> None:
    with pytest.raises(InProcessRefused, match="not a security boundary"):
        dispatch(session, CALL)
    with pytest.raises(InProcessRefused):
        dispatch_many(session, [CALL])
    assert session.statistics().steps == 0
    [message] = dispatch(session, CALL, allow_in_process=True)
    assert message["role"] == "tool" and "42" in message["content"]


def test_the_langchain_tool_refuses_an_in_process_session_unless_allowed(
    session: Session,
) -> None:
    with pytest.raises(InProcessRefused):
        SafeexecTool(session=session)
    session.mode = "restricted"
    made = SafeexecTool(session=session)
    session.mode = IN_PROCESS  # the mode changed after the tool was made: refused on the run
    with pytest.raises(InProcessRefused):
        made.invoke({"code": "print(6 * 7)"})
    assert session.statistics().steps == 0
    allowed = SafeexecTool(session=session, allow_in_process=True)
    assert "42" in str(allowed.invoke({"code": "print(6 * 7)"}))


def test_the_smolagents_executor_refuses_an_in_process_session_unless_allowed(
    session: Session,
) -> None:
    with pytest.raises(InProcessRefused):
        SafeexecExecutor(session)
    session.mode = "restricted"
    made = SafeexecExecutor(session)
    session.mode = IN_PROCESS
    with pytest.raises(InProcessRefused):
        made("print(6 * 7)")
    assert session.statistics().steps == 0
    output = SafeexecExecutor(session, allow_in_process=True)("print(6 * 7)")
    assert "42" in output.logs
