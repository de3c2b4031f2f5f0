"""A handler-driven backend for tests (in the style of httpx's ``MockTransport``).

Nothing is executed: each :class:`~safeexec.model.values.ExecRequest` goes to a handler that returns
a :class:`FakeReply`. The fake still behaves like a backend at its edges: output is capped at
``limits.output_bytes`` as every mode caps it (head and tail) and stored in the blob store, calls
are recorded, a closed session refuses to run, files move in and out of the workdir, and layers it
does not claim to have make ``open`` raise ``BackendUnavailable``.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

from safeexec.backends.base import OutputSink, SessionSpec
from safeexec.backends.capping import HeadTailCapture
from safeexec.backends.exec_result import output_cut
from safeexec.backends.workdir import download_file, upload_file
from safeexec.errors import BackendError, BackendUnavailable, ConfigurationError
from safeexec.model.values import (
    Artifact,
    ExecError,
    ExecRequest,
    ExecResult,
    ExecStatus,
    ExecutionEvent,
    Usage,
)

__all__ = ["FakeBackend", "FakeReply", "FakeSession", "not_executed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeReply:
    """What the handler says one run produced."""

    stdout: bytes | str = b""
    stderr: bytes | str = b""
    status: ExecStatus = ExecStatus.OK
    exit_code: int | None = 0
    events: tuple[ExecutionEvent, ...] = ()
    usage: Usage = field(default_factory=Usage)
    artifacts: Mapping[str, bytes] = field(default_factory=dict)
    message: str = ""
    state_lost: bool = False
    error: ExecError | None = None


class FakeSession:
    """A recorded session: ``requests`` in order, ``resets`` and ``interrupts`` counted, ``closed``
    once closed."""

    def __init__(self, backend: FakeBackend, opened: SessionSpec) -> None:
        self._backend = backend
        self._blobs = opened.blobs
        self.opened = opened
        self.requests: list[ExecRequest] = []
        self.resets = 0
        self.interrupts = 0
        self.closed = False

    def run(self, request: ExecRequest, *, on_output: OutputSink | None = None) -> ExecResult:
        # A handler returns its output whole: nothing to stream (Session delivers it at the end).
        if self.closed:
            raise BackendError(
                f"fake session is closed; cannot run action_id={request.action_id!r}"
            )
        self.requests.append(request)
        self._backend.calls.append(request)
        reply = self._backend.handler(request)
        # Capped the way every real mode caps a run's output (head and tail, the middle counted).
        stdout = HeadTailCapture(request.limits.output_bytes)
        stderr = HeadTailCapture(request.limits.output_bytes)
        stdout.feed(_bytes(reply.stdout))
        stderr.feed(_bytes(reply.stderr))
        usage = reply.usage
        if usage.output_bytes == 0:
            usage = replace(usage, output_bytes=stdout.total + stderr.total)
        return ExecResult(
            status=reply.status,
            exit_code=reply.exit_code,
            stdout=self._blobs.put(stdout.value()),
            stderr=self._blobs.put(stderr.value()),
            truncated=stdout.truncated or stderr.truncated,
            artifacts=tuple(
                Artifact(name=name, media_type=_media_type(name), blob=self._blobs.put(data))
                for name, data in sorted(reply.artifacts.items())
            ),
            events=reply.events,
            usage=usage,
            message=reply.message,
            state_lost=reply.state_lost,
            error=reply.error,
            stdout_cut=output_cut(stdout),
            stderr_cut=output_cut(stderr),
        )

    def reset(self) -> None:
        if self.closed:
            raise BackendError("fake session is closed; cannot reset it")
        self.resets += 1

    def interrupt(self) -> None:
        """Count the request (a fake call returns at once, so there is nothing to stop)."""
        self.interrupts += 1

    def upload(self, name: str, data: bytes) -> None:
        """Write ``data`` to ``name`` in the workdir, as the real modes do (no symlink followed)."""
        upload_file(str(self._workdir()), name, data)

    def download(self, name: str) -> bytes:
        """The bytes of regular file ``name`` in the workdir (capped by ``file_size_bytes``)."""
        return download_file(str(self._workdir()), name, self.opened.limits.file_size_bytes)

    def _workdir(self) -> Path:
        if self.closed:
            raise BackendError("fake session is closed; no workdir to transfer files with")
        assert self.opened.workdir is not None  # FakeBackend.open refuses a spec without one
        return self.opened.workdir

    def close(self) -> None:
        self.closed = True


class FakeBackend:
    """A backend whose every run is answered by ``handler``.

    ``layers`` are the confinement layers the fake claims to apply; opening with a ``require``
    outside them raises ``BackendUnavailable``, as a real backend would.
    """

    name: ClassVar[str] = "fake"

    def __init__(
        self,
        handler: Callable[[ExecRequest], FakeReply],
        *,
        layers: frozenset[str] = frozenset(),
    ) -> None:
        self.handler = handler
        self.layers = layers
        self.calls: list[ExecRequest] = []
        self.sessions: list[FakeSession] = []

    def open(self, spec: SessionSpec) -> FakeSession:
        """Record ``spec`` (as ``session.opened``); its workdir is made if it does not exist."""
        missing = spec.require - self.layers
        if missing:
            raise BackendUnavailable(
                f"fake backend cannot apply required layers {sorted(missing)}; "
                f"it claims only {sorted(self.layers)} (pass layers= to FakeBackend)"
            )
        if spec.workdir is None:
            raise ConfigurationError("the fake backend needs spec.workdir; pass a directory")
        spec.workdir.mkdir(parents=True, exist_ok=True)
        session = FakeSession(self, spec)
        self.sessions.append(session)
        return session

    def close(self) -> None:
        """Nothing to release: the fake holds no process (its sessions close themselves)."""


def not_executed(request: ExecRequest) -> FakeReply:
    """The default handler: runs nothing and says so (the ``fake`` mode of the CLI)."""
    return FakeReply(message=f"fake backend: action_id={request.action_id!r} was not executed")


def _bytes(data: bytes | str) -> bytes:
    return data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data


def _media_type(name: str) -> str:
    return mimetypes.guess_type(name)[0] or "application/octet-stream"
