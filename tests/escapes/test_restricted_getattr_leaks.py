"""smolagents-style getattr leaks: reaching globals, builtins or modules through functions."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "code",
    [
        "getattr(len, '__self__')",
        "getattr(lambda: 0, '__globals__')",
        "getattr(getattr, '__globals__')",
        "def f():\n    pass\nf.__globals__['__builtins__']",
        "def f():\n    pass\nf.__code__",
        "def f():\n    pass\ngetattr(f, '__closure__')",
        "import json\njson.dumps.__globals__['sys']",
        "import json\ngetattr(json.dumps, '__globals__')",
        "import math\nmath.sqrt.__self__",
        "vars(len)",
        "globals()",
        "locals()",
        "dir()",
        "print.__self__",
        "print._call_print.__self__",
        "import random\nrandom.random.__self__",
        "hasattr(len, '__self__') or getattr(len, '__self__')",
        "setattr(len, 'x', 1)",
    ],
)
def test_function_internals_are_out_of_reach(restricted_box: BoxFactory, code: str) -> None:
    box = restricted_box()
    outcome = box.run(code)
    assert outcome.status.value == "error", outcome.text
    assert "module" not in outcome.stdout, outcome.text
    box.assert_usable()


def test_getattr_with_public_names_still_works(restricted_box: BoxFactory) -> None:
    outcome = restricted_box().run(
        "getattr('abc', 'upper')(), getattr(1, 'real'), hasattr([], 'x')"
    )
    assert outcome.stdout == "('ABC', 1, False)\n", outcome.text
