"""``RestrictedExecutor``: compiles cells restricted and runs them in a persistent namespace."""

from __future__ import annotations

import ast
import builtins
import contextvars
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from safeexec._support.memo import BoundedCache
from safeexec._support.seeding import restricted_random
from safeexec.errors import ToolError
from safeexec.restricted.allowlist import (
    _BUILTIN_EXCEPTIONS,
    _SAFE_BUILTIN_NAMES,
    BUILT_VIEWS,
    FRESH_VALUES,
    LAZY_INTERNAL_IMPORTS,
    MODULE_ALLOWLISTS,
    WORKER_ONLY_VIEWS,
    has_view,
    module_matches,
)
from safeexec.restricted.budget import (
    _COUNTED_RANGE_ABOVE,
    OperationBudget,
    _closed_budget,
    _counted,
    _CountedRange,
)
from safeexec.restricted.cell import Cell, ViewSet, ViewsFactory
from safeexec.restricted.cell_threads import CellThreads
from safeexec.restricted.derived_views import (
    DERIVED_DENIED,
    derived_names,
    refusal_reason,
)
from safeexec.restricted.guards import (
    _DENIALS,
    ABSENT,
    INLINE_REFUSED,
    GuardError,
    Guards,
    ModuleView,
    PrintCollector,
    RuntimeClass,
    SandboxExit,
    TextSink,
    _is_module,
    _record_denial,
    _SinkProxy,
    _view_value,
    checked_items,
    why,
)
from safeexec.restricted.stdlib_wrappers import _SPECIAL_VALUES
from safeexec.restricted.transformer import CountingTransformer, SafeexecTransformer
from safeexec.restricted.workdir_files import Workdir, WorkdirOps

# Compiled cells by (transformer, code): agents resend the same cell, and the transform costs
# more than running most cells. Code objects are immutable, so sharing them is safe; each use
# gets a copy carrying its own cell's file name. Only cells that compiled are stored (a refusal
# records its denials each time).
_Compiled = tuple[types.CodeType, types.CodeType | None]
_COMPILED: BoundedCache[tuple[type, str], _Compiled] = BoundedCache(
    max_entries=256, max_size=4_000_000
)


