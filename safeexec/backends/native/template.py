"""The host-side client of the template process (zygote) that forks native sessions."""

from __future__ import annotations

import contextlib
import functools
import os
import select
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from safeexec.errors import BackendUnavailable
from safeexec.sandbox import seccomp, syscalls
from safeexec.sandbox.channel import (
    FrameDecoder,
    ProtocolError,
    recv_frame,
    send_frame,
    send_frame_with_fds,
)
from safeexec.sandbox.protocol import (
    Exit,
    Member,
    Ready,
    Setup,
    Spawn,
    TemplateOptions,
    parse_template_frame,
)

_READ_CHUNK = 1 << 16
_STARTUP_SECONDS = 30.0


class TemplateProcess:
    """A template process just started, its ``setup`` frame on the way; not yet serving.

    Started with ``execve`` and a minimal environment; the seccomp filter and syscall numbers
    are made here while it boots (libseccomp loads in this process, once; see ``Setup``) and
    sent from a thread. A :class:`_Template` takes it over (``safeexec run`` starts one before
    it loads the policy and the backend), or :meth:`close` stops it.
    """

    def __init__(self, *, python: str, preload: tuple[str, ...], pool_size: int) -> None:
        self.python = python
        self.preload = preload
        self.pool_size = pool_size
        host_end, child_end = socket.socketpair()
        env = {
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "OPENBLAS_NUM_THREADS": "1",  # the template must stay single-threaded to fork safely
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": _template_cache_dir(),
        }
        options = TemplateOptions(preload=preload, pool_size=pool_size)
        try:
            self.process = subprocess.Popen(
                [
                    python,
                    "-I",
                    "-m",
                    "safeexec.sandbox.zygote",
                    str(child_end.fileno()),
                    options.to_argument(),
                ],
                env=env,
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                pass_fds=[child_end.fileno()],
                start_new_session=True,
            )
        except BaseException:
            host_end.close()
            raise
        finally:
            child_end.close()
        self.control = host_end
        host_end.settimeout(_STARTUP_SECONDS)
        self._setup_error: BaseException | None = None
        self._setup = threading.Thread(target=self._send_setup, name="safeexec-setup", daemon=True)
        self._setup.start()

    def _send_setup(self) -> None:
        try:
            program, numbers = _sandbox_constants()
            setup = Setup(seccomp_program=program, syscall_numbers=numbers)
            send_frame(self.control, setup.to_message())
        except BaseException as exc:  # re-raised by ``ready``, in the thread that waits
            self._setup_error = exc

    def ready(self) -> Ready:
        """Wait for the template to serve; ``BackendUnavailable`` (the process killed) if it
        does not."""
        try:
            self._setup.join()
            if self._setup_error is not None:
                raise self._setup_error
            ready = Ready.from_message(recv_frame(self.control))
        except BackendUnavailable:
            self.close()
            raise
        except (OSError, EOFError, ProtocolError) as exc:
            self.close()
            raise BackendUnavailable(
                f"the native template process did not start: {exc!r}; run `safeexec doctor`"
            ) from exc
        self.control.settimeout(None)
        return ready

    def serves(self, *, python: str, preload: tuple[str, ...], pool_size: int) -> bool:
        """Was this process started as a template with these options would be?"""
        return (python, preload, pool_size) == (self.python, self.preload, self.pool_size)

    def close(self) -> None:
        """Stop the process (a template that has not sent ``ready`` holds no session)."""
        self.control.close()
        self.process.kill()
        self.process.wait()


