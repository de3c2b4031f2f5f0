"""Confine the calling session process, layer by layer, and report what took.

Called in the child forked from the template, before any user code exists in the process.
Each layer either applies or records why it did not; the host decides (``require``) whether a
session missing a layer may run. Order: session → private root (mount namespace, fresh /proc,
the workdir moved to a neutral path) → workdir → environment → rlimits → (root: drop to an
unprivileged uid) → capabilities → no_new_privs → Landlock → seccomp. No step needs
``CAP_SYS_ADMIN``: Landlock and seccomp come after no_new_privs, which is what lets an
unprivileged process (or root in a container) load them; :data:`ORDER` names the steps, and
``tests/rungs`` holds every rung to it.
Namespaces come first and from outside: the template enters one empty network namespace once
(:func:`enter_template_namespaces`) and makes each session process pid 1 of fresh pid and IPC
namespaces when it forks it, because a pid namespace only applies to children of its creator.
"""

from __future__ import annotations

import os
import resource
import stat
from collections.abc import Callable, Sequence
from enum import StrEnum

from safeexec.sandbox import landlock, namespaces, privileges, rootfs, seccomp
from safeexec.sandbox.layers import Layer
from safeexec.sandbox.protocol import SessionConfig
from safeexec.sandbox.record import Record
from safeexec.sandbox.session_env import TMP_DIR

__all__ = [
    "ORDER",
    "Confinement",
    "Placement",
    "Preconfined",
    "Step",
    "assemble_shared_root",
    "confine",
    "enter_template_namespaces",
    "finish_preconfined",
    "hidden_from_others",
    "preconfine",
    "reachable_by_others",
]

# Per-process lifetime CPU backstop, as a multiple of the per-call limit; per-call CPU time is
# enforced from outside by the host, which kills the whole tree.
SESSION_CPU_FACTOR = 100
_PAGE = os.sysconf("SC_PAGE_SIZE")
# A bounded main-thread stack: runaway C recursion then faults fast instead of eating memory.
_STACK_BYTES = 16 * 1024 * 1024
_DEVICES_READ_WRITE = ("/dev/null", "/dev/zero")


class Placement(Record):
    """What the template adds to the host's :class:`SessionConfig`: who the session becomes and
    which runtime paths it may read."""

    uid: int | None  # set when the host runs as root: the unprivileged identity to become
    gid: int | None
    read_only: tuple[str, ...]
    # The minimal root the template assembled once (rootfs.assemble_shared_root), for pool
    # members to enter; None: each builds its own.
    shared_root: str | None = None


class Confinement:
    """The layer report a session sends to the host in its ``hello`` frame."""

    __slots__ = ("layers",)

    def __init__(self) -> None:
        self.layers: dict[str, dict[str, object]] = {}

    def mark(self, layer: Layer, active: bool, detail: str = "") -> None:
        self.layers[layer.value] = {"active": active, "detail": detail}


def enter_template_namespaces(read_only: tuple[str, ...]) -> dict[str, object]:
    """Once, in the template: an empty network namespace that all its sessions share, and a pid
    namespace whose first child (the real template) can make a fresh pid namespace per session.

    Not root: a user namespace first (mapping our own ids), which also gives the template the
    capabilities to create per-session pid, IPC and mount namespaces. Root: a private mount
    namespace in which runtime paths under directories an unprivileged uid cannot traverse
    (``/root``) are re-exposed read-only, so sessions can drop to an unprivileged uid. Returns
    the netns status.
    """
    as_root = os.geteuid() == 0
    uid, gid = os.getuid(), os.getgid()
    # A mount namespace of its own in both cases: the template enters a pre-confined session's
    # mount namespace to attach its workdir and must be allowed back into its own.
    flags = namespaces.CLONE_NEWNET | namespaces.CLONE_NEWPID | namespaces.CLONE_NEWNS
    flags |= 0 if as_root else namespaces.CLONE_NEWUSER
    try:
        namespaces.unshare(flags)
        if as_root:
            namespaces.make_root_private()
            _expose_hidden_paths(tuple((p, True) for p in read_only if os.path.isdir(p)))
        else:
            namespaces.map_current_ids(uid, gid)
    except OSError as exc:
        return {"active": False, "detail": f"unshare refused: {exc.strerror or exc}"}
    via = "" if as_root else ", inside an unprivileged user namespace"
    return {"active": True, "detail": f"an empty network namespace, loopback down{via}"}


