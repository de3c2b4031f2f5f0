"""The restricted runtime: RestrictedPython, one ``Guards`` object, attribute-allowlisted imports.

Sandboxed code is transformed by :class:`SafeexecTransformer` (RestrictedPython's
``RestrictingNodeTransformer``, the heart of ``compile_restricted``, compiled without inheriting
``compile_restricted``'s ``from __future__ import annotations``), which keeps RestrictedPython's
default-deny grammar and closes its compatibility gaps where that is safe:

* attribute names are checked **at compile time**. A plain ``a.b`` whose name is public and not on
  the dangerous list compiles to a direct attribute load (no guard call: this is the fast path);
  names starting with ``_`` and dangerous names (``format``, ``format_map``, ``mro``, frame and code
  attributes…) compile to a ``_getattr_`` call that only allows them on objects the code created;
* attribute writes go through ``_write_``, which only admits objects of classes the code defined;
* the code's own classes may define ordinary dunder methods (``__repr__``, ``__eq__``,
  ``__iter__``, ``__enter__``…), read and write ``self._x``, use annotated assignments (dataclass
  fields), augmented assignment on subscripts and attributes, and ``nonlocal``;
* ``import`` hands out :class:`ModuleView` wrappers with an explicit attribute allowlist, never a
  real module, and only for modules in both the policy allowlist and :data:`MODULE_ALLOWLISTS`.

Item access, iteration, unpacking and in-place operators stay plain bytecode (RestrictedPython's
``_getitem_``, ``_getiter_``, ``_unpack_sequence_`` and ``_inplacevar_`` hooks are not used): with
attribute access checked, imports wrapped and no module-holding container reachable, those hooks
would only re-check values the code can already hold, at a guard call per element.

Nothing that reaches a module object through a public attribute is exposed (``tests/restricted``
walks the reachable object graph to check that premise of the fast path). When
``count_operations`` is on, every loop iteration, comprehension step and function call draws from
an :class:`OperationBudget`, so ``while True: pass`` stops in-process. C-level consumers
(``sum``, ``list``, ``x in it``) run no Python code between items, so what they consume counts
instead: long ranges, endless or combinatorial ``itertools`` producers and ``iter(callable,
sentinel)`` draw one operation per item. Single C operations (``"x" * 10**10``,
``math.factorial(10**8)``, big-integer arithmetic, a backtracking regular expression) and
library code written in Python (``difflib``) still cannot be interrupted in-process, which is
why the default home of this runtime is the confined worker.
"""

from __future__ import annotations

import ast
import builtins
import contextvars
import io
import operator
import os
import random
import re
import string
import threading
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, ClassVar, Protocol

from RestrictedPython.transformer import RestrictingNodeTransformer, copy_locations

from safeexec.capabilities import ToolError

__all__ = [
    "DENIED_ATTRIBUTES",
    "MODULE_ALLOWLISTS",
    "USER_DUNDERS",
    "GuardError",
    "Guards",
    "ModuleView",
    "OperationBudget",
    "RestrictedExecutor",
    "SafeexecTransformer",
    "SandboxExit",
    "TextSink",
    "WorkdirFile",
]

# Public-looking attribute names that lead somewhere dangerous on objects the code did not create:
# string formatting walks attributes; frames, code objects and tracebacks lead to globals.
DENIED_ATTRIBUTES = frozenset(
    {
        "format",
        "format_map",
        "vformat",
        "get_field",
        "get_value",
        "mro",
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "cr_origin",
        "ag_frame",
        "ag_code",
        "ag_await",
        "tb_frame",
        "tb_next",
        "f_back",
        "f_builtins",
        "f_code",
        "f_generator",
        "f_globals",
        "f_locals",
        "f_trace",
        "co_code",
        "func_globals",
        "func_code",
        "im_func",
        "im_self",
        "attrgetter",
        "methodcaller",
        # ``ABCMeta.register`` changes a library ABC's registry for the whole process
        # (``collections.abc.Mapping.register(list)``); own classes may still register.
        "register",
    }
)

# Dunder methods the code may define on its own classes and call on its own objects.
USER_DUNDERS = frozenset(
    {
        "__init__",
        "__post_init__",
        "__repr__",
        "__str__",
        "__format__",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__hash__",
        "__bool__",
        "__len__",
        "__iter__",
        "__next__",
        "__reversed__",
        "__contains__",
        "__getitem__",
        "__setitem__",
        "__delitem__",
        "__missing__",
        "__enter__",
        "__exit__",
        "__call__",
        "__neg__",
        "__pos__",
        "__abs__",
        "__invert__",
        "__round__",
        "__int__",
        "__float__",
        "__index__",
        "__complex__",
        *(
            f"__{prefix}{op}__"
            for op in (
                "add",
                "sub",
                "mul",
                "truediv",
                "floordiv",
                "mod",
                "pow",
                "matmul",
                "and",
                "or",
                "xor",
                "lshift",
                "rshift",
                "divmod",
            )
            for prefix in ("", "r", "i")
            if not (prefix == "i" and op == "divmod")
        ),
    }
)

# Class-body names (not methods) the code may bind in its own classes.
_CLASS_BODY_NAMES = frozenset({"__slots__", "__hash__"})
# Read-only metadata that is a plain string on anything.
_ANYWHERE_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__"})

