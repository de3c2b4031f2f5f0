"""Per-token quotas: open sessions, runs in flight, CPU seconds spent; over any is a 429.

The ledger is touched only from the event loop (one thread), so it needs no lock; a run holds
its slot from admission until its outcome is charged (:meth:`QuotaLedger.run_slot`), and runs
with a CPU limit narrowed to what is left of its token's CPU seconds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from safeexec.errors import ConfigurationError

__all__ = ["Quota", "QuotaExceeded", "QuotaLedger", "QuotaUsage"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Quota:
    """What one token may hold at once and spend in all (CPU seconds since the server started)."""

    max_sessions: int = 8
    max_concurrent_runs: int = 4
    cpu_seconds: float = 3600.0

    def narrowed(self, where: str, values: Mapping[str, object]) -> Quota:
        """This quota with ``values`` (from a tokens file) put in, each checked."""
        changes: dict[str, int | float] = {}
        for key, value in values.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigurationError(f"{where}: {key}={value!r} must be a number")
            if key != "cpu_seconds" and not isinstance(value, int):
                raise ConfigurationError(f"{where}: {key}={value!r} must be a whole number")
            if not math.isfinite(value) or value < 0:
                raise ConfigurationError(f"{where}: {key}={value!r} must be finite and >= 0")
            changes[key] = value
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True, kw_only=True)
class QuotaUsage:
    """One token's usage now, against its quota."""

    sessions: int
    runs: int
    cpu_seconds: float
    quota: Quota


class QuotaExceeded(Exception):
    """A token asked for more than its quota; ``what`` names the exhausted quota."""

    def __init__(self, what: str, message: str) -> None:
        super().__init__(message)
        self.what = what


class QuotaLedger:
    """Counts, per token id, sessions held, runs in flight and CPU seconds charged."""

    def __init__(self) -> None:
        self._sessions: Counter[str] = Counter()
        self._runs: Counter[str] = Counter()
        self._cpu: dict[str, float] = {}
        self._reserved: dict[str, float] = {}
        self._quotas: dict[str, Quota] = {}

    def usage(self, token_id: str, quota: Quota) -> QuotaUsage:
        return QuotaUsage(
            sessions=self._sessions[token_id],
            runs=self._runs[token_id],
            cpu_seconds=self._cpu.get(token_id, 0.0),
            quota=quota,
        )

    def admit_session(self, token_id: str, quota: Quota) -> None:
        """Count one more session for ``token_id``, or raise ``QuotaExceeded`` (no CPU left
        counts: a session could not run, and its sandbox would be stopped at once)."""
        self._quotas[token_id] = quota
        self.refuse_if_spent(token_id, quota)
        if self._sessions[token_id] >= quota.max_sessions:
            raise QuotaExceeded(
                "sessions",
                f"token {token_id} holds {self._sessions[token_id]} session(s), its quota "
                f"max_sessions={quota.max_sessions}; delete one first",
            )
        self._sessions[token_id] += 1

    def release_session(self, token_id: str) -> None:
        if self._sessions[token_id] > 0:
            self._sessions[token_id] -= 1

    @contextlib.contextmanager
    def run_slot(
        self, token_id: str, quota: Quota, *, cpu_seconds: float = math.inf
    ) -> Iterator[float]:
        """Hold one of ``token_id``'s concurrent runs for the block, or raise ``QuotaExceeded``.

        Yields the CPU seconds the run may use: its own limit ``cpu_seconds``, narrowed to what
        is left of the quota after what was charged and what runs in flight may still use (each
        run reserves its grant until it is charged), so the quota holds even mid-run."""
        left = self.refuse_if_spent(token_id, quota)
        reserved = self._reserved.get(token_id, 0.0)
        if self._runs[token_id] >= quota.max_concurrent_runs:
            raise QuotaExceeded(
                "concurrent_runs",
                f"token {token_id} has {self._runs[token_id]} run(s) in flight, its quota "
                f"max_concurrent_runs={quota.max_concurrent_runs}; wait for one to finish",
            )
        granted = min(cpu_seconds, left)
        self._runs[token_id] += 1
        self._reserved[token_id] = reserved + granted
        try:
            yield granted
        finally:
            self._runs[token_id] -= 1
            self._reserved[token_id] = max(0.0, self._reserved[token_id] - granted)

    def charge_cpu(self, token_id: str, seconds: float) -> None:
        self._cpu[token_id] = self._cpu.get(token_id, 0.0) + max(0.0, seconds)

    def out_of_cpu(self) -> tuple[str, ...]:
        """The tokens (that ever opened a session) whose charged CPU reached their quota."""
        return tuple(
            token_id
            for token_id, quota in self._quotas.items()
            if self._cpu.get(token_id, 0.0) >= quota.cpu_seconds
        )

    def refuse_if_spent(self, token_id: str, quota: Quota) -> float:
        """The CPU seconds ``token_id`` has left (after what runs in flight hold), or
        ``QuotaExceeded`` when none is."""
        spent = self._cpu.get(token_id, 0.0)
        reserved = self._reserved.get(token_id, 0.0)
        left = quota.cpu_seconds - spent - reserved
        if left <= 0:
            held = f" (and {reserved:.2f} held by runs in flight)" if reserved > 0 else ""
            raise QuotaExceeded(
                "cpu_seconds",
                f"token {token_id} has spent {spent:.2f} CPU seconds{held}, its quota "
                f"cpu_seconds={quota.cpu_seconds:g}",
            )
        return left
