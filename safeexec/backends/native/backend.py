"""The native backend: the factory of sessions and what this machine can confine.

What its sessions share (the template, workers made ahead, the idle watchdog) is one value,
:class:`~safeexec.backends.native.supply.WorkerSupply`, handed to each session it opens.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from safeexec.backends.base import SessionSpec
from safeexec.backends.native.cgroup import cgroup_support
from safeexec.backends.native.disk import disk_support
from safeexec.backends.native.supply import NativeOptions, WorkerSupply
from safeexec.backends.native.template import TemplateProcess
from safeexec.backends.workdir import ArtifactLimits
from safeexec.egress.proxy import Resolver, system_resolver
from safeexec.errors import ConfigurationError
from safeexec.model.fieldwise import Fieldwise
from safeexec.sandbox import landlock
from safeexec.sandbox.ladder import RUNGS, Rung
from safeexec.sandbox.layers import ALWAYS_REQUIRED, DEFAULT_REQUIRED, Layer, LayerStatus

if TYPE_CHECKING:
    from safeexec.backends.native.native_session import NativeSession

__all__ = ["NativeBackend", "NativeStatistics", "supported_layers"]

_EXECUTORS = ("python", "restricted", "dsl")
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
        self._supply = WorkerSupply(
            NativeOptions(
                executor=executor,
                preload=self.preload,
                python=self.python,
                artifact_limits=self.artifact_limits,
                disk_bytes=disk_bytes,
                pool_size=pool_size,
                cpu_cores=cpu_cores,
                resolver=resolver,
            )
        )
        # Probed on first need, not here: the probe loads libseccomp (for a syscall number),
        # which ``safeexec run`` would otherwise wait for before it starts the template.
        self._supported_layers: dict[Layer, LayerStatus] | None = None
        self._probe_lock = threading.Lock()

    @property
    def supported(self) -> Mapping[Layer, LayerStatus]:
        """Which layers this machine can provide (before any session is opened)."""
        return dict(self._supported())

    def _supported(self) -> dict[Layer, LayerStatus]:
        with self._probe_lock:
            if self._supported_layers is None:
                self._supported_layers = supported_layers()
            return self._supported_layers

    def start(self, process: TemplateProcess | None = None) -> None:
        """Start the template now rather than on the first ``open``; from ``process``, one
        started ahead, if it was started with this backend's options (else it is closed)."""
        self._supply.template(process)

    def statistics(self) -> NativeStatistics:
        """Live figures: the template's pid, open sessions, the pool size, preloaded modules."""
        template = self._supply.running_template()
        return NativeStatistics(
            template_pid=template.pid if template is not None else None,
            open_sessions=self._supply.open_sessions,
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
        from safeexec.backends.native.native_session import NativeSession

        return NativeSession(
            supply=self._supply,
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
        self._supply.close()