_RESERVED_NAME = re.compile(r"^(_.*_|_print|_tmp\d+|__.*)$")


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Module name → attribute allowlist. Values are vetted: no modules, no module-level mutable
# containers shared with the host (those are copied), nothing whose public attributes reach ``sys``.
MODULE_ALLOWLISTS: Mapping[str, frozenset[str]] = {
    "math": _names(
        "acos acosh asin asinh atan atan2 atanh cbrt ceil comb copysign cos cosh degrees dist e "
        "erf erfc exp exp2 expm1 fabs factorial floor fmod frexp fsum gamma gcd hypot inf isclose "
        "isfinite isinf isnan isqrt lcm ldexp lgamma log log10 log1p log2 modf nan nextafter perm "
        "pi pow prod radians remainder sin sinh sqrt tan tanh tau trunc ulp"
    ),
    "cmath": _names("phase polar rect sqrt exp log pi e isclose"),
    "statistics": _names(
        "mean fmean geometric_mean harmonic_mean median median_low median_high median_grouped "
        "mode multimode quantiles pstdev pvariance stdev variance covariance correlation "
        "linear_regression NormalDist StatisticsError"
    ),
    "random": _names(
        "Random random randint randrange choice choices shuffle sample uniform gauss "
        "normalvariate triangular betavariate expovariate seed getrandbits"
    ),
    "re": _names(
        "compile match search fullmatch findall finditer sub subn split escape error "
        "Pattern Match A ASCII I IGNORECASE L LOCALE M MULTILINE S DOTALL X VERBOSE U UNICODE "
        "NOFLAG"
    ),
    "json": _names("dumps loads dump load JSONDecodeError JSONEncoder JSONDecoder"),
    "datetime": _names("date datetime time timedelta timezone tzinfo MINYEAR MAXYEAR"),
    "time": _names(
        "time time_ns monotonic perf_counter process_time sleep strftime strptime gmtime "
        "localtime mktime struct_time"
    ),
    "collections": _names(
        "Counter defaultdict OrderedDict deque namedtuple ChainMap UserDict UserList UserString abc"
    ),
    "collections.abc": _names(
        "Iterable Iterator Generator Sequence MutableSequence Mapping MutableMapping Set "
        "MutableSet Hashable Sized Container Callable Collection Reversible"
    ),
    "itertools": _names(
        "accumulate batched chain combinations combinations_with_replacement compress count "
        "cycle dropwhile filterfalse groupby islice pairwise permutations product repeat "
        "starmap takewhile tee zip_longest"
    ),
    "functools": _names(
        "reduce partial lru_cache cache cmp_to_key total_ordering wraps cached_property"
    ),
    "heapq": _names("heappush heappop heapify heapreplace heappushpop nlargest nsmallest merge"),
    "bisect": _names("bisect bisect_left bisect_right insort insort_left insort_right"),
    "string": _names(
        "ascii_letters ascii_lowercase ascii_uppercase digits hexdigits octdigits punctuation "
        "whitespace printable capwords Template"
    ),
    "textwrap": _names("wrap fill dedent indent shorten TextWrapper"),
    "decimal": _names(
        "Decimal InvalidOperation DivisionByZero ROUND_HALF_UP ROUND_HALF_EVEN ROUND_DOWN "
        "ROUND_UP ROUND_FLOOR ROUND_CEILING ROUND_HALF_DOWN"
    ),
    "fractions": frozenset({"Fraction"}),
    "dataclasses": _names(
        "dataclass field fields asdict astuple replace is_dataclass FrozenInstanceError "
        "InitVar MISSING"
    ),
    "enum": _names("Enum IntEnum Flag IntFlag StrEnum auto unique"),
    "typing": _names(
        "Any Callable ClassVar Dict DefaultDict Deque FrozenSet Generator Iterable Iterator List "
        "Literal Mapping MutableMapping NamedTuple Optional Sequence Set Tuple TypedDict Union "
        "Final cast"
    ),
    "copy": frozenset({"copy", "deepcopy"}),
    "csv": _names(
        "reader writer DictReader DictWriter QUOTE_ALL QUOTE_MINIMAL QUOTE_NONE "
        "QUOTE_NONNUMERIC Error"
    ),
    "io": frozenset({"StringIO", "BytesIO"}),
    "hashlib": _names("md5 sha1 sha224 sha256 sha384 sha512 blake2b blake2s"),
    "base64": _names(
        "b64encode b64decode urlsafe_b64encode urlsafe_b64decode b32encode b32decode "
        "b16encode b16decode"
    ),
    "uuid": _names("UUID uuid3 uuid4 uuid5 NAMESPACE_DNS NAMESPACE_URL"),
    "unicodedata": _names("category name lookup normalize numeric decimal digit"),
    "difflib": _names("SequenceMatcher get_close_matches unified_diff ndiff"),
    "pprint": frozenset({"pformat", "pprint"}),
    "contextlib": _names("contextmanager suppress closing nullcontext ExitStack"),
    "abc": _names("ABC abstractmethod"),
    "calendar": _names(
        "monthrange isleap leapdays weekday monthcalendar month_name month_abbr day_name "
        "day_abbr MONDAY TUESDAY WEDNESDAY THURSDAY FRIDAY SATURDAY SUNDAY"
    ),
    "html": _names("escape unescape"),
    "numbers": _names("Number Complex Real Rational Integral"),
    "graphlib": _names("TopologicalSorter CycleError"),
    "secrets": _names("token_hex token_urlsafe token_bytes choice randbelow compare_digest"),
    "struct": _names("pack unpack calcsize iter_unpack error"),
    "zlib": _names("crc32 adler32 compress decompress error"),
    "binascii": _names("hexlify unhexlify crc32 b2a_hex a2b_hex Error"),
    "colorsys": _names("rgb_to_hsv hsv_to_rgb rgb_to_hls hls_to_rgb rgb_to_yiq yiq_to_rgb"),
    "reprlib": _names("repr Repr"),
    "zoneinfo": _names("ZoneInfo ZoneInfoNotFoundError"),
    "__future__": _names("annotations"),
}


class TextSink(Protocol):
    """Where ``print`` output goes: anything with ``write(str)``."""

    def write(self, text: str, /) -> int: ...


# The refusals of the run in progress (``RestrictedExecutor.execute`` sets it): every refusal is
# recorded for the audit log even when the code catches the error.
_DENIALS: contextvars.ContextVar[list[tuple[str, str]] | None] = contextvars.ContextVar(
    "safeexec_restricted_denials", default=None
)
_MAX_DENIALS = 64


def _record_denial(guard: str, detail: str) -> None:
    denials = _DENIALS.get()
    if denials is not None and len(denials) < _MAX_DENIALS:
        denials.append((guard, detail[:300]))


