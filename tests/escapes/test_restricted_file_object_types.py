"""From a file ``open`` returned to the types behind it: ``io.FileIO`` opens any path or fd."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from escape_support import Canaries
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "code",
    [
        "f = open('a.txt', 'w')\ntype(f.buffer.raw)({secret!r}).read()",
        "f = open('a.txt', 'w')\nf.buffer",
        "f = open('a.txt', 'w')\nf._file",
        "f = open('a.txt', 'w')\ngetattr(f, '_file')",
        "type(open('a.txt', 'w'))({secret!r})",
        "type(open('a.txt', 'w'))._wrap(1, name='x')",
        "f = open('a.txt', 'w')\nf.name = {secret!r}",
        "f = open('a.txt', 'w')\nf.fileno()",
        "import copy\ncopy.copy(open('a.txt', 'w'))",
    ],
)
def test_file_objects_lead_nowhere_else(
    restricted_box: BoxFactory, canaries: Canaries, code: str
) -> None:
    box = restricted_box()
    outcome = box.run(code.format(secret=str(canaries.secret_file)))
    assert outcome.status.value == "error", outcome.text
    box.assert_usable()
