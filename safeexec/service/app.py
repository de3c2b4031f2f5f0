"""The ASGI app: sessions as HTTP resources, each route a thin translation onto :class:`Runtime`.

``create_app(config, tokens)`` builds it; ``safeexec serve`` hands it to uvicorn. Every route but
``GET /v1/health`` and the schema needs ``Authorization: Bearer <token>``. Errors are one JSON
shape, ``{"error": ..., "message": ...}``: 401 no or unknown token, 404 no such session *for this
token*, 413 body over the limit, 422 a malformed request, 429 over quota, 500 an internal error
(the server keeps serving), 502 a worker that died mid-run (the body's ``run`` holds the
recorded step; the session stays open), 503 a backend this machine cannot provide, 403
``in_process_refused`` a mode that would run the code in the server process (not a security
boundary) on a server whose operator did not allow it (``--allow-in-process``). No CORS
headers are ever sent: browsers on other origins cannot call the service.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any

import anyio
from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from safeexec import __version__
from safeexec._support.bearer import bearer_token
from safeexec.backends.base import Backend
from safeexec.errors import (
    AuditError,
    BackendUnavailable,
    ConfigurationError,
    InProcessRefused,
    InternalError,
    PolicyError,
)
from safeexec.model.values import Outcome
from safeexec.service.access_log import CLIENT_CLOSED_REQUEST, RequestAudit, RequestLog
from safeexec.service.auth import TokenEntry, TokenStore
from safeexec.service.body_limit import BodyLimit
from safeexec.service.config import ServiceConfig
from safeexec.service.events import FINAL_EVENTS
from safeexec.service.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from safeexec.service.metrics import ServiceMetrics
from safeexec.service.quotas import QuotaExceeded
from safeexec.service.runs import ClientLeft
from safeexec.service.runtime import BadRequest, Runtime, WorkerCrashed
from safeexec.service.schemas import (
    ArtifactOut,
    CheckIn,
    CheckOut,
    CrashOut,
    CreateSessionIn,
    DisplayOut,
    ErrorOut,
    ErrorValueOut,
    FileEntryOut,
    HealthOut,
    MimeItemOut,
    RunIn,
    RunOut,
    SessionOut,
)
from safeexec.service.sessions import SessionNotFound, SessionRecord

__all__ = ["ServiceApp", "create_app"]

_SERVER_ERRORS: dict[int | str, dict[str, Any]] = {
    500: {"model": ErrorOut, "description": "An internal error; the server keeps serving."},
}
_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "A policy, mode, path or limit not offered here."},
    401: {"model": ErrorOut, "description": "No token, or an unknown one."},
    404: {"model": ErrorOut, "description": "No such session (or file, blob) for this token."},
    413: {"model": ErrorOut, "description": "A request body over the server's limit."},
    422: {"model": ErrorOut, "description": "A malformed request (unknown fields included)."},
    429: {"model": ErrorOut, "description": "Over this token's quota."},
    503: {"model": ErrorOut, "description": "A backend this machine cannot provide."},
}
_MODE_ERRORS: dict[int | str, dict[str, Any]] = {
    **_ERRORS,
    403: {
        "model": ErrorOut,
        "description": "in_process_refused: the mode (or the policy's default) runs the code in "
        "the server process, which is not a security boundary, and the operator did not allow "
        "it (safeexec serve --allow-in-process).",
    },
}
_RUN_ERRORS: dict[int | str, dict[str, Any]] = {
    **_ERRORS,
    502: {
        "model": CrashOut,
        "description": "The session's worker died during the run (not a limit, not an "
        "interrupt); the step is recorded, the session stays open, its state is lost.",
    },
}
_log = logging.getLogger("safeexec.service")
_bearer = HTTPBearer(auto_error=False, description="A token issued by the server's operator.")


def create_app(
    config: ServiceConfig,
    tokens: TokenStore,
    *,
    backends: Mapping[str, Backend] | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], datetime] | None = None,
) -> ServiceApp:
    """The service as an ASGI app (for uvicorn); ``backends`` replaces built-in ones (tests)."""
    runtime = Runtime(config, tokens, backends=backends, monotonic=monotonic)
    request_log = RequestLog(config.state_dir, fsync=config.audit_fsync)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            group.start_soon(_every, config.sweep_seconds, runtime.sweep_idle)
            group.start_soon(_every, config.cpu_meter_seconds, runtime.meter_cpu)
            try:
                yield
            finally:
                group.cancel_scope.cancel()
                with anyio.CancelScope(shield=True):
                    await runtime.close_all()
                    request_log.close()

    api = FastAPI(
        title="safeexec service",
        version=__version__,
        description="Run model-generated code without trusting it, over HTTP.",
        openapi_url="/v1/openapi.json",
        docs_url=None,  # the docs pages load scripts from a CDN; the schema is enough
        redoc_url=None,
        lifespan=lifespan,
        responses=_SERVER_ERRORS,
    )
    api.state.runtime = runtime
    api.router.route_class = _GuardedRoute
    _routes(api, runtime)
    _handlers(api)
    limited = BodyLimit(
        api, max_body_bytes=config.max_body_bytes, admits=lambda scope: _known(scope, tokens)
    )
    audited = RequestAudit(
        limited,
        log=request_log,
        replica_id=config.replica_id,
        wall_clock=wall_clock or (lambda: datetime.now(UTC)),
        monotonic=monotonic,
    )
    return ServiceApp(audited, api=api, runtime=runtime, request_log=request_log)


class ServiceApp:
    """The ASGI app uvicorn serves: request audit → body limit → the FastAPI routes.

    ``runtime`` is the live state (sessions, quotas); ``api.openapi()`` the schema it serves.
    """

    def __init__(
        self, app: ASGIApp, *, api: FastAPI, runtime: Runtime, request_log: RequestLog
    ) -> None:
        self._app = app
        self.api = api
        self.runtime = runtime
        self.request_log = request_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)


async def _every(seconds: float, task: Callable[[], Coroutine[Any, Any, object]]) -> None:
    """``task()`` every ``seconds`` until cancelled; a failure waits for the next turn."""
    while True:
        await anyio.sleep(seconds)
        try:
            await task()
        except Exception:
            _log.exception("periodic %s failed", getattr(task, "__name__", "task"))


def _known(scope: Scope, tokens: TokenStore) -> bool:
    """Does the request carry a token of ``tokens``? (Its body is read only then.)"""
    return tokens.authenticate(bearer_token(Headers(scope=scope).get("authorization"))) is not None


async def _authenticated(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> TokenEntry:
    """The token entry of the request's bearer token; a 401 for none or an unknown one."""
    runtime: Runtime = request.app.state.runtime
    token = None if credentials is None else credentials.credentials
    entry = runtime.tokens.authenticate(token)
    if entry is None:
        raise _Unauthorized()
    request.state.token_id = entry.token_id  # for the request log (RequestAudit)
    return entry


