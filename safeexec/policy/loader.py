"""Load a policy pack (a shipped pack name, a pack directory or a single TOML file) into a Policy.

A pack's files are merged in name order; ``extends = "<pack>"`` layers a pack over another. Tables
merge key by key (the later file wins), ``[[rule]]`` entries merge by ``id`` (a later rule with the
same id replaces the earlier one), and ``[imports] extend_allow``/``extend_deny`` append to the
inherited lists and take their modules out of the opposite one; a pack never inherits its parent's
``[policy] id``. The schema is closed: every mistake is a :class:`PolicyError` naming the file,
line and JSON pointer, with a did-you-mean hint where one helps.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import string
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from safeexec._support.memo import BoundedCache
from safeexec.capabilities.effects import Effect
from safeexec.dsl.limits import DslLimits
from safeexec.egress.network_policy import HostPattern, NetworkPolicy, normalize_host
from safeexec.errors import PolicyError
from safeexec.model.values import Enforcement, Limits, Severity, codec
from safeexec.policy.packs import pack_files, packs_root, shipped_packs
from safeexec.policy.schema import (
    ApprovalConfig,
    BackendsConfig,
    BudgetConfig,
    CapabilityConfig,
    ImportsConfig,
    MatchKind,
    ObserveConfig,
    Policy,
    PolicyInfo,
    Rule,
    RuleMatch,
    RuleStatus,
    SandboxConfig,
)
from safeexec.policy.toml_locator import TomlLocator
from safeexec.policy.vocabulary import (
    CHECKS,
    ESTIMATE_BOUNDS,
    ESTIMATE_METRICS,
    MATCH_FIELDS,
    MATCH_PLACEHOLDERS,
    SYNTAX_NODE_TYPES,
    reserved_rule_id,
)
from safeexec.sandbox.ladder import RUNGS
from safeexec.sandbox.layers import Layer

__all__ = ["load_policy", "parse_policy_text"]

# Raw TOML data is untyped until validated and built into the schema dataclasses.
_Raw = dict[str, Any]

_PACK_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_KEBAB = _PACK_NAME
_RULE_ID = re.compile(r"^[A-Z]{2,8}[0-9]{3,4}$")
_EFFECTS = tuple(e.value for e in Effect)
_MODULE_PATTERN = re.compile(r"^(\*|[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(\.\*)?)$")
_NAME_PATTERN = re.compile(r"^[A-Za-z_*?][A-Za-z0-9_.*?]*$")
# The in-process modes are never a default: a pack that wants one names it in ``allowed``.
_BACKENDS = ("native", "restricted", "restricted-inprocess", "dsl", "dsl-inprocess", "fake")
_LAYERS = tuple(layer.value for layer in Layer)
_RUNGS = tuple(rung.value for rung in RUNGS)


# --------------------------------------------------------------------------------------------
# Validation of one file's raw data


@dataclass(slots=True)
class _Context:
    """One policy file being read: its name and where its keys are, for precise errors."""

    file: str
    locator: TomlLocator

    def fail(self, message: str, pointer: str, hint: str | None = None) -> PolicyError:
        return PolicyError(
            message,
            file=self.file,
            line=self.locator.line_of(pointer),
            pointer=pointer or "/",
            hint=hint,
        )


def _did_you_mean(key: str, allowed: tuple[str, ...] | frozenset[str]) -> str:
    close = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    return f"allowed keys: {', '.join(sorted(allowed))}"


_Check = Callable[[object, str, _Context], None]


def _is_str(value: object, pointer: str, ctx: _Context) -> None:
    if not isinstance(value, str):
        raise ctx.fail(f"expected a string, got {type(value).__name__} {value!r}", pointer)


def _is_int(value: object, pointer: str, ctx: _Context) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ctx.fail(f"expected a non-negative integer, got {value!r}", pointer)


def _is_number(value: object, pointer: str, ctx: _Context) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ctx.fail(f"expected a non-negative number, got {value!r}", pointer)


def _is_bool(value: object, pointer: str, ctx: _Context) -> None:
    if not isinstance(value, bool):
        raise ctx.fail(f"expected true or false, got {value!r}", pointer)


def _str_list(item_check: Callable[[str], bool] | None = None, what: str = "") -> _Check:
    def check(value: object, pointer: str, ctx: _Context) -> None:
        if not isinstance(value, list):
            raise ctx.fail(f"expected a list of strings, got {type(value).__name__}", pointer)
        for index, item in enumerate(value):
            _is_str(item, f"{pointer}/{index}", ctx)
            if item_check is not None and not item_check(str(item)):
                raise ctx.fail(f"{item!r} is not {what}", f"{pointer}/{index}")

    return check


def _one_of(choices: tuple[str, ...]) -> _Check:
    def check(value: object, pointer: str, ctx: _Context) -> None:
        _is_str(value, pointer, ctx)
        if value not in choices:
            close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.5)
            hint = f"did you mean {close[0]!r}?" if close else f"use one of {', '.join(choices)}"
            raise ctx.fail(f"{value!r} is not one of {', '.join(choices)}", pointer, hint)

    return check


def _module_pattern(item: str) -> bool:
    return bool(_MODULE_PATTERN.match(item))


def _host_pattern(item: str) -> bool:
    try:
        HostPattern.parse(item)
    except ValueError:
        return False
    return True


def _host_name(item: str) -> bool:
    try:
        normalize_host(item)
    except ValueError:
        return False
    return True


_SECTIONS: dict[str, dict[str, _Check]] = {
    "policy": {
        "id": _is_str,
        "version": _is_str,
        "description": _is_str,
        "owners": _str_list(),
    },
    "limits": {
        "cpu_seconds": _is_number,
        "wall_seconds": _is_number,
        "memory_bytes": _is_int,
        "output_bytes": _is_int,
        "file_size_bytes": _is_int,
        "max_processes": _is_int,
        "max_open_files": _is_int,
    },
    "backends": {
        "allowed": _str_list(lambda b: b in _BACKENDS, f"a backend ({', '.join(_BACKENDS)})"),
        "default": _one_of(_BACKENDS),
        "require": _str_list(lambda b: b in _LAYERS, f"a confinement layer ({', '.join(_LAYERS)})"),
        "rung": _one_of(_RUNGS),
    },
    "imports": {
        "allow": _str_list(_module_pattern, "a module pattern like 'json' or 'numpy.*'"),
        "deny": _str_list(_module_pattern, "a module pattern like 'os' or 'ctypes.*'"),
        "extend_allow": _str_list(_module_pattern, "a module pattern like 'json' or 'numpy.*'"),
        "extend_deny": _str_list(_module_pattern, "a module pattern like 'os' or 'ctypes.*'"),
        "native_allow": _str_list(_module_pattern, "a module pattern like 'os' or 'numpy.*'"),
        "extend_native_allow": _str_list(
            _module_pattern, "a module pattern like 'os' or 'numpy.*'"
        ),
    },
    "observe": {"max_bytes": _is_int, "max_lines": _is_int, "max_line_chars": _is_int},
    "budget": {"steps": _is_int, "cpu_seconds": _is_number, "tool_calls": _is_int},
    "approval": {
        "effects": _str_list(lambda e: e in _EFFECTS, f"an effect ({', '.join(_EFFECTS)})")
    },
    "dsl": {
        "max_items": _is_int,
        "max_iterations": _is_int,
        "max_text_chars": _is_int,
        "max_tool_calls": _is_int,
    },
    "network": {
        "allow": _str_list(_host_pattern, "a host pattern like 'pypi.org' or '*.example.com:443'"),
        "deny": _str_list(_host_pattern, "a host pattern like 'pypi.org' or '*.example.com:443'"),
        "private_hosts": _str_list(_host_name, "a host name like 'mirror.internal'"),
        "max_bytes": _is_int,
        "max_connections": _is_int,
        "connect_seconds": _is_number,
        "idle_seconds": _is_number,
    },
    "sandbox": {
        "env_passthrough": _str_list(
            lambda n: bool(re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", n)), "an environment variable name"
        ),
        "workdir_symlinks": _is_bool,
    },
}

_CAPABILITY_KEYS: dict[str, _Check] = {
    "grantable": _is_bool,
    "max_calls": _is_int,
    "scopes": _str_list(),
    "requires_approval": _is_bool,
}

_RULE_KEYS: dict[str, _Check] = {
    "id": _is_str,
    "name": _is_str,
    "severity": _one_of(tuple(s.value for s in Severity)),
    "enforcement": _one_of(tuple(e.value for e in Enforcement)),
    "status": _one_of(tuple(s.value for s in RuleStatus)),
    "message": _is_str,
    "rationale": _is_str,
    "description": _is_str,
    "example": _is_str,
    "bypasses": _str_list(),
    "references": _str_list(),
    "match": lambda v, p, c: None,  # validated by _validate_match
    "check": _is_str,
    "remedy": _is_str,
    "modes": _str_list(lambda b: b in _BACKENDS, f"a backend ({', '.join(_BACKENDS)})"),
}
_RULE_REQUIRED = ("id", "name", "severity", "enforcement", "message")
_TOP_LEVEL = (
    "extends",
    "policy",
    "limits",
    "backends",
    "imports",
    "capabilities",
    "observe",
    "budget",
    "sandbox",
    "approval",
    "dsl",
    "network",
    "rule",
)


def _validate_table(data: object, spec: Mapping[str, _Check], pointer: str, ctx: _Context) -> None:
    if not isinstance(data, dict):
        raise ctx.fail(f"expected a table, got {type(data).__name__}", pointer)
    for key, value in data.items():
        if key not in spec:
            raise ctx.fail(
                f"unknown key {key!r}", f"{pointer}/{key}", _did_you_mean(key, tuple(spec))
            )
        spec[key](value, f"{pointer}/{key}", ctx)


def _validate_file(data: _Raw, ctx: _Context) -> None:
    for key, value in data.items():
        if key not in _TOP_LEVEL:
            raise ctx.fail(
                f"unknown top-level key {key!r}", f"/{key}", _did_you_mean(key, _TOP_LEVEL)
            )
        if key == "extends":
            _is_str(value, "/extends", ctx)
        elif key == "capabilities":
            if not isinstance(value, dict):
                raise ctx.fail("expected a table of [capabilities.<tool>] tables", "/capabilities")
            for tool, config in value.items():
                if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", tool):
                    raise ctx.fail(
                        f"tool name {tool!r} is not an identifier", f"/capabilities/{tool}"
                    )
                _validate_table(config, _CAPABILITY_KEYS, f"/capabilities/{tool}", ctx)
        elif key == "rule":
            if not isinstance(value, list):
                raise ctx.fail("expected [[rule]] entries (an array of tables)", "/rule")
            for index, rule in enumerate(value):
                _validate_rule(rule, f"/rule/{index}", ctx)
        else:
            _validate_table(value, _SECTIONS[key], f"/{key}", ctx)


def _validate_rule(rule: object, pointer: str, ctx: _Context) -> None:
    _validate_table(rule, _RULE_KEYS, pointer, ctx)
    assert isinstance(rule, dict)
    for key in _RULE_REQUIRED:
        if key not in rule:
            raise ctx.fail(f"rule is missing required key {key!r}", pointer, f"add {key} = ...")
    rule_id = str(rule["id"])
    if not _RULE_ID.match(rule_id):
        raise ctx.fail(
            f"rule id {rule_id!r} is not like 'SX201' (capital prefix, 3-4 digits)", f"{pointer}/id"
        )
    if reserved_rule_id(rule_id):
        raise ctx.fail(
            f"rule id {rule_id!r} is reserved for the engine (SX0xx, SX510, SX520, SX7xx, SX9xx)",
            f"{pointer}/id",
            "pick an id in the range of the rule's kind, or use your team's own prefix",
        )
    if not _KEBAB.match(str(rule["name"])):
        raise ctx.fail(
            f"rule name {rule['name']!r} is not kebab-case",
            f"{pointer}/name",
            "use a name like 'import-outside-allowlist'",
        )
    if ("match" in rule) == ("check" in rule):
        raise ctx.fail("a rule needs exactly one of 'match' or 'check'", pointer)
    if rule["severity"] in ("high", "critical") and not str(rule.get("rationale", "")).strip():
        raise ctx.fail(
            f"{rule['severity']}-severity rule {rule_id} has no rationale",
            f"{pointer}/rationale",
            'say why the matched code is dangerous in rationale = "..."',
        )
    if "check" in rule:
        check_name = str(rule["check"])
        if check_name not in CHECKS:
            raise ctx.fail(
                f"unknown check {check_name!r}",
                f"{pointer}/check",
                _did_you_mean(check_name, tuple(CHECKS))
                + " (policies name registered checks, never import paths)",
            )
        placeholders = CHECKS[check_name]
    else:
        placeholders = _validate_match(rule["match"], f"{pointer}/match", ctx)
    _validate_message(str(rule["message"]), placeholders, f"{pointer}/message", ctx)


def _validate_match(match: object, pointer: str, ctx: _Context) -> frozenset[str]:
    if not isinstance(match, dict):
        raise ctx.fail('expected an inline table like { kind = "call", names = [...] }', pointer)
    kind = match.get("kind")
    kinds = tuple(k.value for k in MatchKind)
    _one_of(kinds)(kind, f"{pointer}/kind", ctx)
    allowed = MATCH_FIELDS[str(kind)]
    for key, value in match.items():
        if key == "kind":
            continue
        if key not in allowed:
            raise ctx.fail(
                f"unknown key {key!r} for a {kind!r} match",
                f"{pointer}/{key}",
                _did_you_mean(key, allowed),
            )
        sub = f"{pointer}/{key}"
        if kind == "import":
            _str_list(_module_pattern, "a module pattern like 'json' or 'numpy.*'")(value, sub, ctx)
        elif kind == "node":
            _str_list(
                lambda n: n in SYNTAX_NODE_TYPES,
                "a syntax node type like 'Global' or 'AsyncFunctionDef'",
            )(value, sub, ctx)
        elif kind in ("call", "attribute", "name"):
            _str_list(
                lambda n: bool(_NAME_PATTERN.match(n)),
                "a (dotted) name, optionally with * and ? wildcards",
            )(value, sub, ctx)
            if not value:
                raise ctx.fail("names must not be empty", sub)
        elif key == "metric":
            _one_of(tuple(sorted(ESTIMATE_METRICS)))(value, sub, ctx)
        elif key == "above":
            _is_number(value, sub, ctx)
        elif key == "bound":
            _one_of(tuple(sorted(ESTIMATE_BOUNDS)))(value, sub, ctx)
    if kind in ("call", "attribute", "name", "node") and "names" not in match:
        raise ctx.fail(f"a {kind!r} match needs names = [...]", pointer)
    if kind == "estimate":
        if "metric" not in match:
            raise ctx.fail(
                'an \'estimate\' match needs metric = "cpu"|"memory"|"output"|"tool_calls"', pointer
            )
        if ("above" in match) == ("bound" in match):
            raise ctx.fail("an 'estimate' match needs exactly one of 'above' or 'bound'", pointer)
    return MATCH_PLACEHOLDERS[str(kind)]


def _validate_message(
    message: str, placeholders: frozenset[str], pointer: str, ctx: _Context
) -> None:
    try:
        parsed = list(string.Formatter().parse(message))
    except ValueError as exc:
        raise ctx.fail(
            f"message is not a valid format string: {exc}", pointer, "escape braces as {{ and }}"
        ) from None
    for _literal, field_name, spec, conversion in parsed:
        if field_name is None:
            continue
        if field_name not in placeholders:
            raise ctx.fail(
                f"message placeholder {{{field_name}}} cannot be filled by this rule",
                pointer,
                "available placeholders: "
                + (", ".join("{" + p + "}" for p in sorted(placeholders)) or "none"),
            )
        if spec or conversion:
            raise ctx.fail(
                f"message placeholder {{{field_name}}} may not carry a format spec or conversion",
                pointer,
            )


# --------------------------------------------------------------------------------------------
# Reading, merging, building


def _read(path: Path) -> tuple[_Raw, _Context]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"cannot read policy file: {exc}", file=str(path)) from None
    ctx = _Context(file=str(path), locator=TomlLocator.scan(text))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        raise PolicyError(
            f"not valid TOML: {exc}",
            file=str(path),
            line=int(found.group(1)) if found else None,
            hint="check quoting and brackets near that line",
        ) from None
    _validate_file(data, ctx)
    return data, ctx


# Which inherited lists an ``[imports]`` extension takes its modules out of.
_EXTENSION_OPPOSITES: dict[str, tuple[str, ...]] = {
    "extend_allow": ("deny",),
    "extend_native_allow": ("deny",),
    "extend_deny": ("allow", "native_allow"),
}


def _merge(base: _Raw, layer: _Raw) -> _Raw:
    merged = dict(base)
    for key, value in layer.items():
        if key == "rule":
            rules = {str(r["id"]): r for r in base.get("rule", [])}
            for rule in value:
                rules[str(rule["id"])] = rule
            merged["rule"] = list(rules.values())
        elif key == "imports":
            imports = dict(base.get("imports", {}))
            layer_imports = dict(value)
            for plain, extra in (
                ("allow", "extend_allow"),
                ("deny", "extend_deny"),
                ("native_allow", "extend_native_allow"),
            ):
                if plain in layer_imports:
                    imports[plain] = list(layer_imports[plain])
                if extra in layer_imports:
                    imports[plain] = [*imports.get(plain, []), *layer_imports[extra]]
            # An extension takes its modules out of the inherited opposite list, so "the parent
            # minus sqlite3" (or plus a module the parent denies) is one line and lint-clean.
            for extra, opposites in _EXTENSION_OPPOSITES.items():
                taken = set(layer_imports.get(extra, ()))
                for opposite in opposites:
                    if taken and opposite not in layer_imports:
                        kept = [m for m in imports.get(opposite, []) if m not in taken]
                        imports[opposite] = kept
            merged["imports"] = imports
        elif key == "capabilities":
            capabilities = {k: dict(v) for k, v in dict(base.get("capabilities", {})).items()}
            for tool, config in dict(value).items():
                capabilities[tool] = {**capabilities.get(tool, {}), **config}
            merged["capabilities"] = capabilities
        elif key == "extends":
            continue
        elif isinstance(value, dict):
            merged[key] = {**dict(base.get(key, {})), **value}
        else:
            merged[key] = value
    return merged


def _resolve_pack(name_or_path: str | Path) -> tuple[Path, tuple[Path, ...]]:
    path = Path(name_or_path)
    # A bare name is always a shipped pack, never a directory that happens to sit in the working
    # directory (which would let a stray folder named "default" replace the shipped policy).
    if isinstance(name_or_path, str) and _PACK_NAME.match(name_or_path):
        directory = packs_root() / name_or_path
        if not directory.is_dir():
            close = difflib.get_close_matches(name_or_path, shipped_packs(), n=1, cutoff=0.6)
            raise PolicyError(
                f"no policy pack named {name_or_path!r} is shipped",
                hint=(f"did you mean {close[0]!r}? " if close else "")
                + f"shipped packs: {', '.join(shipped_packs())}; "
                + f"for a directory write ./{name_or_path}",
            )
        path = directory
    if path.is_dir():
        files = pack_files(path)
        if not files:
            raise PolicyError(
                f"policy pack {str(path)!r} has no *.toml policy files", file=str(path)
            )
        return path, files
    if path.is_file():
        return path.parent, (path,)
    raise PolicyError(
        f"no policy pack or file at {str(name_or_path)!r}",
        hint="give a shipped pack name (like 'default'), a pack directory or a .toml file",
    )


def _load_raw(name_or_path: str | Path, chain: tuple[str, ...]) -> tuple[_Raw, tuple[str, ...]]:
    directory, files = _resolve_pack(name_or_path)
    key = str(directory.resolve()) + (
        "" if len(files) > 1 or files[0].parent != directory else f"/{files[0].name}"
    )
    if key in chain:
        raise PolicyError(
            f"policy packs extend each other in a cycle: {' -> '.join([*chain, key])}", file=key
        )
    layers = [_read(f) for f in files]
    merged: _Raw = {}
    sources: list[str] = []
    extends = [(data["extends"], ctx) for data, ctx in layers if "extends" in data]
    if len(extends) > 1:
        raise extends[1][1].fail("extends is set in more than one file of this pack", "/extends")
    if extends:
        base_name, ctx = extends[0]
        base_ref: str | Path = str(base_name)
        if not _PACK_NAME.match(str(base_name)):
            base_ref = (directory / str(base_name)).resolve()
        try:
            merged, sources_base = _load_raw(base_ref, (*chain, key))
        except PolicyError as exc:
            if exc.file is None:
                raise ctx.fail(exc.message, "/extends", exc.hint) from None
            raise
        sources.extend(sources_base)
        # A pack that extends another is its own policy: it never inherits the parent's id.
        merged["policy"] = {k: v for k, v in dict(merged.get("policy", {})).items() if k != "id"}
    for (data, ctx), file in zip(layers, files, strict=True):
        earlier = {str(r["id"]): r for r in merged.get("rule", [])}
        for index, rule in enumerate(data.get("rule", [])):
            rule["__source__"] = f"{file}:{ctx.locator.line_of(f'/rule/{index}') or 1}"
            replaced = earlier.get(str(rule["id"]))
            if replaced is not None and replaced["name"] != rule["name"]:
                raise ctx.fail(
                    f"rule id {rule['id']} already names {replaced['name']!r} "
                    f"(at {replaced['__source__']}); this rule would silently replace it",
                    f"/rule/{index}/id",
                    "pick an unused id, or keep the name to override that rule on purpose",
                )
        merged = _merge(merged, data)
        sources.append(str(file))
    return merged, tuple(sources)


def _tupled(raw: _Raw) -> _Raw:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}


def _build(data: _Raw, sources: tuple[str, ...], default_id: str) -> Policy:
    def section(name: str) -> _Raw:
        value: _Raw = data.get(name, {})
        return _tupled(value)

    info = section("policy")
    info.setdefault("id", default_id)
    imports = section("imports")
    for extension in ("extend_allow", "extend_deny", "extend_native_allow"):
        imports.pop(extension, None)
    limits = section("limits")
    for float_key in ("cpu_seconds", "wall_seconds"):
        if float_key in limits:
            limits[float_key] = float(limits[float_key])
    budget = section("budget")
    if "cpu_seconds" in budget:
        budget["cpu_seconds"] = float(budget["cpu_seconds"])
    network = section("network")
    for float_key in ("connect_seconds", "idle_seconds"):
        if float_key in network:
            network[float_key] = float(network[float_key])
    capabilities = tuple(
        CapabilityConfig(tool=tool, **_tupled(config))
        for tool, config in sorted(dict(data.get("capabilities", {})).items())
    )
    rules = tuple(sorted((_build_rule(r) for r in data.get("rule", [])), key=lambda r: r.id))
    backends = BackendsConfig(**section("backends"))
    if backends.default not in backends.allowed:
        raise PolicyError(
            f"backends.default={backends.default!r} is not in "
            f"backends.allowed={list(backends.allowed)!r}",
            file=sources[-1] if sources else None,
            pointer="/backends/default",
            hint="add it to allowed or pick an allowed default",
        )
    policy = Policy(
        info=PolicyInfo(**info),
        limits=Limits(**limits),
        backends=backends,
        imports=ImportsConfig(**imports),
        capabilities=capabilities,
        observe=ObserveConfig(**section("observe")),
        budget=BudgetConfig(**section("budget") | budget),
        sandbox=SandboxConfig(**section("sandbox")),
        approval=ApprovalConfig(**section("approval")),
        dsl=DslLimits(**section("dsl")),
        network=NetworkPolicy(**network),
        rules=rules,
        sources=sources,
    )
    return replace(policy, digest=policy_digest(policy))


def _build_rule(raw: _Raw) -> Rule:
    match = None
    if "match" in raw:
        m = dict(raw["match"])
        match = RuleMatch(
            kind=MatchKind(m.pop("kind")),
            **_tupled({k: float(v) if k == "above" else v for k, v in m.items()}),
        )
    values: _Raw = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in raw.items()
        if k not in ("match", "__source__")
    }
    return Rule(
        id=str(values.pop("id")),
        name=str(values.pop("name")),
        severity=Severity(values.pop("severity")),
        enforcement=Enforcement(values.pop("enforcement")),
        status=RuleStatus(values.pop("status", "stable")),
        message=str(values.pop("message")),
        match=match,
        source=str(raw.get("__source__", "")),
        **values,
    )


def policy_digest(policy: Policy) -> str:
    """sha256 of the policy's canonical JSON form, without file locations (content only)."""
    data = codec.to_json(
        replace(
            policy, sources=(), digest="", rules=tuple(replace(r, source="") for r in policy.rules)
        )
    )
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def load_policy(name_or_path: str | Path) -> Policy:
    """Load and merge a policy pack: a shipped pack name, a pack directory or a single ``.toml``.

    Raises :class:`~safeexec.errors.PolicyError` (file, line, JSON pointer, hint) on any mistake.
    A pack loaded before is handed out again (policies are frozen) while none of its files or
    their directories changed, so a new ``Session`` does not parse its TOML again.
    """
    key = _cache_key(name_or_path)
    cached = _LOADED.get(key)
    if cached is not None and cached[1] == _fingerprint(cached[0].sources):
        return cached[0]
    data, sources = _load_raw(name_or_path, ())
    path = Path(name_or_path)
    default_id = path.stem if path.suffix == ".toml" else path.name
    policy = _build(data, sources, default_id)
    _LOADED.put(key, (policy, _fingerprint(policy.sources)), size=1)
    return policy


