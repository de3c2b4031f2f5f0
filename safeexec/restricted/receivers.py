"""The method receiver fast paths (``self.x``): which accesses a method makes on its receiver,
read off the syntax tree, and the inline forms of its private reads and augmented assignments
(the transformer puts them in place)."""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

from safeexec.restricted.allowlist import DENIED_ATTRIBUTES

# A method's local: is its receiver an instance of a class in ``_simple_`` (set on entry)?
SIMPLE_SELF = "_simple_self_"
# Nodes with a scope of their own: a name inside them may not be the method's (the first
# iterable of a comprehension and a nested function's defaults are not, but are skipped too).
_NESTED_SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def method_receiver(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The name of the first positional parameter of ``node``, if nothing in its body (nested
    scopes included) ever binds or deletes that name: it then names the same object for the
    whole call."""
    params = [*node.args.posonlyargs, *node.args.args]
    if not params:
        return None
    name = params[0].arg
    if any(_binds(inner, name) for stmt in node.body for inner in ast.walk(stmt)):
        return None
    return name


def _binds(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name and not isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.Global | ast.Nonlocal):
        return name in node.names
    if isinstance(
        node,
        ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.ExceptHandler,
    ):
        return node.name == name
    if isinstance(node, ast.MatchAs | ast.MatchStar):
        return node.name == name
    if isinstance(node, ast.MatchMapping):
        return node.rest == name
    if isinstance(node, ast.alias):
        return (node.asname or node.name.split(".")[0]) == name
    if isinstance(node, ast.arg):
        return node.arg == name  # a nested parameter shadows it only there; refused anyway
    return False


def fast_path_name(name: str) -> bool:
    """Names the fast paths take: not dunders or other names ending in ``_`` (the full guard
    decides those), not the public names on the denied list (nor the mediated ones in it)."""
    return not name.endswith("_") and name not in DENIED_ATTRIBUTES


def scope_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of ``body``'s own scope: nested scopes and annotations left out."""
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, _NESTED_SCOPES):
            continue
        yield node
        if isinstance(node, ast.AnnAssign):
            todo.extend(part for part in (node.target, node.value) if part is not None)
        else:
            todo.extend(ast.iter_child_nodes(node))


def receiver_attributes(body: list[ast.stmt], receiver: str) -> list[ast.Attribute]:
    """The reads, writes and deletes ``receiver.name`` of a fast-path name in ``body``'s own
    scope (annotations left out: they take no rewritten expression)."""
    return [
        node
        for node in scope_nodes(body)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == receiver
        and fast_path_name(node.attr)
    ]


def name_load(name: str) -> ast.Name:
    return ast.Name(name, ast.Load())


def runtime_call(func: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=name_load(func), args=list(args), keywords=[])


def type_in(receiver: str, classes: str) -> ast.Compare:
    """``_type_(receiver) in classes``."""
    return ast.Compare(
        left=runtime_call("_type_", name_load(receiver)),
        ops=[ast.In()],
        comparators=[name_load(classes)],
    )


def _type_not_refused(value: ast.expr) -> ast.Compare:
    """``_type_(value) not in _refused_``."""
    return ast.Compare(
        left=runtime_call("_type_", value), ops=[ast.NotIn()], comparators=[name_load("_refused_")]
    )


def private_read(receiver: str, name: str) -> ast.expr:
    """``self._name`` (``name`` mangled) in a method::

        _value_ if _simple_self_ and _type_(_value_ := _lookup_(self, '_name', _absent_))
            not in _refused_ else _getattr_(self, '_name')

    ``_lookup_`` is the builtin ``getattr``; a module, or nothing found (``_absent_``), goes to
    the full guard. On a class in ``_simple_`` the lookup finds a name exactly where the full
    guard calls it the code's own (``Guards.simple_own``)."""
    lookup = runtime_call(
        "_lookup_", name_load(receiver), ast.Constant(name), name_load("_absent_")
    )
    value = ast.NamedExpr(target=ast.Name("_value_", ast.Store()), value=lookup)
    return ast.IfExp(
        test=ast.BoolOp(op=ast.And(), values=[name_load(SIMPLE_SELF), _type_not_refused(value)]),
        body=name_load("_value_"),
        orelse=runtime_call("_getattr_", name_load(receiver), ast.Constant(name)),
    )


def private_augmented(
    node: ast.AugAssign, receiver: str, name: str, value: ast.expr, hook: ast.expr
) -> list[ast.stmt]:
    """``self._name op= v`` (``name`` mangled, ``value`` the transformed ``v``, ``hook`` the
    ``_augwrite_`` call) in a method, as statements::

        _current_ = _absent_            # or self._name, when _simple_self_ and it is found
        if _type_(_current_) not in _refused_ and _current_ is self._name:
            _current_ op= v
            self._name = _current_
        else:
            _augwrite_(self, '_name')._name op= v

    The inline branch takes what ``_augwrite_`` lets through: a value the read guard hands out
    as it is, which a second read gives again (a bound method or a property's fresh value is
    refused). The operator then works on the value checked, read once."""

    def attribute(ctx: ast.expr_context) -> ast.Attribute:
        return ast.Attribute(name_load(receiver), name, ctx)

    def current(ctx: ast.expr_context) -> ast.Name:
        return ast.Name("_current_", ctx)

    absent = ast.Assign(targets=[current(ast.Store())], value=name_load("_absent_"))
    found = ast.Try(
        body=[ast.Assign(targets=[current(ast.Store())], value=attribute(ast.Load()))],
        handlers=[
            ast.ExceptHandler(
                type=name_load("_attribute_error_"), name=None, body=[copy.deepcopy(absent)]
            )
        ],
        orelse=[],
        finalbody=[],
    )
    read = ast.If(test=name_load(SIMPLE_SELF), body=[found], orelse=[absent])
    same = ast.Compare(
        left=current(ast.Load()), ops=[ast.Is()], comparators=[attribute(ast.Load())]
    )
    inline = [
        ast.AugAssign(target=current(ast.Store()), op=node.op, value=value),
        ast.Assign(targets=[attribute(ast.Store())], value=current(ast.Load())),
    ]
    guarded = ast.AugAssign(
        target=ast.Attribute(hook, name, ast.Store()), op=node.op, value=copy.deepcopy(value)
    )
    test = ast.BoolOp(op=ast.And(), values=[_type_not_refused(current(ast.Load())), same])
    return [read, ast.If(test=test, body=inline, orelse=[guarded])]
