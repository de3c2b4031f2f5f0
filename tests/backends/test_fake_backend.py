"""The fake backend: replies come from the handler, output is capped and stored, calls recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import Backend, BackendSession, SessionSpec
from safeexec.backends.fake import FakeBackend, FakeReply, FakeSession, not_executed
from safeexec.errors import BackendError, BackendUnavailable, ConfigurationError
from safeexec.model.values import ExecRequest, ExecStatus, LimitHit, Limits, Usage


def _open(backend: FakeBackend, tmp_path: Path, **options: object) -> FakeSession:
    spec = SessionSpec(
        workdir=tmp_path / "work", limits=Limits(), blobs=BlobStore(tmp_path / "blobs"), **options
    )  # type: ignore[arg-type]
    return backend.open(spec)


def test_the_fake_satisfies_the_backend_protocols(tmp_path: Path) -> None:
    backend: Backend = FakeBackend(not_executed)
    session: BackendSession = _open(backend, tmp_path)  # type: ignore[arg-type]
    assert backend.name == "fake"
    assert session is not None


def test_run_returns_the_handlers_reply_with_output_in_the_blob_store(tmp_path: Path) -> None:
    seen: list[ExecRequest] = []

    def handler(request: ExecRequest) -> FakeReply:
        seen.append(request)
        return FakeReply(
            stdout="42\n",
            stderr=b"warn\n",
            status=ExecStatus.ERROR,
            exit_code=1,
            events=(LimitHit(limit="cpu_seconds", value=1.0),),
            usage=Usage(cpu_seconds=0.5),
            artifacts={"plot.png": b"\x89PNG", "data.bin": b"\x00"},
            message="boom",
        )

    backend = FakeBackend(handler)
    blobs = BlobStore(tmp_path / "blobs")
    session = backend.open(SessionSpec(workdir=tmp_path / "work", limits=Limits(), blobs=blobs))
    request = ExecRequest(action_id="a-1", code="print(42)")
    result = session.run(request)
    assert seen == [request] == backend.calls == session.requests
    assert (result.status, result.exit_code, result.message) == (ExecStatus.ERROR, 1, "boom")
    assert blobs.get(result.stdout) == b"42\n"
    assert blobs.get(result.stderr) == b"warn\n"
    assert [(a.name, a.media_type) for a in result.artifacts] == [
        ("data.bin", "application/octet-stream"),
        ("plot.png", "image/png"),
    ]
    assert blobs.get(result.artifacts[1].blob) == b"\x89PNG"
    assert result.usage == Usage(cpu_seconds=0.5, output_bytes=8)
    assert result.events == (LimitHit(limit="cpu_seconds", value=1.0),)
    assert not result.truncated


def test_output_is_capped_head_and_tail_at_the_requests_output_limit(tmp_path: Path) -> None:
    backend = FakeBackend(lambda request: FakeReply(stdout="x" * 100))
    blobs = BlobStore(tmp_path / "blobs")
    session = backend.open(SessionSpec(workdir=tmp_path / "w", limits=Limits(), blobs=blobs))
    result = session.run(ExecRequest(action_id="a", code="", limits=Limits(output_bytes=10)))
    assert result.truncated
    assert blobs.get(result.stdout) == b"xxxxx\n[... 90 bytes omitted ...]\nxxxxx"
    assert result.usage.output_bytes == 100


def test_open_records_its_arguments_and_creates_the_workdir(tmp_path: Path) -> None:
    backend = FakeBackend(not_executed, layers=frozenset({"rlimits"}))
    session = _open(
        backend, tmp_path, require=frozenset({"rlimits"}), imports=("math",), env={"LANG": "C"}
    )
    assert backend.sessions == [session]
    assert session.opened.workdir.is_dir()
    assert session.opened.require == frozenset({"rlimits"})
    assert session.opened.imports == ("math",)
    assert session.opened.env == {"LANG": "C"}
    assert session.opened.tools is None


def test_requiring_a_layer_the_fake_lacks_is_unavailable(tmp_path: Path) -> None:
    backend = FakeBackend(not_executed)
    with pytest.raises(BackendUnavailable, match=r"\['seccomp'\]"):
        _open(backend, tmp_path, require=frozenset({"seccomp"}))
    assert backend.sessions == []


def test_reset_is_counted_and_a_closed_session_refuses_work(tmp_path: Path) -> None:
    session = _open(FakeBackend(not_executed), tmp_path)
    session.reset()
    session.reset()
    assert session.resets == 2
    session.close()
    session.close()
    assert session.closed
    with pytest.raises(BackendError, match="closed"):
        session.run(ExecRequest(action_id="a", code=""))
    with pytest.raises(BackendError, match="closed"):
        session.reset()


def test_the_default_handler_runs_nothing_and_says_so(tmp_path: Path) -> None:
    session = _open(FakeBackend(not_executed), tmp_path)
    result = session.run(ExecRequest(action_id="a-9", code="print(1)"))
    assert result.status is ExecStatus.OK
    assert "a-9" in result.message and "not executed" in result.message
    assert result.stdout.size == 0


def test_handler_exceptions_propagate_to_the_caller(tmp_path: Path) -> None:
    def broken(request: ExecRequest) -> FakeReply:
        raise RuntimeError("handler bug")

    session = _open(FakeBackend(broken), tmp_path)
    with pytest.raises(RuntimeError, match="handler bug"):
        session.run(ExecRequest(action_id="a", code=""))


def test_the_fake_moves_files_like_the_real_modes(tmp_path: Path) -> None:
    session = _open(FakeBackend(not_executed), tmp_path)
    session.upload("in/data.txt", b"payload")
    assert session.download("in/data.txt") == b"payload"
    with pytest.raises(ConfigurationError):
        session.upload("../escape.txt", b"x")
    session.close()
    with pytest.raises(BackendError):
        session.download("in/data.txt")


def test_the_fake_needs_a_workdir(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"spec\.workdir"):
        FakeBackend(not_executed).open(SessionSpec(blobs=BlobStore(tmp_path)))
