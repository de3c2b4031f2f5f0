"""An MCP server over safeexec (the official ``mcp`` SDK, low-level ``Server``; extra ``mcp``).

Tools: ``run_code`` (``code``: code or a whole reply; optional ``timeout`` and ``mode``),
``check_code`` (the static gate only), ``list_files`` / ``read_file`` / ``write_file`` in the
workdir, ``reset_session``. Results are MCP content: the observation as text, figures as image
content, other artifacts as embedded resources; refusals are ``isError`` results naming the rule.

State belongs to an MCP client session — over stdio the serving process, over HTTP an
``Mcp-Session-Id`` — which gets one :class:`Session` (its budget, workdir and sandboxes, one
per mode used), opened on first use and closed (process trees killed, workdir removed) when
the client goes. The 2026-07-28 protocol has no sessions (every HTTP request stands
alone), so over HTTP ``server/discover`` advertises only the handshake-era versions: a client
in ``auto`` mode falls back to the initialize handshake and keeps its state; a client that
pins the stateless version anyway gets a fresh session per request.

Over HTTP every request needs a bearer token (:mod:`safeexec._support.bearer`, the service's store:
hashed, compared in constant time), from a tokens file (``[tokens.<id>] sha256 = ...``) or
``SAFEEXEC_MCP_TOKENS=id=token,...``; ``tokens=None`` (``--no-auth``) serves anyone who can
reach the loopback port.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import anyio.to_thread
import mcp_types as types
import uvicorn
from mcp.server import Server
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from safeexec import __version__
from safeexec._support.bearer import (
    TokenStore,
    TokenTable,
    bearer_token,
    read_tokens_env,
    read_tokens_file,
)
from safeexec._support.connections import (
    ConnectionGuard,
    ConnectionLimits,
    bearer_authenticates,
    guarded_protocol,
)
from safeexec.backends.registry import refuse_in_process, runs_in_process
from safeexec.decide import chosen_backend
from safeexec.errors import ConfigurationError, SafeExecError
from safeexec.faces.mcp_sessions import SessionLifetimes
from safeexec.faces.results import MAX_INLINE_BYTES, File, Rendered, render
from safeexec.faces.tooldefs import (
    RUN_CODE,
    RUN_CODE_DESCRIPTION,
    code_reply,
    run_code_arguments,
    run_code_schema,
)
from safeexec.gate import check_action
from safeexec.model.values import Action, ActionSource, Outcome, OutputChunk, Verdict
from safeexec.observe import observe
from safeexec.policy.schema import Policy
from safeexec.session.session import Session

__all__ = [
    "MCP_TOKENS_ENV",
    "ClientOf",
    "ClientSession",
    "McpConfig",
    "RequireBearer",
    "build_server",
    "http_app",
    "http_tokens",
    "per_connection",
    "serve_http",
    "serve_stdio",
]

SERVER_NAME = "safeexec"

MCP_TOKENS_ENV = "SAFEEXEC_MCP_TOKENS"
"""``id=token`` pairs (comma-separated) the HTTP server accepts, beside ``--tokens FILE``."""

_LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True, slots=True, kw_only=True)
class McpConfig:
    """What every client session of one server runs under (from ``safeexec mcp``'s flags).

    A mode that runs code in the server process (``restricted-inprocess``: not a security
    boundary) is offered only with ``allow_in_process`` (``--allow-in-process``); without it,
    a default mode (``mode`` or the policy's) of that kind raises ``InProcessRefused``.
    """

    policy: Policy
    mode: str | None = None
    state_dir: Path | None = None
    allow_in_process: bool = False

    def __post_init__(self) -> None:
        self.refuse_in_process(chosen_backend(self.policy, self.mode))

    @property
    def modes(self) -> tuple[str, ...]:
        """The modes ``run_code`` offers: those the policy allows (in-process ones only if
        allowed)."""
        return tuple(
            mode
            for mode in self.policy.backends.allowed
            if self.allow_in_process or not runs_in_process(mode)
        )

    def refuse_in_process(self, mode: str) -> None:
        """Raise ``InProcessRefused`` if ``mode`` runs in the server process and is not allowed."""
        refuse_in_process(
            mode,
            allowed=self.allow_in_process,
            face="the MCP server",
            option="allow_in_process=True (safeexec mcp --allow-in-process)",
        )


class ClientSession:
    """One MCP client's :class:`Session` (opened on first use) and the lock its calls hold."""

    def __init__(self, config: McpConfig) -> None:
        self._config = config
        self._session: Session | None = None
        self.lock = anyio.Lock()
        """Held by each tool call of this client, so calls run one at a time, in order."""

    def get(self, mode: str | None = None) -> Session:
        """The client's session, set to run in ``mode`` (``None``: the server's)."""
        config = self._config
        config.refuse_in_process(chosen_backend(config.policy, mode or config.mode))
        if self._session is None:
            self._session = Session(
                policy=self._config.policy, mode=self._config.mode, state_dir=self._config.state_dir
            )
        # One session, so one budget, workdir and session id in the log; a mode is a backend
        # session the Session keeps beside the others. Callers hold ``lock``: no other call of
        # this client sees the change.
        self._session.mode = mode or self._config.mode
        return self._session

    def close(self) -> None:
        """Close the session (killing its sandboxes, removing its workdir); idempotent."""
        session, self._session = self._session, None
        if session is not None:
            session.close()


_STATE_KEY = "safeexec.sessions"


def _connection(ctx: ServerRequestContext[Any, Any]) -> Connection:
    # The SDK hands handlers the connection only through the per-request ServerSession (its
    # context rework is pending); this is the one SDK internal read here, pinned by the tests.
    connection = getattr(ctx.session, "_connection", None)
    if not isinstance(connection, Connection):
        raise RuntimeError("this mcp SDK version exposes no per-client connection to handlers")
    return connection


ClientOf = Callable[[ServerRequestContext[Any, Any]], ClientSession]
"""Which client's sessions a request belongs to."""


def per_connection(config: McpConfig) -> ClientOf:
    """Sessions per MCP connection (an HTTP ``Mcp-Session-Id``), closed when it closes."""

    def client_of(ctx: ServerRequestContext[Any, Any]) -> ClientSession:
        connection = _connection(ctx)
        client = connection.state.get(_STATE_KEY)
        if not isinstance(client, ClientSession):
            client = ClientSession(config)
            connection.state[_STATE_KEY] = client
            # Unwound when the client goes: HTTP DELETE, idle timeout, server shutdown.
            connection.exit_stack.push_async_callback(anyio.to_thread.run_sync, client.close)
        return client

    return client_of


# -- tools -------------------------------------------------------------------------------------


def _tool_list(config: McpConfig) -> list[types.Tool]:
    def tool(name: str, description: str, properties: dict[str, Any], *required: str) -> types.Tool:
        schema = {
            "type": "object",
            "properties": properties,
            "required": list(required),
            "additionalProperties": False,
        }
        return types.Tool(name=name, description=description, input_schema=schema)

    path = {"type": "string", "description": "A path relative to the session's workdir."}
    mode = {"enum": list(config.modes), "description": "Mode to check for (default: the server's)."}
    return [
        types.Tool(
            name=RUN_CODE,
            description=RUN_CODE_DESCRIPTION,
            input_schema=run_code_schema(modes=config.modes),
        ),
        tool(
            "check_code",
            "Check code against the policy without running it: the verdict and its findings.",
            {"code": {"type": "string"}, "mode": mode},
            "code",
        ),
        tool("list_files", "List a directory of the session's workdir.", {"path": path}),
        tool("read_file", "Read a file of the session's workdir.", {"path": path}, "path"),
        tool(
            "write_file",
            "Write a file into the session's workdir (directories are made on the way).",
            {
                "path": path,
                "content": {"type": "string"},
                "encoding": {"enum": ["utf-8", "base64"], "default": "utf-8"},
            },
            "path",
            "content",
        ),
        tool(
            "reset_session",
            "Start afresh: end the sandboxed interpreter, forget its state and empty the workdir.",
            {},
        ),
    ]


class _BadArguments(Exception):
    pass


def _string(arguments: Mapping[str, Any], name: str, default: str | None = None) -> str:
    value = arguments.get(name, default)
    if not isinstance(value, str):
        raise _BadArguments(f"argument {name!r} must be a string")
    return value


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def _file_uri(name: str) -> str:
    return f"safeexec://workdir/{quote(name)}"


def _file_content(file: File) -> types.ContentBlock:
    if file.is_image:
        return types.ImageContent(data=file.base64, mime_type=file.media_type)
    resource: types.TextResourceContents | types.BlobResourceContents
    text = file.text
    if text is not None:
        resource = types.TextResourceContents(
            uri=_file_uri(file.name), mime_type=file.media_type, text=text
        )
        return types.EmbeddedResource(resource=resource)
    resource = types.BlobResourceContents(
        uri=_file_uri(file.name), mime_type=file.media_type, blob=file.base64
    )
    return types.EmbeddedResource(resource=resource)


def _rendered(rendered: Rendered, structured: dict[str, Any]) -> types.CallToolResult:
    content: list[types.ContentBlock] = [types.TextContent(text=rendered.text)]
    content += [_file_content(f) for f in rendered.files]
    return types.CallToolResult(
        content=content, is_error=rendered.is_error, structured_content=structured
    )


async def _run_code(
    ctx: ServerRequestContext[Any, Any],
    client: ClientSession,
    config: McpConfig,
    arguments: Mapping[str, Any],
) -> types.CallToolResult:
    try:
        code, timeout, mode = run_code_arguments(arguments, modes=config.modes)
    except ValueError as exc:
        raise _BadArguments(str(exc)) from None
    session = client.get(mode)
    outcome: Outcome | None = None
    chunks = 0
    # Output as it is written, as progress notifications (a no-op unless the client asked for
    # progress). Cancelling the request interrupts the cell; the step is recorded either way.
    async for item in session.stream(code_reply(code), timeout=timeout):
        if isinstance(item, OutputChunk):
            chunks += 1
            await ctx.session.report_progress(chunks, None, f"{item.stream.value}: {item.text}")
        else:
            outcome = item
    if outcome is None:
        raise RuntimeError("Session.stream ended without the step's outcome")
    rendered = await anyio.to_thread.run_sync(render, outcome, session.blobs)
    structured = {
        "verdict": outcome.decision.verdict.value,
        "status": None if outcome.result is None else outcome.result.status.value,
        "rules": [f.rule for f in outcome.decision.findings],
        "artifacts": [] if outcome.result is None else [a.name for a in outcome.result.artifacts],
        "action_id": outcome.action.action_id,
        "error": None if rendered.error is None else rendered.error.to_json(),
    }
    return _rendered(rendered, structured)


def _check_code(
    client: ClientSession, config: McpConfig, arguments: Mapping[str, Any]
) -> types.CallToolResult:
    code = _string(arguments, "code")
    mode = arguments.get("mode")
    if mode is not None and mode not in config.modes:
        raise _BadArguments(f"argument 'mode' must be one of {list(config.modes)}, got {mode!r}")
    session = client.get()
    action = Action.create(code, source=ActionSource.TOOL_CALL)
    gate = check_action(action, session.policy, budget=session.budget, backend=mode or config.mode)
    decision = gate.decision
    shown = observe(
        decision=decision, result=None, blobs=session.blobs, config=session.policy.observe
    )
    text = f"verdict: {decision.verdict.value} (mode {decision.backend}; nothing was run)\n"
    return types.CallToolResult(
        content=[types.TextContent(text=text + shown.text)],
        is_error=decision.verdict is Verdict.DENY,
        structured_content={
            "verdict": decision.verdict.value,
            "rules": [f.rule for f in decision.findings],
        },
    )


def _list_files(
    client: ClientSession, config: McpConfig, arguments: Mapping[str, Any]
) -> types.CallToolResult:
    entries = client.get().files.list(_string(arguments, "path", "."))
    listed = [{"name": e.name, "kind": e.kind, "size": e.size} for e in entries]
    lines = [f"{e.name}{'/' if e.kind == 'dir' else ''}\t{e.size}" for e in entries]
    return types.CallToolResult(
        content=[types.TextContent(text="\n".join(lines) or "(empty)")],
        structured_content={"entries": listed},
    )


def _read_file(
    client: ClientSession, config: McpConfig, arguments: Mapping[str, Any]
) -> types.CallToolResult:
    name = _string(arguments, "path")
    data = client.get().files.read(name)
    media_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    if len(data) > MAX_INLINE_BYTES:
        return _text(f"{name} is {len(data):,} bytes, over {MAX_INLINE_BYTES:,}", error=True)
    file = File(name=name, media_type=media_type, data=data)
    return types.CallToolResult(content=[_file_content(file)])


def _write_file(
    client: ClientSession, config: McpConfig, arguments: Mapping[str, Any]
) -> types.CallToolResult:
    name = _string(arguments, "path")
    content = _string(arguments, "content")
    encoding = _string(arguments, "encoding", "utf-8")
    if encoding == "base64":
        try:
            data = base64.b64decode(content, validate=True)
        except binascii.Error as exc:
            raise _BadArguments(f"content is not valid base64: {exc}") from None
    elif encoding == "utf-8":
        data = content.encode("utf-8")
    else:
        raise _BadArguments(f"encoding must be 'utf-8' or 'base64', got {encoding!r}")
    session = client.get()
    limit = session.policy.limits.file_size_bytes
    if len(data) > limit:
        raise _BadArguments(f"{len(data):,} bytes is over the policy's file size of {limit:,}")
    session.files.write(name, data)
    return _text(f"wrote {name} ({len(data):,} bytes)")


def _reset_session(
    client: ClientSession, config: McpConfig, arguments: Mapping[str, Any]
) -> types.CallToolResult:
    client.close()
    return _text("the session was reset: a fresh interpreter and an empty workdir")


_Handler = Callable[[ClientSession, McpConfig, Mapping[str, Any]], types.CallToolResult]
_SYNC_TOOLS: dict[str, _Handler] = {
    "check_code": _check_code,
    "list_files": _list_files,
    "read_file": _read_file,
    "write_file": _write_file,
    "reset_session": _reset_session,
}


def build_server(config: McpConfig, client_of: ClientOf) -> Server[Any]:
    """The MCP server: its tools, run in the sessions ``client_of`` picks for each request."""
    tools = _tool_list(config)

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        client = client_of(ctx)
        try:
            async with client.lock:
                if params.name == RUN_CODE:
                    return await _run_code(ctx, client, config, arguments)
                handler = _SYNC_TOOLS.get(params.name)
                if handler is None:
                    return _text(f"no tool named {params.name!r}", error=True)
                # Session calls block (files, the gate, closing sandboxes): off the event loop.
                return await anyio.to_thread.run_sync(handler, client, config, arguments)
        except (_BadArguments, SafeExecError) as exc:
            return _text(f"[not run: {exc}]", error=True)

    server: Server[Any] = Server(
        SERVER_NAME,
        version=__version__,
        instructions="Run Python in a policy-checked sandbox; state persists per client session.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )

    return server


def _advertise_handshake_only(server: Server[Any]) -> None:
    """Make ``server/discover`` a legacy advertisement, so that HTTP clients in ``auto`` mode
    take the initialize handshake, the only HTTP era with client sessions (stdio needs none
    of this: its one connection holds state in either era)."""

    async def discover(
        ctx: ServerRequestContext[Any, Any], params: types.RequestParams
    ) -> types.DiscoverResult:
        return types.DiscoverResult(
            supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
            capabilities=server.get_capabilities(protocol_version=ctx.protocol_version),
        )

    server.add_request_handler("server/discover", types.RequestParams, discover)


async def serve_stdio(config: McpConfig) -> None:
    """Serve one client over stdin/stdout until it closes them."""
    # One client per process: its sessions live as long as the process serves it. (Per-request
    # connections would not do: the 2026-07-28 era makes one for every request, even on stdio.)
    client = ClientSession(config)
    server = build_server(config, lambda ctx: client)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(client.close)


class RequireBearer:
    """ASGI: every HTTP request needs ``Authorization: Bearer <token>`` with a token of
    ``tokens`` (else a 401 JSON body and ``WWW-Authenticate: Bearer``); lifespan passes. The
    request then carries the token's id as its principal, to which the SDK binds sessions."""

    def __init__(self, app: ASGIApp, tokens: TokenStore[Any]) -> None:
        self._app = app
        self._tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            header = Headers(scope=scope).get("authorization")
            entry = self._tokens.authenticate(bearer_token(header))
            if entry is None:
                response = JSONResponse(
                    {
                        "error": "unauthorized",
                        "message": "send Authorization: Bearer <token> with a token this "
                        "server was given (safeexec mcp --tokens FILE or "
                        f"{MCP_TOKENS_ENV})",
                    },
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
            # The SDK binds each session to the principal that opened it: a session id is
            # then a 404 for every other token.
            principal = AccessToken(token=entry.token_id, client_id=entry.token_id, scopes=[])
            scope = {**scope, "user": AuthenticatedUser(principal)}
        await self._app(scope, receive, send)


def http_tokens(path: Path | None, environ: Mapping[str, str]) -> TokenStore[TokenTable]:
    """The tokens the HTTP server accepts: file ``path`` (if given) and ``environ``'s
    :data:`MCP_TOKENS_ENV`; ``ConfigurationError`` when there are none."""
    tables = (
        *(() if path is None else read_tokens_file(path)),
        *read_tokens_env(environ, MCP_TOKENS_ENV),
    )
    if not tables:
        raise ConfigurationError(
            f"no tokens for the HTTP transport: pass --tokens FILE (TOML, [tokens.<id>] "
            f"sha256 = ...) or set {MCP_TOKENS_ENV}=id=token (safeexec serve --new-token "
            "makes one), or --no-auth to serve anyone who can reach the loopback port"
        )
    return TokenStore(tables)


def http_app(
    config: McpConfig,
    *,
    tokens: TokenStore[Any] | None,
    host: str = "127.0.0.1",
    max_sessions: int = 16,
    idle_timeout_seconds: float = 1800.0,
    max_age_seconds: float = 86400.0,
) -> ASGIApp:
    """The streamable HTTP app (``/mcp``), with DNS-rebinding protection; bearer tokens from
    ``tokens`` are required unless it is ``None``, which only a loopback ``host`` may choose.

    ``max_sessions`` bounds the open client sessions (each holds a sandbox); a session with no
    request but its event stream for ``idle_timeout_seconds``, or ``max_age_seconds`` old, is
    closed with its sandbox (:class:`~safeexec.faces.mcp_sessions.SessionLifetimes`).
    """
    if host not in _LOOPBACK:
        raise ValueError(f"host={host!r}: the MCP server listens on loopback only")
    server = build_server(config, per_connection(config))
    _advertise_handshake_only(server)
    app = SessionLifetimes(
        server.streamable_http_app(
            host=host, max_sessions=max_sessions, session_idle_timeout=idle_timeout_seconds
        ),
        idle_seconds=idle_timeout_seconds,
        max_age_seconds=max_age_seconds,
    )
    return app if tokens is None else RequireBearer(app, tokens)


def serve_http(
    config: McpConfig,
    *,
    tokens: TokenStore[Any] | None,
    host: str = "127.0.0.1",
    port: int = 8765,
    max_sessions: int = 16,
    idle_timeout_seconds: float = 1800.0,
    max_age_seconds: float = 86400.0,
) -> None:
    """Serve :func:`http_app` under uvicorn until stopped, its connections under
    :mod:`safeexec._support.connections`' default limits (head and body timeouts, a cap per
    address, unauthenticated connections closed first when full)."""
    app = http_app(
        config,
        tokens=tokens,
        host=host,
        max_sessions=max_sessions,
        idle_timeout_seconds=idle_timeout_seconds,
        max_age_seconds=max_age_seconds,
    )
    guard = ConnectionGuard(ConnectionLimits(), authenticates=bearer_authenticates(tokens))
    uvicorn.run(
        app, host=host, port=port, log_level="warning", http=guarded_protocol(guard), ws="none"
    )
