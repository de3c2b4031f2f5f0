"""What a policy lets a session grant: the pure reconciliation behind ``Session.grant``.

The policy's ``[capabilities.<tool>]`` entry decides. A tool it does not list, or lists as not
grantable, cannot be granted (except an answer sink, whose only effect is on the harness:
unlisted, it is granted on the caller's terms); its ``max_calls`` caps the grant, its ``scopes``
bound the scope and its ``requires_approval`` cannot be switched off by the caller. A tool with an
effect the policy's ``[approval] effects`` names requires approval too.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from safeexec.errors import CapabilityError
from safeexec.policy.schema import Policy

__all__ = ["GrantTerms", "reconcile_grant"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GrantTerms:
    """The terms a tool is granted on: call cap (None: unlimited), scope (None: unscoped)."""

    max_calls: int | None
    scope: frozenset[str] | None
    requires_approval: bool


def reconcile_grant(
    policy: Policy,
    tool: str | None,
    *,
    max_calls: int | None = None,
    scope: Iterable[str] | None = None,
    requires_approval: bool | None = None,
    held_calls: int | None = None,
    held_scope: frozenset[str] | None = None,
    effects: Collection[str] = (),
    answer_sink: bool = False,
) -> GrantTerms:
    """The narrowest terms that satisfy both ``policy`` and the caller's request for ``tool``.

    ``held_calls`` and ``held_scope`` are what a token being narrowed already allows (a grant can
    only narrow it); ``effects`` are the tool's declared effects. Raises ``CapabilityError``
    when the policy does not let ``tool`` be granted or the requested scope exceeds the policy's.
    ``answer_sink``: the tool only hands a value back to the harness
    (:class:`~safeexec.capabilities.specs.AnswerSink`), so an unlisted one needs no entry.
    """
    config = next((c for c in policy.capabilities if c.tool == tool), None)
    if config is None and answer_sink:
        return GrantTerms(
            max_calls=max_calls, scope=None, requires_approval=bool(requires_approval)
        )
    if config is None or not config.grantable:
        why = "lists no [capabilities] entry for it" if config is None else "marks it not grantable"
        raise CapabilityError(
            f"tool name={tool!r} is not grantable: policy {policy.info.id!r} {why}; add or change "
            f"[capabilities.{tool}] in the policy to grant it"
        )
    caps = [n for n in (config.max_calls, max_calls, held_calls) if n is not None]
    granted_scope = None if scope is None else frozenset(scope)
    if config.scopes:
        allowed = frozenset(config.scopes)
        if granted_scope is not None and not granted_scope <= allowed:
            raise CapabilityError(
                f"scope={sorted(granted_scope)!r} for tool {tool!r} exceeds the policy's "
                f"scopes={sorted(allowed)!r}; ask for a subset"
            )
        granted_scope = granted_scope or allowed
    if held_scope is not None and granted_scope is not None:
        granted_scope = granted_scope & held_scope
    return GrantTerms(
        max_calls=min(caps) if caps else None,
        scope=granted_scope,
        requires_approval=config.requires_approval
        or bool(requires_approval)
        or any(e in policy.approval.effects for e in effects),
    )
