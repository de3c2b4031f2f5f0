"""cgroup v2: the delegated subtree a host makes session groups in, and making it usable.

On a cgroup v2 host (one unified hierarchy: today's distributions, and containers with a
cgroup namespace) session groups are leaves of a *delegated subtree*: the directory named by
``SAFEEXEC_CGROUP_PARENT``, else the host's own group (``0::/path`` in /proc/self/cgroup) in
a cgroup2 mount. The kernel's no-internal-processes rule lets a group other than the root
hand controllers to its children (``cgroup.subtree_control``) only while it holds no process
itself, and a container's or a ``Delegate=yes`` scope's own group holds the host: so the
processes in the subtree move into a leaf ``<subtree>/safeexec-host`` and session leaves are
made beside it. A later host started in that leaf recognises it and uses its parent. A
controller the subtree does not get from its parent (absent from ``cgroup.controllers``)
stays missing, with the reason.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "HOST_LEAF",
    "PARENT_VARIABLE",
    "Located",
    "Subtree",
    "cgroup2_mounts",
    "delegate",
    "locate",
    "own_group",
    "read_control",
    "write_control",
]

PARENT_VARIABLE = "SAFEEXEC_CGROUP_PARENT"
"""Environment variable: a directory in a cgroup2 mount to make session groups below."""
HOST_LEAF = "safeexec-host"
"""The leaf the subtree's own processes move into when controllers must be handed down."""

_MOVE_ROUNDS = 20  # processes forked while moving are moved in the next round


@dataclass(frozen=True, slots=True)
class Subtree:
    """Where session leaves go on cgroup v2, and what they get."""

    directory: str  # "" when there is no usable subtree
    problem: str = ""  # why there is none ("" when there is)
    controllers: frozenset[str] = frozenset()  # enabled for the leaves
    missing: Mapping[str, str] = field(default_factory=dict)  # wanted controller -> why not
    moved: tuple[int, ...] = ()  # the pids moved into the host leaf


def own_group(proc_cgroup: str) -> str | None:
    """The v2 group in a /proc/<pid>/cgroup text (its ``0::`` line), None without one."""
    for line in proc_cgroup.splitlines():
        if line.startswith("0::"):
            return line[3:]
    return None


def cgroup2_mounts(mountinfo: str) -> list[tuple[str, str]]:
    """(mount point, subtree root) of every cgroup2 mount in a mountinfo text."""
    found = []
    for line in mountinfo.splitlines():
        before, _sep, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) >= 5 and tail and tail[0] == "cgroup2":
            found.append((_unescape(fields[4]), _unescape(fields[3])))
    return found


def _unescape(text: str) -> str:
    """A mountinfo path with its octal escapes (``\\040`` for a space) decoded."""
    if "\\" not in text:
        return text
    return text.encode("latin-1").decode("unicode_escape").encode("latin-1").decode()


class Located(NamedTuple):
    """Where :func:`locate` found the subtree."""

    directory: str  # "" when there is none
    problem: str  # why there is none ("" when there is)
    # Whether its own processes may be moved into a leaf: a subtree handed to this host (named
    # in the variable, a container's own group, marked delegated by systemd, or one a host
    # moved before), not a group some manager keeps for processes of its own.
    delegated: bool


def locate(mountinfo: str, proc_cgroup: str, configured: str | None) -> Located:
    """The subtree: ``configured`` if given, else the host's own group where a cgroup2 mount
    shows it."""
    if configured:
        if not os.path.isabs(configured):
            return Located("", f"{PARENT_VARIABLE}={configured} is not an absolute path", False)
        if not os.path.isfile(os.path.join(configured, "cgroup.controllers")):
            problem = f"{PARENT_VARIABLE}={configured} is not a directory of a cgroup2 mount"
            return Located("", problem, False)
        return Located(os.path.normpath(configured), "", True)
    group = own_group(proc_cgroup)
    if group is None:
        problem = "this process is in no cgroup v2 group (no 0:: line in /proc/self/cgroup)"
        return Located("", problem, False)
    mounts = cgroup2_mounts(mountinfo)
    if not mounts:
        return Located("", "no cgroup2 filesystem is mounted", False)
    for mount_point, root in mounts:
        relative = os.path.relpath(group, root)
        if relative == os.pardir or relative.startswith(os.pardir + os.sep):
            continue  # this mount shows another part of the tree
        directory = os.path.normpath(os.path.join(mount_point, relative))
        if os.path.basename(directory) == HOST_LEAF and _empty(os.path.dirname(directory)):
            return Located(os.path.dirname(directory), "", True)  # a host moved here before
        return Located(directory, "", relative == os.curdir or _marked_delegated(directory))
    return Located("", f"no cgroup2 mount shows this process's group {group}", False)