class GuardError(Exception):
    """Sandboxed code tried something the restricted runtime refuses (the message says what)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        _record_denial("guard", message)


class SandboxExit(Exception):
    """Sandboxed code raised ``SystemExit``/``KeyboardInterrupt``/``GeneratorExit``; it cannot
    unwind the host, so it ends the cell as an ordinary error."""


class OperationBudget:
    """Counts loop iterations, comprehension steps and calls; exhausted by count or by ``stop``.

    The tick is a C-level ``next`` on a range iterator, so counting costs one builtin call; a
    watchdog thread ends the run by exhausting the iterator (``stop``), after which every loop
    head and function entry raises.
    """

    def __init__(self, max_operations: int) -> None:
        self.max_operations = max_operations
        self._counter = iter(range(max_operations, 0, -1))
        self.stopped_by: str | None = None

    @property
    def counter(self) -> Iterator[int]:
        return self._counter

    def stop(self, reason: str) -> None:
        """Exhaust the budget now; ``reason`` names the limit (first reason wins)."""
        if self.stopped_by is None:
            self.stopped_by = reason
        self._counter.__setstate__(self.max_operations)  # type: ignore[attr-defined]

    @property
    def exhausted(self) -> bool:
        if self.stopped_by is not None:
            return True
        return self._counter.__length_hint__() == 0  # type: ignore[attr-defined]

    def reason(self) -> str | None:
        """Which limit ended the run: ``operations``, a watchdog reason, or ``None``."""
        if self.stopped_by is not None:
            return self.stopped_by
        return "operations" if self.exhausted else None


def _closed_budget() -> OperationBudget:
    budget = OperationBudget(1)
    budget.stop("closed")
    return budget


class SafeexecTransformer(RestrictingNodeTransformer):
    """RestrictedPython's transformer: compile-time attribute checks, compatibility gaps closed."""

    count_operations: ClassVar[bool] = False

    def __init__(
        self,
        errors: list[str] | None = None,
        warnings: list[str] | None = None,
        used_names: dict[str, bool] | None = None,
    ) -> None:
        super().__init__(errors, warnings, used_names)
        self._class_stack: list[str] = []
        self._in_class_body = False

    # -- names -----------------------------------------------------------------------------
    def check_name(
        self, node: ast.AST, name: str | None, allow_magic_methods: bool = False
    ) -> None:
        if name is None or name == "_":
            return
        if name in ("print", "printed", "builtins", "breakpoint") and not isinstance(
            node, ast.Name
        ):
            self.error(node, f'"{name}" is a reserved name.')
            return
        if name.endswith("__roles__"):
            self.error(node, f'"{name}" is an invalid variable name.')
            return
        if not name.startswith("_"):
            return
        if self._in_class_body and (
            (allow_magic_methods and name in USER_DUNDERS) or name in _CLASS_BODY_NAMES
        ):
            return
        if _RESERVED_NAME.match(name):
            self.error(
                node,
                f'"{name}" is an invalid variable name: names that start and end with "_" '
                'or start with "__" are reserved',
            )

    # -- attributes ------------------------------------------------------------------------
    def _mangle(self, name: str) -> str:
        if self._class_stack and name.startswith("__") and not name.endswith("__"):
            return f"_{self._class_stack[-1].lstrip('_')}{name}"
        return name

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        name = node.attr
        if name.endswith("__roles__"):
            self.error(node, f'"{name}" is an invalid attribute name.')
        node = self.node_contents_visit(node)
        guarded = name.startswith("_") or name in DENIED_ATTRIBUTES
        if isinstance(node.ctx, ast.Load):
            if not guarded:
                return node
            call = ast.Call(
                func=ast.Name("_getattr_", ast.Load()),
                args=[node.value, ast.Constant(self._mangle(name))],
                keywords=[],
            )
            copy_locations(call, node)
            return call
        if name.startswith("__") and name.endswith("__"):
            self.error(node, f'"{name}": assigning or deleting dunder attributes is not allowed.')
        write: ast.expr = ast.Call(
            func=ast.Name("_write_", ast.Load()), args=[node.value], keywords=[]
        )
        if isinstance(node.value, ast.Name):
            # ``obj.x = v`` → ``(obj if _type_(obj) in _own_ else _write_(obj)).x = v``: the
            # common case (an instance of an own class) checks inline, without a Python call.
            target = node.value.id
            write = ast.IfExp(
                test=ast.Compare(
                    left=ast.Call(
                        func=ast.Name("_type_", ast.Load()),
                        args=[ast.Name(target, ast.Load())],
                        keywords=[],
                    ),
                    ops=[ast.In()],
                    comparators=[ast.Name("_own_", ast.Load())],
                ),
                body=ast.Name(target, ast.Load()),
                orelse=write,
            )
        copy_locations(write, node.value)
        node.value = write
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        # Item access on reachable containers cannot produce a module (no module-holding
        # container is reachable), so loads and stores stay plain bytecode.
        return self.node_contents_visit(node)

    # -- assignment forms --------------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        return self.node_contents_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        return self.node_contents_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        return self.node_contents_visit(node)

    def visit_With(self, node: ast.With) -> ast.AST:
        return self.node_contents_visit(node)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> ast.AST:
        for name in node.names:
            self.check_name(node, name)
        return node

    def visit_Global(self, node: ast.Global) -> ast.AST:
        for name in node.names:
            self.check_name(node, name)
        return node

    def inject_print_collector(self, node: ast.AST, position: int = 0) -> None:
        """``print`` uses the run's single ``_print`` global (set by the executor)."""

    # -- loops, calls, classes -----------------------------------------------------------------
    def _tick(self, anchor: ast.stmt | ast.expr | ast.excepthandler) -> ast.expr:
        tick = ast.Call(
            func=ast.Name("_next_", ast.Load()),
            args=[ast.Name("_budget_", ast.Load())],
            keywords=[],
        )
        copy_locations(tick, anchor)
        return tick

    def _tick_statement(self, anchor: ast.stmt | ast.excepthandler) -> ast.stmt:
        stmt = ast.Expr(value=self._tick(anchor))
        copy_locations(stmt, anchor)
        return stmt

    def visit_For(self, node: ast.For) -> ast.AST:
        node = self.node_contents_visit(node)
        if self.count_operations:
            node.body.insert(0, self._tick_statement(node))
        return node

    def visit_While(self, node: ast.While) -> ast.AST:
        node = self.node_contents_visit(node)
        if self.count_operations:
            node.body.insert(0, self._tick_statement(node))
        return node

    def visit_Try(self, node: ast.Try) -> ast.AST:
        node = self.node_contents_visit(node)
        if self.count_operations and node.finalbody:
            # A suspended generator runs its ``finally`` when the host collects it, after the
            # run: the tick makes it raise there (the budget is closed) instead of running code.
            node.finalbody.insert(0, self._tick_statement(node))
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        node = self.node_contents_visit(node)
        self.check_name(node, node.name)
        if self.count_operations:
            # ``except GeneratorExit:`` runs at collection time too (see ``visit_Try``).
            node.body.insert(0, self._tick_statement(node))
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        if node.is_async:
            self.error(node, "async comprehensions are not allowed.")
        node = self.node_contents_visit(node)
        if self.count_operations:
            node.ifs.insert(0, self._tick(node.iter))
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.check_name(node, node.name, allow_magic_methods=True)
        dunder = node.name.startswith("__") and node.name.endswith("__")
        if self._in_class_body and dunder and node.name not in USER_DUNDERS:
            self.error(node, f'defining "{node.name}" is not allowed.')
        self.check_function_argument_names(node)
        outer = self._in_class_body
        self._in_class_body = False
        try:
            node = self.node_contents_visit(node)
        finally:
            self._in_class_body = outer
        if self.count_operations:
            docstring = ast.get_docstring(node, clean=False) is not None
            node.body.insert(1 if docstring else 0, self._tick_statement(node))
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self.check_function_argument_names(node)
        node = self.node_contents_visit(node)
        if self.count_operations:
            # The tick yields positive integers, so ``tick and body`` evaluates to ``body``.
            node.body = ast.BoolOp(op=ast.And(), values=[self._tick(node), node.body])
            copy_locations(node.body, node)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self.check_name(node, node.name)
        if any(keyword.arg == "metaclass" for keyword in node.keywords):
            self.error(node, 'The keyword argument "metaclass" is not allowed.')
        self._class_stack.append(node.name)
        outer = self._in_class_body
        self._in_class_body = True
        try:
            node.bases = [self.visit(base) for base in node.bases]
            node.keywords = [self.visit(keyword) for keyword in node.keywords]
            node.decorator_list = [self.visit(d) for d in node.decorator_list]
            body: list[ast.stmt] = []
            for stmt in node.body:
                result = self.visit(stmt)
                if isinstance(result, list):
                    body.extend(result)
                elif result is not None:
                    body.append(result)
            node.body = body
        finally:
            self._in_class_body = outer
            self._class_stack.pop()
        return node

    def visit_keyword(self, node: ast.keyword) -> ast.AST:
        return self.node_contents_visit(node)

    # -- match statements (structural pattern matching) -----------------------------------------
    # Class patterns read attributes with the interpreter's own getattr: keyword patterns name them
    # (checked here like ``a.b``); positional ones come from ``__match_args__``, which the code
    # cannot set (dataclass and namedtuple fields are never dunders).
    def visit_Match(self, node: ast.Match) -> ast.AST:
        return self.node_contents_visit(node)

    def visit_match_case(self, node: ast.match_case) -> ast.AST:
        return self.node_contents_visit(node)

    def visit_MatchValue(self, node: ast.MatchValue) -> ast.AST:
        return self.node_contents_visit(node)

    def visit_MatchSingleton(self, node: ast.MatchSingleton) -> ast.AST:
        return self.node_contents_visit(node)

    def visit_MatchSequence(self, node: ast.MatchSequence) -> ast.AST:
        return self.node_contents_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> ast.AST:
        self.check_name(node, node.name)
        return self.node_contents_visit(node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> ast.AST:
        self.check_name(node, node.rest)
        return self.node_contents_visit(node)

    def visit_MatchClass(self, node: ast.MatchClass) -> ast.AST:
        for name in node.kwd_attrs:
            if name.startswith("_") or name in DENIED_ATTRIBUTES:
                self.error(node, f'class pattern keyword "{name}" is not allowed.')
        return self.node_contents_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> ast.AST:
        self.check_name(node, node.name)
        return self.node_contents_visit(node)

    def visit_MatchOr(self, node: ast.MatchOr) -> ast.AST:
        return self.node_contents_visit(node)


class CountingTransformer(SafeexecTransformer):
    """:class:`SafeexecTransformer` that also draws every iteration and call from the budget."""

    count_operations: ClassVar[bool] = True


class ModuleView:
    """What ``import m`` gives sandboxed code: the allowlisted attributes of ``m``, nothing else.

    It has no ``__name__`` (so ``from m import x``'s fallback to ``sys.modules`` finds nothing) and
    refuses writes; attribute reads are plain and cost nothing extra.
    """

    def __init__(self, label: str, attributes: Mapping[str, object]) -> None:
        self.__dict__.update(attributes)
        self.__dict__["_label"] = label

    def __getattr__(self, name: str) -> object:
        label = self.__dict__.get("_label", "?")
        raise AttributeError(f"restricted module {label!r} has no attribute {name!r} (not allowed)")

    def __setattr__(self, name: str, value: object) -> None:
        raise GuardError("modules are read-only in restricted mode")

    def __delattr__(self, name: str) -> None:
        raise GuardError("modules are read-only in restricted mode")

    def __repr__(self) -> str:
        return f"<restricted module {self.__dict__.get('_label', '?')!r}>"

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("modules cannot be pickled or copied in restricted mode")


def _is_module(value: object) -> bool:
    return type(value) is types.ModuleType


class _SafeFormatter(string.Formatter):
    """``str.format`` without attribute or index traversal in replacement fields."""

    def get_field(self, field_name: str, args: object, kwargs: object) -> tuple[object, str]:
        if "." in field_name or "[" in field_name:
            raise GuardError(
                f"format field {field_name!r} walks attributes or items; "
                "use plain positional or keyword fields"
            )
        return super().get_field(field_name, args, kwargs)  # type: ignore[arg-type]


_SAFE_FORMATTER = _SafeFormatter()


def _safe_str_format(template: str) -> Callable[..., str]:
    def format(*args: object, **kwargs: object) -> str:
        return _SAFE_FORMATTER.vformat(template, args, kwargs)

    return format


class Guards:
    """Every hook the transformed code calls, plus the set of classes the code created itself."""

    def __init__(self) -> None:
        self.own_classes: set[type] = set()
        # What ``type(x)`` and ``x.__class__`` answer instead of a class whose constructor would
        # undo a wrapper (a counting executor hands out ``range`` as a function).
        self.type_aliases: dict[type, object] = {}
        self._lock = threading.Lock()
        self.write_guard = self._make_write_guard()

    def __reduce__(self) -> str | tuple[object, ...]:
        # Sandboxed code holds bound methods of this object (``getattr``, ``print``, ``open``);
        # ``copy.deepcopy(open, memo)`` would copy it and leave the copy in ``memo``.
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")

    # -- ownership ------------------------------------------------------------------------------
    def is_own(self, obj: object) -> bool:
        """Is ``obj`` an instance of a class the code defined, or such a class?"""
        return type(obj) in self.own_classes or (isinstance(obj, type) and obj in self.own_classes)

    def is_own_function(self, obj: object) -> bool:
        """Is ``obj`` a function compiled from the code (its globals hold these guards)?"""
        return (
            isinstance(obj, types.FunctionType)
            and obj.__globals__.get("_write_") is self.write_guard
        )

    def register_class(self, cls: object) -> object:
        if isinstance(cls, type):
            with self._lock:
                self.own_classes.add(cls)
        return cls

    def build_class(
        self, func: Callable[..., object], name: str, *bases: object, **kw: object
    ) -> object:
        """``__build_class__`` for ``class`` statements: no metaclass, classes as bases only."""
        if "metaclass" in kw:
            raise GuardError("the metaclass keyword is not allowed")
        for base in types.resolve_bases(bases):
            if not isinstance(base, type):
                raise GuardError(f"class {name!r}: base {base!r} is not a class")
            if issubclass(base, type):
                raise GuardError(f"class {name!r}: metaclasses cannot be subclassed")
        cls = builtins.__build_class__(func, name, *bases, **kw)
        return self.register_class(cls)

    # -- attribute reads ---------------------------------------------------------------------------
    def getattr_guard(self, obj: object, name: str) -> object:
        """``_getattr_``: reached only for names starting with ``_`` or on the dangerous list."""
        if name in _ANYWHERE_DUNDERS:
            return self._checked(getattr(obj, name))
        if name == "__class__":
            if isinstance(obj, type):
                raise GuardError("__class__ of a class (its metaclass) is not accessible")
            return self.type_aliases.get(type(obj), type(obj))
        if name == "format" and type(obj) is str:
            return _safe_str_format(obj)
        if self.is_own(obj):
            if name.startswith("__") and name.endswith("__"):
                if name in USER_DUNDERS or (name == "__dict__" and not isinstance(obj, type)):
                    return self._checked(getattr(obj, name))
            elif (
                name.startswith("_")
                or self._defined_by_code(obj, name)
                or (name == "register" and isinstance(obj, type))
            ):
                return self._checked(getattr(obj, name))
        elif name in USER_DUNDERS:
            if isinstance(obj, super) and obj.__thisclass__ in self.own_classes:  # type: ignore[attr-defined]
                return self._checked(getattr(obj, name))
            if isinstance(obj, type) and obj.__module__ == "builtins":
                return self._checked(getattr(obj, name))
        raise GuardError(f"access to attribute {name!r} of {type(obj).__name__!r} is not allowed")

    def _defined_by_code(self, obj: object, name: str) -> bool:
        if not isinstance(obj, type):
            inst = getattr(obj, "__dict__", None)
            if isinstance(inst, dict) and name in inst:
                return True
        cls = obj if isinstance(obj, type) else type(obj)
        return any(k in self.own_classes and name in k.__dict__ for k in cls.__mro__)

    @staticmethod
    def _checked(value: object) -> object:
        if _is_module(value):
            raise GuardError("module objects are not accessible in restricted mode")
        return value

    def safe_getattr(self, obj: object, name: str, *default: object) -> object:
        """The ``getattr`` builtin: a dynamic name gets the same checks as ``obj.name``."""
        if type(name) is not str:
            raise TypeError("getattr(): attribute name must be a string")
        try:
            if name.startswith("_") or name in DENIED_ATTRIBUTES:
                return self.getattr_guard(obj, name)
            return self._checked(getattr(obj, name))
        except AttributeError:
            if default:
                return default[0]
            raise

    def safe_hasattr(self, obj: object, name: str) -> bool:
        try:
            self.safe_getattr(obj, name)
        except (AttributeError, GuardError):
            return False
        return True

    # -- writes ------------------------------------------------------------------------------------
    def _make_write_guard(self) -> Callable[[object], object]:
        """``_write_``: attribute writes and deletes only on the code's own objects.

        A closure over the own-class set, so the common case (an instance of an own class) costs
        one set lookup and no attribute access.
        """
        own = self.own_classes

        def _write_(obj: object) -> object:
            if type(obj) in own:
                return obj
            if (isinstance(obj, type) and obj in own) or self.is_own_function(obj):
                return obj
            raise GuardError(
                f"cannot modify attributes of {type(obj).__name__!r}: "
                "only objects of classes defined by the code can be changed"
            )

        return _write_

    def safe_setattr(self, obj: object, name: str, value: object) -> None:
        if type(name) is not str or (name.startswith("__") and name.endswith("__")):
            raise GuardError(f"setattr of {name!r} is not allowed")
        setattr(self.write_guard(obj), name, value)

    def safe_delattr(self, obj: object, name: str) -> None:
        if type(name) is not str or (name.startswith("__") and name.endswith("__")):
            raise GuardError(f"delattr of {name!r} is not allowed")
        delattr(self.write_guard(obj), name)

    # -- calls and misc ---------------------------------------------------------------------------
    @staticmethod
    def apply(func: Callable[..., object], *args: object, **kwargs: object) -> object:
        """``_apply_``: calls written with ``*args``/``**kwargs`` (keywords must be strings)."""
        return func(*args, **kwargs)

    def safe_type(self, *args: object) -> object:
        """One-argument ``type``; never hands out a metaclass (which could build classes)."""
        if len(args) != 1:
            raise GuardError("type() takes exactly one argument in restricted mode")
        if isinstance(args[0], type):
            raise GuardError("type() of a class is not available in restricted mode")
        return self.type_aliases.get(type(args[0]), type(args[0]))

    @staticmethod
    def safe_dir(*obj: object) -> list[str]:
        if not obj:
            raise GuardError("dir() without an argument is not available in restricted mode")
        return sorted(name for name in dir(obj[0]) if not name.startswith("__"))


class PrintCollector:
    """``print`` for sandboxed code: writes to the run's sink and keeps at most ``cap_bytes`` of
    text for RestrictedPython's ``printed`` name."""

    def __init__(self, sink: TextSink, *, cap_bytes: int) -> None:
        self._sink = sink
        self._cap = cap_bytes
        self._kept: list[str] = []
        self._kept_size = 0

    def __reduce__(self) -> str | tuple[object, ...]:
        # Sandboxed code holds bound methods of this object (``getattr``, ``print``, ``open``);
        # ``copy.deepcopy(open, memo)`` would copy it and leave the copy in ``memo``.
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")

    def _call_print(
        self,
        *objects: object,
        sep: str | None = " ",
        end: str | None = "\n",
        file: object = None,
        flush: bool = False,
    ) -> None:
        if file is not None:
            print(*objects, sep=sep, end=end, file=file)  # type: ignore[call-overload]
            return
        text = (" " if sep is None else sep).join(str(o) for o in objects)
        text += "\n" if end is None else end
        if self._kept_size < self._cap:
            piece = text[: self._cap - self._kept_size]
            self._kept.append(piece)
            self._kept_size += len(piece)
        self._sink.write(text)

    def __call__(self) -> str:
        return "".join(self._kept)


class _SinkProxy(io.TextIOBase):
    """Writes to the current ``sys.stdout`` at write time (the worker swaps it per cell)."""

    def write(self, text: str) -> int:
        import sys

        return sys.stdout.write(text)


def _view_value(value: object) -> object:
    if isinstance(value, dict):
        return types.MappingProxyType(dict(value))
    if isinstance(value, list | set | bytearray):
        return tuple(value)
    return value


# Above this many items a ``range`` is handed out as a :class:`_CountedRange` (counting only).
_COUNTED_RANGE_ABOVE = 1 << 20
_SECOND = operator.itemgetter(1)


def _counted(executor: RestrictedExecutor, source: Iterable[object]) -> Iterator[object]:
    """``source``'s items, one budget operation each, drawn at C speed.

    ``zip`` pulls the budget's counter before the source, so when the counter runs dry (the
    watchdog stopped the run) no item is lost and the consumer stops; an iterator carried into a
    later run picks up that run's budget.
    """
    iterator = iter(source)
    while True:
        counter = executor._budget.counter
        # A ``for`` loop, not ``yield from``: resuming after a plain ``yield`` checks the eval
        # breaker, so the watchdog thread gets the GIL to stop the budget.
        for item in map(_SECOND, zip(counter, iterator, strict=False)):  # noqa: UP028
            yield item
        if counter.__length_hint__() != 0:  # type: ignore[attr-defined]
            return  # the source ended
        if counter is executor._budget.counter:
            raise RuntimeError("the operation budget is exhausted")


class _CountedRange:
    """A ``range`` too long for C-level consumers: iterating it draws from the budget.

    ``type()`` and ``__class__`` answer the sandbox's ``range`` for it and for real ranges, so
    code never holds the real class (whose instances C code iterates uncounted).
    """

    __slots__ = ("_executor", "_range")

    def __init__(self, value: range, executor: RestrictedExecutor) -> None:
        self._range = value
        self._executor = executor

    @property
    def start(self) -> int:
        return self._range.start

    @property
    def stop(self) -> int:
        return self._range.stop

    @property
    def step(self) -> int:
        return self._range.step

    def __iter__(self) -> Iterator[object]:
        return _counted(self._executor, self._range)

    def __reversed__(self) -> Iterator[object]:
        return _counted(self._executor, reversed(self._range))

    def __len__(self) -> int:
        return len(self._range)

    def __bool__(self) -> bool:
        return bool(self._range)

    def __getitem__(self, index: int | slice) -> int | range | _CountedRange:
        if isinstance(index, slice):
            return self._executor._range_value(self._range[index])
        return self._range[index]

    def __contains__(self, value: object) -> bool:
        if type(value) is int or type(value) is bool:
            return value in self._range  # arithmetic, not a scan
        return value in _counted(self._executor, self._range)

    def count(self, value: object) -> int:
        if type(value) is int or type(value) is bool:
            return self._range.count(value)
        return operator.countOf(_counted(self._executor, self._range), value)

    def index(self, value: object) -> int:
        if type(value) is int or type(value) is bool:
            return self._range.index(value)
        return operator.indexOf(_counted(self._executor, self._range), value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _CountedRange):
            return self._range == other._range
        if isinstance(other, range):
            return self._range == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._range)

    def __repr__(self) -> str:
        return repr(self._range)

    def __reduce__(self) -> str | tuple[object, ...]:
        return (self._executor._range, (self.start, self.stop, self.step))


