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
from pathlib import Path

from safeexec.sandbox import namespaces
from safeexec.sandbox.layers import Layer, LayerStatus

__all__ = ["WorkdirMount", "disk_support"]


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
