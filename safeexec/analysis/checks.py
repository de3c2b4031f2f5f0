"""Code checks: what a `match` table cannot express, registered by name (``check = "<name>"``).

Each check reads the :class:`~safeexec.analysis.sites.ScanContext` built by the scanner's one
traversal and yields :class:`~safeexec.analysis.sites.CheckHit` values whose ``fields`` fill the
rule's message placeholders (the names are pinned in :mod:`safeexec.policy.vocabulary`). A check
that raises becomes an ``SX900`` deny finding in the scanner: checks fail closed.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType

from safeexec.analysis.sites import CheckHit, ScanContext, clip_text
from safeexec.policy.modes import explicitly_allowed
from safeexec.qualnames import dotted_name

__all__ = [
    "ATTRIBUTE_FUNCTIONS",
    "IMPORT_FUNCTIONS",
    "REGISTERED_CHECKS",
    "reexport_hazard",
]

Check = Callable[[ScanContext], Iterator[CheckHit]]
_registry: dict[str, Check] = {}


def _register(name: str) -> Callable[[Check], Check]:
    def decorate(check: Check) -> Check:
        _registry[name] = check
        return check

    return decorate


# Functions that reach an attribute by a name given as data: the index of the name argument
# (None: every positional argument is a name, as in operator.attrgetter).
ATTRIBUTE_FUNCTIONS: Mapping[str, int | None] = MappingProxyType(
    {
        "getattr": 1,
        "setattr": 1,
        "delattr": 1,
        "hasattr": 1,
        "operator.attrgetter": None,
        "operator.methodcaller": 0,
        "inspect.getattr_static": 1,
        "object.__getattribute__": 1,
        "type.__getattribute__": 1,
    }
)

# Functions that import a module named by a string argument (the first one).
IMPORT_FUNCTIONS = frozenset(
    {"__import__", "importlib.import_module", "importlib.__import__", "imp.load_module"}
)

# Functions whose first argument is a file system path.
_PATH_FUNCTIONS = frozenset(
    {
        "open",
        "io.open",
        "io.open_code",
        "io.FileIO",
        "contextlib.chdir",
        "codecs.open",
        "os.open",
        "pathlib.Path",
        "pathlib.PurePath",
        "pathlib.PosixPath",
        "pathlib.PurePosixPath",
        "numpy.load",
        "numpy.loadtxt",
        "numpy.save",
        "numpy.savetxt",
        "pandas.read_csv",
        "pandas.read_json",
        "pandas.read_parquet",
        "pandas.read_excel",
        "matplotlib.pyplot.savefig",
    }
)

# Modules an allowed module may re-export that code must not reach through it.
_HAZARDOUS_MODULES = frozenset(
    {
        "os",
        "sys",
        "subprocess",
        "socket",
        "ctypes",
        "importlib",
        "builtins",
        "shutil",
        "signal",
        "posix",
        "nt",
        "gc",
        "inspect",
        "types",
        "code",
        "codeop",
        "pty",
        "multiprocessing",
        "threading",
        "marshal",
        "pickle",
        "runpy",
        "urllib",
        "http",
        "ssl",
        "select",
        "selectors",
        "asyncio",
        "fcntl",
        "resource",
        "mmap",
        "tempfile",
        "glob",
        "io",
        "linecache",
        "tokenize",
        "zipimport",
        "pkgutil",
        "sysconfig",
        "weakref",
    }
)
_HARMLESS_MODULE_DUNDERS = frozenset({"__name__", "__doc__", "__version__", "__all__"})


def reexport_hazard(attribute: str, allow: tuple[str, ...] = ()) -> bool:
    """Whether reading ``attribute`` off an imported module reaches past what it should export.

    A module the mode's allowlist ``allow`` names explicitly is no hazard to reach this way
    (``glob.glob`` in native mode): the code could import it directly.
    """
    if attribute in _HAZARDOUS_MODULES:
        return not explicitly_allowed(attribute, allow)
    if attribute.startswith("__") and attribute.endswith("__"):
        return attribute not in _HARMLESS_MODULE_DUNDERS
    return attribute.startswith("_")


@_register("object-namespace-dict")
def _object_namespace_dict(ctx: ScanContext) -> Iterator[CheckHit]:
    """``vars`` anywhere, except (native mode) ``vars(obj)`` of one argument that is no module.

    ``vars(point)`` of the code's own object is ordinary; ``vars(os)['system']`` would hide a
    module attribute from the call rules, and ``vars()`` is ``locals()``.
    """
    own_objects: set[int] = set()
    if ctx.mode == "native":
        modules = {id(node) for node, _qualified, rooted in ctx.references if rooted}
        for call in ctx.calls:
            args = call.node.args
            if (
                call.callee == "vars"
                and isinstance(call.node.func, ast.Name)
                and len(args) == 1
                and not call.node.keywords
                and not isinstance(args[0], ast.Starred)
                and id(args[0]) not in modules
            ):
                own_objects.add(id(call.node.func))
    for node, qualified, rooted in ctx.references:
        if qualified == "vars" and not rooted and id(node) not in own_objects:
            yield CheckHit(node=node, fields={"name": "vars"}, evidence="vars")


@_register("dynamic-attribute-name")
def _dynamic_attribute_name(ctx: ScanContext) -> Iterator[CheckHit]:
    """getattr/setattr/attrgetter with a name that is not a constant the engine can fold."""
    for site in ctx.calls:
        callee = site.callee
        if callee is None or callee not in ATTRIBUTE_FUNCTIONS:
            continue
        index = ATTRIBUTE_FUNCTIONS[callee]
        args = site.node.args
        names = args if index is None else args[index : index + 1]
        unknown = (
            any(isinstance(a, ast.Starred) for a in args)
            or any(k.arg is None for k in site.node.keywords)
            or (index is not None and not names)
            or any(ctx.folder.fold(name) is None for name in names)
        )
        if unknown:
            yield CheckHit(node=site.node, fields={"function": callee}, evidence=callee)
    # Passing getattr around (`g = getattr`, `partial(getattr, obj)`) hides the later call's name.
    callees = {id(site.node.func) for site in ctx.calls}
    for node, qualified, _rooted in ctx.references:
        if qualified in ATTRIBUTE_FUNCTIONS and id(node) not in callees:
            yield CheckHit(node=node, fields={"function": qualified}, evidence=qualified)


@_register("dynamic-import")
def _dynamic_import(ctx: ScanContext) -> Iterator[CheckHit]:
    """__import__/importlib.import_module with a module name that is not a foldable constant."""
    for site in ctx.calls:
        if site.callee not in IMPORT_FUNCTIONS:
            continue
        first = site.node.args[0] if site.node.args else None
        if first is None or isinstance(first, ast.Starred) or ctx.folder.fold(first) is None:
            yield CheckHit(node=site.node, fields={"function": site.callee}, evidence=site.callee)


def _outside_workdir(path: str) -> bool:
    cleaned = path.replace("\\", "/")
    if cleaned.startswith(("/", "~")) or cleaned.startswith("file:"):
        return True
    if len(cleaned) > 1 and cleaned[1] == ":":
        return True
    return ".." in cleaned.split("/")


_PATH_CONSTRUCTORS = frozenset(
    {"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath"}
)
# File functions that also take an open file descriptor in place of a path.
_DESCRIPTOR_OPENERS = frozenset({"open", "io.open", "io.FileIO", "codecs.open"})
# Calls that return the home directory (what ``~`` means in a path).
_HOME_FUNCTIONS = frozenset({"pathlib.Path.home", "pathlib.PosixPath.home"})


def _spread_arguments(args: list[ast.expr]) -> list[ast.expr]:
    """Positional arguments with ``*[...]``/``*(...)`` literals spread out."""
    spread: list[ast.expr] = []
    for arg in args:
        if isinstance(arg, ast.Starred) and isinstance(arg.value, ast.List | ast.Tuple):
            spread.extend(arg.value.elts)
        else:
            spread.append(arg)
    return spread


def _spread_keywords(keywords: list[ast.keyword], name: str) -> list[ast.expr]:
    """The value of ``name`` given through a ``**{...}`` dict literal."""
    return [
        value
        for keyword in keywords
        if keyword.arg is None and isinstance(keyword.value, ast.Dict)
        for key, value in zip(keyword.value.keys, keyword.value.values, strict=True)
        if isinstance(key, ast.Constant) and key.value == name
    ]


@_register("path-outside-workdir")
def _path_outside_workdir(ctx: ScanContext) -> Iterator[CheckHit]:
    """A file function given a constant path that is absolute, home-relative or climbs with `..`.

    Also ``Path(...) / "/etc"`` and ``.joinpath("/etc")``: an absolute part replaces the path.
    """
    for division in ctx.divisions:
        part = ctx.folder.fold(division.right)
        if part is not None and _outside_workdir(part):
            yield CheckHit(
                node=division,
                fields={"path": clip_text(part), "function": "pathlib.Path.__truediv__"},
                evidence=clip_text(part),
            )
    for site in ctx.calls:
        func = site.node.func
        if isinstance(func, ast.Attribute) and func.attr in ("joinpath", "with_name", "rename"):
            for arg in site.node.args:
                part = ctx.folder.fold(arg)
                if part is not None and _outside_workdir(part):
                    yield CheckHit(
                        node=site.node,
                        fields={"path": clip_text(part), "function": func.attr},
                        evidence=clip_text(part),
                    )
        if site.callee in _HOME_FUNCTIONS:
            yield CheckHit(
                node=site.node, fields={"path": "~", "function": site.callee}, evidence="~"
            )
            continue
        if site.callee not in _PATH_FUNCTIONS:
            continue
        args = _spread_arguments(site.node.args)
        # Every part of a pathlib constructor counts: an absolute later part replaces the path.
        candidates = [
            *(args if site.callee in _PATH_CONSTRUCTORS else args[:1]),
            *(k.value for k in site.node.keywords if k.arg == "file"),
            *_spread_keywords(site.node.keywords, "file"),
        ]
        for arg in candidates:
            path = ctx.folder.fold(arg)
            if (
                site.callee in _DESCRIPTOR_OPENERS
                and isinstance(arg, ast.Constant)
                and type(arg.value) is int
            ):
                path = f"file descriptor {arg.value}"  # an inherited descriptor: not a workdir file
                yield CheckHit(
                    node=site.node,
                    fields={"path": path, "function": site.callee},
                    evidence=path,
                )
            elif path is not None and _outside_workdir(path):
                yield CheckHit(
                    node=site.node,
                    fields={"path": clip_text(path), "function": site.callee},
                    evidence=clip_text(path),
                )


@_register("module-reexport")
def _module_reexport(ctx: ScanContext) -> Iterator[CheckHit]:
    """Reaching a hazardous module, private name or dunder through an imported module."""
    for site in ctx.attributes:
        if site.rooted and site.base is not None and reexport_hazard(site.node.attr, ctx.allow):
            name = f"{site.base}.{site.node.attr}"
            yield CheckHit(
                node=site.node, fields={"name": clip_text(name), "module": site.base}, evidence=name
            )
    # getattr(pathlib, "os") reaches the same attribute by name.
    modules = {id(node): qualified for node, qualified, rooted in ctx.references if rooted}
    callees = {id(call.node): call.callee for call in ctx.calls}
    for call in ctx.calls:
        # operator.attrgetter("os", "x.y")(pathlib): every name, up to its first dot.
        getter = call.node.func
        if (
            isinstance(getter, ast.Call)
            and callees.get(id(getter)) == "operator.attrgetter"
            and call.node.args
        ):
            base = modules.get(id(call.node.args[0]))
            for name_node in getter.args if base is not None else ():
                attribute = ctx.folder.fold(name_node)
                head = None if attribute is None else attribute.partition(".")[0]
                if head is not None and reexport_hazard(head, ctx.allow):
                    name = f"{base}.{head}"
                    yield CheckHit(
                        node=call.node,
                        fields={"name": clip_text(name), "module": str(base)},
                        evidence=name,
                    )
        if call.callee not in ("getattr", "hasattr") or len(call.node.args) < 2:
            continue
        base = modules.get(id(call.node.args[0]))
        attribute = ctx.folder.fold(call.node.args[1])
        if base is not None and attribute is not None and reexport_hazard(attribute, ctx.allow):
            name = f"{base}.{attribute}"
            yield CheckHit(
                node=call.node, fields={"name": clip_text(name), "module": base}, evidence=name
            )


_IN_PLACE_MUTATORS = frozenset(
    {
        "dataclasses.dataclass",
        "functools.total_ordering",
        "functools.update_wrapper",
        "functools.singledispatchmethod",
        "typing.final",
        "typing.runtime_checkable",
        "typing.no_type_check",
        "abc.update_abstractmethods",
        "enum.unique",
    }
)


# Methods that change the container (or ABC registry) they are called on.
_SHARED_STATE_MUTATORS = frozenset(
    {
        "append", "extend", "insert", "pop", "popitem", "remove", "clear", "update",
        "setdefault", "add", "discard", "sort", "reverse", "register",
    }
)  # fmt: skip


@_register("module-mutation")
def _module_mutation(ctx: ScanContext) -> Iterator[CheckHit]:
    """Assigning or deleting attributes of imported modules (and of what they export)."""
    for site in ctx.attributes:
        if site.rooted and site.base is not None and not isinstance(site.node.ctx, ast.Load):
            name = f"{site.base}.{site.node.attr}"
            yield CheckHit(node=site.node, fields={"name": clip_text(name)}, evidence=name)
    modules = {id(node): qualified for node, qualified, rooted in ctx.references if rooted}
    # Item stores into what a module exports (``textwrap.TextWrapper.unicode_whitespace_trans[32]
    # = 88``) and mutating methods called on it (``collections.abc.Mapping.register(list)``).
    for node in ast.walk(ctx.tree):
        target: ast.expr | None = None
        if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
            target = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _SHARED_STATE_MUTATORS
        ):
            target = node.func.value
        base = None if target is None else modules.get(id(target))
        if base is not None:
            yield CheckHit(node=node, fields={"name": clip_text(base)}, evidence=base)
    callees = {id(call.node): call.callee for call in ctx.calls}
    for call in ctx.calls:
        # Decorators that change their argument in place: dataclass(json.JSONEncoder) patches
        # the library class itself; wraps(f)(json.dumps) rewrites json.dumps' attributes.
        func = call.node.func
        mutator = call.callee in _IN_PLACE_MUTATORS or (
            isinstance(func, ast.Call) and callees.get(id(func)) == "functools.wraps"
        )
        if mutator and call.node.args:
            base = modules.get(id(call.node.args[0]))
            if base is not None:
                yield CheckHit(node=call.node, fields={"name": clip_text(base)}, evidence=base)
        if call.callee in ("setattr", "delattr") and call.node.args:
            base = modules.get(id(call.node.args[0]))
            if base is not None:
                attribute = ctx.folder.fold(call.node.args[1]) if len(call.node.args) > 1 else None
                name = f"{base}.{attribute or '?'}"
                yield CheckHit(node=call.node, fields={"name": clip_text(name)}, evidence=name)


# Calls that may take a module as an argument without handing it on.
_MODULE_READERS = frozenset(
    {
        "print",
        "repr",
        "str",
        "dir",
        "type",
        "id",
        "isinstance",
        "callable",
        "hasattr",
        "getattr",
        "setattr",
        "delattr",
    }
)


@_register("module-as-value")
def _module_as_value(ctx: ScanContext) -> Iterator[CheckHit]:
    """An imported module used as a value the checks cannot follow.

    Attribute reads, plain ``m = module`` rebinding (tracked as an alias) and a few readers
    (``print``, ``dir``, ``getattr`` with its own checks) are followed; a module put in a
    container, passed as an argument or default, matched on, iterated over or bound by a walrus,
    an unpacking or a class body would carry ``pathlib.os`` past SX403 unseen.
    """
    modules: set[str] = set()
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Import):
            modules.update(a.asname or a.name.partition(".")[0] for a in node.names)
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    if not modules:
        return
    for node in ast.walk(ctx.tree):
        if not (
            isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in modules
        ):
            continue
        parent = parents.get(id(node))
        if _module_use_is_followed(node, parent, parents):
            continue
        yield CheckHit(node=node, fields={"name": clip_text(node.id)}, evidence=node.id)


def _module_use_is_followed(
    node: ast.Name, parent: ast.AST | None, parents: Mapping[int, ast.AST]
) -> bool:
    if isinstance(parent, ast.Attribute | ast.Compare | ast.Expr):
        return True
    if isinstance(parent, ast.Call):
        func = parent.func
        if isinstance(func, ast.Call):  # operator.attrgetter("x")(module): SX403 reads the names
            getter = func.func
            name = getter.attr if isinstance(getter, ast.Attribute) else getattr(getter, "id", "")
            return name == "attrgetter" and node in parent.args
        return func is node or (isinstance(func, ast.Name) and func.id in _MODULE_READERS)
    if isinstance(parent, ast.Assign | ast.AnnAssign) and parent.value is node:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        in_class = isinstance(parents.get(id(parent)), ast.ClassDef)
        return not in_class and all(isinstance(t, ast.Name) for t in targets)
    return False


_FORMAT_CALLS = frozenset({"format", "format_map", "vformat", "get_field"})


@_register("dynamic-format-template")
def _dynamic_format_template(ctx: ScanContext) -> Iterator[CheckHit]:
    """str.format-family templates the engine cannot fold (their field walks go unchecked)."""
    template_argument: set[int] = set()
    for site in ctx.calls:
        func = site.node.func
        if not isinstance(func, ast.Attribute) or func.attr not in _FORMAT_CALLS:
            continue
        # str.format(t, ...), Formatter().format(t, ...), f.vformat(t, ...), f.get_field(t, ...)
        if (
            func.attr in ("vformat", "get_field")
            or site.callee in ("str.format", "str.format_map")
            or isinstance(func.value, ast.Call)
        ):
            template_argument.add(id(func))
            first = site.node.args[0] if site.node.args else None
            if first is None or ctx.folder.fold(first) is None:
                yield CheckHit(node=site.node, fields={"method": func.attr}, evidence=func.attr)
    # template.format / template.format_map, called or only referenced (f = template.format).
    for attribute in ctx.attributes:
        node = attribute.node
        if node.attr not in ("format", "format_map") or id(node) in template_argument:
            continue
        if attribute.base in ("str", "string.Formatter"):
            continue
        if ctx.folder.fold(node.value) is None:
            yield CheckHit(node=node, fields={"method": node.attr}, evidence=node.attr)


def _tool_calls(ctx: ScanContext) -> Iterator[tuple[str, ast.Call]]:
    tools = {c.tool for c in ctx.policy.capabilities}
    for site in ctx.calls:
        func = site.node.func
        if isinstance(func, ast.Name) and func.id in tools:
            yield func.id, site.node


@_register("tool-not-granted")
def _tool_not_granted(ctx: ScanContext) -> Iterator[CheckHit]:
    """A call to a tool the policy declares but does not let a session be granted."""
    refused = {c.tool for c in ctx.policy.capabilities if not c.grantable}
    for tool, node in _tool_calls(ctx):
        if tool in refused:
            yield CheckHit(node=node, fields={"tool": tool}, evidence=tool)


@_register("tool-requires-approval")
def _tool_requires_approval(ctx: ScanContext) -> Iterator[CheckHit]:
    """A call to a tool whose capability requires a human (or harness) approval."""
    needs = {c.tool for c in ctx.policy.capabilities if c.requires_approval and c.grantable}
    for tool, node in _tool_calls(ctx):
        if tool in needs:
            yield CheckHit(node=node, fields={"tool": tool}, evidence=tool)


@_register("tool-call-limit")
def _tool_call_limit(ctx: ScanContext) -> Iterator[CheckHit]:
    """More static calls of a tool than its capability's ``max_calls`` (loops multiply)."""
    limits = {c.tool: c.max_calls for c in ctx.policy.capabilities if c.max_calls is not None}
    if not limits or not any(tool in limits for tool, _ in _tool_calls(ctx)):
        return
    counts: dict[str, float] = {}
    first_site: dict[str, ast.Call] = {}
    _count_calls(ctx.tree.body, 1.0, set(limits), counts, first_site)
    for tool, calls in sorted(counts.items()):
        limit = limits[tool]
        if limit is not None and calls > limit:
            shown = "unbounded" if math.isinf(calls) else str(int(calls))
            yield CheckHit(
                node=first_site[tool],
                fields={"tool": tool, "calls": shown, "max_calls": str(limit)},
                evidence=f"{tool} x {shown}",
            )


