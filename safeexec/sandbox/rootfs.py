"""A private filesystem view per session: a mount namespace and a chroot into a minimal root.

Landlock decides what a session may open, but not what it may ``stat``, and the host's tree
gives away file names, sizes, owners and pids that way. So the session gets its own root, an
empty read-only tmpfs holding only: the runtime (interpreter, stdlib, site-packages, safeexec,
system libraries) read-only at the paths the warm interpreter already uses; the few devices
Python opens; the workdir, read-write, at the fixed path :data:`SANDBOX_WORKDIR`; and a fresh
``/proc`` of the session's own pid namespace (``hidepid=2``). No host ``/tmp``, no ``/etc``
beyond the loader cache and time zone, no other process. The session is chrooted into it, in a
mount namespace of its own, so nothing of the host's tree is reachable by any path.
"""

from __future__ import annotations

import os
import stat

from safeexec.sandbox import namespaces

__all__ = [
    "SANDBOX_WORKDIR",
    "WORKDIR_PARENT",
    "assemble_shared_root",
    "enter_private_root",
    "enter_shared_root",
    "workdir_parent_is_empty",
]

SANDBOX_WORKDIR = "/home/sandbox"
WORKDIR_PARENT = os.path.dirname(SANDBOX_WORKDIR)
# Where the new root is assembled before the chroot: the first of these that holds none of
# the paths the session needs, so that on failure, unmounting it gives the old view back.
_STAGING_CANDIDATES = ("/mnt", "/media", "/srv", "/opt", "/var/tmp", "/tmp")
_DEVICE_LINKS = {
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
}


def _mount_point(root: str, path: str, *, directory: bool) -> str:
    target = root + path
    if directory:
        os.makedirs(target, mode=0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        if not os.path.exists(target):
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))
    return target


def _top_level_links() -> dict[str, str]:
    """``/lib64 -> usr/lib64`` and the like: the ELF loader path of every binary goes through
    them, so a child ``execve`` of the interpreter still finds its loader."""
    links = {}
    for name in os.listdir("/"):
        path = "/" + name
        if os.path.islink(path):
            links[path] = os.readlink(path)
    return links


def workdir_parent_is_empty(paths: tuple[str, ...]) -> bool:
    """Whether, in a private root holding ``paths``, :data:`WORKDIR_PARENT` holds nothing but
    the workdir's mount point.

    Landlock skips a mount point's own directory when it walks up from a file, so a workdir
    attached after the process confined itself is covered only by a rule on its parent; that
    rule may then cover nothing else (no runtime path at, under or above the parent).
    """
    parent = WORKDIR_PARENT + "/"
    return not any(
        (p + "/").startswith(parent) or parent.startswith(p.rstrip("/") + "/") for p in paths
    )


def enter_private_root(
    *,
    read_only: tuple[str, ...],
    read_write: tuple[str, ...],
    workdir: str | None,
    workdir_mount: int | None = None,
) -> str:
    """Build the minimal root, chroot into it and ``chdir`` to the workdir; returns where the
    root lies in the (new) mount namespace, the workdir being :data:`SANDBOX_WORKDIR` inside.

    ``workdir_mount``, a detached mount (the host's size-bounded tmpfs), is attached as the
    workdir instead of a bind of ``workdir``. With neither, the workdir is an empty mount point
    for someone outside to attach a workdir on later (a pre-confined pooled session; see
    :func:`workdir_parent_is_empty`), and the process stays at ``/``.

    Needs ``CAP_SYS_ADMIN`` over the current user namespace and to be the first process of the
    pid namespace whose ``/proc`` it mounts. Raises ``OSError`` on any failure, after putting
    the old view back (in a mount namespace of the caller's own).
    """
    namespaces.unshare(namespaces.CLONE_NEWNS)
    namespaces.make_root_private()
    root = _assemble(
        read_only=read_only, read_write=read_write, workdir=workdir, workdir_mount=workdir_mount
    )
    try:
        _enter(root)
    except OSError:
        namespaces.detach(root)  # back to the view we had, in a namespace of our own
        raise
    if workdir_mount is not None or workdir is not None:
        os.chdir(SANDBOX_WORKDIR)
    return root


