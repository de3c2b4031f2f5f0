"""``AnyJSON`` parameters take any JSON value, copied with exact types (submit(value) needs it)."""

from __future__ import annotations

from safeexec.capabilities.gateway import CapabilitySet, tool
from safeexec.capabilities.specs import AnyJSON


@tool
def keep(value: AnyJSON) -> AnyJSON:
    return value


def test_any_json_value_passes_and_the_schema_says_so() -> None:
    assert keep.parameters["properties"]["value"]["type"] == [  # type: ignore[index]
        "array", "boolean", "integer", "null", "number", "object", "string"
    ]  # fmt: skip
    gateway = CapabilitySet()
    gateway.grant(keep)
    for value in (None, True, 3, 2.5, "x", [1, {"a": [None]}], {"k": "v"}):
        reply = gateway.invoke("keep", {"args": [value], "kwargs": {}})
        assert reply.ok and reply.value == value


def test_a_value_with_no_json_form_is_refused() -> None:
    gateway = CapabilitySet()
    gateway.grant(keep)
    reply = gateway.invoke("keep", {"args": [float("nan")], "kwargs": {}})
    assert not reply.ok and "no JSON form" in reply.error
