"""Rebinding the guard names: a positional-only parameter shadowing ``_getattr_`` and friends."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "code",
    [
        "def f(_getattr_=None, /):\n    return ().__class__\nf()",
        "def f(_getattr_, /):\n    return _getattr_\nf(getattr)",
        "def f(*, _write_=None):\n    pass",
        "lambda _getattr_: 0",
        "_getattr_ = lambda o, n: getattr(o, n)",
        "global _getattr_",
        "import math as _getattr_",
        "for _write_ in [1]:\n    pass",
        "try:\n    pass\nexcept Exception as _getattr_:\n    pass",
        "[_print for _print in [1]]",
        "__builtins__",
        "__import__('os')",
        "(_getattr_ := None)",
    ],
)
def test_guard_names_cannot_be_rebound_or_read(restricted_box: BoxFactory, code: str) -> None:
    box = restricted_box()
    outcome = box.run(code)
    assert outcome.status.value == "error", outcome.text
    assert "SyntaxError" in outcome.message or "NameError" in outcome.message, outcome.text
    box.assert_usable()
