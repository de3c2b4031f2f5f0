"""Generator, coroutine and traceback frames: the classic walk from a frame to the host globals."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "code",
    [
        "def g():\n    yield 1\ng().gi_frame.f_globals",
        "def g():\n    yield 1\ng().gi_code",
        "g = (x for x in [1])\ng.gi_frame.f_back.f_globals",
        "getattr((x for x in [1]), 'gi_frame')",
        "async def c():\n    pass\nc().cr_frame",
        "def g():\n    yield 1\nx = g()\nx.gi_yieldfrom",
        "try:\n    1/0\nexcept Exception as e:\n    e.__traceback__.tb_frame.f_globals",
        "try:\n    1/0\nexcept Exception as e:\n    getattr(e, '__traceback__')",
    ],
)
def test_frame_walks_are_refused(restricted_box: BoxFactory, code: str) -> None:
    box = restricted_box()
    outcome = box.run(code)
    assert outcome.status.value == "error", outcome.text
    assert "frame" not in outcome.stdout and "globals" not in outcome.stdout.lower()
    box.assert_usable()
