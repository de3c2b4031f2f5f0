"""``copy.deepcopy(open, memo)``: copying a bound method copies its ``__self__`` into ``memo``.

The builtins the runtime hands out (``getattr``, ``print``, ``open``) are bound methods of the
runtime's own objects; a deep copy would leave copies of the executor, its guards and its state
in a dict the code holds. Those objects refuse to be copied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize("builtin", ["open", "getattr", "print", "setattr", "hasattr"])
def test_deep_copying_a_runtime_builtin_leaves_no_runtime_object_in_reach(
    restricted_box: BoxFactory, builtin: str
) -> None:
    box = restricted_box(imports=("copy",))
    code = f"""
import copy
memo = {{}}
try:
    copy.deepcopy({builtin}, memo)
except Exception as e:
    print('refused', type(e).__name__)
print(sorted({{type(v).__name__ for v in memo.values()}}))
"""
    outcome = box.run(code)
    for leaked in ("RestrictedExecutor", "Guards", "PrintCollector", "OperationBudget"):
        assert leaked not in outcome.stdout, outcome.text
    box.assert_usable()


def test_deep_copies_of_ordinary_values_still_work(restricted_box: BoxFactory) -> None:
    box = restricted_box(imports=("copy",))
    code = "import copy\nx = {'a': [1, {2}]}\ny = copy.deepcopy(x)\nprint(x == y, x is y)"
    outcome = box.run(code)
    assert outcome.stdout == "True False\n", outcome.text
