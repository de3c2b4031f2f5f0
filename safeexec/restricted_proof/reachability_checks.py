"""What the reachability crawl reports and how it judges what it reached: the report and its
limits, the forbidden kinds, and the checks that host code changed no host state."""

from __future__ import annotations

import builtins
import ctypes
import sys
import types
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from safeexec.restricted.budget import OperationBudget
from safeexec.restricted.cell import Cell
from safeexec.restricted.class_facts import instance_dict, is_metaclass
from safeexec.restricted.executor import RestrictedExecutor
from safeexec.restricted.guards import Guards
from safeexec.restricted_proof.reachability_probes import (
    _DANGEROUS_CLASSES,
    _FILENAME,
    _MISSING,
    _SCALARS,
    _is_globals,
    _public_names,
    _restore,
    _Snapshot,
    _state,
    _unbound_method,
    home_is_runtime,
)

__all__ = ["CrawlLimits", "CrawlReport", "Reached"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Reached:
    """One forbidden thing sandboxed code can reach: its kind, the path to it, what it is."""

    kind: str
    path: str
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CrawlLimits:
    """Bounds of one crawl: attribute depth, objects visited, calls made (per callable too)."""

    max_depth: int = 5
    max_call_depth: int = 2
    max_objects: int = 60_000
    max_calls: int = 400_000
    max_calls_per_callable: int = 200
    probe_seconds: float = 0.25


@dataclass(frozen=True, slots=True, kw_only=True)
class CrawlReport:
    """What one crawl visited and every forbidden thing it reached (``ok`` when none)."""

    imports: tuple[str, ...]
    counting: bool
    objects: int
    calls: int
    timeouts: int
    own_kinds: tuple[str, ...]
    impossible_kinds: tuple[str, ...]
    reached: tuple[Reached, ...]
    truncated: bool

    @property
    def ok(self) -> bool:
        return not self.reached


def _equal_rebinding(now: dict[object, object], saved: dict[object, object], key: str) -> bool:
    """Module globals the library itself rebinds to an equal value (``time.tzset`` renews
    ``tzname``), and the ``__builtins__`` entry the interpreter adds to a dict used as globals."""
    if key == "__builtins__" and key not in saved:
        return True
    if key not in now or key not in saved:
        return False
    old, new = saved[key], now[key]
    return type(old) is type(new) and isinstance(old, (*_SCALARS, tuple)) and old == new


def _version_tag_moves() -> bool:
    """Does CPython stamp every write of a dict with a fresh ``ma_version_tag`` (PEP 509,
    read at its offset in the dict object), here? A replaced value moves neither the size
    nor the keys table, so only the tag can show it."""
    if sys.implementation.name != "cpython":
        return False
    probe: dict[str, object] = {"key": 1}
    tag = ctypes.c_uint64.from_address(id(probe) + _VERSION_TAG_OFFSET)
    before = tag.value
    probe["key"] = 2
    return tag.value != before


_VERSION_TAG_OFFSET = 3 * ctypes.sizeof(ctypes.c_ssize_t)  # after refcount, type and ma_used
_TAGS_MOVE = _version_tag_moves()


def _write_stamps(dicts: list[dict[str, object]]) -> Callable[[], list[object]]:
    """A function giving a value that changes whenever one of ``dicts`` is written: their
    version tags where CPython keeps them (O(1) a dict), else their keys and values (tuples
    compare items by identity first)."""
    if _TAGS_MOVE:
        tags = [ctypes.c_uint64.from_address(id(d) + _VERSION_TAG_OFFSET) for d in dicts]
        return lambda: [tag.value for tag in tags]
    return lambda: [part for d in dicts for part in (tuple(d), tuple(d.values()))]


# Dunders the interpreter itself stores in an instance's ``__dict__`` under a fixed name
# (``BaseException.add_note``).
_STORED_BY_PYTHON = frozenset({"__notes__"})


class _Checks:
    """The crawler's judgement of what it reached and of host state (mixed into ``_Crawler``)."""

    executor: RestrictedExecutor
    limits: CrawlLimits
    namespace: dict[str, object]
    namespace_before: dict[str, object]
    table: dict[str, object]
    reached: list[Reached]
    keep: list[object]
    snapshots: dict[int, _Snapshot]
    interpreter: list[_Snapshot]
    fingerprint: list[object]
    stamps: Callable[[], list[object]]
    vetted: set[int]
    homes: tuple[str, ...]
    _push: Callable[[object, str, int, int], None]

    # -- host state -------------------------------------------------------------------------------
    def _snapshot_host(self, roots: list[tuple[object, str]]) -> None:
        """Record the attribute dicts and items of host objects reachable by attribute loads."""
        pending = deque((obj, path, 0) for obj, path in roots)
        seen: set[int] = set()
        while pending:
            obj, path, depth = pending.popleft()
            if id(obj) in seen or isinstance(obj, _SCALARS) or len(seen) > 20_000:
                continue
            seen.add(id(obj))
            self.keep.append(obj)
            self._remember(obj, path)
            if depth >= 3:
                continue
            for name in _public_names(obj):
                try:
                    pending.append((getattr(obj, name), f"{path}.{name}", depth + 1))
                except Exception:
                    continue

    def _remember(self, obj: object, path: str) -> None:
        state = _state(obj)
        if state is not None:
            self.snapshots[id(obj)] = _Snapshot(obj=obj, path=path, items=state[0], saved=state[1])

    def _check_host_objects(self, objs: list[object] | None, cause: str) -> None:
        targets = (
            list(self.snapshots.values())
            if objs is None
            else [self.snapshots[id(o)] for o in objs if id(o) in self.snapshots]
        )
        self._report_changes(targets, cause, "host object changed")

    def _watch_interpreter(self) -> None:
        """Snapshot the interpreter's own state, which no probe may change: the real builtins
        and the globals of the runtime's modules (host code that rebinds a guard's name in
        them has changed the runtime itself)."""
        dicts: list[tuple[str, dict[str, object]]] = [("builtins.__dict__", builtins.__dict__)]
        dicts += [
            (f"the globals of {name}", vars(module))
            for name, module in sorted(sys.modules.items())
            if home_is_runtime(name) and isinstance(module, types.ModuleType)
        ]
        self.interpreter = []
        for path, mapping in dicts:
            items, saved = _state(mapping) or ((), {})
            self.interpreter.append(_Snapshot(obj=mapping, path=path, items=items, saved=saved))
        self.stamps = _write_stamps([*(mapping for _, mapping in dicts), self.namespace])
        self.fingerprint = self.stamps()

    def _check_writes(self, cause: str) -> None:
        """After a probe: the sandbox's namespace, the real builtins and the runtime's globals,
        compared in full only when one of them was written."""
        if self.stamps() == self.fingerprint:
            return
        self._check_namespace(cause)
        self._report_changes(self.interpreter, cause, "interpreter state changed")
        self.fingerprint = self.stamps()

    def _report_changes(self, targets: list[_Snapshot], cause: str, kind: str) -> None:
        """A :class:`Reached` line of ``kind`` for every target whose state changed, which is
        then restored."""
        for snap in targets:
            state = _state(snap.obj)
            if state is None or state[0] == snap.items:
                continue
            before = {k for k, _ in snap.items}
            after = {k for k, _ in state[0]}
            keys = sorted(
                map(str, (after ^ before) | {k for k, v in state[0] if (k, v) not in snap.items})
            )
            if isinstance(snap.obj, dict) and isinstance(snap.saved, dict):
                # ``__warningregistry__``: CPython's ``warn()`` records in a module's globals
                # which warnings it showed from there; the record is the interpreter's, the
                # code chooses none of it.
                keys = [
                    k
                    for k in keys
                    if k != "__warningregistry__" and not _equal_rebinding(snap.obj, snap.saved, k)
                ]
                if not keys:
                    continue
            self.reached.append(
                Reached(
                    kind=kind,
                    path=cause,
                    detail=f"{snap.path} ({type(snap.obj).__name__}) was changed: {keys[:6]}",
                )
            )
            _restore(snap)

    def _check_namespace(self, cause: str) -> None:
        now = self.namespace
        before = self.namespace_before
        changed = [
            k
            for k in set(now) | set(before)
            if k not in ("_budget_", "_print", "_")
            and now.get(k, _MISSING) is not before.get(k, _MISSING)
        ]
        if not changed:
            return
        self.reached.append(
            Reached(
                kind="sandbox namespace changed",
                path=cause,
                detail="host code wrote " + ", ".join(sorted(changed)[:12]),
            )
        )
        for key in sorted(changed):
            if key in now and not key.startswith("_"):
                self._push(
                    now[key], f"{cause} -> namespace[{key!r}]", 1, self.limits.max_call_depth
                )
        budget, printer = now.get("_budget_"), now.get("_print")
        now.clear()
        now.update(before)
        now["_budget_"], now["_print"] = budget, printer

    def _check_planted(self, cause: str) -> None:
        """No own instance's real ``__dict__`` holds a dunder (or a key that is no string), nor
        a metaclass: host library code that stored one under a name the code chose (a
        descriptor's ``attrname``) planted a hook other host code then obeys (``copy`` asks
        ``x.__reduce_ex__``); a metaclass stored there (a factory host code called) would be
        read inline, as the code's own value (``Guards.class_attribute``)."""
        own = self.executor.guards.own_classes
        for key, obj in self.namespace.items():
            if type(obj) not in own:
                continue
            held = instance_dict(obj)
            if held is None:
                continue
            planted = [
                name
                for name in held
                if type(name) is not str
                or (name.startswith("__") and name.endswith("__") and name not in _STORED_BY_PYTHON)
            ]
            if planted:
                self.reached.append(
                    Reached(
                        kind="planted dunder",
                        path=cause,
                        detail=f"host code stored {planted[:6]!r} in {key}'s real __dict__",
                    )
                )
            kinds = [name for name, value in held.items() if is_metaclass(value)]
            if kinds:
                self.reached.append(
                    Reached(
                        kind="planted metaclass",
                        path=cause,
                        detail=f"host code stored a metaclass under {kinds[:6]!r} in {key}",
                    )
                )
            for name in (*planted, *kinds):
                del held[name]

    # -- what must never be reached ------------------------------------------------------------
    def _forbidden(self, obj: object) -> tuple[str, str] | None:
        if isinstance(obj, types.ModuleType):
            return "module", f"the real module {obj.__name__!r}"
        if isinstance(obj, types.FrameType):
            return "frame", f"a frame of {obj.f_code.co_name!r}"
        if isinstance(obj, types.CodeType):
            return "code object", f"the code of {obj.co_name!r}"
        if isinstance(obj, types.TracebackType):
            return "traceback", "a traceback (its frames hold globals)"
        if obj is builtins.__dict__ or obj is builtins:
            return "real builtins", "the interpreter's builtins"
        if obj is sys.modules:
            return "sys.modules", "the module table"
        if obj is self.namespace or obj is self.table:
            return "runtime object", "the sandbox's own namespace or builtins table (its guards)"
        if isinstance(obj, Guards | RestrictedExecutor | Cell | OperationBudget):
            return "runtime object", f"the runtime's {type(obj).__name__}"
        if isinstance(obj, dict) and _is_globals(obj):
            return "globals dict", f"the globals of module {obj.get('__name__')!r}"
        if isinstance(obj, type):
            if issubclass(obj, type):
                return "metaclass", f"the metaclass {obj.__qualname__!r}"
            if obj in _DANGEROUS_CLASSES:
                return "dangerous class", f"the class {obj.__qualname__!r}"
        function = obj.__func__ if isinstance(obj, types.MethodType) else obj
        if isinstance(function, types.FunctionType):
            return self._foreign_function(function, bound=function is not obj)
        if isinstance(obj, types.BuiltinFunctionType | types.BuiltinMethodType):
            owner = getattr(obj, "__self__", None)
            if isinstance(owner, types.ModuleType):
                if id(obj) in self.vetted:
                    return None
                if owner.__name__ != "builtins" and self._vetted_home(owner.__name__):
                    return None
                return "module builtin", f"{owner.__name__}.{obj.__name__} (bound to its module)"
        return None

    def _foreign_function(
        self, function: types.FunctionType, *, bound: bool
    ) -> tuple[str, str] | None:
        if function.__globals__ is self.namespace:
            return None
        if function.__code__.co_filename == _FILENAME:
            return "foreign globals", f"own function {function.__qualname__!r} with other globals"
        home = function.__globals__.get("__name__")
        if id(function) in self.vetted or (isinstance(home, str) and self._vetted_home(home)):
            if not bound and not home_is_runtime(home) and _unbound_method(function):
                return "unbound method", (
                    f"{home}.{function.__qualname__} without its receiver (host code on any self)"
                )
            return None
        if set(function.__globals__) <= {"__builtins__"} and function.__module__ in (
            None,
            "__sandbox__",
        ):
            return None  # generated for an own class (dataclass, namedtuple) with empty globals
        return "foreign function", f"{home}.{function.__qualname__} runs with its module's globals"

    def _vetted_home(self, module: str) -> bool:
        return any(module == h or module.startswith(h + ".") for h in self.homes)
