"""The template process: a warm interpreter that forks confined sessions on demand.

Started by the host with ``execve`` and a minimal environment (never forked from the host, whose
memory holds secrets), it imports the worker and an optional preload list once, builds the seccomp
filter once, and then, per spawn request, forks a child that enters fresh namespaces, forks the
session process (pid 1 of its own pid namespace), confines it and runs the worker loop. Sessions
share the template's memory copy-on-write. The template reaps sessions (it is their subreaper) and
reports each exit status to the host.

Run as ``python -I -m safeexec.sandbox.zygote <control-fd> <options-json>``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import selectors
import signal
import socket
import sys
import sysconfig
import traceback
from pathlib import Path

import safeexec
from safeexec.sandbox import worker
from safeexec.sandbox.channel import (
    ProtocolError,
    recv_frame_with_fds,
    send_frame,
    send_frame_with_fds,
)
from safeexec.sandbox.confine import Confinement, SessionConfig, confine, enter_namespaces
from safeexec.sandbox.executor import Executor, PythonExecutor
from safeexec.sandbox.seccomp import build_filter
from safeexec.sandbox.syscalls import libc

__all__ = ["main"]

_PR_SET_CHILD_SUBREAPER = 36
_CHANNEL_FD = 3
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
    paths.append(os.path.dirname(os.path.realpath(sys.executable)))
    paths += _SYSTEM_READ_ONLY
    unique: list[str] = []
    for path in paths:
        real = os.path.realpath(path)
        if os.path.exists(real) and real not in unique:
            unique.append(real)
    return tuple(unique)


def _make_executor(config: SessionConfig) -> Executor:
    if config.executor == "restricted":
        from safeexec.sandbox.restricted_runtime import RestrictedExecutor

        executor: Executor = RestrictedExecutor(
            imports=config.imports, workdir=Path(config.workdir)
        )
        return executor
    return PythonExecutor()


def _session(
    request: dict[str, object], read_only: tuple[str, ...], seccomp_filter: object
) -> None:
    """In the forked child: enter namespaces, fork the session process, confine it, serve."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    channel = socket.socket(fileno=_CHANNEL_FD)
    confinement = Confinement()
    as_root = os.geteuid() == 0
    in_namespaces = enter_namespaces(confinement, as_root=as_root)
    # The session process may only speak after this process has announced it.
    announced_read, announced_write = os.pipe()
    child = os.fork() if in_namespaces else 0
    if child:
        pidfd = os.pidfd_open(child)
        pidns = os.stat(f"/proc/{child}/ns/pid").st_ino
        send_frame_with_fds(channel, {"op": "started", "pid": child, "pidns": pidns}, [pidfd])
        os.write(announced_write, b".")
        os._exit(0)
    if not in_namespaces:
        pidns = os.stat("/proc/self/ns/pid").st_ino
        send_frame_with_fds(
            channel,
            {"op": "started", "pid": os.getpid(), "pidns": pidns},
            [os.pidfd_open(os.getpid())],
        )
        os.write(announced_write, b".")
    os.close(announced_write)
    config = SessionConfig.from_message(request, read_only=read_only)
    executor = _make_executor(config)
    confine(
        config,
        seccomp_filter,
        confinement,
        own_mount_namespace=in_namespaces and as_root,
    )
    os.read(announced_read, 1)
    os.close(announced_read)
    send_frame(channel, {"op": "hello", "layers": confinement.layers})
    worker.serve(
        channel, executor=executor, tool_names=list(config.tool_names), workdir=Path(config.workdir)
    )


def _fork_session(
    request: dict[str, object], fds: list[int], read_only: tuple[str, ...], seccomp_filter: object
) -> int:
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    try:
        channel_fd, stdout_fd, stderr_fd = fds
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(stdout_fd, 1)
        os.dup2(stderr_fd, 2)
        os.dup2(channel_fd, _CHANNEL_FD)
        os.closerange(_CHANNEL_FD + 1, os.sysconf("SC_OPEN_MAX"))
        _session(request, read_only, seccomp_filter)
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(70)


def _preload(modules: list[str]) -> tuple[list[str], dict[str, str]]:
    loaded: list[str] = []
    failed: dict[str, str] = {}
    for name in modules:
        try:
            importlib.import_module(name)
            if name == "matplotlib":
                import matplotlib

                matplotlib.use("Agg")
            loaded.append(name)
        except Exception as exc:
            failed[name] = f"{type(exc).__name__}: {exc}"[:300]
    return loaded, failed


def _reap(control: socket.socket, intermediates: set[int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in intermediates:
            intermediates.discard(pid)
            continue
        send_frame(control, {"op": "exit", "pid": pid, "status": status})


def _kill_children() -> None:
    me = os.getpid()
    try:
        children = Path(f"/proc/{me}/task/{me}/children").read_text().split()
    except OSError:
        return
    for pid in children:
        with contextlib.suppress(OSError):
            os.kill(int(pid), signal.SIGKILL)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    options = json.loads(sys.argv[2])
    loaded, failed = _preload([str(m) for m in options.get("preload", [])])
    with contextlib.suppress(ImportError):
        importlib.import_module("safeexec.sandbox.restricted_runtime")
    read_only = runtime_read_only_paths()
    seccomp_filter = build_filter()
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_write)
    send_frame(control, {"op": "ready", "pid": os.getpid(), "preloaded": loaded, "failed": failed})
    intermediates: set[int] = set()
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    try:
        while True:
            for key, _events in selector.select():
                if key.fd == wake_read:
                    while True:
                        try:
                            if not os.read(wake_read, 512):
                                break
                        except BlockingIOError:
                            break
                    _reap(control, intermediates)
                    continue
                try:
                    request, fds = recv_frame_with_fds(control)
                except (EOFError, ConnectionError):
                    return
                except ProtocolError:
                    return
                if request.get("op") != "spawn" or len(fds) != 3:
                    for fd in fds:
                        os.close(fd)
                    continue
                intermediates.add(_fork_session(request, fds, read_only, seccomp_filter))
    finally:
        _kill_children()


if __name__ == "__main__":
    main()