def _counted_producer(executor: RestrictedExecutor, producer: Callable[..., Any]) -> object:
    """An ``itertools`` producer that may be endless or combinatorial: its items count."""
    if not executor._counting:
        return producer

    def counted(*args: object, **kwargs: object) -> Iterator[object]:
        return _counted(executor, producer(*args, **kwargs))

    return counted


class RestrictedExecutor:
    """Runs cells of restricted Python in a persistent namespace (the ``Executor`` protocol).

    ``imports`` is the policy's module allowlist (entries may end in ``.*``); only modules also in
    :data:`MODULE_ALLOWLISTS` can be imported. ``workdir`` enables an ``open`` confined beneath
    it. ``count_operations`` compiles budget ticks into loops and calls (the in-process mode);
    ``output_bytes`` caps the ``printed`` collector.
    """

    def __init__(
        self,
        *,
        imports: tuple[str, ...] = (),
        workdir: Path | None = None,
        count_operations: bool = False,
        output_bytes: int = 1024 * 1024,
        sink: TextSink | None = None,
    ) -> None:
        self._imports = tuple(imports)
        self._workdir = None if workdir is None else Path(workdir).resolve()
        self._transformer = CountingTransformer if count_operations else SafeexecTransformer
        self._counting = count_operations
        self._output_bytes = output_bytes
        self._sink: TextSink = sink if sink is not None else _SinkProxy()
        self._tools: dict[str, Callable[..., object]] = {}
        self._budget = _closed_budget()
        self.guards = Guards()
        self._views: dict[str, ModuleView] = {}
        self._namespace: dict[str, object] = {}
        self._random = random.Random()
        self.last_denials: tuple[tuple[str, str], ...] = ()
        self.reset()

    def __reduce__(self) -> str | tuple[object, ...]:
        # Sandboxed code holds bound methods of this object (``getattr``, ``print``, ``open``);
        # ``copy.deepcopy(open, memo)`` would copy it and leave the copy in ``memo``.
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")

    # -- the Executor protocol -------------------------------------------------------------------
    def reset(self) -> None:
        self.guards = Guards()
        self._views = {}
        self._namespace = self._fresh_namespace()

    def bind_tools(self, tools: Mapping[str, Callable[..., object]]) -> None:
        for name in tools:
            if not name.isidentifier() or name.startswith("_"):
                raise ValueError(f"tool name={name!r} is not a public identifier; rename the tool")
        self._tools = dict(tools)
        self._namespace.update(self._tools)

    def set_sink(self, sink: TextSink) -> None:
        """Send ``print`` output of later cells to ``sink`` instead of ``sys.stdout``."""
        self._sink = sink

    def execute(
        self, code: str, *, filename: str, budget: OperationBudget | None = None
    ) -> str | None:
        """Compile ``code`` restricted and run it; ``budget`` bounds a counting executor's run.

        Refusals by the compiler raise ``SyntaxError`` naming every offending line.
        """
        denials: list[tuple[str, str]] = []
        token = _DENIALS.set(denials)
        try:
            return self._execute(code, filename, budget)
        finally:
            _DENIALS.reset(token)
            self.last_denials = tuple(denials)

    def _execute(self, code: str, filename: str, budget: OperationBudget | None) -> str | None:
        body, final = self._compile(code, filename)
        namespace = self._namespace
        namespace["_print"] = PrintCollector(self._sink, cap_bytes=self._output_bytes)
        self._budget = budget if budget is not None else OperationBudget(2**62)
        namespace["_budget_"] = self._budget.counter
        try:
            exec(body, namespace)
            if final is None:
                return None
            value = eval(final, namespace)
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
            self._budget = _closed_budget()
            namespace["_budget_"] = self._budget.counter

    # -- internals --------------------------------------------------------------------------------
    def _compile(self, code: str, filename: str) -> tuple[types.CodeType, types.CodeType | None]:
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
            "__name__": "__sandbox__",
            "_getattr_": guards.getattr_guard,
            "_write_": guards.write_guard,
            "_type_": type,
            "_own_": guards.own_classes,
            "_apply_": guards.apply,
            "_next_": next,
            "_budget_": self._budget.counter,
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
                "__build_class__": guards.build_class,
                "__import__": self._import,
                "GuardError": GuardError,
                "ToolError": ToolError,
            }
        )
        if self._workdir is not None:
            table["open"] = self._open
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
            return _counted(self, iter(source, *sentinel))  # type: ignore[call-overload]
        return iter(source)  # type: ignore[call-overload]

    def _import_allowed(self, name: str) -> bool:
        for entry in self._imports:
            if entry == name or (entry.endswith(".*") and name.startswith(entry[:-1])):
                return True
            if entry.endswith(".*") and name == entry[:-2]:
                return True
        return False

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
        if name not in MODULE_ALLOWLISTS or not self._import_allowed(name):
            _record_denial("import", name)
            raise ImportError(f"import of {name!r} is not allowed by the policy in restricted mode")
        view = self._view(name)
        if fromlist or "." not in name:
            return view
        return self._view(name.split(".", 1)[0])

    def _view(self, name: str) -> ModuleView:
        if name in self._views:
            return self._views[name]
        import importlib

        module = importlib.import_module(name)
        attributes: dict[str, object] = {}
        for attr in MODULE_ALLOWLISTS[name]:
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
            attributes[attr] = _view_value(value) if special is None else special(self, value)
        view = ModuleView(name, attributes)
        self._views[name] = view
        return view

    def _open(
        self,
        file: str,
        mode: str = "r",
        buffering: int = -1,
        encoding: str | None = None,
        errors: str | None = None,
        newline: str | None = None,
    ) -> object:
        """``open`` confined beneath the workdir (no ``..``, absolute or symlink escapes)."""
        assert self._workdir is not None
        if type(file) is not str or type(mode) is not str:
            raise TypeError("open(): file and mode must be strings")
        if set(mode) - set("rwaxbt+"):
            raise ValueError(f"open(): invalid mode {mode!r}")
        target = Path(os.path.realpath(self._workdir / file))
        if target != self._workdir and self._workdir not in target.parents:
            raise PermissionError(f"open(): {file!r} is outside the working directory")
        if "b" in mode:
            return WorkdirFile._wrap(open(target, mode, buffering), name=file)
        return WorkdirFile._wrap(
            open(target, mode, buffering, encoding or "utf-8", errors, newline), name=file
        )


