"""Static resource bounds of a parsed action, computed without running (or folding) the code.

Units: ``cpu`` in basic operations (syntax nodes evaluated, loop iterations), ``memory`` in bytes
(the largest single allocation plus what loops append), ``output`` in bytes printed, ``tool_calls``
in calls of the named tools. Each bound is ``known`` (every quantity it depends on is a constant),
``unbounded`` (a loop that cannot end, an unconditional recursion, an endless iterator) or
``unknown`` with the reason; a known or unknown bound's value is what the constants prove the code
will need at least (loops with a ``break``, ``return`` or ``raise`` count as possibly ending early).
Huge constants such as ``2**10**10`` are sized with logarithms, never evaluated.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from safeexec.analysis.qualnames import dotted_name, import_bindings, qualified_name
from safeexec.analysis.trips import CAP, ONE, ZERO, Amount, integer_value, loop_trips
from safeexec.model.values import BoundKind, Estimate
from safeexec.parse import Parsed
from safeexec.parse.fields import CHILD_FIELDS

__all__ = ["estimate"]

_MAX_CALL_DEPTH = 40  # deeper static call chains are left unknown rather than followed
_POINTER_BYTES = 8
_SET_ENTRY_BYTES = 32
_DICT_ENTRY_BYTES = 64
_CONSUMERS = frozenset(
    {"sum", "list", "tuple", "set", "frozenset", "sorted", "min", "max", "any", "all", "dict"}
)
_SEQUENCE_BUILDERS = {"list": _POINTER_BYTES, "tuple": _POINTER_BYTES, "sorted": _POINTER_BYTES}
_ARRAY_CONSTRUCTORS = frozenset(
    f"numpy.{f}" for f in ("zeros", "ones", "empty", "full", "arange", "random.rand", "eye")
)
_LEAVES = frozenset({ast.Name, ast.Constant})
_EXPRESSION_PARTS = (ast.expr, ast.keyword, ast.comprehension)
_COMPREHENSIONS = frozenset({ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp})
_EXIT_CALLS = frozenset({"exit", "quit", "sys.exit", "os._exit"})
_BRANCHING = (
    ast.If,
    ast.IfExp,
    ast.While,
    ast.For,
    ast.AsyncFor,
    ast.Try,
    ast.TryStar,
    ast.Match,
    ast.BoolOp,
    ast.Raise,
    ast.Assert,
    ast.Global,  # `global f; f = other; f()` rebinds the name: not a call to itself
    ast.Nonlocal,
)


def estimate(parsed: Parsed, *, tool_names: Collection[str] = ()) -> Estimate:
    """Return static CPU, memory, output and tool-call bounds of ``parsed``; never runs the code.

    ``tool_names`` are the tools bound into the session (called by plain name); with none, the
    code can call no tool and ``tool_calls`` is known to be 0. A crash of the estimator itself
    propagates: the gate (:func:`safeexec.gate.check`) turns it into an SX900 deny.
    """
    return _Estimator(parsed.tree, frozenset(tool_names)).run()


@dataclass(slots=True)
class _Cost:
    """What a statement or block costs: CPU steps, output, tool calls, memory growth and peak."""

    cpu: Amount = ZERO
    output: Amount = ZERO
    tools: Amount = ZERO
    growth: Amount = ZERO  # bytes appended, which loops multiply
    peak: float = 0.0  # the largest single allocation, which loops do not multiply
    peak_reason: str = ""

    def add(self, other: _Cost) -> None:
        self.cpu = self.cpu.plus(other.cpu)
        if other.output is ZERO and other.tools is ZERO and other.growth is ZERO:
            if other.peak > self.peak:
                self.allocate(other.peak, other.peak_reason)
            return
        self.output = self.output.plus(other.output)
        self.tools = self.tools.plus(other.tools)
        self.growth = self.growth.plus(other.growth)
        self.allocate(other.peak, other.peak_reason)

    def allocate(self, size: float, reason: str) -> None:
        if size > self.peak:
            self.peak, self.peak_reason = min(size, CAP), reason

    def scaled(self, trips: Amount) -> _Cost:
        return _Cost(
            cpu=self.cpu.times(trips),
            output=self.output.times(trips),
            tools=self.tools.times(trips),
            growth=self.growth.times(trips),
            peak=self.peak if not (trips.kind is BoundKind.KNOWN and trips.value == 0) else 0.0,
            peak_reason=self.peak_reason,
        )

    def either(self, other: _Cost) -> _Cost:
        return _Cost(
            cpu=self.cpu.at_most_as_bad(other.cpu),
            output=self.output.at_most_as_bad(other.output),
            tools=self.tools.at_most_as_bad(other.tools),
            growth=self.growth.at_most_as_bad(other.growth),
            peak=max(self.peak, other.peak),
            peak_reason=self.peak_reason if self.peak >= other.peak else other.peak_reason,
        )


_LEAF_COST = _Cost(cpu=ONE)


@dataclass(slots=True)
class _Function:
    """A function defined in the code, its cost once computed, and whether it was called."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    cost: _Cost | None = None
    in_progress: bool = False
    called: bool = False


