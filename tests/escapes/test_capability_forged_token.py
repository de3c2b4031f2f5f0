"""Forging a capability: constructing, copying, pickling or widening a token."""

from __future__ import annotations

import copy
import pickle
from typing import TYPE_CHECKING

import pytest

from safeexec.capabilities.gateway import Capability, CapabilitySet, tool
from safeexec.errors import CapabilityError

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@tool
def transfer(amount: int) -> str:
    return f"sent {amount}"


def test_tokens_cannot_be_constructed_copied_or_widened() -> None:
    caps = CapabilitySet()
    token = caps.grant(transfer, max_calls=1)
    with pytest.raises(TypeError):
        Capability(spec=transfer, max_calls=None, scope=None, requires_approval=False, parent=None)
    with pytest.raises(TypeError):
        type(token)(spec=transfer, max_calls=None, scope=None, requires_approval=False, parent=None)
    for clone in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError):
            clone(token)
    with pytest.raises(CapabilityError):
        token.attenuate(max_calls=5)
    with pytest.raises(AttributeError):
        token.max_calls = None  # type: ignore[misc]
    assert token.max_calls == 1


def test_sandboxed_code_cannot_reach_or_mint_tokens(restricted_box: BoxFactory) -> None:
    caps = CapabilitySet()
    caps.grant(transfer, max_calls=1)
    box = restricted_box(tools=caps)
    for code in (
        "transfer.__closure__",
        "transfer.__self__",
        "getattr(transfer, '__globals__')",
        "type(transfer)(1)",
        "Capability",
        "import safeexec",
        "from safeexec.capabilities.gateway import Capability",
    ):
        outcome = box.run(code)
        assert outcome.status.value == "error", (code, outcome.text)
    assert box.run("transfer(5)").stdout == "'sent 5'\n"
    assert box.run("transfer(5)").status.value == "error"
