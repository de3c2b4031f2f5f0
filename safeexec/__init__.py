"""safeexec: run model-generated code without trusting it.

extract → parse → check (policy + estimate) → run (native | restricted) → observe → audit.

The public API is importable from here (``from safeexec import Session, tool``). Names load on
first use: the sandbox worker and its template import this package too, and must not pull the
host-side pipeline (libcst, the session, the backends) into the sandbox.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from safeexec.capabilities.gateway import Capability
    from safeexec.capabilities.specs import ToolSpec, tool
    from safeexec.errors import (
        AuditError,
        BackendError,
        BackendUnavailable,
        CapabilityError,
        ConfigurationError,
        Denied,
        InternalError,
        PolicyError,
        SafeExecError,
    )
    from safeexec.gate import GateResult, check
    from safeexec.model.values import (
        Action,
        Budget,
        Decision,
        Enforcement,
        Estimate,
        ExecResult,
        ExecStatus,
        Finding,
        Limits,
        Observation,
        Outcome,
        Severity,
        Verdict,
    )
    from safeexec.policy import Policy, load_policy
    from safeexec.session.session import Session, SessionStatistics

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "Session": "safeexec.session.session",
    "SessionStatistics": "safeexec.session.session",
    "check": "safeexec.gate",
    "GateResult": "safeexec.gate",
    "Policy": "safeexec.policy",
    "load_policy": "safeexec.policy",
    "tool": "safeexec.capabilities.specs",
    "ToolSpec": "safeexec.capabilities.specs",
    "Capability": "safeexec.capabilities.gateway",
    **dict.fromkeys(
        (
            "SafeExecError",
            "PolicyError",
            "ConfigurationError",
            "BackendError",
            "BackendUnavailable",
            "CapabilityError",
            "AuditError",
            "Denied",
            "InternalError",
        ),
        "safeexec.errors",
    ),
    **dict.fromkeys(
        (
            "Action",
            "Budget",
            "Decision",
            "Enforcement",
            "Estimate",
            "ExecResult",
            "ExecStatus",
            "Finding",
            "Limits",
            "Observation",
            "Outcome",
            "Severity",
            "Verdict",
        ),
        "safeexec.model.values",
    ),
}

__all__ = [
    "Action",
    "AuditError",
    "BackendError",
    "BackendUnavailable",
    "Budget",
    "Capability",
    "CapabilityError",
    "ConfigurationError",
    "Decision",
    "Denied",
    "Enforcement",
    "Estimate",
    "ExecResult",
    "ExecStatus",
    "Finding",
    "GateResult",
    "InternalError",
    "Limits",
    "Observation",
    "Outcome",
    "Policy",
    "PolicyError",
    "SafeExecError",
    "Session",
    "SessionStatistics",
    "Severity",
    "ToolSpec",
    "Verdict",
    "__version__",
    "check",
    "load_policy",
    "tool",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'safeexec' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