def reachable_by_others(path: str) -> bool:
    """Whether an unprivileged uid could walk to the directory ``path`` (every ancestor
    world-searchable)."""
    return not hidden_from_others([path]) and os.path.isdir(path)


class Step(StrEnum):
    """The last steps of confinement, whose order matters without ``CAP_SYS_ADMIN``."""

    PRIVDROP = "privdrop"
    NO_NEW_PRIVS = "no_new_privs"
    LANDLOCK = "landlock"
    SECCOMP = "seccomp"


ORDER = (Step.PRIVDROP, Step.NO_NEW_PRIVS, Step.LANDLOCK, Step.SECCOMP)
"""Privileges go first (the uid change needs them), then no_new_privs, which is what lets a
process without ``CAP_SYS_ADMIN`` (every session: it has just dropped its capabilities) load
Landlock and seccomp at all."""


def hidden_from_others(paths: Sequence[str]) -> list[str]:
    """Those of ``paths`` beneath a directory an unprivileged uid cannot walk through."""
    hidden = []
    for path in paths:
        parts = os.path.abspath(path).split(os.sep)[1:]
        ancestors = (os.sep + os.sep.join(parts[:depth]) for depth in range(1, len(parts)))
        if not all(_traversable_by_others(ancestor) for ancestor in ancestors):
            hidden.append(path)
    return hidden


def confine(
    config: SessionConfig,
    placement: Placement,
    seccomp_program: bytes,
    confinement: Confinement,
    *,
    own_mount_namespace: bool,
    workdir_mount: int | None = None,
    order: Sequence[Step] = ORDER,
) -> SessionConfig:
    """Apply every remaining layer to this process; failures are recorded, not raised.

    Returns the config as the session now sees it: inside a private root the workdir (and the
    environment's paths into it) are at the neutral :data:`rootfs.SANDBOX_WORKDIR`.
    ``workdir_mount`` is the host's size-bounded mount for the workdir, detached, if any.
    """
    _new_session(confinement)
    config, private_root = _private_root(config, placement, confinement, workdir_mount)
    _disk(config, confinement, workdir_mount, private_root=private_root)
    _enter_workdir(config, placement, confinement)
    _scrub_environment(config, confinement)
    # RLIMIT_NPROC counts every task of the real uid: a session that keeps the host's uid
    # gets its budget on top of what that uid runs already (as far as it can see them), so the
    # host's and other sessions' processes do not use it up.
    shared = placement.uid is None and not private_root
    _set_rlimits(config, confinement, _mapped_bytes(), others=_tasks_of_own_uid() if shared else 0)
    _apply(
        order,
        confinement,
        seccomp_program,
        drop=lambda: _drop_privileges(
            config.workdir,
            placement,
            confinement,
            own_mount_namespace=own_mount_namespace and not private_root,
        ),
        restrict=lambda: _landlock(config, placement, confinement),
    )
    # Last, once the session's own Landlock layer is in force (see seccomp.RUNG_CLASSES).
    _refuse_for_rung(config.rung_filter, confinement)
    return config


def _apply(
    order: Sequence[Step],
    confinement: Confinement,
    seccomp_program: bytes,
    *,
    drop: Callable[[], None],
    restrict: Callable[[], None],
) -> None:
    """Run the last steps in ``order`` (:data:`ORDER`; a test injects another)."""
    steps: dict[Step, Callable[[], None]] = {
        Step.PRIVDROP: drop,
        Step.NO_NEW_PRIVS: lambda: _no_new_privs(confinement),
        Step.LANDLOCK: restrict,
        Step.SECCOMP: lambda: _seccomp(seccomp_program, confinement),
    }
    for step in order:
        steps[step]()


class Preconfined(Record):
    """A pooled session process confined ahead of its claim: where its root lies in its mount
    namespace (the template attaches the workdir at :data:`rootfs.SANDBOX_WORKDIR` beneath it),
    its mapped size before any session state, the base of its address-space limit, and the
    session's own Landlock layer with every rule but the workdir's, built ahead (None when the
    first layer did not apply, or building it failed: then it is built whole at the claim)."""

    root: str
    mapped_bytes: int
    session_rules: landlock.Ruleset | None


