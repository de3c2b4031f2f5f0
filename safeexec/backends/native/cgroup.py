"""The host's handle on a session's control group, and the CPU meter every limit reads.

Made and joined by the host before the session's first process runs any code (never on the
worker's word), so the layer report for ``cgroup_*`` is the host's own finding. Where no
group can be had, CPU falls back to summing ``/proc`` (blind to auto-reaped children) and the
layers report why, so a policy can ``require`` them.
"""

from __future__ import annotations

import contextlib
import threading

from safeexec.backends.native.procfs import _process_cpu_seconds
from safeexec.model.values import Limits
from safeexec.sandbox import cgroups
from safeexec.sandbox.cgroups import Controller, SessionCgroup
from safeexec.sandbox.layers import Layer, LayerStatus

__all__ = ["CGROUP_LAYERS", "SessionGroup", "WarmGroups", "cgroup_support"]

_JOIN_WAIT_SECONDS = 5.0

CGROUP_LAYERS: dict[Controller, Layer] = {
    Controller.MEMORY: Layer.CGROUP_MEMORY,
    Controller.PIDS: Layer.CGROUP_PIDS,
    Controller.CPU: Layer.CGROUP_CPU,
}


def cgroup_support() -> dict[Layer, LayerStatus]:
    """Whether this host can give sessions a group per controller (for ``supported_layers``)."""
    try:
        reasons = cgroups.available()
    except OSError as exc:
        reasons = {c: f"cannot read the cgroup mounts: {exc.strerror or exc}" for c in Controller}
    return {
        layer: LayerStatus(
            layer=layer,
            active=not reasons[controller],
            detail=reasons[controller] or f"a {controller.value} cgroup per session",
        )
        for controller, layer in CGROUP_LAYERS.items()
    }


class WarmGroups:
    """Cgroups made and joined ahead of time by the template's warm session processes.

    Joining a group waits for an RCU grace period (~10 ms on a busy machine, measured), so the
    host moves each warm process into a group of its own as soon as the template announces it.
    The group gets the limits the next open most likely asks for (those of the last session
    opened, at first ``limits``), read back for the layer report; an open with the same limits
    then writes and reads nothing, one with others writes its own.
    """

    def __init__(self, limits: Limits, *, cpu_cores: float) -> None:
        self._usable = not cgroups.unavailable()
        self._groups: dict[int, SessionCgroup] = {}
        self._pending: set[int] = set()
        self._claimed: set[int] = set()
        self._changed = threading.Condition()
        self._expected = (limits.memory_bytes, limits.max_processes, cpu_cores)

    def join(self, pid: int) -> None:
        """Give the warm process ``pid`` a group (called from the template's reader thread)."""
        if not self._usable:
            return
        with self._changed:
            if pid in self._claimed:
                return
            self._pending.add(pid)
        group: SessionCgroup | None = None
        try:
            group = cgroups.make()
            group.add(pid)
        except OSError:
            if group is not None:
                group.remove()
            group = None
        if group is not None:
            _write_ahead(group, self._expected)
        with self._changed:
            self._pending.discard(pid)
            if group is not None:
                self._groups[pid] = group
            self._changed.notify_all()

    def take(self, pid: int, limits: Limits, *, cpu_cores: float) -> SessionCgroup | None:
        """The group ``pid`` joined ahead of time, if any (waiting for a join under way), for a
        session with ``limits``: the ones later groups are given ahead."""
        with self._changed:
            self._expected = (limits.memory_bytes, limits.max_processes, cpu_cores)
            self._claimed.add(pid)
            self._changed.wait_for(lambda: pid not in self._pending, timeout=_JOIN_WAIT_SECONDS)
            return self._groups.pop(pid, None)

    def discard(self, pid: int) -> None:
        """``pid`` exited: remove a group it never got to use."""
        with self._changed:
            self._claimed.discard(pid)
            group = self._groups.pop(pid, None)
        if group is not None:
            group.remove()

    def close(self) -> None:
        with self._changed:
            groups, self._groups = list(self._groups.values()), {}
        for group in groups:
            group.remove()


def _write_ahead(group: SessionCgroup, limits: tuple[int, int, float]) -> None:
    """Give a warm group ``limits`` and read them back, off any open's path; a failure here is
    left for the open, which writes its limits again and reports what it could not."""
    memory_bytes, max_processes, cpu_cores = limits
    with contextlib.suppress(OSError):
        group.set_limits(
            memory_bytes=memory_bytes, max_processes=max_processes, cpu_cores=cpu_cores
        )
        for controller in group.controllers:
            group.describe(controller)


class SessionGroup:
    """The cgroup of a session's current worker, or the reason there is none."""

    def __init__(self, limits: Limits, *, cpu_cores: float, warm: WarmGroups | None) -> None:
        self._limits = limits
        self._cpu_cores = cpu_cores
        self._warm = warm
        self._group: SessionCgroup | None = None
        self._enforced = False

    def adopt(self, pid: int) -> dict[Layer, LayerStatus]:
        """Put the worker ``pid`` (not yet running code) in a group with the session's limits,
        replacing the previous worker's group, and report each layer."""
        self.remove()
        why = ""
        limits, cores = self._limits, self._cpu_cores
        group = self._warm.take(pid, limits, cpu_cores=cores) if self._warm is not None else None
        try:
            if group is None and not cgroups.unavailable():
                group = cgroups.make()
                group.add(pid)
            if group is not None:
                group.set_limits(
                    memory_bytes=limits.memory_bytes,
                    max_processes=limits.max_processes,
                    cpu_cores=cores,
                )
        except OSError as exc:
            why = f"could not put pid {pid} in a cgroup of its own: {exc.strerror or exc}"
        # Kept (for removal) even when it failed, but then neither enforced nor read.
        self._group = group
        self._enforced = group is not None and not why
        report = {}
        for controller, layer in CGROUP_LAYERS.items():
            if self._enforced and group is not None and controller in group.controllers:
                report[layer] = LayerStatus(
                    layer=layer, active=True, detail=group.describe(controller)
                )
            else:
                detail = why or cgroups.available()[controller] or "not enforced by the group"
                report[layer] = LayerStatus(layer=layer, active=False, detail=detail)
        return report

    def cpu_seconds(self, pid: int) -> float:
        """CPU of the whole session: from the cgroup (exited processes included) if there is
        one, else of ``pid`` and its live descendants."""
        if self._enforced and self._group is not None and Controller.CPU in self._group.controllers:
            try:
                return self._group.cpu_seconds()
            except (OSError, ValueError):
                pass
        return _process_cpu_seconds(pid)

    def oom_kills(self) -> int:
        """Processes the kernel killed for the group's memory limit so far (0 without one)."""
        if not self._enforced or self._group is None:
            return 0
        if Controller.MEMORY not in self._group.controllers:
            return 0
        return self._group.oom_kills()

    def pids(self) -> list[int]:
        """Host pids in the group now (empty without one)."""
        return self._group.pids() if self._group is not None else []

    def remove(self) -> None:
        """Kill whatever is left in the group and remove it; idempotent."""
        group, self._group = self._group, None
        self._enforced = False
        if group is not None:
            group.remove()