class WorkdirFile:
    """What ``open`` returns to sandboxed code: the file's reading and writing methods only.

    Never the real file object: from that, ``type(f.buffer.raw)`` is ``io.FileIO``, which opens
    any path or file descriptor of the process. The class has no public constructor.
    """

    __slots__ = ("_file", "name")
    _file: IO[Any]
    name: str

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise GuardError("files come from open() only")

    @classmethod
    def _wrap(cls, file: IO[Any], *, name: str) -> WorkdirFile:
        view = object.__new__(cls)
        object.__setattr__(view, "_file", file)
        object.__setattr__(view, "name", name)
        return view

    def __setattr__(self, name: str, value: object) -> None:
        raise GuardError("file objects are read-only in restricted mode")

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("file objects cannot be pickled or copied in restricted mode")

    @property
    def mode(self) -> str:
        return str(self._file.mode)

    @property
    def closed(self) -> bool:
        return bool(self._file.closed)

    def read(self, size: int = -1) -> str | bytes:
        return self._file.read(size)

    def readline(self, size: int = -1) -> str | bytes:
        return self._file.readline(size)

    def readlines(self, hint: int = -1) -> list[str | bytes]:
        return self._file.readlines(hint)

    def write(self, data: str | bytes) -> int:
        return self._file.write(data)

    def writelines(self, lines: Iterable[str | bytes]) -> None:
        self._file.writelines(lines)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def truncate(self, size: int | None = None) -> int:
        return self._file.truncate(size)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def readable(self) -> bool:
        return bool(self._file.readable())

    def writable(self) -> bool:
        return bool(self._file.writable())

    def seekable(self) -> bool:
        return bool(self._file.seekable())

    def __iter__(self) -> WorkdirFile:
        return self

    def __next__(self) -> str | bytes:
        return next(self._file)

    def __enter__(self) -> WorkdirFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()

    def __repr__(self) -> str:
        return f"<restricted file {self.name!r} mode={self.mode!r}>"