def preconfine(
    placement: Placement, seccomp_program: bytes, confinement: Confinement, *, lowest_fd: int
) -> Preconfined | None:
    """Before any claim, apply every layer that does not depend on the session.

    Private root with an empty workdir mount point, new session, privilege drop, no_new_privs,
    Landlock (read-write beneath the workdir's parent, which holds nothing else) and seccomp.
    What is left for :func:`finish_preconfined` only narrows: the workdir (attached by the
    template, which this process can no longer do), environment, rlimits, the session's own
    Landlock layer (whose rules but the workdir's are added here, on a descriptor numbered
    ``lowest_fd`` or above: the claim's descriptors go below it).
    Returns None, having changed nothing that :func:`confine` would redo differently, when the
    layering does not allow it (no private root, or a runtime path beside the workdir).
    """
    if not rootfs.workdir_parent_is_empty(_root_paths(placement.read_only)):
        return None
    try:
        if placement.shared_root is not None:
            root = placement.shared_root
            rootfs.enter_shared_root(root)
        else:
            root = rootfs.enter_private_root(
                read_only=placement.read_only, read_write=_DEVICES_READ_WRITE, workdir=None
            )
    except OSError:
        return None
    confinement.mark(
        Layer.MOUNTNS,
        True,
        f"minimal root: {len(placement.read_only)} runtime paths read-only, "
        f"workdir at {rootfs.SANDBOX_WORKDIR}",
    )
    confinement.mark(Layer.PROC, True, "fresh /proc of the session's pid namespace, hidepid=2")
    _new_session(confinement)
    mapped = _mapped_bytes()
    session_rules: list[landlock.Ruleset | None] = [None]

    def restrict() -> None:
        _restrict(rootfs.WORKDIR_PARENT, placement, confinement, make_symlinks=True)
        if confinement.layers[Layer.LANDLOCK.value]["active"]:
            session_rules[0] = _session_rules(placement, lowest_fd)

    _apply(
        ORDER,
        confinement,
        seccomp_program,
        drop=lambda: _drop_privileges(
            rootfs.SANDBOX_WORKDIR, placement, confinement, own_mount_namespace=False
        ),
        restrict=restrict,
    )
    return Preconfined(root=root, mapped_bytes=mapped, session_rules=session_rules[0])


def _root_paths(read_only: tuple[str, ...]) -> tuple[str, ...]:
    """Every path a pre-confined session's root holds besides its workdir."""
    return (*read_only, *_DEVICES_READ_WRITE)


def assemble_shared_root(read_only: tuple[str, ...]) -> str | None:
    """In the template, once: the root every pool member enters (see
    :func:`rootfs.assemble_shared_root`), or None when members cannot pre-confine or it cannot
    be built (then each builds its own, as before)."""
    if not rootfs.workdir_parent_is_empty(_root_paths(read_only)):
        return None
    try:
        return rootfs.assemble_shared_root(read_only=read_only, read_write=_DEVICES_READ_WRITE)
    except OSError:
        return None


def finish_preconfined(
    config: SessionConfig,
    placement: Placement,
    preconfined: Preconfined,
    confinement: Confinement,
    *,
    disk: bool,
) -> SessionConfig:
    """After the claim, in a :func:`preconfine` d process whose workdir the template attached:
    enter it, scrub the environment, lower the rlimits, and stack the session's own Landlock
    layer (exactly what :func:`confine` would apply, the workdir itself read-write, symlinks
    as the config says), so the view is no wider than a session confined after its claim.

    ``disk`` says whether the workdir is the host's size-bounded mount. Returns the config as
    the session sees it.
    """
    config = _as_seen_inside(config)
    _disk(config, confinement, None, private_root=True, attached=disk)
    _enter_workdir(config, placement.replace(uid=None, gid=None), confinement)
    _scrub_environment(config, confinement)
    _set_rlimits(config, confinement, preconfined.mapped_bytes)
    if confinement.layers[Layer.LANDLOCK.value]["active"]:
        _restrict(
            config.workdir,
            placement,
            confinement,
            make_symlinks=config.workdir_symlinks,
            rules=preconfined.session_rules,
        )
    _refuse_for_rung(config.rung_filter, confinement)
    return config


