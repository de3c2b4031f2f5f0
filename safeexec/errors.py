"""The exception tree of safeexec.

Exceptions are for host-programmer mistakes and infrastructure failure only. "The policy said no"
is a :class:`~safeexec.model.values.Decision`; "the user's code crashed or timed out" is an
:class:`~safeexec.model.values.ExecResult`. Neither raises unless the caller asks
(:meth:`Decision.raise_for_verdict`).

::

    SafeExecError
    ├── PolicyError          a policy file is malformed (file, line, JSON pointer, hint)
    ├── ConfigurationError   an option or argument given by the host is invalid
    │   └── InProcessRefused     a face was asked for a mode that runs code in the host process
    ├── BackendError         a backend failed to start or talk to its worker
    │   └── BackendUnavailable   a required confinement layer or backend cannot be had here
    ├── CapabilityError      a tool or capability was declared or granted wrongly
    ├── AuditError           an audit event or blob could not be written (never dropped silently)
    ├── Denied               raised only by Decision.raise_for_verdict()
    └── InternalError        a bug in safeexec; the operation failed closed

    ToolError                raised to sandboxed code when a tool call is refused or failed
                             (not a SafeExecError: the host never sees it; defined here so the
                             sandbox worker need not import the host-side capability layer)

Messages say what was wrong with ``name=value!r`` and then how to fix it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from safeexec.model.values import Decision

__all__ = [
    "AuditError",
    "BackendError",
    "BackendUnavailable",
    "CapabilityError",
    "ConfigurationError",
    "Denied",
    "InProcessRefused",
    "InternalError",
    "PolicyError",
    "SafeExecError",
    "ToolError",
]


class SafeExecError(Exception):
    """Base class of every exception safeexec raises on purpose."""


class PolicyError(SafeExecError):
    """A policy file is malformed; says where (file, line, JSON pointer) and how to fix it."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        pointer: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.pointer = pointer
        self.hint = hint
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file if self.line is None else f"{self.file}:{self.line}"
            where += ": "
        text = f"{where}{self.message}"
        if self.pointer:
            text += f" (at {self.pointer})"
        if self.hint:
            text += f"; {self.hint}"
        return text


class ConfigurationError(SafeExecError):
    """An option, argument or environment the host supplied is invalid."""


class InProcessRefused(ConfigurationError):
    """A face (the service, the MCP server, tool dispatch, an agent adapter, the harness) was
    asked for a mode that runs the model's code in the host process, and its operator did not
    allow that; such a mode is not a security boundary."""

    def __init__(self, message: str, *, mode: str) -> None:
        super().__init__(message)
        self.mode = mode


class BackendError(SafeExecError):
    """A backend failed to start, or its worker channel broke in a way the host cannot absorb."""


class BackendUnavailable(BackendError):
    """A backend, or a confinement layer the policy requires, cannot be had on this machine."""


class CapabilityError(SafeExecError):
    """A tool or capability was declared, granted or attenuated incorrectly by the host."""


class AuditError(SafeExecError):
    """An audit event or blob could not be written; the event was not silently dropped."""


class Denied(SafeExecError):
    """The decision was not ``allow``; raised only by ``Decision.raise_for_verdict()``."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        rules = ", ".join(f.rule for f in decision.findings) or "no findings"
        super().__init__(f"action denied: verdict={decision.verdict.value!r} ({rules})")


class InternalError(SafeExecError):
    """A bug in safeexec. The operation it interrupted failed closed."""


class ToolError(Exception):
    """Raised inside the sandbox when a tool call is refused or the tool failed."""