def _marked_delegated(directory: str) -> bool:
    """Whether systemd marked ``directory`` delegated (``Delegate=yes``, systemd 251+)."""
    for name in ("trusted.delegate", "user.delegate"):
        with contextlib.suppress(OSError):
            if os.getxattr(directory, name) == b"1":
                return True
    return False


def _empty(directory: str) -> bool:
    with contextlib.suppress(OSError):
        return not read_control(os.path.join(directory, "cgroup.procs")).split()
    return False


def delegate(directory: str, wanted: Iterable[str], *, delegated: bool) -> Subtree:
    """Make ``directory`` hand the ``wanted`` controllers it has to the leaves made in it:
    enable them in its ``cgroup.subtree_control``, where the kernel refuses while it holds
    processes moving them into :data:`HOST_LEAF` first if it is ``delegated`` to this host."""
    if not os.access(os.path.join(directory, "cgroup.procs"), os.W_OK) or not os.access(
        directory, os.W_OK | os.X_OK
    ):
        return Subtree(
            directory="",
            problem=f"{directory} is not writable by this process "
            f"(delegate it, or name one that is in {PARENT_VARIABLE})",
        )
    try:
        offered = set(read_control(os.path.join(directory, "cgroup.controllers")).split())
        enabled = set(read_control(os.path.join(directory, "cgroup.subtree_control")).split())
    except OSError as exc:
        return Subtree(directory="", problem=f"cannot read {directory}: {exc.strerror or exc}")
    missing: dict[str, str] = {}
    moved: list[int] = []
    for name in wanted:
        if name in enabled:
            continue
        if name not in offered:
            missing[name] = (
                f"the {name} controller is not in {directory}/cgroup.controllers "
                "(the parent group does not delegate it)"
            )
            continue
        try:
            _enable(directory, name)
        except OSError as exc:
            if exc.errno != errno.EBUSY or moved:
                missing[name] = _refused(directory, name, exc)
                continue
            if not delegated:
                missing[name] = (
                    f"{directory} holds processes, so the kernel hands {name} to no group below "
                    "it, and it is no delegated subtree whose processes this host may move "
                    f"(systemd Delegate=yes, a container's own group, or {PARENT_VARIABLE})"
                )
                continue
            # The no-internal-processes rule: move the subtree's own processes into a leaf.
            try:
                moved = _move_into_leaf(directory)
                _enable(directory, name)
            except OSError as again:
                missing[name] = _refused(directory, name, again)
                continue
        enabled.add(name)
    return Subtree(
        directory=directory,
        controllers=frozenset(enabled),
        missing=missing,
        moved=tuple(moved),
    )


def _refused(directory: str, name: str, exc: OSError) -> str:
    return f"{directory}/cgroup.subtree_control refused +{name}: {exc.strerror or exc}"


def _enable(directory: str, name: str) -> None:
    write_control(os.path.join(directory, "cgroup.subtree_control"), f"+{name}")


def _move_into_leaf(directory: str) -> list[int]:
    """Move every process of ``directory`` into its :data:`HOST_LEAF`; the pids moved.

    Raises ``OSError`` for a process this one may not move (the others stay moved)."""
    leaf = os.path.join(directory, HOST_LEAF)
    with contextlib.suppress(FileExistsError):
        os.mkdir(leaf, 0o755)
    moved: list[int] = []
    for _round in range(_MOVE_ROUNDS):
        pids = [int(p) for p in read_control(os.path.join(directory, "cgroup.procs")).split()]
        if not pids:
            break
        for pid in pids:
            try:
                write_control(os.path.join(leaf, "cgroup.procs"), str(pid))
            except ProcessLookupError:
                continue  # exited meanwhile
            moved.append(pid)
    return moved


def write_control(path: str, value: str) -> None:
    """Write a control file with one system call (cgroup files take one write each)."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode("ascii"))
    finally:
        os.close(fd)


def read_control(path: str) -> str:
    """The text of a control file, read without the text-file stack."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks).decode()
    finally:
        os.close(fd)
