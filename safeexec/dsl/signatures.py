"""What the checker knows about a granted tool: its parameters' schema, result type, effects and
call limit — from a ``ToolSpec`` (host side), a ``ToolDescriptor`` or only a policy's name."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from safeexec.capabilities.gateway import CapabilitySet, ToolDescriptor, ToolSpec
from safeexec.dsl.valuetypes import ANY, DType, from_hint
from safeexec.model.codec import JSONValue

__all__ = [
    "ToolSignature",
    "signature_of_descriptor",
    "signature_of_spec",
    "signatures_of",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSignature:
    """A tool as the checker sees it; ``parameters`` ``None`` means unknown (names only).

    ``effects_known`` is false when only a name or a descriptor is known: the plan then treats
    the tool as possibly having every effect the policy's ``[approval] effects`` name."""

    name: str
    parameters: Mapping[str, JSONValue] | None = None
    result: DType = ANY
    effects: tuple[str, ...] = ()
    max_calls: int | None = None
    requires_approval: bool = False
    effects_known: bool = True

    @property
    def properties(self) -> Mapping[str, JSONValue] | None:
        props = None if self.parameters is None else self.parameters.get("properties")
        return props if isinstance(props, dict) else None

    @property
    def required(self) -> tuple[str, ...]:
        required = None if self.parameters is None else self.parameters.get("required")
        return (
            tuple(r for r in required if isinstance(r, str)) if isinstance(required, list) else ()
        )


@lru_cache(maxsize=1024)  # specs hash by identity and live as long as their grants
def _result_type(spec: ToolSpec) -> DType:
    try:
        hints = typing.get_type_hints(spec.function)
    except Exception:
        return ANY
    return from_hint(hints["return"]) if "return" in hints else ANY


def signature_of_spec(
    spec: ToolSpec, *, max_calls: int | None = None, requires_approval: bool = False
) -> ToolSignature:
    """The signature of a ``@tool`` spec (its result type from the return annotation)."""
    return _signature(spec, max_calls, requires_approval)


# Signatures are immutable and a spec hashes by identity, so every run of a session (which asks
# for the signatures of its grants again, with their calls left) shares them.
@lru_cache(maxsize=4096)
def _signature(spec: ToolSpec, max_calls: int | None, requires_approval: bool) -> ToolSignature:
    return ToolSignature(
        name=spec.name,
        parameters=spec.parameters,
        result=_result_type(spec),
        effects=tuple(e.value for e in spec.effects),
        max_calls=max_calls,
        requires_approval=requires_approval,
    )


def signature_of_descriptor(descriptor: ToolDescriptor) -> ToolSignature:
    """What a sandbox side knows: the parameters; the result is untyped."""
    return ToolSignature(
        name=descriptor.name, parameters=descriptor.parameters, effects_known=False
    )


def signatures_of(capabilities: CapabilitySet) -> tuple[ToolSignature, ...]:
    """The signatures of every tool granted in ``capabilities``, with their remaining calls."""
    out: list[ToolSignature] = []
    for descriptor in capabilities.describe():
        capability = capabilities.get(descriptor.name)
        if capability is None:  # pragma: no cover - describe() lists granted tools only
            continue
        out.append(
            signature_of_spec(
                capability.spec,
                max_calls=capability.remaining_calls,
                requires_approval=capability.requires_approval,
            )
        )
    return tuple(out)
