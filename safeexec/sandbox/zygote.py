"""The template process: a warm interpreter that forks confined sessions on demand.

Started by the host with ``execve`` and a minimal environment (never forked from the host, whose
memory holds secrets), it imports the worker and an optional preload list once, takes the seccomp
filter the host compiled (and the syscall numbers it resolved: the template never loads
libseccomp), and then, per spawn request, forks a child that enters fresh namespaces, forks the
session process (pid 1 of its own pid namespace), confines it and runs the worker loop. Sessions
share the template's memory copy-on-write. The template reaps sessions (it is their subreaper) and
reports each exit status to the host.

Run as ``python -I -m safeexec.sandbox.zygote <control-fd> <options-json>``.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import selectors
import signal
import socket
import sys
import sysconfig
import time
import traceback
from pathlib import Path

import safeexec
from safeexec._support.seeding import reseed_numpy_at_fork
from safeexec.sandbox import namespaces, privileges, worker
from safeexec.sandbox.channel import (
    ProtocolError,
    recv_frame,
    recv_frame_with_fds,
    send_frame,
    send_frame_with_fds,
)
from safeexec.sandbox.confine import (
    Confinement,
    Placement,
    Preconfined,
    assemble_shared_root,
    confine,
    enter_template_namespaces,
    finish_preconfined,
    hidden_from_others,
    preconfine,
    reachable_by_others,
)
from safeexec.sandbox.layers import Layer
from safeexec.sandbox.protocol import (
    Claim,
    Exit,
    Hello,
    Member,
    Prepare,
    Prepared,
    Ready,
    SessionConfig,
    Setup,
    Spawn,
    Started,
    TemplateOptions,
)
from safeexec.sandbox.python_executor import Executor, PythonExecutor
from safeexec.sandbox.rootfs import SANDBOX_WORKDIR
from safeexec.sandbox.session_env import base_environment
from safeexec.sandbox.syscalls import install, libc

__all__ = ["main"]

_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1
_CHANNEL_FD = 3
_MEMBER_FD = 4
_REFILL_DELAY_SECONDS = 0.002
_UID_BASE = 1_600_000_000  # + a session's host pid: the unprivileged uid of a root host's session
# System locations the runtime needs besides the interpreter tree (loader cache, shared libraries).
_SYSTEM_READ_ONLY = (
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/usr/share/zoneinfo",
    "/lib",
    "/lib64",
    "/usr/lib",
    "/usr/lib64",
    "/usr/local/lib",
    "/dev/urandom",
    "/dev/random",
)


def runtime_read_only_paths() -> tuple[str, ...]:
    """The interpreter, its stdlib and site-packages, safeexec itself and system libraries."""
    paths: list[str] = [sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix]
    paths += [p for p in sysconfig.get_paths().values() if p]
    paths += [p for p in sys.path if p and os.path.isdir(p)]
    paths.append(os.path.dirname(os.path.abspath(safeexec.__file__)))
    # A strict editable install imports the package through a tree of links to the checkout's
    # files: the private root needs the files the links point at.
    paths.append(os.path.dirname(os.path.realpath(safeexec.__file__)))
    paths.append(os.path.dirname(os.path.realpath(sys.executable)))
    paths += _SYSTEM_READ_ONLY
    real = sorted({os.path.realpath(p) for p in paths if os.path.exists(p)})
    # A rule on a directory covers everything beneath it: keep only the outermost paths.
    outermost = [p for p in real if not any(p.startswith(q + os.sep) for q in real if q != p)]
    return tuple(outermost)


def _make_executor(config: SessionConfig) -> Executor:
    if config.executor == "restricted":
        from safeexec.restricted import RestrictedExecutor
        from safeexec.restricted.views import WorkerViews

        # The worker is confined: only here does the runtime have its views (files, threads,
        # asyncio, sqlite3, archives, logging, the data stack).
        executor: Executor = RestrictedExecutor(
            imports=config.imports,
            workdir=Path(config.workdir),
            seed=config.seed,
            views=WorkerViews,
        )
        return executor
    if config.executor == "dsl":
        from safeexec.sandbox.dsl_executor import DslExecutor

        return DslExecutor()
    return PythonExecutor()


def _session(
    claim: Claim,
    template: _TemplateState,
    placement: Placement,
    confinement: Confinement,
    preconfined: Preconfined | None,
    workdir_mount: int | None,
) -> None:
    """In a claimed session process: read the host's config, finish confining, serve the host.

    The config (env, workdir, limits) comes straight from the host over the session's channel;
    only the identity to take came from the template, before the claim.
    """
    channel = socket.socket(fileno=_CHANNEL_FD)
    message, fds = recv_frame_with_fds(channel, max_fds=1)
    config = SessionConfig.from_message(message)
    egress = _egress_channel(config, fds)
    if claim.uid_refused and preconfined is None:
        # Kept the host's uid (without capabilities): the template said why.
        placement = placement.replace(uid=None, gid=None)
        confinement.mark(Layer.OWN_UID, False, claim.uid_refused)
    if preconfined is not None:
        config = finish_preconfined(config, placement, preconfined, confinement, disk=claim.disk)
    else:
        # As root the workdir may sit under a directory the session's uid cannot walk through
        # (pytest's 0700 tmp dirs, /root); then the session re-exposes it in its own mount
        # namespace.
        own_mount = os.geteuid() == 0 and not reachable_by_others(config.workdir)
        config = confine(
            config,
            placement,
            template.seccomp_program,
            confinement,
            own_mount_namespace=own_mount,
            workdir_mount=workdir_mount,
        )
    if workdir_mount is not None:
        os.close(workdir_mount)
    if egress is not None:
        # Loaded here, in a network session only: the template's heap (every session's) and
        # its start stay without it and the subprocess module it patches.
        from safeexec.sandbox import egress_client

        # Plumbing, not a layer: every layer above stays as it is (see egress_client).
        egress_client.install(egress)
    # Made after confinement: the restricted runtime resolves the workdir as the session sees it.
    executor = _make_executor(config)
    send_frame(channel, Hello(layers=confinement.layers).to_message())
    worker.serve(
        channel,
        executor=executor,
        tool_names=list(config.tool_names),
        workdir=Path(config.workdir),
        seed=config.seed,
    )


def _egress_channel(config: SessionConfig, fds: list[int]) -> int | None:
    """The egress channel the config frame carried, if the config says it carries one and the
    session runs plain Python (restricted code reaches the network only through tools)."""
    wanted = config.egress_channel and config.executor == "python" and len(fds) == 1
    if wanted:
        return fds[0]
    for fd in fds:
        os.close(fd)
    return None


class _TemplateState:
    __slots__ = (
        "mntns_fd",
        "netns",
        "pidns_fd",
        "read_only",
        "seccomp_program",
        "session_namespaces",
        "sessions",
        "shared_root",
        "uid_refused",
    )

    def __init__(
        self,
        *,
        read_only: tuple[str, ...],
        shared_root: str | None,
        seccomp_program: bytes,
        netns: dict[str, object],
        pidns_fd: int,
        mntns_fd: int,
        session_namespaces: dict[str, dict[str, object]],
        uid_refused: str = "",
    ) -> None:
        self.read_only = read_only
        # Non-empty on a root host whose sessions cannot take a uid of their own: why.
        self.uid_refused = uid_refused
        # The root pool members enter, assembled once (None: each builds one).
        self.shared_root = shared_root
        self.seccomp_program = seccomp_program
        self.netns = netns
        # The template's own pid namespace, to return to after each session fork.
        self.pidns_fd = pidns_fd
        # The template's own mount namespace, to return to after attaching a workdir.
        self.mntns_fd = mntns_fd
        self.sessions: dict[int, int] = {}  # our pid -> the host's pid
        self.session_namespaces = session_namespaces


def _enter_session_namespaces(template: _TemplateState) -> bool:
    """Make the next child pid 1 of a fresh pid namespace (its IPC namespace the child makes
    itself: see :func:`_enter_ipc_namespace`)."""
    if template.pidns_fd < 0:
        return False
    try:
        namespaces.unshare(namespaces.CLONE_NEWPID)
    except OSError as exc:
        reason = {"active": False, "detail": f"unshare refused: {exc.strerror or exc}"}
        template.session_namespaces = {Layer.PIDNS.value: reason}
        return False
    template.session_namespaces = {
        Layer.PIDNS.value: {"active": True, "detail": "worker is pid 1; its death kills the tree"},
    }
    return True


def _enter_ipc_namespace() -> dict[str, object]:
    """In a forked member, first: an IPC namespace of its own. Made by the member, so the
    template never leaves its own (which the host compares a session's against)."""
    try:
        namespaces.unshare(namespaces.CLONE_NEWIPC)
    except OSError as exc:
        return {"active": False, "detail": f"unshare refused: {exc.strerror or exc}"}
    return {"active": True, "detail": "private System V IPC and message queues"}


def _host_pid(pidfd: int) -> int:
    """The pid of a process as the host's /proc (and the host) sees it."""
    # os.read, not open(): what the template touches after a fork, every member keeps a
    # private copy of (here, the text-file stack's objects).
    info = os.open(f"/proc/self/fdinfo/{pidfd}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        text = os.read(info, 4096)
    finally:
        os.close(info)
    for line in text.splitlines():
        if line.startswith(b"Pid:"):
            return int(line.split()[1])
    raise OSError(2, "no Pid in pidfd fdinfo")


class _Member:
    """A forked session process waiting to be claimed (the warm pool), confined ahead if the
    layering allows (``prepared`` says, once read)."""

    __slots__ = ("host_pid", "pending", "pid", "pidfd", "pidns", "prepared", "sock", "uid")

    def __init__(
        self,
        *,
        pid: int,
        host_pid: int,
        pidns: int,
        pidfd: int,
        sock: socket.socket,
        uid: int | None,
    ) -> None:
        self.pid = pid  # in the template's pid namespace
        self.host_pid = host_pid
        self.pidns = pidns
        self.pidfd = pidfd
        self.sock = sock
        self.uid = uid
        self.prepared: Prepared | None = None
        # A claim waiting for ``prepared``: the host's spawn and its descriptors.
        self.pending: tuple[Spawn, list[int]] | None = None


def _member(sock: socket.socket, template: _TemplateState) -> None:
    """In a forked pool member: take the identity the template names, confine what does not
    depend on the session, say so, wait for the claim, then become the session."""
    prepare = Prepare.from_message(recv_frame(sock))
    placement = Placement(
        uid=prepare.uid,
        gid=prepare.gid,
        read_only=template.read_only,
        shared_root=template.shared_root,
    )
    confinement = Confinement()
    confinement.layers[Layer.NETNS.value] = dict(template.netns)
    confinement.layers.update({k: dict(v) for k, v in template.session_namespaces.items()})
    confinement.layers[Layer.IPCNS.value] = _enter_ipc_namespace()
    if template.uid_refused:
        confinement.mark(Layer.OWN_UID, False, template.uid_refused)
    # Orphans stay below the worker even without a pid namespace (then the host walks the tree).
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # Above every descriptor of the claim's (channel, stdout, stderr, workdir mount).
    preconfined = preconfine(
        placement, template.seccomp_program, confinement, lowest_fd=_CHANNEL_FD + 2
    )
    send_frame(sock, Prepared(root=preconfined.root if preconfined else None).to_message())
    claimed, fds = recv_frame_with_fds(sock, max_fds=Claim.fds)
    claim = Claim.from_message(claimed)
    if len(fds) < Claim.fds - 1:
        raise ProtocolError(f"a claim carries {Claim.fds - 1} or {Claim.fds} descriptors")
    channel_fd, stdout_fd, stderr_fd, *mount = fds
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(stdout_fd, 1)
    os.dup2(stderr_fd, 2)
    os.dup2(channel_fd, _CHANNEL_FD)
    workdir_mount = None
    if mount:
        workdir_mount = _CHANNEL_FD + 1
        os.dup2(mount[0], workdir_mount)
    rules = preconfined.session_rules if preconfined is not None else None
    _close_all_from(_CHANNEL_FD + 1 + len(mount), keep=rules.fd if rules is not None else None)
    _session(claim, template, placement, confinement, preconfined, workdir_mount)


def _close_all_from(first: int, *, keep: int | None) -> None:
    """Close every descriptor from ``first`` on but ``keep``."""
    last = os.sysconf("SC_OPEN_MAX")
    if keep is None or keep < first:
        os.closerange(first, last)
        return
    os.closerange(first, keep)
    os.closerange(keep + 1, last)


def _fork_member(template: _TemplateState) -> _Member:
    """Fork one session process, pid 1 of fresh pid and IPC namespaces; it confines itself
    ahead as far as it can and waits for a claim."""
    in_namespaces = _enter_session_namespaces(template)
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.dup2(theirs.fileno(), _MEMBER_FD)
            os.closerange(_MEMBER_FD + 1, os.sysconf("SC_OPEN_MAX"))
            _member(socket.socket(fileno=_MEMBER_FD), template)
        except (EOFError, ConnectionError):
            # Dropped (unclaimed, or its host went away mid-session): nobody is left to serve,
            # and the stderr it has is the host's terminal, where a trace would only confuse.
            pass
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(70)
    theirs.close()
    try:
        if in_namespaces:
            namespaces.setns(template.pidns_fd, namespaces.CLONE_NEWPID)
        pidfd = os.pidfd_open(pid)
        # The template is itself in a pid namespace; the host needs the pid it sees.
        host_pid = _host_pid(pidfd)
        pidns = os.stat(f"/proc/{host_pid}/ns/pid").st_ino
        # On a root host, the session's identity: unique on this machine for as long as its
        # worker (and so everything in its pid namespace) lives, whatever else runs.
        uid = _UID_BASE + host_pid if os.geteuid() == 0 and not template.uid_refused else None
        send_frame(ours, Prepare(uid=uid, gid=uid).to_message())
    except OSError:
        os.kill(pid, signal.SIGKILL)
        ours.close()
        if in_namespaces:
            template.pidns_fd = -1  # cannot return to our own pid namespace: stop making new ones
        raise
    template.sessions[pid] = host_pid
    return _Member(pid=pid, host_pid=host_pid, pidns=pidns, pidfd=pidfd, sock=ours, uid=uid)


def _attach_workdir(
    member: _Member, root: str, workdir: str, mount: int | None, template: _TemplateState
) -> None:
    """In a pre-confined member's mount namespace, attach the claiming session's workdir (the
    host's detached mount, else a bind of its path) at the member's workdir mount point.

    The template enters that namespace only for this and must come back: if it cannot, it
    exits (its sessions die with it) rather than fork later members from another's view.
    """
    namespaces.setns(member.pidfd, namespaces.CLONE_NEWNS)
    try:
        target = root + SANDBOX_WORKDIR
        if mount is not None:
            namespaces.attach_mount(mount, target)
        else:
            source = os.open(workdir, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                namespaces.mount_bind(source, target, read_only=False)
            finally:
                os.close(source)
    finally:
        try:
            namespaces.setns(template.mntns_fd, namespaces.CLONE_NEWNS)
            os.chdir("/")
        except OSError:
            os._exit(71)


def _claim(member: _Member, spawn: Spawn, fds: list[int], template: _TemplateState) -> None:
    """Give ``member`` the session: hand it the host's descriptors, attach its workdir if it is
    pre-confined, then announce it to the host on its channel.

    The member sets up its descriptors while the workdir is attached; it touches the workdir
    only once the host's config arrives, which the host sends only after the announcement."""
    mount = fds[3] if len(fds) > 3 else None
    try:
        if member.prepared is None:
            raise ProtocolError("the member has not said whether it is confined")
        root = member.prepared.root
        refused = _uid_refused(template, spawn.workdir) if member.uid is not None else ""
        uid = None if refused else member.uid
        started = Started(pid=member.host_pid, pidns=member.pidns, uid=uid)
        claim = Claim(disk=mount is not None, uid_refused=refused)
        send_frame_with_fds(member.sock, claim.to_message(), fds[:3] if root is not None else fds)
        if root is not None:
            _attach_workdir(member, root, spawn.workdir, mount, template)
        channel = socket.socket(fileno=os.dup(fds[0]))
        send_frame_with_fds(channel, started.to_message(), [member.pidfd])
        channel.close()
    except (OSError, EOFError, ProtocolError):
        with contextlib.suppress(OSError):
            os.kill(member.pid, signal.SIGKILL)
    finally:
        for fd in (*fds, member.pidfd):
            os.close(fd)
        member.sock.close()


def _may_change_uid() -> bool:
    """Whether this process holds CAP_SETUID and CAP_SETGID (bits 7 and 6) in effect."""
    with open("/proc/self/status", "rb") as fh:
        for line in fh.read().splitlines():
            if line.startswith(b"CapEff:"):
                effective = int(line.split()[1], 16)
                return effective & 0b11000000 == 0b11000000
    return False


def _session_uids_mapped() -> bool:
    """Whether every uid a root host's session may take (``_UID_BASE`` + a pid) exists in this
    user namespace (in one that maps root alone, setresuid to it fails with EINVAL)."""
    with open("/proc/sys/kernel/pid_max", "rb") as fh:
        last = _UID_BASE + int(fh.read())
    with open("/proc/self/uid_map", "rb") as fh:
        for line in fh.read().splitlines():
            inside, _outside, count = (int(field) for field in line.split())
            if inside <= _UID_BASE and last < inside + count:
                return True
    return False


def _uid_refused(template: _TemplateState, workdir: str) -> str:
    """Why a root host's session must keep the host's uid, or "" when it can take its own:
    without a mount namespace (a container), nothing can re-expose a runtime path or a workdir
    beneath a directory other uids cannot walk through."""
    if template.uid_refused:
        return template.uid_refused
    if template.netns["active"] or not hidden_from_others([workdir]):
        return ""
    return (
        f"the workdir {workdir} is beneath a directory other uids cannot traverse, and this "
        "host cannot make a mount namespace to re-expose it: pass a workdir beneath a "
        "world-traversable directory"
    )


def _on_prepared(
    member: _Member, selector: selectors.BaseSelector, template: _TemplateState
) -> None:
    """A member said whether it confined itself: note it, and finish a claim waiting for it.

    Claims never wait for a member inline, so members forked on demand confine themselves in
    parallel while the template goes on serving."""
    selector.unregister(member.sock)
    try:
        member.prepared = Prepared.from_message(recv_frame(member.sock))
    except (OSError, EOFError, ProtocolError):
        with contextlib.suppress(OSError):  # reaped later; a pending claim fails below
            os.kill(member.pid, signal.SIGKILL)
    if member.pending is not None:
        spawn, fds = member.pending
        member.pending = None
        _claim(member, spawn, fds, template)


def _start_claim(member: _Member, spawn: Spawn, fds: list[int], template: _TemplateState) -> None:
    if member.prepared is not None:
        _claim(member, spawn, fds, template)
    else:
        member.pending = (spawn, fds)


def _pick(pool: list[_Member]) -> _Member | None:
    """The member to claim: the first that has confined itself, else the oldest."""
    if not pool:
        return None
    member = next((m for m in pool if m.prepared is not None), pool[0])
    pool.remove(member)
    return member


def _refill(
    pool: list[_Member],
    template: _TemplateState,
    size: int,
    control: socket.socket | None,
    selector: selectors.BaseSelector,
) -> None:
    """Fork members up to ``size``; each is announced to the host (once it is listening), which
    moves it into a cgroup of its own ahead of any claim: the move waits for an RCU grace
    period, which should not be on a session open's critical path."""
    while len(pool) < size:
        try:
            member = _fork_member(template)
        except OSError:
            return
        selector.register(member.sock, selectors.EVENT_READ, member)
        pool.append(member)
        if control is not None:
            send_frame(control, Member(pid=member.host_pid).to_message())


def _preload(modules: list[str]) -> tuple[list[str], dict[str, str]]:
    """Import ``modules`` before any confinement (nothing the sandbox does runs yet): what they
    leave must be memory alone. Descriptors they open go at each member's fork (only the
    member's own survive), threads cannot start (the host starts us with one-thread BLAS), and
    numpy's global generator is reseeded in every fork (else every session drew the same)."""
    loaded: list[str] = []
    failed: dict[str, str] = {}
    for name in modules:
        try:
            importlib.import_module(name)
            if name == "matplotlib":
                _forget_template_styles()
            loaded.append(name)
        except Exception as exc:
            failed[name] = f"{type(exc).__name__}: {exc}"[:300]
    if loaded:
        reseed_numpy_at_fork()
    return loaded, failed


def _forget_template_styles() -> None:
    """Use Agg, and drop the user style path matplotlib read at import from the template's
    config dir, which is no session's: where no private root hides it (a container's rung), it
    is this 0700 directory and a session's style lookup failed with PermissionError."""
    import matplotlib
    import matplotlib.style

    matplotlib.use("Agg")
    paths = getattr(matplotlib.style, "USER_LIBRARY_PATHS", None)
    if paths is None:  # before matplotlib 3.11, which deprecates the core module
        import matplotlib.style.core

        paths = matplotlib.style.core.USER_LIBRARY_PATHS
    paths.clear()


def _reap(
    control: socket.socket,
    template: _TemplateState,
    pool: list[_Member],
    selector: selectors.BaseSelector,
) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        for member in [m for m in pool if m.pid == pid]:  # died while waiting: never claimed
            pool.remove(member)
            if member.prepared is None:
                selector.unregister(member.sock)
            os.close(member.pidfd)
            member.sock.close()
        host_pid = template.sessions.pop(pid, None)
        if host_pid is not None:
            send_frame(control, Exit(pid=host_pid, status=status).to_message())


def _kill_sessions(template: _TemplateState) -> None:
    for pid in template.sessions:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _become_pid_one(control: socket.socket) -> None:
    """Fork into the pid namespace just made; the parent only waits and passes on the status."""
    child = os.fork()
    if child:
        control.close()
        _pid, status = os.waitpid(child, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    options = TemplateOptions.from_argument(sys.argv[2])
    loaded, failed = _preload(list(options.preload))
    with contextlib.suppress(ImportError):
        importlib.import_module("safeexec.restricted")
    try:
        # Sent by the host while we imported: it loads libseccomp, so that we need not.
        setup = Setup.from_message(recv_frame(control))
    except (OSError, EOFError, ProtocolError):
        return  # the host is gone (or speaks another protocol): nobody to serve
    install(setup.syscall_numbers)
    read_only = runtime_read_only_paths()
    netns = enter_template_namespaces(read_only)
    pidns_fd = -1
    shared_root = None
    refused = {"active": False, "detail": f"the template has no namespaces: {netns['detail']}"}
    if netns["active"]:
        _become_pid_one(control)
        pidns_fd = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        # In our own mount namespace (never the host's): built once here instead of per member.
        shared_root = assemble_shared_root(read_only)
    uid_refused = ""
    hidden = hidden_from_others(read_only) if os.geteuid() == 0 and not netns["active"] else []
    if os.geteuid() == 0 and not _may_change_uid():
        uid_refused = (
            "the host is root without CAP_SETUID and CAP_SETGID (a container started with "
            "its capabilities dropped): keep them (Docker's default set) for a uid per session"
        )
    elif os.geteuid() == 0 and not _session_uids_mapped():
        uid_refused = (
            "this user namespace maps no uid for sessions (/proc/self/uid_map lacks "
            f"{_UID_BASE}+): map a range of subordinate uids into it (/etc/subuid, podman "
            "--userns=auto) for a uid per session"
        )
    elif hidden:
        uid_refused = (
            f"runtime paths ({', '.join(hidden[:3])}) are beneath directories other uids "
            "cannot traverse, and this host cannot make a mount namespace to re-expose them: "
            "install Python beneath world-traversable directories (e.g. /usr/local, /opt)"
        )
    template = _TemplateState(
        uid_refused=uid_refused,
        mntns_fd=os.open("/proc/self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC),
        read_only=read_only,
        shared_root=shared_root,
        seccomp_program=setup.seccomp_program,
        netns=netns,
        pidns_fd=pidns_fd,
        session_namespaces={Layer.PIDNS.value: refused},
    )
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # Once here rather than in every session process, which inherits both: no capability it
    # could ever gain back (the template keeps the ones it holds, and never executes anything),
    # and the environment a session most likely gets, as it will see it (the claim changes
    # only what differs). The template's own is no session's; what it set is read already.
    privileges.drop_bounding_set()
    os.environ.clear()
    os.environ.update(base_environment(SANDBOX_WORKDIR))
    # Everything imported so far is shared with every session; keep the collector from touching
    # (and so copying) those pages in each child. No collection first: the blocks it frees are
    # where each child's first allocations would land, dirtying shared pages (~120 KiB of USS
    # per session, measured).
    gc.freeze()
    wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_write)
    pool_size = options.pool_size
    pool: list[_Member] = []
    selector = selectors.DefaultSelector()
    ready = Ready(
        pid=int(os.readlink("/proc/self")),  # as the host sees us (we may be pid 1 here)
        preloaded=tuple(loaded),
        failed=failed,
    )
    selector.register(control, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    try:
        # Ready before any fork, and one member at once, the rest a little later: a one-shot
        # run claims its session right after this frame, and the first member confines itself
        # while the host's spawn is on its way instead of the host waiting for a full pool.
        send_frame(control, ready.to_message())
        _refill(pool, template, min(1, pool_size), control, selector)
        refill_at = time.monotonic() + _REFILL_DELAY_SECONDS if pool_size > 1 else None
        while True:
            wait = None if refill_at is None else max(0.0, refill_at - time.monotonic())
            events = selector.select(wait)
            if refill_at is not None and time.monotonic() >= refill_at:
                refill_at = None
                _refill(pool, template, pool_size, control, selector)
            for key, _events in events:
                if isinstance(key.data, _Member):
                    _on_prepared(key.data, selector, template)
                    continue
                if key.fd == wake_read:
                    while True:
                        try:
                            if not os.read(wake_read, 512):
                                break
                        except BlockingIOError:
                            break
                    _reap(control, template, pool, selector)
                    refill_at = refill_at or time.monotonic() + _REFILL_DELAY_SECONDS
                    continue
                try:
                    request, fds = recv_frame_with_fds(control)
                except (EOFError, ConnectionError):
                    return
                except ProtocolError:
                    return
                try:
                    spawn = Spawn.from_message(request)
                    if len(fds) not in (Spawn.fds - 1, Spawn.fds):
                        raise ProtocolError(f"a spawn carries {Spawn.fds - 1} or {Spawn.fds} fds")
                except ProtocolError:
                    for fd in fds:
                        os.close(fd)
                    continue
                try:
                    claimed = _pick(pool)
                    if claimed is None:
                        claimed = _fork_member(template)
                        selector.register(claimed.sock, selectors.EVENT_READ, claimed)
                except OSError:
                    for fd in fds:
                        os.close(fd)  # the host sees its channel close: the open fails
                    continue
                _start_claim(claimed, spawn, fds, template)
                # Refill a little later: forking now would compete for the CPU with the
                # session just claimed, which finishes confining itself on the open's path
                # (some 1.5 ms). Not later still for each claim that follows: under a steady
                # stream of opens the refill never came, and every open waited for a fork.
                refill_at = refill_at or time.monotonic() + _REFILL_DELAY_SECONDS
    except ConnectionError:
        return  # the host closed the channel while we wrote to it: it is gone, nobody to tell
    finally:
        _kill_sessions(template)


if __name__ == "__main__":
    main()
    # Its sessions are killed (main's finally) and it holds nothing to flush: skip the
    # interpreter's teardown, which made every close of the template wait some 40 ms.
    os._exit(0)
