"""The module checks: what code reaches, changes or carries through an imported module.

Registered code checks (see :mod:`safeexec.analysis.checks`, which holds the registry).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from safeexec.analysis.sites import CheckHit, ScanContext, clip_text
from safeexec.policy.modes import explicitly_allowed

__all__ = ["module_as_value", "module_mutation", "module_reexport", "reexport_hazard"]

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


def module_reexport(ctx: ScanContext) -> Iterator[CheckHit]:
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


def module_mutation(ctx: ScanContext) -> Iterator[CheckHit]:
    """Assigning or deleting attributes of imported modules (and of what they export)."""
    for site in ctx.attributes:
        if site.rooted and site.base is not None and not isinstance(site.node.ctx, ast.Load):
            name = f"{site.base}.{site.node.attr}"
            yield CheckHit(node=site.node, fields={"name": clip_text(name)}, evidence=name)
    modules = {id(node): qualified for node, qualified, rooted in ctx.references if rooted}
    # Item stores into what a module exports (``textwrap.TextWrapper.unicode_whitespace_trans[32]
    # = 88``) and mutating methods called on it (``collections.abc.Mapping.register(list)``).
    for subscript in ctx.subscripts:
        if not isinstance(subscript.ctx, ast.Load):
            base = modules.get(id(subscript.value))
            if base is not None:
                yield CheckHit(node=subscript, fields={"name": clip_text(base)}, evidence=base)
    for call_site in ctx.calls:
        func = call_site.node.func
        if isinstance(func, ast.Attribute) and func.attr in _SHARED_STATE_MUTATORS:
            base = modules.get(id(func.value))
            if base is not None:
                yield CheckHit(node=call_site.node, fields={"name": clip_text(base)}, evidence=base)
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


def module_as_value(ctx: ScanContext) -> Iterator[CheckHit]:
    """An imported module used as a value the checks cannot follow.

    Attribute reads, plain ``m = module`` rebinding (tracked as an alias) and a few readers
    (``print``, ``dir``, ``getattr`` with its own checks) are followed; a module put in a
    container, passed as an argument or default, matched on, iterated over or bound by a walrus,
    an unpacking or a class body would carry ``pathlib.os`` past SX403 unseen.
    """
    modules = {
        alias.asname or alias.name.partition(".")[0] for node in ctx.imports for alias in node.names
    }
    if not modules:
        return
    for node in ctx.name_reads:
        if node.id not in modules:
            continue
        if _module_use_is_followed(node, ctx.parents.get(id(node)), ctx.parents):
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
