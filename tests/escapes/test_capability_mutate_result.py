"""Mutating a tool's result to change the host's state behind it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.capabilities.gateway import CapabilitySet, tool

if TYPE_CHECKING:
    from restricted_support import BoxFactory

CATALOGUE = {"items": [{"sku": "a", "price": 10}], "currency": "EUR"}


@tool
def catalogue() -> dict[str, object]:
    return CATALOGUE


def test_results_are_copies_the_host_never_shares(restricted_box: BoxFactory) -> None:
    caps = CapabilitySet()
    caps.grant(catalogue)
    box = restricted_box(tools=caps)
    code = """
c = catalogue()
c['items'][0]['price'] = 0
c['items'].append({'sku': 'free'})
c['currency'] = 'XXX'
c.clear()
catalogue()
"""
    outcome = box.run(code)
    assert outcome.status.value == "ok", outcome.text
    assert "'price': 10" in outcome.stdout and "free" not in outcome.stdout
    assert CATALOGUE == {"items": [{"sku": "a", "price": 10}], "currency": "EUR"}
