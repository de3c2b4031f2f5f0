"""The package root re-exports the public API, lazily, with a pinned ``__all__``."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

import safeexec

PINNED = [
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
HOMES = {
    "Session": "safeexec.session.session",
    "check": "safeexec.gate",
    "Policy": "safeexec.policy.schema",
    "tool": "safeexec.capabilities.specs",
    "Denied": "safeexec.errors",
    "Decision": "safeexec.model.values",
}


def test_all_is_pinned() -> None:
    assert safeexec.__all__ == PINNED


@pytest.mark.parametrize("name", [n for n in PINNED if n != "__version__"])
def test_every_public_name_is_the_defining_modules_object(name: str) -> None:
    value = getattr(safeexec, name)
    assert value.__module__.startswith("safeexec.")
    assert getattr(importlib.import_module(value.__module__), name) is value
    assert name in dir(safeexec)


def test_names_come_from_their_home_modules() -> None:
    for name, module in HOMES.items():
        assert getattr(safeexec, name).__module__ == module


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = safeexec.no_such_name  # type: ignore[attr-defined]


def test_importing_the_package_does_not_load_the_host_pipeline() -> None:
    # The sandbox worker imports `safeexec` too; the session, parser and backends stay out of it.
    probe = (
        "import json, sys, safeexec; "
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.startswith(('safeexec.', 'libcst')))))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) == []
