"""``Client``: a session on a safeexec service, with ``Session``'s face (the ``httpx`` client).

Code written against the library moves to the service by changing one line::

    with Session(policy="default") as session:                                  # in-process
    with Client("http://127.0.0.1:8000", token=TOKEN, policy="default") as session:  # service

``run`` returns the same :class:`~safeexec.model.values.Outcome` (rebuilt from its JSON), ``files``
writes, reads, lists and removes workdir files, ``interrupt`` stops the running cell from any
thread. With several replicas, pass ``{replica_id: url}``: a new session goes to one of them
(``replica=`` picks), and every later request follows the replica named in the session id —
the same affinity a load balancer gives. HTTP errors come back as the library's exceptions:
500 ``InternalError``, 503 ``BackendUnavailable``, anything else ``ServiceError``.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from types import TracebackType
from typing import Self

import httpx

from safeexec.backends.workdir import DirEntry
from safeexec.errors import BackendUnavailable, ConfigurationError, InternalError, SafeExecError
from safeexec.model.codec import JSONValue
from safeexec.model.values import BlobRef, Decision, Outcome

__all__ = ["Client", "RemoteFiles", "ServiceError", "replica_of"]

WORKER_CRASHED_STATUS = 502
"""The service's answer to a run whose worker died mid-run (its body's ``run`` is the step)."""


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

    def run(self, text: str, *, timeout: float | None = None) -> Outcome:
        """Run the code in one model reply (one step), as :meth:`Session.run`."""
        return self._run({"reply": text, "timeout": timeout})

    def run_code(self, code: str, *, timeout: float | None = None) -> Outcome:
        """Run ``code`` as it is (one step), as ``Session.run_action(Action.create(code))``."""
        return self._run({"code": code, "timeout": timeout})

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

    def _run(self, body: dict[str, JSONValue]) -> Outcome:
        # A worker that died mid-run is a 502 whose body still holds the recorded step: the
        # outcome Session.run would have returned (status killed, state lost on the next run).
        response = self._send("POST", self._path("/run"), {"json": body}, crashed_ok=True)
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
