"""``SystemExit``, ``KeyboardInterrupt`` and other ``BaseException``s cannot unwind the host."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "code",
    [
        "raise SystemExit(0)",
        "raise SystemExit('bye')",
        "raise KeyboardInterrupt",
        "raise GeneratorExit",
        "class Out(BaseException):\n    pass\nraise Out()",
        (
            "def g():\n    try:\n        yield 1\n    finally:\n        raise SystemExit\n"
            "x = g()\nnext(x)\ndel x"
        ),
    ],
)
# A finaliser raising SystemExit is reported as "ignored" by the interpreter: that is the point.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_base_exceptions_end_only_the_cell(restricted_box: BoxFactory, code: str) -> None:
    box = restricted_box()
    outcome = box.run(code)
    assert outcome.status.value in ("error", "ok"), outcome.text
    box.assert_usable()


def test_state_survives_a_system_exit(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    box.run("kept = 41")
    box.run("raise SystemExit(3)")
    assert box.run("kept + 1").stdout == "42\n"
