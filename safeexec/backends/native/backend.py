"""The native backend: the factory of sessions, what this machine can confine, the idle watchdog."""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from safeexec.backends.base import SessionSpec
from safeexec.backends.native.cgroup import WarmGroups, cgroup_support
from safeexec.backends.native.disk import SpareWorkdirs, disk_support
from safeexec.backends.native.spawn import SpawnedAhead
from safeexec.backends.native.template import TemplateProcess, _Template
from safeexec.backends.workdir import ArtifactLimits
from safeexec.egress.proxy import Resolver, system_resolver
from safeexec.errors import ConfigurationError
from safeexec.model.fieldwise import Fieldwise
from safeexec.model.values import Limits
from safeexec.sandbox import landlock
from safeexec.sandbox.ladder import RUNGS, Rung
from safeexec.sandbox.layers import ALWAYS_REQUIRED, DEFAULT_REQUIRED, Layer, LayerStatus

if TYPE_CHECKING:
    from safeexec.backends.native.session import NativeSession

__all__ = ["NativeBackend", "NativeStatistics", "supported_layers"]

_EXECUTORS = ("python", "restricted", "dsl")
_WATCH_SECONDS = 0.5  # how often idle sessions are checked for background CPU and disk use
_LAYER_NAMES = frozenset(layer.value for layer in Layer)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class NativeStatistics(Fieldwise):
    """Live figures of one :class:`NativeBackend` (a frozen snapshot).

    ``template_pid`` is None while no template process runs; ``preloaded`` names the modules the
    template imported before forking sessions.
    """

    template_pid: int | None
    open_sessions: int
    pool_size: int
    preloaded: tuple[str, ...]


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
        Layer.MOUNTNS: status(Layer.MOUNTNS, ns_ok, ns_why or "unshare(CLONE_NEWNS), chroot"),
        Layer.PROC: status(Layer.PROC, ns_ok, ns_why or "a /proc per pid namespace"),
        Layer.PRIVDROP: status(
            Layer.PRIVDROP,
            True,
            "root: per-session unprivileged uid" if root else "already unprivileged",
        ),
        Layer.OWN_UID: status(
            Layer.OWN_UID,
            root,
            "root: setresuid to a uid per session"
            if root
            else f"the host runs as uid {os.geteuid()}: sessions share it (needs root)",
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
        Layer.DISK: disk_support(),
        **cgroup_support(),
    }


def _rung(name: str | None) -> Rung | None:
    """The rung a spec requires, checked."""
    if name is None:
        return None
    try:
        return Rung(name)
    except ValueError:
        raise ConfigurationError(
            f"unknown confinement rung={name!r}; known rungs, strongest first: "
            f"{[rung.value for rung in RUNGS]}"
        ) from None


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


