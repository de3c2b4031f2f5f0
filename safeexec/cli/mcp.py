"""``safeexec mcp``: serve safeexec as an MCP server (stdio, or streamable HTTP on loopback).

Needs the ``mcp`` extra (``pip install 'safeexec[mcp]'``). Policy and limits come from the flags
and hold for every client session; each client gets its own sandbox, closed when it goes.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import anyio
import typer

from safeexec._support.units import parse_bytes
from safeexec.cli.groups import usage_error
from safeexec.cli.run import Mode
from safeexec.errors import SafeExecError
from safeexec.policy.loader import load_policy
from safeexec.policy.narrow import narrow_limits

__all__ = ["mcp"]


class Transport(StrEnum):
    STDIO = "stdio"
    HTTP = "http"


class Host(StrEnum):
    """Loopback only (bearer tokens guard the port, unless --no-auth)."""

    IPV4 = "127.0.0.1"
    IPV6 = "::1"


def mcp(
    transport: Annotated[
        Transport, typer.Option("--transport", help="stdio (one client) or streamable HTTP.")
    ] = Transport.STDIO,
    policy: Annotated[
        str, typer.Option("--policy", help="Policy pack name or path to a pack or .toml file.")
    ] = "default",
    mode: Annotated[
        Mode | None, typer.Option("--mode", help="Default backend (default: the policy's).")
    ] = None,
    state_dir: Annotated[
        Path | None,
        typer.Option("--state-dir", help="Where audit.jsonl and blobs/ live (default as for run)."),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", metavar="SECONDS", help="Wall-clock limit per call (lowers)."),
    ] = None,
    cpu: Annotated[
        float | None,
        typer.Option("--cpu", metavar="SECONDS", help="CPU-time limit per call (lowers)."),
    ] = None,
    memory: Annotated[
        str | None,
        typer.Option("--memory", metavar="SIZE", help="Memory limit, e.g. 512MiB (lowers)."),
    ] = None,
    allow_in_process: Annotated[
        bool,
        typer.Option(
            "--allow-in-process",
            help="Offer the policy's in-process modes (restricted-inprocess: not a security "
            "boundary).",
        ),
    ] = False,
    host: Annotated[Host, typer.Option("--host", help="HTTP: loopback address.")] = Host.IPV4,
    port: Annotated[int, typer.Option("--port", help="HTTP: port (path /mcp).")] = 8765,
    max_sessions: Annotated[
        int, typer.Option("--max-sessions", help="HTTP: client sessions open at once.")
    ] = 16,
    idle_timeout: Annotated[
        float,
        typer.Option(
            "--idle-timeout",
            metavar="SECONDS",
            help="HTTP: close sessions with no request but their event stream this long.",
        ),
    ] = 1800.0,
    max_age: Annotated[
        float,
        typer.Option("--max-session-age", metavar="SECONDS", help="HTTP: close sessions this old."),
    ] = 86400.0,
    tokens: Annotated[
        Path | None,
        typer.Option(
            "--tokens",
            help="HTTP: TOML file of [tokens.<id>] sha256 = ... (as for serve); "
            "SAFEEXEC_MCP_TOKENS=id=token,... adds more.",
        ),
    ] = None,
    no_auth: Annotated[
        bool,
        typer.Option("--no-auth", help="HTTP: no bearer token (anyone on this machine)."),
    ] = False,
) -> None:
    """Serve safeexec to MCP clients: run_code, check_code, files, reset_session.

    Exit status: 0 served until the client left (stdio) or the server stopped; 2 a usage or
    configuration error.
    """
    try:
        from safeexec.faces.mcp_server import McpConfig, http_tokens, serve_http, serve_stdio
    except ImportError as exc:
        usage_error(
            f"the MCP server needs the mcp extra ({exc.name} is missing); "
            "pip install 'safeexec[mcp]'"
        )
    try:
        config = McpConfig(
            policy=narrow_limits(
                load_policy(policy),
                wall_seconds=timeout,
                cpu_seconds=cpu,
                memory_bytes=None if memory is None else parse_bytes(memory),
            ),
            mode=None if mode is None else mode.value,
            state_dir=state_dir,
            allow_in_process=allow_in_process,
        )
        store = None if transport is Transport.STDIO or no_auth else http_tokens(tokens, os.environ)
    except SafeExecError as exc:
        usage_error(str(exc))
    if transport is Transport.STDIO:
        anyio.run(serve_stdio, config)
    else:
        serve_http(
            config,
            tokens=store,
            host=host.value,
            port=port,
            max_sessions=max_sessions,
            idle_timeout_seconds=idle_timeout,
            max_age_seconds=max_age,
        )
