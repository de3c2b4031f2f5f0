"""Dunder "time bombs": methods that would fire later, in the host, outside every guard."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "name",
    [
        "__del__",
        "__getattr__",
        "__getattribute__",
        "__setattr__",
        "__init_subclass__",
        "__class_getitem__",
        "__set_name__",
        "__get__",
        "__reduce__",
        "__reduce_ex__",
        "__instancecheck__",
        "__new__",
    ],
)
def test_defining_host_triggered_dunders_is_refused(restricted_box: BoxFactory, name: str) -> None:
    box = restricted_box()
    outcome = box.run(
        f"class Bomb:\n    def {name}(self, *a):\n        while True:\n            pass\n"
    )
    assert outcome.status.value == "error"
    assert f'defining "{name}" is not allowed' in outcome.text
    box.assert_usable()


def test_an_exception_whose_str_loops_cannot_hang_the_host(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    code = """
class Bomb(Exception):
    def __str__(self):
        while True:
            pass
raise Bomb()
"""
    outcome = box.run(code, cpu_seconds=1.0, wall_seconds=5.0)
    assert outcome.status.value in ("error", "timeout"), outcome.text
    box.assert_usable()


def test_a_repr_that_loops_is_stopped_by_the_limits(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    code = "class Slow:\n    def __repr__(self):\n        while True:\n            pass\nSlow()"
    outcome = box.run(code, cpu_seconds=0.5, wall_seconds=5.0)
    assert outcome.status.value == "timeout", outcome.text
    box.assert_usable()


@pytest.mark.parametrize(
    ("bomb", "refusal"),
    [
        # A str subclass may not change __eq__ at all: refused where the class is made.
        ("def __eq__(self, other):\n        while True:\n            pass", "__eq__"),
        ("def __hash__(self):\n        while True:\n            pass", "cannot cross"),
    ],
)
def test_eq_and_hash_bombs_never_reach_the_host_through_a_tool(
    restricted_box: BoxFactory, bomb: str, refusal: str
) -> None:
    from safeexec.capabilities.gateway import CapabilitySet, tool

    received: list[object] = []

    @tool
    def remember(value: str) -> str:
        received.append(value)
        return "ok"

    caps = CapabilitySet()
    caps.grant(remember)
    box = restricted_box(tools=caps)
    code = f"""
class Sneaky(str):
    {bomb}
remember(Sneaky('x'))
"""
    outcome = box.run(code)
    assert outcome.status.value == "error" and refusal in outcome.text, outcome.text
    assert received == []
    box.assert_usable()
