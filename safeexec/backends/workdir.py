"""Files beneath a session's workdir: scanning, reading and removing them without being fooled.

Code in a sandbox controls its workdir: it can nest directories thousands deep, fill one with
millions of names, swap a directory for a symlink, name files with bytes that are not UTF-8 or
hard-link a file that lives elsewhere. Everything here walks with directory descriptors opened
``O_NOFOLLOW``, iteratively or within fixed bounds, so none of that reaches the host. Every
backend that has a workdir uses these functions, so they all report artifacts the same way.
"""

from __future__ import annotations

import contextlib
import mimetypes
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from safeexec.audit.blobs import BlobStore
from safeexec.errors import ConfigurationError
from safeexec.model.fieldwise import Fieldwise
from safeexec.model.values import Artifact
from safeexec.sandbox.session_env import TMP_DIR

__all__ = [
    "TMP_DIR",
    "ArtifactLimits",
    "DirEntry",
    "FileState",
    "Owners",
    "chown_beneath",
    "collect_artifacts",
    "disk_usage",
    "download_file",
    "list_beneath",
    "open_beneath",
    "read_regular",
    "remove_beneath",
    "remove_tree",
    "return_beneath",
    "scan",
    "upload_file",
]

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ArtifactLimits(Fieldwise):
    """Caps on what a call may hand back as artifacts (files it created or changed)."""

    max_count: int = 64
    max_file_bytes: int = 64 * 1024 * 1024
    max_total_bytes: int = 256 * 1024 * 1024
    max_depth: int = 12
    max_entries_scanned: int = 20_000


@dataclass(frozen=True, slots=True)
class FileState:
    """What a scan saw of one regular file; any change in it marks the file as changed."""

    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    blocks: int


def scan(root: str, limits: ArtifactLimits, *, skip_tmp: bool = True) -> dict[str, FileState]:
    """Regular files beneath ``root`` (no symlinks followed), bounded in depth and count.

    When the bounds cut the scan short, the result holds the key ``_INCOMPLETE``.
    """
    found: dict[str, FileState] = {}
    budget = [limits.max_entries_scanned]
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return found
    try:
        _scan_dir(fd, "", 0, limits, found, budget, skip_tmp)
    finally:
        os.close(fd)
    return found


_INCOMPLETE = "\0incomplete"  # no real file name contains NUL


def _scan_dir(
    fd: int,
    prefix: str,
    depth: int,
    limits: ArtifactLimits,
    found: dict[str, FileState],
    budget: list[int],
    skip_tmp: bool,
) -> None:
    try:
        entries = os.scandir(fd)
    except OSError:
        return
    with entries:
        _scan_entries(entries, fd, prefix, depth, limits, found, budget, skip_tmp)


def _scan_entries(
    entries: Iterator[os.DirEntry[str]],
    fd: int,
    prefix: str,
    depth: int,
    limits: ArtifactLimits,
    found: dict[str, FileState],
    budget: list[int],
    skip_tmp: bool,
) -> None:
    for entry in entries:  # read lazily: a directory may hold millions of names
        budget[0] -= 1
        if budget[0] < 0:
            found[_INCOMPLETE] = FileState(0, 0, 0, 0, 0)
            return
        if skip_tmp and not prefix and entry.name == TMP_DIR:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            found[prefix + entry.name] = FileState(
                info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_blocks
            )
        elif stat.S_ISDIR(info.st_mode) and depth >= limits.max_depth:
            found[_INCOMPLETE] = FileState(0, 0, 0, 0, 0)
        elif stat.S_ISDIR(info.st_mode):
            try:
                child = os.open(
                    entry.name,
                    os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                    dir_fd=fd,
                )
            except OSError:
                continue
            try:
                _scan_dir(
                    child, f"{prefix}{entry.name}/", depth + 1, limits, found, budget, skip_tmp
                )
            finally:
                os.close(child)


def disk_usage(root: str, limits: ArtifactLimits) -> float:
    """Bytes of disk the regular files beneath ``root`` occupy; infinite when the bounded scan
    could not see everything (too many entries or too deep), which fails closed."""
    found = scan(root, limits, skip_tmp=False)
    if _INCOMPLETE in found:
        return float("inf")
    return float(sum(state.blocks * 512 for state in found.values()))


Owners = dict[str, tuple[int, int, int]]
"""Original (uid, gid, permission bits) of workdir entries a root host lent to a session, by
relative path."""

# Bits a session may not leave on what it made in a caller's workdir: others' write access, and
# set-id and sticky bits.
_UNSAFE_MODE_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWGRP | stat.S_IWOTH


