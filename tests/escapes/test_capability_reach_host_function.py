"""Reaching the host tool function (and the gateway behind it) through the proxy object."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from safeexec.capabilities.gateway import CapabilitySet, tool

if TYPE_CHECKING:
    from restricted_support import BoxFactory

SECRET_BALANCE = {"balance": 1_000_000}


@tool
def balance() -> int:
    return SECRET_BALANCE["balance"]


@pytest.mark.parametrize(
    "code",
    [
        "balance.__closure__[0].cell_contents",
        "balance.__wrapped__",
        "balance.__globals__",
        "balance.__code__.co_consts",
        "balance.__defaults__",
        "balance.__kwdefaults__",
        "balance.__dict__",
        "getattr(balance, '__closure__')",
        "vars(balance)",
        "balance.func",
        "balance.spec",
        "balance.function",
        "dir(balance)[0] and balance.__reduce__()",
        "import functools\nfunctools.partial(balance).func.__closure__",
    ],
)
def test_the_proxy_exposes_nothing_of_the_host(restricted_box: BoxFactory, code: str) -> None:
    caps = CapabilitySet()
    caps.grant(balance)
    box = restricted_box(tools=caps)
    outcome = box.run(code)
    assert outcome.status.value == "error", outcome.text
    assert "CapabilitySet" not in outcome.text and "cell" not in outcome.stdout
    assert box.run("balance()").stdout == "1000000\n"
