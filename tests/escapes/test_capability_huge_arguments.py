"""Tool arguments too large or too deep to copy.

In-process, the JSON-plain copy of the arguments runs in the host, where no budget interrupts it,
so what one JSON value may hold is bounded and the tool never runs. (In the worker the copy runs
in the confined worker and the channel's frame limit bounds what reaches the host.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from safeexec.capabilities.gateway import CapabilitySet, tool

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize("restricted_box", ["in-process"], indirect=True)
@pytest.mark.parametrize(
    ("argument", "fragment"),
    [
        ("[0] * 2_000_000", "more than 1000000 values"),
        ("[[0] * 1000 for _ in range(1100)]", "more than 1000000 values"),
        ("{str(i): 0 for i in range(1_100_000)}", "more than 1000000 values"),
        ("['x' * 2**20] * 65", "characters of text"),
        ("10 ** 5000", "has no JSON form"),
        ("x", "nested deeper"),
    ],
)
def test_an_oversized_argument_is_refused_before_the_tool_runs(
    restricted_box: BoxFactory, argument: str, fragment: str
) -> None:
    calls: list[object] = []

    @tool(effects=["read"])
    def store(value: list[int]) -> str:
        calls.append(type(value))
        return "stored"

    caps = CapabilitySet()
    caps.grant(store)
    box = restricted_box(tools=caps)
    code = f"""
x = []
for _ in range(100):
    x = [x]
try:
    store({argument})
except (TypeError, ValueError) as e:
    print('refused:', e)
"""
    outcome = box.run(code)
    assert "refused:" in outcome.stdout and fragment in outcome.stdout, outcome.text
    assert calls == []
    box.assert_usable()


def test_a_large_but_bounded_argument_still_crosses(restricted_box: BoxFactory) -> None:
    sizes: list[int] = []

    @tool(effects=["read"])
    def measure(values: list[int]) -> int:
        sizes.append(len(values))
        return len(values)

    caps = CapabilitySet()
    caps.grant(measure)
    box = restricted_box(tools=caps)
    outcome = box.run("print(measure(list(range(100_000))))")
    assert outcome.stdout == "100000\n", outcome.text
    assert sizes == [100_000]
