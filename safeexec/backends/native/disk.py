"""A session's disk budget: a size-bounded tmpfs where the host can mount one, else accounting.

A directory scan cannot see ``O_TMPFILE`` files or files unlinked while open. For a workdir the
session owns (the default) on a root host, the workdir is a filesystem of ``disk_bytes`` that
counts them like any other, and its pages are host RAM charged to the writer's memory cgroup.
The host makes the tmpfs as a detached mount, attaches it at the workdir's path for its own
reading and writing (uploads, downloads, artifacts), and hands each worker a clone to attach in
its own mount namespace. Everywhere else (a workdir the caller names, used in place; a host that
is not root) the budget is the scan plus :func:`unnamed_bytes`: every regular file without a
link that the session's processes hold open, map or run, found in their ``/proc``. What could
hold such a file out of sight there (a descriptor in flight in a unix socket, a Landlock
ruleset) is refused by seccomp (``seccomp.UNCOUNTED_CLASSES``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from safeexec.sandbox import namespaces
from safeexec.sandbox.layers import Layer, LayerStatus
from safeexec.sandbox.syscalls import libc

__all__ = ["SpareWorkdirs", "WorkdirMount", "disk_support", "remove_workdir", "unnamed_bytes"]


def disk_support() -> LayerStatus:
    """Whether this host can give sessions a size-bounded workdir (for ``supported_layers``)."""
    if os.geteuid() != 0:
        return LayerStatus(
            layer=Layer.DISK, active=False, detail="needs a root host to mount the workdir"
        )
    return LayerStatus(
        layer=Layer.DISK, active=True, detail="the session's own workdir on a tmpfs of disk_bytes"
    )


class WorkdirMount:
    """The tmpfs under a session's own workdir, or why there is none."""

    def __init__(self, workdir: Path | None, *, size_bytes: int, inodes: int) -> None:
        self._path = workdir
        self.reason = ""
        self._mounted = False
        if workdir is None:
            self.reason = "a workdir the caller gave is used in place; its budget is a scan"
            return
        if not disk_support().active:
            self.reason = disk_support().detail
            return
        try:
            fd = namespaces.new_tmpfs(size_bytes=size_bytes, inodes=inodes)
            try:
                namespaces.attach_mount(fd, str(workdir))
            finally:
                os.close(fd)
        except OSError as exc:
            self.reason = f"could not mount a tmpfs for the workdir: {exc.strerror or exc}"
            return
        self._mounted = True

    @property
    def active(self) -> bool:
        return self._mounted

    def clone(self) -> int | None:
        """A detached copy of the mount for one worker to attach (the caller closes it)."""
        if not self._mounted or self._path is None:
            return None
        root = os.open(self._path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            return namespaces.clone_mount(root)
        finally:
            os.close(root)

    def remove(self) -> None:
        """Unmount (the tmpfs and every file in it go with the last reference); idempotent."""
        if self._mounted and self._path is not None:
            with contextlib.suppress(OSError):
                namespaces.detach(str(self._path))
            self._mounted = False


class SpareWorkdirs:
    """Private workdirs made ahead, each a fresh directory with its tmpfs (at most ``keep``), so
    an open or a session spawned ahead that needs one takes it instead of making it (a
    directory and a mount, ~0.3 ms).

    A spare is never reused: the session that takes it owns and removes it on close.
    """

    def __init__(self, *, size_bytes: int, inodes: int, keep: int) -> None:
        self._size_bytes = size_bytes
        self._inodes = inodes
        self._keep = keep
        self._lock = threading.Lock()
        self._spares: list[tuple[Path, WorkdirMount]] = []
        self._closed = False

    def fill(self) -> bool:
        """Make one spare, unless ``keep`` are ready or the backend closed (then False)."""
        with self._lock:
            if self._closed or len(self._spares) >= self._keep:
                return False
        spare = self._make()
        with self._lock:
            if not self._closed and len(self._spares) < self._keep:
                self._spares.append(spare)
                return True
        remove_workdir(*spare)
        return False

    def take(self) -> tuple[Path, WorkdirMount]:
        """A new private workdir and its mount: a spare if one is ready, else made now."""
        with self._lock:
            if self._spares:
                return self._spares.pop()
        return self._make()

    def close(self) -> None:
        """Remove every spare; later fills make none."""
        with self._lock:
            self._closed = True
            spares, self._spares = self._spares, []
        for spare in spares:
            remove_workdir(*spare)

    def _make(self) -> tuple[Path, WorkdirMount]:
        path = Path(tempfile.mkdtemp(prefix="safeexec-"))
        return path, WorkdirMount(path, size_bytes=self._size_bytes, inodes=self._inodes)


def remove_workdir(path: Path, mount: WorkdirMount) -> None:
    """Unmount and remove a private workdir that no session took (it is empty)."""
    mount.remove()
    with contextlib.suppress(OSError):
        os.rmdir(path)


_Inode = tuple[int, int, int]  # (device major, device minor, inode)


def unnamed_bytes(pids: Iterable[int]) -> float:
    """Disk held by regular files without a name (``st_nlink`` 0: ``O_TMPFILE``, unlinked while
    open) that processes ``pids`` hold: through a descriptor of any of their threads, a
    mapping, or as their executable. Each file counts once, by its blocks.

    Infinite (fails closed) when a process's descriptors cannot be read, or a mapped file
    cannot be measured (reading ``map_files`` needs ``CAP_SYS_ADMIN``: a host that is not
    root measures a mapped file only through a descriptor that also holds it). Shared memory
    (memfd, System V, ``MAP_SHARED`` anonymous pages) lives on the kernel's internal shmem
    mount and is left to the memory limit.
    """
    sized: dict[_Inode, int] = {}
    unsized: set[_Inode] = set()
    shmem = _shmem_device()
    try:
        for pid in pids:
            _read_held(pid, sized, unsized, shmem)
    except PermissionError:
        return float("inf")
    if unsized - sized.keys():
        return float("inf")
    return float(sum(sized.values()))


def _read_held(
    pid: int, sized: dict[_Inode, int], unsized: set[_Inode], shmem: tuple[int, int] | None
) -> None:
    """:func:`_held_by`, as the process's owner where a root host must be (no
    ``CAP_SYS_PTRACE``: a container; a session's processes keep themselves dumpable for it).
    A process that cannot be read because it is exiting holds nothing past its exit (its
    address space is gone first, which is what makes ``/proc`` refuse): it is skipped;
    any other refusal is ``PermissionError`` (the caller fails closed)."""
    try:
        _held_by(pid, sized, unsized, shmem)
        return
    except PermissionError:
        if os.geteuid() == 0:
            with contextlib.suppress(PermissionError), _as_owner_of(pid):
                _held_by(pid, sized, unsized, shmem)
                return
        if not _exiting(pid):
            raise


_PF_EXITING = 0x4  # include/linux/sched.h


def _exiting(pid: int) -> bool:
    """Whether ``pid`` is gone, a zombie or inside its exit (``/proc/<pid>/stat`` is readable
    by anyone; its state and flags are not masked)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            fields = stat_file.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return True
    try:
        state, flags = fields[0], int(fields[6])
    except (IndexError, ValueError):
        return False
    return state in (b"Z", b"X", b"x") or bool(flags & _PF_EXITING)


def _held_by(
    pid: int, sized: dict[_Inode, int], unsized: set[_Inode], shmem: tuple[int, int] | None
) -> None:
    """Add what ``pid`` holds to ``sized`` (or, mapped files it cannot measure, ``unsized``)."""
    # A thread made with CLONE_THREAD but not CLONE_FILES has a table of its own.
    for tid in _entries(f"/proc/{pid}/task"):
        fd_dir = f"/proc/{pid}/task/{tid}/fd"
        for name in _entries(fd_dir):
            _measure(f"{fd_dir}/{name}", sized, shmem)
    _measure(f"/proc/{pid}/exe", sized, shmem)
    for key, span in _deleted_mappings(pid, shmem):
        if key in sized:
            continue
        try:
            _measure(f"/proc/{pid}/map_files/{span}", sized, shmem)
        except PermissionError:
            unsized.add(key)


@contextlib.contextmanager
def _as_owner_of(pid: int) -> Iterator[None]:
    """This thread's filesystem ids (what ``/proc`` checks a reader by) set to the real ids
    of ``pid``, then back to root's; ``PermissionError`` when that is not possible."""
    uid = gid = -1
    with (
        contextlib.suppress(OSError, ValueError, IndexError),
        open(f"/proc/{pid}/status", "rb") as status,
    ):
        for line in status:
            if line.startswith(b"Uid:"):
                uid = int(line.split()[1])
            elif line.startswith(b"Gid:"):
                gid = int(line.split()[1])
    if uid <= 0 or gid < 0:
        raise PermissionError(1, f"no owner to read pid {pid} as")
    # setfsuid and setfsgid change the calling thread only, and say nothing on failure: the
    # previous value, read back with an impossible id, is the check.
    libc.setfsgid(gid)
    libc.setfsuid(uid)
    try:
        if libc.setfsuid(-1) != uid or libc.setfsgid(-1) != gid:
            raise PermissionError(1, f"could not take the ids of pid {pid}")
        yield
    finally:
        libc.setfsuid(0)
        libc.setfsgid(0)


def _entries(path: str) -> list[str]:
    """The names in a /proc directory: empty once its process is gone, ``PermissionError``
    when it is not ours to read."""
    try:
        return os.listdir(path)
    except PermissionError:
        raise
    except OSError:
        return []


def _measure(path: str, sized: dict[_Inode, int], shmem: tuple[int, int] | None) -> None:
    """Add the file ``path`` (a /proc link) leads to, if it is regular and has no name.

    ``PermissionError`` when it is not ours to follow; gone, it is skipped."""
    try:
        info = os.stat(path)
    except PermissionError:
        raise
    except OSError:
        return
    device = (os.major(info.st_dev), os.minor(info.st_dev))
    if stat.S_ISREG(info.st_mode) and info.st_nlink == 0 and device != shmem:
        sized[(*device, info.st_ino)] = info.st_blocks * 512


def _deleted_mappings(pid: int, shmem: tuple[int, int] | None) -> list[tuple[_Inode, str]]:
    """Each file mapping of ``pid`` whose file has lost its name: its inode and address span.
    ``PermissionError`` when the maps are not ours to read."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as maps:
            text = maps.read()
    except PermissionError:
        raise
    except OSError:
        return []
    if b" (deleted)" not in text:
        return []
    found = []
    for line in text.splitlines():
        if not line.endswith(b" (deleted)"):
            continue
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or fields[4] == b"0":
            continue
        major, minor = (int(part, 16) for part in fields[3].split(b":"))
        if (major, minor) != shmem:
            # map_files names spans without the zero padding maps gives low addresses.
            start, end = (int(part, 16) for part in fields[0].split(b"-"))
            found.append(((major, minor, int(fields[4])), f"{start:x}-{end:x}"))
    return found


@functools.cache
def _shmem_device() -> tuple[int, int] | None:
    """The device of the kernel's internal shmem mount (memfd, System V and shared anonymous
    memory), as (major, minor); None where memfd_create is unavailable."""
    try:
        fd = os.memfd_create("safeexec-probe", os.MFD_CLOEXEC)
    except (OSError, AttributeError):
        return None
    try:
        device = os.fstat(fd).st_dev
    finally:
        os.close(fd)
    return os.major(device), os.minor(device)
