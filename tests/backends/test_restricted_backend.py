"""RestrictedBackend: in the worker by default; the in-process variant and what it refuses."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import BackendSession, SessionSpec
from safeexec.backends.native import NativeBackend, NativeSession
from safeexec.backends.restricted import RestrictedBackend
from safeexec.capabilities.gateway import CapabilitySet, tool
from safeexec.errors import BackendUnavailable
from safeexec.model.values import ExecRequest, ExecStatus, Limits


def _blobs(tmp_path: Path) -> BlobStore:
    # Beside the workdir, never in it: a session must not reach the host's blobs.
    return BlobStore(tmp_path.with_name(tmp_path.name + "-blobs"))


def request(code: str, **limits: float) -> ExecRequest:
    return ExecRequest(action_id="a", code=code, limits=Limits(**limits))  # type: ignore[arg-type]


def test_the_default_runs_inside_the_confined_worker(tmp_path: Path) -> None:
    backend = RestrictedBackend()
    session = backend.open(SessionSpec(workdir=tmp_path, limits=Limits(), blobs=_blobs(tmp_path)))
    try:
        assert isinstance(session, NativeSession)
        result = session.run(request("x = 1\nx + 1"))
        assert result.status is ExecStatus.OK
    finally:
        session.close()
        backend.close()
    assert isinstance(backend._native, NativeBackend) and backend._native.executor == "restricted"


def test_in_process_refuses_required_confinement_layers(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable, match="no confinement layers"):
        RestrictedBackend(in_process=True).open(
            SessionSpec(
                workdir=tmp_path,
                limits=Limits(),
                blobs=_blobs(tmp_path),
                require=frozenset({"seccomp"}),
            )
        )


def test_in_process_session_refuses_runs_after_close(tmp_path: Path) -> None:
    session = RestrictedBackend(in_process=True).open(
        SessionSpec(workdir=tmp_path, limits=Limits(), blobs=_blobs(tmp_path))
    )
    session.close()
    session.close()  # idempotent
    with pytest.raises(BackendUnavailable):
        session.run(request("1"))


def test_in_process_memory_growth_is_a_limit_of_the_session(tmp_path: Path) -> None:
    # memory_bytes is a session limit in every mode (the worker's rlimit); a request's is unread.
    session = RestrictedBackend(in_process=True).open(
        SessionSpec(
            workdir=tmp_path,
            limits=Limits(memory_bytes=64 * 1024 * 1024),
            blobs=_blobs(tmp_path),
        )
    )
    try:
        code = "chunks = []\nwhile True:\n    chunks.append(bytearray(1 << 20))"
        result = session.run(request(code, memory_bytes=1 << 40, wall_seconds=60.0))
        assert result.status is ExecStatus.LIMIT_EXCEEDED, result.message
        assert any(e.kind == "limit_hit" and e.limit == "memory_bytes" for e in result.events)
        session.run(request("del chunks"))
        assert session.run(request("'alive'")).status is ExecStatus.OK
    finally:
        session.close()


def test_in_process_reset_keeps_tools_and_tool_calls_stop_with_the_run(tmp_path: Path) -> None:
    @tool
    def ping() -> str:
        return "pong"

    caps = CapabilitySet()
    caps.grant(ping)
    session = RestrictedBackend(in_process=True).open(
        SessionSpec(workdir=tmp_path, limits=Limits(), blobs=_blobs(tmp_path), tools=caps)
    )
    try:
        session.run(request("x = 1"))
        session.reset()
        result = session.run(request("ping()"))
        assert result.status is ExecStatus.OK and result.usage.tool_calls == 1
        stopped = session.run(request("while True:\n    pass", cpu_seconds=0.2))
        assert stopped.status is ExecStatus.TIMEOUT
        late = session.run(request("def f():\n    return ping()\nf()"))
        assert late.status is ExecStatus.OK  # a fresh run has a fresh budget
    finally:
        session.close()


def test_in_process_sleep_ends_at_the_wall_limit(tmp_path: Path) -> None:
    session = RestrictedBackend(in_process=True).open(
        SessionSpec(workdir=tmp_path, limits=Limits(), blobs=_blobs(tmp_path), imports=("time",))
    )
    try:
        result = session.run(request("import time\ntime.sleep(3600)", wall_seconds=0.3))
        assert result.status is ExecStatus.TIMEOUT and "wall timeout" in result.message
    finally:
        session.close()


def _interrupt_until_done(session: BackendSession, done: threading.Event) -> threading.Thread:
    def keep_interrupting() -> None:
        while not done.wait(0.01):
            session.interrupt()  # a no-op until the call runs

    thread = threading.Thread(target=keep_interrupting)
    thread.start()
    return thread


def test_in_process_interrupt_stops_the_cell_and_keeps_state(tmp_path: Path) -> None:
    blobs = BlobStore(tmp_path / ".b")
    session = RestrictedBackend(in_process=True).open(SessionSpec(workdir=tmp_path, blobs=blobs))
    try:
        session.run(request("x = 41"))
        done = threading.Event()
        thread = _interrupt_until_done(session, done)
        try:
            result = session.run(request("for i in range(10**10):\n    pass", wall_seconds=60))
        finally:
            done.set()
            thread.join()
        assert result.status is ExecStatus.INTERRUPTED
        assert result.message == "interrupted by the host; session state kept"
        after = session.run(request("x + 1"))
        assert blobs.get(after.stdout) == b"42\n"
    finally:
        session.close()


def test_a_restricted_cell_in_the_worker_is_interrupted_at_its_time_limit(tmp_path: Path) -> None:
    backend = RestrictedBackend()
    (tmp_path / "work").mkdir()
    spec = SessionSpec(workdir=tmp_path / "work", blobs=BlobStore(tmp_path / ".b"))
    session = backend.open(spec)
    try:
        session.run(request("x = 41"))
        result = session.run(request("for i in range(10**10):\n    pass", wall_seconds=0.5))
        assert (result.status, result.state_lost) == (ExecStatus.TIMEOUT, False)
        assert "interrupted, state kept" in result.message
        assert session.run(request("x + 1")).status is ExecStatus.OK
    finally:
        session.close()
        backend.close()
