"""``copy_view``: the copy protocol writes only to a new object of the copied type.

A reducer may name any ``func``; the real ``copy`` then writes the reduced state to whatever
``func`` returned. These tests steer a reducer at a bystander object, show that the real module
writes to it (so the check is what stops it), and that the sandbox's copies refuse at any depth.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from safeexec.restricted.copy_view import (
    safe_asdict,
    safe_astuple,
    safe_copy,
    safe_deepcopy,
)
from safeexec.restricted.guards import GuardError


class Bystander:
    value = "untouched"


class Steered:
    """A reducer that hands back the bystander class with a state to write onto it."""

    def __reduce_ex__(self, protocol: int) -> Any:
        return (lambda: Bystander, (), (None, {"value": "written"}))


@pytest.fixture(autouse=True)
def _restore_bystander() -> Any:
    yield
    Bystander.value = "untouched"


def test_the_real_copy_module_writes_where_a_reducer_points() -> None:
    copy.copy(Steered())
    assert Bystander.value == "written"  # the gadget is real: the check below is load-bearing


@pytest.mark.parametrize(
    "make",
    [
        lambda: safe_copy(Steered()),
        lambda: safe_deepcopy(Steered()),
        lambda: safe_deepcopy([{"k": (1, [Steered()])}]),
        lambda: safe_deepcopy(Steered().__reduce_ex__),  # a bound method's receiver
    ],
)
def test_a_reducer_steered_at_another_object_is_refused_at_any_depth(make: Any) -> None:
    with pytest.raises(GuardError, match="reducer handed back"):
        make()
    assert Bystander.value == "untouched"


def test_a_memo_is_refused() -> None:
    with pytest.raises(GuardError, match="memo"):
        safe_deepcopy([1], {})  # type: ignore[arg-type]


def test_shared_references_and_cycles_survive_a_deep_copy() -> None:
    shared: list[object] = [1]
    cyclic: list[object] = [shared, shared]
    cyclic.append(cyclic)
    copied = safe_deepcopy(cyclic)
    assert copied[0] is copied[1] and copied[2] is copied and copied[0] is not shared


@dataclasses.dataclass
class Inner:
    items: list[int]


@dataclasses.dataclass
class Outer:
    inner: Inner
    name: str


def test_asdict_and_astuple_match_the_real_ones_on_own_dataclasses() -> None:
    value = Outer(Inner([1, 2]), "x")
    own = lambda obj: True  # noqa: E731 - every dataclass here counts as the code's own
    assert safe_asdict(own, value) == dataclasses.asdict(value)
    assert safe_astuple(own, value) == dataclasses.astuple(value)
    assert safe_asdict(own, value)["inner"]["items"] is not value.inner.items


def test_asdict_refuses_a_dataclass_that_is_not_the_code_s_own() -> None:
    with pytest.raises(GuardError, match="defined by the code"):
        safe_asdict(lambda obj: isinstance(obj, Outer), Outer(Inner([1]), "x"))
