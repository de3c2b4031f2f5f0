"""Calling a tool the policy did not grant, from the code or by granting it anyway."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from safeexec.capabilities.gateway import CapabilitySet, tool

if TYPE_CHECKING:
    from restricted_support import BoxFactory

ran: list[str] = []


@tool
def launch(target: str) -> str:
    ran.append(target)
    return "launched"


@tool
def run_shell(command: str) -> str:
    ran.append(command)
    return "ran"


def test_an_ungranted_tool_is_not_even_a_name(restricted_box: BoxFactory) -> None:
    box = restricted_box(tools=CapabilitySet())
    for code in ("launch('moon')", "globals()['launch']('moon')", "getattr(print, 'launch')"):
        outcome = box.run(code)
        assert outcome.status.value == "error", outcome.text
    assert ran == []


def test_the_gateway_refuses_names_it_did_not_grant() -> None:
    reply = CapabilitySet().invoke("launch", {"args": ["moon"], "kwargs": {}})
    assert not reply.ok and reply.event is not None and reply.event.kind == "tool_refused"
    assert ran == []


def test_a_policy_that_does_not_grant_a_tool_refuses_the_grant(tmp_path: Path) -> None:
    from safeexec.errors import CapabilityError
    from safeexec.session.session import Session

    with (
        Session(policy="default", state_dir=tmp_path) as session,
        pytest.raises(CapabilityError, match="not grantable"),
    ):
        session.grant(run_shell)
