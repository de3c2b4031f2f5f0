"""Every value type of the model survives a JSON round trip (a property over generated values)."""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeexec.model import codec
from safeexec.model import values as model

_VALUE_TYPES = [
    getattr(model, name) for name in model.__all__ if dataclasses.is_dataclass(getattr(model, name))
]

_finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


def _strategy(tp: object) -> st.SearchStrategy[object]:
    """A strategy for any type appearing in a model field (finite floats: NaN != NaN)."""
    origin = typing.get_origin(tp)
    if tp is type(None):
        return st.none()
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(_strategy(arg) for arg in typing.get_args(tp)))
    if origin is tuple:
        (item, _ellipsis) = typing.get_args(tp)
        return st.lists(_strategy(item), max_size=2).map(tuple)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(list(tp))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return values(tp)
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(min_value=-(2**63), max_value=2**63)
    if tp is float:
        return _finite
    if tp is str:
        return st.text(max_size=20)
    raise AssertionError(f"no strategy for field type {tp!r}; extend _strategy")


def values(cls: type) -> st.SearchStrategy[object]:
    hints = typing.get_type_hints(cls)
    fields = {
        f.name: st.deferred(lambda t=hints[f.name]: _strategy(t)) for f in dataclasses.fields(cls)
    }
    return st.builds(cls, **fields)


def _through_text(data: codec.JSONValue) -> object:
    return json.loads(json.dumps(data, allow_nan=False))


@pytest.mark.parametrize("cls", _VALUE_TYPES, ids=lambda c: c.__name__)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_value_type_survives_a_json_round_trip(cls: type, data: st.DataObject) -> None:
    value = data.draw(values(cls))
    encoded = value.to_json()
    assert cls.from_json(_through_text(encoded)) == value
    assert codec.to_json(cls.from_json(encoded)) == encoded
