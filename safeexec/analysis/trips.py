"""Static trip counts of loops and constant integer values, as bounded amounts.

One home for reading how often a loop runs from its iterable (``range``, literals, slices,
``islice``, ``zip``, ``itertools``), shared by the estimator's bounds and the tool-call-limit
check. Values are floats (inf when beyond float range), capped at :data:`CAP`; nothing is evaluated.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from dataclasses import dataclass

from safeexec.analysis.qualnames import dotted_name
from safeexec.model.values import Bound, BoundKind

__all__ = ["CAP", "ONE", "ZERO", "Amount", "fixed_sequences", "integer_value", "loop_trips"]

CAP = 1e300  # bounds are capped so they stay finite JSON numbers
_WORST = {BoundKind.KNOWN: 0, BoundKind.UNKNOWN: 1, BoundKind.UNBOUNDED: 2}


@dataclass(frozen=True, slots=True)
class Amount:
    """A lower bound ``value`` with the kind of the bound and the reason it is not known."""

    value: float = 0.0
    kind: BoundKind = BoundKind.KNOWN
    reason: str = ""

    def plus(self, other: Amount) -> Amount:
        if other is ZERO:
            return self
        if self is ZERO:
            return other
        worse = self if _WORST[self.kind] >= _WORST[other.kind] else other
        return Amount(min(self.value + other.value, CAP), worse.kind, worse.reason)

    def times(self, trips: Amount) -> Amount:
        if (trips.kind is BoundKind.KNOWN and trips.value == 0) or self == ZERO:
            return Amount()
        worse = self if _WORST[self.kind] >= _WORST[trips.kind] else trips
        value = 0.0 if trips.value == 0 or self.value == 0 else min(self.value * trips.value, CAP)
        return Amount(value, worse.kind, worse.reason)

    def at_most_as_bad(self, other: Amount) -> Amount:
        """Either of two branches may run: the smaller value, the worse kind."""
        worse = self if _WORST[self.kind] >= _WORST[other.kind] else other
        return Amount(min(self.value, other.value), worse.kind, worse.reason)

    def bound(self) -> Bound:
        if self.kind is BoundKind.UNBOUNDED:
            return Bound.unbounded(self.reason)
        return Bound(kind=self.kind, value=self.value, reason=self.reason)


ZERO = Amount()
ONE = Amount(1.0)


def loop_trips(
    node: ast.expr,
    env: Mapping[str, float],
    sequences: Mapping[str, ast.expr] | None = None,
) -> Amount:
    """How many times a loop over ``node`` runs: KNOWN with the count (an upper bound for a slice
    or ``islice``), or UNKNOWN/UNBOUNDED with the reason; ``env`` holds names bound to constants,
    ``sequences`` names bound to a literal whose length cannot change (see :func:`fixed_sequences`).
    """
    if isinstance(node, ast.Name) and sequences and node.id in sequences:
        return loop_trips(sequences[node.id], env)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return Amount(float(len(node.elts)))
    if isinstance(node, ast.Dict):
        return Amount(float(len(node.keys)))
    if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
        return Amount(float(len(node.value)))
    unknown = Amount(0.0, BoundKind.UNKNOWN, f"the length of the iterable at line {node.lineno}")
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        return _slice_trips(node.value, node.slice, unknown, env)
    if not isinstance(node, ast.Call):
        return unknown
    name = dotted_name(node.func)
    if name in ("itertools.islice", "islice") and len(args := node.args) in (2, 3):
        # islice(it, stop) / islice(it, start, stop) yields at most stop - start items.
        bounds = [integer_value(a, env) if not _is_none(a) else None for a in args[1:]]
        stop = bounds[-1]
        start = bounds[0] if len(bounds) == 2 else 0.0
        if stop is not None and start is not None and not node.keywords:
            return Amount(min(max(stop - start, 0.0), CAP))
        return unknown
    args = node.args
    if name == "range" and 1 <= len(args) <= 3 and not node.keywords:
        values = [integer_value(a, env) for a in args]
        if any(v is None for v in values):
            return unknown
        numbers = [v for v in values if v is not None]
        if len(numbers) == 1:
            start, stop, step = 0.0, numbers[0], 1.0
        else:
            start, stop = numbers[0], numbers[1]
            step = numbers[2] if len(numbers) == 3 else 1.0
        if step == 0 or math.isnan(stop - start):
            return unknown
        trips = math.ceil((stop - start) / step) if math.isfinite(stop - start) else math.inf
        return Amount(min(max(float(trips), 0.0), CAP))
    if name in ("enumerate", "reversed", "sorted", "list", "tuple", "iter") and len(args) == 1:
        return loop_trips(args[0], env, sequences)
    if name == "zip" and args:
        counts = [loop_trips(a, env, sequences) for a in args]
        known = [c for c in counts if c.kind is BoundKind.KNOWN]
        return min(known, key=lambda c: c.value) if len(known) == len(counts) else unknown
    if name in ("itertools.count", "count", "itertools.cycle", "cycle"):
        return Amount(0.0, BoundKind.UNBOUNDED, f"an endless iterator at line {node.lineno}")
    if name in ("itertools.repeat", "repeat") and len(args) == 1 and not node.keywords:
        return Amount(0.0, BoundKind.UNBOUNDED, f"an endless iterator at line {node.lineno}")
    if name in ("itertools.repeat", "repeat") and len(args) + len(node.keywords) == 2:
        times_node = args[1] if len(args) == 2 else node.keywords[0].value
        times = integer_value(times_node, env)
        return unknown if times is None else Amount(min(max(times, 0.0), CAP))
    if name in ("iter",) and len(args) == 2:
        return Amount(0.0, BoundKind.UNKNOWN, f"a sentinel iterator at line {node.lineno}")
    if name in ("itertools.product", "product") and args:
        product = ONE
        for arg in args:
            product = product.times(loop_trips(arg, env))
        for keyword in node.keywords:
            repeat = integer_value(keyword.value, env) if keyword.arg == "repeat" else None
            if repeat is None:
                return unknown
            power = _arithmetic(ast.Pow(), product.value, repeat)
            capped = CAP if power is None else min(power, CAP)
            product = Amount(capped, product.kind, product.reason)
        return product
    return unknown


# Literals whose length a reader can count; ``range(...)`` counts through ``loop_trips`` too.
_LITERALS = (ast.List, ast.Tuple, ast.Set, ast.Dict)
# Where reading a mutable literal's name leaves its length alone: iterated, indexed, measured.
_READ_ONLY_CALLS = frozenset({"len", "enumerate", "reversed", "sorted", "list", "tuple", "zip"})


def fixed_sequences(tree: ast.Module) -> Mapping[str, ast.expr]:
    """Names the module binds once, at its top level, to a literal list, tuple, set or dict or to a
    ``range(...)``, whose length nothing can change: no other binding of the name anywhere (any
    scope, any binding form), and a mutable literal is only ever iterated, indexed or measured
    (``items.append(x)``, ``f(items)`` or ``alias = items`` and the name is not folded)."""
    candidates: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and (
                isinstance(stmt.value, _LITERALS)
                or (isinstance(stmt.value, ast.Call) and dotted_name(stmt.value.func) == "range")
            )
        ):
            candidates[stmt.targets[0].id] = stmt.value
    if not candidates or _reaches_namespaces(tree):
        return {}
    bindings: dict[str, int] = {}
    loose: set[str] = set()
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        for name in _bound_names(node):
            bindings[name] = bindings.get(name, 0) + 1
        if (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and not _read_only_use(node, parents.get(id(node)))
        ):
            loose.add(node.id)
    fixed: dict[str, ast.expr] = {}
    for name, value in candidates.items():
        mutable = isinstance(value, ast.List | ast.Set | ast.Dict)
        if bindings.get(name) == 1 and not (mutable and name in loose):
            fixed[name] = value
    return fixed


# Calls that reach a namespace by its dict (``globals()["items"].append(x)`` names nothing).
_NAMESPACE_CALLS = frozenset({"globals", "locals", "vars", "exec", "eval", "__import__"})


def _reaches_namespaces(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.Call) and dotted_name(node.func) in _NAMESPACE_CALLS
        for node in ast.walk(tree)
    )


def _bound_names(node: ast.AST) -> list[str]:
    """Every name ``node`` binds or unbinds, in any scope and by any form."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
        return [node.id]
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, ast.Global | ast.Nonlocal):
        return list(node.names) * 2  # a rebinding from elsewhere: never fold
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    if isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
        return [node.name]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [node.rest]
    if isinstance(node, ast.arg):
        return [node.arg]
    return []


