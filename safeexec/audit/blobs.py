"""A content-addressed, write-once blob store on disk, private to the host.

Full stdout, stderr and artifacts live here; the audit log and observations hold
``blob://sha256:<hex>`` references. A blob is *addressed* by its sha256 (what references carry
and what ``get`` verifies on read) but *stored* under a keyed name,
``HMAC-SHA256(store key, sha256)``, with the 32-byte key in the store's own 0700 directory: a
sandbox that can ``stat`` paths but not read the key cannot test whether some content is stored.

Every directory is created 0700 and every file 0600. All access goes through the store's
directory descriptor, one name at a time with ``O_NOFOLLOW`` (see :mod:`safeexec.audit.statedir`),
so a symlink planted anywhere below the root is never followed. Blobs are written to a temporary
file, fsynced when asked, and renamed into place, so a reader never sees a partial blob.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import re
import secrets
import stat
import weakref
from pathlib import Path

from safeexec.audit.statedir import (
    create_file_once,
    open_child_dir,
    open_private_dir,
    owner_and_mode,
    read_file,
    replace_file,
)
from safeexec.errors import AuditError, ConfigurationError
from safeexec.model.values import BlobRef

__all__ = ["KEY_FILE", "BlobStore"]

KEY_FILE = "blob-names.key"
"""The file (in the store's root) holding the key that names blobs on disk."""

_KEY_BYTES = 32
_URI = re.compile(r"^blob://sha256:([0-9a-f]{64})$")
_HEX64 = re.compile(r"[0-9a-f]{64}")


class BlobStore:
    """Stores bytes by their sha256; ``put`` is idempotent and ``get`` verifies the hash.

    ``root`` is created 0700 (an existing one must be a real directory owned by this uid and
    writable by no one else, else ``ConfigurationError``); ``fsync=True`` makes every blob durable
    before ``put`` returns.
    """

    def __init__(self, root: Path, *, fsync: bool = False) -> None:
        self.root = Path(root)
        self.fsync = fsync
        self._fd = open_private_dir(self.root, what="blob store root")
        weakref.finalize(self, os.close, self._fd)
        self._mode = owner_and_mode(self._fd)  # as opened; a later chmod is tampering
        self._key = self._load_key()

    def _load_key(self) -> bytes:
        try:
            create_file_once(self._fd, KEY_FILE, secrets.token_bytes(_KEY_BYTES), fsync=self.fsync)
            key = read_file(self._fd, KEY_FILE, limit=_KEY_BYTES)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot read the blob store key {KEY_FILE!r} in root={str(self.root)!r}: "
                f"{exc.strerror or exc}; remove the file if it is not a regular file"
            ) from exc
        if len(key) != _KEY_BYTES:
            raise ConfigurationError(
                f"blob store key {KEY_FILE!r} in root={str(self.root)!r} holds {len(key)} bytes, "
                f"not {_KEY_BYTES}; the store is damaged (its blobs cannot be found without it)"
            )
        return key

    def _name(self, sha256: str) -> str:
        return hmac.digest(self._key, bytes.fromhex(sha256), "sha256").hex()

    def location(self, ref: BlobRef | str) -> Path:
        """Where a blob lives on disk, for backup and inspection; read it through :meth:`get`."""
        name = self._name(_digest(ref))
        return self.root / name[:2] / name

    def put(self, data: bytes) -> BlobRef:
        """Store ``data`` (once) and return its reference."""
        digest = hashlib.sha256(data).hexdigest()
        name = self._name(digest)
        if (now := owner_and_mode(self._fd)) != self._mode:
            raise AuditError(
                f"cannot write blob sha256={digest!r}: the (uid, mode) of root={str(self.root)!r} "
                f"changed from {self._mode[0]}, {self._mode[1]:#o} to {now[0]}, {now[1]:#o}; "
                "find out who touched the state dir, then open a new BlobStore"
            )
        try:
            shard = open_child_dir(self._fd, name[:2])
            try:
                if not _is_regular(shard, name):
                    replace_file(shard, name, data, fsync=self.fsync)
            finally:
                os.close(shard)
        except (OSError, ConfigurationError) as exc:
            loop = getattr(exc, "errno", None) in (errno.ELOOP, errno.ENOTDIR)
            why = "something other than a directory (a symlink?) is in the way" if loop else exc
            raise AuditError(f"cannot write blob sha256={digest!r}: {why}") from exc
        return BlobRef(sha256=digest, size=len(data))

    def put_file(self, source: Path) -> BlobRef:
        """Store the contents of a regular file (the caller has already checked what it is)."""
        return self.put(Path(source).read_bytes())

    def get(self, ref: BlobRef | str) -> bytes:
        """Return the bytes behind a reference or ``blob://`` URI; ``KeyError`` when absent.

        ``AuditError`` when what is stored does not hash to the reference (or is not a file).
        """
        digest = _digest(ref)
        name = self._name(digest)
        try:
            shard = open_child_dir(self._fd, name[:2], create=False)
            try:
                data = read_file(shard, name, limit=1 << 62)
            finally:
                os.close(shard)
        except FileNotFoundError:
            raise KeyError(digest) from None
        except (OSError, ConfigurationError) as exc:
            raise AuditError(f"cannot read blob sha256={digest!r}: {exc}") from exc
        if hashlib.sha256(data).hexdigest() != digest:
            raise AuditError(f"blob sha256={digest!r} is corrupt on disk")
        return data

    def __contains__(self, ref: BlobRef | str) -> bool:
        name = self._name(_digest(ref))
        try:
            shard = open_child_dir(self._fd, name[:2], create=False)
        except (OSError, ConfigurationError):
            return False
        try:
            return _is_regular(shard, name)
        finally:
            os.close(shard)


def _is_regular(dir_fd: int, name: str) -> bool:
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(info.st_mode)


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
