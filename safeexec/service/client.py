"""``Client``: a session on a safeexec service, with ``Session``'s face (the ``httpx`` client).

Code written against the library moves to the service by changing one line::

    with Session(policy="default") as session:                                  # in-process
    with Client("http://127.0.0.1:8000", token=TOKEN, policy="default") as session:  # service

``run`` returns the same :class:`~safeexec.model.values.Outcome` (rebuilt from its JSON) and
takes ``on_output`` (the cell's output while it runs, from the session's event stream);
``arun`` and ``stream`` are its asyncio forms, as on ``Session``; ``budget`` is what is left;
``files`` writes, reads, lists and removes workdir files; ``interrupt`` stops the running cell
from any thread. ``Session.grant`` has no counterpart: a tool is a host callable, and the
service's host is the server. With several replicas, pass ``{replica_id: url}``: a new
session goes to one of them (``replica=`` picks), and every later request follows the replica
named in the session id — the same affinity a load balancer gives. HTTP errors come back as
the library's exceptions: 500 ``InternalError``, 503 ``BackendUnavailable``, anything else
``ServiceError``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from types import TracebackType
from typing import Self

import httpx

from safeexec.backends.workdir import DirEntry
from safeexec.errors import BackendUnavailable, ConfigurationError, InternalError, SafeExecError
from safeexec.model.codec import JSONValue
from safeexec.model.values import BlobRef, Budget, Decision, Outcome, OutputChunk, StreamName
from safeexec.session.steps import settle_abandoned

__all__ = ["Client", "RemoteFiles", "ServiceError", "replica_of"]

WORKER_CRASHED_STATUS = 502
"""The service's answer to a run whose worker died mid-run (its body's ``run`` is the step)."""
CLIENT_KEEPALIVE_SECONDS = 4.0
"""How long the client keeps an idle connection (under every server's keep-alive)."""


class ServiceError(SafeExecError):
    """The service refused a request: ``status`` (401, 404, 413, 429, ...) and its ``error``."""

    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(f"HTTP {status} {error}: {message}")
        self.status = status
        self.error = error


def replica_of(session_id: str) -> str:
    """The replica id a session id names (its part before the last ``-``)."""
    replica, sep, _ = session_id.rpartition("-")
    if not sep or not replica:
        raise ConfigurationError(
            f"session_id={session_id!r} names no replica; expected '<replica>-<hex>'"
        )
    return replica


class Client:
    """One session on a service (created, or attached to with ``session_id=``); a context
    manager whose exit deletes the session it created."""

    def __init__(
        self,
        url: str | Mapping[str, str],
        *,
        token: str,
        policy: str | None = None,
        mode: str | None = None,
        limits: Mapping[str, float] | None = None,
        replica: str | None = None,
        session_id: str | None = None,
        timeout: float = 600.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._urls = dict(url) if isinstance(url, Mapping) else None
        self._http = httpx.Client(
            base_url="" if isinstance(url, Mapping) else url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
            # An idle connection is dropped before any server at its default (ours 75 s,
            # uvicorn's 5 s) closes it: a request never goes where the server is hanging up.
            limits=httpx.Limits(keepalive_expiry=CLIENT_KEEPALIVE_SECONDS),
            transport=transport,
        )
        self._owned = session_id is None
        self._policy = policy
        try:
            if session_id is None:
                body: dict[str, JSONValue] = {}
                if policy is not None:
                    body["policy"] = policy
                if mode is not None:
                    body["mode"] = mode
                if limits is not None:
                    body["limits"] = dict(limits)
                base = self._url_for_new(replica)
                described = self._json("POST", f"{base}/v1/sessions", json=body)
                session_id = str(described["session_id"])
            self.session_id = session_id
            self._base = self._url_for(session_id)
            described = self._json("GET", f"{self._base}/v1/sessions/{session_id}")
        except BaseException:
            self._http.close()
            raise
        self.policy_id = str(described["policy_id"])
        self.mode = str(described["mode"])
        self.files = RemoteFiles(self)
        """Write, read, list and remove files beneath the session's workdir."""

    # -- Session's face ----------------------------------------------------------------------

    def run(
        self,
        text: str,
        *,
        timeout: float | None = None,
        on_output: Callable[[OutputChunk], None] | None = None,
    ) -> Outcome:
        """Run the code in one model reply (one step), as :meth:`Session.run`.

        ``on_output`` receives the session's output while the run is in flight (from
        ``GET .../events``, subscribed before the run is sent), on a thread of this client;
        every chunk comes before ``run`` returns. Runs of one session take turns, so the chunks
        are this run's unless another client attached to the same session runs meanwhile."""
        return self._run({"reply": text, "timeout": timeout}, on_output)

    def run_code(
        self,
        code: str,
        *,
        timeout: float | None = None,
        on_output: Callable[[OutputChunk], None] | None = None,
    ) -> Outcome:
        """Run ``code`` as it is (one step), as ``Session.run_action(Action.create(code))``."""
        return self._run({"code": code, "timeout": timeout}, on_output)

    async def arun(
        self,
        text: str,
        *,
        timeout: float | None = None,
        on_output: Callable[[OutputChunk], None] | None = None,
    ) -> Outcome:
        """:meth:`run` in a worker thread, for asyncio harnesses; cancelling it interrupts the
        cell and waits until the step is recorded, as :meth:`Session.arun` does."""
        step = asyncio.ensure_future(
            asyncio.to_thread(self.run, text, timeout=timeout, on_output=on_output)
        )
        try:
            return await asyncio.shield(step)
        except asyncio.CancelledError:
            await settle_abandoned(step, self.interrupt)
            raise

    async def stream(
        self, text: str, *, timeout: float | None = None
    ) -> AsyncIterator[OutputChunk | Outcome]:
        """:meth:`run` as an async iterator: the output chunks while the cell runs, then the
        :class:`~safeexec.model.values.Outcome` (last), as :meth:`Session.stream`."""
        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue[OutputChunk | None] = asyncio.Queue()

        def deliver(chunk: OutputChunk) -> None:
            loop.call_soon_threadsafe(chunks.put_nowait, chunk)

        step = asyncio.ensure_future(
            asyncio.to_thread(self.run, text, timeout=timeout, on_output=deliver)
        )
        step.add_done_callback(lambda _done: chunks.put_nowait(None))
        try:
            while (chunk := await chunks.get()) is not None:
                yield chunk
            yield step.result()
        finally:
            if not step.done():
                await settle_abandoned(step, self.interrupt)

    @property
    def budget(self) -> Budget:
        """What is left of the session's steps, CPU seconds and tool calls (asked now)."""
        described = self._json("GET", self._path(""))["budget"]
        if not isinstance(described, dict):
            raise InternalError("the service described a session without its budget")
        return Budget(
            steps_left=int(str(described["steps_left"])),
            cpu_seconds_left=float(str(described["cpu_seconds_left"])),
            tool_calls_left=int(str(described["tool_calls_left"])),
        )

    def interrupt(self) -> None:
        """Interrupt the session's running cell; a no-op when none runs."""
        self._json("POST", self._path("/interrupt"))

    def check(self, code: str) -> Decision:
        """The static gate alone under the session's policy: nothing runs."""
        body: dict[str, JSONValue] = {"code": code, "policy": self._policy, "mode": self.mode}
        return Decision.from_json(
            self._json("POST", f"{self._base}/v1/check", json=body)["decision"]
        )

    def blob(self, ref: BlobRef) -> bytes:
        """The bytes of output or an artifact one of this session's steps referred to."""
        return self._bytes("GET", self._path(f"/blobs/{ref.sha256}"))

    def close(self) -> None:
        """Delete the session if this client created it (its processes are killed)."""
        try:
            if self._owned:
                self._owned = False
                self._bytes("DELETE", self._path(""))
        finally:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- the wire ------------------------------------------------------------------------------

    def _run(
        self, body: dict[str, JSONValue], on_output: Callable[[OutputChunk], None] | None
    ) -> Outcome:
        # A worker that died mid-run is a 502 whose body still holds the recorded step: the
        # outcome Session.run would have returned (status killed, state lost on the next run).
        if on_output is None:
            response = self._send("POST", self._path("/run"), {"json": body}, crashed_ok=True)
        else:
            with _OutputRelay(self, on_output) as relay:
                response = self._send("POST", self._path("/run"), {"json": body}, crashed_ok=True)
                relay.until_step(response.headers.get("x-request-id", ""))
        reply = response.json()
        run = reply.get("run") if response.status_code == WORKER_CRASHED_STATUS else reply
        if not isinstance(run, dict):
            raise InternalError(f"the service answered a run with {type(run).__name__}")
        return Outcome.from_json(run["outcome"])

    def _path(self, tail: str) -> str:
        return f"{self._base}/v1/sessions/{self.session_id}{tail}"

    def _url_for_new(self, replica: str | None) -> str:
        if self._urls is None:
            return ""
        chosen = replica if replica is not None else secrets.choice(sorted(self._urls))
        if chosen not in self._urls:
            raise ConfigurationError(f"replica={chosen!r} is not one of {sorted(self._urls)}")
        return self._urls[chosen].rstrip("/")

    def _url_for(self, session_id: str) -> str:
        if self._urls is None:
            return ""
        replica = replica_of(session_id)
        if replica not in self._urls:
            raise ConfigurationError(
                f"session_id={session_id!r} lives on replica {replica!r}, which is not one of "
                f"{sorted(self._urls)}; pass its url"
            )
        return self._urls[replica].rstrip("/")

    def _send(
        self,
        method: str,
        url: str,
        options: Mapping[str, object] | None = None,
        *,
        crashed_ok: bool = False,
    ) -> httpx.Response:
        response = self._http.request(method, url, **(options or {}))  # type: ignore[arg-type]
        if response.is_success:
            return response
        try:
            body = response.json()
            error, message = str(body["error"]), str(body["message"])
        except (ValueError, KeyError, TypeError):
            error, message = "http_error", response.text[:500]
        if (
            crashed_ok
            and response.status_code == WORKER_CRASHED_STATUS
            and error == "worker_crashed"
        ):
            return response
        if response.status_code == 500:
            raise InternalError(f"the service failed: {message}")
        if response.status_code == 503:
            raise BackendUnavailable(message)
        raise ServiceError(response.status_code, error, message)

    def _json(self, method: str, url: str, **options: object) -> dict[str, JSONValue]:
        data = self._send(method, url, options).json()
        if not isinstance(data, dict):
            raise InternalError(f"the service answered {method} {url} with {type(data).__name__}")
        return data

    def _bytes(self, method: str, url: str, **options: object) -> bytes:
        return self._send(method, url, options).content


class RemoteFiles:
    """``Session.files`` over HTTP: names relative to the workdir, nothing followed."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def write(self, path: str, data: bytes | str) -> None:
        body = data.encode("utf-8") if isinstance(data, str) else data
        self._client._bytes("PUT", self._client._path(f"/files/{path}"), content=body)

    def read(self, path: str) -> bytes:
        return self._client._bytes("GET", self._client._path(f"/files/{path}"))

    def list(self, path: str = ".") -> tuple[DirEntry, ...]:
        """The entries of directory ``path``, sorted by name (links listed, not followed)."""
        entries = self._client._send(
            "GET", self._client._path("/files"), {"params": {"path": path}}
        ).json()
        return tuple(
            DirEntry(name=str(e["name"]), kind=str(e["kind"]), size=int(e["size"])) for e in entries
        )

    def remove(self, path: str) -> None:
        self._client._bytes("DELETE", self._client._path(f"/files/{path}"))


class _OutputRelay:
    """The session's ``output`` events, passed to ``on_output`` from a thread while a run is in
    flight: subscribed on entry (so no chunk of the run is missed), ended on exit."""

    def __init__(self, client: Client, on_output: Callable[[OutputChunk], None]) -> None:
        self._client = client
        self._on_output = on_output
        self._subscribed = threading.Event()
        self._ended: set[str] = set()
        self._step_seen = threading.Condition()
        self._response: httpx.Response | None = None
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._read, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        if not self._subscribed.wait(self._client._http.timeout.read or 60.0):
            raise InternalError("the service's event stream did not open")
        if self._failure is not None:
            raise self._failure
        return self

    def until_step(self, run_id: str) -> None:
        """Wait (bounded) until the ``step`` event of ``run_id`` came: every chunk of that run
        was delivered before it."""
        with self._step_seen:
            self._step_seen.wait_for(
                lambda: run_id in self._ended or not self._thread.is_alive(),
                timeout=_STEP_EVENT_SECONDS,
            )

    def __exit__(self, *_exc: object) -> None:
        response = self._response
        if response is not None:
            response.close()  # ends the reader's iteration
        self._thread.join(_STEP_EVENT_SECONDS)
        if self._failure is not None and not isinstance(self._failure, httpx.HTTPError):
            raise self._failure  # on_output raised: as Session.run, after the step

    def _read(self) -> None:
        try:
            with self._client._http.stream(
                "GET",
                self._client._path("/events"),
                timeout=httpx.Timeout(self._client._http.timeout.connect, read=None),
            ) as response:
                self._response = response
                if not response.is_success:
                    response.read()
                    self._failure = ServiceError(
                        response.status_code, "events_refused", response.text[:500]
                    )
                    return
                name = None
                for line in response.iter_lines():
                    if line == ": subscribed":
                        self._subscribed.set()
                    elif line.startswith("event: "):
                        name = line.removeprefix("event: ")
                    elif line.startswith("data: ") and name is not None:
                        self._event(name, json.loads(line.removeprefix("data: ")))
                        name = None
        except BaseException as exc:  # reported to the caller (a closed stream is no failure)
            self._failure = exc
        finally:
            self._subscribed.set()
            with self._step_seen:
                self._step_seen.notify_all()

    def _event(self, name: str, data: dict[str, str]) -> None:
        if name == "output":
            self._on_output(OutputChunk(stream=StreamName(data["stream"]), text=data["text"]))
        elif name == "step":
            with self._step_seen:
                self._ended.add(data["run_id"])
                self._step_seen.notify_all()


_STEP_EVENT_SECONDS = 30.0
"""How long a finished run waits for its ``step`` event (it is published as the run ends)."""