def _read_only_use(name: ast.Name, parent: ast.AST | None) -> bool:
    if isinstance(parent, ast.For | ast.AsyncFor | ast.comprehension):
        return parent.iter is name
    if isinstance(parent, ast.Subscript):
        return parent.value is name and isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Call):
        return name in parent.args and dotted_name(parent.func) in _READ_ONLY_CALLS
    return False


def _slice_trips(
    value: ast.expr, part: ast.Slice, unknown: Amount, env: Mapping[str, float]
) -> Amount:
    """At most how many items ``value[lower:upper:step]`` holds: a constant slice bounds a
    loop over it whatever ``value`` is (``for hit in hits[:2]`` runs at most twice)."""
    step = 1.0 if part.step is None else integer_value(part.step, env)
    lower = None if part.lower is None else integer_value(part.lower, env)
    upper = None if part.upper is None else integer_value(part.upper, env)
    if step is None or step <= 0 or (part.lower is not None and lower is None):
        return unknown
    if part.upper is not None and upper is None:
        return unknown
    whole = loop_trips(value, env)
    start = 0.0 if lower is None else lower
    if upper is not None and upper >= 0 and start >= 0:
        span = upper - start
    elif upper is None and start < 0:
        span = -start  # `[-3:]`: the last three at most
    elif upper is not None and upper < 0 and start < 0:
        span = upper - start  # `[-5:-2]`
    elif whole.kind is BoundKind.KNOWN:
        span = whole.value  # never more than the whole
    else:
        return unknown
    count = math.ceil(max(span, 0.0) / step)
    if whole.kind is BoundKind.KNOWN:
        return Amount(min(float(count), whole.value, CAP))
    return Amount(min(float(count), CAP))