@dataclass(slots=True)
class _Estimator:
    """One walk over a module's tree, costing each statement in the names it knows so far."""

    tree: ast.Module
    tool_names: frozenset[str]
    functions: dict[str, _Function] = field(default_factory=dict)
    uncalled: list[_Function] = field(default_factory=list)
    env: dict[str, float] = field(default_factory=dict)
    modules: dict[str, str] = field(default_factory=dict)  # import aliases: np -> numpy
    call_stack: list[_Function] = field(default_factory=list)
    handled_depth: int = 0  # how many enclosing try blocks have exception handlers

    def run(self) -> Estimate:
        total = self._block(self.tree.body)
        # Functions never called by name (methods, callbacks, decorated) may still run: once.
        seen: set[int] = set()
        for function in [*self.functions.values(), *self.uncalled]:
            if not function.called and id(function) not in seen:
                seen.add(id(function))
                total.add(self._function_cost(function))
        memory = total.growth.plus(Amount(total.peak))
        if memory.kind is BoundKind.KNOWN:
            dominant = total.peak_reason if total.peak >= total.growth.value else "items appended"
            memory = Amount(memory.value, BoundKind.KNOWN, dominant if memory.value else "")
        return Estimate(
            cpu=total.cpu.bound(),
            memory=memory.bound(),
            output=total.output.bound(),
            tool_calls=total.tools.bound(),
        )

    # ---------------------------------------------------------------------------------------
    # Statements

    def _block(self, body: Iterable[ast.stmt]) -> _Cost:
        total = _Cost()
        for stmt in body:
            total.add(self._statement(stmt))
        return total

    def _statement(self, stmt: ast.stmt) -> _Cost:
        cost = _Cost(cpu=ONE)
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            for expr in [*stmt.decorator_list, *stmt.args.defaults, *stmt.args.kw_defaults]:
                if expr is not None:
                    cost.add(self._expr(expr))
            function = _Function(stmt)
            previous = self.functions.get(stmt.name)
            if previous is not None and not previous.called:
                self.uncalled.append(previous)
            self.functions[stmt.name] = function
            self.env.pop(stmt.name, None)
            return cost
        if isinstance(stmt, ast.ClassDef):
            for expr in [*stmt.decorator_list, *stmt.bases]:
                cost.add(self._expr(expr))
            for inner in stmt.body:
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
                    self.uncalled.append(_Function(inner))
                else:
                    cost.add(self._statement(inner))
            return cost
        if isinstance(stmt, ast.For | ast.AsyncFor):
            cost.add(self._expr(stmt.iter))
            trips = loop_trips(stmt.iter, self.env)
            self._forget_targets(stmt.target)
            if _exits_early(stmt.body) or (
                self.handled_depth and trips.kind is BoundKind.UNBOUNDED
            ):
                trips = Amount(
                    0.0, BoundKind.UNKNOWN, f"the loop at line {stmt.lineno} may end early"
                )
            body = self._block(stmt.body)
            body.cpu = body.cpu.plus(ONE)
            cost.add(body.scaled(trips))
            cost.add(self._block(stmt.orelse))
            return cost
        if isinstance(stmt, ast.While):
            cost.add(self._expr(stmt.test))
            truth = _constant_truth(stmt.test)
            if truth is False:
                return cost
            body = self._block(stmt.body)
            body.cpu = body.cpu.plus(ONE)
            exception_exit = self.handled_depth > 0 and _may_raise(stmt.body)
            if truth is True and not exception_exit and not _exits_early(stmt.body):
                trips = Amount(
                    0.0,
                    BoundKind.UNBOUNDED,
                    f"the loop at line {stmt.lineno} never ends (no break, return, raise or await)",
                )
            else:
                trips = Amount(
                    0.0, BoundKind.UNKNOWN, f"the trip count of the loop at line {stmt.lineno}"
                )
            cost.add(body.scaled(trips))
            cost.add(self._block(stmt.orelse))
            return cost
        if isinstance(stmt, ast.If):
            cost.add(self._expr(stmt.test))
            truth = _constant_truth(stmt.test)
            if truth is True:
                cost.add(self._block(stmt.body))
            elif truth is False:
                cost.add(self._block(stmt.orelse))
            else:
                cost.add(self._block(stmt.body).either(self._block(stmt.orelse)))
            return cost
        if isinstance(stmt, ast.Try | ast.TryStar):
            # Inside a try with handlers an exception is a way out of a loop (`while True:
            # it.pop()` ended by KeyError), so loops there are not provably endless.
            self.handled_depth += bool(stmt.handlers)
            try:
                cost.add(self._block(stmt.body))
            finally:
                self.handled_depth -= bool(stmt.handlers)
            for handler in stmt.handlers:
                cost.add(self._block(handler.body).either(_Cost()))
            cost.add(self._block(stmt.orelse).either(_Cost()))
            cost.add(self._block(stmt.finalbody))
            return cost
        if isinstance(stmt, ast.With | ast.AsyncWith):
            for item in stmt.items:
                cost.add(self._expr(item.context_expr))
                if item.optional_vars is not None:
                    self._forget_targets(item.optional_vars)
            cost.add(self._block(stmt.body))
            return cost
        if isinstance(stmt, ast.Match):
            cost.add(self._expr(stmt.subject))
            branches = [self._block(case.body) for case in stmt.cases]
            if branches:
                combined = branches[0]
                for branch in branches[1:]:
                    combined = combined.either(branch)
                cost.add(combined.either(_Cost()))
            return cost
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            self.modules.update(import_bindings(stmt))
            return cost
        if isinstance(stmt, ast.Assign):
            cost.add(self._expr(stmt.value))
            value = integer_value(stmt.value, self.env)
            for target in stmt.targets:
                self._forget_targets(target)
            if (
                len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and value is not None
            ):
                self.env[stmt.targets[0].id] = value
            return cost
        if isinstance(stmt, ast.AugAssign):
            cost.add(self._expr(stmt.value))
            self._forget_targets(stmt.target)
            if isinstance(stmt.op, ast.Add):
                grown = _literal_size(stmt.value)
                if grown:
                    cost.growth = cost.growth.plus(Amount(grown))
            return cost
        for name in CHILD_FIELDS[stmt.__class__]:  # ast.iter_child_nodes, expressions only
            value = getattr(stmt, name, None)
            for child in value if value.__class__ is list else (value,):
                if isinstance(child, ast.expr):
                    cost.add(self._expr(child))
        if isinstance(stmt, ast.AnnAssign | ast.Delete):
            for target in [stmt.target] if isinstance(stmt, ast.AnnAssign) else stmt.targets:
                self._forget_targets(target)
        return cost

    def _forget_targets(self, target: ast.expr) -> None:
        if target.__class__ is ast.Name:  # the common target: nothing below it to walk
            self.env.pop(target.id, None)
            return
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                self.env.pop(node.id, None)

    # ---------------------------------------------------------------------------------------
    # Expressions (iterative: expression trees can be deeper than the recursion limit)

    def _expr(self, root: ast.expr) -> _Cost:
        if root.__class__ in _LEAVES:
            return _LEAF_COST  # callers never mutate what _expr returns
        cost = _Cost()
        nodes = 0
        stack: list[ast.AST] = [root]
        while stack:
            node = stack.pop()
            nodes += 1
            cls = node.__class__
            if cls in _LEAVES:
                continue
            if cls is ast.Lambda:
                continue  # its body runs only when called
            if cls in _COMPREHENSIONS:
                cost.add(self._comprehension(node))  # type: ignore[arg-type]
                continue
            if cls is ast.Call:
                self._call(node, cost)  # type: ignore[arg-type]
            elif cls is ast.BinOp:
                self._binop(node, cost)  # type: ignore[arg-type]
            elif cls is ast.Compare:
                self._membership(node, cost)  # type: ignore[arg-type]
            for field_name in CHILD_FIELDS[cls]:
                value = getattr(node, field_name, None)
                if value.__class__ is list:
                    stack += [v for v in value if isinstance(v, ast.AST)]
                elif isinstance(value, _EXPRESSION_PARTS):
                    stack.append(value)
        cost.cpu = cost.cpu.plus(Amount(float(nodes)))
        return cost

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp
    ) -> _Cost:
        cost = _Cost()
        trips = ONE
        filtered = False
        for generator in node.generators:
            cost.add(self._expr(generator.iter).scaled(trips))
            trips = trips.times(loop_trips(generator.iter, self.env))
            filtered = filtered or bool(generator.ifs)
            for condition in generator.ifs:
                cost.add(self._expr(condition).scaled(trips))
        parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        element = _Cost(cpu=ONE)
        for part in parts:
            element.add(self._expr(part))
        if filtered:
            element = element.either(_Cost())
        cost.add(element.scaled(trips))
        if not filtered and trips.kind is BoundKind.KNOWN:
            per_item = {ast.ListComp: _POINTER_BYTES, ast.SetComp: _SET_ENTRY_BYTES}.get(
                type(node), _DICT_ENTRY_BYTES if isinstance(node, ast.DictComp) else 0
            )
            if per_item:
                cost.allocate(
                    trips.value * per_item,
                    f"a comprehension of {_count(trips.value)} items at line {node.lineno}",
                )
        return cost

    def _call(self, node: ast.Call, cost: _Cost) -> None:
        resolved = qualified_name(node.func, self.modules)
        if resolved is None:
            return
        name = resolved[0]
        if name in _ARRAY_CONSTRUCTORS and node.args:
            self._array(node, name, cost)
        function = self.functions.get(name)
        if function is not None:
            function.called = True
            cost.add(self._function_cost(function))
        if name in self.tool_names:
            cost.tools = cost.tools.plus(ONE)
        if name == "print":
            printed = 1.0 + sum(
                len(a.value)
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            )
            cost.output = cost.output.plus(Amount(printed))
        elif name in _CONSUMERS and len(node.args) == 1:
            trips = loop_trips(node.args[0], self.env)
            # A producer call (``range``, ``itertools.repeat(x, n)``, ``itertools.count()``) is
            # consumed in C: its whole length is work, and memory for the builders.
            if isinstance(node.args[0], ast.Call) and trips.kind is not BoundKind.UNKNOWN:
                cost.cpu = cost.cpu.plus(trips)
                per_item = _SEQUENCE_BUILDERS.get(name) or (
                    _SET_ENTRY_BYTES if name in ("set", "frozenset") else 0
                )
                if per_item and trips.kind is BoundKind.KNOWN:
                    cost.allocate(
                        trips.value * per_item,
                        f"{name}() of {_count(trips.value)} items at line {node.lineno}",
                    )
        elif name in ("bytearray", "bytes") and len(node.args) == 1:
            size = integer_value(node.args[0], self.env)
            if size is not None and size > 0:
                cost.allocate(size, f"{name}({_count(size)}) at line {node.lineno}")
        elif name in ("math.factorial", "factorial") and len(node.args) == 1:
            n = integer_value(node.args[0], self.env)
            if n is not None and n > 1:
                bits = math.lgamma(min(n, CAP) + 1) / math.log(2) if n < CAP else CAP
                cost.allocate(bits / 8, f"factorial({_count(n)}) at line {node.lineno}")
                cost.cpu = cost.cpu.plus(Amount(min(n, CAP)))
        elif name == "pow" and len(node.args) == 2:
            self._power(node.args[0], node.args[1], node.lineno, cost)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("append", "add", "insert"):
            cost.growth = cost.growth.plus(Amount(_POINTER_BYTES))
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "extend" and node.args:
            size = _literal_size(node.args[0])
            cost.growth = cost.growth.plus(Amount(size))

    def _membership(self, node: ast.Compare, cost: _Cost) -> None:
        """``x in producer()`` scans the producer in C (a ``range`` answers arithmetically)."""
        for op, right in zip(node.ops, node.comparators, strict=True):
            if not isinstance(op, ast.In | ast.NotIn) or not isinstance(right, ast.Call):
                continue
            if dotted_name(right.func) == "range":
                continue
            trips = loop_trips(right, self.env)
            if trips.kind is not BoundKind.UNKNOWN:
                cost.cpu = cost.cpu.plus(trips)

    def _array(self, node: ast.Call, name: str, cost: _Cost) -> None:
        """numpy constructors with constant sizes: 8 bytes per element (float64/int64)."""
        values = [integer_value(a, self.env) for a in node.args[:3]]
        elements: float
        if name == "numpy.arange":
            if any(v is None for v in values):
                return
            numbers = [v for v in values if v is not None]
            if len(numbers) == 1:
                elements = numbers[0]
            else:
                step = numbers[2] if len(numbers) == 3 else 1.0
                if step == 0:
                    return
                elements = (numbers[1] - numbers[0]) / step
        elif name == "numpy.eye":
            if values[0] is None:
                return
            elements = values[0] * values[0]
        else:
            shape = node.args[0]
            dims: list[ast.expr] = list(node.args)
            if name != "numpy.random.rand":
                dims = list(shape.elts) if isinstance(shape, ast.Tuple | ast.List) else [shape]
            elements = 1.0
            for dim in dims:
                size = integer_value(dim, self.env)
                if size is None:
                    return
                elements *= max(size, 0.0)
        if elements > 0:
            cost.allocate(
                min(elements * _POINTER_BYTES, CAP),
                f"{name}() of {_count(elements)} elements at line {node.lineno}",
            )

    def _binop(self, node: ast.BinOp, cost: _Cost) -> None:
        if isinstance(node.op, ast.Mult):
            for sequence, count in ((node.left, node.right), (node.right, node.left)):
                size = _literal_size(sequence)
                if not size:
                    continue
                times = integer_value(count, self.env)
                if times is not None and times > 0:
                    total = min(size * times, CAP)
                    cost.allocate(
                        total, f"a sequence repeated {_count(times)} times at line {node.lineno}"
                    )
                return
        elif isinstance(node.op, ast.Pow):
            self._power(node.left, node.right, node.lineno, cost)
        elif isinstance(node.op, ast.LShift):
            shift = integer_value(node.right, self.env)
            if shift is not None and shift > 64:
                cost.allocate(
                    shift / 8, f"a left shift by {_count(shift)} bits at line {node.lineno}"
                )

    def _power(self, base_node: ast.expr, exponent_node: ast.expr, line: int, cost: _Cost) -> None:
        base = integer_value(base_node, self.env)
        exponent = integer_value(exponent_node, self.env)
        if base is None or exponent is None or abs(base) < 2 or exponent <= 64:
            return
        bits = CAP if math.isinf(exponent) else exponent * math.log2(min(abs(base), CAP))
        cost.allocate(bits / 8, f"a power with {_count(bits)} bits at line {line}")

    def _function_cost(self, function: _Function) -> _Cost:
        if function.cost is not None:
            return function.cost
        name = function.node.name
        if function.in_progress:
            # The cycle is every function from the recursive one to the innermost call; it
            # cannot stop only if none of them branches.
            start = next(i for i, f in enumerate(self.call_stack) if f is function)
            cycle = self.call_stack[start:]
            unconditional = not any(
                isinstance(n, _BRANCHING) for member in cycle for n in ast.walk(member.node)
            )
            if unconditional:
                return _Cost(
                    cpu=Amount(0.0, BoundKind.UNBOUNDED, f"{name}() calls itself unconditionally")
                )
            return _Cost(cpu=Amount(0.0, BoundKind.UNKNOWN, f"{name}() is recursive"))
        if len(self.call_stack) >= _MAX_CALL_DEPTH:
            return _Cost(
                cpu=Amount(0.0, BoundKind.UNKNOWN, f"the call chain through {name}() is too deep")
            )
        function.in_progress = True
        self.call_stack.append(function)
        saved, saved_handled = self.env, self.handled_depth
        self.handled_depth = 0  # a function's cost is memoised: it must not depend on the caller
        parameters = _parameter_names(function.node)
        self.env = {k: v for k, v in saved.items() if k not in parameters}
        try:
            function.cost = self._block(function.node.body)
        finally:
            self.env, self.handled_depth = saved, saved_handled
            function.in_progress = False
            self.call_stack.pop()
        return function.cost


