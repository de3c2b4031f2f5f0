"""Sessions with host tools for the tool-gateway escapes, in every mode.

The in-process restricted harness runs its sessions in a child process, where host tools cannot
follow; tool attacks in that mode run an in-process backend right here instead (as the refusal
flood does).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from safeexec.backends.base import Backend
from safeexec.backends.native import NativeBackend
from safeexec.backends.restricted import RestrictedBackend
from safeexec.capabilities.gateway import ApprovalRequest, ToolSpec
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import CapabilityConfig
from safeexec.session.session import Session


def tool_backend(backend: NativeBackend) -> Backend:
    """The backend to give host tools to for this escape-suite mode."""
    if type(backend).__name__ == "InProcessRestrictedHarness":
        return RestrictedBackend(in_process=True)
    return backend


def tool_session(
    backend: NativeBackend,
    state_dir: Path,
    *tools: ToolSpec,
    tool_calls: int = 200,
    tool_approver: Callable[[ApprovalRequest], bool] | None = None,
    seconds: float | None = None,
) -> Session:
    """A session under the default pack whose budget allows ``tool_calls`` and that may grant
    ``tools`` (without ``max_calls``: only the budget bounds them), granted here. ``seconds``
    widens the pack's CPU and wall limits (and budget) for floods that must run to their end."""
    policy = load_policy("default")
    limits, budget = policy.limits, dataclasses.replace(policy.budget, tool_calls=tool_calls)
    if seconds is not None:
        limits = dataclasses.replace(limits, cpu_seconds=seconds, wall_seconds=seconds)
        budget = dataclasses.replace(budget, cpu_seconds=max(budget.cpu_seconds, 2 * seconds))
    policy = dataclasses.replace(
        policy,
        limits=limits,
        budget=budget,
        capabilities=(*policy.capabilities, *(CapabilityConfig(tool=t.name) for t in tools)),
    )
    chosen = tool_backend(backend)
    session = Session(
        policy=policy,
        mode=chosen.name,
        state_dir=state_dir,
        backends={chosen.name: chosen},
        approver=lambda decision, action: True,
        tool_approver=tool_approver,
    )
    for spec in tools:
        session.grant(spec)
    return session


def fenced(code: str) -> str:
    """A model reply holding ``code``."""
    return f"```python\n{code}\n```"
