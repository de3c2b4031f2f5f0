"""The backend sessions a Session keeps: one per mode, opened once, discarded on demand."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.fake import FakeBackend, not_executed
from safeexec.errors import BackendUnavailable
from safeexec.session.pool import BackendPool


def _no_default(mode: str) -> FakeBackend:
    raise AssertionError(f"mode={mode!r} was made, not taken from the given backends")


def _spec(tmp_path: Path) -> SessionSpec:
    return SessionSpec(blobs=BlobStore(tmp_path / "blobs"), workdir=tmp_path / "work")


def test_a_mode_is_opened_once_and_kept(tmp_path: Path) -> None:
    fake = FakeBackend(not_executed)
    pool = BackendPool(make=_no_default, backends={"fake": fake})
    first = pool.session("fake", lambda: _spec(tmp_path))
    assert pool.session("fake", lambda: pytest.fail("a kept session is not opened again"))
    assert first is pool.session("fake", lambda: _spec(tmp_path))
    assert len(fake.sessions) == 1
    assert pool.open_modes == ("fake",)


def test_a_discarded_mode_is_closed_and_opened_afresh(tmp_path: Path) -> None:
    fake = FakeBackend(not_executed)
    pool = BackendPool(make=_no_default, backends={"fake": fake})
    first = pool.session("fake", lambda: _spec(tmp_path))
    pool.discard("fake")
    assert fake.sessions[0].closed and pool.open_modes == ()
    assert pool.session("fake", lambda: _spec(tmp_path)) is not first


def test_a_mode_missing_from_the_given_backends_is_unavailable(tmp_path: Path) -> None:
    pool = BackendPool(make=_no_default, backends={"fake": FakeBackend(not_executed)})
    with pytest.raises(BackendUnavailable, match="mode='native'"):
        pool.session("native", lambda: _spec(tmp_path))


def test_close_closes_its_backend_sessions_but_no_backend(tmp_path: Path) -> None:
    closed: list[str] = []

    class ClosingFake(FakeBackend):
        def close(self) -> None:
            closed.append("made")

    given = ClosingFake(not_executed)
    callers = BackendPool(make=_no_default, backends={"fake": given})
    callers.session("fake", lambda: _spec(tmp_path))
    assert callers.close() == [] and given.sessions[0].closed and closed == []
    made = ClosingFake(not_executed)
    pool = BackendPool(None, make=lambda mode: made)
    pool.session("fake", lambda: _spec(tmp_path))
    assert pool.close() == []
    # A backend from make belongs to whoever made it (the shared set): only its session closes.
    assert closed == [] and made.sessions[0].closed and pool.open_modes == ()
    assert pool.for_files(None) is None
