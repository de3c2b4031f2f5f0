"""Passing objects back into the host through tool arguments (proxies, classes, modules...)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from safeexec.capabilities.gateway import CapabilitySet, tool

if TYPE_CHECKING:
    from restricted_support import BoxFactory

received: list[object] = []


@tool
def store(value: list[str]) -> int:
    received.append(value)
    return len(value)


@pytest.mark.parametrize(
    "argument",
    [
        "store",
        "[store]",
        "[object()]",
        "[type(1)]",
        "[len]",
        "[(lambda: 0)]",
        "[Exception('x')]",
        "['a', b'bytes']",
        "['a', ('nested',)]",
        "{'a': 1}",
    ],
)
def test_non_json_arguments_are_refused_before_the_host(
    restricted_box: BoxFactory, argument: str
) -> None:
    caps = CapabilitySet()
    caps.grant(store)
    box = restricted_box(tools=caps)
    received.clear()
    outcome = box.run(f"store({argument})")
    assert outcome.status.value == "error", outcome.text
    assert all(type(v) is list and all(type(i) is str for i in v) for v in received)


def test_subclassed_strings_arrive_as_plain_strings_or_not_at_all(
    restricted_box: BoxFactory,
) -> None:
    caps = CapabilitySet()
    caps.grant(store)
    box = restricted_box(tools=caps)
    received.clear()
    outcome = box.run("class S(str):\n    pass\nstore([S('x')])")
    assert outcome.status.value == "error" and "cannot cross" in outcome.text
    assert received == []
    assert box.run("store(['x', 'y'])").stdout == "2\n"
    assert received == [["x", "y"]] and type(received[0]) is list
