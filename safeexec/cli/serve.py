"""``safeexec serve``: the HTTP service (the ``service`` extra) on a host and port.

On SIGTERM or SIGINT it drains (runs in flight finish, every session is closed) and then ends
by that signal, as uvicorn does; 2 is a usage or configuration error (one line on stderr).
``--new-token`` and ``--hash-token`` print and exit 0 without serving.
"""

from __future__ import annotations

import os
import re
import secrets
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from safeexec._support.units import parse_bytes
from safeexec.audit.statedir import default_state_dir
from safeexec.cli.groups import usage_error
from safeexec.errors import SafeExecError

__all__ = ["serve"]

_TOKEN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8000,
    tokens: Annotated[
        Path | None,
        typer.Option(
            "--tokens",
            help="TOML file of tokens.<id> tables (sha256 of the token, quotas); "
            "SAFEEXEC_SERVICE_TOKENS=id=token,... adds more.",
        ),
    ] = None,
    state_dir: Annotated[
        Path | None,
        typer.Option("--state-dir", help="Audit log, blobs and request log (kept on restart)."),
    ] = None,
    policy: Annotated[
        list[str] | None,
        typer.Option("--policy", help="A pack clients may choose (repeat; first is default)."),
    ] = None,
    mode: Annotated[
        list[str] | None,
        typer.Option("--mode", help="A mode clients may choose (repeat; default: all real ones)."),
    ] = None,
    allow_in_process: Annotated[
        bool,
        typer.Option(
            "--allow-in-process",
            help="Let --mode name a mode that runs code in this server process "
            "(restricted-inprocess: not a security boundary).",
        ),
    ] = False,
    replica_id: Annotated[
        str, typer.Option("--replica-id", help="Prefix of this server's session ids.")
    ] = "r0",
    max_body: Annotated[
        str, typer.Option("--max-body", metavar="SIZE", help="Largest request body (413 over).")
    ] = "4MiB",
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections",
            help="Open connections at most (past them the oldest unauthenticated one is closed).",
        ),
    ] = 1000,
    max_per_address: Annotated[
        int,
        typer.Option("--max-connections-per-address", help="Open connections per client address."),
    ] = 100,
    head_timeout: Annotated[
        float,
        typer.Option("--head-timeout", help="Seconds for a request's line and headers to arrive."),
    ] = 10.0,
    body_timeout: Annotated[
        float, typer.Option("--body-timeout", help="Seconds for a request's body to arrive.")
    ] = 60.0,
    keepalive: Annotated[
        float,
        typer.Option(
            "--keepalive",
            help="Close a kept-alive connection idle this many seconds (keep it above your "
            "clients' idle expiry).",
        ),
    ] = 75.0,
    idle_seconds: Annotated[
        float, typer.Option("--idle-seconds", help="Close sessions unused this long.")
    ] = 600.0,
    drain_seconds: Annotated[
        float, typer.Option("--drain-seconds", help="On SIGTERM, wait this long for runs.")
    ] = 30.0,
    new_token: Annotated[
        bool, typer.Option("--new-token", help="Print a fresh token and its file entry; exit.")
    ] = False,
    token_id: Annotated[
        str | None,
        typer.Option("--token-id", help="With --new-token: the entry's id (default: made up)."),
    ] = None,
    hash_token: Annotated[
        bool, typer.Option("--hash-token", help="Print the sha256 of a token read from stdin.")
    ] = False,
) -> None:
    """Serve safeexec over HTTP: sessions, runs, files, the static gate (bearer tokens).

    Exit status: 0 printed (--new-token, --hash-token); 2 a usage or configuration error; on
    SIGTERM or SIGINT it drains, then ends by that signal.
    """
    try:
        from safeexec.service import auth
        from safeexec.service.config import DEFAULT_MODES, ServiceConfig
        from safeexec.service.server import serve as run_server
    except ImportError as exc:
        _fail(f"the service needs its extra: pip install 'safeexec[service]' ({exc})")
    if new_token:
        token = auth.new_token()
        entry_id = token_id or f"client-{secrets.token_hex(4)}"
        if not _TOKEN_ID.fullmatch(entry_id):
            _fail(f"--token-id {entry_id} must be letters, digits, '-' or '_'")
        typer.echo(f'token: {token}\n\n[tokens.{entry_id}]\nsha256 = "{auth.hash_token(token)}"')
        return
    if hash_token:
        typer.echo(auth.hash_token(sys.stdin.readline().strip()))
        return
    try:
        store = auth.token_store(tokens, os.environ)
        config = ServiceConfig(
            state_dir=(state_dir or default_state_dir()).absolute(),
            policies=tuple(policy or ("default",)),
            modes=tuple(mode or DEFAULT_MODES),
            replica_id=replica_id,
            max_body_bytes=parse_bytes(max_body),
            max_connections=max_connections,
            max_connections_per_address=max_per_address,
            head_timeout_seconds=head_timeout,
            body_timeout_seconds=body_timeout,
            keepalive_seconds=keepalive,
            idle_seconds=idle_seconds,
            drain_seconds=drain_seconds,
            allow_in_process=allow_in_process,
        )
        run_server(config, store, host=host, port=port)
    except SafeExecError as exc:
        _fail(str(exc))


def _fail(message: str) -> NoReturn:
    usage_error(message)
