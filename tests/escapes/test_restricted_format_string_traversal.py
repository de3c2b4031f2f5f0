"""RestrictedPython's format-string escapes: attribute and item walks in replacement fields."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "code",
    [
        "'{0.__class__.__mro__}'.format(1)",
        "'{0.__globals__}'.format(lambda: 0)",
        "'{x.__init__.__globals__[__builtins__]}'.format(x=object())",
        "'{0[__builtins__]}'.format({'__builtins__': 1})",
        "'{0.__class__}'.format_map({})",
        "'{a.__class__}'.format_map({'a': 1})",
        "str.format('{0.__class__}', 1)",
        "getattr('{0.__class__}', 'format')(1)",
        "import string\nstring.Formatter().get_field('0.__class__', [1], {})",
        "f = '{0.__class__}'.format\nf(1)",
        "'{:{}}'.format(1, '{0.__class__}')",
    ],
)
def test_format_field_walks_are_refused(restricted_box: BoxFactory, code: str) -> None:
    box = restricted_box()
    outcome = box.run(code)
    assert outcome.status.value == "error", outcome.text
    assert "<class" not in outcome.stdout and "function" not in outcome.stdout
    box.assert_usable()


def test_plain_format_fields_still_work(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run("'{0} {name} {0!r:>6}'.format(1, name='x')")
    assert outcome.stdout == "'1 x      1'\n", outcome.text
