"""Names of the confinement layers and the report of which ones a session actually got."""

from __future__ import annotations

from enum import StrEnum

from safeexec.sandbox.record import Record

__all__ = ["ALWAYS_REQUIRED", "DEFAULT_REQUIRED", "Layer", "LayerStatus", "parse_layer_report"]


class Layer(StrEnum):
    """One confinement layer, in the order the child applies them."""

    SESSION = "session"  # new session and process group
    WORKDIR = "workdir"  # private working directory
    ENV = "env"  # scrubbed environment
    RLIMITS = "rlimits"
    NETNS = "netns"  # network namespace with no usable interface
    IPCNS = "ipcns"
    PIDNS = "pidns"  # own pid namespace: the worker is pid 1, its death kills the tree
    MOUNTNS = "mountns"  # a private minimal root: runtime read-only, workdir at a neutral path
    PROC = "proc"  # a fresh /proc of the session's own pid namespace (hidepid=2)
    DISK = "disk"  # the workdir on a size-bounded tmpfs: unnamed files count too
    PRIVDROP = "privdrop"  # no capabilities (and, on a root host, an unprivileged uid)
    OWN_UID = "own_uid"  # a uid no other process uses (a root host's setresuid)
    NO_NEW_PRIVS = "no_new_privs"
    LANDLOCK = "landlock"  # filesystem: read-only runtime, read-write workdir, nothing else
    LANDLOCK_NET = "landlock_net"  # no TCP bind/connect (ABI >= 4)
    LANDLOCK_SCOPE = (
        "landlock_scope"  # no signals or abstract unix sockets out of the domain (ABI >= 6)
    )
    SECCOMP = "seccomp"
    # Checked and reported by the host, which makes them before the session runs any code:
    CGROUP_MEMORY = "cgroup_memory"  # memory.max: charges memfd, tmpfs, shmem, pipe buffers
    CGROUP_PIDS = "cgroup_pids"  # pids.max for the whole session
    CGROUP_CPU = "cgroup_cpu"  # a CPU cap, and the CPU meter every limit reads


# Required by default wherever the kernel supports them (see NativeBackend.open).
DEFAULT_REQUIRED = frozenset(
    {Layer.SECCOMP, Layer.LANDLOCK, Layer.CGROUP_MEMORY, Layer.CGROUP_PIDS, Layer.CGROUP_CPU}
)
# Plain system calls that work on every Linux; if one fails, something is badly wrong, so the
# session is refused rather than run with a hole.
ALWAYS_REQUIRED = frozenset(
    {Layer.SESSION, Layer.WORKDIR, Layer.ENV, Layer.RLIMITS, Layer.PRIVDROP, Layer.NO_NEW_PRIVS}
)


class LayerStatus(Record):
    """Whether one layer is in force for a session, and why not when it is not."""

    layer: Layer
    active: bool
    detail: str = ""


# Each layer with its name, made once: iterating the enum and reading ``.value`` at every open
# cost the host as much as the rest of the report's decoding.
_NAMED = tuple((layer, layer.value) for layer in Layer)


def parse_layer_report(data: object) -> dict[Layer, LayerStatus]:
    """Decode the worker's untrusted layer report (decoded JSON); a layer missing from it, or
    not clearly active, counts as inactive."""
    report: dict[Layer, LayerStatus] = {}
    entries = data if isinstance(data, dict) else {}
    for layer, name in _NAMED:
        entry = entries.get(name)
        if not isinstance(entry, dict):
            entry = {}
        detail = entry.get("detail")
        active = entry.get("active") is True
        if not isinstance(detail, str):
            detail = "" if active else "not reported by the worker"
        report[layer] = LayerStatus(layer=layer, active=active, detail=detail[:500])
    return report
