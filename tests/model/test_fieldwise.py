"""Value types whose ``==``, hash and repr come from :class:`~safeexec.model.fieldwise.Fieldwise`
behave exactly as the ``@dataclass`` decorator's own would."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

import safeexec
from safeexec.model.fieldwise import Fieldwise


def _value_types() -> list[type]:
    for module in pkgutil.walk_packages(safeexec.__path__, "safeexec."):
        try:
            importlib.import_module(module.name)
        except ImportError:
            continue  # an optional extra that is not installed
    found: list[type] = []
    pending = list(Fieldwise.__subclasses__())
    while pending:
        cls = pending.pop()
        pending += cls.__subclasses__()
        # The decorator remakes a slotted class; the class it was given lingers until collected.
        if dataclasses.is_dataclass(cls) and "__slots__" in vars(cls):
            found.append(cls)
    return found


def _reference(cls: type) -> type:
    """``cls``'s fields in a dataclass that generates its own ``==``, hash and repr."""
    fields = [(f.name, object, dataclasses.field(default=None)) for f in dataclasses.fields(cls)]
    made = dataclasses.make_dataclass(cls.__name__, fields, frozen=True, kw_only=True)
    made.__qualname__ = cls.__qualname__
    return made


def test_every_fieldwise_value_type_compares_hashes_and_shows_as_a_generated_dataclass_would() -> (
    None
):
    value_types = _value_types()
    assert len(value_types) >= 60  # the model's, the policy schema's and the rest
    for cls in value_types:
        params = cls.__dataclass_params__
        assert params.frozen and not params.eq and not params.repr, cls
        assert all(f.compare and f.repr and f.hash is None for f in dataclasses.fields(cls)), cls
        names = [f.name for f in dataclasses.fields(cls)]
        reference = _reference(cls)
        one = {name: (index, "x") for index, name in enumerate(names)}
        other = {**one, names[-1]: "changed"}
        a, b, c = (object.__new__(cls) for _ in range(3))
        for value, values in ((a, one), (b, one), (c, other)):
            for name, item in values.items():
                object.__setattr__(value, name, item)
        assert repr(a) == repr(reference(**one)), cls
        assert (a == b, a == c, a != c) == (True, False, True), cls
        assert hash(a) == hash(b) == hash(reference(**one)), cls
        assert a.__eq__(reference(**one)) is NotImplemented, cls