# Loaded packs by what named them, with what their files and directories held when read.
_LOADED: BoundedCache[str, tuple[Policy, tuple[tuple[str, str], ...]]] = BoundedCache(
    max_entries=32, max_size=32
)


def _cache_key(name_or_path: str | Path) -> str:
    if isinstance(name_or_path, str) and _PACK_NAME.match(name_or_path):
        return f"pack:{name_or_path}"
    return f"path:{Path(name_or_path).resolve()}"


def _fingerprint(sources: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The digest of every source file and the listing of each directory holding one (a file
    added to or removed from a pack changes its directory): content, not timestamps, which a
    quick rewrite can leave unchanged."""
    out = []
    for name in sorted(sources):
        try:
            digest = hashlib.sha256(Path(name).read_bytes()).hexdigest()
        except OSError:
            return ()  # a source is gone: never equal to the recorded state
        out.append((name, digest))
    for directory in sorted({str(Path(s).parent) for s in sources}):
        try:
            out.append((directory, "\0".join(sorted(os.listdir(directory)))))
        except OSError:
            return ()
    return tuple(out)


def parse_policy_text(text: str, *, file: str = "<policy>") -> Policy:
    """Load a policy from TOML text (no ``extends``); for tests and tools holding text in memory."""
    ctx = _Context(file=file, locator=TomlLocator.scan(text))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        raise PolicyError(
            f"not valid TOML: {exc}", file=file, line=int(found.group(1)) if found else None
        ) from None
    _validate_file(data, ctx)
    if "extends" in data:
        raise ctx.fail(
            "extends is not available for policy text; load a pack directory instead", "/extends"
        )
    for rule in data.get("rule", []):
        rule["__source__"] = file
    return _build(_merge({}, data), (file,), "inline")
