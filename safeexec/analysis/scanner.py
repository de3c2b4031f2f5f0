"""The scanner: every rule of a policy over one parsed action, in one traversal of its tree.

The traversal is iterative (no recursion limit to exhaust) over ``Parsed.tree``, the ``ast`` form
that CPython will compile (the parse step has already checked that libcst and ``ast`` agree). It
tracks import aliases itself, so ``from os import system as s; s()`` and ``import os as o;
o.system()`` both resolve to ``os.system`` without a whole-tree metadata pass. Node types the
engine does not know are denied (SX910); a check that raises, an internal error or a scan past its
time budget is an SX900 deny finding. ``scan`` itself never raises.
"""

from __future__ import annotations

import ast
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from safeexec.analysis.checks import (
    ATTRIBUTE_FUNCTIONS,
    IMPORT_FUNCTIONS,
    REGISTERED_CHECKS,
)
from safeexec.analysis.compiled_rules import CompiledRules, compile_rules, module_matches
from safeexec.analysis.constants import StringFolder
from safeexec.analysis.qualnames import import_bindings, qualified_name
from safeexec.analysis.sites import AttributeSite, CallSite, CheckHit, ScanContext, clip_text
from safeexec.model.values import BoundKind, Enforcement, Estimate, Finding, Span
from safeexec.parse import Parsed
from safeexec.parse.fields import CHILD_FIELDS_NO_CONTEXT
from safeexec.policy.engine_rules import CHECK_CRASHED, UNKNOWN_SYNTAX, engine_finding
from safeexec.policy.modes import explicitly_allowed, mode_imports
from safeexec.policy.schema import MatchKind, Policy, Rule, RuleStatus
from safeexec.policy.vocabulary import SYNTAX_NODE_TYPES
from safeexec.restricted.allowlist import restricted_modules

__all__ = ["scan"]

_DEFAULT_TIME_BUDGET_SECONDS = 2.0
_CLOCK_EVERY_NODES = 512
_BUILTIN_GENERICS = frozenset({"list", "dict", "set", "frozenset", "tuple", "type"})
_FORMAT_METHODS = frozenset({"format", "format_map", "vformat", "get_field"})
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_FORMAT_FIELD = re.compile(r"\{([^{}!:]*)")


# Builtins whose calls checks inspect by name: a variable bound to one resolves through it
# (``f = open; f('/etc/passwd')``), like a variable bound to a module.
_TRACKED_BUILTINS = frozenset({"open"})
# Attributes that turn ``x.__class__`` into a plain string (see ``_traverse``).
_TYPE_NAME_ATTRIBUTES = frozenset({"__name__", "__qualname__"})


class _ScanTimeout(Exception):
    pass


