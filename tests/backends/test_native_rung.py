"""A native session reports its rung; a spec that requires one it cannot reach is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.errors import BackendUnavailable, ConfigurationError
from safeexec.sandbox.ladder import RUNG_LAYERS, Rung, rung_of


def test_an_unknown_rung_is_a_configuration_error(tmp_path: Path) -> None:
    backend = NativeBackend(pool_size=0)
    try:
        with pytest.raises(ConfigurationError, match=r"rung='fulll'.*'full', 'container'"):
            backend.open(SessionSpec(blobs=BlobStore(tmp_path), rung="fulll"))
    finally:
        backend.close()


def test_a_session_reports_the_rung_of_its_layers_and_meets_it(tmp_path: Path) -> None:
    backend = NativeBackend(pool_size=0)
    try:
        with backend.open(SessionSpec(blobs=BlobStore(tmp_path))) as session:
            rung = session.rung
            assert rung is not None and rung is rung_of(session.layers)
        with backend.open(SessionSpec(blobs=BlobStore(tmp_path), rung=rung.value)) as session:
            assert session.rung is rung
    finally:
        backend.close()


def test_a_required_layer_the_host_lacks_is_one_line_naming_it_and_the_fix(
    tmp_path: Path,
) -> None:
    backend = NativeBackend(pool_size=0)
    try:
        supported = backend.supported
        absent = [layer for layer in RUNG_LAYERS[Rung.FULL] if not supported[layer].active]
        if not absent:
            pytest.skip("this machine gives the full rung: nothing to refuse")
        with pytest.raises(BackendUnavailable) as info:
            backend.open(SessionSpec(blobs=BlobStore(tmp_path), rung="full"))
        message = str(info.value)
        assert "\n" not in message and "Traceback" not in message
        assert absent[0].value in message and "to get it:" in message
    finally:
        backend.close()