def _count_calls(
    body: list[ast.stmt],
    multiplier: float,
    tools: set[str],
    counts: dict[str, float],
    first_site: dict[str, ast.Call],
) -> None:
    for stmt in body:
        inner = multiplier
        if isinstance(stmt, ast.For | ast.AsyncFor):
            inner = multiplier * _range_trips(stmt.iter)
        elif isinstance(stmt, ast.While):
            inner = math.inf
        for field_name, value in ast.iter_fields(stmt):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                _count_calls(value, inner, tools, counts, first_site)
            elif isinstance(value, list) and value and isinstance(value[0], ast.ExceptHandler):
                for handler in value:
                    _count_calls(handler.body, inner, tools, counts, first_site)
            elif isinstance(value, list) and value and isinstance(value[0], ast.match_case):
                for case in value:
                    _count_calls(case.body, inner, tools, counts, first_site)
            elif isinstance(value, ast.AST | list):
                scale = multiplier if field_name == "iter" else inner
                nodes = value if isinstance(value, list) else [value]
                for root in nodes:
                    in_comprehension = _calls_in_comprehensions(root)
                    for node in ast.walk(root):
                        func = getattr(node, "func", None)
                        if isinstance(func, ast.Name) and func.id in tools:
                            repeat = math.inf if id(node) in in_comprehension else scale
                            counts[func.id] = counts.get(func.id, 0.0) + repeat
                            first_site.setdefault(func.id, node)  # type: ignore[arg-type]


