"""The restricted runtime: guards, compatibility gaps closed, module views, operation budget."""

from __future__ import annotations

import collections
import io
import types
from pathlib import Path

import pytest

from safeexec.backends.base import SessionSpec
from safeexec.restricted import (
    DENIED_ATTRIBUTES,
    MODULE_ALLOWLISTS,
    GuardError,
    ModuleView,
    OperationBudget,
    RestrictedExecutor,
    SandboxExit,
)
from safeexec.restricted.allowlist import WORKER_ONLY_VIEWS
from safeexec.restricted.views import WorkerViews


def run(code: str, **options: object) -> str | None:
    return RestrictedExecutor(**options).execute(code, filename="<test>")  # type: ignore[arg-type]


# -- compatibility gaps RestrictedPython leaves open, closed here --------------------------------


def test_augmented_assignment_on_subscripts_and_attributes() -> None:
    code = """
counts = {'a': 1}
counts['a'] += 1
class C:
    def __init__(self):
        self.n = 0
c = C()
c.n += 5
(counts, c.n)
"""
    assert run(code) == "({'a': 2}, 5)"


def test_annotated_assignments_and_dataclass_fields() -> None:
    code = """
from dataclasses import dataclass
x: int = 3
@dataclass(order=True)
class P:
    a: int
    b: str = 'z'
(x, P(1) < P(2), P(1))
"""
    assert run(code, imports=("dataclasses",)) == "(3, True, P(a=1, b='z'))"


def test_own_classes_define_dunders_and_private_attributes() -> None:
    code = """
class Bag:
    __slots__ = ('_items', '__weird')
    def __init__(self):
        self._items = []
        self.__weird = 1
    def __len__(self):
        return len(self._items)
    def __iter__(self):
        return iter(self._items)
    def __contains__(self, x):
        return x in self._items
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False
    def add(self, x):
        self._items.append(x)
        return self.__weird
with Bag() as b:
    b.add(3)
(len(b), list(b), 3 in b, b._items)
"""
    assert run(code) == "(1, [3], True, [3])"


def test_private_attributes_of_foreign_objects_stay_closed() -> None:
    for code in ("import json\njson.JSONEncoder()._x", "(1).__class__.__base__", "[]._x"):
        with pytest.raises((GuardError, AttributeError)):
            run(code, imports=("json",))


def test_nonlocal_and_single_underscore_helpers() -> None:
    code = """
def _helper():
    total = 0
    def add(n):
        nonlocal total
        total += n
        return total
    return add
_add = _helper()
_add(2)
_add(3)
"""
    assert run(code) == "5"


def test_super_and_base_class_dunders() -> None:
    code = """
class Base(dict):
    def __init__(self, **kw):
        super().__init__(**kw)
        dict.__setitem__(self, 'base', True)
class Err(Exception):
    def __init__(self, msg):
        Exception.__init__(self, msg)
(Base(a=1), str(Err('boom')))
"""
    assert run(code) == "({'a': 1, 'base': True}, 'boom')"


# -- compile-time refusals --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        ("eval('1')", "Eval calls"),
        ("class A:\n    def __del__(self):\n        pass", 'defining "__del__"'),
        ("def __repr__():\n    pass", "invalid variable name"),
        ("_getattr_ = 1", "invalid variable name"),
        ("x.__dict__ = {}", "dunder attributes"),
        ("class A(metaclass=type):\n    pass", "metaclass"),
        ("match 1:\n    case int(__class__=c):\n        pass", "class pattern keyword"),
        ("match 1:\n    case int(real=_getattr_):\n        pass", "invalid variable name"),
        ("class A:\n    __match_args__ = ('__reduce_ex__',)", "invalid variable name"),
    ],
)
def test_refused_at_compile_time(code: str, fragment: str) -> None:
    with pytest.raises(SyntaxError, match=fragment):
        run(code)


# -- module views -------------------------------------------------------------------------------


def test_imports_follow_the_allowlist_including_wildcards() -> None:
    assert run("import math\nmath.floor(2.5)", imports=("math",)) == "2"
    assert (
        run("import collections.abc\ncollections.abc.Mapping.__name__", imports=("collections.*",))
        == "'Mapping'"
    )
    with pytest.raises(ImportError, match="not allowed"):
        run("import math")
    with pytest.raises(ImportError, match="not allowed"):
        run("import scipy", imports=("scipy",))  # allowed by policy, but no view here
    with pytest.raises(ImportError, match="needs a working directory"):
        # the built os view exists only with a workdir
        run("import os", imports=("os",), views=WorkerViews)


