"""The pure reconciliation of a grant request with the policy's [capabilities] entry."""

from __future__ import annotations

import dataclasses

import pytest

from safeexec.errors import CapabilityError
from safeexec.policy.grants import GrantTerms, reconcile_grant
from safeexec.policy.schema import ApprovalConfig, CapabilityConfig, Policy

POLICY = Policy(
    capabilities=(
        CapabilityConfig(tool="search", max_calls=5, scopes=("web", "news")),
        CapabilityConfig(tool="pay", requires_approval=True),
        CapabilityConfig(tool="delete", grantable=False),
    )
)


def test_the_policy_caps_calls_and_bounds_the_scope() -> None:
    assert reconcile_grant(POLICY, "search") == GrantTerms(
        max_calls=5, scope=frozenset({"web", "news"}), requires_approval=False
    )
    narrowed = reconcile_grant(POLICY, "search", max_calls=9, scope=["web"])
    assert narrowed == GrantTerms(max_calls=5, scope=frozenset({"web"}), requires_approval=False)
    assert reconcile_grant(POLICY, "search", max_calls=2).max_calls == 2


def test_a_held_token_can_only_be_narrowed() -> None:
    terms = reconcile_grant(POLICY, "search", held_calls=1, held_scope=frozenset({"news", "x"}))
    assert terms == GrantTerms(max_calls=1, scope=frozenset({"news"}), requires_approval=False)


def test_approval_required_by_the_policy_cannot_be_switched_off() -> None:
    assert reconcile_grant(POLICY, "pay", requires_approval=False).requires_approval
    assert reconcile_grant(POLICY, "search", requires_approval=True).requires_approval
    assert reconcile_grant(POLICY, "pay").max_calls is None


@pytest.mark.parametrize(
    ("tool", "why"),
    [("unlisted", "lists no \\[capabilities\\] entry"), ("delete", "marks it not grantable")],
)
def test_a_tool_the_policy_does_not_let_be_granted_raises(tool: str, why: str) -> None:
    with pytest.raises(CapabilityError, match=why):
        reconcile_grant(POLICY, tool)


def test_a_scope_beyond_the_policy_raises() -> None:
    with pytest.raises(CapabilityError, match="exceeds the policy's"):
        reconcile_grant(POLICY, "search", scope=["web", "admin"])


def test_an_effect_the_policy_names_requires_approval_for_any_tool_that_has_it() -> None:
    policy = dataclasses.replace(POLICY, approval=ApprovalConfig(effects=("money",)))
    assert reconcile_grant(policy, "search", effects=["money", "network"]).requires_approval
    assert not reconcile_grant(policy, "search", effects=["read", "network"]).requires_approval
    assert not reconcile_grant(POLICY, "search", effects=["money"]).requires_approval
