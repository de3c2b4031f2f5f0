"""The service's counters for ``GET /v1/metrics``, in the Prometheus text format.

One :class:`ServiceMetrics` per app, on its own ``prometheus_client`` registry (never the
process-global one: two apps in one process, as in the tests, count apart). Nothing here is
per token: the numbers are the server's, and no label carries a token id or a session id.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from safeexec.model.values import Outcome

__all__ = ["CONTENT_TYPE", "ServiceMetrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
"""The media type of :meth:`ServiceMetrics.render`'s bytes."""

# Trivial runs take milliseconds, cells may run for minutes.
_RUN_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


class ServiceMetrics:
    """Sessions, runs, refusals, errors and run latency of one server process."""

    def __init__(self, *, open_sessions: Callable[[], int]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        gauge = Gauge("safeexec_sessions_open", "Sessions open now.", registry=self.registry)
        gauge.set_function(lambda: float(open_sessions()))
        self._sessions = Counter(
            "safeexec_sessions_created", "Sessions opened.", registry=self.registry
        )
        self._runs = Counter(
            "safeexec_runs",
            "Runs that ended, by the policy's verdict and the execution status.",
            ["verdict", "status"],
            registry=self.registry,
        )
        self._refusals = Counter(
            "safeexec_refusals",
            "Requests refused before anything ran (401, 429), by error.",
            ["error"],
            registry=self.registry,
        )
        self._errors = Counter(
            "safeexec_errors",
            "Requests answered with a server-side error (5xx), by error.",
            ["error"],
            registry=self.registry,
        )
        self._cpu = Counter(
            "safeexec_cpu_seconds_charged",
            "CPU seconds charged to tokens, by when: run (a run's own), idle (burnt between "
            "runs), close (up to a session's close), check (the static gate).",
            ["when"],
            registry=self.registry,
        )
        self._latency = Histogram(
            "safeexec_run_duration_seconds",
            "Wall-clock seconds of a run, from admission to its recorded outcome.",
            buckets=_RUN_BUCKETS,
            registry=self.registry,
        )

    def session_opened(self) -> None:
        self._sessions.inc()

    def run_ended(self, outcome: Outcome, seconds: float) -> None:
        status = "none" if outcome.result is None else outcome.result.status.value
        self._runs.labels(verdict=outcome.decision.verdict.value, status=status).inc()
        self._latency.observe(max(0.0, seconds))

    def charged(self, when: str, seconds: float) -> None:
        self._cpu.labels(when=when).inc(max(0.0, seconds))

    def refused(self, error: str) -> None:
        self._refusals.labels(error=error).inc()

    def failed(self, error: str) -> None:
        self._errors.labels(error=error).inc()

    def render(self) -> bytes:
        """Every metric in the Prometheus text exposition format."""
        return generate_latest(self.registry)