def _wrap_dataclass(executor: RestrictedExecutor, dataclass: Callable[..., object]) -> object:
    """``dataclass`` keeping the result an own class (``slots=True`` makes a new one)."""

    def wrapped(cls: object = None, /, **kwargs: object) -> object:
        def apply(target: object) -> object:
            if not (isinstance(target, type) and target in executor.guards.own_classes):
                raise GuardError("dataclass() applies only to classes defined by the code")
            return executor.guards.register_class(dataclass(target, **kwargs))

        return apply if cls is None else apply(cls)

    return wrapped


def _own_only(executor: RestrictedExecutor, decorator: Callable[..., object]) -> object:
    """A host helper that changes its argument (``total_ordering``): own classes only."""

    def wrapped(target: object) -> object:
        if not executor.guards.is_own(target) or not isinstance(target, type):
            raise GuardError("this decorator applies only to classes defined by the code")
        return decorator(target)

    return wrapped


def _wrap_wraps(executor: RestrictedExecutor, wraps: Callable[..., Any]) -> object:
    """``functools.wraps`` that only ever writes to functions the code defined."""

    def wrapped(original: object, **kwargs: object) -> object:
        def apply(wrapper: object) -> object:
            if not executor.guards.is_own_function(wrapper):
                raise GuardError("functools.wraps applies only to functions defined by the code")
            return wraps(original, **kwargs)(wrapper)

        return apply

    return wrapped


