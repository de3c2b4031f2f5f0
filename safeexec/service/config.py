"""The service's settings: one frozen value, every field defaulted, units in the names."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from safeexec.backends.registry import refuse_in_process

__all__ = ["DEFAULT_MODES", "ServiceConfig"]

DEFAULT_MODES: tuple[str, ...] = ("native", "restricted", "dsl")
"""The modes a client may ask for unless the server says otherwise (never the fake, never an
in-process mode: an operator who wants one names it and sets ``allow_in_process``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceConfig:
    """How one server process behaves.

    ``policies`` are the pack names a client may choose (never a path: a client must not make
    the server read its files); the first is the default. A client's limits can only narrow the
    chosen policy's. ``state_dir`` holds every session's audit log and blobs and the request
    log, and outlives the process. ``replica_id`` prefixes session ids so a load balancer (or
    :class:`~safeexec.service.client.Client`) can route a session to its server. Past
    ``max_connections`` open connections (or requests in flight) a new one gets a 503.
    A mode that runs code in the server process (``restricted-inprocess``; not a security
    boundary) is refused, here and in every request, unless ``allow_in_process`` is set
    (``safeexec serve --allow-in-process``): ``InProcessRefused``, over HTTP a 403.
    """

    state_dir: Path
    policies: tuple[str, ...] = ("default",)
    modes: tuple[str, ...] = DEFAULT_MODES
    replica_id: str = "r0"
    max_body_bytes: int = 4 * 1024 * 1024
    max_connections: int = 1000
    idle_seconds: float = 600.0
    sweep_seconds: float = 5.0
    max_worker_threads: int = 64
    drain_seconds: float = 30.0
    heartbeat_seconds: float = 15.0
    audit_fsync: bool = False
    allow_in_process: bool = False

    def __post_init__(self) -> None:
        for mode in self.modes:
            self.refuse_in_process(mode)

    def refuse_in_process(self, mode: str) -> None:
        """Raise ``InProcessRefused`` if ``mode`` runs in the server process and is not allowed."""
        refuse_in_process(
            mode,
            allowed=self.allow_in_process,
            face="the service",
            option="allow_in_process=True (safeexec serve --allow-in-process)",
        )
