"""``safeexec run`` boots the template of the run's one mode while the gate loads, and only then."""

from __future__ import annotations

from dataclasses import replace

import pytest

from safeexec.backends.native import NativeBackend
from safeexec.backends.restricted import RestrictedBackend
from safeexec.cli.run import _warm_backend
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import BackendsConfig


def test_a_mode_the_policy_refuses_starts_nothing() -> None:
    policy = replace(load_policy("default"), backends=BackendsConfig(allowed=("restricted",)))
    assert _warm_backend(policy, "native") is None


def test_modes_without_a_template_start_nothing() -> None:
    policy = replace(
        load_policy("default"), backends=BackendsConfig(allowed=("dsl", "native"), default="dsl")
    )
    assert _warm_backend(policy, None) is None


@pytest.mark.parametrize(
    ("mode", "kind"), [("native", NativeBackend), ("restricted", RestrictedBackend)]
)
def test_the_chosen_mode_gets_its_backend_started(mode: str, kind: type) -> None:
    policy = replace(
        load_policy("default"), backends=BackendsConfig(allowed=("native", "restricted"))
    )
    backend = _warm_backend(policy, mode)
    assert isinstance(backend, kind)
    backend.close()


def test_without_a_mode_the_policys_default_is_warmed() -> None:
    policy = replace(
        load_policy("default"),
        backends=BackendsConfig(allowed=("native", "restricted"), default="restricted"),
    )
    backend = _warm_backend(policy, None)
    assert isinstance(backend, RestrictedBackend)
    backend.close()
