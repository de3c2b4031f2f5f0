"""The reachability crawl finds issue 29's classes (item 6): typing and generic aliases are among
its probe arguments, what a call returns passes the compiled ``_ret_`` and what it raises the
handler's ``_exc_``, and after every call no own instance's real ``__dict__`` may hold a dunder
or a metaclass. Each hole put back is reported."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import pytest

from safeexec.restricted.guards import Guards
from safeexec.restricted_proof.reachability import CrawlReport, crawl

# typing's aliases reach collections' classes (``typing.Counter``): its home must be allowed.
_IMPORTS = ("typing", "copy", "collections")
# Eight crawls: under a minute, out of the unit lane.
pytestmark = pytest.mark.slow


def _kinds(report: CrawlReport) -> set[str]:
    return {reached.kind for reached in report.reached}


@pytest.fixture(params=[False, True], ids=["worker", "in-process"])
def counting(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def test_the_aliases_are_probed_and_nothing_is_reached(counting: bool) -> None:
    report = crawl(_IMPORTS, counting=counting)
    assert "typing aliases" in report.own_kinds
    assert report.reached == (), report.reached


@pytest.fixture
def returns_unchecked() -> Iterator[None]:
    """``_ret_`` as before item 3: every call's result handed out as it is (written past the
    runtime class's seal, and undone)."""
    make = Guards.__dict__["_make_returned"]
    type.__setattr__(Guards, "_make_returned", lambda self: lambda value: value)
    try:
        yield
    finally:
        type.__setattr__(Guards, "_make_returned", make)


@pytest.mark.usefixtures("returns_unchecked")
def test_a_metaclass_handed_out_by_a_call_is_reported(counting: bool) -> None:
    report = crawl(_IMPORTS, counting=counting)
    assert "metaclass" in _kinds(report), report.reached


@pytest.mark.parametrize(
    ("name", "value", "kind"),
    [
        # A library helper that stores under a name it was not given (as a descriptor subclass
        # choosing ``attrname`` made ``cached_property`` do).
        ("__reduce_ex__", None, "planted dunder"),
        # A library helper that stores a metaclass (as a factory host code calls did: a
        # dataclass's ``default_factory`` of ``partial(typing.get_origin, typing.Type[int])``).
        ("kind", type, "planted metaclass"),
    ],
    ids=["dunder", "metaclass"],
)
def test_what_host_code_plants_in_an_own_instance_is_reported(
    counting: bool, monkeypatch: pytest.MonkeyPatch, name: str, value: object, kind: str
) -> None:
    """``copy.copy`` made to plant ``name`` in the instance it copies."""
    real = copy.copy

    def planting(obj: object) -> object:
        held = getattr(obj, "__dict__", None)
        if isinstance(held, dict):
            held[name] = value
        return real(obj)

    from safeexec.restricted import stdlib_wrappers

    monkeypatch.setitem(stdlib_wrappers._SPECIAL_VALUES, "copy.copy", lambda cell, _v: planting)
    report = crawl(_IMPORTS, counting=counting)
    assert kind in _kinds(report), report.reached
