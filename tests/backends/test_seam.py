"""The backend seam: one frozen spec to open with, one place saying which limits bind what."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import CALL_LIMITS, SESSION_LIMITS, Backend, SessionSpec
from safeexec.backends.dsl import DslBackend, DslSession
from safeexec.backends.fake import FakeBackend
from safeexec.backends.native import NativeBackend, NativeSession
from safeexec.backends.restricted import InProcessRestrictedSession, RestrictedBackend
from safeexec.model.values import Limits


def test_every_limit_binds_either_the_session_or_the_call() -> None:
    fields = {f.name for f in dataclasses.fields(Limits)}
    assert fields == SESSION_LIMITS | CALL_LIMITS
    # cpu_seconds is a call limit; the session's only sizes the worker's lifetime backstop.
    assert not SESSION_LIMITS & CALL_LIMITS


def test_the_spec_is_one_frozen_value(tmp_path: Path) -> None:
    spec = SessionSpec(blobs=BlobStore(tmp_path))
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.workdir = tmp_path  # type: ignore[misc]
    assert spec.limits == Limits() and spec.workdir is None and spec.env == {}


@pytest.mark.parametrize("backend", [NativeBackend, RestrictedBackend, DslBackend, FakeBackend])
def test_every_backend_opens_with_the_spec_alone_and_can_close(backend: type[Backend]) -> None:
    params = list(inspect.signature(backend.open).parameters.values())
    assert [p.name for p in params] == ["self", "spec"]
    assert callable(backend.close)


@pytest.mark.parametrize(
    "kind",
    [
        NativeBackend, NativeSession, RestrictedBackend, InProcessRestrictedSession, DslBackend,
        DslSession,
    ],
)  # fmt: skip
def test_no_async_twins_beside_the_sync_api(kind: type) -> None:
    names = set(dir(kind))
    assert not [n for n in names if n.startswith("a") and n[1:] in names and n[1:] != ""]
