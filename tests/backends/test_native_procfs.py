"""What the host reads of a session's processes: whether a worker is pid 1 of its namespace."""

from __future__ import annotations

import os
from pathlib import Path

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.backends.native.procfs import is_pid_one_of_own_namespace
from safeexec.model.values import Limits


def _status_fd(pid: int) -> int:
    return os.open(f"/proc/{pid}/status", os.O_RDONLY | os.O_CLOEXEC)


def test_a_worker_is_pid_one_of_its_own_namespace_and_the_host_is_not(tmp_path: Path) -> None:
    own = _status_fd(os.getpid())
    try:
        assert not is_pid_one_of_own_namespace(own)
    finally:
        os.close(own)
    backend = NativeBackend(pool_size=1)
    try:
        with backend.open(SessionSpec(limits=Limits(), blobs=BlobStore(tmp_path / "b"))) as one:
            assert one.pid is not None
            fd = _status_fd(one.pid)
            try:
                assert is_pid_one_of_own_namespace(fd)
            finally:
                os.close(fd)
    finally:
        backend.close()