def _private_root(
    config: SessionConfig,
    placement: Placement,
    confinement: Confinement,
    workdir_mount: int | None,
) -> tuple[SessionConfig, bool]:
    """Pivot into a minimal root; on failure the session keeps the host's view, and says so.

    A failure part-way leaves the process in a namespace of its own whose root may be half
    built; Landlock still confines it, and a policy that needs the view ``require``s it.
    """
    host_workdir = config.workdir
    workdir = rootfs.SANDBOX_WORKDIR
    try:
        rootfs.enter_private_root(
            read_only=placement.read_only,
            read_write=_DEVICES_READ_WRITE,
            workdir=host_workdir,
            workdir_mount=workdir_mount,
        )
    except OSError as exc:
        reason = f"private root: {exc.strerror or exc}"
        confinement.mark(Layer.MOUNTNS, False, reason)
        confinement.mark(Layer.PROC, False, reason)
        return config, False
    confinement.mark(
        Layer.MOUNTNS,
        True,
        f"minimal root: {len(placement.read_only)} runtime paths read-only, workdir at {workdir}",
    )
    confinement.mark(Layer.PROC, True, "fresh /proc of the session's pid namespace, hidepid=2")
    return _as_seen_inside(config), True


def _as_seen_inside(config: SessionConfig) -> SessionConfig:
    """``config`` with the workdir (and the environment's paths into it) at the neutral path."""
    host_workdir, workdir = config.workdir, rootfs.SANDBOX_WORKDIR
    env = {name: _moved(value, host_workdir, workdir) for name, value in config.env.items()}
    return config.replace(workdir=workdir, env=env)


def _disk(
    config: SessionConfig,
    confinement: Confinement,
    mount: int | None,
    *,
    private_root: bool,
    attached: bool = False,
) -> None:
    """Report the host's size-bounded workdir mount; without a private root, attach it over
    the workdir's path in a mount namespace of our own (the host's mount is not in ours).
    ``attached``: the template attached it already."""
    if mount is None and not attached:
        confinement.mark(Layer.DISK, False, "the host gave no size-bounded mount for the workdir")
        return
    try:
        if not private_root and mount is not None:
            namespaces.unshare(namespaces.CLONE_NEWNS)
            namespaces.make_root_private()
            namespaces.attach_mount(mount, config.workdir)
        limit = os.statvfs(config.workdir)
    except OSError as exc:
        confinement.mark(Layer.DISK, False, f"workdir mount: {exc.strerror or exc}")
        return
    size = limit.f_blocks * limit.f_frsize
    confinement.mark(
        Layer.DISK, True, f"workdir on a tmpfs of {size} bytes, {limit.f_files} inodes"
    )


def _moved(value: str, old: str, new: str) -> str:
    """``value`` with a leading path ``old`` (or ``old/...``) replaced by ``new``."""
    if value == old or value.startswith(old.rstrip("/") + "/"):
        return new + value[len(old.rstrip("/")) :]
    return value


def _new_session(confinement: Confinement) -> None:
    try:
        os.setsid()
        confinement.mark(Layer.SESSION, True, f"sid={os.getsid(0)}")
    except OSError as exc:
        confinement.mark(Layer.SESSION, False, f"setsid: {exc.strerror}")


def _enter_workdir(config: SessionConfig, placement: Placement, confinement: Confinement) -> None:
    uid, gid = placement.uid, placement.gid
    try:
        if uid is not None and gid is not None:
            os.chown(config.workdir, uid, gid)
        os.chdir(config.workdir)
        tmp = os.path.join(config.workdir, TMP_DIR)
        os.makedirs(tmp, mode=0o700, exist_ok=True)
        if uid is not None and gid is not None:
            os.chown(tmp, uid, gid, follow_symlinks=False)
        confinement.mark(Layer.WORKDIR, True, config.workdir)
    except OSError as exc:
        confinement.mark(Layer.WORKDIR, False, f"{config.workdir}: {exc.strerror}")


def _scrub_environment(config: SessionConfig, confinement: Confinement) -> None:
    """Make the environment exactly the config's, changing only what differs."""
    for name in [name for name in os.environ if name not in config.env]:
        del os.environ[name]
    for name, value in config.env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value
    confinement.mark(
        Layer.ENV, True, f"{len(config.env)} variables: {', '.join(sorted(config.env))}"
    )


def _mapped_bytes() -> int:
    # os.read, not open(): the text-file stack costs a session process some 0.1 ms of CPU.
    statm = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
    try:
        return int(os.read(statm, 64).split()[0]) * _PAGE
    finally:
        os.close(statm)