def _calls_in_comprehensions(root: ast.AST) -> set[int]:
    """Ids of the call nodes under any comprehension in ``root`` (one walk per comprehension)."""
    inside: set[int] = set()
    for node in ast.walk(root):
        if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            if id(node) in inside:
                continue
            for child in ast.walk(node):
                inside.add(id(child))
    return inside


def _range_trips(node: ast.expr) -> float:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "range"
        and 1 <= len(node.args) <= 3
        and all(isinstance(a, ast.Constant) and type(a.value) is int for a in node.args)
    ):
        values = [
            a.value for a in node.args if isinstance(a, ast.Constant) and type(a.value) is int
        ]
        try:
            return float(len(range(*values)))
        except (ValueError, OverflowError):
            return math.inf
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return float(len(node.elts))
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        return _slice_trips(node.slice, _range_trips(node.value))
    if (
        isinstance(node, ast.Call)
        and dotted_name(node.func) in ("itertools.islice", "islice")
        and len(node.args) == 2
        and not node.keywords
    ):
        stop = _constant_int(node.args[1])
        return math.inf if stop is None else float(max(stop, 0))
    return math.inf


def _constant_int(node: ast.expr | None) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _constant_int(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _slice_trips(part: ast.Slice, whole: float) -> float:
    """At most how many items a constant slice holds: ``hits[:2]`` bounds a loop whatever
    ``hits`` is (the estimator's ``_slice_trips`` reads the same slices for the CPU bound)."""
    values = [_constant_int(p) for p in (part.lower, part.upper, part.step)]
    given = [p is not None for p in (part.lower, part.upper, part.step)]
    if any(g and v is None for g, v in zip(given, values, strict=True)):
        return whole
    lower, upper, step = values
    step = 1 if step is None else step
    start = 0 if lower is None else lower
    if step <= 0:
        return whole
    if upper is not None and upper >= 0 and start >= 0:
        span = upper - start
    elif upper is None and start < 0:
        span = -start
    elif upper is not None and upper < 0 and start < 0:
        span = upper - start
    else:
        return whole
    return min(float(math.ceil(max(span, 0) / step)), whole)


_TYPE_EXPRESSION_NODES = (
    ast.Expression,
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Tuple,
    ast.List,
    ast.Constant,
    ast.BinOp,
    ast.BitOr,
    ast.Load,
)
_FORWARD_REFERENCES = frozenset({"typing.ForwardRef", "typing.TypeVar", "typing.NewType"})


def _string_is_code(text: str) -> bool:
    """Whether a string that may be evaluated as a type holds more than a type expression."""
    if len(text) > 2000:
        return True
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False  # not an expression: evaluating it raises before running anything
    for node in ast.walk(tree):
        if not isinstance(node, _TYPE_EXPRESSION_NODES):
            return True
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            return True
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            return True
        if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.BitOr):
            return True
    return False


