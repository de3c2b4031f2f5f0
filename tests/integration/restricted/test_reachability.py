"""The reachability proof: for every shipped pack, in both runtime modes, nothing forbidden is
reachable — and the crawler does report it when an old hole is put back."""

from __future__ import annotations

import builtins
import contextlib
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from safeexec.policy import load_policy, shipped_packs
from safeexec.restricted import guards, stdlib_wrappers
from safeexec.restricted_proof import reachability_checks
from safeexec.restricted_proof.reachability import CrawlReport, crawl


@contextlib.contextmanager
def _runtime_class_patched(cls: type, name: str, value: object) -> Iterator[None]:
    """The runtime's classes take no attribute writes (``RuntimeClass``): a test that puts an
    old hole back writes past the seal with ``type.__setattr__``, and undoes it."""
    old = cls.__dict__.get(name, _MISSING)
    type.__setattr__(cls, name, value)
    try:
        yield
    finally:
        if old is _MISSING:
            type.__delattr__(cls, name)
        else:
            type.__setattr__(cls, name, old)


_MISSING = object()


@pytest.mark.parametrize("counting", [False, True], ids=["worker", "in-process"])
@pytest.mark.parametrize("pack", shipped_packs())
def test_nothing_forbidden_is_reachable_under_a_shipped_pack(
    pack: str, counting: bool, reachability_crawl: Callable[[tuple[str, ...], bool], CrawlReport]
) -> None:
    report = reachability_crawl(load_policy(pack).imports.allow, counting)
    assert not report.truncated
    assert report.objects > 5000 and report.calls > 20000
    own = {"plain class", "dataclass", "Enum", "closure", "generator", "coroutine"}
    assert own | {"async generator"} <= set(report.own_kinds)
    assert report.reached == (), report.reached


def _old_wraps(executor: Any, wraps: Callable[..., Any]) -> object:
    """The ``functools.wraps`` wrapper before this fix: own wrappers, any other arguments."""

    def wrapped(original: object, **kwargs: object) -> object:
        def apply(wrapper: object) -> object:
            if not executor.guards.is_own_function(wrapper):
                raise GuardError("own functions only")  # noqa: F821 - the runtime module's name
            return wraps(original, **kwargs)(wrapper)

        return apply

    return wrapped


