"""``operator.attrgetter`` and other helpers that fetch attributes with host-level getattr."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "code",
    [
        "import operator\noperator.attrgetter('__class__.__mro__')(1)",
        "from operator import attrgetter\nattrgetter('__globals__')(len)",
        "import functools\nfunctools.reduce(getattr, ['__class__', '__base__'], 1)",
        "import functools\nfunctools.partial(getattr, 1)('__class__').__subclasses__()",
        "list(map(getattr, [1], ['__class__']))[0].__bases__",
        "import copyreg",
        "sorted([1], key=lambda x: x.__class__.__bases__)",
    ],
)
def test_indirect_attribute_fetches_are_refused(restricted_box: BoxFactory, code: str) -> None:
    box = restricted_box()
    outcome = box.run(code)
    assert outcome.status.value == "error", outcome.text
    box.assert_usable()
