"""The ``native`` mode: real CPython in a confined subprocess that keeps state between calls.

Sessions are forked from a template process (``safeexec.sandbox.zygote``) that the host starts
with ``execve`` and a minimal environment, so no host memory reaches a sandbox. Each session is
confined in the child (namespaces, rlimits, privilege drop, no_new_privs, Landlock, seccomp; see
``safeexec.sandbox.confine``) and serves requests over a private socketpair. The host trusts
nothing it gets back: frames are bounded JSON, output is capped while it is read, artifacts are
read as regular files beneath the workdir without following links, and every limit is enforced
from outside by SIGKILL of the whole process tree.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from safeexec.backends.base import ToolGateway
from safeexec.backends.workdir import (
    TMP_DIR,
    ArtifactLimits,
    chown_beneath,
    collect_artifacts,
    disk_usage,
    download_file,
    remove_tree,
    scan,
    upload_file,
)
from safeexec.blobs import BlobStore
from safeexec.codec import JSONValue
from safeexec.errors import BackendError, BackendUnavailable, ConfigurationError
from safeexec.model import (
    ExecRequest,
    ExecResult,
    ExecStatus,
    ExecutionEvent,
    LimitHit,
    Limits,
    SyscallKilled,
    Usage,
)
from safeexec.sandbox import landlock
from safeexec.sandbox.channel import (
    FrameDecoder,
    ProtocolError,
    encode_frame,
    recv_frame,
    recv_frame_with_fds,
    send_frame_with_fds,
)
from safeexec.sandbox.layers import (
    ALWAYS_REQUIRED,
    DEFAULT_REQUIRED,
    Layer,
    LayerStatus,
    parse_layer_report,
)

__all__ = ["ArtifactLimits", "NativeBackend", "NativeSession", "supported_layers"]

_EXECUTORS = ("python", "restricted")
_READ_CHUNK = 1 << 16
_MAX_WORKER_FRAME = 8 * 1024 * 1024
_STARTUP_SECONDS = 30.0
_CPU_POLL_SECONDS = 0.05
_WATCH_SECONDS = 0.5  # how often idle sessions are checked for background CPU and disk use
_KILL_WAIT_SECONDS = 5.0
_CLK_TCK = os.sysconf("SC_CLK_TCK")
_SIGNAL_REASONS: dict[int, str] = {
    signal.SIGSYS: "seccomp",
    signal.SIGKILL: "out of memory, CPU rlimit or an outside kill",
    signal.SIGSEGV: "crash, e.g. C stack overflow",
    signal.SIGXCPU: "CPU rlimit",
    signal.SIGXFSZ: "file size rlimit",
    signal.SIGBUS: "bad memory access",
    signal.SIGABRT: "abort",
}


def supported_layers() -> dict[Layer, LayerStatus]:
    """What this kernel and this host process can offer, checked without confining anything."""
    abi = landlock.abi_version()
    root = os.geteuid() == 0
    userns = _userns_allowed()
    ns_ok = root or userns
    ns_why = (
        ""
        if ns_ok
        else "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone)"
    )
    seccomp_ok = Path("/proc/sys/kernel/seccomp/actions_avail").exists()

    def status(layer: Layer, ok: bool, detail: str) -> LayerStatus:
        return LayerStatus(layer=layer, active=ok, detail=detail)

    return {
        Layer.SESSION: status(Layer.SESSION, True, "setsid"),
        Layer.WORKDIR: status(Layer.WORKDIR, True, "private directory per session"),
        Layer.ENV: status(Layer.ENV, True, "only names the policy passes through"),
        Layer.RLIMITS: status(Layer.RLIMITS, True, "setrlimit"),
        Layer.NETNS: status(Layer.NETNS, ns_ok, ns_why or "unshare(CLONE_NEWNET)"),
        Layer.IPCNS: status(Layer.IPCNS, ns_ok, ns_why or "unshare(CLONE_NEWIPC)"),
        Layer.PIDNS: status(Layer.PIDNS, ns_ok, ns_why or "unshare(CLONE_NEWPID)"),
        Layer.PRIVDROP: status(
            Layer.PRIVDROP,
            True,
            "root: per-session unprivileged uid" if root else "already unprivileged",
        ),
        Layer.NO_NEW_PRIVS: status(Layer.NO_NEW_PRIVS, True, "prctl(PR_SET_NO_NEW_PRIVS)"),
        Layer.LANDLOCK: status(
            Layer.LANDLOCK, abi >= 1, f"ABI {abi}" if abi else "kernel has no Landlock"
        ),
        Layer.LANDLOCK_NET: status(Layer.LANDLOCK_NET, abi >= 4, f"ABI {abi} (needs 4)"),
        Layer.LANDLOCK_SCOPE: status(Layer.LANDLOCK_SCOPE, abi >= 6, f"ABI {abi} (needs 6)"),
        Layer.SECCOMP: status(
            Layer.SECCOMP, seccomp_ok, "seccomp-bpf" if seccomp_ok else "no seccomp"
        ),
    }


def _userns_allowed() -> bool:
    for knob, minimum in (
        ("/proc/sys/kernel/unprivileged_userns_clone", 1),
        ("/proc/sys/user/max_user_namespaces", 1),
    ):
        try:
            if int(Path(knob).read_text().strip()) < minimum:
                return False
        except (OSError, ValueError):
            continue
    return True


# ---------------------------------------------------------------------------------------------
# The template process


class _Template:
    """Client of one zygote: spawns sessions and learns their exit statuses."""

    def __init__(
        self, *, python: str, preload: tuple[str, ...], executor: str, pool_size: int
    ) -> None:
        self._lock = threading.Lock()
        self._statuses: dict[int, int] = {}
        self._changed = threading.Condition()
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
        options = {"preload": list(preload), "executor": executor, "pool_size": pool_size}
        self._process = subprocess.Popen(
            [
                python,
                "-I",
                "-m",
                "safeexec.sandbox.zygote",
                str(child_end.fileno()),
                json.dumps(options),
            ],
            env=env,
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            pass_fds=[child_end.fileno()],
            start_new_session=True,
        )
        child_end.close()
        self._control = host_end
        host_end.settimeout(_STARTUP_SECONDS)
        try:
            ready = recv_frame(host_end)
        except (OSError, EOFError, ProtocolError) as exc:
            self._process.kill()
            raise BackendUnavailable(
                f"the native template process did not start: {exc!r}; run `safeexec doctor`"
            ) from exc
        host_end.settimeout(None)
        serving = ready.get("pid")
        # The process that forks sessions (a child of the one we started, in its own pid ns).
        self.pid = serving if isinstance(serving, int) else self._process.pid
        preloaded = ready.get("preloaded")
        self.preloaded = tuple(str(m) for m in preloaded) if isinstance(preloaded, list) else ()
        self._reader = threading.Thread(
            target=self._read_exits, name="safeexec-template", daemon=True
        )
        self._reader.start()

    def _read_exits(self) -> None:
        decoder = FrameDecoder(max_frame_bytes=4096)
        while True:
            try:
                data = self._control.recv(_READ_CHUNK)
                frames = decoder.feed(data) if data else []
            except (OSError, ProtocolError):
                data = b""
            if not data:
                with self._changed:
                    self._statuses[-1] = 0  # marks the template as gone
                    self._changed.notify_all()
                return
            with self._changed:
                for frame in frames:
                    pid, status = frame.get("pid"), frame.get("status")
                    if (
                        frame.get("op") == "exit"
                        and isinstance(pid, int)
                        and isinstance(status, int)
                    ):
                        self._statuses[pid] = status
                        if len(self._statuses) > 10_000:
                            self._statuses.pop(next(iter(self._statuses)))
                self._changed.notify_all()

    @property
    def alive(self) -> bool:
        return -1 not in self._statuses and self._process.poll() is None

    def spawn(self, fds: list[int]) -> None:
        """Ask for a session on ``fds`` (channel, stdout, stderr). The session's config goes to
        it over its own channel, never through the template: whatever the template reads stays
        in its heap, which every later session inherits (a passed-through env secret would)."""
        with self._lock:
            send_frame_with_fds(self._control, {"op": "spawn"}, fds)

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
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def _template_cache_dir() -> str:
    path = Path(tempfile.gettempdir()) / f"safeexec-template-{os.geteuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    if path.is_symlink() or path.stat().st_uid != os.geteuid():
        raise BackendUnavailable(f"template cache dir={str(path)!r} is not ours; remove it")
    return str(path)


# ---------------------------------------------------------------------------------------------
# The backend


class NativeBackend:
    """Factory of native sessions; owns one template process (started on first use).

    ``executor`` picks what runs cells inside the worker ("python" or "restricted");
    ``preload`` names modules the template imports once (e.g. numpy) so sessions share them;
    ``pool_size`` session processes are kept forked ahead (not yet confined) so an open only
    pays for confinement; ``disk_bytes`` caps what a session's workdir may hold.
    """

    name: ClassVar[str] = "native"

    def __init__(
        self,
        *,
        executor: str = "python",
        preload: tuple[str, ...] = (),
        python: str | None = None,
        artifact_limits: ArtifactLimits | None = None,
        disk_bytes: int = 1024 * 1024 * 1024,
        pool_size: int = 4,
    ) -> None:
        if executor not in _EXECUTORS:
            raise ConfigurationError(f"unknown executor={executor!r}; use one of {_EXECUTORS}")
        self.executor = executor
        self.preload = tuple(preload)
        self.python = python or sys.executable
        self.artifact_limits = artifact_limits or ArtifactLimits()
        self.disk_bytes = disk_bytes
        self.pool_size = pool_size
        self._template: _Template | None = None
        self._sessions: weakref.WeakSet[NativeSession] = weakref.WeakSet()
        self._watchdog: threading.Thread | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._supported = supported_layers()
        self._finalizer = weakref.finalize(self, _close_template, [None])

    @property
    def supported(self) -> Mapping[Layer, LayerStatus]:
        """Which layers this machine can provide (before any session is opened)."""
        return dict(self._supported)

    def _get_template(self) -> _Template:
        with self._lock:
            if self._template is None or not self._template.alive:
                if self._template is not None:
                    self._template.close()
                self._template = _Template(
                    python=self.python,
                    preload=self.preload,
                    executor=self.executor,
                    pool_size=self.pool_size,
                )
                self._finalizer.detach()
                self._finalizer = weakref.finalize(self, _close_template, [self._template])
            if self._watchdog is None or not self._watchdog.is_alive():
                self._stopping = threading.Event()
                self._watchdog = threading.Thread(
                    target=_watch_idle_sessions,
                    args=(weakref.ref(self), self._stopping),
                    name="safeexec-native-watchdog",
                    daemon=True,
                )
                self._watchdog.start()
            return self._template

    def start(self) -> None:
        """Start the template now rather than on the first ``open``."""
        self._get_template()

    def statistics(self) -> dict[str, int | str]:
        """Live figures: the template's pid, open sessions, the pool size, preloaded modules."""
        template = self._template
        return {
            "template_pid": template.pid if template is not None else 0,
            "open_sessions": len(self._sessions),
            "pool_size": self.pool_size,
            "preloaded": ",".join(template.preloaded) if template is not None else "",
        }

    def open(
        self,
        *,
        workdir: Path | None = None,
        limits: Limits,
        blobs: BlobStore,
        tools: ToolGateway | None = None,
        require: frozenset[str] = frozenset(),
        imports: tuple[str, ...] = (),
        env: Mapping[str, str] | None = None,
    ) -> NativeSession:
        """Open a confined session; ``BackendUnavailable`` if a required layer cannot be had.

        Without ``workdir`` a fresh temporary directory is made and removed on close. Layers in
        ``require`` must apply; seccomp and Landlock are required anyway where the kernel has them.
        """
        required = self._required(require)
        return NativeSession(
            backend=self,
            workdir=workdir,
            limits=limits,
            blobs=blobs,
            tools=tools,
            required=required,
            imports=tuple(imports),
            env=dict(env or {}),
        )

    async def aopen(
        self,
        *,
        workdir: Path | None = None,
        limits: Limits,
        blobs: BlobStore,
        tools: ToolGateway | None = None,
        require: frozenset[str] = frozenset(),
        imports: tuple[str, ...] = (),
        env: Mapping[str, str] | None = None,
    ) -> NativeSession:
        """``open`` without blocking the event loop."""
        return await asyncio.to_thread(
            self.open,
            workdir=workdir,
            limits=limits,
            blobs=blobs,
            tools=tools,
            require=require,
            imports=imports,
            env=env,
        )

    def _required(self, require: frozenset[str]) -> frozenset[Layer]:
        known = {layer.value for layer in Layer}
        unknown = sorted(set(require) - known)
        if unknown:
            raise ConfigurationError(
                f"unknown confinement layer require={unknown!r}; known layers: {sorted(known)}"
            )
        defaults = {layer for layer in DEFAULT_REQUIRED if self._supported[layer].active}
        return frozenset({Layer(name) for name in require} | defaults | ALWAYS_REQUIRED)

    def close(self) -> None:
        """Stop the template process (open sessions keep running until closed)."""
        self._stopping.set()
        with self._lock:
            if self._template is not None:
                self._template.close()
                self._template = None
            self._finalizer.detach()