def test_a_worker_only_view_is_refused_in_process_naming_where_it_runs(tmp_path: Path) -> None:
    # In the host process the runtime is the core and the pure stdlib modules.
    where = "only in the confined worker.*'restricted'.*'native'"
    for module in sorted(WORKER_ONLY_VIEWS):
        with pytest.raises(ImportError, match=where):
            run(f"import {module}", imports=(module,), workdir=tmp_path)
    assert run("import json\njson.dumps([1])", imports=("json",), workdir=tmp_path) == "'[1]'"


def test_a_module_view_is_read_only_and_never_a_module() -> None:
    executor = RestrictedExecutor(imports=("json",))
    executor.execute("import json", filename="<t>")
    view = executor._namespace["json"]
    assert isinstance(view, ModuleView) and not isinstance(view, types.ModuleType)
    with pytest.raises(GuardError):
        view.dumps = None  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        view.__name__  # noqa: B018 - no __name__, so `from m import x` cannot fall back to sys.modules


def test_no_module_frame_or_code_object_is_reachable_through_public_attributes(
    tmp_path: Path,
) -> None:
    """The premise of the fast path: plain ``a.b`` loads never reach a module, frame or code."""
    executor = RestrictedExecutor(imports=tuple(MODULE_ALLOWLISTS), workdir=tmp_path)
    samples = """
import re, datetime, collections, fractions, decimal, statistics, random, json, io, csv, hashlib
import itertools, functools, string, textwrap, dataclasses, enum, typing, zoneinfo, graphlib
import difflib, contextlib, uuid, calendar, reprlib
@dataclasses.dataclass
class D:
    x: int = 0
class E(enum.Enum):
    A = 1
P = collections.namedtuple('P', 'a b')
def gen():
    yield 1
samples = [
    re.compile('a(b)'), re.match('a', 'a'), datetime.datetime(2024, 1, 1), datetime.timedelta(1),
    datetime.timezone.utc, collections.Counter('ab'), collections.deque([1]),
    collections.defaultdict(int), collections.ChainMap({}), fractions.Fraction(1, 3),
    decimal.Decimal('1.5'), statistics.NormalDist(0, 1), random.Random(1), json.JSONEncoder(),
    json.JSONDecoder(), io.StringIO('x'), csv.reader(['a']), csv.writer(io.StringIO()),
    hashlib.sha256(), itertools.count(), functools.partial(len), string.Template('$a'),
    textwrap.TextWrapper(), D(), E.A, P(1, 2), gen(), (x for x in []), zoneinfo.ZoneInfo('UTC'),
    graphlib.TopologicalSorter(), difflib.SequenceMatcher(None, 'a', 'b'), contextlib.ExitStack(),
    uuid.uuid4(), calendar.month_name, reprlib.Repr(), open('f.txt', 'w'), ValueError('x'),
    range(3), iter([1]), property(len), super(D, D()), print, getattr, D, E, P,
    functools.lru_cache(None)(len), dataclasses.fields(D)[0], typing.List[int],
]
"""
    executor.execute(samples, filename="<samples>")
    builtins_table = executor._namespace["__builtins__"]
    assert isinstance(builtins_table, dict)
    roots = [*executor._namespace["samples"], *builtins_table.values(), *executor._views.values()]  # type: ignore[misc]
    forbidden = (types.ModuleType, types.FrameType, types.CodeType, types.TracebackType)
    seen: set[int] = set()
    queue = collections.deque((root, type(root).__name__, 0) for root in roots)
    reached: list[str] = []
    while queue:
        obj, path, depth = queue.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, forbidden) or (isinstance(obj, dict) and "__builtins__" in obj):
            reached.append(path)
            continue
        if depth >= 4:
            continue
        for name in dir(obj):
            if name.startswith("_") or name in DENIED_ATTRIBUTES:
                continue
            try:
                queue.append((getattr(obj, name), f"{path}.{name}", depth + 1))
            except Exception:
                continue
        if isinstance(obj, list | tuple) and len(obj) < 64:
            queue.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(obj))
        if isinstance(obj, dict | types.MappingProxyType) and len(obj) < 256:
            queue.extend((v, f"{path}[{k!r}]", depth + 1) for k, v in obj.items())
    assert len(seen) > 2000
    assert reached == []