def _as_shipped(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` as if written in ``stdlib_wrappers`` (the crawler vets the runtime's homes)."""
    return types.FunctionType(function.__code__, vars(stdlib_wrappers), function.__name__)


def _kinds(report: CrawlReport) -> set[str]:
    return {r.kind for r in report.reached}


def test_the_crawler_finds_wraps_merging_a_module_s_globals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(stdlib_wrappers._SPECIAL_VALUES, "functools.wraps", _as_shipped(_old_wraps))
    report = crawl(("functools", "statistics"))
    changed = [r for r in report.reached if r.kind == "sandbox namespace changed"]
    assert changed and "__builtins__" in changed[0].detail, report.reached
    assert "updated=" in changed[0].path


def test_the_crawler_finds_inherited_private_helpers() -> None:
    original = guards.Guards._defined_by_code
    with _runtime_class_patched(
        guards.Guards,
        "_defined_by_code",
        lambda self, obj, name: name.startswith("_") or original(self, obj, name),
    ):
        report = crawl(("enum", "uuid"))
    modules = [r for r in report.reached if r.kind == "module"]
    assert any("_convert_(" in r.path for r in modules), report.reached


def test_the_crawler_finds_abstractmethod_changing_a_host_function(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(stdlib_wrappers._SPECIAL_VALUES, "abc.abstractmethod")
    report = crawl(("abc", "statistics"))
    changed = [r for r in report.reached if r.kind == "host object changed"]
    assert any("__isabstractmethod__" in r.detail for r in changed), report.reached


def test_the_crawler_restores_what_a_probe_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    import abc

    monkeypatch.delitem(stdlib_wrappers._SPECIAL_VALUES, "abc.abstractmethod")
    crawl(("abc",))
    assert not hasattr(abc.abstractmethod, "__isabstractmethod__")


def test_the_crawler_finds_unbound_library_methods_on_class_reads() -> None:
    # The old fast path: a public name read off a class is a plain load.
    with _runtime_class_patched(
        guards.Guards, "class_attribute", lambda self, obj, name: getattr(obj, name)
    ):
        report = crawl(("collections",))
    unbound = [r for r in report.reached if r.kind == "unbound method"]
    # Read off the library class or an own subclass of it, whichever the crawl meets first.
    assert any(r.path.endswith("Counter.copy") for r in unbound), report.reached
    assert any(r.path == "collections.UserList.append" for r in unbound), report.reached


def test_the_crawler_finds_methods_forwarded_by_generic_aliases(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Classes and super objects checked, generic aliases (``typing.Mapping``) forgotten.
    monkeypatch.setattr(guards, "CLASS_LIKE", (type, super))
    report = crawl(("typing", "collections", "collections.abc"))
    unbound = [r for r in report.reached if r.kind == "unbound method"]
    assert any(r.path.startswith("typing.Mapping.") for r in unbound), report.reached


def test_the_crawler_finds_a_cache_copying_a_class_s_methods(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(stdlib_wrappers._SPECIAL_VALUES, "functools.cache")
    report = crawl(("functools", "collections"))
    unbound = [r for r in report.reached if r.kind == "unbound method"]
    assert any(r.path.startswith("functools.cache(") for r in unbound), report.reached


def test_the_crawler_finds_a_library_connection_handed_out() -> None:
    # A cursor view whose ``connection`` were the library's connection (``set_authorizer``,
    # ``enable_load_extension``).
    from safeexec.restricted.views import sqlite_views

    real = property(lambda self: self._connection._conn)
    with _runtime_class_patched(sqlite_views.SqliteCursor, "connection", real):
        report = crawl(("sqlite3",))
    dangerous = [r for r in report.reached if r.kind == "dangerous class"]
    assert any("Connection" in r.detail for r in dangerous), report.reached


def test_the_crawler_finds_a_library_archive_handed_out() -> None:
    from safeexec.restricted.views import archive_views

    opener = _as_shipped(lambda self, name, *a: self._zip.open(name))
    with _runtime_class_patched(archive_views.ZipArchive, "open", opener):
        report = crawl(("zipfile",))
    dangerous = [r for r in report.reached if r.kind == "dangerous class"]
    assert any("ZipExtFile" in r.detail for r in dangerous), report.reached


def _planter(target: object, name: str) -> Callable[..., Any]:
    """A broken view value: host code that writes its first argument into ``target.name``,
    dressed as a function of ``stdlib_wrappers`` (a vetted home) so the crawler calls it."""

    def plant(value: object, *rest: object, **kwargs: object) -> None:
        setattr(target, name, value)

    return types.FunctionType(
        plant.__code__,
        {"__name__": stdlib_wrappers.__name__, "__builtins__": __builtins__},
        "plant",
        None,
        plant.__closure__,
    )


@pytest.mark.parametrize(
    ("target", "name", "where"),
    [
        (builtins, "planted_by_a_probe", "builtins.__dict__"),
        (guards, "CLASS_LIKE", "the globals of safeexec.restricted.guards"),
    ],
    ids=["real builtins", "runtime globals"],
)
@pytest.mark.parametrize("tags", [True, False], ids=["version tags", "values"])
def test_the_crawler_finds_a_probe_changing_the_interpreter(
    monkeypatch: pytest.MonkeyPatch, target: object, name: str, where: str, tags: bool
) -> None:
    # Both ways of noticing a write: CPython's dict version tags, and the keys and values.
    monkeypatch.setattr(reachability_checks, "_TAGS_MOVE", tags and reachability_checks._TAGS_MOVE)
    original = getattr(target, name, None)
    monkeypatch.setattr(target, name, original, raising=False)  # undone even if the crawl fails
    if original is None:
        monkeypatch.delattr(target, name)
    planter = _planter(target, name)
    monkeypatch.setitem(stdlib_wrappers._SPECIAL_VALUES, "functools.wraps", lambda ex, v: planter)
    report = crawl(("functools",))
    changed = [r for r in report.reached if r.kind == "interpreter state changed"]
    assert any(r.detail.startswith(where) and name in r.detail for r in changed), report.reached
    assert any(r.path.startswith("functools.wraps(") for r in changed), changed
    # Restored after each probe: the value is the one before the crawl.
    assert getattr(target, name, None) is original


def test_the_crawler_finds_a_context_manager_decorating_a_library_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Before d2b4684: ``contextmanager`` checked its function only, and the context managers
    # it made decorated classes too (``g()(Counter).copy`` was ``Counter.copy``, unbound).
    monkeypatch.setitem(
        stdlib_wrappers._SPECIAL_VALUES,
        "contextlib.contextmanager",
        stdlib_wrappers._functions_only,
    )
    report = crawl(("contextlib", "collections"))
    unbound = [r for r in report.reached if r.kind == "unbound method"]
    assert any(r.path.startswith("context_manager(collections.") for r in unbound), report.reached
