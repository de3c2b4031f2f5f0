"""``Session.files``: the host's view of a session's workdir (write, read, list, remove).

Every name is relative and beneath the workdir; nothing is followed through a symlink (the
same walks as artifacts use, in ``backends/workdir.py``). While a sandbox runs, writes go through
its backend session so that the file is the session's to read and write.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from safeexec.backends.base import BackendSession
from safeexec.backends.workdir import (
    DirEntry,
    download_file,
    list_beneath,
    remove_beneath,
    upload_file,
)
from safeexec.errors import ConfigurationError

__all__ = ["DirEntry", "WorkdirFiles"]


class WorkdirFiles:
    """Files beneath one session's workdir; bad names and missing files raise
    ``ConfigurationError``. ``max_read_bytes`` caps :meth:`read` (the policy's file size)."""

    def __init__(
        self,
        workdir: Path,
        *,
        max_read_bytes: int,
        running: Callable[[], BackendSession | None],
    ) -> None:
        self._workdir = workdir
        self._max_read_bytes = max_read_bytes
        self._running = running

    def write(self, path: str, data: bytes | str) -> None:
        """Write ``data`` (``str`` as UTF-8) to ``path``, making directories on the way."""
        body = data.encode("utf-8") if isinstance(data, str) else data
        if not isinstance(body, bytes):
            raise ConfigurationError(
                f"data must be bytes or str, got {type(data).__name__}; encode it first"
            )
        session = self._running()
        if session is not None:
            session.upload(path, body)
            return
        self._workdir.mkdir(parents=True, exist_ok=True)
        upload_file(str(self._workdir), path, body)

    def read(self, path: str) -> bytes:
        """The bytes of regular file ``path`` (at most the policy's ``file_size_bytes``)."""
        return download_file(str(self._workdir), path, self._max_read_bytes)

    def list(self, path: str = ".") -> tuple[DirEntry, ...]:
        """The entries of directory ``path``, sorted by name (links listed, not followed)."""
        if not self._workdir.is_dir():
            return ()
        return list_beneath(str(self._workdir), path)

    def remove(self, path: str) -> None:
        """Remove file or directory ``path`` (a symlink itself, never its target)."""
        remove_beneath(str(self._workdir), path)