def scan(
    parsed: Parsed,
    policy: Policy,
    *,
    estimate: Estimate | None = None,
    mode: str | None = None,
    time_budget_seconds: float = _DEFAULT_TIME_BUDGET_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[Finding, ...]:
    """Return every finding ``policy``'s rules raise about ``parsed``, in source order.

    ``mode`` is the execution mode the code will run in (default: the policy's default backend):
    it picks the import allowlist and the rules in force (:mod:`safeexec.policy.modes`).
    ``estimate`` feeds the ``estimate`` rules (SX5xx); without it they cannot fire. The scan never
    raises: a crash or a scan past ``time_budget_seconds`` (by ``clock``) is an SX900 deny finding.
    """
    try:
        scanner = _Scanner(
            parsed, compile_rules(policy, mode), deadline=clock() + time_budget_seconds, clock=clock
        )
        return scanner.run(estimate)
    except _ScanTimeout:
        return (
            engine_finding(
                CHECK_CRASHED,
                f"the scan ran past its time budget of {time_budget_seconds:g} s; denying",
            ),
        )
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        return (
            engine_finding(CHECK_CRASHED, f"the scanner crashed ({type(exc).__name__}); denying"),
        )


class _Scanner:
    def __init__(
        self, parsed: Parsed, rules: CompiledRules, *, deadline: float, clock: Callable[[], float]
    ) -> None:
        self.parsed = parsed
        self.rules = rules
        self.deadline = deadline
        self.clock = clock
        self.findings: list[Finding] = []
        self._seen: set[tuple[str, tuple[int, int, int, int] | None, str]] = set()
        self._lines: list[str] | None = None
        # What the traversal collects for the second phase.
        self.aliases: dict[str, str] = {}
        self.references: list[ast.expr] = []
        self.calls: list[ast.Call] = []
        self.subscripts: list[ast.Subscript] = []
        self.annotations: list[ast.expr] = []
        self.divisions: list[ast.BinOp] = []
        self.name_reads: list[ast.Name] = []
        self.imports: list[ast.Import] = []
        self.parents: dict[int, ast.AST] = {}
        self.bindings: list[tuple[str, ast.expr]] = []
        self.store_counts: dict[str, int] = {}
        self._resolved: dict[int, tuple[str, bool] | None] = {}

    # ---------------------------------------------------------------------------------------
    def run(self, estimate: Estimate | None) -> tuple[Finding, ...]:
        self._traverse(self.parsed.tree)
        folder = StringFolder(self._string_bindings())
        self._module_bindings()
        call_sites = self._resolve_calls(folder)
        attribute_sites, references = self._resolve_references()
        self._check_subscripts(folder)
        self._run_checks(
            ScanContext(
                policy=self.rules.policy,
                tree=self.parsed.tree,
                calls=tuple(call_sites),
                attributes=tuple(attribute_sites),
                references=tuple(references),
                annotations=tuple(self._annotation_roots()),
                divisions=tuple(self.divisions),
                subscripts=tuple(self.subscripts),
                name_reads=tuple(self.name_reads),
                imports=tuple(self.imports),
                parents=self.parents,
                folder=folder,
                mode=self.rules.mode,
                allow=self.rules.allow,
            )
        )
        if self.clock() > self.deadline:
            raise _ScanTimeout
        if estimate is not None:
            self._check_estimate(estimate)
        self.findings.sort(
            key=lambda f: (f.span.start_line, f.span.start_column) if f.span else (0, 0)
        )
        return tuple(self.findings)

    # ---------------------------------------------------------------------------------------
    # Phase 1: one iterative traversal

    def _traverse(self, tree: ast.AST) -> None:
        known = SYNTAX_NODE_TYPES
        node_rules = self.rules.nodes
        name_rules = self.rules.names
        attribute_rules = self.rules.attributes
        # `x.__class__.__name__` reads a string off the class and binds nothing, so that
        # `__class__` is not reported (the parent is visited before the child). In restricted mode
        # the runtime's `__class__` is `type(x)` (never a metaclass, refused on a class), which the
        # code may call anyway, so the exemption reaches nothing new there either.
        type_name_reads: set[int] = set()
        parents = self.parents
        stack: list[ast.AST] = [tree]
        visited = 0
        while stack:
            node = stack.pop()
            visited += 1
            if visited % _CLOCK_EVERY_NODES == 0 and self.clock() > self.deadline:
                raise _ScanTimeout
            cls = node.__class__
            kind = cls.__name__
            if kind not in known:
                self._engine(UNKNOWN_SYNTAX, node, f"syntax node {kind} is not known to the engine")
            rules = node_rules.get(kind)
            if rules:
                self._emit(rules, node, {"node": kind}, kind)
            if cls is ast.Name:
                name = node.id  # type: ignore[attr-defined]
                if name_rules:
                    self._emit(name_rules.lookup(name), node, {"name": name}, name)
                if node.ctx.__class__ is ast.Load:  # type: ignore[attr-defined]
                    self.references.append(node)  # type: ignore[arg-type]
                    self.name_reads.append(node)  # type: ignore[arg-type]
                else:
                    self.store_counts[name] = self.store_counts.get(name, 0) + 1
                continue
            if cls is ast.Attribute:
                attr = node.attr  # type: ignore[attr-defined]
                if attr in _TYPE_NAME_ATTRIBUTES:
                    inner = node.value  # type: ignore[attr-defined]
                    if isinstance(inner, ast.Attribute) and inner.attr == "__class__":
                        type_name_reads.add(id(inner))
                if attribute_rules and id(node) not in type_name_reads:
                    self._emit(attribute_rules.lookup(attr), node, {"attribute": attr}, attr)
                self.references.append(node)  # type: ignore[arg-type]
            elif cls is ast.Call:
                self.calls.append(node)  # type: ignore[arg-type]
            elif cls is ast.Subscript:
                self.subscripts.append(node)  # type: ignore[arg-type]
            elif cls is ast.BinOp and node.op.__class__ is ast.Div:  # type: ignore[attr-defined]
                self.divisions.append(node)  # type: ignore[arg-type]
            elif cls is ast.Import or cls is ast.ImportFrom:
                if cls is ast.Import:
                    self.imports.append(node)  # type: ignore[arg-type]
                self._import(node)  # type: ignore[arg-type]
            elif cls is ast.Assign or cls is ast.AnnAssign or cls is ast.NamedExpr:
                if cls is ast.AnnAssign:
                    self.annotations.append(node.annotation)  # type: ignore[attr-defined]
                targets = node.targets if cls is ast.Assign else [node.target]  # type: ignore[attr-defined]
                value = node.value  # type: ignore[attr-defined]
                if value is not None and len(targets) == 1 and targets[0].__class__ is ast.Name:
                    self.bindings.append((targets[0].id, value))
            elif cls is ast.arg:
                self._store(node.arg, node)  # type: ignore[attr-defined]
                if node.annotation is not None:  # type: ignore[attr-defined]
                    self.annotations.append(node.annotation)  # type: ignore[attr-defined]
            elif cls is ast.MatchClass:
                # `case object(__class__=c)` reads the attribute without an Attribute node.
                for attr in node.kwd_attrs:  # type: ignore[attr-defined]
                    self._attribute_event(node, attr)
            elif cls in _NAMED_BINDERS:
                # Definitions (def/class names) are not variables: name rules skip them.
                defines = cls in _DEFINITIONS
                for name in _bound_names(node):
                    self._store(name, None if defines else node)
                returns = getattr(node, "returns", None)
                if returns is not None:
                    self.annotations.append(returns)
            for field_name in CHILD_FIELDS_NO_CONTEXT[cls]:
                value = getattr(node, field_name, None)
                if value.__class__ is list:
                    for item in reversed(value):
                        if isinstance(item, ast.AST):
                            stack.append(item)
                            parents[id(item)] = node
                elif isinstance(value, ast.AST):
                    stack.append(value)
                    parents[id(value)] = node

    def _store(self, name: str | None, node: ast.AST | None = None) -> None:
        """Count a binding of ``name``; ``node`` given: name rules see it too (a bound name)."""
        if name:
            self.store_counts[name] = self.store_counts.get(name, 0) + 1
            if node is not None and self.rules.names:
                self._emit(self.rules.names.lookup(name), node, {"name": name}, name)

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        bindings = import_bindings(node)
        if isinstance(node, ast.Import):
            # One binding per alias, each reported right after its import.
            for alias, (bound, qualified) in zip(node.names, bindings, strict=True):
                self._import_event(node, alias.name, ())
                self._bind_import(node, bound, qualified)
            return
        module = "." * node.level + (node.module or "")
        names = tuple(a.name for a in node.names if a.name != "*")
        self._import_event(node, module, names)
        for bound, qualified in bindings:
            self._bind_import(node, bound, qualified)

    def _bind_import(self, node: ast.AST, bound: str, qualified: str) -> None:
        self.aliases[bound] = qualified
        self._store(bound, node)

    def _import_event(self, node: ast.AST, module: str, names: tuple[str, ...]) -> None:
        policy_imports = self.rules.policy.imports
        mode_allow = self.rules.allow
        for rule in self.rules.imports:
            match = rule.match
            assert match is not None
            own_lists = bool(match.allow or match.deny)
            allow = match.allow if own_lists else mode_allow
            deny = match.deny if own_lists else policy_imports.deny
            members = tuple(f"{module}.{n}" for n in names) if not module.startswith(".") else ()
            if match.deny and not match.allow and explicitly_allowed(module, mode_allow):
                # The extension point: a pack that names a module in its allowlist (for this
                # mode) overrides a rule's own deny list; `policy lint` warns when it does.
                continue
            denied = bool(deny) and (
                module_matches(module, deny) or any(module_matches(m, deny) for m in members)
            )
            outside = not (match.deny and not match.allow) and not (
                module_matches(module, allow)
                or (members and all(module_matches(m, allow) for m in members))
            )
            if denied or outside:
                self._emit((rule,), node, {"module": module}, module)

    # ---------------------------------------------------------------------------------------
    # Phase 2: resolve names, then run the call/attribute/subscript/estimate rules and checks

    def _string_bindings(self) -> dict[str, str | None]:
        folder_bindings: dict[str, str | None] = {}
        folder = StringFolder(folder_bindings)
        for name, value in self.bindings:
            if self.store_counts.get(name, 0) != 1:
                continue
            folder_bindings[name] = folder.fold(value)
        return folder_bindings

    def _module_bindings(self) -> None:
        # Over-approximate on purpose: a name ever bound to a module (or a module's attribute)
        # resolves through it, however often it is rebound. Extra matches fail closed.
        for name, value in self.bindings:
            if name in self.aliases:
                continue
            if isinstance(value, ast.Name | ast.Attribute):
                resolved = self._resolve(value)
                if resolved is not None and (resolved[1] or resolved[0] in _TRACKED_BUILTINS):
                    self.aliases[name] = resolved[0]

    def _resolve(self, node: ast.expr) -> tuple[str, bool] | None:
        """The qualified name of ``node`` and whether it is rooted in an import, or None."""
        key = id(node)
        if key in self._resolved:
            return self._resolved[key]
        result = qualified_name(node, self.aliases) or self._resolve_import_call(node)
        self._resolved[key] = result
        return result

    def _resolve_import_call(self, node: ast.expr) -> tuple[str, bool] | None:
        """``__import__('os').system`` is ``os.system``: the call's result is the module."""
        parts: list[str] = []
        current = node
        while isinstance(current, ast.Attribute):
            parts.append(current.attr)
            current = current.value
        if not (isinstance(current, ast.Call) and parts and current.args):
            return None
        callee = self._resolve(current.func)
        if callee is None or callee[0] not in IMPORT_FUNCTIONS:
            return None
        module = StringFolder({}).fold(current.args[0])
        if module is None:
            return None
        parts.append(module.partition(".")[0])
        return ".".join(reversed(parts)), True

    def _resolve_references(
        self,
    ) -> tuple[list[AttributeSite], list[tuple[ast.expr, str, bool]]]:
        call_rules = self.rules.calls
        sites: list[AttributeSite] = []
        references: list[tuple[ast.expr, str, bool]] = []
        matches: dict[str, list[list[Rule]]] = {}
        for index, node in enumerate(self.references):
            if index % _CLOCK_EVERY_NODES == 0 and self.clock() > self.deadline:
                raise _ScanTimeout
            resolved = self._resolve(node)
            if isinstance(node, ast.Attribute):
                base = self._resolve(node.value)
                sites.append(
                    AttributeSite(
                        node=node,
                        base=None if base is None else base[0],
                        rooted=base is not None and base[1],
                    )
                )
            if resolved is None:
                continue
            qualified = resolved[0]
            references.append((node, qualified, resolved[1]))
            if not call_rules:
                continue
            matched = matches.get(qualified)
            if matched is None:  # names repeat (`print`, `self.items`): look each up once
                lookups = (call_rules.lookup(candidate) for candidate in _suffixes(qualified))
                matched = matches[qualified] = [rules for rules in lookups if rules]
            for rules in matched:
                self._emit(rules, node, {"name": qualified}, qualified)
        return sites, references

    def _resolve_calls(self, folder: StringFolder) -> list[CallSite]:
        sites: list[CallSite] = []
        for node in self.calls:
            resolved = self._resolve(node.func)
            callee = None if resolved is None else resolved[0]
            sites.append(
                CallSite(node=node, callee=callee, rooted=resolved is not None and resolved[1])
            )
            if callee in IMPORT_FUNCTIONS and node.args:
                module = folder.fold(node.args[0])
                if module is not None:
                    self._import_event(node, module, ())
            elif callee is not None and callee in ATTRIBUTE_FUNCTIONS:
                index = ATTRIBUTE_FUNCTIONS[callee]
                names = node.args if index is None else node.args[index : index + 1]
                for name_node in names:
                    name = folder.fold(name_node)
                    if name is not None:
                        for part in name.split("."):
                            self._attribute_event(node, part)
            elif (
                isinstance(node.func, ast.Attribute)
                and node.func.attr in _FORMAT_METHODS
                and node.args
            ):
                # str.format(t, ...) and Formatter().vformat(t, ...) take the template as the
                # first argument (receivers are handled with every attribute reference);
                # get_field walks a bare field name.
                template = folder.fold(node.args[0])
                if template is not None:
                    if node.func.attr == "get_field":
                        template = "{" + template + "}"
                    for attribute in _format_attributes(template):
                        self._attribute_event(node, attribute)
        for reference in self.references:
            # "...".format and "...".format_map, called or only referenced (f = t.format).
            if isinstance(reference, ast.Attribute) and reference.attr in _FORMAT_METHODS:
                template = folder.fold(reference.value)
                if template is not None:
                    for attribute in _format_attributes(template):
                        self._attribute_event(reference, attribute)
        return sites

    def _annotation_roots(self) -> list[ast.expr]:
        """Annotations, plus typing generics' arguments (get_type_hints evaluates their strings)."""
        roots = list(self.annotations)
        for node in self.subscripts:
            resolved = self._resolve(node.value)
            if resolved is not None and (
                resolved[0].startswith("typing.") or resolved[0] in _BUILTIN_GENERICS
            ):
                roots.append(node.slice)
        return roots

    def _check_subscripts(self, folder: StringFolder) -> None:
        # A string key reaches an attribute only through a namespace dict (`f.__globals__[k]`,
        # `vars(o)[k]`); match such keys against attribute names spelled out in full, not
        # patterns, so that ordinary dict keys like "_id" stay ordinary.
        exact = self.rules.attributes.exact
        for node in self.subscripts:
            key = folder.fold(node.slice) if not isinstance(node.slice, ast.Slice) else None
            if key is not None and key in exact:
                self._emit(exact[key], node, {"attribute": key}, key)

    def _attribute_event(self, node: ast.AST, attribute: str) -> None:
        if self.rules.attributes:
            self._emit(
                self.rules.attributes.lookup(attribute), node, {"attribute": attribute}, attribute
            )

    def _run_checks(self, ctx: ScanContext) -> None:
        for name, rules in self.rules.checks.items():
            check = REGISTERED_CHECKS.get(name)
            try:
                if check is None:
                    raise LookupError(name)
                hits: Iterable[CheckHit] = list(check(ctx))
            except Exception as exc:
                self.findings.append(
                    engine_finding(
                        CHECK_CRASHED,
                        f"check {name!r} crashed ({type(exc).__name__}); denying",
                    )
                )
                continue
            for hit in hits:
                self._emit(rules, hit.node, hit.fields, hit.evidence)

    def _check_estimate(self, estimate: Estimate) -> None:
        for rule in self.rules.estimates:
            match = rule.match
            assert match is not None
            bound = getattr(estimate, match.metric)
            if match.bound:
                fires = bound.kind.value == match.bound
            else:
                # Unbounded bounds have no value: `bound = "unbounded"` rules report them.
                fires = (
                    bound.value is not None
                    and match.above is not None
                    and bound.value > match.above
                )
            if fires:
                fields = {
                    "metric": match.metric,
                    "value": _number(bound.value)
                    if bound.kind is not BoundKind.UNBOUNDED
                    else "unbounded",
                    "above": _number(match.above),
                    "reason": bound.reason or "from constant bounds",
                }
                self._emit(
                    (rule,), None, fields, f"{match.metric}: {bound.kind.value} {fields['value']}"
                )

    # ---------------------------------------------------------------------------------------
    # Findings

    def _emit(
        self, rules: Iterable[Rule], node: ast.AST | None, fields: Mapping[str, str], evidence: str
    ) -> None:
        for rule in rules:
            span = self._span(node) if node is not None else None
            key = (
                rule.id,
                (span.start_line, span.start_column, span.end_line, span.end_column)
                if span
                else None,
                evidence,
            )
            if key in self._seen:
                continue
            self._seen.add(key)
            enforcement = rule.enforcement
            if rule.status is RuleStatus.PREVIEW and enforcement in (
                Enforcement.DENY,
                Enforcement.APPROVE,
            ):
                enforcement = Enforcement.WARN
            clipped = _Fields({k: clip_text(v) for k, v in fields.items()})
            message = rule.message.format_map(clipped)
            remedy = self._remedy(rule, clipped) if enforcement is Enforcement.DENY else ""
            self.findings.append(
                Finding(
                    rule=rule.id,
                    name=rule.name,
                    message=f"{message}; to run it: {remedy}" if remedy else message,
                    severity=rule.severity,
                    enforcement=enforcement,
                    span=span,
                    evidence=clip_text(evidence, 200),
                )
            )

    def _remedy(self, rule: Rule, fields: _Fields) -> str:
        """What would make the refused code run: the mode or pack extension that allows an
        import, else the rule's own ``remedy`` (the safe alternative)."""
        module = fields.get("module")
        if rule.match is not None and rule.match.kind is MatchKind.IMPORT and module:
            policy = self.rules.policy
            native = mode_imports(policy.imports, "native")
            if (
                self.rules.mode == "restricted-inprocess"
                and restricted_modules((module,))
                and not restricted_modules((module,), in_process=True)
            ):
                return (
                    f"`{module}` has a restricted view only inside the confined worker: run it "
                    "with `--mode restricted` (or `--mode native`)"
                )
            if (
                self.rules.mode != "native"
                and "native" in policy.backends.allowed
                and explicitly_allowed(module, native)
            ):
                where = f"where `{policy.info.id}` allows it"
                return f"run it in native mode (`--mode native`), {where}"
            if self.rules.mode == "restricted" and not restricted_modules((module,)):
                return (
                    f"restricted mode has no view of `{module}`: run it in native mode with a "
                    "pack that allows it (`safeexec check --suggest-policy`)"
                )
            if not (rule.match.allow or rule.match.deny) and not module.startswith("."):
                return (
                    f'a pack that extends `{policy.info.id}` with `[imports] extend_allow = ["'
                    f'{module}"]` (`safeexec check --suggest-policy` prints it)'
                )
        return rule.remedy.format_map(fields) if rule.remedy else ""

    def _engine(self, rule: Rule, node: ast.AST, message: str) -> None:
        finding = engine_finding(rule, message)
        self.findings.append(replace(finding, span=self._span(node)))

    def _span(self, node: ast.AST) -> Span | None:
        line = getattr(node, "lineno", None)
        if line is None:
            return None
        end_line = getattr(node, "end_lineno", None) or line
        start = self._column(line, getattr(node, "col_offset", 0) or 0)
        end = self._column(end_line, getattr(node, "end_col_offset", None) or 0)
        return Span(
            start_line=line,
            start_column=start + 1,
            end_line=end_line,
            end_column=max(end, start + 1) if end_line == line else max(end, 1),
        )

    def _column(self, line: int, byte_offset: int) -> int:
        if self._lines is None:
            self._lines = _LINE_BREAK.split(self.parsed.code)
        if not 1 <= line <= len(self._lines):
            return byte_offset
        text = self._lines[line - 1]
        if text.isascii():
            return byte_offset
        return len(text.encode("utf-8", "surrogatepass")[:byte_offset].decode("utf-8", "replace"))


_NAMED_BINDERS: tuple[type[ast.AST], ...] = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.ExceptHandler,
    ast.Global,
    ast.Nonlocal,
    ast.MatchAs,
    ast.MatchStar,
    ast.MatchMapping,
)


_DEFINITIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})


def _bound_names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Global | ast.Nonlocal):
        return list(node.names)
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    name = getattr(node, "name", None)
    return [name] if isinstance(name, str) else []


def _suffixes(qualified: str) -> list[str]:
    """``a.b.c`` → ``a.b.c``, ``b.c``: a re-exported module still matches its rules."""
    parts = qualified.split(".")
    return [".".join(parts[i:]) for i in range(max(len(parts) - 1, 1))]


def _format_attributes(template: str) -> list[str]:
    """Attribute names a ``str.format`` template walks: ``{0.__class__.__mro__}`` → both."""
    found: list[str] = []
    for field in _FORMAT_FIELD.findall(template):
        parts = re.split(r"[.\[]", field)
        for part in parts[1:]:
            found.append(part.rstrip("]"))
    return found


class _Fields(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _number(value: float | None) -> str:
    if value is None:
        return "unknown"
    if math.isinf(value) or value >= 1e300:
        return "≥1e300"
    return f"{value:.3g}" if value >= 1e6 else f"{value:g}"