class NativeBackend:
    """Factory of native sessions; owns one template process (started on first use).

    ``executor`` picks what runs cells inside the worker ("python", "restricted", or "dsl":
    programs the host compiled, see ``safeexec.sandbox.dsl_executor``);
    ``preload`` names modules the template imports once (e.g. numpy) so sessions share them;
    ``pool_size`` session processes are kept forked and confined ahead, and as many spawned
    ahead with workdirs of their own, so an open only sends its config and waits for the
    session's hello; ``disk_bytes`` caps what a session's workdir may hold;
    ``cpu_cores`` caps how much of the machine's CPU a session's cgroup may use at once;
    ``resolver`` is what the sessions' egress proxies resolve names with (the host's own by
    default; tests map their names to loopback servers).
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
        cpu_cores: float = 1.0,
        resolver: Resolver = system_resolver,
    ) -> None:
        if executor not in _EXECUTORS:
            raise ConfigurationError(f"unknown executor={executor!r}; use one of {_EXECUTORS}")
        self.executor = executor
        self.preload = tuple(preload)
        self.python = python or sys.executable
        self.artifact_limits = artifact_limits or ArtifactLimits()
        self.disk_bytes = disk_bytes
        self.pool_size = pool_size
        if not cpu_cores > 0:
            raise ConfigurationError(f"cpu_cores={cpu_cores!r} must be a positive number of CPUs")
        self.cpu_cores = cpu_cores
        self.resolver = resolver
        self._template: _Template | None = None
        self._sessions = _OpenSessions()
        self._watchdog: threading.Thread | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        # Probed on first need, not here: the probe loads libseccomp (for a syscall number),
        # which ``safeexec run`` would otherwise wait for before it starts the template.
        self._supported_layers: dict[Layer, LayerStatus] | None = None
        self._probe_lock = threading.Lock()
        self._warm_groups = WarmGroups(Limits(), cpu_cores=cpu_cores)
        weakref.finalize(self, self._warm_groups.close)
        self._spare_workdirs = SpareWorkdirs(
            size_bytes=disk_bytes,
            inodes=self.artifact_limits.max_entries_scanned,
            keep=pool_size,
        )
        weakref.finalize(self, self._spare_workdirs.close)
        self._spawned_ahead = SpawnedAhead(self._spare_workdirs, keep=pool_size)
        weakref.finalize(self, self._spawned_ahead.close)
        self._finalizer = weakref.finalize(self, _close_template, [None])

    @property
    def supported(self) -> Mapping[Layer, LayerStatus]:
        """Which layers this machine can provide (before any session is opened)."""
        return dict(self._supported())

    def _supported(self) -> dict[Layer, LayerStatus]:
        with self._probe_lock:
            if self._supported_layers is None:
                self._supported_layers = supported_layers()
            return self._supported_layers

    def _get_template(self, process: TemplateProcess | None = None) -> _Template:
        with self._lock:
            if self._template is None or not self._template.alive:
                if self._template is not None:
                    self._template.close()
                self._template = _Template(
                    python=self.python,
                    preload=self.preload,
                    pool_size=self.pool_size,
                    on_member=self._on_member,
                    on_exit=self._warm_groups.discard,
                    process=process,
                )
                self._finalizer.detach()
                self._finalizer = weakref.finalize(self, _close_template, [self._template])
            elif process is not None:
                process.close()  # a template serves already
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

    def _on_member(self, pid: int) -> None:
        """The template forked a warm session process: give it a cgroup, and top up the
        sessions spawned ahead (with workdirs of their own) and the spare workdirs."""
        self._warm_groups.join(pid)
        template = self._template
        if template is not None and template.alive:
            self._spawned_ahead.request(template)

    def start(self, process: TemplateProcess | None = None) -> None:
        """Start the template now rather than on the first ``open``; from ``process``, one
        started ahead, if it was started with this backend's options (else it is closed)."""
        self._get_template(process)

    def statistics(self) -> NativeStatistics:
        """Live figures: the template's pid, open sessions, the pool size, preloaded modules."""
        template = self._template
        return NativeStatistics(
            template_pid=template.pid if template is not None else None,
            open_sessions=len(self._sessions),
            pool_size=self.pool_size,
            preloaded=tuple(template.preloaded) if template is not None else (),
        )

    def open(self, spec: SessionSpec) -> NativeSession:
        """Open a confined session; ``BackendUnavailable`` if a required layer cannot be had.

        Layers in ``spec.require`` must apply; seccomp and Landlock are required anyway where
        the kernel has them.
        """
        # Imported at the first open, not with the backend: ``safeexec run`` starts the
        # template first, and the session's modules load while it boots.
        from safeexec.backends.native.session import NativeSession

        return NativeSession(
            backend=self,
            spec=spec,
            required=self._required(spec.require),
            rung=_rung(spec.rung),
        )

    def _required(self, require: frozenset[str]) -> frozenset[Layer]:
        unknown = sorted(set(require) - _LAYER_NAMES)
        if unknown:
            raise ConfigurationError(
                f"unknown confinement layer require={unknown!r}; "
                f"known layers: {sorted(_LAYER_NAMES)}"
            )
        defaults = {layer for layer in DEFAULT_REQUIRED if self._supported()[layer].active}
        return frozenset({Layer(name) for name in require} | defaults | ALWAYS_REQUIRED)

    def close(self) -> None:
        """Stop the template process (open sessions keep running until closed)."""
        self._stopping.set()
        with self._lock:
            if self._template is not None:
                self._template.close()
                self._template = None
            self._finalizer.detach()
        self._spawned_ahead.close()
        self._warm_groups.close()
        self._spare_workdirs.close()


class _OpenSessions:
    """The open sessions, weakly held; sessions opened and closed on other threads while the
    watchdog copies the set must not stop the watchdog (a ``WeakSet`` copied during an ``add``
    raises, and the thread would die, leaving idle sessions unwatched)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: weakref.WeakSet[NativeSession] = weakref.WeakSet()

    def add(self, session: NativeSession) -> None:
        with self._lock:
            self._sessions.add(session)

    def discard(self, session: NativeSession) -> None:
        with self._lock:
            self._sessions.discard(session)

    def snapshot(self) -> list[NativeSession]:
        with self._lock:
            return list(self._sessions)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)


def _watch_idle_sessions(
    backend_ref: weakref.ref[NativeBackend], stopping: threading.Event
) -> None:
    """Between calls, kill sessions whose leftover processes burn CPU or fill the disk."""
    while not stopping.wait(_WATCH_SECONDS):
        backend = backend_ref()
        if backend is None:
            return
        sessions = backend._sessions.snapshot()
        del backend
        for session in sessions:
            session._watch_idle()


def _close_template(holder: list[_Template | None]) -> None:
    template = holder[0]
    if template is not None:
        template.close()