def _as_headroom(memory_bytes: int) -> int:
    """What the address-space limit keeps below the cgroup's: an eighth, at most 64 MiB."""
    return min(64 * 1024 * 1024, memory_bytes // 8)


def _tasks_of_own_uid() -> int:
    """How many tasks (threads included, as RLIMIT_NPROC counts them) this uid runs now,
    besides this process's own."""
    uid, count, own = os.getuid(), 0, str(os.getpid())
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or entry.name == own:
            continue
        try:
            if entry.stat().st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
        except OSError:
            continue  # exited meanwhile
    return count


def _set_rlimits(
    config: SessionConfig, confinement: Confinement, mapped: int, *, others: int = 0
) -> None:
    """The session's rlimits; ``others`` is how many tasks its uid runs outside the session
    (RLIMIT_NPROC counts them too)."""
    cpu = max(1, int(config.cpu_seconds * SESSION_CPU_FACTOR))
    limits = {
        # The template's own mappings are shared copy-on-write; the budget comes on top of them,
        # less a headroom: the cgroup also charges the worker's page tables and the library
        # pages it faults in, and a heap growing into ``memory.max`` first makes the kernel
        # reclaim those (the cell crawls until the wall limit). Below it, the cell gets a
        # MemoryError it can survive; the cgroup stays the hard limit for everything else.
        resource.RLIMIT_AS: mapped + config.memory_bytes - _as_headroom(config.memory_bytes),
        resource.RLIMIT_CPU: cpu,
        resource.RLIMIT_FSIZE: config.file_size_bytes,
        resource.RLIMIT_NOFILE: config.max_open_files,
        resource.RLIMIT_NPROC: config.max_processes + others,
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_STACK: _STACK_BYTES,
        resource.RLIMIT_MEMLOCK: 0,
    }
    try:
        for kind, value in limits.items():
            resource.setrlimit(kind, (value, value))
    except (OSError, ValueError) as exc:
        confinement.mark(Layer.RLIMITS, False, f"setrlimit: {exc}")
        return
    confinement.mark(
        Layer.RLIMITS,
        True,
        f"as={limits[resource.RLIMIT_AS]} cpu={cpu}s fsize={config.file_size_bytes} "
        f"nofile={config.max_open_files} nproc={config.max_processes}"
        + (f" (+{others} tasks of the shared uid)" if others else "")
        + " core=0",
    )


def _traversable_by_others(path: str) -> bool:
    try:
        return bool(os.stat(path).st_mode & stat.S_IXOTH)
    except OSError:
        return False


def _expose_hidden_paths(paths: tuple[tuple[str, bool], ...]) -> None:
    """As root in a private mount namespace, make needed paths reachable by an unprivileged uid.

    An interpreter installed under a 0700 directory such as ``/root`` is unreadable once we
    drop privileges. Cover the blocking directory with an empty tmpfs and bind-mount just the
    needed subtrees into it (read-only); everything else under it becomes invisible.
    """
    blocked: dict[str, list[tuple[str, bool]]] = {}
    for path, read_only in paths:
        parts = os.path.abspath(path).split(os.sep)[1:]
        for depth in range(1, len(parts)):
            ancestor = os.sep + os.sep.join(parts[:depth])
            if not _traversable_by_others(ancestor):
                blocked.setdefault(ancestor, []).append((os.path.abspath(path), read_only))
                break
    if not blocked:
        return
    namespaces.make_root_private()
    for cover, subtrees in blocked.items():
        sources = [(sub, ro, os.open(sub, os.O_PATH | os.O_DIRECTORY)) for sub, ro in subtrees]
        namespaces.mount_tmpfs(cover)
        for sub, read_only, fd in sources:
            os.makedirs(sub, mode=0o755, exist_ok=True)
            namespaces.mount_bind(fd, sub, read_only=read_only)
            os.close(fd)


def _expose_workdir(path: str) -> None:
    """In a mount namespace of its own, make the workdir reachable after the uid drop."""
    namespaces.unshare(namespaces.CLONE_NEWNS)
    fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    parts = os.path.abspath(path).split(os.sep)[1:]
    for depth in range(1, len(parts)):
        ancestor = os.sep + os.sep.join(parts[:depth])
        if not os.path.isdir(ancestor):
            break  # inside a tmpfs the template mounted to cover a private directory
        if not _traversable_by_others(ancestor):
            namespaces.mount_tmpfs(ancestor)
            break
    os.makedirs(path, mode=0o755, exist_ok=True)
    namespaces.mount_bind(fd, path, read_only=False)
    os.close(fd)
    os.chdir(path)


def _drop_privileges(
    workdir: str,
    placement: Placement,
    confinement: Confinement,
    *,
    own_mount_namespace: bool,
) -> None:
    try:
        if placement.uid is not None and placement.gid is not None:
            if own_mount_namespace:
                _expose_workdir(workdir)
            privileges.drop_to(placement.uid, placement.gid)
        privileges.drop_capabilities()
    except OSError as exc:
        confinement.mark(Layer.PRIVDROP, False, f"{exc.strerror or exc}")
        confinement.mark(Layer.OWN_UID, False, f"{exc.strerror or exc}")
        return
    confinement.mark(Layer.PRIVDROP, True, f"uid={os.getuid()} gid={os.getgid()}, no capabilities")
    if placement.uid is not None:
        confinement.mark(Layer.OWN_UID, True, f"uid {placement.uid}, used by no other process")
    elif Layer.OWN_UID.value not in confinement.layers:  # a root host's refusal says why
        confinement.mark(
            Layer.OWN_UID,
            False,
            f"the host runs as uid {os.getuid()}, not root: the session shares its uid",
        )


def _no_new_privs(confinement: Confinement) -> None:
    try:
        privileges.set_no_new_privs()
        confinement.mark(Layer.NO_NEW_PRIVS, privileges.has_no_new_privs())
    except OSError as exc:
        confinement.mark(Layer.NO_NEW_PRIVS, False, f"prctl: {exc.strerror}")


def _landlock(config: SessionConfig, placement: Placement, confinement: Confinement) -> None:
    _restrict(config.workdir, placement, confinement, make_symlinks=config.workdir_symlinks)


def _session_rules(placement: Placement, lowest_fd: int) -> landlock.Ruleset | None:
    """A Landlock ruleset with every rule :func:`_restrict` adds but the granted directory's."""
    try:
        rules = landlock.ruleset(lowest_fd=lowest_fd)
    except OSError:
        return None
    try:
        rules.allow(read_only=placement.read_only, read_write=_DEVICES_READ_WRITE)
    except OSError:
        rules.close()
        return None
    return rules


def _restrict(
    granted: str,
    placement: Placement,
    confinement: Confinement,
    *,
    make_symlinks: bool,
    rules: landlock.Ruleset | None = None,
) -> None:
    """Landlock with read-write beneath ``granted`` (the workdir, or its empty parent);
    ``rules`` holds the other rules already (see :func:`_session_rules`)."""
    try:
        if rules is None:
            result = landlock.restrict(
                read_only=placement.read_only,
                read_write=(granted, *_DEVICES_READ_WRITE),
                make_symlinks=make_symlinks,
            )
        else:
            rules.allow(read_write=(granted,), make_symlinks=make_symlinks)
            result = rules.enforce()
    except OSError as exc:
        if rules is not None:
            rules.close()
        reason = f"landlock: {exc.strerror or exc}"
        for layer in (Layer.LANDLOCK, Layer.LANDLOCK_NET, Layer.LANDLOCK_SCOPE):
            confinement.mark(layer, False, reason)
        return
    links = "symlinks granted" if make_symlinks else "no symlinks"
    confinement.mark(Layer.LANDLOCK, True, f"ABI {result.abi}; read-write only {granted} ({links})")
    confinement.mark(
        Layer.LANDLOCK_NET, result.net, "TCP bind/connect denied" if result.net else "needs ABI 4"
    )
    confinement.mark(
        Layer.LANDLOCK_SCOPE,
        result.scoped,
        "signals and abstract unix sockets scoped" if result.scoped else "needs ABI 6",
    )


def _seccomp(program: bytes, confinement: Confinement) -> None:
    try:
        seccomp.load_compiled(program)
    except OSError as exc:
        confinement.mark(Layer.SECCOMP, False, f"seccomp_load: {exc.strerror or exc}")
        return
    confinement.mark(Layer.SECCOMP, True, "denylist filter loaded (kill/EPERM/ENOSYS)")


def _refuse_for_rung(program: bytes, confinement: Confinement) -> None:
    """Stack the host's filter for what this rung cannot count (after the session's own
    Landlock layer, whose ``landlock_*`` calls it may refuse); failing, seccomp is not whole."""
    if not program:
        return
    seccomp_layer = confinement.layers.get(Layer.SECCOMP.value, {})
    try:
        seccomp.load_compiled(program)
    except OSError as exc:
        confinement.mark(Layer.SECCOMP, False, f"rung classes: {exc.strerror or exc}")
        return
    detail = f"{seccomp_layer.get('detail', '')}; and the rung classes' filter"
    confinement.mark(Layer.SECCOMP, seccomp_layer.get("active") is True, detail)
