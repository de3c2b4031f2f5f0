"""A native session: the confined worker's lifecycle (start, confine, lend the workdir, kill).

One call (run, pump, tools, settle) lives in :mod:`safeexec.backends.native.call`, the host's
handle on a worker in :mod:`~safeexec.backends.native.handle`; what the backend's sessions share
comes handed in as its :class:`~safeexec.backends.native.supply.WorkerSupply`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import select
import socket
import stat
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path

from safeexec.backends.base import CallInterrupted, OutputSink, SessionSpec
from safeexec.backends.native.call import CallScope, network_events, read_some, run_call
from safeexec.backends.native.cgroup import SessionGroup
from safeexec.backends.native.disk import WorkdirMount
from safeexec.backends.native.handle import WorkerHandle
from safeexec.backends.native.meters import CpuMeter, DiskBudget
from safeexec.backends.native.procfs import (
    descendants,
    describe_death,
    has_private_ipc,
    is_pid_one_of_own_namespace,
    is_zombie,
    processes_in_pid_namespace,
)
from safeexec.backends.native.spawn import Spawned, spawn
from safeexec.backends.native.supply import WorkerSupply
from safeexec.backends.native.template import _STARTUP_SECONDS
from safeexec.backends.workdir import (
    Owners,
    chown_beneath,
    download_file,
    remove_tree,
    return_beneath,
    upload_file,
)
from safeexec.egress.proxy import EgressProxy
from safeexec.errors import BackendError, BackendUnavailable, ConfigurationError
from safeexec.model.values import (
    ExecRequest,
    ExecResult,
    NetworkConnection,
)
from safeexec.sandbox import seccomp
from safeexec.sandbox.channel import (
    ProtocolError,
    recv_frame,
    recv_frame_with_fds,
    send_frame,
    send_frame_with_fds,
)
from safeexec.sandbox.egress_client import proxy_environment
from safeexec.sandbox.ladder import GUIDANCE, Rung, meets, missing_for, rung_of
from safeexec.sandbox.layers import Layer, LayerStatus, parse_layer_report
from safeexec.sandbox.protocol import (
    Hello,
    SessionConfig,
    Started,
)
from safeexec.sandbox.session_env import base_environment

__all__ = ["NativeSession"]


class NativeSession:
    """A stateful, confined CPython worker; see :meth:`NativeBackend.open`.

    Its rlimits come from the spec's limits, each call's time and output limits from the call's
    request (see :class:`~safeexec.backends.base.SessionSpec`).
    """

    def __init__(
        self,
        *,
        supply: WorkerSupply,
        spec: SessionSpec,
        required: frozenset[Layer],
        rung: Rung | None = None,
    ) -> None:
        self._supply = supply
        self._options = options = supply.options
        workdir, tools = spec.workdir, spec.tools
        self._owns_workdir = workdir is None
        ahead: Spawned | None = None
        if workdir is None:
            # Made ahead: a fresh directory on a tmpfs of its own, most often with a session
            # process spawned for it already (see ``SpawnedAhead``).
            self.workdir, self._disk, ahead = supply.take_workdir()
        else:
            self.workdir = Path(workdir)
            if not self.workdir.is_dir():
                raise ConfigurationError(
                    f"workdir={str(self.workdir)!r} is not a directory; create it first"
                )
            if _read_only(self.workdir):
                raise ConfigurationError(
                    f"workdir={str(self.workdir)!r} is read-only (a read-only mount, or not "
                    "writable by this user); the session writes its files there: pass a "
                    "writable directory"
                )
            self._disk = WorkdirMount(None, size_bytes=0, inodes=0)
        self.limits = limits = spec.limits
        self.blobs = spec.blobs
        self.tools = tools
        self.required = required
        self.required_rung = rung
        self.imports = tuple(spec.imports)
        self.env = dict(spec.env)
        self.workdir_symlinks = spec.workdir_symlinks
        self.seed = spec.seed
        # The session's way out, if its policy allows hosts and its cells are plain Python:
        # one proxy for the session's life, a fresh channel to it for each worker.
        self._egress: EgressProxy | None = None
        if spec.network.enabled and options.executor == "python":
            self._egress = EgressProxy(spec.network, resolver=options.resolver)
        self._tool_names = tuple(d.name for d in tools.describe()) if tools is not None else ()
        self._lock = threading.RLock()
        # Held while the workdir's owner changes (a worker's uid is lent it, close gives it
        # back or removes it) and by uploads, which need not wait for a running cell: the
        # walks beneath the workdir never follow links, so they are safe beside the sandbox's
        # own processes (which may touch the workdir at any time, cell or not).
        self._files_lock = threading.Lock()
        self._closed = False
        self._lost_state = False
        self._uid: int | None = None  # a root host's sessions run as a uid of their own
        # What a root host lent to the session's uids, given back on close (see _give_workdir_to).
        self._lent: Owners = {}
        self._borrowers: set[int] = set()
        home = self.workdir.stat()
        self._home_owner = (home.st_uid, home.st_gid)
        self._home_mode = stat.S_IMODE(home.st_mode)
        self._worker: WorkerHandle | None = None
        # Between calls, leftover processes may use as much CPU as the last call was allowed.
        self._cpu = CpuMeter(idle_budget=limits.cpu_seconds)
        self.disk_bytes = options.disk_bytes  # what the workdir may hold
        self._disk_budget = DiskBudget(
            self.workdir,
            self._disk,
            budget_bytes=options.disk_bytes,
            artifact_limits=options.artifact_limits,
        )
        self._lost_reason = ""
        self._group = SessionGroup(limits, cpu_cores=options.cpu_cores, warm=supply.warm_groups)
        # The cgroup and the tmpfs outlive the process unless removed: also on a session that
        # is never closed, when it is collected or the interpreter exits.
        weakref.finalize(self, _release_kernel_objects, self._group, self._disk)
        # Set by interrupt() from any thread while a call runs; the call's pump polls it.
        self._interrupt_requested = threading.Event()
        self._in_call = False  # still True at the next run: the last call was abandoned mid-way
        self._call_scope = CallScope(
            workdir=self.workdir,
            blobs=self.blobs,
            tools=tools,
            tool_names=self._tool_names,
            limits=limits,
            supply=supply,
            group=self._group,
            cpu=self._cpu,
            disk=self._disk_budget,
            interrupt=self._interrupt_requested,
            egress=self._egress,
        )
        try:
            if ahead is not None:
                try:
                    self._worker = self._start_worker(ahead)
                except BackendUnavailable:
                    raise
                except BackendError:
                    # Its template is gone, or it died waiting: spawn one now instead.
                    self._worker = self._start_worker()
            else:
                self._worker = self._start_worker()
        except BackendUnavailable:
            self.close()
            raise
        except BackendError as exc:
            self.close()
            raise BackendUnavailable(
                f"{_one_line(str(exc))}; run `safeexec doctor` to see which confinement layer "
                "this host refuses"
            ) from exc
        except BaseException:
            self.close()
            raise
        supply.add(self)

    # -- public API ---------------------------------------------------------------------------

    @property
    def layers(self) -> Mapping[Layer, LayerStatus]:
        """The confinement layers in force for the current worker, as it reported them."""
        with self._lock:
            return dict(self._worker.layers) if self._worker is not None else {}

    @property
    def rung(self) -> Rung | None:
        """The rung of the confinement ladder the current worker reached (see
        :mod:`safeexec.sandbox.ladder`)."""
        with self._lock:
            return self._worker.rung if self._worker is not None else None

    @property
    def pid(self) -> int | None:
        """The host pid of the current worker (pid 1 of the session's own pid namespace)."""
        worker = self._worker
        return worker.pid if worker is not None else None

    def run(self, request: ExecRequest, *, on_output: OutputSink | None = None) -> ExecResult:
        """Run one cell; crashes, timeouts and kills come back as statuses, never as exceptions.

        ``on_output`` receives the cell's stdout and stderr as the host reads them from the
        worker's pipes (the worker flushes each line while a sink is given).

        At a time limit, or on :meth:`interrupt`, the cell gets ``KeyboardInterrupt`` and has
        ``INTERRUPT_GRACE_SECONDS`` to return (status ``interrupted``, state kept) before the
        worker is killed. A ``KeyboardInterrupt`` in the host during the call interrupts the cell
        the same way; the call then raises :class:`~safeexec.backends.base.CallInterrupted`
        carrying its result.
        """
        with self._lock:
            if self._closed:
                raise BackendError("run() on a closed native session; open a new one")
            restarted = False
            if self._worker is not None and self._in_call:
                # An exception left the last call before it settled: its answer or output may
                # still be on the way, so this worker can no longer be trusted to be in step.
                worker = self._worker
                worker.kill()
                self._supply.template().exit_status(worker.pid, timeout=1.0)
                self._discard(worker)
                self._lost_reason = "the previous call was abandoned before it finished"
            self._in_call = False
            if self._worker is not None and _has_exited(self._worker.pidfd):
                # It died between calls (e.g. the kernel's OOM killer): not this call's doing.
                worker = self._worker
                status = self._supply.template().exit_status(worker.pid, timeout=1.0)
                worker.kill()
                self._discard(worker)
                self._lost_reason = f"the worker died between calls: {describe_death(status)[0]}"
            if self._worker is None:
                self._worker = self._start_worker()
                restarted = True
            self._in_call = True
            result, host_interrupt = run_call(
                self._call_scope, self._worker, request, on_output, lose=self._discard
            )
            self._in_call = False
            if restarted and self._lost_state:
                self._lost_state = False
                note = "session restarted; state from before was lost"
                if self._lost_reason:
                    note += f" ({self._lost_reason})"
                    self._lost_reason = ""
                result = dataclasses.replace(
                    result,
                    state_lost=True,
                    message=f"{note}; {result.message}" if result.message else note,
                )
            if host_interrupt:
                raise CallInterrupted(result)
            return result

    def interrupt(self) -> None:
        """Interrupt the running call's cell, from any thread; does nothing between calls."""
        if self._in_call:
            self._interrupt_requested.set()

    def reset(self) -> None:
        """Forget all state by replacing the worker with a fresh one; the workdir is kept."""
        with self._lock:
            if self._closed:
                raise BackendError("reset() on a closed native session")
            self._stop_worker()
            self._lost_state = False
            self._worker = self._start_worker()

    def close(self) -> None:
        """Kill the whole process tree and release everything; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._supply.discard(self)
            # The last reading, for unbilled_cpu_seconds(): the cgroup goes with the session.
            if self._worker is not None:
                self._cpu.last_reading = self._group.cpu_seconds(self._worker.pid)
            self._stop_worker()
            if self._egress is not None:
                self._egress.close()
            self._group.remove()
            self._disk.remove()
            with self._files_lock:
                if self._owns_workdir:
                    remove_tree(str(self.workdir))
                else:
                    self._return_workdir()

    def __enter__(self) -> NativeSession:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def process_ids(self) -> list[int]:
        """Host pids of every live process in the session's pid namespace (empty when none runs).

        Exited processes waiting to be reaped (by the worker, before its next cell) are left out.
        """
        worker = self._worker
        if worker is None:
            return []
        if not worker.private_pidns:
            pids = descendants(worker.pid)
        else:
            pids = processes_in_pid_namespace(worker.pidns)
        return [pid for pid in pids if not is_zombie(pid)]

    def cgroup_pids(self) -> list[int]:
        """Host pids in the session's cgroup (empty when it has none)."""
        return self._group.pids()

    def unbilled_cpu_seconds(self) -> float:
        """CPU the session used since its last call ended (or this was last asked), now counted
        as charged: the next call is charged only what comes after. 0 while a call runs (the
        call charges it); after :meth:`close`, what ran up to the kill."""
        if not self._lock.acquire(blocking=False):
            return 0.0
        try:
            worker = self._worker
            reading = (
                self._group.cpu_seconds(worker.pid)
                if worker is not None and not self._closed
                else self._cpu.last_reading  # the reading before the kill (idle watch or close)
            )
            return self._cpu.take_unbilled(reading)
        finally:
            self._lock.release()

    def watch_idle(self) -> None:
        """Between calls, enforce the CPU and disk budgets (the backend's watchdog calls this
        every half second; it returns at once while a call runs, which watches itself)."""
        if not self._lock.acquire(blocking=False):
            return  # a call is running and watches itself
        try:
            worker = self._worker
            if worker is None or self._closed:
                return
            cpu = self._group.cpu_seconds(worker.pid)
            reason = ""
            if self._cpu.idle_overrun(cpu):
                reason = f"background processes used more than {self._cpu.idle_budget:g} s CPU"
            elif cpu > self._cpu.last_reading and self._disk_budget.exceeded(worker.pid):
                reason = self._disk_budget.overrun()
            self._cpu.last_reading = cpu
            if reason:
                worker.kill(verify=True)
                self._discard(worker)
                self._lost_reason = f"killed while idle: {reason}"
        finally:
            self._lock.release()

    def upload(self, name: str, data: bytes) -> None:
        """Write ``data`` to ``name`` (relative) in the workdir; never follows symlinks.

        A bad name or a non-file in the way raises ``ConfigurationError``; a symlink or FIFO in
        the way, ``OSError``. It does not wait for a running cell."""
        with self._files_lock:
            if self._closed:
                raise BackendError("upload() on a closed native session")
            upload_file(str(self.workdir), name, data, owner=self._uid)

    def download(self, name: str) -> bytes:
        """The bytes of regular file ``name`` in the workdir (capped by ``file_size_bytes``)."""
        return download_file(str(self.workdir), name, self.limits.file_size_bytes)

    # -- worker lifecycle ---------------------------------------------------------------------

    def _give_workdir_to(self, uid: int) -> None:
        """As root, lend the workdir tree to the session's uid; :meth:`close` gives it back.

        Every entry's owner is recorded before it is lent, and on close only entries a session
        uid owns are returned (to their recorded owner, or to the workdir's owner for what the
        session made), so a user's directory keeps its owners. Walks with directory
        descriptors opened ``O_NOFOLLOW``, so a directory swapped for a symlink mid-walk cannot
        redirect a chown outside the workdir.
        """
        borrowers = frozenset(self._borrowers)
        self._borrowers.add(uid)
        root = os.open(self.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fchown(root, uid, uid)
            chown_beneath(
                root,
                uid,
                depth=0,
                limits=self._options.artifact_limits,
                lent=self._lent,
                borrowers=borrowers,
            )
        finally:
            os.close(root)

    def _return_workdir(self) -> None:
        """Give back what :meth:`_give_workdir_to` lent (a no-op unless a root host lent it)."""
        if not self._borrowers:
            return
        borrowers = frozenset(self._borrowers)
        with contextlib.suppress(OSError):
            root = os.open(self.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                return_beneath(
                    root,
                    lent=self._lent,
                    borrowers=borrowers,
                    home=self._home_owner,
                    depth=0,
                    limits=self._options.artifact_limits,
                )
                os.fchown(root, *self._home_owner)
                os.fchmod(root, self._home_mode)
            finally:
                os.close(root)

    def _session_env(self) -> dict[str, str]:
        env = base_environment(str(self.workdir))
        env.update(self.env)
        if self._egress is not None:
            env.update(proxy_environment(str(self.workdir)))
        return env

    def take_network_events(self) -> list[NetworkConnection]:
        """The connections through the session's egress proxy that ended since the last call.

        A connection still open is reported by the call during which it ends; one whose
        sandbox end is closed already (the cell closed it, or the worker died) is waited for,
        a moment, to be reported here.
        """
        return network_events(self._egress)

    def _start_worker(self, spawned: Spawned | None = None) -> WorkerHandle:
        """Start a worker: from ``spawned`` (a session process spawned ahead for this workdir,
        waiting for its config), else spawned now."""
        template = self._supply.template()
        if spawned is None:
            spawned = spawn(template, self.workdir, self._disk)
        host_end, out_read, err_read = spawned.channel, spawned.stdout, spawned.stderr
        # Built while the template hands a session process spawned now its descriptors.
        limits = self.limits
        config = SessionConfig(
            workdir=str(self.workdir),
            env=self._session_env(),
            memory_bytes=limits.memory_bytes,
            cpu_seconds=limits.cpu_seconds,
            file_size_bytes=limits.file_size_bytes,
            max_processes=limits.max_processes,
            max_open_files=limits.max_open_files,
            executor=self._options.executor,
            imports=self.imports,
            tool_names=self._tool_names,
            workdir_symlinks=self.workdir_symlinks,
            seed=self.seed,
            egress_channel=self._egress is not None,
        )
        host_end.settimeout(_STARTUP_SECONDS)
        pidfd = -1
        try:
            message, fds = recv_frame_with_fds(host_end, max_fds=1)
            try:
                started = Started.from_message(message)
                if len(fds) != 1:
                    raise ProtocolError("a 'started' frame carries exactly the worker's pidfd")
            except ProtocolError:
                for fd in fds:
                    os.close(fd)
                raise
            pidfd = fds[0]
            # The session waits for its config before it runs anything: in time to move it,
            # and (a root host) to lend it the workdir, which it enters as its own uid.
            cgroup_layers = self._group.adopt(started.pid)
            classes = _rung_classes(
                cgroup_layers[Layer.CGROUP_MEMORY],
                self._disk,
                private_ipc=has_private_ipc(started.pid, template.pid),
            )
            config = config.replace(rung_filter=_rung_filter(classes))
            uid = started.uid
            if os.geteuid() == 0 and uid is not None and uid > 0:
                # Chosen by the template from the worker's pid, so unique on this machine
                # while the session lives.
                with self._files_lock:
                    self._uid = uid
                    self._give_workdir_to(uid)
            self._send_config(host_end, config)
            worker = WorkerHandle(
                pid=started.pid,
                pidfd=pidfd,
                pidns=started.pidns,
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
            if isinstance(exc, BackendUnavailable):
                raise
            raise BackendError(f"could not start a native session: {exc}") from exc
        # While the worker finishes confining itself.
        worker.private_pidns = is_pid_one_of_own_namespace(worker.status)
        for fd in (out_read, err_read):
            os.set_blocking(fd, False)
        try:
            hello = Hello.from_message(recv_frame(host_end))
        except (OSError, EOFError, ProtocolError) as exc:
            worker.kill()
            status = template.exit_status(worker.pid, timeout=1.0)
            why, _code, _sig = describe_death(status)
            stderr = _drain(worker.stderr, 64 * 1024).decode("utf-8", "replace").strip()
            worker.close_fds()
            last = stderr.splitlines()[-1] if stderr else str(exc)
            raise BackendUnavailable(
                f"the native session died while confining itself ({why}): {_one_line(last)}; "
                "run `safeexec doctor` to see which confinement layer this host refuses"
            ) from exc
        host_end.settimeout(None)
        worker.layers = {**parse_layer_report(hello.layers), **cgroup_layers}
        if not self._disk.active:
            worker.layers[Layer.DISK] = LayerStatus(
                layer=Layer.DISK,
                active=False,
                detail=f"{self._disk.reason}; files without a name are counted from the "
                "session's /proc instead, checked while it runs and after each call",
            )
        worker.rung = rung_of(worker.layers)
        missing = [layer for layer in Layer if layer in self.required]
        missing = [layer for layer in missing if not worker.layers[layer].active]
        why = "required"
        wanted = self.required_rung
        if not missing and wanted is not None and not meets(worker.rung, wanted):
            missing, why = missing_for(wanted, worker.layers), f"the {wanted.value} rung needs"
        if missing:
            worker.kill()
            worker.close_fds()
            reasons = "; ".join(
                f"{layer.value} ({_one_line(worker.layers[layer].detail)}; to get it: "
                f"{GUIDANCE[layer][1]})"
                for layer in missing
            )
            raise BackendUnavailable(
                f"confinement layers {why} are unavailable on this host (rung "
                f"{worker.rung.value if worker.rung else 'none'}): {reasons}"
            )
        return worker

    def _send_config(self, host_end: socket.socket, config: SessionConfig) -> None:
        """Send the config; with the network on, with a new channel to the egress proxy."""
        if self._egress is None:
            send_frame(host_end, config.to_message())
            return
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            send_frame_with_fds(host_end, config.to_message(), [theirs.fileno()])
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        # Ends when every process of the worker holding the other end is gone.
        self._egress.serve_channel(ours)

    def _stop_worker(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.kill()
            template = self._supply.running_template()
            if template is not None:
                template.exit_status(worker.pid, timeout=0.5)
            worker.close_fds()

    def _discard(self, worker: WorkerHandle) -> None:
        """Forget ``worker`` (killed): the next call starts a new one, and says state was lost."""
        worker.close_fds()
        if self._worker is worker:
            self._worker = None
            self._lost_state = True


def _rung_classes(memory: LayerStatus, disk: WorkdirMount, *, private_ipc: bool) -> frozenset[str]:
    """What this session's rung cannot count or contain, so its worker refuses it
    (:data:`~safeexec.sandbox.seccomp.RUNG_CLASSES`): unmapped shared memory without a
    memory cgroup; hidden holders of unlinked files and preallocation without a size-bounded
    workdir mount; IPC objects without an IPC namespace of the session's own."""
    classes = set()
    if not memory.active:
        classes.add("unmapped_memory")
    if not disk.active:
        classes.update(("hidden_file_holders", "preallocation"))
    if not private_ipc:
        classes.add("shared_ipc")
    return frozenset(classes)


@functools.cache
def _rung_filter(classes: frozenset[str]) -> bytes:
    """The compiled filter for ``classes``, made once per host process."""
    try:
        return seccomp.compile_rung_filter(classes)
    except (OSError, ValueError, RuntimeError) as exc:
        raise BackendUnavailable(
            f"the seccomp filter for the rung's classes cannot be built here: {exc!r}; "
            "run `safeexec doctor`"
        ) from exc


def _release_kernel_objects(group: SessionGroup, disk: WorkdirMount) -> None:
    group.remove()
    disk.remove()


def _one_line(text: str) -> str:
    """``text`` on one line (an error message names a layer, never holds a traceback)."""
    return " ".join(text.split())[:300]


def _read_only(path: Path) -> bool:
    """Is ``path`` on a read-only mount, or not writable and searchable by this uid?"""
    try:
        on_read_only_mount = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False  # what is wrong with it shows when the worker starts
    return on_read_only_mount or not os.access(path, os.W_OK | os.X_OK)


def _has_exited(pidfd: int) -> bool:
    """A pidfd polls readable once its process has exited."""
    poller = select.poll()  # one system call; an epoll selector would cost four
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(0))


def _drain(fd: int, limit: int) -> bytes:
    os.set_blocking(fd, False)
    out = bytearray()
    while len(out) < limit:
        data = read_some(fd)
        if not data:
            break
        out += data
    return bytes(out)
