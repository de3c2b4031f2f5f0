"""A reachability proof for the guards: crawl everything sandboxed code can touch, report what it
must never hold.

:func:`crawl` builds a real :class:`RestrictedExecutor` for an import allowlist, makes own objects
of every kind the runtime supports by running restricted code, and then explores from the safe
builtins, every module view, those own objects and the ``print`` collector:

* it follows every attribute name the guards allow — names from ``dir()`` of the object, of its
  type and of the type's metaclass, and every key in their MROs' ``__dict__`` — taking a plain
  ``getattr`` where the compiler emits a plain load and the real ``_getattr_`` guard otherwise;
* it calls every reachable callable with attribute-name-like arguments (``"__globals__"``,
  ``"_convert_"``, tuples and lists of such names, module names, format templates) and with own
  and host objects, positionally and as keyword arguments named by the callable's signature, and
  follows what comes back, what was raised, and what was written into container arguments;
* it enters and leaves every library context manager it reaches (``with obj as x:``, cleanly
  and with an own exception) and follows what ``__enter__`` gives.

The own objects include classes with every kind of method, own subclasses of library classes
(whose inherited methods are then probed on own receivers) and context managers of every
``contextlib`` kind, and the probe arguments include a library class written in Python (what a
decorator used on a class copies from it).

Anything of a forbidden kind that turns up is a :class:`Reached` line in the report: a real module,
a frame, a code object, a traceback, a module's globals dict, a function or module-bound builtin
from a module outside the vetted homes, a library method without its receiver
(``Counter.copy`` read off the class: host code that runs on whatever ``self`` it is given), a
metaclass or a class that builds functions or opens files, the real builtins, ``sys.modules``,
the runtime's own objects, a change to the sandbox's namespace made by host code, a write to
the real builtins or to the runtime's module globals (both checked after every probe), or a
change to a host object. The crawl is bounded by depth and by
counts, so it runs in seconds; host objects a probe changed are restored afterwards.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import itertools
import signal
import sys
import tempfile
import threading
import types
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from safeexec.capabilities.gateway import ToolDescriptor, ToolReply, tool_function
from safeexec.restricted.allowlist import (
    DATA_VIEWS,
    DENIED_ATTRIBUTES,
    IMPLEMENTATION_MODULES,
    restricted_modules,
)
from safeexec.restricted.budget import OperationBudget
from safeexec.restricted.executor import RestrictedExecutor
from safeexec.restricted.guards import CLASS_LIKE, GuardError
from safeexec.restricted.views import WorkerViews
from safeexec.restricted.views.data_views import DATA_ROOTS, is_data_object

__all__ = ["CrawlLimits", "CrawlReport", "Reached", "crawl", "crawl_modes"]

from safeexec.restricted_proof.reachability_checks import (
    CrawlLimits,
    CrawlReport,
    Reached,
    _Checks,
)
from safeexec.restricted_proof.reachability_probes import (
    _ALIAS_PROBES,
    _FILENAME,
    _KEYWORD_PROBES,
    _MUTABLE,
    _PASS_THROUGH_KEYWORDS,
    _PROBE_OBJECTS,
    _RUNTIME_HOMES,
    _SCALARS,
    OWN_KINDS,
    PROBE_MODULES,
    PROBE_NAMES,
    PROBE_TEMPLATES,
    _behaviour,
    _candidate_names,
    _identity,
    _is_bound,
    _is_data,
    _items,
    _ProbeTimeout,
    _Snapshot,
)


def crawl_modes(
    imports: tuple[str, ...], *, limits: CrawlLimits | None = None
) -> tuple[CrawlReport, ...]:
    """:func:`crawl` the runtime as the worker runs it and as in-process runs it (counting)."""
    return tuple(crawl(imports, counting=counting, limits=limits) for counting in (False, True))


def crawl(
    imports: tuple[str, ...],
    *,
    counting: bool = False,
    limits: CrawlLimits | None = None,
    data_stack: bool = False,
) -> CrawlReport:
    """Crawl what restricted code under the import allowlist ``imports`` can reach.

    ``data_stack`` adds the worker-only views of numpy, pandas and matplotlib to the roots (the
    worker mode only: in-process they do not exist). Their surface is too large for the crawl's
    bounds to be exhaustive, so they are crawled on their own (``tests/restricted``) and
    held to the escape-critical kinds, with the kernel layers behind them; see data_views.py.
    """
    with (
        tempfile.TemporaryDirectory(prefix="safeexec-reach-") as workdir,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        crawler = _Crawler(imports, counting, limits or CrawlLimits(), Path(workdir), data_stack)
        return crawler.run()


def _data_stack_code(obj: object) -> bool:
    """Is ``obj`` numpy, pandas or matplotlib code (or bound to one of their objects)?

    Its attributes are crawled like everything else, but it is not called with probes: its C
    entry points take raw shapes, strides and buffers, and probe arguments crash the process
    (a segfault the confined worker's kernel layers bound, which is why these views exist only
    there; see data_views.py).
    """
    receiver = getattr(obj, "__self__", None)
    module = getattr(obj, "__module__", None)
    return (
        is_data_object(obj)
        or (receiver is not None and is_data_object(receiver))
        or (isinstance(module, str) and module.split(".")[0] in DATA_ROOTS)
    )


@dataclass(slots=True)
class _Node:
    obj: object
    path: str
    depth: int
    calls: int


@dataclass(slots=True)
class _Probe:
    value: Callable[[], object]
    label: str


class _Crawler(_Checks):
    def __init__(
        self,
        imports: tuple[str, ...],
        counting: bool,
        limits: CrawlLimits,
        workdir: Path,
        data_stack: bool = False,
    ) -> None:
        self.imports = tuple(imports)
        self.counting = counting
        self.limits = limits
        self.sink = io.StringIO()
        self.executor = RestrictedExecutor(
            imports=self.imports,
            workdir=workdir,
            count_operations=counting,
            views=None if counting else WorkerViews,
            output_bytes=4096,
            sink=self.sink,
        )
        descriptor = ToolDescriptor(name="probe_tool", description="a tool proxy")
        self.executor.bind_tools(
            {"probe_tool": tool_function(descriptor, lambda name, args: ToolReply(ok=True))}
        )
        self.reached: list[Reached] = []
        self.seen: set[object] = set()
        self.probed: set[object] = set()
        self.bound: set[object] = set()
        self.keep: list[object] = []
        self.queue: deque[_Node] = deque()
        self.calls = 0
        self.timeouts = 0
        self.objects = 0
        self.truncated = False
        self.timed = False
        self.snapshots: dict[int, _Snapshot] = {}
        self.vetted: set[int] = set()
        # Every module the runtime has a view of here (the data stack's only in the worker).
        allowed = [
            m
            for m in restricted_modules(self.imports, in_process=counting)
            if data_stack or m not in DATA_VIEWS
        ]
        self.homes = tuple(
            {
                *allowed,
                *_RUNTIME_HOMES,
                *(h for m in allowed for h in IMPLEMENTATION_MODULES.get(m, ())),
            }
        )
        self.allowed_modules = allowed

    # -- setup ------------------------------------------------------------------------------------
    def run(self) -> CrawlReport:
        namespace = self.executor._namespace
        table = namespace["__builtins__"]
        assert isinstance(table, dict)
        self.table = table
        self.namespace = namespace
        roots: list[tuple[object, str]] = [(v, f"builtins.{k}") for k, v in sorted(table.items())]
        for name in self.allowed_modules:
            if name == "__future__":
                continue
            try:
                view = self.executor._import(name, fromlist=("x",))
            except ImportError:
                continue
            roots.append((view, name))
        # Host state as the code first finds it: snapshot before any own code or probe runs.
        self._snapshot_host(roots)
        for name in self.allowed_modules:
            # Module globals are host state too (``EnumType._convert_`` writes members into them).
            module = sys.modules.get(name)
            if module is not None:
                self._remember(vars(module), f"the globals of {name}")
        self.vetted = {id(v) for v, _ in roots}
        for root, _ in roots:
            self.vetted.update(id(v) for v in getattr(root, "__dict__", {}).values())
        own_kinds, impossible = self._make_own_objects()
        self._execute(_PROBE_OBJECTS)
        collector = namespace["_print"]
        before = dict(namespace)
        for name, value in sorted(namespace.items(), key=lambda kv: kv[0]):
            if name.startswith("_") or name in table:
                continue
            roots.append((value, name))
        roots.append((collector, "<print collector>"))
        roots.append((namespace.get("print", getattr(collector, "_call_print", None)), "print"))
        roots.extend((s, repr(s)) for s in (*PROBE_NAMES, *PROBE_MODULES, *PROBE_TEMPLATES))
        self.namespace_before = before
        self.pool = self._pool()
        for obj, path in roots:
            self._push(obj, path, 0, 0)
        # After the own objects are made (the runtime imports its view modules as they are used).
        self._watch_interpreter()
        with self._open_budget(), self._probe_timer():
            while self.queue:
                node = self.queue.popleft()
                self._visit(node)
        self._check_writes("after the crawl")
        self._check_host_objects(None, "after the crawl")
        return CrawlReport(
            imports=self.imports,
            counting=self.counting,
            objects=self.objects,
            calls=self.calls,
            timeouts=self.timeouts,
            own_kinds=own_kinds,
            impossible_kinds=impossible,
            reached=tuple(self.reached),
            truncated=self.truncated,
        )

    def _execute(self, code: str) -> None:
        self.executor.execute(code, filename=_FILENAME)

    def _make_own_objects(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        made: list[str] = []
        impossible: list[str] = []
        for kind, code in OWN_KINDS.items():
            try:
                self._execute(code)
            except (ImportError, SyntaxError):
                impossible.append(kind)
            else:
                made.append(kind)
        return tuple(made), tuple(impossible)

    @contextlib.contextmanager
    def _open_budget(self) -> Iterator[None]:
        """Own functions the probes call draw from an open budget (a counting run's is closed)."""
        budget = OperationBudget(2**62)
        self.executor.cell.budget = budget
        self.namespace["_budget_"] = budget.counter
        try:
            yield
        finally:
            self.executor.cell.budget = OperationBudget(1)
            self.executor.cell.budget.stop("closed")
            self.namespace["_budget_"] = self.executor.cell.budget.counter

    def _pool(self) -> list[_Probe]:
        """Arguments for the probes, the likeliest openers first (keyword probes use a prefix)."""
        ns = self.namespace
        host_function = self._first_host(lambda v: isinstance(v, types.FunctionType))
        host_class = self._first_host(lambda v: isinstance(v, type))
        probes: list[_Probe] = []
        if host_function is not None:
            probes.append(_Probe(lambda: host_function[0], host_function[1]))
        probes += [
            _Probe(lambda: ns["probe_function"], "probe_function"),
            _Probe(lambda: PROBE_NAMES, "PROBE_NAMES"),
            _Probe(lambda: "__globals__", "'__globals__'"),
            _Probe(lambda: "uuid", "'uuid'"),
            _Probe(lambda: ns["probe_public"], "probe_public"),
            _Probe(lambda: ns["ProbeClass"], "ProbeClass"),
            _Probe(lambda: ns["probe_instance"], "probe_instance"),
        ]
        if host_class is not None:
            probes.append(_Probe(lambda: host_class[0], host_class[1]))
        # A class written in Python: a helper that copies or merges its ``__dict__`` hands out
        # its methods without a receiver (``update_wrapper`` of a decorator used on it).
        python_class = self._first_host(
            lambda v: (
                isinstance(v, type)
                and any(isinstance(f, types.FunctionType) for f in vars(v).values())
            )
        )
        if python_class is not None and python_class != host_class:
            probes.append(_Probe(lambda: python_class[0], python_class[1]))
        probes += [
            _Probe(lambda: ns["probe_true"], "probe_true"),
            _Probe(lambda: list(PROBE_NAMES), "list(PROBE_NAMES)"),
            _Probe(dict, "{}"),
            _Probe(list, "[]"),
            _Probe(lambda: None, "None"),
            _Probe(lambda: True, "True"),
            _Probe(lambda: len, "len"),
            _Probe(lambda: "__dict__", "'__dict__'"),
            _Probe(lambda: "os", "'os'"),
            _Probe(lambda: PROBE_TEMPLATES[2], repr(PROBE_TEMPLATES[2])),
        ]
        # Typing and generic aliases: helpers hand out what an alias holds (its origin, its
        # arguments), the real ``type`` among them.
        probes += [
            _Probe(lambda name=name: ns[name], name)  # type: ignore[misc]
            for name in _ALIAS_PROBES
            if name in ns
        ]
        return probes

    def _first_host(self, test: Callable[[object], bool]) -> tuple[object, str] | None:
        for name in sorted(self.allowed_modules):
            view = self.executor._views.get(name)
            if view is None:
                continue
            for attr, value in sorted(vars(view).items()):
                if not attr.startswith("_") and test(value):
                    return value, f"{name}.{attr}"
        return None

    # -- the walk ---------------------------------------------------------------------------------
    def _push(self, obj: object, path: str, depth: int, calls: int) -> None:
        if depth > 0 and isinstance(obj, _SCALARS):
            return  # plain values: nothing behind them the type does not already show
        if isinstance(obj, _MUTABLE) and calls == 0 and id(obj) in self.snapshots:
            self.reached.append(
                Reached(kind="shared container", path=path, detail="a container the host shares")
            )
        plain = _is_data(obj) or (
            isinstance(obj, BaseException) and not self.executor.guards.is_own(obj)
        )
        if plain and not self._unseen(_items(obj)):
            return  # a container or exception of things already visited adds nothing
        if _is_bound(obj):
            behaviour = _behaviour(obj)
            if behaviour in self.bound:
                return  # the same method of another receiver: probed once is enough
            self.bound.add(behaviour)
        key = _identity(obj)
        if key in self.seen:
            return
        if self.objects >= self.limits.max_objects:
            self.truncated = True
            return
        self.seen.add(key)
        self.keep.append(obj)
        self.objects += 1
        problem = self._forbidden(obj)
        if problem is not None:
            self.reached.append(Reached(kind=problem[0], path=path, detail=problem[1]))
            return
        self.queue.append(_Node(obj, path, depth, calls))

    def _unseen(self, items: list[tuple[object, object]]) -> bool:
        return any(
            not isinstance(v, _SCALARS) and _identity(v) not in self.seen
            for _, value in items
            for v in (value if isinstance(value, tuple) else (value,))
        )

    def _visit(self, node: _Node) -> None:
        obj = node.obj
        if _is_data(obj) or (
            isinstance(obj, BaseException) and not self.executor.guards.is_own(obj)
        ):
            if node.depth < self.limits.max_depth:
                for index, item in _items(obj):
                    self._push(item, f"{node.path}[{index}]", node.depth + 1, node.calls)
            return
        if node.depth < self.limits.max_depth:
            for name in sorted(_candidate_names(obj)):
                try:
                    value = self._load(obj, name)
                except GuardError:
                    continue
                except Exception:
                    continue
                self._push(value, f"{node.path}.{name}", node.depth + 1, node.calls)
            for index, item in _items(obj):
                self._push(item, f"{node.path}[{index}]", node.depth + 1, node.calls)
        if node.calls < self.limits.max_call_depth and not _data_stack_code(obj):
            self._probe_with(node)
        if (
            callable(obj)
            and node.calls < self.limits.max_call_depth
            and not self._own_code(obj)
            and not _data_stack_code(obj)
        ):
            behaviour = _behaviour(obj)
            if behaviour not in self.probed:
                self.probed.add(behaviour)
                self._probe_calls(node)

    @contextlib.contextmanager
    def _probe_timer(self) -> Iterator[None]:
        """The handler that stops a probe looping in host Python code (``Sequence.index`` of a
        sequence that never ends), installed for the whole walk; only the main thread has the
        timer signal."""
        self.timed = threading.current_thread() is threading.main_thread()
        if not self.timed:
            yield
            return

        def expire(signum: int, frame: object) -> None:
            raise _ProbeTimeout

        previous = signal.signal(signal.SIGALRM, expire)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    @contextlib.contextmanager
    def _deadline(self) -> Iterator[None]:
        """Stop the probe inside after ``probe_seconds`` (see ``_probe_timer``)."""
        if not self.timed:
            yield
            return
        signal.setitimer(signal.ITIMER_REAL, self.limits.probe_seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def _own_code(self, obj: object) -> bool:
        """Is ``obj`` restricted code (its body is guarded; probing it shows nothing new)?"""
        function = getattr(obj, "__func__", obj)
        return isinstance(function, types.FunctionType) and function.__globals__ is self.namespace

    def _load(self, obj: object, name: str) -> object:
        """What ``obj.name`` gives restricted code: a plain load, or the ``_getattr_`` guard the
        namespace holds (the guard's fast paths included)."""
        if name.startswith("_") or name in DENIED_ATTRIBUTES:
            guard = self.namespace["_getattr_"]
            assert callable(guard)
            return guard(obj, name)
        if isinstance(obj, CLASS_LIKE):
            return self.executor.guards.class_attribute(obj, name)
        return getattr(obj, name)

    def _probe_calls(self, node: _Node) -> None:
        func = node.obj
        probes = self._argument_sets(func, first_call=node.calls == 0)
        for args, kwargs, label in itertools.islice(probes, self.limits.max_calls_per_callable):
            if self.calls >= self.limits.max_calls:
                self.truncated = True
                return
            values = [p.value() for p in args]
            keywords = {k: p.value() for k, p in kwargs.items()}
            path = f"{node.path}({label})"
            touched = [*values, *keywords.values(), getattr(func, "__self__", None), func]
            self._call(node, path, touched, func, tuple(values), keywords)
            for index, value in enumerate([*values, *keywords.values()]):
                if isinstance(value, dict | list) and value:
                    self._push(value, f"{path} -> argument {index}", node.depth + 1, node.calls + 1)

    def _call(
        self,
        node: _Node,
        path: str,
        touched: list[object],
        func: object,
        args: tuple[object, ...],
        kwargs: dict[str, object] | None = None,
    ) -> None:
        """One probe call under the deadline; then the checks of the namespace, the interpreter
        and the host objects it ``touched``, and what it gave (a result or an error) is crawled."""
        self.calls += 1
        try:
            with self._deadline():
                result: object = func(*args, **(kwargs or {}))  # type: ignore[operator]
                # What the compiled call does with a result (``_ret_``: never a metaclass).
                result = self.executor.guards.returned(result)
        except _ProbeTimeout:
            self.timeouts += 1
            result = None
        except Exception as exc:
            result = exc
            # What a handler binding it does first (``_exc_``: no metaclass in its fields).
            try:
                self.executor.guards.caught_exception(exc)
            except GuardError as refused:
                result = refused
        self._check_writes(path)
        self._check_planted(path)
        self._check_host_objects(touched, path)
        if result is not None:
            self._push(result, path, node.depth + 1, node.calls + 1)

    def _probe_with(self, node: _Node) -> None:
        """``with obj as x:``: the type's ``__enter__`` gives ``x`` (crawled), then ``__exit__``
        runs as the block ends, cleanly and with an own exception."""
        obj, kind = node.obj, type(node.obj)
        enter, leave = getattr(kind, "__enter__", None), getattr(kind, "__exit__", None)
        if enter is None or leave is None or self._own_code(enter) or self._own_code(leave):
            return
        if self.calls + 3 > self.limits.max_calls:
            self.truncated = True
            return
        self._call(node, f"{node.path}.__enter__()", [obj], enter, (obj,))
        self._call(
            node, f"{node.path}.__exit__(None, None, None)", [obj], leave, (obj, None, None, None)
        )
        error = self.namespace.get("exception")
        if isinstance(error, BaseException):
            self._call(node, f"{node.path}.__enter__()", [obj], enter, (obj,))
            label = f"{node.path}.__exit__(Oops, exception, traceback)"
            self._call(
                node, label, [obj, error], leave, (obj, type(error), error, error.__traceback__)
            )

    def _argument_sets(
        self, func: object, *, first_call: bool
    ) -> Iterator[tuple[tuple[_Probe, ...], dict[str, _Probe], str]]:
        """Positional probes (one argument from the whole pool, several from its head), then
        keyword probes for every optional parameter (and pass-through ``**kwargs`` names)."""
        try:
            signature: inspect.Signature | None = inspect.signature(func)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            signature = None
        # What a call returned is probed again with the head of the pool only.
        pool = self.pool if first_call else self.pool[:9]
        receivers = pool
        objclass = getattr(func, "__objclass__", None)
        if isinstance(func, types.WrapperDescriptorType | types.MethodDescriptorType) and (
            isinstance(objclass, type)
        ):
            # An unbound C method takes only instances of its class as ``self``.
            receivers = [p for p in pool if isinstance(p.value(), objclass)]
            if not receivers:
                return
        if signature is None:
            required, optional, var_positional, pass_through = 1, [], True, False
        else:
            params = list(signature.parameters.values())
            required = sum(
                p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
                for p in params
            )
            optional = [
                p.name
                for p in params
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is not p.empty
            ]
            var_positional = any(p.kind is p.VAR_POSITIONAL for p in params)
            # ``**kwargs`` of Python code may pass names on to a helper; C code's does not.
            pass_through = any(p.kind is p.VAR_KEYWORD for p in params) and isinstance(
                getattr(func, "__func__", func), types.FunctionType
            )
        heads: list[tuple[_Probe, ...]]
        if required == 0:
            heads = [()]
            yield (), {}, ""
            if var_positional or optional:
                heads += [(p,) for p in receivers]
        elif required == 1:
            heads = [(p,) for p in receivers]
        else:
            width = 9 if required == 2 else 6
            rest = list(itertools.product(pool[:width], repeat=min(required, 3) - 1))
            heads = [(r, *tail) for r in receivers[:width] for tail in rest]
            heads = [h + (pool[0],) * (required - len(h)) for h in heads]
        yield from ((h, {}, ", ".join(p.label for p in h)) for h in heads if h)
        if signature is None:
            for a, b in itertools.product(receivers[:9], pool[:9]):
                yield (a, b), {}, f"{a.label}, {b.label}"
        if not first_call:
            return
        names = optional + (
            [k for k in _PASS_THROUGH_KEYWORDS if k not in optional] if pass_through else []
        )
        values = [p for p in pool if p.label in _KEYWORD_PROBES]
        for head in heads[:2]:
            for name in names:
                for value in values:
                    label = ", ".join([*(p.label for p in head), f"{name}={value.label}"])
                    yield head, {name: value}, label
