"""One regex engine for code-chosen patterns (issue 29, item 5): in the host process, every way
the code's text becomes a compiled pattern goes through the timed engine.

The test enumerates what the in-process views hand out — each module function, each class, each
public method of a class and of an instance made with probe arguments, and an own subclass of
each class with its pattern-like class attributes set to the probe — calls each with a marker
text in every argument shape, and records every pattern the real, untimed ``re`` compiles. A
compile holding the marker is a callable that runs the code's text on the real engine: it fails
the test unless it is in ``_REVIEWED`` with why it cannot backtrack without bound."""

from __future__ import annotations

import contextlib
import io
import re
import types
from collections.abc import Callable, Iterator

import pytest

from safeexec.restricted import RestrictedExecutor
from safeexec.restricted.allowlist import MODULE_ALLOWLISTS, has_view
from safeexec.restricted.budget import OperationBudget
from safeexec.restricted.class_facts import is_class, own_dict
from safeexec.restricted.guards import GuardError

_MARK = "SAFEEXECMARK"
_SHAPES: tuple[tuple[object, ...], ...] = (
    (_MARK,),
    (_MARK, _MARK),
    (_MARK, _MARK, _MARK),
    ("x", _MARK),
    ([_MARK],),
    (_MARK.encode(),),
    (_MARK.encode(), _MARK.encode()),
)
# Callables that never return or wait (their arguments are no patterns).
_SKIPPED = {"time.sleep"}

# Real-engine compiles of the code's text, each reviewed: why the pattern cannot backtrack
# without bound.
_REVIEWED = {
    # ``_strptime`` escapes every regex character of the format and replaces each directive by
    # a fixed alternation of digits or names in its own named group (a directive may appear
    # once); the code's text adds literals only.
    "datetime.datetime.strptime": "format escaped; directives are fixed groups, each once",
    "datetime.date.strptime": "as datetime.strptime (3.14)",
    "datetime.time.strptime": "as datetime.strptime (3.14)",
    "time.strptime": "as datetime.strptime",
}


class _Recorder:
    """Patches the real ``re``'s one compile function; records where the marker was compiled."""

    def __init__(self) -> None:
        self.where: str | None = None
        self.found: dict[str, str] = {}
        self._real = re._compile  # type: ignore[attr-defined]

    def __call__(self, pattern: object, flags: object) -> object:
        text = pattern.decode("latin-1") if type(pattern) is bytes else pattern
        if self.where is not None and type(text) is str and _MARK in text:
            self.found.setdefault(self.where, text[:100])
        return self._real(pattern, flags)


def _call_all_shapes(recorder: _Recorder, label: str, func: Callable[..., object]) -> list[object]:
    made = []
    if label in _SKIPPED:
        return made
    for args in _SHAPES:
        recorder.where = label
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                made.append(func(*args))
        except Exception:  # a probe: most shapes are wrong
            continue
        finally:
            recorder.where = None
    return made


def _public_callables(obj: object) -> Iterator[tuple[str, Callable[..., object]]]:
    for name in dir(obj):
        if name.startswith("_"):
            continue
        try:
            value = getattr(obj, name)
        except Exception:  # a property that needs state
            continue
        if callable(value) and not is_class(value):
            yield name, value


def _own_subclass(
    executor: RestrictedExecutor, recorder: _Recorder, label: str, cls: type
) -> type | None:
    """An own subclass of ``cls`` (made as a class statement is) whose string and pattern class
    attributes are the marker; ``None`` where the runtime refuses the subclass."""
    namespace: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        for name, value in own_dict(klass).items():
            if not name.startswith("__") and (type(value) is str or type(value) is re.Pattern):
                namespace[name] = _MARK

    # A class body's code stores names in the class namespace, as a module's does.
    source = "".join(f"{name} = {_MARK!r}\n" for name in namespace)
    body = types.FunctionType(compile(source, "<own subclass>", "exec"), {})
    recorder.where = f"own {label} (made)"  # a class-creation hook runs now
    try:
        made = executor.guards.build_class(body, f"Own{cls.__name__}", cls)
    except (GuardError, TypeError):
        return None
    finally:
        recorder.where = None
    assert is_class(made)
    return made


def _crawl(executor: RestrictedExecutor, recorder: _Recorder) -> None:
    for module in sorted(MODULE_ALLOWLISTS):
        if not has_view(module, in_process=True):
            continue
        try:
            view = executor._view(module)
        except Exception:  # not importable on this Python
            continue
        for attr, value in vars(view).items():
            if attr.startswith("_") or not callable(value):
                continue
            label = f"{module}.{attr}"
            made = _call_all_shapes(recorder, label, value)
            if not is_class(value):
                continue
            for name, method in _public_callables(value):
                _call_all_shapes(recorder, f"{label}.{name}", method)
            for instance in made[:1]:
                for name, method in _public_callables(instance):
                    _call_all_shapes(recorder, f"{label}().{name}", method)
            subclass = _own_subclass(executor, recorder, label, value)
            if subclass is not None:
                for instance in _call_all_shapes(recorder, f"own {label}", subclass)[:1]:
                    for name, method in _public_callables(instance):
                        _call_all_shapes(recorder, f"own {label}().{name}", method)


@pytest.fixture(scope="module")
def real_engine_compiles() -> dict[str, str]:
    executor = RestrictedExecutor(imports=tuple(MODULE_ALLOWLISTS), count_operations=True)
    recorder = _Recorder()
    executor.cell.budget = OperationBudget(10**9)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(re, "_compile", recorder)
        _crawl(executor, recorder)
    return recorder.found


def test_code_chosen_patterns_compile_on_the_timed_engine_only(
    real_engine_compiles: dict[str, str],
) -> None:
    unreviewed = {k: v for k, v in real_engine_compiles.items() if k not in _REVIEWED}
    assert unreviewed == {}, "the code's text compiled on the real, untimed re"


def test_the_crawl_sees_a_real_engine_compile() -> None:
    # The probe itself: a view that compiled the code's text on the real ``re`` is found.
    recorder = _Recorder()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(re, "_compile", recorder)
        _call_all_shapes(recorder, "probe.compile", re.compile)
    assert "probe.compile" in recorder.found
