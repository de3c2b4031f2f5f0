"""The MCP server offers no mode that runs code in its own process unless its operator allows it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from typer.testing import CliRunner

from safeexec.cli.app import app
from safeexec.errors import InProcessRefused
from safeexec.faces.mcp_server import ClientSession, McpConfig, build_server
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import Policy

IN_PROCESS = "restricted-inprocess"


def _policy(*, default: str = "restricted") -> Policy:
    base = load_policy("default")
    backends = dataclasses.replace(
        base.backends, allowed=("restricted", IN_PROCESS), default=default
    )
    return dataclasses.replace(base, backends=backends)


async def _call(config: McpConfig, arguments: dict[str, object]) -> tuple[list[str], str, bool]:
    """The run_code tool's mode enum, then one run_code call's text and error flag."""
    client = ClientSession(config)
    try:
        async with Client(build_server(config, lambda ctx: client)) as mcp:
            tools = {t.name: t for t in (await mcp.list_tools()).tools}
            modes = tools["run_code"].input_schema["properties"]["mode"]["enum"]
            result = await mcp.call_tool("run_code", arguments)
    finally:
        client.close()
    text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
    return modes, text, result.is_error


def test_an_in_process_mode_is_not_offered_or_run_unless_allowed(tmp_path: Path) -> None:
    config = McpConfig(policy=_policy(), state_dir=tmp_path / "state")
    modes, text, is_error = anyio.run(_call, config, {"code": "print(6 * 7)", "mode": IN_PROCESS})
    assert modes == ["restricted"]
    assert is_error and "must be one of ['restricted']" in text
    with pytest.raises(InProcessRefused, match="not a security boundary"):
        ClientSession(config).get(IN_PROCESS)


def test_a_default_in_process_mode_is_refused_when_the_server_is_configured() -> None:
    with pytest.raises(InProcessRefused, match="--allow-in-process"):
        McpConfig(policy=_policy(default=IN_PROCESS))
    with pytest.raises(InProcessRefused):
        McpConfig(policy=_policy(), mode=IN_PROCESS)


def test_the_cli_refuses_an_in_process_default_without_the_flag(tmp_path: Path) -> None:
    pack = tmp_path / "inprocess.toml"
    pack.write_text(
        f'extends = "default"\n\n[policy]\nid = "inprocess"\n\n'
        f'[backends]\nallowed = ["{IN_PROCESS}"]\ndefault = "{IN_PROCESS}"\n',
        encoding="utf-8",
    )
    outcome = CliRunner().invoke(app, ["mcp", "--policy", str(pack)])
    assert outcome.exit_code == 2
    assert "not a security boundary" in outcome.output


def test_an_allowed_in_process_mode_is_offered_and_runs(tmp_path: Path) -> None:
    config = McpConfig(policy=_policy(), state_dir=tmp_path / "state", allow_in_process=True)
    modes, text, is_error = anyio.run(_call, config, {"code": "print(6 * 7)", "mode": IN_PROCESS})
    assert modes == ["restricted", IN_PROCESS]
    assert not is_error and "42" in text
