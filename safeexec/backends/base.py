"""The one seam every execution mode implements: ``Backend.open(spec)`` → ``BackendSession.run()``.

Backends execute what they are told; they never decide. The host's tools reach sandboxed code only
through a :class:`ToolGateway`, which checks and runs each call in the host.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from safeexec.audit.blobs import BlobStore
from safeexec.backends.streaming import OutputSink
from safeexec.dsl.limits import DslLimits
from safeexec.egress.network_policy import NetworkPolicy
from safeexec.model.codec import JSONValue
from safeexec.model.fieldwise import Fieldwise
from safeexec.model.values import ExecRequest, ExecResult, Limits

if TYPE_CHECKING:
    # The tool-call value types live with the capabilities (the bottom layer that mints and
    # checks them); re-exported here because they are part of this seam.
    from safeexec.capabilities.gateway import ToolDescriptor, ToolReply

__all__ = [
    "CALL_LIMITS",
    "SESSION_LIMITS",
    "Backend",
    "BackendSession",
    "CallInterrupted",
    "CpuMetered",
    "OutputSink",
    "SessionSpec",
    "ToolDescriptor",
    "ToolGateway",
    "ToolReply",
]

# Loaded on first use: the capabilities pull in the tool layer, and ``safeexec run`` imports this
# seam (with the backend) before it starts the template, which the tool layer would delay.
_FROM_CAPABILITIES = frozenset({"ToolDescriptor", "ToolReply"})


def __getattr__(name: str) -> object:
    if name not in _FROM_CAPABILITIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("safeexec.capabilities.gateway"), name)


# Which ``Limits`` fields bind what, as described on :class:`SessionSpec` (a test checks that
# every field of ``Limits`` is in exactly one of them).
SESSION_LIMITS = frozenset({"memory_bytes", "file_size_bytes", "max_processes", "max_open_files"})
CALL_LIMITS = frozenset({"wall_seconds", "cpu_seconds", "output_bytes"})


class CallInterrupted(KeyboardInterrupt):
    """A ``KeyboardInterrupt`` that reached the host during a call, after the call settled.

    The backend interrupted the cell and finished the call first; ``result`` is that call's
    result, so the caller can record the step before letting the interrupt go on.
    """

    def __init__(self, result: ExecResult) -> None:
        super().__init__("interrupted by the host during a call")
        self.result = result


class ToolGateway(Protocol):
    """Host-side entry point for tool calls coming out of a sandbox (checks, runs, records)."""

    def describe(self) -> tuple[ToolDescriptor, ...]:
        """The tools granted to this session."""
        ...

    def invoke(self, name: str, arguments: JSONValue) -> ToolReply:
        """Check and run one call; never raises for anything the sandboxed code did."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class SessionSpec(Fieldwise):
    """Everything a backend needs to open one session, fixed for the session's life.

    Limits come from two places. ``limits`` here binds the session: its ``SESSION_LIMITS``
    (``memory_bytes``, ``file_size_bytes``, ``max_processes``, ``max_open_files``) are the
    worker's rlimits, set once when it starts and kept until it is replaced; its
    ``cpu_seconds`` only sizes the worker's lifetime CPU backstop and its idle budget. Each call
    is bound by the ``CALL_LIMITS`` of its own ``ExecRequest.limits`` (``wall_seconds``,
    ``cpu_seconds``, ``output_bytes``), enforced from outside for that call alone; the session
    fields of a request's limits are not read.

    ``workdir`` ``None`` makes a temporary directory that is removed on close; ``require``
    names confinement layers that must apply (else ``BackendUnavailable``); ``rung`` is the
    weakest rung of the confinement ladder the worker may run on (modes that run code in the
    confined worker refuse to open below it; None: any); ``imports`` is the
    policy's module allowlist (enforced at run time by modes that can); ``env`` is the only
    environment the sandboxed code sees (modes without one ignore it); ``workdir_symlinks``
    grants making symbolic links in the workdir (the policy's ``[sandbox] workdir_symlinks``);
    ``seed`` seeds ``random`` and ``numpy.random`` before the first cell (modes that cannot
    ignore it); ``dsl`` is the policy's ``[dsl]`` caps every DSL plan is made and run under
    (other modes ignore it); ``network`` is the policy's ``[network]``: the native mode gives
    the session a host-side egress proxy when it allows hosts (other modes reach the network
    only through tools, and ignore it).
    """

    blobs: BlobStore
    limits: Limits = field(default_factory=Limits)
    workdir: Path | None = None
    tools: ToolGateway | None = None
    require: frozenset[str] = frozenset()
    rung: str | None = None
    imports: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    workdir_symlinks: bool = False
    seed: int | None = None
    dsl: DslLimits = field(default_factory=DslLimits)
    network: NetworkPolicy = field(default_factory=NetworkPolicy)


class BackendSession(Protocol):
    """A stateful execution context, like a notebook kernel."""

    def run(self, request: ExecRequest, *, on_output: OutputSink | None = None) -> ExecResult:
        """Run one request; user crashes and timeouts are statuses, not exceptions.

        ``on_output`` receives the output while the cell runs, if the mode can stream it (see
        :class:`~safeexec.backends.streaming.OutputTap`); a mode that cannot ignores it."""
        ...

    def reset(self) -> None:
        """Forget all state (variables, imports); the workdir is kept."""
        ...

    def interrupt(self) -> None:
        """Ask the running call, from any thread, to interrupt its cell; no-op between calls.

        The call still returns its result (status ``interrupted``, or a kill if the cell does
        not stop)."""
        ...

    def upload(self, name: str, data: bytes) -> None:
        """Write ``data`` to ``name`` (relative) in the workdir; never follows symlinks.

        A bad name or a non-file in the way raises ``ConfigurationError``."""
        ...

    def download(self, name: str) -> bytes:
        """The bytes of regular file ``name`` in the workdir (capped by ``file_size_bytes``)."""
        ...

    def close(self) -> None:
        """Release everything, killing the whole process tree; idempotent."""
        ...


@runtime_checkable
class CpuMetered(Protocol):
    """A backend session that can say what CPU its processes used between calls (a thread or
    process a cell left running), so that it is charged to someone."""

    def unbilled_cpu_seconds(self) -> float:
        """CPU used since the last call ended or this was last asked, now counted as charged
        (the next call is charged only what comes after); after ``close``, what ran up to it."""
        ...


class Backend(Protocol):
    """A factory of sessions for one execution mode."""

    name: ClassVar[str]

    def open(self, spec: SessionSpec) -> BackendSession:
        """Open a session as ``spec`` says; ``BackendUnavailable`` if it cannot be had."""
        ...

    def close(self) -> None:
        """Release what the backend holds (a template process); open sessions keep running."""
        ...