def _count(value: float) -> str:
    if math.isinf(value) or value >= CAP:
        return "more than 1e300"
    return f"{value:.3g}" if value >= 1e6 else f"{value:g}"


def _literal_size(node: ast.expr) -> float:
    """Bytes a literal sequence occupies when repeated: characters, or pointers for lists."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
        return float(len(node.value))
    if isinstance(node, ast.List | ast.Tuple):
        return float(len(node.elts) * _POINTER_BYTES)
    return 0.0


def _constant_truth(node: ast.expr) -> bool | None:
    if isinstance(node, ast.Constant):
        return bool(node.value)
    return None


def _exits_early(body: list[ast.stmt]) -> bool:
    """Whether a loop body holds a reachable break, return, raise, yield, await or exit call."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Break | ast.Return | ast.Raise | ast.Yield | ast.YieldFrom):
            return True  # a yield suspends the loop: its consumer decides how long it runs
        if isinstance(node, ast.Await):
            return True  # an await can end the task: a consumer loop stops by cancellation
        if isinstance(node, ast.Call) and dotted_name(node.func) in _EXIT_CALLS:
            return True
        if isinstance(node, ast.If) and _constant_truth(node.test) is False:
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(node, ast.For | ast.AsyncFor | ast.While):
            # A break inside a nested loop ends only that loop; return/raise still count.
            stack.extend(
                n for n in ast.walk(node) if isinstance(n, ast.Return | ast.Raise | ast.Await)
            )
            stack.extend(node.orelse)
            continue
        for name in CHILD_FIELDS[node.__class__]:
            value = getattr(node, name, None)
            if value.__class__ is list:
                stack += [v for v in value if isinstance(v, ast.AST)]
            elif isinstance(value, ast.AST):
                stack.append(value)
    return False


_RAISING = (ast.Call, ast.Subscript, ast.Attribute, ast.Raise, ast.Assert, ast.Yield, ast.Await)


def _may_raise(body: list[ast.stmt]) -> bool:
    """Whether a loop body does anything that can raise (a call, an index, an attribute, …)."""
    return any(
        isinstance(node, _RAISING)
        or (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod))
        for stmt in body
        for node in ast.walk(stmt)
    )


def _parameter_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = node.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    for extra in (args.vararg, args.kwarg):
        if extra is not None:
            names.add(extra.arg)
    return names
