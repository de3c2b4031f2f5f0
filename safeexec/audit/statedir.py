"""The host's private state directory: 0700, owned by the host, apart from every workdir.

The audit log and the blob store live here. Nothing a session can reach may touch them, so:

* a state dir inside, equal to or above a workdir is refused (:func:`ensure_apart`), checked on
  resolved paths *and* by walking ``..`` from both ends comparing device/inode, so a symlink or a
  bind mount cannot hide the overlap;
* the directory is created 0700; an existing one must be a real directory owned by this process's
  uid and writable by nobody else (:func:`open_private_dir`);
* below it every file and directory is opened through a directory descriptor, one name at a time,
  with ``O_NOFOLLOW`` (:func:`open_child_dir`, :func:`read_file`, :func:`replace_file`), which
  resolves exactly like ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` for a single
  component: a name holding ``/`` or ``..`` is refused, a symlink fails with ``ELOOP``.

The default location is per user, outside any project: ``$XDG_STATE_HOME/safeexec``, else
``~/.local/state/safeexec`` (:func:`default_state_dir`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from safeexec.errors import ConfigurationError

__all__ = [
    "create_file_once",
    "default_state_dir",
    "ensure_apart",
    "open_child_dir",
    "open_private_dir",
    "owner_and_mode",
    "read_file",
    "replace_file",
]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_DEPTH = 4096  # deeper than any real path; bounds the ``..`` walk


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/safeexec`` if that variable is an absolute path, else
    ``~/.local/state/safeexec``."""
    xdg = os.environ.get("XDG_STATE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "state"
    return base / "safeexec"


def open_private_dir(path: Path, *, what: str = "state_dir", tighten: bool = True) -> int:
    """Create ``path`` 0700 if missing and return a descriptor of it (the caller closes it).

    Refuses (``ConfigurationError``) a symlink, a non-directory, a directory owned by another uid
    and one writable by group or others. ``tighten`` drops any remaining group/other bits (an
    existing state dir made 0755 by an older version becomes 0700).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        fd = os.open(path, _DIR_FLAGS)
    except OSError as exc:
        # O_NOFOLLOW | O_DIRECTORY on a symlink fails with ENOTDIR (or ELOOP): say which it is.
        why = "is a symbolic link" if os.path.islink(path) else exc.strerror
        raise ConfigurationError(
            f"cannot open {what}={str(path)!r}: {why}; pass a real directory of your own"
        ) from exc
    try:
        _check_private(fd, f"{what}={str(path)!r}")
        if tighten and stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            os.fchmod(fd, 0o700)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_child_dir(dir_fd: int, name: str, *, create: bool = True) -> int:
    """Open (creating 0700 if ``create``) the directory ``name`` directly below ``dir_fd``.

    Never follows a link; raises ``OSError`` (``ELOOP`` for a symlink, ``ENOENT`` when absent and
    not ``create``) and ``ConfigurationError`` for one owned by someone else or writable by others.
    """
    _check_name(name)
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
        # Made once, opened ever after: the open comes first.
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=dir_fd)
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    try:
        _check_private(fd, f"directory name={name!r}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_file(dir_fd: int, name: str, *, limit: int) -> bytes:
    """The bytes of regular file ``name`` below ``dir_fd`` (at most ``limit``); never a link."""
    _check_name(name)
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"{name!r} is not a regular file")
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"{name!r} holds {info.st_size} bytes, over {limit}")
        chunks = []
        left = limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise OSError(errno.EFBIG, f"{name!r} grew past {limit} bytes")
        return data
    finally:
        os.close(fd)


def replace_file(dir_fd: int, name: str, data: bytes, *, fsync: bool) -> None:
    """Atomically make ``name`` below ``dir_fd`` hold ``data`` (a fresh file renamed into place).

    The rename replaces whatever entry had the name, a symlink included, without following it.
    """
    _check_name(name)
    temporary = _write_temporary(dir_fd, name, data, fsync=fsync)
    try:
        os.rename(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        _unlink_quietly(dir_fd, temporary)
        raise
    if fsync:
        os.fsync(dir_fd)


def create_file_once(dir_fd: int, name: str, data: bytes, *, fsync: bool) -> bool:
    """Atomically create ``name`` holding ``data`` unless it exists; ``True`` if this call made it.

    A hard link of a complete temporary file, so a racing reader never sees a partial file and
    two racing creators never overwrite each other.
    """
    _check_name(name)
    temporary = _write_temporary(dir_fd, name, data, fsync=fsync)
    try:
        os.link(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError:
        return False
    finally:
        _unlink_quietly(dir_fd, temporary)
    if fsync:
        os.fsync(dir_fd)
    return True


def owner_and_mode(fd: int) -> tuple[int, int]:
    """The (uid, permission bits) of an open file or directory, to notice a later chown/chmod."""
    info = os.fstat(fd)
    return info.st_uid, stat.S_IMODE(info.st_mode)


def ensure_apart(state_dir: Path, workdir: Path) -> None:
    """Refuse (``ConfigurationError``) a state dir inside, equal to or above ``workdir``.

    Compared on resolved paths, then (for directories that exist) by device/inode along the
    ``..`` chain of each, which sees through symlinks and bind mounts alike.
    """
    state = Path(os.path.realpath(state_dir))
    work = Path(os.path.realpath(workdir))
    if state == work or state.is_relative_to(work) or work.is_relative_to(state):
        _refuse(state_dir, workdir)
    state_chain = _inode_chain(state_dir)
    work_chain = _inode_chain(workdir)
    if not state_chain or not work_chain:
        return  # one does not exist yet: the path check above is all there is to compare
    if state_chain[0] in work_chain or work_chain[0] in state_chain:
        _refuse(state_dir, workdir)


def _refuse(state_dir: Path, workdir: Path) -> None:
    raise ConfigurationError(
        f"state_dir={str(state_dir)!r} overlaps workdir={str(workdir)!r} (one is inside, equal to "
        "or above the other, possibly through a symlink or bind mount): a session could then "
        "reach the audit log and blobs; pass a state dir outside the workdir (state_dir= or "
        "--state-dir), or a workdir that does not contain it"
    )


def _inode_chain(path: Path) -> list[tuple[int, int]]:
    """(device, inode) of ``path`` and of each directory above it, through ``..``; [] if absent."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return []
    chain: list[tuple[int, int]] = []
    try:
        for _ in range(_MAX_DEPTH):
            info = os.fstat(fd)
            here = (info.st_dev, info.st_ino)
            if chain and chain[-1] == here:
                break  # ``..`` of the root is the root
            chain.append(here)
            parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = parent
    finally:
        os.close(fd)
    return chain


def _check_private(fd: int, label: str) -> None:
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode):
        raise ConfigurationError(f"{label} is not a directory; pass a directory")
    if info.st_uid != os.geteuid():
        raise ConfigurationError(
            f"{label} is owned by uid {info.st_uid}, not by this process (uid {os.geteuid()}); "
            "remove it or pass a directory of your own"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o022:
        raise ConfigurationError(
            f"{label} is writable by group or others (mode {mode:#o}); "
            "run chmod 700 on it or pass a private directory"
        )


def _check_name(name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise ValueError(f"name={name!r} is not a single path component")


def _write_temporary(dir_fd: int, name: str, data: bytes, *, fsync: bool) -> str:
    temporary = f".tmp-{name}-{secrets.token_hex(8)}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o600, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quietly(dir_fd, temporary)
        raise
    os.close(fd)
    return temporary


def _unlink_quietly(dir_fd: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dir_fd)