def integer_value(node: ast.expr, env: Mapping[str, float], depth: int = 0) -> float | None:
    """The integer ``node`` evaluates to (a float: inf beyond float range), or None if unknown."""
    if depth > 50:
        return None
    if isinstance(node, ast.Constant):
        if type(node.value) is int:
            return _as_float(node.value)
        return None
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = integer_value(node.operand, env, depth + 1)
        return None if inner is None else -inner
    if (
        isinstance(node, ast.Call)
        and dotted_name(node.func) in ("int", "len")
        and len(node.args) == 1
    ):
        if dotted_name(node.func) == "len":
            size = loop_trips(node.args[0], env)
            return size.value if size.kind is BoundKind.KNOWN else None
        return integer_value(node.args[0], env, depth + 1)
    if not isinstance(node, ast.BinOp):
        return None
    left = integer_value(node.left, env, depth + 1)
    right = integer_value(node.right, env, depth + 1)
    if left is None or right is None:
        return None
    return _arithmetic(node.op, left, right)


def _arithmetic(op: ast.operator, left: float, right: float) -> float | None:
    try:
        if isinstance(op, ast.Add):
            return left + right
        if isinstance(op, ast.Sub):
            return left - right
        if isinstance(op, ast.Mult):
            return left * right
        if isinstance(op, ast.FloorDiv) and right != 0:
            return math.floor(left / right) if math.isfinite(left / right) else left / right
        if isinstance(op, ast.Pow):
            if right < 0:
                return None
            if abs(left) < 2:
                return left**right if math.isfinite(right) else (0.0 if abs(left) < 1 else 1.0)
            log10 = right * math.log10(abs(left))
            if log10 > 300:
                return math.inf
            return float(abs(left) ** right) * (1 if left > 0 or right % 2 == 0 else -1)
        if isinstance(op, ast.LShift) and right >= 0:
            return math.inf if right > 1000 else left * 2.0**right
    except (OverflowError, ValueError, ZeroDivisionError):
        return math.inf
    return None


def _as_float(value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
