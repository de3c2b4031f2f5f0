"""Only exact JSON types cross from the sandbox to a host tool: subclasses carry user code."""

from __future__ import annotations

import pytest

from safeexec.sandbox.worker import _check_plain


def test_plain_json_values_pass() -> None:
    _check_plain(([1, 2.5, "x", None, True], {"k": {"n": [1]}}), depth=0)


class _Sneaky(str):
    def __eq__(self, other: object) -> bool:
        raise AssertionError("user code ran")

    __hash__ = str.__hash__


@pytest.mark.parametrize("value", [_Sneaky("x"), {_Sneaky("k"): 1}, {1: "int key"}, b"bytes"])
def test_anything_else_cannot_cross(value: object) -> None:
    with pytest.raises(TypeError, match="cannot cross"):
        _check_plain(value, depth=0)


def test_deep_nesting_cannot_cross() -> None:
    nested: list[object] = []
    for _ in range(200):
        nested = [nested]
    with pytest.raises(TypeError, match="nested"):
        _check_plain(nested, depth=0)