def _watch_idle_sessions(
    backend_ref: weakref.ref[NativeBackend], stopping: threading.Event
) -> None:
    """Between calls, kill sessions whose leftover processes burn CPU or fill the disk."""
    while not stopping.wait(_WATCH_SECONDS):
        backend = backend_ref()
        if backend is None:
            return
        sessions = list(backend._sessions)
        del backend
        for session in sessions:
            session._watch_idle()


def _close_template(holder: list[_Template | None]) -> None:
    template = holder[0]
    if template is not None:
        template.close()


# ---------------------------------------------------------------------------------------------
# Output capture and workdir scanning


class _CappedStream:
    """Keeps the first and last ``cap // 2`` bytes of a stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = max(0, cap)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        head_room = self.cap - self.cap // 2 - len(self.head)
        if head_room > 0:
            self.head += data[:head_room]
            data = data[head_room:]
        if data:
            self.tail += data
            keep = self.cap // 2
            if len(self.tail) > 2 * keep + _READ_CHUNK:
                del self.tail[: len(self.tail) - keep]

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def value(self) -> bytes:
        if not self.truncated:
            return bytes(self.head + self.tail)
        keep = self.cap // 2
        tail = bytes(self.tail[len(self.tail) - keep :]) if keep else b""
        omitted = self.total - len(self.head) - len(tail)
        return bytes(self.head) + f"\n[... {omitted} bytes omitted ...]\n".encode() + tail


# ---------------------------------------------------------------------------------------------
# Process inspection (from outside the sandbox)


def _process_cpu_seconds(pid: int) -> float:
    """CPU of ``pid``, its reaped children and its live descendants, in seconds."""
    total = 0
    pending = [pid]
    seen = 0
    while pending and seen < 4096:
        current = pending.pop()
        seen += 1
        try:
            with open(f"/proc/{current}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children", "rb") as fh:
                    pending += [int(c) for c in fh.read().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total / _CLK_TCK


def _peak_rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _is_pid_one_of_own_namespace(pid: int) -> bool:
    """Whether ``pid`` is pid 1 of a pid namespace below ours (then its death kills its tree)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("NSpid:"):
                    levels = line.split()[1:]
                    return len(levels) >= 2 and levels[-1] == "1"
    except OSError:
        pass
    return False


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (a session without its own pid namespace)."""
    found: list[int] = []
    pending = [pid]
    while pending and len(found) < 65536:
        current = pending.pop()
        found.append(current)
        with contextlib.suppress(OSError, ValueError):
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as fh:
                    pending += [int(child) for child in fh.read().split()]
    return found


def _processes_in_pid_namespace(inode: int) -> list[int]:
    survivors = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}/ns/pid").st_ino == inode:
                    survivors.append(int(entry))
            except OSError:
                continue
    return survivors


def _describe_death(status: int | None) -> tuple[str, int | None, int | None]:
    """(message, exit code, signal) for a session process's wait status."""
    if status is None:
        return "the worker died (exit status unknown)", None, None
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        reason = _SIGNAL_REASONS.get(number, "")
        return f"killed by {name}" + (f" ({reason})" if reason else ""), -number, number
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    return f"the worker exited with code {code}", code, None


