"""Narrowing a policy's limits: lower only, never higher; the digest follows the content."""

from __future__ import annotations

import pytest

from safeexec.errors import ConfigurationError
from safeexec.model.values import Limits
from safeexec.policy.loader import load_policy, policy_digest
from safeexec.policy.narrow import narrow_limits
from safeexec.policy.schema import Policy


@pytest.fixture(scope="module")
def policy() -> Policy:
    return load_policy("default")


def test_lower_limits_apply_and_the_digest_names_them(policy: Policy) -> None:
    narrowed = narrow_limits(policy, wall_seconds=1.5, cpu_seconds=0.5, memory_bytes=256 << 20)
    assert (narrowed.limits.wall_seconds, narrowed.limits.cpu_seconds) == (1.5, 0.5)
    assert narrowed.limits.memory_bytes == 256 << 20
    assert narrowed.limits.output_bytes == policy.limits.output_bytes
    assert narrowed.digest == policy_digest(narrowed) != policy.digest


def test_higher_limits_never_widen_the_policy(policy: Policy) -> None:
    limits = policy.limits
    wider = narrow_limits(
        policy,
        wall_seconds=limits.wall_seconds * 10,
        cpu_seconds=limits.cpu_seconds + 1,
        memory_bytes=limits.memory_bytes * 4,
    )
    assert wider is policy


def test_only_the_given_limits_change(policy: Policy) -> None:
    narrowed = narrow_limits(policy, wall_seconds=0.25)
    assert narrowed.limits == Limits(**{**_fields(policy.limits), "wall_seconds": 0.25})


@pytest.mark.parametrize("bad", [0, -2.0, float("nan"), float("inf"), True])
def test_a_bad_value_is_a_configuration_error(policy: Policy, bad: float) -> None:
    with pytest.raises(ConfigurationError, match="wall_seconds="):
        narrow_limits(policy, wall_seconds=bad)


def _fields(limits: Limits) -> dict[str, float | int]:
    return {name: getattr(limits, name) for name in Limits.__dataclass_fields__}