def chown_beneath(
    dir_fd: int,
    uid: int,
    *,
    depth: int,
    limits: ArtifactLimits,
    lent: Owners,
    borrowers: frozenset[int] = frozenset(),
    prefix: str = "",
) -> None:
    """Lend the tree under ``dir_fd`` to ``uid``, recording each entry's owner in ``lent`` first
    (unless a ``borrowers`` uid, an earlier worker of the session, holds it) so that
    :func:`return_beneath` gives it back. Files with other hard links are skipped: their inode is
    also reachable from outside the workdir, and chowning it would hand that over."""
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if not stat.S_ISDIR(info.st_mode) and info.st_nlink > 1:
                    continue
                path = prefix + entry.name
                if info.st_uid not in borrowers and info.st_uid != uid:
                    lent.setdefault(path, (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)))
                os.chown(entry.name, uid, uid, dir_fd=dir_fd, follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) and depth < limits.max_depth:
                    child = os.open(entry.name, _DIRECTORY_FLAGS, dir_fd=dir_fd)
                    try:
                        chown_beneath(
                            child,
                            uid,
                            depth=depth + 1,
                            limits=limits,
                            lent=lent,
                            borrowers=borrowers,
                            prefix=path + "/",
                        )
                    finally:
                        os.close(child)


def return_beneath(
    dir_fd: int,
    *,
    lent: Owners,
    borrowers: frozenset[int],
    home: tuple[int, int],
    depth: int,
    limits: ArtifactLimits,
    prefix: str = "",
) -> None:
    """Give back what :func:`chown_beneath` lent: every entry a ``borrowers`` uid owns goes to
    its recorded owner with its recorded permissions, or, if the session made it, to ``home``
    (the workdir's owner) without others' write access or set-id and sticky bits. Entries owned
    by anyone else are not touched, so a user's files keep their owners and modes."""
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                path = prefix + entry.name
                if info.st_uid in borrowers:
                    made = (*home, stat.S_IMODE(info.st_mode) & ~_UNSAFE_MODE_BITS)
                    uid, gid, mode = lent.get(path, made)
                    os.chown(entry.name, uid, gid, dir_fd=dir_fd, follow_symlinks=False)
                    if not stat.S_ISLNK(info.st_mode):
                        _chmod_beneath(dir_fd, entry.name, mode)
                if stat.S_ISDIR(info.st_mode) and depth < limits.max_depth:
                    child = os.open(entry.name, _DIRECTORY_FLAGS, dir_fd=dir_fd)
                    try:
                        return_beneath(
                            child,
                            lent=lent,
                            borrowers=borrowers,
                            home=home,
                            depth=depth + 1,
                            limits=limits,
                            prefix=path + "/",
                        )
                    finally:
                        os.close(child)


