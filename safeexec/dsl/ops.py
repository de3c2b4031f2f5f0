"""The ops registry, static side: each op's argument types, result type and iteration cost.

An op ``name`` runs as ``dsl_<name>`` from :mod:`safeexec.sandbox.dsl_runtime` (a test keeps the
two lists equal). Ops that take a function take a ``lambda`` literal, checked with its parameters
bound to the collection's item type; its body's cost counts once per item. A call is checked
against :class:`~safeexec.dsl.context.CheckerContext`, not the checker itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from safeexec.dsl import nodes as n
from safeexec.dsl.context import Binding, CheckerContext, Scope
from safeexec.dsl.cost import Cost
from safeexec.dsl.rules import TYPE_ERROR
from safeexec.dsl.valuetypes import (
    ANY,
    BOOL,
    CAPPED,
    FLOAT,
    INT,
    NONE,
    STR,
    DType,
    Kind,
    list_of,
    map_of,
    with_cap,
)

__all__ = ["OPS", "Op", "OpContext"]


@dataclass(slots=True)
class OpContext:
    """One op call being checked: evaluates arguments, binds lambdas, reports problems."""

    checker: CheckerContext
    call: n.Call
    env: Scope

    def fail(self, message: str) -> DType:
        self.checker.report(TYPE_ERROR, f"{self.call.func}(): {message}", self.call.span)
        return ANY

    def value(self, e: n.Expr | n.Lambda) -> DType:
        return self.checker.expr(e, self.env)

    def function(self, e: n.Expr | n.Lambda, params: tuple[DType, ...]) -> tuple[DType, Cost]:
        """Type a lambda argument with its parameters bound to ``params``; the cost of its body
        (once) is kept apart, for the op to count once per item."""
        if not isinstance(e, n.Lambda):
            self.checker.report(
                TYPE_ERROR, f"{self.call.func}() takes `lambda x: ...` here", e.span
            )
            return ANY, Cost()
        if len(e.params) != len(params):
            self.checker.report(TYPE_ERROR, f"this lambda takes {len(params)} parameter(s)", e.span)
            return ANY, Cost()
        inner = dict(self.env)
        for name, t in zip(e.params, params, strict=True):
            if self.checker.bindable(name, e.span, self.env):
                inner[name] = Binding(t, fixed=True)
        return self.checker.measure(lambda: self.checker.expr(e.body, inner))

    def collection(self, e: n.Expr | n.Lambda) -> tuple[DType, int]:
        return self.checker.iteration(self.value(e), e.span)


@dataclass(frozen=True, slots=True)
class Op:
    """One op: ``check`` types a call and bounds its cost; ``arity`` is (min, max) positional."""

    name: str
    arity: tuple[int, int]
    rule: Callable[[OpContext], DType]
    keywords: frozenset[str] = frozenset()

    def check(self, ctx: OpContext) -> DType:
        call = ctx.call
        low, high = self.arity
        if not low <= len(call.args) <= high:
            count = str(low) if low == high else f"{low} to {high}"
            return ctx.fail(f"takes {count} positional argument(s), got {len(call.args)}")
        bad = [k.name for k in call.keywords if k.name not in self.keywords]
        if bad:
            return ctx.fail(f"unknown keyword argument(s) {', '.join(bad)}")
        return self.rule(ctx)


def _keyword(ctx: OpContext, name: str) -> n.Expr | n.Lambda | None:
    return next((k.value for k in ctx.call.keywords if k.name == name), None)


def _iterating(ctx: OpContext, per_item: Cost, bound: int) -> None:
    """The op runs ``bound`` iterations, each costing ``per_item``."""
    ctx.checker.bounds[id(ctx.call)] = bound
    ctx.checker.cost.add(Cost(iterations=bound)).add(per_item.times(bound))


def _by_function(
    result: Callable[[DType, int, DType], DType], *, optional_fn: bool = False
) -> Callable[[OpContext], DType]:
    """An op over ``(collection, lambda x: ...)`` whose result type ``result`` derives."""

    def rule(ctx: OpContext) -> DType:
        item, bound = ctx.collection(ctx.call.args[0])
        fn_type, per_item = (item, Cost())
        if len(ctx.call.args) > 1:
            fn_type, per_item = ctx.function(ctx.call.args[1], (item,))
        elif not optional_fn:
            return ctx.fail("takes a collection and `lambda x: ...`")
        reverse = _keyword(ctx, "reverse")
        if reverse is not None:
            ctx.value(reverse)
        _iterating(ctx, per_item, bound)
        return result(item, bound, fn_type)

    return rule


def _numeric_result(item: DType, bound: int, fn: DType) -> DType:
    return INT if fn.kind is Kind.INT else FLOAT if fn.numeric else ANY


def _len(ctx: OpContext) -> DType:
    t = ctx.value(ctx.call.args[0])
    if t.kind not in (Kind.LIST, Kind.STR, Kind.MAP, Kind.RECORD, Kind.ANY):
        return ctx.fail(f"needs a list, string or record, got {t}")
    return INT


def _take(ctx: OpContext) -> DType:
    t = ctx.value(ctx.call.args[0])
    count = ctx.value(ctx.call.args[1])
    if t.kind not in (Kind.LIST, Kind.ANY) or count.kind not in (Kind.INT, Kind.ANY):
        return ctx.fail(f"takes a list and an int, got {t} and {count}")
    bound = t.bound if t.kind is Kind.LIST else ctx.checker.limits.max_items
    arg = ctx.call.args[1]
    if isinstance(arg, n.Literal) and isinstance(arg.value, int) and arg.value >= 0:
        bound = min(bound, arg.value)
    return list_of(t.item or ANY, bound)


def _first(ctx: OpContext) -> DType:
    return ctx.collection(ctx.call.args[0])[0]


def _range(ctx: OpContext) -> DType:
    for arg in ctx.call.args:
        t = ctx.value(arg)
        if t.kind not in (Kind.INT, Kind.ANY):
            return ctx.fail(f"takes ints, got {t}")
    literals = [a.value for a in ctx.call.args if isinstance(a, n.Literal)]
    bound = ctx.checker.limits.max_items  # not literal: capped at run time
    if len(literals) == len(ctx.call.args) and all(type(v) is int for v in literals):
        ints = [int(v) for v in literals if type(v) is int]
        start, stop = (0, ints[0]) if len(ints) == 1 else (ints[0], ints[1])
        bound = max(0, stop - start)
    # Making the list is work of its own (a loop over it counts again).
    _iterating(ctx, Cost(), bound)
    return list_of(INT, bound)


def _group(ctx: OpContext) -> DType:
    item, bound = ctx.collection(ctx.call.args[0])
    key, per_item = ctx.function(ctx.call.args[1], (item,))
    if key.kind not in (Kind.STR, Kind.INT, Kind.BOOL, Kind.ANY):
        return ctx.fail(f"the key must be a string or int, got {key}")
    _iterating(ctx, per_item, bound)
    return map_of(list_of(item, bound), bound)


def _join(ctx: OpContext) -> DType:
    item, bound = ctx.collection(ctx.call.args[0])
    sep = ctx.value(ctx.call.args[1]) if len(ctx.call.args) > 1 else STR
    if item.kind not in (Kind.STR, Kind.ANY) or sep.kind not in (Kind.STR, Kind.ANY):
        return ctx.fail(f"joins a list of strings with a string, got list of {item} and {sep}")
    _iterating(ctx, Cost(), bound)
    return STR


def _scalar(result: DType, *accepted: Kind) -> Callable[[OpContext], DType]:
    def rule(ctx: OpContext) -> DType:
        for arg in ctx.call.args:
            t = ctx.value(arg)
            if accepted and t.kind not in (*accepted, Kind.ANY):
                return ctx.fail(f"does not take {t}")
        return result

    return rule


def _same_numeric(ctx: OpContext) -> DType:
    t = ctx.value(ctx.call.args[0])
    if not t.numeric:
        return ctx.fail(f"needs a number, got {t}")
    for arg in ctx.call.args[1:]:
        ctx.value(arg)
    return FLOAT if ctx.call.func == "round" and len(ctx.call.args) > 1 else t


def _split(ctx: OpContext) -> DType:
    _scalar(STR, Kind.STR)(ctx)
    return with_cap(list_of(STR, CAPPED), ctx.checker.limits.max_items)


def _keys_values(ctx: OpContext) -> DType:
    t = ctx.value(ctx.call.args[0])
    cap = ctx.checker.limits.max_items
    if t.kind is Kind.RECORD:
        if ctx.call.func == "keys":
            return list_of(STR, len(t.fields))
        item: DType | None = None
        for _, v in t.fields:
            item = v if item is None else (v if v == item else ANY)
        return list_of(item or ANY, len(t.fields))
    if t.kind not in (Kind.MAP, Kind.ANY):
        return ctx.fail(f"needs a record, got {t}")
    bound = t.bound if t.kind is Kind.MAP else cap
    return list_of(STR if ctx.call.func == "keys" else (t.item or ANY), bound)


def _print(ctx: OpContext) -> DType:
    for arg in ctx.call.args:
        ctx.value(arg)
    return NONE


def _get(ctx: OpContext) -> DType:
    t = ctx.value(ctx.call.args[0])
    k = ctx.value(ctx.call.args[1])
    default = ctx.value(ctx.call.args[2]) if len(ctx.call.args) > 2 else NONE
    if t.kind not in (Kind.MAP, Kind.RECORD, Kind.ANY) or k.kind not in (Kind.STR, Kind.ANY):
        return ctx.fail(f"takes a record and a string key, got {t} and {k}")
    return ANY if default.kind is Kind.NONE else default


_SORT_KEYS = frozenset({"reverse"})

OPS: dict[str, Op] = {
    op.name: op
    for op in (
        Op("len", (1, 1), _len),
        Op("count", (1, 2), _by_function(lambda i, b, f: INT, optional_fn=True)),
        Op("sum", (1, 2), _by_function(_numeric_result, optional_fn=True)),
        Op("avg", (1, 2), _by_function(lambda i, b, f: FLOAT, optional_fn=True)),
        Op("min", (1, 2), _by_function(lambda i, b, f: i, optional_fn=True)),
        Op("max", (1, 2), _by_function(lambda i, b, f: i, optional_fn=True)),
        Op("min_by", (2, 2), _by_function(lambda i, b, f: i)),
        Op("max_by", (2, 2), _by_function(lambda i, b, f: i)),
        Op("map", (2, 2), _by_function(lambda i, b, f: list_of(f, b))),
        Op("filter", (2, 2), _by_function(lambda i, b, f: list_of(i, b))),
        Op("where", (2, 2), _by_function(lambda i, b, f: list_of(i, b))),
        Op("sort", (1, 1), _by_function(lambda i, b, f: list_of(i, b), optional_fn=True),
           _SORT_KEYS),
        Op("sort_by", (2, 2), _by_function(lambda i, b, f: list_of(i, b)), _SORT_KEYS),
        Op("unique", (1, 1), _by_function(lambda i, b, f: list_of(i, b), optional_fn=True)),
        Op("reverse", (1, 1), _by_function(lambda i, b, f: list_of(i, b), optional_fn=True)),
        Op("any", (1, 2), _by_function(lambda i, b, f: BOOL, optional_fn=True)),
        Op("all", (1, 2), _by_function(lambda i, b, f: BOOL, optional_fn=True)),
        Op("take", (2, 2), _take),
        Op("first", (1, 1), _first),
        Op("last", (1, 1), _first),
        Op("range", (1, 2), _range),
        Op("group", (2, 2), _group),
        Op("join", (1, 2), _join),
        Op("split", (1, 2), _split),
        Op("keys", (1, 1), _keys_values),
        Op("values", (1, 1), _keys_values),
        Op("get", (2, 3), _get),
        Op("str", (1, 1), _scalar(STR)),
        Op("int", (1, 1), _scalar(INT, Kind.INT, Kind.FLOAT, Kind.STR, Kind.BOOL)),
        Op("float", (1, 1), _scalar(FLOAT, Kind.INT, Kind.FLOAT, Kind.STR)),
        Op("round", (1, 2), _same_numeric),
        Op("abs", (1, 1), _same_numeric),
        Op("lower", (1, 1), _scalar(STR, Kind.STR)),
        Op("upper", (1, 1), _scalar(STR, Kind.STR)),
        Op("strip", (1, 1), _scalar(STR, Kind.STR)),
        Op("replace", (3, 3), _scalar(STR, Kind.STR)),
        Op("startswith", (2, 2), _scalar(BOOL, Kind.STR)),
        Op("endswith", (2, 2), _scalar(BOOL, Kind.STR)),
        Op("ord", (1, 1), _scalar(INT, Kind.STR)),
        Op("chr", (1, 1), _scalar(STR, Kind.INT)),
        Op("print", (0, 8), _print),
    )
}  # fmt: skip
