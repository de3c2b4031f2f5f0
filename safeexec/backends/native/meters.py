"""What a native session is charged against: its CPU, in calls and between them, and its disk.

The session makes one :class:`CpuMeter` and one :class:`DiskBudget` and hands both to each call
(:mod:`safeexec.backends.native.call`), which reads and charges them; between calls the
backend's watchdog checks the same two through the session.
"""

from __future__ import annotations

from pathlib import Path

from safeexec.backends.native.disk import WorkdirMount, unnamed_bytes
from safeexec.backends.native.procfs import descendants
from safeexec.backends.workdir import ArtifactLimits, disk_usage

__all__ = ["CpuMeter", "DiskBudget"]


class CpuMeter:
    """The session's CPU readings (its cgroup's counter, in seconds) and what is charged.

    A call is charged the session's CPU since the last call ended, so what processes the code
    left running used in between counts too; between calls, leftover processes may use as much
    CPU as the last call was allowed (``idle_budget``) before the watchdog kills them.
    """

    def __init__(self, idle_budget: float) -> None:
        self.idle_base = 0.0  # the reading when the last call ended
        self.last_reading = 0.0  # the latest reading: by a call, the watchdog, or the close
        self.idle_budget = idle_budget
        self._charged: float | None = None  # the reading up to which CPU is charged

    def end_call(self, reading: float, *, call_start: float, budget: float) -> float:
        """A call ended at ``reading`` (it started at ``call_start``; its CPU limit was
        ``budget``): the CPU it is charged. A counter that went back, or a new worker without
        a cgroup, counts from the call's start."""
        self.idle_base = self.last_reading = reading
        self.idle_budget = budget
        charged_to, self._charged = self._charged, reading
        cpu_from = call_start if charged_to is None or charged_to > call_start else charged_to
        return max(0.0, reading - cpu_from)

    def take_unbilled(self, reading: float) -> float:
        """The CPU used since the last charge, up to ``reading``, now counted as charged."""
        charged, self._charged = self._charged, reading
        if charged is None or charged > reading:  # no call yet, or a counter that went back
            return 0.0
        return reading - charged

    def idle_overrun(self, reading: float) -> bool:
        """Have processes left running used more than ``idle_budget`` since the last call?"""
        return reading - self.idle_base > self.idle_budget


class DiskBudget:
    """What a session's workdir may hold: ``budget_bytes``, or the artifact limits' entries."""

    def __init__(
        self,
        workdir: Path,
        mount: WorkdirMount,
        *,
        budget_bytes: int,
        artifact_limits: ArtifactLimits,
    ) -> None:
        self.workdir = workdir
        self.mount = mount
        self.budget_bytes = budget_bytes
        self.artifact_limits = artifact_limits

    def used(self, pid: int) -> float:
        """What the session holds against its budget: the files beneath its workdir and,
        unless the workdir is a size-bounded mount (which counts them itself), the files
        without a name the processes below ``pid`` hold (infinite when that cannot be read:
        fail closed)."""
        used = disk_usage(str(self.workdir), self.artifact_limits)
        if self.mount.active:
            return used
        return used + unnamed_bytes(descendants(pid))

    def exceeded(self, pid: int) -> bool:
        """Does the session hold more than its budget (see :meth:`used`)?"""
        return self.used(pid) > self.budget_bytes

    def overrun(self) -> str:
        """What an overrun is, for the message of the kill."""
        return (
            f"the workdir grew past its disk budget of {self.budget_bytes} bytes or "
            f"{self.artifact_limits.max_entries_scanned} entries"
        )
