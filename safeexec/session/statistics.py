"""What :meth:`Session.statistics() <safeexec.session.session.Session.statistics>` reports: the
counters a session keeps over its steps, and the frozen snapshot it hands out.

Split out of :mod:`safeexec.session.session`, which counts every step it records.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from safeexec.model.fieldwise import Fieldwise
from safeexec.model.values import Budget, Decision, ExecResult

__all__ = ["SessionStatistics", "StepCounters"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class SessionStatistics(Fieldwise):
    """Counters of one session since it was opened (a frozen snapshot: later steps leave it be)."""

    session_id: str
    steps: int
    verdicts: Mapping[str, int]
    statuses: Mapping[str, int]
    approvals_granted: int
    approvals_refused: int
    internal_errors: int
    cpu_seconds: float
    tool_calls: int
    budget: Budget
    open_backends: tuple[str, ...]
    audit_path: Path
    audit_events: int


class StepCounters:
    """The running counts behind :class:`SessionStatistics` (the session serialises calls)."""

    def __init__(self) -> None:
        self._verdicts: Counter[str] = Counter()
        self._statuses: Counter[str] = Counter()
        self._approvals = Counter[bool]()
        self._internal_errors = 0
        self._cpu_seconds = 0.0
        self._tool_calls = 0

    def step(
        self, decision: Decision, result: ExecResult | None, *, cpu_seconds: float, tool_calls: int
    ) -> None:
        """Count one recorded step and what it used."""
        self._verdicts[decision.verdict.value] += 1
        if result is not None:
            self._statuses[result.status.value] += 1
        self._cpu_seconds += cpu_seconds
        self._tool_calls += tool_calls

    def approval(self, *, granted: bool) -> None:
        self._approvals[granted] += 1

    def internal_error(self) -> None:
        self._internal_errors += 1

    def snapshot(
        self,
        *,
        session_id: str,
        budget: Budget,
        open_backends: tuple[str, ...],
        audit_path: Path,
        audit_events: int,
    ) -> SessionStatistics:
        return SessionStatistics(
            session_id=session_id,
            steps=sum(self._verdicts.values()),
            verdicts=MappingProxyType(dict(self._verdicts)),
            statuses=MappingProxyType(dict(self._statuses)),
            approvals_granted=self._approvals[True],
            approvals_refused=self._approvals[False],
            internal_errors=self._internal_errors,
            cpu_seconds=self._cpu_seconds,
            tool_calls=self._tool_calls,
            budget=budget,
            open_backends=open_backends,
            audit_path=audit_path,
            audit_events=audit_events,
        )