def _wrap_namedtuple(executor: RestrictedExecutor, namedtuple: Callable[..., object]) -> object:
    def wrapped(typename: str, field_names: object, **kwargs: object) -> object:
        kwargs.pop("module", None)
        return executor.guards.register_class(
            namedtuple(typename, field_names, module="__sandbox__", **kwargs)
        )

    return wrapped


def _wrap_pprint(executor: RestrictedExecutor, pprint: Callable[..., object]) -> object:
    def wrapped(obj: object, *args: object, **kwargs: object) -> None:
        import pprint as pprint_module

        executor._sink.write(pprint_module.pformat(obj, *args, **kwargs) + "\n")  # type: ignore[arg-type]

    return wrapped


def _wrap_sleep(executor: RestrictedExecutor, sleep: Callable[[float], None]) -> object:
    """``time.sleep`` in slices, so a stopped budget ends the sleep too."""

    def wrapped(seconds: float) -> None:
        import time

        end = time.monotonic() + float(seconds)
        budget = executor._budget
        while (left := end - time.monotonic()) > 0:
            if budget.exhausted:
                next(budget.counter)
            sleep(min(left, 0.05))

    return wrapped


def _freeze_text_wrapper(executor: RestrictedExecutor, wrapper: type) -> object:
    """``TextWrapper`` with its class-level translation table made read-only.

    The table is a dict every ``TextWrapper`` of the process shares; an item store on it
    (``TextWrapper.unicode_whitespace_trans[32] = 88``) would change ``textwrap`` for the host.
    The table is frozen on the class itself, not on a subclass: ``super()`` reaches base classes.
    """
    table = wrapper.__dict__.get("unicode_whitespace_trans")
    if isinstance(table, dict):
        wrapper.unicode_whitespace_trans = types.MappingProxyType(dict(table))  # type: ignore[attr-defined]
    return wrapper


_SPECIAL_VALUES: Mapping[str, Callable[[RestrictedExecutor, Any], object]] = {
    **{
        f"itertools.{name}": _counted_producer
        for name in (
            "count",
            "cycle",
            "repeat",
            "product",
            "permutations",
            "combinations",
            "combinations_with_replacement",
        )
    },
    "textwrap.TextWrapper": _freeze_text_wrapper,
    "dataclasses.dataclass": _wrap_dataclass,
    "collections.namedtuple": _wrap_namedtuple,
    "pprint.pprint": _wrap_pprint,
    "time.sleep": _wrap_sleep,
    "functools.total_ordering": _own_only,
    "functools.wraps": _wrap_wraps,
}

_SAFE_BUILTIN_NAMES = _names(
    "abs all any ascii bin bool bytearray bytes callable chr classmethod complex dict divmod "
    "enumerate filter float format frozenset hash hex id int isinstance issubclass iter len list "
    "map max min next object oct ord pow property range repr reversed round set slice sorted "
    "staticmethod str sum super tuple zip True False None NotImplemented Ellipsis "
)

_BUILTIN_EXCEPTIONS: Mapping[str, type[BaseException]] = {
    name: value
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}
