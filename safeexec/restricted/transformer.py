"""The compile step: RestrictedPython's transformer with compile-time attribute checks and
operation-budget ticks."""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable, Iterable
from typing import ClassVar

from RestrictedPython.transformer import RestrictingNodeTransformer, copy_locations

from safeexec.restricted.allowlist import _CLASS_BODY_NAMES, DENIED_ATTRIBUTES, USER_DUNDERS
from safeexec.restricted.receivers import (
    SIMPLE_SELF,
    method_receiver,
    name_load,
    private_augmented,
    private_read,
    receiver_attributes,
    runtime_call,
    scope_nodes,
    type_in,
)

_RESERVED_NAME = re.compile(r"^(_.*_|_print|_tmp\d+|__.*)$")
# Expressions whose value is always an instance of a builtin type (never a class or ``super``).
_BUILTIN_VALUES = (
    ast.Constant,
    ast.JoinedStr,
    ast.List,
    ast.Tuple,
    ast.Dict,
    ast.Set,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


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
        # How many comprehensions enclose the node being visited (in the current function).
        self._comprehensions = 0
        # Nodes and names the transformer made itself (match-pattern holders), left as built.
        self._generated_nodes: set[int] = set()
        self._hoisted = 0
        # The inline-checked public reads (``_class_checked``) and the method calls made from
        # them (``visit_Call``), held so their ids stay theirs while the tree is built.
        self._class_checks: dict[int, ast.IfExp] = {}
        self._method_calls: dict[int, ast.IfExp] = {}
        # The accesses ``self.name`` in a method's own scope (``receivers.receiver_attributes``),
        # which test the method's ``_simple_self_`` first.
        self._receiver_accesses: dict[int, ast.Attribute] = {}

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

    def visit_Name(self, node: ast.Name) -> ast.AST | Iterable[ast.AST] | None:
        # The code is the main program, so reading ``__name__`` (``if __name__ == "__main__":``)
        # is the constant "__main__". The namespace's own ``__name__`` is not: classes take their
        # ``__module__`` from it, and helpers such as dataclasses fetch the globals of
        # ``sys.modules[cls.__module__]``, which for "__main__" would be the host's main module.
        if id(node) in self._generated_nodes:
            return node
        if node.id == "__name__" and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Constant(value="__main__"), node)
        return super().visit_Name(node)

    # -- attributes ------------------------------------------------------------------------
    def _mangle(self, name: str) -> str:
        if self._class_stack and name.startswith("__") and not name.endswith("__"):
            return f"_{self._class_stack[-1].lstrip('_')}{name}"
        return name

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if id(node) in self._generated_nodes:
            return node
        name = node.attr
        if name.endswith("__roles__"):
            self.error(node, f'"{name}" is an invalid attribute name.')
        node = self.node_contents_visit(node)
        if id(node) in self._receiver_accesses:
            return self._receiver_access(node)
        guarded = name.startswith("_") or name in DENIED_ATTRIBUTES
        if isinstance(node.ctx, ast.Load):
            if not guarded:
                return self._class_checked(node)
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

    def _receiver_access(self, node: ast.Attribute) -> ast.expr:
        """``self.name`` in a method, where ``_simple_self_`` says whether ``self`` is an
        instance of a class in ``_simple_`` (see ``Guards.simple_own``), which is own and not
        class-like.

        Such an instance needs no check for a public read or any write; a private read is
        ``receivers.private_read``. Otherwise every form is the one a receiver of unknown type
        gets."""
        assert isinstance(node.value, ast.Name)
        receiver = node.value.id
        simple = ast.Name(SIMPLE_SELF, ast.Load())
        if not isinstance(node.ctx, ast.Load):
            write: ast.expr = ast.IfExp(
                test=ast.BoolOp(op=ast.Or(), values=[simple, type_in(receiver, "_own_")]),
                body=ast.Name(receiver, ast.Load()),
                orelse=runtime_call("_write_", ast.Name(receiver, ast.Load())),
            )
            copy_locations(write, node.value)
            node.value = write
            return node
        if not node.attr.startswith("_"):
            hook = runtime_call("_cattr_", ast.Name(receiver, ast.Load()), ast.Constant(node.attr))
            test = ast.BoolOp(op=ast.Or(), values=[simple, type_in(receiver, "_plain_")])
            checked = ast.IfExp(test=test, body=node, orelse=self._value_checked(node, hook))
            copy_locations(checked, node)
            self._class_checks[id(checked)] = checked
            return checked
        read = private_read(receiver, self._mangle(node.attr))
        copy_locations(read, node)
        return read

    def _class_checked(self, node: ast.Attribute) -> ast.expr:
        """A public ``a.b``: plain on an instance; on a class (or ``super`` object) through
        ``_cattr_``, which never hands out a library method without its receiver.

        A name receiver is tested inline: its type is in ``_plain_`` (types whose instances are
        not class-like, recorded by the hook the first time it sees one) or it goes through the
        hook; any other receiver is evaluated once, inside the hook."""
        hook = ast.Call(
            func=ast.Name("_cattr_", ast.Load()),
            args=[node.value, ast.Constant(node.attr)],
            keywords=[],
        )
        if isinstance(node.value, _BUILTIN_VALUES):
            return node  # a literal or display is a str, list, dict...: never class-like
        copy_locations(hook, node)
        if not isinstance(node.value, ast.Name):
            return hook
        test = ast.Compare(
            left=ast.Call(
                func=ast.Name("_type_", ast.Load()),
                args=[ast.Name(node.value.id, ast.Load())],
                keywords=[],
            ),
            ops=[ast.In()],
            comparators=[ast.Name("_plain_", ast.Load())],
        )
        checked = ast.IfExp(test=test, body=node, orelse=self._value_checked(node, hook))
        copy_locations(checked, node)
        self._class_checks[id(checked)] = checked
        return checked

    def _value_checked(self, node: ast.Attribute, hook: ast.expr) -> ast.expr:
        """The read ``node`` (a name's attribute) off an instance whose type is in ``_vread_``
        (not class-like, read inline, but the value may be one host code stored): its value
        passes ``_got_`` (``Guards.read_value``); off anything else, ``hook``."""
        assert isinstance(node.value, ast.Name)
        read = copy.deepcopy(node)
        return ast.IfExp(
            test=type_in(node.value.id, "_vread_"),
            body=self._checked_value(read, "_got_", "_rpass_"),
            orelse=hook,
        )

    def visit_Call(self, node: ast.Call) -> ast.AST | Iterable[ast.AST] | None:
        call = super().visit_Call(node)
        if isinstance(call, ast.Call) and id(call.func) in self._class_checks:
            call = self._checked_method_call(call)
        assert isinstance(call, ast.expr)
        returned = self._returned(call)
        copy_locations(returned, node)
        return returned

    def _returned(self, call: ast.expr) -> ast.expr:
        """What every call hands back passes ``_ret_`` (``Guards.returned``): never a metaclass.
        Where an assignment expression may stand (not in a class body, whose namespace it would
        bind, nor in a comprehension), the common case is inline::

            _rv_ if _type_(_rv_ := call) in _pass_ else _ret_(_rv_)

        (``_pass_``: the types ``_ret_`` found not class-like, containers aside)."""
        return self._checked_value(call, "_ret_", "_pass_")

    def _checked_value(self, made: ast.expr, hook: str, passing: str) -> ast.expr:
        """``made``'s value through the runtime's ``hook``, skipped inline when its type is in
        ``passing`` (where an assignment expression may stand)."""
        if self._in_class_body or self._comprehensions:
            return runtime_call(hook, made)
        named = ast.NamedExpr(target=ast.Name("_rv_", ast.Store()), value=made)
        test = ast.Compare(
            left=runtime_call("_type_", named), ops=[ast.In()], comparators=[name_load(passing)]
        )
        return ast.IfExp(
            test=test, body=name_load("_rv_"), orelse=runtime_call(hook, name_load("_rv_"))
        )

    def _in_comprehension(self, visit: Callable[[], object]) -> ast.AST:
        self._comprehensions += 1
        try:
            return visit()  # type: ignore[return-value]
        finally:
            self._comprehensions -= 1

    def visit_ListComp(self, node: ast.ListComp) -> ast.AST:
        return self._in_comprehension(lambda: super(SafeexecTransformer, self).visit_ListComp(node))

    def visit_SetComp(self, node: ast.SetComp) -> ast.AST:
        return self._in_comprehension(lambda: super(SafeexecTransformer, self).visit_SetComp(node))

    def visit_DictComp(self, node: ast.DictComp) -> ast.AST:
        return self._in_comprehension(lambda: super(SafeexecTransformer, self).visit_DictComp(node))

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> ast.AST:
        return self._in_comprehension(
            lambda: super(SafeexecTransformer, self).visit_GeneratorExp(node)
        )

    def _checked_method_call(self, call: ast.Call) -> ast.expr:
        """``(a.m if _type_(a) in _plain_ else _cattr_(a, 'm'))(x)`` as ``a.m(x) if _type_(a) in
        _plain_ else _cattr_(a, 'm')(x)``: the inline path is the interpreter's method call,
        which makes no bound method. Same checks, same order of evaluation.

        The arguments appear in both branches (one runs), so only when they hold no checked
        read or call of their own: nested calls never double twice, the code at most doubles."""
        checked = self._class_checks[id(call.func)]
        registered = self._class_checks.keys() | self._method_calls.keys()
        for argument in (*call.args, *call.keywords):
            if any(id(inner) in registered for inner in ast.walk(argument)):
                return call
        fast = ast.Call(func=checked.body, args=call.args, keywords=call.keywords)
        slow = ast.Call(
            func=checked.orelse,
            args=copy.deepcopy(call.args),
            keywords=copy.deepcopy(call.keywords),
        )
        method_call = ast.IfExp(test=checked.test, body=fast, orelse=slow)
        for made in (fast, slow, method_call):
            copy_locations(made, call)
        self._method_calls[id(method_call)] = method_call
        return method_call

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        # Item access on reachable containers cannot produce a module (no module-holding
        # container is reachable), so loads and stores stay plain bytecode.
        return self.node_contents_visit(node)

    # -- assignment forms --------------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        return self.node_contents_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST | list[ast.stmt]:
        target = node.target
        if not isinstance(target, ast.Attribute):
            return self.node_contents_visit(node)
        # ``a.b += v`` reads ``a.b`` with the interpreter's own getattr: the receiver goes
        # through ``_augwrite_``, which refuses what a plain read would not hand out. An own
        # instance with a public name keeps the inline check (nothing to refuse there).
        name = target.attr
        if name.endswith("__roles__") or (name.startswith("__") and name.endswith("__")):
            self.error(node, f'"{name}": assigning or deleting dunder attributes is not allowed.')
        receiver = self.visit(target.value)
        hook: ast.expr = ast.Call(
            func=ast.Name("_augwrite_", ast.Load()),
            args=[receiver, ast.Constant(self._mangle(name))],
            keywords=[],
        )
        if id(target) in self._receiver_accesses and isinstance(receiver, ast.Name):
            if name.startswith("_"):
                statements = private_augmented(
                    node, receiver.id, self._mangle(name), self.visit(node.value), hook
                )
                for statement in statements:
                    copy_locations(statement, node)
                return statements
            hook = ast.IfExp(
                test=ast.BoolOp(
                    op=ast.Or(),
                    values=[ast.Name(SIMPLE_SELF, ast.Load()), type_in(receiver.id, "_own_")],
                ),
                body=ast.Name(receiver.id, ast.Load()),
                orelse=hook,
            )
        elif isinstance(receiver, ast.Name) and not (
            name.startswith("_") or name in DENIED_ATTRIBUTES
        ):
            hook = ast.IfExp(
                test=ast.Compare(
                    left=ast.Call(
                        func=ast.Name("_type_", ast.Load()),
                        args=[ast.Name(receiver.id, ast.Load())],
                        keywords=[],
                    ),
                    ops=[ast.In()],
                    comparators=[ast.Name("_own_", ast.Load())],
                ),
                body=ast.Name(receiver.id, ast.Load()),
                orelse=hook,
            )
        copy_locations(hook, target.value)
        target.value = hook
        node.value = self.visit(node.value)
        return node

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

    def visit_Module(self, node: ast.Module) -> ast.AST:
        """The module, its names declared ``global``: the namespace is both its globals and its
        locals, so the interpreter finds the same objects, with the cached ``LOAD_GLOBAL``
        instead of ``LOAD_NAME`` (a module-level loop's own names, its tick and checks).

        Left out: names an annotation binds (``x: int = 1`` cannot name a global) and names the
        leading ``__future__`` imports bind (declared after them)."""
        node = self.node_contents_visit(node)
        # After the docstring and the ``__future__`` imports, which must come first.
        position = 1 if ast.get_docstring(node, clean=False) is not None else 0
        excluded: set[str] = set()
        while position < len(node.body) and _future_import(node.body[position]):
            excluded.update(a.asname or a.name for a in node.body[position].names)  # type: ignore[attr-defined]
            position += 1
        names: set[str] = set()
        for inner in scope_nodes(node.body):
            if isinstance(inner, ast.Name):
                names.add(inner.id)
            elif isinstance(inner, ast.AnnAssign) and isinstance(inner.target, ast.Name):
                excluded.add(inner.target.id)
            elif type(inner).__name__ == "TypeAlias":  # Python 3.12's ``type X = ...``
                excluded.add(inner.name.id)  # type: ignore[attr-defined]
        if names - excluded:
            declaration = ast.Global(names=sorted(names - excluded))
            copy_locations(declaration, node.body[min(position, len(node.body) - 1)])
            node.body.insert(position, declaration)
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

    def _stop_check(self, anchor: ast.stmt | ast.excepthandler) -> ast.stmt:
        """What a handler, a ``finally`` or an own ``__exit__`` does first: a budget tick when
        counting, else ask the runtime whether the thread was stopped or the cell is over
        (``CellThreads.check``)."""
        if self.count_operations:
            return self._tick_statement(anchor)
        check = ast.Expr(
            value=ast.Call(func=ast.Name("_caught_", ast.Load()), args=[], keywords=[])
        )
        copy_locations(check, anchor)
        return check

    def visit_Try(self, node: ast.Try) -> ast.AST:
        node = self.node_contents_visit(node)
        if node.finalbody:
            # A suspended generator runs its ``finally`` when the host collects it, after the
            # run, and a ``finally`` that ends in ``continue`` or ``return`` drops the stop
            # signal in flight: the check raises first (a closed budget, a stopped thread).
            node.finalbody.insert(0, self._stop_check(node))
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        node = self.node_contents_visit(node)
        self.check_name(node, node.name)
        # ``except GeneratorExit:`` runs at collection time too, and ``except BaseException``
        # would swallow a stopped thread's signal (see ``visit_Try``).
        node.body.insert(0, self._stop_check(node))
        if node.name is not None:
            # The exception's arguments and attributes come from host code: never a metaclass.
            check = ast.Expr(value=runtime_call("_exc_", ast.Name(node.name, ast.Load())))
            copy_locations(check, node)
            node.body.insert(1, check)
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        # ``async for`` in a comprehension ticks like ``for``: the tick sits in its ``ifs``.
        node = self.node_contents_visit(node)
        if self.count_operations:
            node.ifs.insert(0, self._tick(node.iter))
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        self.check_name(node, node.name, allow_magic_methods=True)
        dunder = node.name.startswith("__") and node.name.endswith("__")
        if self._in_class_body and dunder and node.name not in USER_DUNDERS:
            self.error(node, f'defining "{node.name}" is not allowed.')
        self.check_function_argument_names(node)
        receiver = method_receiver(node) if self._in_class_body else None
        accesses = [] if receiver is None else receiver_attributes(node.body, receiver)
        self._receiver_accesses.update((id(access), access) for access in accesses)
        outer = self._in_class_body
        outer_comprehensions = self._comprehensions
        self._in_class_body = False
        self._comprehensions = 0
        try:
            node = self.node_contents_visit(node)
        finally:
            self._in_class_body = outer
            self._comprehensions = outer_comprehensions
        position = 1 if ast.get_docstring(node, clean=False) is not None else 0
        # An own ``__exit__`` returning True swallows what the ``with`` body raised, a stop
        # signal included: it checks first, as a handler does (counting: every call ticks).
        if self.count_operations or (outer and node.name in ("__exit__", "__aexit__")):
            node.body.insert(position, self._stop_check(node))
            position += 1
        if receiver is not None and accesses:
            # ``_simple_self_ = _type_(self) in _simple_``: the receiver's class cannot change
            # (``__class__`` is never written) and its name is never rebound in the method.
            flag = ast.Assign(
                targets=[ast.Name(SIMPLE_SELF, ast.Store())],
                value=type_in(receiver, "_simple_"),
            )
            copy_locations(flag, node)
            node.body.insert(position, flag)
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
    # (checked here like ``a.b``); positional ones come from ``__match_args__``, whose names
    # ``_mclass_`` checks alike before the ``match`` (an own dataclass's fields may be private
    # or denied names: ``gi_frame``).
    #
    # Patterns read attributes and compare values with the interpreter's own machinery, so:
    # a class pattern with sub-patterns may only sit at the top of a case (its subject is then
    # the match subject, which ``_msubject_`` refuses when it is a class: ``case object(copy=f)``
    # on ``Counter`` would bind the unbound ``Counter.copy``); a value pattern's or mapping key's
    # dotted name is read by guarded code before the ``match`` and compared through a holder
    # (``case Counter.copy:`` would hand the unbound method to an ``__eq__`` the code wrote).
    def visit_Match(self, node: ast.Match) -> ast.AST | list[ast.stmt]:
        hoisted: list[ast.stmt] = []
        class_patterns = False
        for case in node.cases:
            class_patterns |= self._prepare_pattern(case.pattern, top=True, hoisted=hoisted)
        node = self.node_contents_visit(node)
        if class_patterns:
            subject = ast.Call(
                func=ast.Name("_msubject_", ast.Load()), args=[node.subject], keywords=[]
            )
            copy_locations(subject, node.subject)
            node.subject = subject
        return [*hoisted, node] if hoisted else node

    def _prepare_pattern(self, pattern: ast.pattern, *, top: bool, hoisted: list[ast.stmt]) -> bool:
        """Hoist dotted values, check class-pattern positions; True if ``pattern`` has a class
        pattern with sub-patterns at the top."""
        if isinstance(pattern, ast.MatchValue) and isinstance(pattern.value, ast.Attribute):
            pattern.value = self._hoist_value(pattern.value, hoisted)
        elif isinstance(pattern, ast.MatchMapping):
            pattern.keys = [
                self._hoist_value(k, hoisted) if isinstance(k, ast.Attribute) else k
                for k in pattern.keys
            ]
            for sub in pattern.patterns:
                self._prepare_pattern(sub, top=False, hoisted=hoisted)
        elif isinstance(pattern, ast.MatchSequence):
            for sub in pattern.patterns:
                self._prepare_pattern(sub, top=False, hoisted=hoisted)
        elif isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
            return self._prepare_pattern(pattern.pattern, top=top, hoisted=hoisted)
        elif isinstance(pattern, ast.MatchOr):
            found = [self._prepare_pattern(p, top=top, hoisted=hoisted) for p in pattern.patterns]
            return any(found)
        elif isinstance(pattern, ast.MatchClass):
            self._keep_class_name(pattern.cls)
            if pattern.patterns:
                pattern.cls = self._hoist_class(pattern.cls, hoisted)
            reads = bool(pattern.patterns or pattern.kwd_patterns)
            if reads and not top:
                self.error(
                    pattern,
                    "a class pattern with sub-patterns is only allowed at the top of a case "
                    "(match the inner value in a nested match statement)",
                )
            for sub in (*pattern.patterns, *pattern.kwd_patterns):
                self._prepare_pattern(sub, top=False, hoisted=hoisted)
            return reads
        return False

    def _keep_class_name(self, node: ast.expr) -> None:
        """A class pattern's dotted name stays plain (patterns allow nothing else); it only
        feeds ``isinstance``, so a guarded name in it is refused instead."""
        while isinstance(node, ast.Attribute):
            if node.attr.startswith("_") or node.attr in DENIED_ATTRIBUTES:
                self.error(node, f'class pattern name "{node.attr}" is not allowed.')
            self._generated_nodes.add(id(node))
            node = node.value

    def _hoist_class(self, cls: ast.expr, hoisted: list[ast.stmt]) -> ast.Name:
        """A class pattern with positional sub-patterns matches on ``_mclass_(cls)``, read
        before the ``match`` (its ``__match_args__`` name what the interpreter will read)."""
        name = f"_mc{self._hoisted}_"
        self._hoisted += 1
        read = ast.Call(func=ast.Name("_mclass_", ast.Load()), args=[cls], keywords=[])
        assign = ast.Assign(targets=[ast.Name(name, ast.Store())], value=read)
        copy_locations(read, cls)
        copy_locations(assign, cls)
        hoisted.append(assign)
        reference = ast.Name(name, ast.Load())
        copy_locations(reference, cls)
        self._generated_nodes.add(id(reference))
        return reference

    def _hoist_value(self, value: ast.Attribute, hoisted: list[ast.stmt]) -> ast.Attribute:
        name = f"_mv{self._hoisted}_"
        self._hoisted += 1
        read = ast.Call(
            func=ast.Name("_mvalue_", ast.Load()), args=[self.visit(value)], keywords=[]
        )
        assign = ast.Assign(targets=[ast.Name(name, ast.Store())], value=read)
        copy_locations(read, value)
        copy_locations(assign, value)
        hoisted.append(assign)
        reference = ast.Name(name, ast.Load())
        holder = ast.Attribute(value=reference, attr="value", ctx=ast.Load())
        copy_locations(holder, value)
        self._generated_nodes.update((id(holder), id(reference)))
        return holder

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

    # -- async code ------------------------------------------------------------------------------
    # Coroutines get the guards of sync code: ``async def`` is checked and ticked like ``def``,
    # ``async for`` like ``for``, ``async with`` like ``with``, and ``await x.y`` reads ``x.y``
    # through the attribute guard (the operand is visited like any expression). A coroutine's
    # frame attributes (``cr_frame``, ``ag_frame``…) are in ``DENIED_ATTRIBUTES``; the event
    # loop is the runtime's own (``async_loop.py``), never asyncio's.
    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self.visit_FunctionDef(node)

    def visit_Await(self, node: ast.Await) -> ast.AST:
        return self.node_contents_visit(node)

    def visit_AsyncFor(self, node: ast.AsyncFor) -> ast.AST:
        node = self.node_contents_visit(node)
        if self.count_operations:
            node.body.insert(0, self._tick_statement(node))
        return node

    def visit_AsyncWith(self, node: ast.AsyncWith) -> ast.AST:
        return self.node_contents_visit(node)


def _future_import(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"


class CountingTransformer(SafeexecTransformer):
    """:class:`SafeexecTransformer` that also draws every iteration and call from the budget."""

    count_operations: ClassVar[bool] = True