def assemble_shared_root(*, read_only: tuple[str, ...], read_write: tuple[str, ...]) -> str:
    """Once, in the template's own mount namespace: build the minimal root (read-only, private,
    an empty workdir mount point, no ``/proc`` yet) for pool members to enter with
    :func:`enter_shared_root`; returns where it lies. Raises ``OSError``, having detached it.

    Every member gets a copy of its mounts in a mount namespace of its own; the tmpfs beneath is
    one for all, read-only, and nothing in a session can make it writable (no capabilities;
    seccomp refuses mount), so no session can leave anything in it for another.
    """
    root = _assemble(read_only=read_only, read_write=read_write, workdir=None, workdir_mount=None)
    try:
        # Private: a mount made in one member's copy (its /proc, its workdir) reaches no other.
        namespaces.make_private(root)
    except OSError:
        namespaces.detach(root)
        raise
    return root


def enter_shared_root(root: str) -> None:
    """In a pool member: a mount namespace of its own (a copy of the template's, holding the
    root :func:`assemble_shared_root` built), a fresh ``/proc`` in it, and a chroot into it.

    Needs what :func:`enter_private_root` needs; raises ``OSError``."""
    namespaces.unshare(namespaces.CLONE_NEWNS)
    namespaces.make_root_private()
    _enter(root)


def _assemble(
    *,
    read_only: tuple[str, ...],
    read_write: tuple[str, ...],
    workdir: str | None,
    workdir_mount: int | None,
) -> str:
    """Mount the minimal root, read-only, in the caller's mount namespace; returns where."""
    clash = [p for p in (*read_only, *read_write) if (p + "/").startswith(SANDBOX_WORKDIR + "/")]
    if clash:
        raise OSError(17, f"runtime paths {clash} lie where the workdir goes ({SANDBOX_WORKDIR})")
    links = _top_level_links()
    root = _staging([*([workdir] if workdir is not None else []), *read_only, *read_write])
    # Descriptors of the sources, opened in the caller's namespace: a bind's source must be a
    # mount of the caller's own namespace.
    sources: list[tuple[str, int, bool]] = []
    try:
        for path, writable in [*((p, False) for p in read_only), *((p, True) for p in read_write)]:
            try:
                sources.append((path, os.open(path, os.O_PATH | os.O_CLOEXEC), writable))
            except FileNotFoundError:
                continue
        if workdir_mount is None and workdir is not None:
            work = os.open(workdir, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            sources.append((SANDBOX_WORKDIR, work, True))
        namespaces.mount_tmpfs(root, mode=0o755)
        try:
            mount_point = _mount_point(root, SANDBOX_WORKDIR, directory=True)
            if workdir_mount is not None:
                namespaces.attach_mount(workdir_mount, mount_point)
            _build(root, sources, links)
        except OSError:
            namespaces.detach(root)
            raise
    finally:
        for _path, fd, _writable in sources:
            os.close(fd)
    return root


def _staging(needed: list[str]) -> str:
    for candidate in _STAGING_CANDIDATES:
        if os.path.isdir(candidate) and not os.path.islink(candidate):
            prefix = candidate + "/"
            if not any(p == candidate or p.startswith(prefix) for p in needed):
                return candidate
    raise OSError(
        2,
        f"no directory to assemble the root in: all of {_STAGING_CANDIDATES} hold "
        "paths the session needs or do not exist",
    )


def _build(root: str, sources: list[tuple[str, int, bool]], links: dict[str, str]) -> None:
    """Fill the tmpfs at ``root`` with the session's view, a mount point for ``/proc``, and make
    it read-only."""
    for path, fd, writable in sources:
        directory = stat.S_ISDIR(os.fstat(fd).st_mode)
        target = _mount_point(root, path, directory=directory)
        namespaces.mount_bind(fd, target, read_only=not writable)
    for path, target in links.items():
        if not os.path.lexists(root + path):
            os.symlink(target, root + path)
    for name, target in _DEVICE_LINKS.items():
        os.makedirs(root + "/dev", mode=0o755, exist_ok=True)
        if not os.path.lexists(f"{root}/dev/{name}"):
            os.symlink(target, f"{root}/dev/{name}")
    os.makedirs(root + "/proc", mode=0o555, exist_ok=True)
    namespaces.remount_read_only(root)


def _enter(root: str) -> None:
    """Mount a fresh ``/proc`` of the caller's pid namespace in the root and chroot into it."""
    namespaces.mount_proc(root + "/proc")
    # chroot, not pivot_root: unmounting the host's tree after a pivot waits for an RCU grace
    # period (~14 ms per open, measured). Left mounted but outside our root, it is reachable by
    # no path: no descriptor from outside is open, capabilities go next, and seccomp refuses
    # chroot, pivot_root, mount, setns and open_by_handle_at.
    os.chroot(root)
    os.chdir("/")
