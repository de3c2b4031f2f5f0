"""The confinement ladder: the named rung a session's layer report reaches, and what each layer
stops and how an operator gets it.

A session applies every layer its environment gives; the rung names the result so that a
policy can require one (``[backends] rung``), the audit log records it and ``doctor`` prints it.
Rungs, strongest first (each names the layers it needs, beyond the wall every rung has):

- ``full``: namespaces (network, pid, IPC, mount with a fresh ``/proc``), cgroups (memory, pids,
  CPU) and Landlock: a root host, or an unprivileged one with user namespaces and a delegated
  cgroup;
- ``container``: no namespaces, but Landlock (files and TCP) and a uid of its own: root in a
  container without ``CAP_SYS_ADMIN``;
- ``unprivileged``: Landlock, the host's own uid: an unprivileged host without namespaces;
- ``minimal``: the wall alone (seccomp, no_new_privs, no capabilities, rlimits): a kernel
  without Landlock.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from safeexec.sandbox.layers import Layer, LayerStatus

__all__ = ["GUIDANCE", "RUNGS", "RUNG_LAYERS", "Rung", "meets", "missing_for", "rung_of"]


class Rung(StrEnum):
    """A named step of the ladder."""

    FULL = "full"
    CONTAINER = "container"
    UNPRIVILEGED = "unprivileged"
    MINIMAL = "minimal"


# The wall every rung has: without one of these no session runs at all.
_WALL = frozenset(
    {
        Layer.SESSION,
        Layer.WORKDIR,
        Layer.ENV,
        Layer.RLIMITS,
        Layer.PRIVDROP,
        Layer.NO_NEW_PRIVS,
        Layer.SECCOMP,
    }
)
RUNG_LAYERS: Mapping[Rung, frozenset[Layer]] = {
    Rung.FULL: _WALL
    | {
        Layer.LANDLOCK,
        Layer.NETNS,
        Layer.IPCNS,
        Layer.PIDNS,
        Layer.MOUNTNS,
        Layer.PROC,
        Layer.CGROUP_MEMORY,
        Layer.CGROUP_PIDS,
        Layer.CGROUP_CPU,
    },
    Rung.CONTAINER: _WALL | {Layer.LANDLOCK, Layer.LANDLOCK_NET, Layer.OWN_UID},
    Rung.UNPRIVILEGED: _WALL | {Layer.LANDLOCK},
    Rung.MINIMAL: _WALL,
}
RUNGS = tuple(Rung)  # strongest first
"""Every rung, strongest first."""


def rung_of(layers: Mapping[Layer, LayerStatus]) -> Rung | None:
    """The strongest rung whose layers are all active in ``layers``; None below ``minimal``."""
    active = {layer for layer, status in layers.items() if status.active}
    return next((rung for rung in RUNGS if RUNG_LAYERS[rung] <= active), None)


def meets(rung: Rung | None, required: Rung) -> bool:
    """Whether a session on ``rung`` satisfies a requirement of ``required`` (or stronger)."""
    return rung is not None and RUNGS.index(rung) <= RUNGS.index(required)


def missing_for(rung: Rung, layers: Mapping[Layer, LayerStatus]) -> list[Layer]:
    """The layers ``rung`` needs that ``layers`` lacks, in layer order."""
    return [
        layer
        for layer in Layer
        if layer in RUNG_LAYERS[rung] and not (layer in layers and layers[layer].active)
    ]


_NAMESPACES_FIX = (
    "run the host as root outside a container, or allow unprivileged user namespaces "
    "(sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 23.10+ an AppArmor profile with "
    "`userns,` for the interpreter); in Docker: --security-opt seccomp=unconfined "
    "--cap-add SYS_ADMIN, or a runtime with nested namespaces (sysbox, gVisor)"
)
_CGROUP_FIX = (
    "a writable cgroup: root on the host, a delegated cgroup v2 subtree with the controller "
    "enabled (systemd-run --user -p Delegate=yes --scope ..., or SAFEEXEC_CGROUP_PARENT=<a "
    "writable directory of /sys/fs/cgroup>), or in Docker --cgroupns=private with "
    "/sys/fs/cgroup mounted read-write"
)
GUIDANCE: Mapping[Layer, tuple[str, str]] = {
    Layer.SESSION: ("signals to the host's process group", "setsid: always available"),
    Layer.WORKDIR: ("files left among the host's", "a private directory: always available"),
    Layer.ENV: ("the host's secrets in environment variables", "always available"),
    Layer.RLIMITS: ("runaway address space, files, processes", "setrlimit: always available"),
    Layer.NETNS: (
        "any network use a socket the filter lets through could make",
        _NAMESPACES_FIX,
    ),
    Layer.IPCNS: (
        "System V IPC and POSIX message queues shared with the host and other sessions (so "
        "without it they are refused: code that uses them fails)",
        _NAMESPACES_FIX,
    ),
    Layer.PIDNS: (
        "seeing the host's processes; orphans outliving the worker (the host then walks "
        "/proc to kill the tree)",
        _NAMESPACES_FIX,
    ),
    Layer.MOUNTNS: (
        "the host's directory tree being visible by name (Landlock still refuses opening it)",
        _NAMESPACES_FIX,
    ),
    Layer.PROC: ("reading other processes' /proc entries", _NAMESPACES_FIX),
    Layer.DISK: (
        "unnamed files (O_TMPFILE, open-then-unlink) beyond the disk budget",
        "root, or CAP_SYS_ADMIN for a size-bounded tmpfs per workdir",
    ),
    Layer.PRIVDROP: (
        "capabilities reaching the session",
        "a host that may setresuid and capset (in a user namespace: one whose uid_map holds the "
        "session uids)",
    ),
    Layer.OWN_UID: (
        "signals to and files of other processes of the host's uid (Landlock's scope covers "
        "signals where it has ABI 6)",
        "start the host as root with CAP_SETUID (a container's root), with Python installed "
        "beneath world-traversable directories (e.g. /usr/local, /opt)",
    ),
    Layer.NO_NEW_PRIVS: ("gaining privileges through setuid binaries", "always available"),
    Layer.LANDLOCK: (
        "reading and writing host files outside the runtime and the workdir",
        "Linux 5.13+ with Landlock enabled (lsm=...,landlock)",
    ),
    Layer.LANDLOCK_NET: (
        "TCP bind/connect, a second wall behind seccomp's refusal of new sockets",
        "Linux 6.7+ (Landlock ABI 4)",
    ),
    Layer.LANDLOCK_SCOPE: (
        "signals to and abstract unix sockets of processes outside the session",
        "Linux 6.12+ (Landlock ABI 6)",
    ),
    Layer.SECCOMP: (
        "kernel interfaces no cell needs: ptrace, bpf, new sockets, namespaces, mounts",
        "a kernel with CONFIG_SECCOMP_FILTER",
    ),
    Layer.CGROUP_MEMORY: (
        "memory the address-space rlimit cannot see: memfd, tmpfs, shared memory, pipe buffers",
        _CGROUP_FIX,
    ),
    Layer.CGROUP_PIDS: ("fork bombs across the session's uid beyond RLIMIT_NPROC", _CGROUP_FIX),
    Layer.CGROUP_CPU: (
        "CPU of auto-reaped children going unmetered; a per-session CPU cap",
        _CGROUP_FIX,
    ),
}
