"""Code checks: what a `match` table cannot express, registered by name (``check = "<name>"``).

This module holds the registry and the name checks (attribute, import and format names given as
data); the path, module and tool checks live beside it in ``path_checks``, ``module_checks`` and
``tool_checks``.

Each check reads the :class:`~safeexec.analysis.sites.ScanContext` built by the scanner's one
traversal and yields :class:`~safeexec.analysis.sites.CheckHit` values whose ``fields`` fill the
rule's message placeholders (the names are pinned in :mod:`safeexec.policy.vocabulary`). A check
that raises becomes an ``SX900`` deny finding in the scanner: checks fail closed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType

from safeexec.analysis.module_checks import module_as_value, module_mutation, module_reexport
from safeexec.analysis.path_checks import path_outside_workdir
from safeexec.analysis.sites import CheckHit, ScanContext, clip_text
from safeexec.analysis.tool_checks import tool_call_limit, tool_not_granted, tool_requires_approval
from safeexec.model.values import Enforcement
from safeexec.policy.schema import MatchKind

__all__ = ["ATTRIBUTE_FUNCTIONS", "IMPORT_FUNCTIONS", "REGISTERED_CHECKS"]

Check = Callable[[ScanContext], Iterator[CheckHit]]


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


def _object_namespace_dict(ctx: ScanContext) -> Iterator[CheckHit]:
    """``vars`` anywhere, except ``vars(obj)`` of one argument that is no module.

    ``vars(point)`` of the code's own object is ordinary; ``vars(os)['system']`` would hide a
    module attribute from the call rules, and ``vars()`` is ``locals()``. Restricted mode's
    ``vars`` takes only instances of the code's own classes (``Guards.safe_vars``).
    """
    own_objects: set[int] = set()
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


def _dynamic_import(ctx: ScanContext) -> Iterator[CheckHit]:
    """__import__/importlib.import_module with a module name that is not a foldable constant."""
    for site in ctx.calls:
        if site.callee not in IMPORT_FUNCTIONS:
            continue
        first = site.node.args[0] if site.node.args else None
        if first is None or isinstance(first, ast.Starred) or ctx.folder.fold(first) is None:
            yield CheckHit(node=site.node, fields={"function": site.callee}, evidence=site.callee)


_FORMAT_CALLS = frozenset({"format", "format_map", "vformat", "get_field"})


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


def _attribute_name_argument(ctx: ScanContext) -> Iterator[CheckHit]:
    """A string naming a dunder or a private helper, passed to a call (alone or in a literal).

    In native mode the code holds its whole interpreter behind the kernel layers: only a name
    that one of the policy's attribute rules denies there counts (``getLogger("__main__")`` runs,
    ``attrgetter("__globals__")`` does not), so data cannot bypass those rules.
    """
    denied = _natively_denied_attributes(ctx) if ctx.mode == "native" else None
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
                if (
                    text is not None
                    and _ATTRIBUTE_NAME_TEXT.match(text)
                    and (denied is None or text in denied)
                ):
                    callee = site.callee or "a call"
                    yield CheckHit(
                        node=element, fields={"name": text, "function": callee}, evidence=text
                    )


# Timing helpers that compile their statement and setup when given strings (argument index, name).
_TIMED_CODE = MappingProxyType(
    {
        "timeit.timeit": ((0, "stmt"), (1, "setup")),
        "timeit.repeat": ((0, "stmt"), (1, "setup")),
        "timeit.Timer": ((0, "stmt"), (1, "setup")),
        "timeit.main": (),
    }
)


def _timed_code_string(ctx: ScanContext) -> Iterator[CheckHit]:
    """A timing helper handed code that is not a lambda or a ``def`` function of the code."""
    functions = _def_only_names(ctx.tree)
    for site in ctx.calls:
        callee = site.callee
        if callee is None or callee not in _TIMED_CODE:
            continue
        slots = _TIMED_CODE[callee]
        given = [
            argument
            for index, keyword in slots
            for argument in (
                site.node.args[index : index + 1]
                + [k.value for k in site.node.keywords if k.arg == keyword]
            )
        ]
        starred = any(isinstance(a, ast.Starred) for a in site.node.args) or any(
            k.arg is None for k in site.node.keywords
        )
        if (
            not slots
            or starred
            or any(
                not isinstance(a, ast.Lambda)
                and not (isinstance(a, ast.Name) and a.id in functions)
                for a in given
            )
        ):
            yield CheckHit(node=site.node, fields={"function": callee}, evidence=callee)


def _def_only_names(tree: ast.Module) -> frozenset[str]:
    """Names the module binds only by ``def`` (any other binding of the name disqualifies it)."""
    defined: set[str] = set()
    other: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            defined.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            other.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            other.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ClassDef):
            other.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            other.update(node.names)
        elif isinstance(node, ast.arg):
            other.add(node.arg)
    return frozenset(defined - other)


def _natively_denied_attributes(ctx: ScanContext) -> frozenset[str]:
    """The attribute names the policy's attribute rules deny in native mode."""
    return frozenset(
        name
        for rule in ctx.policy.rules
        if rule.match is not None
        and rule.match.kind is MatchKind.ATTRIBUTE
        and rule.enforcement is Enforcement.DENY
        and rule.applies_in("native")
        for name in rule.match.names
    )


REGISTERED_CHECKS: Mapping[str, Check] = MappingProxyType(
    {
        "object-namespace-dict": _object_namespace_dict,
        "dynamic-attribute-name": _dynamic_attribute_name,
        "dynamic-import": _dynamic_import,
        "path-outside-workdir": path_outside_workdir,
        "module-reexport": module_reexport,
        "module-mutation": module_mutation,
        "module-as-value": module_as_value,
        "dynamic-format-template": _dynamic_format_template,
        "tool-not-granted": tool_not_granted,
        "tool-requires-approval": tool_requires_approval,
        "tool-call-limit": tool_call_limit,
        "string-annotation-code": _string_annotation_code,
        "attribute-name-argument": _attribute_name_argument,
        "timed-code-string": _timed_code_string,
    }
)
