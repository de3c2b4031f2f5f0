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
    :class:`~safeexec.service.client.Client`) can route a session to its server.
    A mode that runs code in the server process (``restricted-inprocess``; not a security
    boundary) is refused, here and in every request, unless ``allow_in_process`` is set
    (``safeexec serve --allow-in-process``): ``InProcessRefused``, over HTTP a 403.

    Connections (:mod:`safeexec._support.connections`): at most ``max_connections`` open (past
    it the oldest not yet authenticated is closed for a new one) and
    ``max_connections_per_address`` per client address; a request head must arrive within
    ``head_timeout_seconds`` and be at most ``max_head_bytes``, its body within
    ``body_timeout_seconds``; a kept-alive connection idle for ``keepalive_seconds`` is closed
    (longer than clients keep an idle connection: httpx 5 s, aiohttp 15 s; one shorter has a
    client send a request as the server closes, and that request fails).

    Every ``cpu_meter_seconds`` the CPU each session burnt between runs is charged to its token,
    and a token whose ``cpu_seconds`` are spent has its sessions closed; every
    ``sweep_seconds`` sessions idle for ``idle_seconds`` are closed.
    """

    state_dir: Path
    policies: tuple[str, ...] = ("default",)
    modes: tuple[str, ...] = DEFAULT_MODES
    replica_id: str = "r0"
    max_body_bytes: int = 4 * 1024 * 1024
    max_connections: int = 1000
    max_connections_per_address: int = 100
    head_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 60.0
    keepalive_seconds: float = 75.0
    max_head_bytes: int = 16 * 1024
    idle_seconds: float = 600.0
    sweep_seconds: float = 5.0
    cpu_meter_seconds: float = 1.0
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