# -- output, exits, budget ------------------------------------------------------------------------


def test_print_goes_to_the_sink_and_printed_is_capped() -> None:
    sink = io.StringIO()
    executor = RestrictedExecutor(sink=sink, output_bytes=10)
    assert executor.execute("print('x' * 50)\nprinted", filename="<t>") == repr("x" * 10)
    assert sink.getvalue() == "x" * 50 + "\n"


def test_each_run_prints_afresh_to_the_sink_of_its_time() -> None:
    first, second = io.StringIO(), io.StringIO()
    executor = RestrictedExecutor(sink=first, output_bytes=10)
    executor.execute("def say(t):\n    print(t)\nsay('a')", filename="<t>")
    executor.set_sink(second)
    assert executor.execute("printed", filename="<t>") == repr("")
    assert executor.execute("say('b')\nprinted", filename="<t>") == repr("b\n")
    assert (first.getvalue(), second.getvalue()) == ("a\n", "b\n")


def test_base_exceptions_become_sandbox_exit() -> None:
    for code in (
        "raise SystemExit(2)",
        "raise KeyboardInterrupt",
        "class X(BaseException):\n    pass\nraise X()",
    ):
        with pytest.raises(SandboxExit):
            run(code)


@pytest.mark.parametrize(
    "code",
    [
        "while True:\n    pass",
        "for i in iter(int, 1):\n    pass",
        "[x for x in iter(int, 1)]",
        "def f():\n    return f()\ntry:\n    f()\nexcept RecursionError:\n    pass\n"
        "while 1:\n    pass",
        "def f():\n    for _ in (1, 2):\n        try:\n            f()\n"
        "        except RecursionError:\n            pass\nf()",
        "g = lambda n: n and g(n - 1) + g(n - 1)\ng(40)",
        "while True:\n    try:\n        while True:\n            pass\n"
        "    except BaseException:\n        pass",
    ],
)
def test_the_operation_budget_stops_unbounded_python(code: str) -> None:
    executor = RestrictedExecutor(count_operations=True)
    budget = OperationBudget(100_000)
    with pytest.raises(Exception):  # noqa: B017 - whatever the code last raised
        executor.execute(code, filename="<t>", budget=budget)
    assert budget.exhausted and budget.reason() == "operations"


def test_a_stopped_budget_ends_the_run_and_later_callbacks() -> None:
    executor = RestrictedExecutor(count_operations=True)
    budget = OperationBudget(10**9)
    budget.stop("wall_seconds")
    with pytest.raises(StopIteration):
        executor.execute("while True:\n    pass", filename="<t>", budget=budget)
    assert budget.reason() == "wall_seconds"
    executor.execute("def later():\n    while True:\n        pass", filename="<t>")
    later = executor._namespace["later"]
    with pytest.raises(StopIteration):  # outside a run, the budget is closed
        later()  # type: ignore[operator]


@pytest.mark.parametrize(
    "swallow",
    [
        "try:\n        raise ValueError\n    except BaseException:\n        return 'swallowed'",
        "try:\n        raise ValueError\n    finally:\n        return 'swallowed'",
        "with contextlib.suppress(BaseException):\n        raise ValueError\n"
        "    return 'swallowed'",
        "with contextlib.ExitStack() as stack:\n        stack.push(lambda *exc: True)\n"
        "        raise ValueError\n    return 'swallowed'",
        "with Swallow():\n        raise ValueError\n    return 'swallowed'",
    ],
    ids=["handler", "finally", "suppress", "exit-stack", "own-exit"],
)
def test_code_run_after_its_cell_cannot_swallow_the_closed_budget(swallow: str) -> None:
    # The worker's executor (no ticks): what the collector or a stopped thread runs after the
    # cell meets the runtime's stop check wherever it would swallow an exception.
    executor = RestrictedExecutor(imports=("contextlib",))
    code = (
        "import contextlib\nclass Swallow:\n    def __enter__(self):\n        return self\n"
        "    def __exit__(self, *exc):\n        return True\n"
        f"def later():\n    {swallow}\nprint(later())\n"
    )
    printed = io.StringIO()
    executor.set_sink(printed)
    executor.execute(code, filename="<t>")
    assert printed.getvalue() == "swallowed\n"  # during its cell it swallows as Python does
    later = executor._namespace["later"]
    with pytest.raises(StopIteration):  # outside a run, the budget is closed
        later()  # type: ignore[operator]


