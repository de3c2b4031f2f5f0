"""pickle and ``__reduce__``: serialisation as a code-execution gadget."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "code",
    [
        "import pickle",
        "import marshal",
        "import shelve",
        "class P:\n    def __reduce__(self):\n        return (print, ('x',))",
        "class P:\n    def __reduce_ex__(self, proto):\n        return (print, ('x',))",
        "import copy, math\ncopy.deepcopy(math)",
        "import copy, math\ncopy.copy(math)",
        "(1).__reduce_ex__(2)",
        "[].__reduce__()",
    ],
)
def test_serialisation_gadgets_are_refused(restricted_box: BoxFactory, code: str) -> None:
    box = restricted_box()
    outcome = box.run(code)
    assert outcome.status.value == "error", outcome.text
    box.assert_usable()
