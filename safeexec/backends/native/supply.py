"""What a native backend's sessions share, as one value each session receives when it opens.

The backend's options, its template process (started on first need), the session processes
spawned ahead with workdirs of their own, the spare workdirs, the warm cgroups, and the open
sessions with the watchdog that checks them between calls. The backend makes one
:class:`WorkerSupply` and hands it to every session it opens; a session takes what it needs
through the supply's methods and never reaches into the backend.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from safeexec.backends.native.cgroup import WarmGroups
from safeexec.backends.native.disk import SpareWorkdirs, WorkdirMount
from safeexec.backends.native.spawn import Spawned, SpawnedAhead
from safeexec.backends.native.template import TemplateProcess, _Template
from safeexec.backends.workdir import ArtifactLimits
from safeexec.egress.proxy import Resolver
from safeexec.model.values import Limits

__all__ = ["IdleWatched", "NativeOptions", "WorkerSupply"]

_WATCH_SECONDS = 0.5  # how often idle sessions are checked for background CPU and disk use


@dataclass(frozen=True, slots=True, kw_only=True)
class NativeOptions:
    """A native backend's options, checked by the backend (see ``NativeBackend``)."""

    executor: str
    preload: tuple[str, ...]
    python: str
    artifact_limits: ArtifactLimits
    disk_bytes: int
    pool_size: int
    cpu_cores: float
    resolver: Resolver


class IdleWatched(Protocol):
    """An open session as the watchdog sees it."""

    def watch_idle(self) -> None:
        """Between calls, enforce the session's CPU and disk budgets."""
        ...


class WorkerSupply:
    """The template, workers and workdirs made ahead, and warm cgroups a backend's sessions
    share; also the open sessions, which a watchdog thread checks while they are idle."""

    def __init__(self, options: NativeOptions) -> None:
        self.options = options
        self._template: _Template | None = None
        self._sessions = _OpenSessions()
        self._watchdog: threading.Thread | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self.warm_groups = WarmGroups(Limits(), cpu_cores=options.cpu_cores)
        weakref.finalize(self, self.warm_groups.close)
        self._spare_workdirs = SpareWorkdirs(
            size_bytes=options.disk_bytes,
            inodes=options.artifact_limits.max_entries_scanned,
            keep=options.pool_size,
        )
        weakref.finalize(self, self._spare_workdirs.close)
        self._spawned_ahead = SpawnedAhead(self._spare_workdirs, keep=options.pool_size)
        weakref.finalize(self, self._spawned_ahead.close)
        self._finalizer = weakref.finalize(self, _close_template, [None])

    def template(self, process: TemplateProcess | None = None) -> _Template:
        """The running template, started now if none runs (from ``process``, one started
        ahead, if it has these options); starts the idle watchdog too."""
        options = self.options
        with self._lock:
            if self._template is None or not self._template.alive:
                if self._template is not None:
                    self._template.close()
                self._template = _Template(
                    python=options.python,
                    preload=options.preload,
                    pool_size=options.pool_size,
                    on_member=self._on_member,
                    on_exit=self.warm_groups.discard,
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

    def running_template(self) -> _Template | None:
        """The template if one was started (it may have died since), without starting one."""
        return self._template

    def take_workdir(self) -> tuple[Path, WorkdirMount, Spawned | None]:
        """A fresh workdir on a tmpfs of its own, most often with a session process spawned
        ahead for it already (else ``None`` in its place: the session spawns one)."""
        taken = self._spawned_ahead.take(self.template())
        if taken is not None:
            return taken
        workdir, disk = self._spare_workdirs.take()
        return workdir, disk, None

    def add(self, session: IdleWatched) -> None:
        """Watch ``session`` between its calls, until :meth:`discard` (or it is collected)."""
        self._sessions.add(session)

    def discard(self, session: IdleWatched) -> None:
        """Stop watching ``session`` (it closed)."""
        self._sessions.discard(session)

    def watched(self) -> list[IdleWatched]:
        """The sessions watched now (a copy)."""
        return self._sessions.snapshot()

    @property
    def open_sessions(self) -> int:
        """How many sessions are watched now."""
        return len(self._sessions)

    def _on_member(self, pid: int) -> None:
        """The template forked a warm session process: give it a cgroup, and top up the
        sessions spawned ahead (with workdirs of their own) and the spare workdirs."""
        self.warm_groups.join(pid)
        template = self._template
        if template is not None and template.alive:
            self._spawned_ahead.request(template)

    def close(self) -> None:
        """Stop the template, the watchdog and what was made ahead (open sessions keep running
        until closed)."""
        self._stopping.set()
        with self._lock:
            if self._template is not None:
                self._template.close()
                self._template = None
            self._finalizer.detach()
        self._spawned_ahead.close()
        self.warm_groups.close()
        self._spare_workdirs.close()


class _OpenSessions:
    """The open sessions, weakly held; sessions opened and closed on other threads while the
    watchdog copies the set must not stop the watchdog (a ``WeakSet`` copied during an ``add``
    raises, and the thread would die, leaving idle sessions unwatched)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: weakref.WeakSet[IdleWatched] = weakref.WeakSet()

    def add(self, session: IdleWatched) -> None:
        with self._lock:
            self._sessions.add(session)

    def discard(self, session: IdleWatched) -> None:
        with self._lock:
            self._sessions.discard(session)

    def snapshot(self) -> list[IdleWatched]:
        with self._lock:
            return list(self._sessions)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)


def _watch_idle_sessions(supply_ref: weakref.ref[WorkerSupply], stopping: threading.Event) -> None:
    """Between calls, kill sessions whose leftover processes burn CPU or fill the disk."""
    while not stopping.wait(_WATCH_SECONDS):
        supply = supply_ref()
        if supply is None:
            return
        sessions = supply.watched()
        del supply
        for session in sessions:
            session.watch_idle()


def _close_template(holder: list[_Template | None]) -> None:
    template = holder[0]
    if template is not None:
        template.close()
