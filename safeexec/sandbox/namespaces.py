"""Linux namespaces for a session: network, IPC and pid (plus user when not root, mount when root).

Python 3.11 has no ``os.unshare``, so these go through libc. The pid namespace takes effect for
children of the caller: the template's intermediate child unshares, then forks the worker, which
becomes pid 1 of the new namespace; when it dies the kernel kills everything left inside.
"""

from __future__ import annotations

import ctypes
import os

from safeexec.sandbox.syscalls import check, libc, syscall

__all__ = [
    "CLONE_NEWIPC",
    "CLONE_NEWNET",
    "CLONE_NEWNS",
    "CLONE_NEWPID",
    "CLONE_NEWUSER",
    "attach_mount",
    "clone_mount",
    "detach",
    "make_private",
    "make_root_private",
    "map_current_ids",
    "mount_bind",
    "mount_proc",
    "mount_tmpfs",
    "new_tmpfs",
    "remount_read_only",
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
_MS_NOEXEC = 8
_MS_REMOUNT = 32
_MS_NOATIME = 1024
_MS_NODIRATIME = 2048
_MS_RELATIME = 1 << 21
_MNT_DETACH = 2
_FSCONFIG_SET_STRING = 1
_FSCONFIG_CMD_CREATE = 6
_FSMOUNT_CLOEXEC = 1
_MOUNT_ATTR_NOSUID = 0x2
_MOUNT_ATTR_NODEV = 0x4
_MOUNT_ATTR_NOEXEC = 0x8
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_OPEN_TREE_CLONE = 1
_AT_EMPTY_PATH = 0x1000
# statvfs f_flag bit -> the mount flag that must be kept when remounting a bind: inside a user
# namespace the kernel locks these on mounts inherited from the parent namespace.
_LOCKED_FLAGS = {
    os.ST_NOSUID: _MS_NOSUID,
    os.ST_NODEV: _MS_NODEV,
    os.ST_NOEXEC: _MS_NOEXEC,
    os.ST_NOATIME: _MS_NOATIME,
    os.ST_NODIRATIME: _MS_NODIRATIME,
    os.ST_RELATIME: _MS_RELATIME,
}
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
    make_private("/")


def make_private(target: str) -> None:
    """Make the mount at ``target`` and every mount below it private (no propagation either way)."""
    _mount(None, target, None, _MS_REC | _MS_PRIVATE, None)


def mount_tmpfs(target: str, *, mode: int = 0o755) -> None:
    _mount("tmpfs", target, "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode={mode:o},size=1m")


def mount_bind(source_fd: int, target: str, *, read_only: bool) -> None:
    """Bind the file or directory open as ``source_fd`` onto ``target`` (optionally read-only)."""
    source = f"/proc/self/fd/{source_fd}"
    _mount(source, target, None, _MS_BIND | _MS_REC, None)
    if read_only:
        kept = os.statvfs(target).f_flag
        flags = _MS_BIND | _MS_REC | _MS_RDONLY | _MS_NOSUID | _MS_REMOUNT
        flags |= sum(flag for bit, flag in _LOCKED_FLAGS.items() if kept & bit)
        _mount(None, target, None, flags, None)


def mount_proc(target: str) -> None:
    """A fresh ``/proc`` of the caller's pid namespace, other users' processes hidden."""
    _mount("proc", target, "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "hidepid=2")


def remount_read_only(target: str) -> None:
    """Make the (tmpfs) mount at ``target`` read-only."""
    _mount(None, target, None, _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV, None)


def detach(target: str) -> None:
    """Lazily unmount ``target`` and everything below it (``umount2(MNT_DETACH)``)."""
    check(libc.umount2(target.encode(), ctypes.c_int(_MNT_DETACH)), f"umount {target}")


def new_tmpfs(*, size_bytes: int, inodes: int, mode: int = 0o700) -> int:
    """A tmpfs of at most ``size_bytes`` and ``inodes``, as a detached mount (a descriptor).

    Attached nowhere, so nothing of it lives in any mount table until :func:`attach_mount`;
    it goes away with its last descriptor and mount. Needs ``CAP_SYS_ADMIN``.
    """
    context = syscall("fsopen", ctypes.c_char_p(b"tmpfs"), 0)
    try:
        for key, value in (
            ("size", str(size_bytes)),
            ("nr_inodes", str(inodes)),
            ("mode", f"{mode:o}"),
        ):
            syscall(
                "fsconfig",
                context,
                _FSCONFIG_SET_STRING,
                ctypes.c_char_p(key.encode()),
                ctypes.c_char_p(value.encode()),
                0,
            )
        syscall("fsconfig", context, _FSCONFIG_CMD_CREATE, None, None, 0)
        flags = _MOUNT_ATTR_NOSUID | _MOUNT_ATTR_NODEV
        return syscall("fsmount", context, _FSMOUNT_CLOEXEC, flags)
    finally:
        os.close(context)


def clone_mount(mount_fd: int) -> int:
    """A detached copy of the mount ``mount_fd`` (same files), attachable in another namespace."""
    flags = _OPEN_TREE_CLONE | os.O_CLOEXEC | _AT_EMPTY_PATH
    return syscall("open_tree", mount_fd, ctypes.c_char_p(b""), flags)


def attach_mount(mount_fd: int, target: str) -> None:
    """Attach the detached mount ``mount_fd`` at ``target`` in the caller's mount namespace."""
    syscall(
        "move_mount",
        mount_fd,
        ctypes.c_char_p(b""),
        -100,  # AT_FDCWD
        ctypes.c_char_p(target.encode()),
        _MOVE_MOUNT_F_EMPTY_PATH,
    )
