"""Calling a tool past its ``max_calls``, in one cell, across cells, and by catching the refusal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.capabilities.gateway import CapabilitySet, tool

if TYPE_CHECKING:
    from restricted_support import BoxFactory


def test_calls_beyond_max_calls_never_reach_the_host(restricted_box: BoxFactory) -> None:
    calls: list[str] = []

    @tool(effects=["money"])
    def reserve(product_id: str) -> str:
        calls.append(product_id)
        return "reserved"

    caps = CapabilitySet()
    caps.grant(reserve, max_calls=2)
    box = restricted_box(tools=caps)
    code = """
results = []
for i in range(10):
    try:
        results.append(reserve(f"p{i}"))
    except ToolError as exc:
        results.append("refused")
results
"""
    outcome = box.run(code)
    assert outcome.stdout.count("reserved") == 2 and outcome.stdout.count("refused") == 8
    assert box.run("reserve('again')").status.value == "error"
    assert calls == ["p0", "p1"]
    kinds = [e.kind for e in outcome.result.events]
    assert kinds.count("tool_called") == 2 and kinds.count("tool_refused") == 8