def _chmod_beneath(dir_fd: int, name: str, mode: int) -> None:
    """``chmod`` of ``name`` beneath ``dir_fd`` through a descriptor opened ``O_NOFOLLOW``
    (Linux has no ``chmod`` that refuses a link): a link swapped in is never followed."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(name, flags, dir_fd=dir_fd)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def remove_tree(root: str) -> None:
    """Remove ``root`` and everything beneath it, however deep, never following a symlink.

    ``shutil.rmtree`` recurses once per level (a cell can nest thousands: RecursionError in the
    host) and keeps a descriptor per level open. This walks down holding one descriptor, climbs
    back through ``..`` checked against the inode it came from, and stops (leaving the rest)
    at anything it cannot remove or that moved.
    """
    try:
        fd = os.open(root, _DIRECTORY_FLAGS)
    except OSError:
        return
    info = os.fstat(fd)
    trail = [(info.st_dev, info.st_ino)]  # the inodes from root down to the current directory
    names: list[str] = []
    try:
        while True:
            child = _first_subdirectory_after_unlinking_files(fd)
            if child is not None:
                os.close(fd)
                fd, name = child
                info = os.fstat(fd)
                trail.append((info.st_dev, info.st_ino))
                names.append(name)
                continue
            if not names:
                break
            parent = os.open("..", _DIRECTORY_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            info = os.fstat(fd)
            trail.pop()
            if (info.st_dev, info.st_ino) != trail[-1]:
                return  # the tree moved under us: remove nothing more
            os.rmdir(names.pop(), dir_fd=fd)
    except OSError:
        return
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(root)


def _first_subdirectory_after_unlinking_files(dir_fd: int) -> tuple[int, str] | None:
    """Unlink every non-directory in ``dir_fd``; return the first subdirectory, opened."""
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                return os.open(entry.name, _DIRECTORY_FLAGS, dir_fd=dir_fd), entry.name
            os.unlink(entry.name, dir_fd=dir_fd)
    return None


def _split_relative(name: str) -> tuple[str, ...]:
    parts = PurePosixPath(name).parts
    if (
        not parts
        or "\0" in name
        or PurePosixPath(name).is_absolute()
        or any(p in ("..", ".") for p in parts)
    ):
        raise ConfigurationError(
            f"name={name!r} must be a relative path inside the workdir, without '..' or NUL"
        )
    return parts


def open_beneath(
    root: str,
    name: str,
    flags: int,
    *,
    create_dirs: bool = False,
    mode: int = 0o644,
    owner: int | None = None,
) -> int:
    """Open ``name`` beneath ``root``, refusing symlinks at every step; directories it creates
    are given to ``owner`` (a root host's session uid)."""
    parts = _split_relative(name)
    dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            if create_dirs:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=dir_fd)
                    if owner is not None:
                        os.chown(part, owner, owner, dir_fd=dir_fd, follow_symlinks=False)
            next_fd = os.open(
                part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd
            )
            os.close(dir_fd)
            dir_fd = next_fd
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def read_regular(root: str, name: str, max_bytes: int) -> bytes | None:
    """The bytes of a regular, singly-linked file beneath ``root`` of at most ``max_bytes``."""
    try:
        fd = open_beneath(root, name, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ConfigurationError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or info.st_size > max_bytes:
            return None
        chunks: list[bytes] = []
        left = info.st_size
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def upload_file(root: str, name: str, data: bytes, *, owner: int | None = None) -> None:
    """Write ``data`` to ``name`` beneath ``root``, never following symlinks.

    A bad name, or something other than a plain singly-linked file in the way, raises
    ``ConfigurationError``; a symlink or FIFO met on the way raises ``OSError``. ``owner`` (a
    root host's session uid) is given the file and any directories made for it.
    """
    fd = open_beneath(
        root, name, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK, create_dirs=True, owner=owner
    )
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise ConfigurationError(
                f"name={name!r} exists and is not a plain file; choose another name"
            )
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if owner is not None:
            os.fchown(fd, owner, owner)
    finally:
        os.close(fd)


def download_file(root: str, name: str, max_bytes: int) -> bytes:
    """The bytes of regular file ``name`` beneath ``root``; ``ConfigurationError`` otherwise."""
    data = read_regular(root, name, max_bytes)
    if data is None:
        raise ConfigurationError(
            f"name={name!r} is not a regular file of at most {max_bytes} bytes in the workdir"
        )
    return data


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class DirEntry(Fieldwise):
    """One entry of a workdir listing; ``kind`` is ``file``, ``dir``, ``symlink`` or ``other``."""

    name: str
    kind: str
    size: int


def _open_dir_beneath(root: str, name: str) -> int:
    """A descriptor of directory ``name`` beneath ``root`` (``"."``: the root itself)."""
    if name in (".", ""):
        return os.open(root, _DIRECTORY_FLAGS)
    return open_beneath(root, name, os.O_RDONLY | os.O_DIRECTORY)


def list_beneath(root: str, name: str = ".", *, max_entries: int = 10_000) -> tuple[DirEntry, ...]:
    """The entries of directory ``name`` beneath ``root``, sorted, at most ``max_entries``.

    Nothing is followed: a symlink is listed as one. ``ConfigurationError`` if ``name`` is not
    a directory beneath ``root``."""
    try:
        fd = _open_dir_beneath(root, name)
    except OSError as exc:
        raise ConfigurationError(
            f"name={name!r} is not a directory in the workdir ({exc.strerror})"
        ) from exc
    found: list[DirEntry] = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                if len(found) >= max_entries:
                    break
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    found.append(
                        DirEntry(name=entry.name, kind=_kind(info.st_mode), size=info.st_size)
                    )
    finally:
        os.close(fd)
    return tuple(sorted(found, key=lambda entry: entry.name))


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def remove_beneath(root: str, name: str) -> None:
    """Remove ``name`` beneath ``root``: a file or link is unlinked (the link, never what it
    points to), a directory removed with all it holds. ``ConfigurationError`` if it is absent."""
    parts = _split_relative(name)
    parent = os.path.join(*parts[:-1]) if len(parts) > 1 else "."
    try:
        dir_fd = _open_dir_beneath(root, parent)
    except OSError as exc:
        raise ConfigurationError(f"name={name!r} is not in the workdir ({exc.strerror})") from exc
    try:
        try:
            info = os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError as exc:
            raise ConfigurationError(f"name={name!r} is not in the workdir") from exc
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(parts[-1], dir_fd=dir_fd)
            return
        # Removed through /proc/self/fd of the opened parent, so a swapped path cannot redirect it.
        remove_tree(f"/proc/self/fd/{dir_fd}/{parts[-1]}")
    finally:
        os.close(dir_fd)


def _is_utf8(name: str) -> bool:
    """Whether a file name read from disk (surrogate-escaped) was valid UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def collect_artifacts(
    root: str, before: Mapping[str, FileState], *, blobs: BlobStore, limits: ArtifactLimits
) -> tuple[Artifact, ...]:
    """The regular files beneath ``root`` created or changed since ``before`` (a :func:`scan`),
    stored in ``blobs``; undecodable names, links and files over ``limits`` are left out."""
    after = scan(root, limits)
    artifacts: list[Artifact] = []
    total = 0
    for name in sorted(after):
        if len(artifacts) >= limits.max_count:
            break
        if name == _INCOMPLETE:
            continue
        if before.get(name) == after[name]:
            continue
        if not _is_utf8(name):
            continue  # an artifact's name is text; undecodable bytes would crash its readers
        data = read_regular(root, name, limits.max_file_bytes)
        if data is None or total + len(data) > limits.max_total_bytes:
            continue
        total += len(data)
        media_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
        artifacts.append(Artifact(name=name, media_type=media_type, blob=blobs.put(data)))
    return tuple(artifacts)