@_register("string-annotation-code")
def _string_annotation_code(ctx: ScanContext) -> Iterator[CheckHit]:
    """String annotations and forward references that hold code, not a type."""
    strings: list[ast.Constant] = []
    for root in ctx.annotations:
        strings.extend(
            n for n in ast.walk(root) if isinstance(n, ast.Constant) and isinstance(n.value, str)
        )
    for site in ctx.calls:
        if site.callee in _FORWARD_REFERENCES:
            strings.extend(
                a
                for a in [*site.node.args, *(k.value for k in site.node.keywords)]
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            )
    for node in strings:
        if _string_is_code(str(node.value)):
            text = clip_text(str(node.value))
            yield CheckHit(node=node, fields={"annotation": text}, evidence=text)


# A dunder (``__globals__``) or a sunder helper (``_convert_``): names only attribute machinery
# uses. Single-underscore data keys (``"_id"``) are ordinary and not matched.
_ATTRIBUTE_NAME_TEXT = re.compile(r"^(__[A-Za-z0-9_]+__|_[A-Za-z0-9][A-Za-z0-9_]*_)$")


def _argument_elements(node: ast.expr) -> Iterator[ast.expr]:
    """An argument, or every element of a tuple/list/set literal it is (nested too)."""
    if isinstance(node, ast.Starred):
        yield from _argument_elements(node.value)
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for element in node.elts:
            yield from _argument_elements(element)
    else:
        yield node


@_register("attribute-name-argument")
def _attribute_name_argument(ctx: ScanContext) -> Iterator[CheckHit]:
    """A string naming a dunder or a private helper, passed to a call (alone or in a literal)."""
    for site in ctx.calls:
        arguments = [*site.node.args, *(k.value for k in site.node.keywords)]
        if site.callee is not None and site.callee in ATTRIBUTE_FUNCTIONS:
            # getattr-like name arguments are SX401's (folded names) and SX303's (unfoldable).
            index = ATTRIBUTE_FUNCTIONS[site.callee]
            names = site.node.args if index is None else site.node.args[index : index + 1]
            arguments = [a for a in arguments if all(a is not n for n in names)]
        for argument in arguments:
            for element in _argument_elements(argument):
                text = ctx.folder.fold(element)
                if text is not None and _ATTRIBUTE_NAME_TEXT.match(text):
                    callee = site.callee or "a call"
                    yield CheckHit(
                        node=element, fields={"name": text, "function": callee}, evidence=text
                    )


REGISTERED_CHECKS: Mapping[str, Check] = MappingProxyType(_registry)