class RestrictedExecutor(metaclass=RuntimeClass):
    """Runs cells of restricted Python in a persistent namespace (the ``Executor`` protocol).

    ``imports`` is the policy's module allowlist (entries may end in ``.*``); only modules also in
    :data:`MODULE_ALLOWLISTS` can be imported. ``workdir`` enables an ``open`` confined beneath
    it. ``count_operations`` compiles budget ticks into loops and calls (the in-process mode);
    ``output_bytes`` caps the ``printed`` collector. ``seed`` seeds the code's own ``random``
    generator (as ``Session(seed=...)`` seeds native code's), again on every :meth:`reset`.
    ``views`` makes the module views of :data:`WORKER_ONLY_VIEWS` for the executor's
    :class:`Cell` (the confined worker passes ``safeexec.restricted.views.WorkerViews``); without
    it, as in the host process, the runtime is the core and the pure stdlib modules, and importing
    a worker-only module is refused with where it runs.
    """

    def __init__(
        self,
        *,
        imports: tuple[str, ...] = (),
        workdir: Path | None = None,
        count_operations: bool = False,
        output_bytes: int = 1024 * 1024,
        sink: TextSink | None = None,
        seed: int | None = None,
        views: ViewsFactory | None = None,
    ) -> None:
        self._imports = tuple(imports)
        self._make_views = views
        self._view_set: ViewSet | None = None
        self._transformer = CountingTransformer if count_operations else SafeexecTransformer
        self._counting = count_operations
        self._output_bytes = output_bytes
        self._tools: dict[str, Callable[..., object]] = {}
        # The budget between runs, made once (every use of a closed budget raises alike).
        self._closed = _closed_budget()
        # What views may use of this executor; its fields are this executor's state.
        self.cell = Cell(
            guards=Guards(),
            budget=self._closed,
            sink=sink if sink is not None else _SinkProxy(),
            files=None if workdir is None else WorkdirOps(Workdir(Path(workdir).resolve())),
            counting=count_operations,
        )
        self.cell.threads = CellThreads(self.cell, on_stop=self._close_namespace_budget)
        self._views: dict[str, ModuleView] = {}
        self._namespace: dict[str, object] = {}
        # The cell this executor compiled last: (code, file name, code objects), checked before
        # the shared cache (an agent resends its cell; the same transformer made it).
        self._last_compiled: tuple[str, str, _Compiled] | None = None
        # ``print`` of every run: restarted (emptied, given the current sink) as each run begins.
        self._printer = PrintCollector(self.cell.sink, cap_bytes=output_bytes)
        self._seed = seed
        self.last_denials: tuple[tuple[str, str], ...] = ()
        self.reset()

    @property
    def guards(self) -> Guards:
        """The guards of the current namespace (new on every :meth:`reset`)."""
        return self.cell.guards

    def __reduce__(self) -> str | tuple[object, ...]:
        # Sandboxed code holds bound methods of this object (``getattr``, ``print``, ``open``);
        # ``copy.deepcopy(open, memo)`` would copy it and leave the copy in ``memo``.
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")

    # -- the Executor protocol -------------------------------------------------------------------
    def reset(self) -> None:
        cell = self.cell
        cell.threads.stop_all()
        cell.guards = Guards()
        self._random = restricted_random(self._seed)  # a fresh interpreter starts seeded
        self._views = {}
        self._view_set = None if self._make_views is None else self._make_views(cell)
        if self._view_set is not None:
            cell.guards.mediator = self._view_set.mediate
        self._namespace = self._fresh_namespace()

    def bind_tools(self, tools: Mapping[str, Callable[..., object]]) -> None:
        for name in tools:
            if not name.isidentifier() or name.startswith("_"):
                raise ValueError(f"tool name={name!r} is not a public identifier; rename the tool")
        self._tools = dict(tools)
        self._namespace.update(self._tools)

    def set_sink(self, sink: TextSink) -> None:
        """Send ``print`` output of later cells to ``sink`` instead of ``sys.stdout``."""
        self.cell.sink = sink

    def execute(
        self, code: str, *, filename: str, budget: OperationBudget | None = None
    ) -> str | None:
        """Compile ``code`` restricted and run it; ``budget`` bounds a counting executor's run.

        Refusals by the compiler raise ``SyntaxError`` naming every offending line.
        """
        outer = _DENIALS.current
        denials: list[tuple[str, str]] = []
        _DENIALS.current = denials
        try:
            body, final = self._compile(code, filename)
            return self._run(body, final, budget)
        finally:
            _DENIALS.current = outer
            self.last_denials = tuple(denials)

    def execute_module(
        self, tree: ast.Module, *, filename: str, budget: OperationBudget | None = None
    ) -> None:
        """Run an already-built module (the DSL compiler's output) under the same transformer,
        guards and budget as source text; the tree is consumed."""
        outer = _DENIALS.current
        denials: list[tuple[str, str]] = []
        _DENIALS.current = denials
        try:
            errors: list[str] = []
            body = self._compile_tree(tree, filename, "exec", errors)
            if errors or body is None:
                for error in errors:
                    _record_denial("compile", error)
                raise SyntaxError("restricted mode refused the code:\n" + "\n".join(errors))
            self._run(body, None, budget)
        finally:
            _DENIALS.current = outer
            self.last_denials = tuple(denials)

    def _run(
        self, body: types.CodeType, final: types.CodeType | None, budget: OperationBudget | None
    ) -> str | None:
        namespace = self._namespace
        cell = self.cell
        threads = cell.threads
        # In-process, a thread an earlier cell could not stop (it was inside a C operation) is
        # stopped again before this cell's budget opens. (Most cells start no thread: the idle
        # check is made here, one call fewer.)
        if not threads.idle():
            threads.stop_all()
        self._printer.restart(cell.sink)
        cell.budget = budget if budget is not None else OperationBudget(2**62)
        namespace["_budget_"] = cell.budget.counter
        try:
            try:
                # A context of its own: a context variable the code sets (a ``decimal`` context
                # entered and never left) ends with the cell instead of staying on the thread,
                # which in-process is the host's.
                value = contextvars.Context().run(_run_cell, body, final, namespace)
            except BaseException:
                threads.stop_all()
                raise
            if not threads.idle():
                threads.end_of_cell()  # a cell's threads end with it (concurrency_views.py)
            if value is None:
                return None
            namespace["_"] = value
            return repr(value)
        except Exception:
            raise
        except BaseException as exc:  # SystemExit, KeyboardInterrupt, user BaseException subclasses
            raise SandboxExit(f"{type(exc).__name__}{exc.args!r} ended the cell") from None
        finally:
            # Code that runs later (finalizers, callbacks) finds an exhausted budget.
            cell.budget = self._closed
            namespace["_budget_"] = self._closed.counter

    # -- internals --------------------------------------------------------------------------------
    def _close_namespace_budget(self) -> None:
        """Every loop step and call of the current namespace's code raises from now on (the
        cell's threads are being stopped); the next run opens its own budget."""
        self._namespace["_budget_"] = _closed_budget().counter

    def _compile(self, code: str, filename: str) -> _Compiled:
        last = self._last_compiled
        if last is not None and last[0] == code and last[1] == filename:
            return last[2]  # the cell this executor ran last, resent under the same name
        key = (self._transformer, code)
        compiled = _COMPILED.get(key)
        if compiled is None:
            compiled = self._compile_restricted(code, filename)
            _COMPILED.put(key, compiled, size=len(code))
        elif compiled[0].co_filename != filename:
            body, final = compiled
            compiled = (_renamed(body, filename), final and _renamed(final, filename))
        self._last_compiled = (code, filename, compiled)
        return compiled

    def _compile_restricted(self, code: str, filename: str) -> _Compiled:
        try:
            tree = ast.parse(code, filename=filename, mode="exec")
        except SyntaxError:
            raise
        final: ast.Expression | None = None
        last = tree.body[-1] if tree.body else None
        if isinstance(last, ast.Expr):
            tree.body.pop()
            final = ast.Expression(body=last.value)
        errors: list[str] = []
        body_code = self._compile_tree(tree, filename, "exec", errors)
        final_code = None if final is None else self._compile_tree(final, filename, "eval", errors)
        if errors or body_code is None:
            for error in errors:
                _record_denial("compile", error)
            raise SyntaxError("restricted mode refused the code:\n" + "\n".join(errors))
        return body_code, final_code

    def _compile_tree(
        self, tree: ast.Module | ast.Expression, filename: str, mode: str, errors: list[str]
    ) -> types.CodeType | None:
        # RestrictedPython's compile_restricted() compiles with the flags of its own module, which
        # has ``from __future__ import annotations``: every annotation would become a string and
        # dataclasses would look the class's module up in sys.modules. Same transformer; own
        # compile() call.
        found: list[str] = []
        warnings: list[str] = []
        self._transformer(found, warnings, {}).visit(tree)
        if found:
            errors.extend(found)
            return None
        return compile(tree, filename, mode, dont_inherit=True)

    def _fresh_namespace(self) -> dict[str, object]:
        guards = self.guards
        namespace: dict[str, object] = {
            "__builtins__": self._builtins(guards),
            "__name__": "__sandbox__",  # not "__main__": see the transformer's visit_Name
            "_getattr_": guards.read_guard,
            "_cattr_": guards.class_attribute,
            "_plain_": guards.plain_types,
            "_vread_": guards.checked_types,
            "_got_": guards.read_value,
            "_rpass_": guards.read_plain,
            "_augwrite_": guards.augmented_target,
            "_msubject_": guards.match_subject,
            "_mvalue_": guards.match_value,
            "_mclass_": guards.match_class,
            "_write_": guards.write_guard,
            "_type_": type,
            "_own_": guards.own_classes,
            "_simple_": guards.simple_own,
            "_lookup_": builtins.getattr,
            "_absent_": ABSENT,
            "_refused_": INLINE_REFUSED,
            "_attribute_error_": AttributeError,
            "_apply_": guards.apply,
            "_ret_": guards.returned,
            "_pass_": guards.returned_plain,
            "_exc_": guards.caught_exception,
            "_next_": next,
            "_budget_": self.cell.budget.counter,
            "_caught_": self.cell.threads.check,
            "_print": self._printer,
        }
        namespace.update(self._tools)
        return namespace

    def _builtins(self, guards: Guards) -> dict[str, object]:
        table: dict[str, object] = {name: getattr(builtins, name) for name in _SAFE_BUILTIN_NAMES}
        table.update(_BUILTIN_EXCEPTIONS)
        table.update(
            {
                "getattr": guards.safe_getattr,
                "hasattr": guards.safe_hasattr,
                "setattr": guards.safe_setattr,
                "delattr": guards.safe_delattr,
                "type": guards.safe_type,
                "dir": guards.safe_dir,
                "vars": guards.safe_vars,
                "__build_class__": guards.build_class,
                "__import__": self._import,
                "GuardError": GuardError,
                "ToolError": ToolError,
            }
        )
        if self.cell.files is not None:
            table["open"] = self.cell.files.open
        if self._counting:
            counted_range = self._range  # one bound method, so ``type(range(3)) is range``
            table["range"] = counted_range
            table["iter"] = self._iter
            guards.type_aliases.update({range: counted_range, _CountedRange: counted_range})
        return table

    # C-level consumers (``sum``, ``list``, ``x in it``, ``deque(it, maxlen=0)``) run no Python
    # code between items, so no tick can stop them; what they consume is made to count instead.
    def _range(self, *args: int) -> range | _CountedRange:
        """``range``; one longer than ``_COUNTED_RANGE_ABOVE`` iterates through the budget."""
        return self._range_value(range(*args))

    def _range_value(self, value: range) -> range | _CountedRange:
        try:
            short = len(value) <= _COUNTED_RANGE_ABOVE
        except OverflowError:
            short = False
        return value if short else _CountedRange(value, self)

    def _iter(self, source: object, *sentinel: object) -> Iterator[object]:
        """``iter``; ``iter(callable, sentinel)`` may never end, so it counts."""
        if sentinel:
            # It calls ``source`` per item: each is checked as a call's result would be.
            made = checked_items(iter(source, *sentinel))  # type: ignore[call-overload]
            return _counted(self.cell, made)
        return iter(source)  # type: ignore[call-overload]

    def _import_allowed(self, name: str) -> bool:
        return module_matches(name, self._imports)

    def _import(
        self,
        name: str,
        globals: object = None,
        locals: object = None,
        fromlist: Iterable[str] | None = (),
        level: int = 0,
    ) -> ModuleView:
        if level != 0:
            raise ImportError("relative imports are not available in restricted mode")
        needed_by = LAZY_INTERNAL_IMPORTS.get(name)
        views = self._view_set
        if needed_by is None and views is not None and views.is_internal(name):
            needed_by = frozenset({name.split(".", 1)[0]})
        if needed_by is not None and any(self._import_allowed(m) for m in needed_by):
            import importlib

            importlib.import_module(name)  # for the C caller, which reads sys.modules
            return ModuleView(name, {})
        if views is None and name in WORKER_ONLY_VIEWS and self._import_allowed(name):
            _record_denial("import", name)
            raise ImportError(
                f"{name!r} has a view only in the confined worker: run the code with mode "
                "'restricted' (the worker) or 'native'; in the host process restricted mode "
                "offers the core and the pure stdlib modules"
            )
        if not has_view(name, in_process=views is None) or not self._import_allowed(name):
            _record_denial("import", name)
            raise ImportError(f"import of {name!r} is not allowed by the policy in restricted mode")
        view = self._view(name)
        for item in fromlist or ():
            # A denied name says why (Python's own message would name no module and no reason).
            if refusal_reason(name, item) is not None and not hasattr(view, item):
                raise ImportError(
                    f"cannot import name {item!r} from restricted module {name!r} "
                    f"({why(name, item)})"
                )
        if fromlist or "." not in name:
            return view
        return self._view(name.split(".", 1)[0])

    def _provided_view(self, name: str) -> ModuleView:
        """A view of :data:`WORKER_ONLY_VIEWS` (``os``, ``sqlite3``, ``numpy``…), made by the
        executor's view set: never the real module, and only where the executor has views."""
        if self._view_set is None:
            raise ImportError(f"{name!r} has a view only in the confined worker")
        source = self._view_set.attributes(name)
        if name in BUILT_VIEWS:
            attributes = {a: source[a] for a in MODULE_ALLOWLISTS[name] if a in source}
            missing = MODULE_ALLOWLISTS[name] - set(source)
        else:  # the data stack: the view set applies its own denylist
            attributes = dict(source)
            missing = frozenset()
        fresh = {a: attributes.pop(a) for a in list(attributes) if f"{name}.{a}" in FRESH_VALUES}
        # A package view's submodules (``os.path``, ``concurrent.futures``, ``numpy.linalg``),
        # when allowed.
        for child in sorted(WORKER_ONLY_VIEWS):
            parent, _, leaf = child.rpartition(".")
            wanted = leaf in missing or name not in BUILT_VIEWS
            if parent == name and wanted and self._import_allowed(child):
                attributes[leaf] = self._view(child)
        view = ModuleView(name, attributes, fresh)  # type: ignore[arg-type]
        self._views[name] = view
        return view

    def _view(self, name: str) -> ModuleView:
        if name in self._views:
            return self._views[name]
        if name in WORKER_ONLY_VIEWS:
            return self._provided_view(name)
        import importlib

        module = importlib.import_module(name)
        allowed = MODULE_ALLOWLISTS[name]
        if name in DERIVED_DENIED:
            allowed = allowed & derived_names(name)  # the golden caps what this Python derives
        attributes: dict[str, object] = {}
        if name == "re" and self._counting:
            # In-process a backtracking pattern would hang the host: ``re`` runs time-limited.
            from safeexec.restricted.timed_regex import timed_re_attributes

            timed = timed_re_attributes(self.cell)
            attributes = {a: timed[a] for a in allowed if a in timed}
            view = ModuleView(name, attributes)
            self._views[name] = view
            return view
        for attr in allowed:
            if not hasattr(module, attr):
                continue
            full = f"{name}.{attr}"
            value = getattr(module, attr)
            if _is_module(value):
                if full in MODULE_ALLOWLISTS and self._import_allowed(full):
                    attributes[attr] = self._view(full)
                continue
            if name == "random" and getattr(value, "__self__", None) is not None:
                value = getattr(self._random, attr)  # the code's own generator, not the host's
            special = _SPECIAL_VALUES.get(full)
            attributes[attr] = _view_value(value) if special is None else special(self.cell, value)
        view = ModuleView(name, attributes)
        self._views[name] = view
        return view


def _run_cell(
    body: types.CodeType, final: types.CodeType | None, namespace: dict[str, object]
) -> object:
    exec(body, namespace)
    return None if final is None else eval(final, namespace)


def _renamed(code: types.CodeType, filename: str) -> types.CodeType:
    """``code`` and the code objects nested in it, carrying ``filename``."""
    consts = tuple(
        _renamed(const, filename) if isinstance(const, types.CodeType) else const
        for const in code.co_consts
    )
    return code.replace(co_filename=filename, co_consts=consts)