class _Template:
    """Client of one zygote: spawns sessions and learns their exit statuses."""

    def __init__(
        self,
        *,
        python: str,
        preload: tuple[str, ...],
        pool_size: int,
        on_member: Callable[[int], None] | None = None,
        on_exit: Callable[[int], None] | None = None,
        process: TemplateProcess | None = None,
    ) -> None:
        """``on_member(pid)`` hears of each warm session process the template forks ahead,
        ``on_exit(pid)`` of each that exits (both from the template's reader thread).
        ``process``: one started ahead, taken over if it has these options (else closed)."""
        self._on_member = on_member
        self._on_exit = on_exit
        self._lock = threading.Lock()
        self._statuses: dict[int, int] = {}
        self._changed = threading.Condition()
        if process is not None and not process.serves(
            python=python, preload=preload, pool_size=pool_size
        ):
            process.close()
            process = None
        if process is None:
            process = TemplateProcess(python=python, preload=preload, pool_size=pool_size)
        ready = process.ready()
        self._process = process.process
        self._control = process.control
        # The process that forks sessions (a child of the one we started, in its own pid ns).
        self.pid = ready.pid
        self.preloaded = ready.preloaded
        self._reader = threading.Thread(
            target=self._read_exits, name="safeexec-template", daemon=True
        )
        self._reader.start()

    def _read_exits(self) -> None:
        decoder = FrameDecoder(max_frame_bytes=4096)
        while True:
            try:
                data = self._control.recv(_READ_CHUNK)
                frames = [parse_template_frame(f) for f in decoder.feed(data)] if data else []
            except (OSError, ProtocolError):
                data = b""
            if not data:
                with self._changed:
                    self._statuses[-1] = 0  # marks the template as gone
                    self._changed.notify_all()
                return
            exits = [frame for frame in frames if isinstance(frame, Exit)]
            for frame in frames:
                if isinstance(frame, Member) and self._on_member:
                    self._on_member(frame.pid)
                elif isinstance(frame, Exit) and self._on_exit:
                    self._on_exit(frame.pid)
            with self._changed:
                for exited in exits:
                    self._statuses[exited.pid] = exited.status
                    if len(self._statuses) > 10_000:
                        self._statuses.pop(next(iter(self._statuses)))
                self._changed.notify_all()

    @property
    def alive(self) -> bool:
        return -1 not in self._statuses and self._process.poll() is None

    def spawn(self, fds: list[int], *, workdir: str) -> None:
        """Ask for a session on ``fds`` (channel, stdout, stderr, and the workdir's detached
        mount if the host made one) working in ``workdir``. The session's config goes to it
        over its own channel, never through the template: whatever the template reads stays in
        its heap, which every later session inherits (a passed-through env secret would)."""
        with self._lock:
            send_frame_with_fds(self._control, Spawn(workdir=workdir).to_message(), fds)

    def exit_status(self, pid: int, *, timeout: float) -> int | None:
        """The wait status of a finished session process, once the template has reaped it."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while pid not in self._statuses:
                left = deadline - time.monotonic()
                if left <= 0 or -1 in self._statuses:
                    return None
                self._changed.wait(left)
            return self._statuses.pop(pid)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._control.shutdown(socket.SHUT_RDWR)
        self._control.close()
        if not _exits_within(self._process, seconds=5):
            self._process.kill()
        self._process.wait()


def _exits_within(process: subprocess.Popen[bytes], *, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``process`` to exit, woken by its pidfd the moment it does
    (``Popen.wait(timeout=...)`` polls with sleeps of up to 50 ms, which a one-shot
    ``safeexec run`` paid at every close)."""
    if process.returncode is not None:
        return True  # already reaped (by ``alive``): its pid may belong to another process now
    try:
        pidfd = os.pidfd_open(process.pid)
    except ProcessLookupError:
        return True
    try:
        poller = select.poll()  # not select.select: a busy host's descriptors pass FD_SETSIZE
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(seconds * 1000))
    finally:
        os.close(pidfd)


@functools.cache
def _sandbox_constants() -> tuple[bytes, dict[str, int]]:
    """The compiled seccomp filter and the sandbox side's syscall numbers, made once per host
    process: what the template would otherwise load libseccomp for at every start."""
    try:
        return seccomp.compile_filter(), syscalls.resolve(syscalls.CALLED)
    except (OSError, ValueError, RuntimeError) as exc:
        raise BackendUnavailable(
            f"the seccomp filter cannot be built here: {exc!r}; run `safeexec doctor`"
        ) from exc


def _template_cache_dir() -> str:
    path = Path(tempfile.gettempdir()) / f"safeexec-template-{os.geteuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    if path.is_symlink() or path.stat().st_uid != os.geteuid():
        raise BackendUnavailable(f"template cache dir={str(path)!r} is not ours; remove it")
    return str(path)
