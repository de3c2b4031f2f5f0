"""Linux namespaces for a session: network, IPC and pid (plus user when not root, mount when root).

Python 3.11 has no ``os.unshare``, so these go through libc. The pid namespace takes effect for
children of the caller: the template's intermediate child unshares, then forks the worker, which
becomes pid 1 of the new namespace; when it dies the kernel kills everything left inside.
"""

from __future__ import annotations

import ctypes

from safeexec.sandbox.syscalls import check, libc

__all__ = [
    "CLONE_NEWIPC",
    "CLONE_NEWNET",
    "CLONE_NEWNS",
    "CLONE_NEWPID",
    "CLONE_NEWUSER",
    "make_root_private",
    "map_current_ids",
    "mount_bind",
    "mount_tmpfs",
    "setns",
    "unshare",
]

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18

libc.mount.argtypes = [
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_char_p,
]


def unshare(flags: int) -> None:
    check(libc.unshare(ctypes.c_int(flags)), "unshare")


def setns(fd: int, nstype: int) -> None:
    check(libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)), "setns")


def map_current_ids(uid: int, gid: int) -> None:
    """In a fresh user namespace, map our own uid/gid to themselves (what ``unshare -U`` does)."""
    with open("/proc/self/setgroups", "w") as fh:
        fh.write("deny")
    with open("/proc/self/uid_map", "w") as fh:
        fh.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as fh:
        fh.write(f"{gid} {gid} 1")


def _mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None
) -> None:
    check(
        libc.mount(
            source.encode() if source is not None else None,
            target.encode(),
            fstype.encode() if fstype is not None else None,
            ctypes.c_ulong(flags),
            data.encode() if data is not None else None,
        ),
        f"mount {target}",
    )


def make_root_private() -> None:
    """Stop mounts made in this mount namespace from propagating back to the host."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE, None)


def mount_tmpfs(target: str, *, mode: int = 0o755) -> None:
    _mount("tmpfs", target, "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode={mode:o},size=1m")


def mount_bind(source_fd: int, target: str, *, read_only: bool) -> None:
    """Bind the directory open as ``source_fd`` onto ``target`` (optionally read-only)."""
    source = f"/proc/self/fd/{source_fd}"
    _mount(source, target, None, _MS_BIND | _MS_REC, None)
    if read_only:
        _mount(None, target, None, _MS_BIND | _MS_REC | _MS_RDONLY | _MS_NOSUID | _MS_REMOUNT, None)
