"""A positional maker is its class called with the fields by name, in order."""

from __future__ import annotations

import dataclasses

import pytest

from safeexec.dsl import nodes as n
from safeexec.dsl.makers import maker
from safeexec.dsl.plan import PlannedCall
from safeexec.dsl.tool_calls import CallSite
from safeexec.dsl.valuetypes import INT, STR, DType, Kind, list_of, map_of, optional, record

# One class of each size the makers have (two to five fields), and the values made with them.
CLASSES = [n.Name, n.Field, DType, PlannedCall, CallSite]


@dataclasses.dataclass(frozen=True, slots=True)
class _One:
    only: int


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_maker_makes_its_class_from_the_fields_in_order(cls: type) -> None:
    names = [f.name for f in dataclasses.fields(cls)]
    values = [object() for _ in names]  # a distinct value per field: no swap can pass
    made = maker(cls)(*values)
    assert type(made) is cls and made == cls(**dict(zip(names, values, strict=True)))
    assert [getattr(made, name) for name in names] == values
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, names[0], values[1])


def test_a_maker_refuses_a_class_of_another_size() -> None:
    with pytest.raises(KeyError):
        maker(_One)


def test_the_type_constructors_make_what_the_class_makes() -> None:
    assert list_of(INT, 3) == DType(Kind.LIST, item=INT, bound=3)
    assert map_of(STR, 2) == DType(Kind.MAP, item=STR, bound=2)
    assert record({"a": INT}) == DType(Kind.RECORD, fields=(("a", INT),))
    assert optional(INT) == DType(Kind.OPTIONAL, item=INT)