def test_uninstrumented_runtime_has_no_ticks() -> None:
    executor = RestrictedExecutor()
    executor.execute("def f():\n    for i in range(3):\n        pass", filename="<t>")
    code = executor._namespace["f"].__code__  # type: ignore[attr-defined]
    assert "_budget_" not in code.co_names


def test_reset_forgets_variables_and_own_classes_but_keeps_tools() -> None:
    executor = RestrictedExecutor()
    executor.bind_tools({"tool": lambda: 1})
    executor.execute("class A:\n    pass\nx = 1", filename="<t>")
    executor.reset()
    assert executor.guards.own_classes == set()
    assert executor.execute("tool()", filename="<t>") == "1"
    with pytest.raises(NameError):
        executor.execute("x", filename="<t>")


def test_open_is_confined_to_the_workdir(tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("secret")
    work = tmp_path / "work"
    work.mkdir()
    (work / "link").symlink_to(tmp_path / "outside.txt")
    executor = RestrictedExecutor(workdir=work)
    for path in ("../outside.txt", str(tmp_path / "outside.txt"), "link"):
        with pytest.raises(PermissionError):
            executor.execute(f"open({path!r}).read()", filename="<t>")
    assert executor.execute("open('a.txt', 'w').write('hi')", filename="<t>") == "2"
    with pytest.raises(NameError):
        RestrictedExecutor().execute("open('a.txt')", filename="<t>")


def test_refusals_are_recorded_even_when_the_code_catches_them() -> None:
    executor = RestrictedExecutor(imports=("math",))
    code = """
for attempt in ("import os", "().__class__.__bases__"):
    pass
try:
    import os
except ImportError:
    pass
try:
    ().__class__.__bases__
except Exception:
    pass
"""
    executor.execute(code, filename="<t>")
    assert [guard for guard, _ in executor.last_denials] == ["import", "guard"]
    with pytest.raises(SyntaxError):
        executor.execute("eval('1')", filename="<t>")
    assert executor.last_denials[0][0] == "compile"


def test_a_nested_run_records_its_own_refusals_and_the_outer_run_keeps_its() -> None:
    inner = RestrictedExecutor()
    outer = RestrictedExecutor()

    def nested() -> None:
        inner.execute("try:\n    import os\nexcept ImportError:\n    pass", filename="<in>")

    outer.bind_tools({"nested": nested})
    refused = "try:\n    ().__class__.__bases__\nexcept Exception:\n    pass\n"
    outer.execute(refused + "nested()\n" + refused, filename="<out>")
    assert [guard for guard, _ in inner.last_denials] == ["import"]
    assert [guard for guard, _ in outer.last_denials] == ["guard", "guard"]
    outer.execute("x = 1", filename="<out>")
    GuardError("raised by the host between runs")
    assert outer.last_denials == ()


def test_refusals_in_another_thread_never_land_in_this_threads_run() -> None:
    import contextvars
    import threading

    from safeexec.restricted.guards import _DENIALS

    executor = RestrictedExecutor()

    def elsewhere() -> None:
        GuardError("refused in a thread with no run in progress")
        executor.execute("try:\n    import os\nexcept ImportError:\n    pass", filename="<t>")

    mine: list[tuple[str, str]] = []
    _DENIALS.current = mine
    try:
        for run in (elsewhere, contextvars.copy_context().run):
            args = () if run is elsewhere else (elsewhere,)
            thread = threading.Thread(target=run, args=args)
            thread.start()
            thread.join()
            assert [guard for guard, _ in executor.last_denials] == ["import"]
    finally:
        _DENIALS.current = None
    assert mine == []


def test_in_process_results_carry_guard_denied_events(tmp_path: Path) -> None:
    from safeexec.audit.blobs import BlobStore
    from safeexec.backends.restricted import RestrictedBackend
    from safeexec.model.values import ExecRequest, GuardDenied, Limits

    session = RestrictedBackend(in_process=True).open(
        SessionSpec(
            workdir=tmp_path,
            limits=Limits(),
            blobs=BlobStore(tmp_path.with_name(tmp_path.name + "-blobs")),
        )
    )
    try:
        result = session.run(
            ExecRequest(action_id="a", code="try:\n    len.__self__\nexcept Exception:\n    pass")
        )
    finally:
        session.close()
    assert result.status.value == "ok"
    (event,) = result.events
    assert isinstance(event, GuardDenied) and "__self__" in event.detail
