"""``__cause__`` and ``__context__`` are readable on any exception; what they lead to is other
exceptions, whose tracebacks and frames stay behind the guard."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory

_CHAIN = (
    "import json\ntry:\n    try:\n        json.loads('{')\n    except ValueError as inner:\n"
    "        raise KeyError('k') from inner\nexcept KeyError as outer:\n    e = outer\n"
)

ATTACKS = {
    "cause-traceback": _CHAIN + "print(e.__cause__.__traceback__)",
    "context-traceback-frame": _CHAIN + "print(e.__context__.__traceback__.tb_frame)",
    "cause-of-a-host-error-walk": _CHAIN + "print(e.__cause__.__class__.__subclasses__())",
    "cause-dict": _CHAIN + "print(e.__cause__.__dict__)",
    "context-getattr-traceback": _CHAIN + "print(getattr(e.__context__, '__traceback__'))",
}


@pytest.mark.parametrize("attack", list(ATTACKS), ids=list(ATTACKS))
def test_an_exception_link_leads_to_no_frame(restricted_box: BoxFactory, attack: str) -> None:
    box = restricted_box()
    outcome = box.assert_refused(ATTACKS[attack], "GuardError")
    assert "frame" not in outcome.stdout and "traceback object" not in outcome.stdout
    box.assert_usable()


def test_exception_chains_can_be_read(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run(
        _CHAIN + "print(type(e.__cause__).__name__, e.__context__ is e.__cause__,"
        " e.__suppress_context__)"
    )
    assert outcome.stdout == "JSONDecodeError True True\n", outcome.text
