"""Narrowing a policy's limits for one run (the CLI's ``--timeout``/``--cpu``/``--memory``).

A caller may tighten the limits a policy grants, never loosen them: each new value is the smaller
of the two. The narrowed policy gets its own digest, so the audit log names what applied.
"""

from __future__ import annotations

import dataclasses
import math

from safeexec.errors import ConfigurationError
from safeexec.policy.loader import policy_digest
from safeexec.policy.schema import Policy

__all__ = ["narrow_limits"]


def narrow_limits(
    policy: Policy,
    *,
    wall_seconds: float | None = None,
    cpu_seconds: float | None = None,
    memory_bytes: int | None = None,
) -> Policy:
    """``policy`` with each given limit lowered to the given value (a higher one is ignored)."""
    limits = policy.limits
    narrowed = dataclasses.replace(
        limits,
        wall_seconds=min(limits.wall_seconds, _checked("wall_seconds", wall_seconds)),
        cpu_seconds=min(limits.cpu_seconds, _checked("cpu_seconds", cpu_seconds)),
        memory_bytes=int(min(limits.memory_bytes, _checked("memory_bytes", memory_bytes))),
    )
    if narrowed == limits:
        return policy
    changed = dataclasses.replace(policy, limits=narrowed)
    return dataclasses.replace(changed, digest=policy_digest(changed))


def _checked(name: str, value: float | None) -> float:
    if value is None:
        return math.inf
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigurationError(f"{name}={value!r} must be a number")
    if not math.isfinite(value) or value <= 0:
        raise ConfigurationError(f"{name}={value!r} must be a positive, finite number")
    return value
