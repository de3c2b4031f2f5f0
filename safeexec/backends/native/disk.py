"""A disk budget the kernel enforces: a session's own workdir on a size-bounded tmpfs.

A directory scan cannot see ``O_TMPFILE`` files or files unlinked while open; a filesystem of
``disk_bytes`` counts them like any other, and its pages are host RAM charged to the writer's
memory cgroup. The host makes the tmpfs as a detached mount, attaches it at the workdir's path
for its own reading and writing (uploads, downloads, artifacts), and hands each worker a clone
to attach in its own mount namespace. Only for a workdir the session owns (the default): a
workdir the caller names is used in place and keeps the scan; and only for a root host.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from pathlib import Path

from safeexec.sandbox import namespaces
from safeexec.sandbox.layers import Layer, LayerStatus

__all__ = ["SpareWorkdirs", "WorkdirMount", "disk_support", "remove_workdir"]


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
