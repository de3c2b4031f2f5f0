"""The one seam every execution mode implements: ``Backend.open()`` → ``BackendSession.run()``.

Backends execute what they are told; they never decide. The host's tools reach sandboxed code only
through a :class:`ToolGateway`, which checks and runs each call in the host.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar, Protocol

from safeexec.blobs import BlobStore

# The tool-call value types live with the capabilities (the bottom layer that mints and checks
# them); re-exported here because they are part of this seam.
from safeexec.capabilities import ToolDescriptor, ToolReply
from safeexec.codec import JSONValue
from safeexec.model import ExecRequest, ExecResult, Limits

__all__ = ["Backend", "BackendSession", "ToolDescriptor", "ToolGateway", "ToolReply"]


class ToolGateway(Protocol):
    """Host-side entry point for tool calls coming out of a sandbox (checks, runs, records)."""

    def describe(self) -> tuple[ToolDescriptor, ...]:
        """The tools granted to this session."""
        ...

    def invoke(self, name: str, arguments: JSONValue) -> ToolReply:
        """Check and run one call; never raises for anything the sandboxed code did."""
        ...


class BackendSession(Protocol):
    """A stateful execution context, like a notebook kernel."""

    def run(self, request: ExecRequest) -> ExecResult:
        """Run one request; user crashes and timeouts are statuses, not exceptions."""
        ...

    def reset(self) -> None:
        """Forget all state (variables, imports); the workdir is kept."""
        ...

    def close(self) -> None:
        """Release everything, killing the whole process tree; idempotent."""
        ...


class Backend(Protocol):
    """A factory of sessions for one execution mode."""

    name: ClassVar[str]

    def open(
        self,
        *,
        workdir: Path,
        limits: Limits,
        blobs: BlobStore,
        tools: ToolGateway | None = None,
        require: frozenset[str] = frozenset(),
        imports: tuple[str, ...] = (),
        env: Mapping[str, str] | None = None,
    ) -> BackendSession:
        """Open a session in ``workdir``.

        ``require`` names confinement layers that must apply (else ``BackendUnavailable``);
        ``imports`` is the policy's module allowlist (enforced at run time by modes that can);
        ``env`` is the only environment the sandboxed code sees.
        """
        ...