Token = Annotated[TokenEntry, Depends(_authenticated)]


def _routes(api: FastAPI, runtime: Runtime) -> None:
    @api.get(
        "/v1/metrics",
        response_class=Response,
        responses={**_ERRORS, 200: {"content": {METRICS_CONTENT_TYPE: {}}}},
        tags=["service"],
    )
    async def metrics(token: Token) -> Response:
        """Prometheus text: sessions open and created, runs by verdict and status, refusals
        (401, 429) and server errors (5xx) by error, a run latency histogram; server-wide,
        no token or session ids."""
        return Response(runtime.metrics.render(), media_type=METRICS_CONTENT_TYPE)

    @api.get("/v1/health", response_model=HealthOut, tags=["service"])
    async def health() -> dict[str, str]:
        """Liveness for load balancers (no token needed, nothing about sessions said)."""
        return {"status": "ok", "replica_id": runtime.config.replica_id}

    @api.post(
        "/v1/sessions",
        status_code=201,
        response_model=SessionOut,
        responses=_MODE_ERRORS,
        tags=["sessions"],
    )
    async def create_session(token: Token, body: CreateSessionIn | None = None) -> dict[str, Any]:
        """Open a session under a policy the server offers, with limits narrowed from it."""
        record = await runtime.create(token, body or CreateSessionIn())
        return runtime.describe(record)

    @api.get("/v1/sessions", response_model=list[SessionOut], responses=_ERRORS, tags=["sessions"])
    async def list_sessions(token: Token) -> list[dict[str, Any]]:
        """This token's live sessions."""
        return [runtime.describe(r) for r in runtime.registry.owned_by(token.token_id)]

    @api.get(
        "/v1/sessions/{session_id}",
        response_model=SessionOut,
        responses=_ERRORS,
        tags=["sessions"],
    )
    async def get_session(token: Token, session_id: str) -> dict[str, Any]:
        return runtime.describe(runtime.get(token, session_id))

    @api.delete("/v1/sessions/{session_id}", status_code=204, responses=_ERRORS, tags=["sessions"])
    async def delete_session(token: Token, session_id: str) -> Response:
        """Close the session: its processes are killed and its workdir removed."""
        await runtime.delete(token, session_id)
        return Response(status_code=204)

    @api.post(
        "/v1/sessions/{session_id}/run",
        response_model=RunOut,
        responses=_RUN_ERRORS,
        tags=["sessions"],
    )
    async def run(token: Token, session_id: str, body: RunIn, request: Request) -> Any:
        """One step: check, run, observe, audit. A deny is a 200 with ``verdict: deny``."""
        try:
            outcome = await runtime.run(
                token,
                session_id,
                body,
                receive=request.receive,
                run_id=request.state.request_id,
            )
        except ClientLeft:
            return Response(status_code=CLIENT_CLOSED_REQUEST)
        return _run_out(session_id, outcome)

    @api.get(
        "/v1/sessions/{session_id}/events",
        response_class=StreamingResponse,
        responses={**_ERRORS, 200: {"content": {"text/event-stream": {}}}},
        tags=["sessions"],
    )
    async def events(token: Token, session_id: str) -> StreamingResponse:
        """Server-sent events: ``output`` (a chunk of a running cell's stdout or stderr),
        ``step`` (a step ended), ``closed`` (the session closed), ``lagged`` (this stream fell
        behind and ends); a comment line every ``heartbeat`` seconds keeps it open."""
        record = runtime.get(token, session_id)
        return StreamingResponse(
            _event_stream(runtime, record),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    @api.post(
        "/v1/sessions/{session_id}/interrupt",
        responses=_ERRORS,
        tags=["sessions"],
    )
    async def interrupt(token: Token, session_id: str) -> dict[str, bool]:
        """Interrupt the running cell (``KeyboardInterrupt`` in it); a no-op when idle."""
        return {"running": runtime.interrupt(token, session_id)}

    @api.get(
        "/v1/sessions/{session_id}/files",
        response_model=list[FileEntryOut],
        responses=_ERRORS,
        tags=["files"],
    )
    async def list_files(
        token: Token, session_id: str, path: Annotated[str, Query()] = "."
    ) -> list[dict[str, Any]]:
        """The entries of a directory of the workdir (links listed, never followed)."""
        entries = await runtime.list_files(token, session_id, path)
        return [{"name": e.name, "kind": e.kind, "size": e.size} for e in entries]

    @api.put(
        "/v1/sessions/{session_id}/files/{path:path}",
        status_code=204,
        responses=_ERRORS,
        tags=["files"],
    )
    async def put_file(token: Token, session_id: str, path: str, request: Request) -> Response:
        """Write the request body to ``path`` beneath the workdir."""
        await runtime.write_file(token, session_id, path, await request.body())
        return Response(status_code=204)

    @api.get(
        "/v1/sessions/{session_id}/files/{path:path}",
        response_class=Response,
        responses={**_ERRORS, 200: {"content": {"application/octet-stream": {}}}},
        tags=["files"],
    )
    async def get_file(token: Token, session_id: str, path: str) -> Response:
        """The bytes of a regular file beneath the workdir (capped at the policy's file size)."""
        data = await _found(runtime.read_file(token, session_id, path), path)
        return Response(data, media_type="application/octet-stream")

    @api.delete(
        "/v1/sessions/{session_id}/files/{path:path}",
        status_code=204,
        responses=_ERRORS,
        tags=["files"],
    )
    async def delete_file(token: Token, session_id: str, path: str) -> Response:
        await _found(runtime.remove_file(token, session_id, path), path)
        return Response(status_code=204)

    @api.get(
        "/v1/sessions/{session_id}/blobs/{sha256}",
        response_class=Response,
        responses={**_ERRORS, 200: {"content": {"*/*": {}}}},
        tags=["files"],
    )
    async def get_blob(token: Token, session_id: str, sha256: str) -> Response:
        """Output or an artifact that one of this session's steps referred to, by sha256,
        served as the media type the step recorded for it (stdout and stderr as text)."""
        data, media_type = await _found(runtime.read_blob(token, session_id, sha256), sha256)
        return Response(data, media_type=media_type, headers={"X-Content-Type-Options": "nosniff"})

    @api.post("/v1/check", response_model=CheckOut, responses=_MODE_ERRORS, tags=["gate"])
    async def check(token: Token, body: CheckIn) -> dict[str, Any]:
        """The static gate alone (parse, scan, estimate, decide): nothing runs."""
        gate = await runtime.check(token, body.code, policy=body.policy, mode=body.mode)
        return {
            "verdict": gate.decision.verdict.value,
            "findings": [f.to_json() for f in gate.decision.findings],
            "decision": gate.decision.to_json(),
        }


async def _event_stream(runtime: Runtime, record: SessionRecord) -> AsyncIterator[bytes]:
    # Starlette cancels this generator when the client disconnects. An open stream is no use
    # of the session: it idles out (and the stream ends with ``closed``) like any other.
    async with record.events.subscribe() as subscription:
        yield b": subscribed\n\n"
        while True:
            event = await subscription.next(timeout=runtime.config.heartbeat_seconds)
            if event is None:
                yield b": heartbeat\n\n"
                continue
            yield event.encode()
            if event.name in FINAL_EVENTS:
                return


async def _found(call: Any, name: str) -> Any:
    """A file or blob operation whose missing target is a 404, not a 400."""
    try:
        return await call
    except (ConfigurationError, FileNotFoundError) as exc:
        raise _NotFound(f"no file or blob {name} here for this session") from exc


def _run_out(session_id: str, outcome: Outcome) -> dict[str, Any]:
    result = outcome.result
    blobs = f"/v1/sessions/{session_id}/blobs"
    displays = (
        []
        if result is None
        else [
            DisplayOut(
                kind=display.kind.value,
                truncated=display.truncated,
                items=[
                    MimeItemOut(
                        media_type=item.media_type,
                        sha256=item.blob.sha256,
                        size=item.blob.size,
                        text=item.text,
                        url=f"{blobs}/{item.blob.sha256}",
                    )
                    for item in display.items
                ],
            ).model_dump()
            for display in result.displays
        ]
    )
    artifacts = (
        []
        if result is None
        else [
            ArtifactOut(
                name=a.name,
                media_type=a.media_type,
                sha256=a.blob.sha256,
                size=a.blob.size,
                url=f"{blobs}/{a.blob.sha256}",
            ).model_dump()
            for a in result.artifacts
        ]
    )
    return {
        "session_id": session_id,
        "verdict": outcome.decision.verdict.value,
        "findings": [f.to_json() for f in outcome.decision.findings],
        "status": None if result is None else result.status.value,
        "exit_code": None if result is None else result.exit_code,
        "state_lost": False if result is None else result.state_lost,
        "observation": outcome.observation.to_json(),
        "artifacts": artifacts,
        "displays": displays,
        "outcome": outcome.to_json(),
        "error": None
        if result is None or result.error is None
        else ErrorValueOut(
            name=result.error.name, value=result.error.value, traceback=result.error.traceback
        ).model_dump(),
    }


class _Unauthorized(Exception):
    pass


class _GuardedRoute(APIRoute):
    """A route whose unexpected exceptions become a 500 answer here, logged, and go no further.

    Raised on, an exception would reach Starlette's outermost handler, which answers 500 and
    then re-raises it to the server, and uvicorn closes the connection: a client's next request
    on that kept-alive connection could fail. Exceptions with their own handler pass through.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            try:
                return await handler(request)
            except Exception as exc:
                if isinstance(exc, _HANDLED):
                    raise
                _log.exception("unexpected error in %s %s", request.method, request.url.path)
                _metrics(request).failed("internal_error")
                return _internal_error(exc)

        return guarded


class _NotFound(Exception):
    pass


def _metrics(request: Request) -> ServiceMetrics:
    runtime: Runtime = request.app.state.runtime
    return runtime.metrics


def _error(status: int, error: str, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"error": error, "message": message}, status_code=status, headers=headers)


def _handlers(api: FastAPI) -> None:
    async def unauthorized(request: Request, exc: Exception) -> JSONResponse:
        _metrics(request).refused("unauthorized")
        return _error(
            401,
            "unauthorized",
            "send Authorization: Bearer <token> with a token this server issued",
            **{"WWW-Authenticate": "Bearer"},
        )

    async def not_found(_: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, SessionNotFound):
            return _error(404, "session_not_found", f"no session {exc} for this token")
        return _error(404, "not_found", str(exc))

    async def quota(request: Request, exc: Exception) -> JSONResponse:
        what = exc.what if isinstance(exc, QuotaExceeded) else "quota"
        _metrics(request).refused(f"quota_{what}")
        return _error(429, f"quota_{what}", str(exc), **{"Retry-After": "1"})

    async def bad_request(_: Request, exc: Exception) -> JSONResponse:
        return _error(400, "bad_request", str(exc))

    async def in_process_refused(request: Request, exc: Exception) -> JSONResponse:
        _metrics(request).refused("in_process_refused")
        return _error(403, "in_process_refused", str(exc))

    async def unavailable(request: Request, exc: Exception) -> JSONResponse:
        _metrics(request).failed("backend_unavailable")
        return _error(503, "backend_unavailable", str(exc))

    async def worker_crashed(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, WorkerCrashed)
        _metrics(request).failed("worker_crashed")
        body = {
            "error": "worker_crashed",
            "message": str(exc),
            "run": _run_out(exc.session_id, exc.outcome),
        }
        return JSONResponse(body, status_code=502)

    async def invalid(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return _error(422, "invalid_request", _validation_message(exc))

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            message = (
                f"no route {request.method} {request.url.path}; the routes are in /v1/openapi.json"
            )
        elif exc.status_code == 405:
            allowed = (exc.headers or {}).get("Allow", "")
            message = f"{request.method} is not allowed on {request.url.path}; use {allowed}"
        else:
            message = str(exc.detail)
        error = _HTTP_ERRORS.get(exc.status_code, "http_error")
        return _error(exc.status_code, error, message, **(exc.headers or {}))

    async def internal(request: Request, exc: Exception) -> JSONResponse:
        _log.exception("unexpected error in %s %s", request.method, request.url.path)
        return _internal_error(exc)

    api.add_exception_handler(RequestValidationError, invalid)
    api.add_exception_handler(HTTPException, http_error)
    api.add_exception_handler(Exception, internal)
    api.add_exception_handler(_Unauthorized, unauthorized)
    api.add_exception_handler(SessionNotFound, not_found)
    api.add_exception_handler(_NotFound, not_found)
    api.add_exception_handler(QuotaExceeded, quota)
    api.add_exception_handler(BadRequest, bad_request)
    api.add_exception_handler(InProcessRefused, in_process_refused)
    api.add_exception_handler(ConfigurationError, bad_request)
    api.add_exception_handler(PolicyError, bad_request)
    api.add_exception_handler(BackendUnavailable, unavailable)
    api.add_exception_handler(WorkerCrashed, worker_crashed)


_HANDLED: tuple[type[Exception], ...] = (
    HTTPException,
    RequestValidationError,
    _Unauthorized,
    SessionNotFound,
    _NotFound,
    QuotaExceeded,
    BadRequest,
    ConfigurationError,
    PolicyError,
    BackendUnavailable,
    WorkerCrashed,
)


_HTTP_ERRORS = {404: "not_found", 405: "method_not_allowed"}


def _validation_message(exc: RequestValidationError) -> str:
    """Each problem as ``where: what`` (``body.timeout: Input should be a valid number``)."""
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error.get("loc", ()))
        problems.append(f"{where}: {error.get('msg', 'invalid')}" if where else error["msg"])
    return "the request is malformed: " + "; ".join(problems)


def _internal_error(exc: Exception) -> JSONResponse:
    # The message of an InternalError is the library's own; anything else is not shown.
    message = (
        str(exc)
        if isinstance(exc, InternalError | AuditError)
        else f"internal error ({type(exc).__name__}); the server is still serving"
    )
    return _error(500, "internal_error", message)
