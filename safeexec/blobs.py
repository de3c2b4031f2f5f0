"""A content-addressed, write-once blob store on disk.

Full stdout, stderr and artifacts live here; the audit log and observations hold
``blob://sha256:<hex>`` references. Blobs are written to a temporary file, fsynced when asked,
and renamed into place, so a reader never sees a partial blob.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from safeexec.errors import AuditError, ConfigurationError
from safeexec.model import BlobRef

__all__ = ["BlobStore"]

_URI = re.compile(r"^blob://sha256:([0-9a-f]{64})$")
_HEX64 = re.compile(r"[0-9a-f]{64}")


class BlobStore:
    """Stores bytes under their sha256; ``put`` is idempotent and ``get`` verifies the hash."""

    def __init__(self, root: Path, *, fsync: bool = False) -> None:
        self.root = Path(root)
        self.fsync = fsync
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot create blob store root={str(root)!r}: {exc.strerror}; "
                "pass a writable directory"
            ) from exc

    def _path(self, sha256: str) -> Path:
        return self.root / sha256[:2] / sha256

    def put(self, data: bytes) -> BlobRef:
        """Store ``data`` (once) and return its reference."""
        digest = hashlib.sha256(data).hexdigest()
        path = self._path(digest)
        if not path.exists():
            try:
                path.parent.mkdir(exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
                try:
                    with os.fdopen(fd, "wb") as fh:
                        fh.write(data)
                        if self.fsync:
                            fh.flush()
                            os.fsync(fh.fileno())
                    os.replace(tmp, path)
                    if self.fsync:
                        _fsync_directory(path.parent)
                except BaseException:
                    Path(tmp).unlink(missing_ok=True)
                    raise
            except OSError as exc:
                raise AuditError(f"cannot write blob sha256={digest!r}: {exc}") from exc
        return BlobRef(sha256=digest, size=len(data))

    def put_file(self, source: Path) -> BlobRef:
        """Store the contents of a regular file (the caller has already checked what it is)."""
        return self.put(Path(source).read_bytes())

    def get(self, ref: BlobRef | str) -> bytes:
        """Return the bytes behind a reference or ``blob://`` URI; ``KeyError`` when absent."""
        digest = _digest(ref)
        try:
            data = self._path(digest).read_bytes()
        except FileNotFoundError:
            raise KeyError(digest) from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise AuditError(f"blob sha256={digest!r} is corrupt on disk")
        return data

    def __contains__(self, ref: BlobRef | str) -> bool:
        return self._path(_digest(ref)).is_file()


def _fsync_directory(directory: Path) -> None:
    # The rename is durable only once the directory entry itself is on disk.
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _digest(ref: BlobRef | str) -> str:
    if isinstance(ref, BlobRef):
        # A BlobRef may come from a decoded log line: never let its digest become a path.
        if not _HEX64.fullmatch(ref.sha256):
            raise ValueError(f"not a sha256 digest: sha256={ref.sha256!r}; expected 64 hex digits")
        return ref.sha256
    match = _URI.match(ref)
    if not match:
        raise ValueError(f"not a blob reference: ref={ref!r}; expected 'blob://sha256:<64 hex>'")
    return match.group(1)