# ---------------------------------------------------------------------------------------------
# The session


@dataclass(slots=True)
class _Worker:
    pid: int
    pidfd: int
    pidns: int
    channel: socket.socket
    stdout: int
    stderr: int
    private_pidns: bool = False  # checked by the host, not taken from the worker's word
    layers: dict[Layer, LayerStatus] = field(default_factory=dict)
    decoder: FrameDecoder = field(
        default_factory=lambda: FrameDecoder(max_frame_bytes=_MAX_WORKER_FRAME)
    )

    def close_fds(self) -> None:
        self.channel.close()
        for fd in (self.pidfd, self.stdout, self.stderr):
            with contextlib.suppress(OSError):
                os.close(fd)


@dataclass(slots=True)
class _CallState:
    stdout: _CappedStream
    stderr: _CappedStream
    events: list[ExecutionEvent] = field(default_factory=list)
    tool_calls: int = 0
    outcome: dict[str, object] | None = None
    died: bool = False
    cpu_seen: float = 0.0  # the last CPU reading, for when the worker is gone by the end
    killed_for: str = ""  # "wall" | "cpu" | "protocol"


class NativeSession:
    """A stateful, confined CPython worker; see :meth:`NativeBackend.open`."""

    def __init__(
        self,
        *,
        backend: NativeBackend,
        workdir: Path | None,
        limits: Limits,
        blobs: BlobStore,
        tools: ToolGateway | None,
        required: frozenset[Layer],
        imports: tuple[str, ...],
        env: dict[str, str],
    ) -> None:
        self._backend = backend
        self._owns_workdir = workdir is None
        self.workdir = (
            Path(tempfile.mkdtemp(prefix="safeexec-")) if workdir is None else Path(workdir)
        )
        if not self.workdir.is_dir():
            raise ConfigurationError(
                f"workdir={str(self.workdir)!r} is not a directory; create it first"
            )
        self.limits = limits
        self.blobs = blobs
        self.tools = tools
        self.required = required
        self.imports = imports
        self.env = env
        self._tool_names = tuple(d.name for d in tools.describe()) if tools is not None else ()
        self._lock = threading.RLock()
        self._closed = False
        self._lost_state = False
        self._uid: int | None = None  # a root host's sessions run as a uid of their own
        self._worker: _Worker | None = None
        self._idle_cpu_base = 0.0
        self._idle_cpu_seen = 0.0
        # Between calls, leftover processes may use as much CPU as the last call was allowed.
        self._idle_cpu_budget = limits.cpu_seconds
        self._lost_reason = ""
        try:
            self._worker = self._start_worker()
        except BaseException:
            self.close()
            raise
        backend._sessions.add(self)

    # -- public API ---------------------------------------------------------------------------

    @property
    def layers(self) -> Mapping[Layer, LayerStatus]:
        """The confinement layers in force for the current worker, as it reported them."""
        with self._lock:
            return dict(self._worker.layers) if self._worker is not None else {}

    @property
    def pid(self) -> int | None:
        """The host pid of the current worker (pid 1 of the session's own pid namespace)."""
        worker = self._worker
        return worker.pid if worker is not None else None

    def run(self, request: ExecRequest) -> ExecResult:
        """Run one cell; crashes, timeouts and kills come back as statuses, never as exceptions."""
        with self._lock:
            if self._closed:
                raise BackendError("run() on a closed native session; open a new one")
            restarted = False
            if self._worker is not None and _has_exited(self._worker.pidfd):
                # It died between calls (e.g. the kernel's OOM killer): not this call's doing.
                worker = self._worker
                status = self._backend._get_template().exit_status(worker.pid, timeout=1.0)
                self._kill(worker)
                self._discard(worker)
                self._lost_reason = f"the worker died between calls: {_describe_death(status)[0]}"
            if self._worker is None:
                self._worker = self._start_worker()
                restarted = True
            result = self._run_on(self._worker, request)
            if restarted and self._lost_state:
                self._lost_state = False
                note = "session restarted; state from before was lost"
                if self._lost_reason:
                    note += f" ({self._lost_reason})"
                    self._lost_reason = ""
                result = _replace(
                    result,
                    state_lost=True,
                    message=f"{note}; {result.message}" if result.message else note,
                )
            return result

    async def arun(self, request: ExecRequest) -> ExecResult:
        """``run`` without blocking the event loop."""
        return await asyncio.to_thread(self.run, request)

    def reset(self) -> None:
        """Forget all state by replacing the worker with a fresh one; the workdir is kept."""
        with self._lock:
            if self._closed:
                raise BackendError("reset() on a closed native session")
            self._stop_worker()
            self._lost_state = False
            self._worker = self._start_worker()

    async def areset(self) -> None:
        await asyncio.to_thread(self.reset)

    def close(self) -> None:
        """Kill the whole process tree and release everything; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._backend._sessions.discard(self)
            self._stop_worker()
            if self._owns_workdir:
                remove_tree(str(self.workdir))

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> NativeSession:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def process_ids(self) -> list[int]:
        """Host pids of every process in the session's pid namespace (empty when none runs)."""
        worker = self._worker
        if worker is None:
            return []
        if not worker.private_pidns:
            return _descendants(worker.pid)
        return _processes_in_pid_namespace(worker.pidns)

    def _watch_idle(self) -> None:
        """Called by the backend's watchdog: between calls, enforce CPU and disk budgets."""
        if not self._lock.acquire(blocking=False):
            return  # a call is running and watches itself
        try:
            worker = self._worker
            if worker is None or self._closed:
                return
            cpu = _process_cpu_seconds(worker.pid)
            reason = ""
            if cpu - self._idle_cpu_base > self._idle_cpu_budget:
                reason = f"background processes used more than {self._idle_cpu_budget:g} s CPU"
            elif cpu > self._idle_cpu_seen and (
                disk_usage(str(self.workdir), self._backend.artifact_limits)
                > self._backend.disk_bytes
            ):
                reason = (
                    f"the workdir grew past its disk budget of {self._backend.disk_bytes} bytes "
                    f"or {self._backend.artifact_limits.max_entries_scanned} entries"
                )
            self._idle_cpu_seen = cpu
            if reason:
                self._kill(worker, verify=True)
                self._discard(worker)
                self._lost_reason = f"killed while idle: {reason}"
        finally:
            self._lock.release()

    def upload(self, name: str, data: bytes) -> None:
        """Write ``data`` to ``name`` (relative) in the workdir; never follows symlinks.

        A bad name or a non-file in the way raises ``ConfigurationError``; a symlink or FIFO in
        the way, ``OSError``."""
        with self._lock:
            upload_file(str(self.workdir), name, data, owner=self._uid)

    def download(self, name: str) -> bytes:
        """The bytes of regular file ``name`` in the workdir (capped by ``file_size_bytes``)."""
        return download_file(str(self.workdir), name, self.limits.file_size_bytes)

    # -- worker lifecycle ---------------------------------------------------------------------

    def _give_workdir_to(self, uid: int) -> None:
        """As root, hand the workdir tree to the session's uid.

        Walks with directory descriptors opened ``O_NOFOLLOW``, so a directory swapped for a
        symlink mid-walk cannot redirect a chown outside the workdir.
        """
        os.chown(self.workdir, uid, uid, follow_symlinks=False)
        root = os.open(self.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            chown_beneath(root, uid, depth=0, limits=self._backend.artifact_limits)
        finally:
            os.close(root)

    def _session_env(self) -> dict[str, str]:
        tmp = str(self.workdir / TMP_DIR)
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(self.workdir),
            "TMPDIR": tmp,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": f"{tmp}/matplotlib",
        }
        env.update(self.env)
        return env

    def _start_worker(self) -> _Worker:
        template = self._backend._get_template()
        host_end, child_end = socket.socketpair()
        out_read, out_write = os.pipe2(os.O_CLOEXEC)
        err_read, err_write = os.pipe2(os.O_CLOEXEC)
        limits = self.limits
        config: dict[str, object] = {
            "workdir": str(self.workdir),
            "env": self._session_env(),
            "memory_bytes": limits.memory_bytes,
            "cpu_seconds": limits.cpu_seconds,
            "file_size_bytes": limits.file_size_bytes,
            "max_processes": limits.max_processes,
            "max_open_files": limits.max_open_files,
            "executor": self._backend.executor,
            "imports": list(self.imports),
            "tool_names": list(self._tool_names),
        }
        try:
            template.spawn([child_end.fileno(), out_write, err_write])
        finally:
            child_end.close()
            os.close(out_write)
            os.close(err_write)
        host_end.settimeout(_STARTUP_SECONDS)
        pidfd = -1
        try:
            started, fds = recv_frame_with_fds(host_end, max_fds=1)
            pid, pidns, uid = started.get("pid"), started.get("pidns"), started.get("uid")
            if started.get("op") != "started" or not isinstance(pid, int) or len(fds) != 1:
                for fd in fds:
                    os.close(fd)
                raise BackendError(f"the template sent {started.get('op')!r} instead of 'started'")
            pidfd = fds[0]
            host_end.sendall(encode_frame({"op": "config", **config}))
            worker = _Worker(
                pid=pid,
                pidfd=pidfd,
                pidns=pidns if isinstance(pidns, int) else 0,
                channel=host_end,
                stdout=out_read,
                stderr=err_read,
            )
        except (OSError, EOFError, ProtocolError, BackendError) as exc:
            host_end.close()
            os.close(out_read)
            os.close(err_read)
            if pidfd >= 0:
                os.close(pidfd)
            raise BackendError(f"could not start a native session: {exc}") from exc
        try:
            hello = recv_frame(host_end)
            if hello.get("op") != "hello":
                raise ProtocolError(f"expected 'hello', got {hello.get('op')!r}")
        except (OSError, EOFError, ProtocolError) as exc:
            self._kill(worker)
            status = template.exit_status(worker.pid, timeout=1.0)
            why, _code, _sig = _describe_death(status)
            stderr = _drain(worker.stderr, 64 * 1024).decode("utf-8", "replace").strip()
            worker.close_fds()
            raise BackendError(
                f"the native session failed while confining itself ({why}): {exc}; {stderr[-2000:]}"
            ) from exc
        host_end.settimeout(None)
        worker.private_pidns = _is_pid_one_of_own_namespace(worker.pid)
        if os.geteuid() == 0 and isinstance(uid, int) and uid > 0:
            # Chosen by the template from the worker's pid, so unique on this machine while the
            # session lives; no user code runs before the first request, so this is in time.
            self._uid = uid
            self._give_workdir_to(uid)
        for fd in (out_read, err_read):
            os.set_blocking(fd, False)
        worker.layers = parse_layer_report(hello.get("layers"))
        missing = sorted(layer.value for layer in self.required if not worker.layers[layer].active)
        if missing:
            self._kill(worker)
            worker.close_fds()
            reasons = "; ".join(f"{name}: {worker.layers[Layer(name)].detail}" for name in missing)
            raise BackendUnavailable(
                f"required confinement layers are unavailable: {reasons}. "
                "Run `safeexec doctor` to see why, or drop them from `require`."
            )
        return worker

    def _stop_worker(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            self._kill(worker)
            template = self._backend._template
            if template is not None:
                template.exit_status(worker.pid, timeout=0.5)
            worker.close_fds()

    def _kill(self, worker: _Worker, *, verify: bool = False) -> list[int]:
        """SIGKILL the worker, whose pid namespace dies with it; ``verify`` checks that nothing
        survived (and kills what did), at the price of a scan of /proc."""
        if not worker.private_pidns:
            # No namespace to take the tree down: stop everything below the worker first (so
            # nothing forks away), then kill it all and the worker's process group.
            tree = _descendants(worker.pid)
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                for pid in tree:
                    with contextlib.suppress(OSError):
                        os.kill(pid, sig)
            with contextlib.suppress(OSError):
                os.killpg(worker.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(worker.pidfd, signal.SIGKILL)
        poller = selectors.DefaultSelector()
        poller.register(worker.pidfd, selectors.EVENT_READ)
        poller.select(_KILL_WAIT_SECONDS)
        poller.close()
        survivors: list[int] = []
        if verify and worker.private_pidns:
            survivors = _processes_in_pid_namespace(worker.pidns)
        for pid in survivors:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        return survivors

    # -- one call -------------------------------------------------------------------------------

    def _run_on(self, worker: _Worker, request: ExecRequest) -> ExecResult:
        limits = request.limits
        call = _CallState(
            stdout=_CappedStream(limits.output_bytes), stderr=_CappedStream(limits.output_bytes)
        )
        artifact_limits = self._backend.artifact_limits
        before = scan(str(self.workdir), artifact_limits)
        started = time.monotonic()
        deadline = started + limits.wall_seconds
        cpu_start = _process_cpu_seconds(worker.pid)
        try:
            worker.channel.settimeout(max(0.001, limits.wall_seconds))
            worker.channel.sendall(encode_frame({"op": "run", "code": request.code}))
        except (OSError, ProtocolError):
            call.died = True
        if not call.died:
            self._pump(
                worker, call, deadline=deadline, cpu_start=cpu_start, cpu_limit=limits.cpu_seconds
            )
        wall = time.monotonic() - started
        cpu_end = max(_process_cpu_seconds(worker.pid), call.cpu_seen)
        self._idle_cpu_base = self._idle_cpu_seen = cpu_end
        self._idle_cpu_budget = limits.cpu_seconds
        cpu = max(0.0, cpu_end - cpu_start)
        rss = _peak_rss_bytes(worker.pid)
        status, exit_code, message = self._settle(worker, call, limits, wall)
        if call.stdout.truncated or call.stderr.truncated:
            call.events.append(LimitHit(limit="output_bytes", value=float(limits.output_bytes)))
        artifacts = collect_artifacts(
            str(self.workdir), before, blobs=self.blobs, limits=artifact_limits
        )
        return ExecResult(
            status=status,
            exit_code=exit_code,
            stdout=self.blobs.put(call.stdout.value()),
            stderr=self.blobs.put(call.stderr.value()),
            truncated=call.stdout.truncated or call.stderr.truncated,
            artifacts=artifacts,
            events=tuple(call.events),
            usage=Usage(
                cpu_seconds=round(cpu, 3),
                wall_seconds=round(wall, 6),
                max_rss_bytes=rss,
                output_bytes=call.stdout.total + call.stderr.total,
                tool_calls=call.tool_calls,
            ),
            message=message,
            state_lost=self._worker is None,
        )

    def _pump(
        self,
        worker: _Worker,
        call: _CallState,
        *,
        deadline: float,
        cpu_start: float,
        cpu_limit: float,
    ) -> None:
        """Move bytes until the worker answers, dies, or overruns a limit (then kill it)."""
        selector = selectors.DefaultSelector()
        selector.register(worker.channel, selectors.EVENT_READ, "channel")
        selector.register(worker.stdout, selectors.EVENT_READ, call.stdout)
        selector.register(worker.stderr, selectors.EVENT_READ, call.stderr)
        selector.register(worker.pidfd, selectors.EVENT_READ, "pidfd")
        next_cpu_check = next_disk_check = time.monotonic() + _CPU_POLL_SECONDS
        try:
            while call.outcome is None and not call.died:
                now = time.monotonic()
                if now >= deadline:
                    call.killed_for = "wall"
                    break
                for key, _mask in selector.select(min(deadline - now, _CPU_POLL_SECONDS)):
                    if isinstance(key.data, _CappedStream):
                        data = _read_some(key.fd)
                        if data:
                            key.data.feed(data)
                        elif data is not None:
                            selector.unregister(key.fd)
                    elif key.data == "pidfd":
                        call.died = True
                    else:
                        self._on_channel(worker, call, deadline)
                        if call.killed_for:
                            return
                if time.monotonic() >= next_cpu_check:
                    next_cpu_check = time.monotonic() + _CPU_POLL_SECONDS
                    call.cpu_seen = _process_cpu_seconds(worker.pid)
                    if call.cpu_seen - cpu_start > cpu_limit:
                        call.killed_for = "cpu"
                        break
                if time.monotonic() >= next_disk_check:
                    scan_started = time.monotonic()
                    usage = disk_usage(str(self.workdir), self._backend.artifact_limits)
                    if usage > self._backend.disk_bytes:
                        call.killed_for = "disk"
                        break
                    # A big workdir is scanned less often: at most a tenth of the host's time.
                    scanned_for = time.monotonic() - scan_started
                    next_disk_check = time.monotonic() + max(_CPU_POLL_SECONDS, 10 * scanned_for)
        finally:
            selector.close()
            # Output written before the answer is already in the pipes; take it, bounded.
            for fd, stream in ((worker.stdout, call.stdout), (worker.stderr, call.stderr)):
                stream_budget = stream.cap + 4 * _READ_CHUNK
                while stream_budget > 0:
                    data = _read_some(fd)
                    if not data:
                        break
                    stream.feed(data)
                    stream_budget -= len(data)

    def _on_channel(self, worker: _Worker, call: _CallState, deadline: float) -> None:
        try:
            data = worker.channel.recv(_READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            call.died = True
            return
        try:
            frames = worker.decoder.feed(data)
        except ProtocolError:
            call.killed_for = "protocol"
            return
        for frame in frames:
            op = frame.get("op")
            if op == "done":
                call.outcome = frame
            elif op == "tool":
                self._answer_tool(worker, call, frame, deadline)
                if call.killed_for or call.died:
                    return
            else:
                call.killed_for = "protocol"
                return

    def _answer_tool(
        self, worker: _Worker, call: _CallState, frame: dict[str, object], deadline: float
    ) -> None:
        name, arguments = frame.get("name"), frame.get("args")
        reply: dict[str, object]
        if self.tools is None or not isinstance(name, str) or name not in self._tool_names:
            reply = {
                "ok": False,
                "value": None,
                "error": f"no tool named {str(name)[:100]!r} is granted",
            }
        elif not (
            isinstance(arguments, dict)
            and isinstance(arguments.get("args", []), list)
            and isinstance(arguments.get("kwargs", {}), dict)
        ):
            reply = {
                "ok": False,
                "value": None,
                "error": "tool arguments must be {'args': [...], 'kwargs': {...}}",
            }
        else:
            call.tool_calls += 1
            payload: JSONValue = {
                "args": arguments.get("args", []),
                "kwargs": arguments.get("kwargs", {}),
            }
            try:
                answer = self.tools.invoke(name, payload)
                reply = {"ok": answer.ok, "value": answer.value, "error": answer.error}
                if answer.event is not None:  # the gateway caps how many a step records
                    call.events.append(answer.event)
            except Exception as exc:  # a gateway must not raise; fail closed for the code
                reply = {
                    "ok": False,
                    "value": None,
                    "error": f"tool {name!r} failed: {type(exc).__name__}",
                }
        try:
            body = encode_frame(reply)
        except (TypeError, ValueError, ProtocolError):
            body = encode_frame(
                {
                    "ok": False,
                    "value": None,
                    "error": f"tool {name!r} returned a value that is not JSON",
                }
            )
        try:
            worker.channel.settimeout(max(0.001, deadline - time.monotonic()))
            worker.channel.sendall(body)
        except TimeoutError:
            call.killed_for = "wall"  # the code stopped reading its own replies
        except OSError:
            call.died = True  # the worker closed its end

    def _settle(
        self, worker: _Worker, call: _CallState, limits: Limits, wall: float
    ) -> tuple[ExecStatus, int | None, str]:
        """Decide the status of a finished call, killing and reaping the worker if it must go."""
        if call.outcome is not None and not call.killed_for:
            error = call.outcome.get("error")
            if call.outcome.get("ok") is True:
                return ExecStatus.OK, 0, ""
            kind, text = "Error", ""
            if isinstance(error, dict):
                kind = str(error.get("type", "Error"))[:200]
                text = str(error.get("message", ""))[:2000]
            if kind == "MemoryError":
                call.events.append(
                    LimitHit(limit="memory_bytes", value=float(self.limits.memory_bytes))
                )
                return ExecStatus.LIMIT_EXCEEDED, 1, f"MemoryError: {text}".rstrip(": ")
            return ExecStatus.ERROR, 1, f"{kind}: {text}" if text else kind
        template = self._backend._get_template()
        if call.killed_for:
            survivors = self._kill(worker, verify=True)
            template.exit_status(worker.pid, timeout=1.0)
            self._discard(worker)
            tail = f"; killed {len(survivors)} leftover processes" if survivors else ""
            if call.killed_for == "wall":
                call.events.append(LimitHit(limit="wall_seconds", value=limits.wall_seconds))
                return (
                    ExecStatus.TIMEOUT,
                    None,
                    f"wall timeout after {limits.wall_seconds:g} s{tail}",
                )
            if call.killed_for == "cpu":
                call.events.append(LimitHit(limit="cpu_seconds", value=limits.cpu_seconds))
                return ExecStatus.TIMEOUT, None, f"cpu timeout after {limits.cpu_seconds:g} s{tail}"
            if call.killed_for == "disk":
                budget = self._backend.disk_bytes
                call.events.append(LimitHit(limit="disk_bytes", value=float(budget)))
                return (
                    ExecStatus.LIMIT_EXCEEDED,
                    None,
                    f"killed: the workdir grew past its disk budget of {budget} bytes or "
                    f"{self._backend.artifact_limits.max_entries_scanned} entries{tail}",
                )
            return ExecStatus.KILLED, None, "killed: the worker broke the channel protocol"
        status = template.exit_status(worker.pid, timeout=2.0)
        self._kill(worker)
        self._discard(worker)
        message, code, number = _describe_death(status)
        if number == signal.SIGSYS:
            call.events.append(SyscallKilled(signal=number))
        return (ExecStatus.KILLED if number is not None else ExecStatus.ERROR), code, message

    def _discard(self, worker: _Worker) -> None:
        worker.close_fds()
        if self._worker is worker:
            self._worker = None
            self._lost_state = True


def _has_exited(pidfd: int) -> bool:
    """A pidfd polls readable once its process has exited."""
    poller = selectors.DefaultSelector()
    try:
        poller.register(pidfd, selectors.EVENT_READ)
        return bool(poller.select(0))
    finally:
        poller.close()


def _read_some(fd: int) -> bytes | None:
    """Read what is available: bytes, ``b""`` at end of file, ``None`` if nothing right now."""
    try:
        return os.read(fd, _READ_CHUNK)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _drain(fd: int, limit: int) -> bytes:
    os.set_blocking(fd, False)
    out = bytearray()
    while len(out) < limit:
        data = _read_some(fd)
        if not data:
            break
        out += data
    return bytes(out)


def _replace(result: ExecResult, **changes: object) -> ExecResult:
    return dataclasses.replace(result, **changes)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Self-test (``safeexec doctor``)


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerCheck:
    """One layer on this machine: can the kernel do it, did a session get it, did it hold."""

    layer: Layer
    supported: bool
    active: bool
    proven: bool | None  # None when no self-test exists for the layer
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DoctorReport:
    checks: tuple[LayerCheck, ...]

    @property
    def ok(self) -> bool:
        """Every supported layer is active and no self-test failed."""
        return all(
            (check.active or not check.supported) and check.proven is not False
            for check in self.checks
        )


_SESSION_PROBE = """
import ctypes, json, os, resource, socket
out = {"pid": os.getpid(), "sid": os.getsid(0), "uid": os.getuid(), "cwd": os.getcwd()}
out["env"] = sorted(os.environ)
out["rlimits"] = {n: resource.getrlimit(getattr(resource, n))[1]
                  for n in ("RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_FSIZE",
                            "RLIMIT_CORE")}
libc = ctypes.CDLL(None, use_errno=True)
out["no_new_privs"] = libc.prctl(39, 0, 0, 0, 0)
header = (ctypes.c_uint32 * 2)(0x20080522, 0)
caps = (ctypes.c_uint32 * 6)()
libc.capget(header, caps)
out["capabilities"] = list(caps)
def attempt(action):
    try:
        action()
        return "allowed"
    except OSError as exc:
        return type(exc).__name__
out["read_etc_passwd"] = attempt(lambda: open("/etc/passwd").read())
out["socket_inet"] = attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
try:
    [0] * 10**10
    out["huge_list"] = "allowed"
except MemoryError:
    out["huge_list"] = "MemoryError"
print(json.dumps(out))
"""

_DAEMON_PROBE = """
import os, signal, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(3600)
    os._exit(0)
os.wait()
"""


def diagnose(*, backend: NativeBackend | None = None) -> DoctorReport:
    """Report which layers are active here and prove, layer by layer, that each one blocks."""
    owned = backend is None
    backend = backend or NativeBackend()
    scratch = Path(tempfile.mkdtemp(prefix="safeexec-doctor-"))
    try:
        return _diagnose(backend, scratch)
    finally:
        if owned:
            backend.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _run_probe(layer: str, options: dict[str, object], python: str) -> tuple[bool, str, int]:
    done = subprocess.run(
        [python, "-I", "-m", "safeexec.sandbox.probe", layer, json.dumps(options)],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin"},
    )
    try:
        verdict = json.loads(done.stdout.strip().splitlines()[-1])
        return bool(verdict["blocked"]), str(verdict["detail"]), done.returncode
    except (ValueError, IndexError, KeyError):
        return (
            False,
            f"probe exited with {done.returncode}: {done.stderr.strip()[-300:]}",
            done.returncode,
        )


def _diagnose(backend: NativeBackend, scratch: Path) -> DoctorReport:
    supported = backend.supported
    proofs: dict[Layer, tuple[bool, str]] = {}
    blobs = BlobStore(scratch / "blobs")
    workdir = scratch / "work"
    workdir.mkdir()
    canary = scratch / "canary.txt"
    canary.write_text("doctor canary")
    canary.chmod(0o644)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        session = backend.open(workdir=workdir, limits=Limits(), blobs=blobs)
    except BackendError as exc:
        listener.close()
        return DoctorReport(
            checks=tuple(
                LayerCheck(
                    layer=s.layer, supported=s.active, active=False, proven=None, detail=str(exc)
                )
                for s in supported.values()
            )
        )
    with session:
        active = dict(session.layers)
        worker_pid = session.pid or 0
        result = session.run(ExecRequest(action_id="doctor", code=_SESSION_PROBE))
        try:
            seen = json.loads(blobs.get(result.stdout).decode())
        except ValueError:
            seen = {}
        proofs.update(_judge_session(seen, worker_pid, workdir, session.limits))
    # Tree kill: a daemonised, SIGTERM-ignoring grandchild must die with its session.
    with backend.open(workdir=workdir, limits=Limits(), blobs=blobs) as daemon_session:
        daemon_session.run(ExecRequest(action_id="doctor", code=_DAEMON_PROBE))
        pids = daemon_session.process_ids()
    survivors = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    proofs[Layer.PIDNS] = (
        len(pids) >= 2 and not survivors,
        f"a setsid'd grandchild ignoring SIGTERM died with its session ({len(pids)} processes)"
        if not survivors
        else f"survivors after close: {survivors}",
    )
    read_only = _runtime_paths(backend.python)
    options: dict[str, object] = {
        "read_only": read_only,
        "canary_file": str(canary),
        "port": listener.getsockname()[1],
        "host_pid": os.getpid(),
    }
    for layer in (Layer.LANDLOCK, Layer.LANDLOCK_NET, Layer.LANDLOCK_SCOPE):
        if supported[layer].active:
            blocked, detail, _code = _run_probe(layer.value, options, backend.python)
            earlier = proofs.get(layer)
            if earlier is not None:
                blocked, detail = blocked and earlier[0], f"{earlier[1]}; alone: {detail}"
            proofs[layer] = (blocked, detail)
    if supported[Layer.SECCOMP].active:
        _blocked, detail, code = _run_probe(Layer.SECCOMP.value, options, backend.python)
        killed = code == -signal.SIGSYS
        earlier = proofs.get(Layer.SECCOMP, (True, ""))
        proofs[Layer.SECCOMP] = (
            killed and earlier[0],
            f"{earlier[1]}; alone: socket(AF_INET) refused, bpf() killed by SIGSYS"
            if killed
            else f"{earlier[1]}; alone: {detail}",
        )
    listener.close()
    checks = []
    for layer in Layer:
        status = active.get(layer)
        proof = proofs.get(layer)
        checks.append(
            LayerCheck(
                layer=layer,
                supported=supported[layer].active,
                active=bool(status and status.active),
                proven=None if proof is None else proof[0],
                detail=(status.detail if status else supported[layer].detail)
                + (f" | self-test: {proof[1]}" if proof else ""),
            )
        )
    return DoctorReport(checks=tuple(checks))


def _runtime_paths(python: str) -> list[str]:
    code = (
        "import json, safeexec.sandbox.zygote as z; print(json.dumps(z.runtime_read_only_paths()))"
    )
    done = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, check=True)
    return [str(p) for p in json.loads(done.stdout)]


def _same_namespace(pid: int, kind: str) -> bool | None:
    try:
        return os.stat(f"/proc/{pid}/ns/{kind}").st_ino == os.stat(f"/proc/self/ns/{kind}").st_ino
    except OSError:
        return None


def _judge_session(
    seen: Mapping[str, object], worker_pid: int, workdir: Path, limits: Limits
) -> dict[Layer, tuple[bool, str]]:
    """Turn what a probe session saw (and what the host sees of it) into per-layer proofs."""
    if not seen:
        return {}
    proofs: dict[Layer, tuple[bool, str]] = {}
    proofs[Layer.SESSION] = (seen.get("sid") == seen.get("pid"), f"sid={seen.get('sid')}")
    proofs[Layer.WORKDIR] = (seen.get("cwd") == str(workdir), f"cwd={seen.get('cwd')}")
    env = seen.get("env")
    allowed_env = {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "MPLBACKEND", "MPLCONFIGDIR"}
    proofs[Layer.ENV] = (
        isinstance(env, list) and set(env) <= allowed_env,
        f"variables: {env}",
    )
    rlimits = seen.get("rlimits")
    if isinstance(rlimits, dict):
        ok = (
            rlimits.get("RLIMIT_NPROC") == limits.max_processes
            and rlimits.get("RLIMIT_NOFILE") == limits.max_open_files
            and rlimits.get("RLIMIT_FSIZE") == limits.file_size_bytes
            and rlimits.get("RLIMIT_CORE") == 0
            and seen.get("huge_list") == "MemoryError"
        )
        proofs[Layer.RLIMITS] = (ok, f"{rlimits}; [0]*10**10 -> {seen.get('huge_list')}")
    for layer, kind in ((Layer.NETNS, "net"), (Layer.IPCNS, "ipc"), (Layer.PIDNS, "pid")):
        same = _same_namespace(worker_pid, kind)
        proofs[layer] = (same is False, f"worker's {kind} namespace differs from the host's")
    caps = seen.get("capabilities")
    uid_ok = os.geteuid() != 0 or seen.get("uid") != 0
    proofs[Layer.PRIVDROP] = (
        uid_ok and isinstance(caps, list) and not any(caps),
        f"uid={seen.get('uid')} capabilities={caps}",
    )
    proofs[Layer.NO_NEW_PRIVS] = (
        seen.get("no_new_privs") == 1,
        f"prctl -> {seen.get('no_new_privs')}",
    )
    proofs[Layer.LANDLOCK] = (
        seen.get("read_etc_passwd") == "PermissionError",
        f"open('/etc/passwd') -> {seen.get('read_etc_passwd')}",
    )
    proofs[Layer.SECCOMP] = (
        seen.get("socket_inet") == "PermissionError",
        f"socket(AF_INET) -> {seen.get('socket_inet')}",
    )
    return proofs
